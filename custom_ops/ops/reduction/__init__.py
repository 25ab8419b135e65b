"""Dialect ops of the reduction family: one module per op, each defining UNIT (custom_ops.unit)."""
