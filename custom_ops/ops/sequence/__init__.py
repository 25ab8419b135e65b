"""Dialect ops of the sequence family: one module per op, each defining UNIT (custom_ops.unit)."""
