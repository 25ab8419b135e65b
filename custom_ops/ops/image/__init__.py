"""Dialect ops of the image family: one module per op, each defining UNIT (custom_ops.unit)."""
