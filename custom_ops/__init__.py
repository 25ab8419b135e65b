"""The OpenVINO-dialect ops: pure numpy kernels and their specs.

Importing this package registers every op spec: the seed ops' modules below, and every unit under
custom_ops/ops (custom_ops.unit: one module per op holding everything op-specific, found with units() /
unit_of(op_type)). Nothing here imports onnxruntime; the onnxruntime adapter is custom_ops._ort, the ONNX
schemas custom_ops._schemas, the reference-evaluator ops custom_ops._reference.
"""
from . import reduce_l2, scatter_elements_update, scatter_update, unique  # noqa: F401  (registers specs)
from ._spec import OpSpec, all_specs, op_types, resolve
from .ops import load as _load_units
from .ops import unit_of, units
from .reduce_l2 import reduce_l2 as reduce_l2_kernel
from .scatter_elements_update import scatter_elements_update as scatter_elements_update_kernel
from .scatter_update import scatter_update as scatter_update_kernel
from .unique import unique as unique_kernel

_load_units()

__all__ = ["OpSpec", "all_specs", "op_types", "resolve", "unit_of", "units", "reduce_l2_kernel",
           "scatter_elements_update_kernel", "scatter_update_kernel", "unique_kernel"]
