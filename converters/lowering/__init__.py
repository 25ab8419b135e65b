"""Dialect -> standard ONNX rules, one module per dialect op, named by the op's unit (custom_ops.unit:
`lowering`) and registered in converters.registry.LOWERING when imported here."""
import importlib

from custom_ops import units
from custom_ops.unit import present

for _unit in units():
    if present(_unit.lowering):
        importlib.import_module(_unit.lowering)
