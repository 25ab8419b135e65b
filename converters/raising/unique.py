"""Unique-11 -> Unique-10 (dialect): axis attribute -> constant input, int64 outputs (i64), same sorted.

Standard ONNX leaves NaN open; the dialect's rule (NaNs equal, sorted last) is the reference evaluator's.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from custom_ops.element_types import NUMPY_TO_ONNX
from custom_ops.config import DIALECT_OPSET, DOMAIN

from ..registry import RAISING
from ..rules import Converted, Keep
from ._common import dialect_type


@RAISING.register("", "Unique", 11)
def raise_v11(node, ctx):
    dtype = dialect_type(ctx, node, 0, "X")
    if isinstance(dtype, Keep):
        return dtype
    attributes = ctx.attributes(node)
    b = ctx.builder(node)
    inputs = [node.input[0]]
    if "axis" in attributes:
        inputs.append(b.const(np.int64(attributes["axis"]), hint="axis"))
    # The dialect's Unique declares all four outputs: unused ones get names of their own.
    outputs = list(node.output) + [""] * (4 - len(node.output))
    outputs = [name or b.fresh(port) for name, port in zip(outputs, ("unique", "indices", "reverse_indices",
                                                                      "counts"))]
    b.op("Unique", inputs, outputs, domain=DOMAIN,
         out_types=[NUMPY_TO_ONNX[dtype]] + [TensorProto.INT64] * 3,
         sorted=int(attributes.get("sorted", 1)), index_element_type="i64", count_element_type="i64")
    where = "" if len(inputs) == 1 else f" along axis {attributes['axis']}"
    return Converted(b, "raised", f"Unique-10{where}, i64 outputs", domains={DOMAIN: DIALECT_OPSET})
