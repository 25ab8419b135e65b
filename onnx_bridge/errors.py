"""The exception family, defined in custom_ops.errors (the lowest package that raises them)."""
from custom_ops.errors import BridgeError, ConversionError, ModelError, OpError

__all__ = ["BridgeError", "ConversionError", "ModelError", "OpError"]
