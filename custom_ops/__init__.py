"""The OpenVINO-dialect ops: one unit per op (custom_ops.unit), pure numpy kernels and their specs.

The units under custom_ops/ops (one module per op, found by custom_ops.ops: units() / unit_of(op_type))
and their specs (all_specs / op_types / resolve) are imported and registered on the first call of one of
these, not when the package is imported: `from custom_ops.config import DOMAIN` stays light (the command
line's start-up). Nothing here imports onnxruntime; the onnxruntime adapter is custom_ops.pyops, the ONNX
schemas custom_ops.schemas, the reference-evaluator ops custom_ops.reference, the element types
custom_ops.element_types.
"""
from importlib import import_module as _import_module

_LAZY = {"OpSpec": "._spec", "all_specs": "._spec", "op_types": "._spec", "resolve": "._spec",
         "unit_of": ".ops", "units": ".ops"}


def __getattr__(name):
    if name in _LAZY:
        value = globals()[name] = getattr(_import_module(_LAZY[name], __name__), name)  # found once
        return value
    raise AttributeError(f"module 'custom_ops' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["OpSpec", "all_specs", "op_types", "resolve", "unit_of", "units"]
