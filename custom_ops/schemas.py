"""ONNX schemas of the dialect ops (onnx.defs), for the checker and shape inference: the public name of
custom_ops._schemas."""
from ._schemas import register_schemas

__all__ = ["register_schemas"]
