"""Dialect ops of the string family: one module per op, each defining UNIT (custom_ops.unit)."""
