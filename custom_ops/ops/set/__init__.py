"""Dialect ops of the set family: one module per op, each defining UNIT (custom_ops.unit)."""
