"""onnx-bridge: OpenVINO-semantics ops as first-class citizens of the ONNX world.

Run dialect models in onnxruntime (InferenceSession), convert between the dialect and standard ONNX
(convert), and check runtimes against each other (conformance).
"""
from importlib import import_module

from .config import DIALECT_OPSET, DOMAIN, IR_VERSION, TARGET_OPSET
from .errors import BridgeError, ConversionError, ModelError, OpError

__version__ = "0.1.0"

# Heavier parts load on first use, so `import onnx_bridge` stays light and free of import cycles.
_LAZY = {
    "InferenceSession": "onnx_bridge.session",
    "prepare_model": "onnx_bridge.session",
    "get_library_path": "onnx_bridge.session",
    "register_ops": "onnx_bridge.session",
    "take_errors": "onnx_bridge.session",
    "custom_op": "onnx_bridge.user_ops",
    "convert": "converters",
    "compare": "onnx_bridge.compare_models",
    "CompareReport": "onnx_bridge.compare_models",
    "register_schemas": "custom_ops.schemas",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'onnx_bridge' has no attribute {name!r}")


__all__ = ["DOMAIN", "DIALECT_OPSET", "IR_VERSION", "TARGET_OPSET", "BridgeError", "ConversionError",
           "ModelError", "OpError", *_LAZY]
