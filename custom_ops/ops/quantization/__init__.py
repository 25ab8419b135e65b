"""Dialect ops of the quantization family: one module per op, each defining UNIT (custom_ops.unit)."""
