"""Standard ONNX -> dialect rules, one module per standard op, named by the dialect op's unit
(custom_ops.unit: `raising`) and registered in converters.registry.RAISING when imported here."""
import importlib

from custom_ops import units
from custom_ops.unit import present

for _unit in units():
    if present(_unit.raising):
        importlib.import_module(_unit.raising)
