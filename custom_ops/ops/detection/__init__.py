"""Dialect ops of the detection family: one module per op, each defining UNIT (custom_ops.unit)."""
