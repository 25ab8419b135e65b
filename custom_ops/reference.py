"""The dialect ops for onnx.reference.ReferenceEvaluator(model, new_ops=REFERENCE_OPS): the public name of
custom_ops._reference."""
from ._reference import REFERENCE_OPS

__all__ = ["REFERENCE_OPS"]
