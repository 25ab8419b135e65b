"""Versions and names every part agrees on, defined in custom_ops.config (the lowest package that uses them)."""
from custom_ops.config import DIALECT_OPSET, DOMAIN, IR_VERSION, MAX_ORT_OPSET, TARGET_OPSET

__all__ = ["DIALECT_OPSET", "DOMAIN", "IR_VERSION", "MAX_ORT_OPSET", "TARGET_OPSET"]
