"""The OpenVINO ops of the dialect, kept as nodes of domain org.openvinotoolkit (docs/dialect.md).

One rule per unit (custom_ops.units(): OpenVINO type and versions, attribute map), generated below; the
seed ops' rules are still written out. OpenVINO bool attributes become INT 0/1. ScatterElementsUpdate-3 is
the opset-12 op with its defaults (reduction none, use_init_val 1), so every model imports at domain
opset 12.
"""
from __future__ import annotations

import custom_ops
from custom_ops.config import DOMAIN
from custom_ops.errors import OpError

from onnx import AttributeProto, helper

from .._registry import Unsupported, rule

_LIST_TYPES = {"ints": AttributeProto.INTS, "floats": AttributeProto.FLOATS}


def _dialect(ctx, node, op_type=None, **attributes):
    inputs = [ctx.inp(node, i) for i in range(node.get_input_size())]
    outputs = [ctx.out(node, i) for i in range(node.get_output_size())]
    ctx.emit(op_type or node.get_type_name(), inputs, outputs, domain=DOMAIN, **attributes)


def _unit_rule(unit):
    """The import rule of a unit: the node as the dialect op, attributes mapped by the unit's map and
    checked by its spec (a value the dialect does not allow is refused with the spec's reason)."""
    maps = unit.openvino.attributes

    def handler(ctx, node):
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


def _unit_notes(unit) -> str:
    mapped = [f"{m.ov_name} -> {m.name} ({m.kind})" for m in unit.openvino.attributes]
    return "; ".join(filter(None, [unit.openvino.notes, ", ".join(mapped)]))


for _unit in custom_ops.units():
    rule(_unit.openvino.type_name, versions=_unit.openvino.versions, onnx=f"{_unit.op_type} ({DOMAIN})",
         notes=_unit_notes(_unit), refuses=_unit.openvino.refuses)(_unit_rule(_unit))


@rule("ScatterElementsUpdate", versions=(3,),
      onnx="ScatterElementsUpdate (org.openvinotoolkit)",
      notes="opset-12 defaults (none, 1) are version 3's behaviour")
def scatter_elements_update_3(ctx, node):
    _dialect(ctx, node)


@rule("ScatterElementsUpdate", versions=(12,),
      onnx="ScatterElementsUpdate (org.openvinotoolkit)",
      notes="reduction as is; use_init_val bool -> INT 0/1")
def scatter_elements_update_12(ctx, node):
    attributes = node.get_attributes()
    _dialect(ctx, node, reduction=str(attributes["reduction"]).lower(),
             use_init_val=int(bool(attributes["use_init_val"])))


@rule("ScatterUpdate", versions=(3,),
      onnx="ScatterUpdate (org.openvinotoolkit)")
def scatter_update(ctx, node):
    _dialect(ctx, node)


@rule("ReduceL2", versions=(4,),
      onnx="ReduceL2 (org.openvinotoolkit)",
      notes="keep_dims bool -> INT 0/1")
def reduce_l2(ctx, node):
    _dialect(ctx, node, keep_dims=int(bool(node.get_attributes()["keep_dims"])))


@rule("Unique", versions=(10,),
      onnx="Unique (org.openvinotoolkit)",
      notes="sorted bool -> INT; index/count_element_type as strings")
def unique(ctx, node):
    attributes = node.get_attributes()
    _dialect(ctx, node, sorted=int(bool(attributes["sorted"])),
             index_element_type=str(attributes["index_element_type"]),
             count_element_type=str(attributes["count_element_type"]))
