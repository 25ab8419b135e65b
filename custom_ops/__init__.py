"""The OpenVINO-dialect ops: one unit per op (custom_ops.unit), pure numpy kernels and their specs.

Importing this package registers every unit under custom_ops/ops (one module per op, found by
custom_ops.ops: units() / unit_of(op_type)) and its specs (all_specs / resolve). Nothing here imports
onnxruntime; the onnxruntime adapter is custom_ops.pyops, the ONNX schemas custom_ops.schemas, the
reference-evaluator ops custom_ops.reference, the element types custom_ops.element_types.
"""
from ._spec import OpSpec, all_specs, op_types, resolve
from .ops import load as _load_units
from .ops import unit_of, units

_load_units()

__all__ = ["OpSpec", "all_specs", "op_types", "resolve", "unit_of", "units"]
