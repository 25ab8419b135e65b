"""The OpenVINO ops of the dialect, kept as nodes of domain org.openvinotoolkit (docs/dialect.md).

One rule per unit (custom_ops.units(): OpenVINO type and versions, attribute map both ways), generated
below when the registry first needs them (_registry.defer: importing the units costs start-up time). An older OpenVINO version is the newest dialect version with its defaults, so every model imports
at one domain opset (custom_ops.config.DIALECT_OPSET).
"""
from __future__ import annotations

import custom_ops
from custom_ops.config import DOMAIN
from custom_ops.errors import OpError

from onnx import AttributeProto, helper

from .._registry import Unsupported, defer, rule

_LIST_TYPES = {"ints": AttributeProto.INTS, "floats": AttributeProto.FLOATS}


def _dialect(ctx, node, op_type, **attributes):
    inputs = [ctx.inp(node, i) for i in range(node.get_input_size())]
    outputs = [ctx.out(node, i) for i in range(node.get_output_size())]
    ctx.emit(op_type, inputs, outputs, domain=DOMAIN, **attributes)


def _unit_rule(unit):
    """The import rule of a unit: the node as the dialect op, attributes mapped by the unit's map and
    checked by its spec (a value the dialect does not allow is refused with the spec's reason)."""
    maps = unit.openvino.attributes

    def handler(ctx, node):
        ports = len(unit.newest.inputs)
        if node.get_input_size() > ports:   # an op of variadic inputs, e.g. one per pyramid level
            raise Unsupported(f"{node.get_input_size()} inputs: the dialect op {unit.op_type} has {ports} ports")
        given = node.get_attributes()
        attributes = {m.name: m.to_onnx(given[m.ov_name]) for m in maps if m.ov_name in given}
        try:
            attributes = unit.newest.attribute_values(attributes)
        except OpError as error:
            raise Unsupported(str(error)) from None
        # An empty list has no ONNX type of its own: written typed by the spec's kind
        kinds = {a.name: a.kind for a in unit.newest.attributes}
        empty = [name for name, value in attributes.items() if isinstance(value, list) and not value]
        _dialect(ctx, node, unit.op_type, **{k: v for k, v in attributes.items() if k not in empty})
        ctx.nodes[-1].attribute.extend(helper.make_attribute(name, [], attr_type=_LIST_TYPES[kinds[name]])
                                       for name in empty)

    handler.__name__ = handler.__qualname__ = f"unit_{unit.op_type}"
    return handler


_KINDS = {"bool": "bool -> INT 0/1", "int": "INT", "float": "FLOAT", "ints": "INTS", "floats": "FLOATS",
          "string": "STRING", "lower": "lower-case STRING"}


def _unit_notes(unit) -> str:
    mapped = [m.ov_name + (f" as {m.name}" if m.name != m.ov_name else "") + f" {_KINDS[m.kind]}"
              for m in unit.openvino.attributes]
    return "; ".join(filter(None, [unit.openvino.notes, ", ".join(mapped)]))


def import_as_unit(ctx, node, op_type: str) -> None:
    """Import `node` as the dialect op of unit `op_type`: for standard rules that keep the configurations
    standard ONNX matches and hand the others to a unit (OpenVINO.import_rule False)."""
    _unit_rule(custom_ops.unit_of(op_type))(ctx, node)


def _register_units() -> None:
    for unit in [u for u in custom_ops.units() if u.openvino.import_rule]:
        rule(unit.openvino.type_name, versions=unit.openvino.versions, onnx=f"{unit.op_type} ({DOMAIN})",
             notes=_unit_notes(unit), refuses=unit.openvino.refuses)(_unit_rule(unit))


defer(_register_units)
