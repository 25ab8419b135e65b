"""ScatterElements-11/13/16/18 -> ScatterElementsUpdate-12 (use_init_val=1, axis as a constant input).

Reductions none/add/mul/min/max map to none/sum/prod/min/max (bool add/mul are OR/AND in both). Left alone:
float16/bfloat16 add/mul (the dialect accumulates in float32 and rounds once, standard ONNX rounds at every
step in the type), reductions the op version does not define (onnxruntime would silently run e.g. "mean" as
"none"), string data. Float min/max raise with a caveat: standard ONNX leaves NaN handling open
(onnxruntime and the reference evaluator let a later update replace a NaN), the dialect propagates NaN.
"""
from __future__ import annotations

import numpy as np

from custom_ops.element_types import BFLOAT16, NUMPY_TO_ONNX, is_float, type_name
from custom_ops.config import DIALECT_OPSET, DOMAIN

from ..registry import RAISING
from ..rules import Converted, Keep
from ._common import dialect_type

DIALECT_REDUCTION = {"none": "none", "add": "sum", "mul": "prod", "min": "min", "max": "max"}
DEFINED = {11: ("none",), 16: ("none", "add", "mul"), 18: ("none", "add", "mul", "min", "max")}


@RAISING.register("", "ScatterElements", 11, 13)  # 13 only adds bfloat16
def raise_v11(node, ctx):
    return _raise(node, ctx, 11)


@RAISING.register("", "ScatterElements", 16)
def raise_v16(node, ctx):
    return _raise(node, ctx, 16)


@RAISING.register("", "ScatterElements", 18)
def raise_v18(node, ctx):
    return _raise(node, ctx, 18)


def _raise(node, ctx, version):
    attributes = ctx.attributes(node)
    reduction = attributes.get("reduction", "none")
    if reduction not in DEFINED[version]:
        return Keep(f"reduction {reduction!r} is not defined for ScatterElements at this opset "
                    f"(defined: {', '.join(DEFINED[version])}; onnxruntime runs unknown ones as 'none')")
    dtype = dialect_type(ctx, node)
    if isinstance(dtype, Keep):
        return dtype
    if dtype in (np.float16, BFLOAT16) and reduction in ("add", "mul"):
        return Keep(f"{type_name(dtype)} {reduction}: standard ONNX rounds at every step, the dialect "
                    f"accumulates in float32 and rounds once (results differ with duplicate indices)")
    b = ctx.builder(node)
    axis = b.const(np.int64(attributes.get("axis", 0)), hint="axis")
    target = DIALECT_REDUCTION[reduction]
    b.op("ScatterElementsUpdate", list(node.input[:3]) + [axis], [node.output[0]], domain=DOMAIN,
         out_types=[NUMPY_TO_ONNX[dtype]], reduction=target, use_init_val=1)
    caveat = None
    if is_float(dtype) and reduction in ("min", "max"):
        caveat = "NaN: the dialect propagates NaN, standard ScatterElements leaves it open"
    return Converted(b, "raised", f"ScatterElementsUpdate-12 reduction {target}", caveat=caveat,
                     domains={DOMAIN: DIALECT_OPSET})
