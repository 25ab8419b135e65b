"""Dialect ops of the linalg family: one module per op, each defining UNIT (custom_ops.unit)."""
