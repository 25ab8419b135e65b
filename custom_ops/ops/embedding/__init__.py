"""Dialect ops of the embedding family: one module per op, each defining UNIT (custom_ops.unit)."""
