"""Dialect ops of the scatter family: one module per op, each defining UNIT (custom_ops.unit)."""
