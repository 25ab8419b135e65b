"""The four OpenVINO ops of the dialect, kept as nodes of domain org.openvinotoolkit (DIALECT.md).

OpenVINO bool attributes become INT 0/1. ScatterElementsUpdate-3 is the opset-12 op with its defaults
(reduction none, use_init_val 1), so every model imports at domain opset 12.
"""
from __future__ import annotations

from custom_ops.config import DOMAIN

from .._registry import rule


def _dialect(ctx, node, **attributes):
    inputs = [ctx.inp(node, i) for i in range(node.get_input_size())]
    outputs = [ctx.out(node, i) for i in range(node.get_output_size())]
    ctx.emit(node.get_type_name(), inputs, outputs, domain=DOMAIN, **attributes)


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
