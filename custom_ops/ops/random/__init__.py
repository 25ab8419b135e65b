"""Dialect ops of the random family: one module per op, each defining UNIT (custom_ops.unit)."""
