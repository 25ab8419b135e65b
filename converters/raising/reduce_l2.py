"""ReduceL2-1/11/13 (axes attribute) and ReduceL2-18 (axes input) -> ReduceL2-4 (dialect).

keepdims (default 1 in ONNX, 0 in the dialect) is written explicitly. "Reduce everything" (no axes, or empty
axes with noop_with_empty_axes=0) becomes all axes; empty axes with noop_with_empty_axes=1 stay empty (|x|
in both). Runtime axes with noop_with_empty_axes=0 get a small standard prelude: when they are empty, all
axes are appended. Constant axes are normalised and de-duplicated (onnxruntime de-duplicates).
Integer data is left alone: standard ReduceL2 truncates the root (onnxruntime, reference evaluator), the
dialect rounds it half away from zero.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from custom_ops.element_types import NUMPY_TO_ONNX, is_float, type_name
from custom_ops.config import DIALECT_OPSET, DOMAIN

from ..registry import RAISING
from ..rules import Converted, Keep
from ._common import dialect_type


@RAISING.register("", "ReduceL2", 1, 11, 13)  # 11 allows negative axes, 13 adds bfloat16
def raise_v1(node, ctx):
    attributes = ctx.attributes(node)
    axes = attributes.get("axes")
    return _raise(node, ctx, None if not axes else np.array(axes, np.int64), False,
                  int(attributes.get("keepdims", 1)), noop=0)


@RAISING.register("", "ReduceL2", 18)
def raise_v18(node, ctx):
    attributes = ctx.attributes(node)
    noop = int(attributes.get("noop_with_empty_axes", 0))
    keep = int(attributes.get("keepdims", 1))
    if len(node.input) < 2 or not node.input[1]:
        return _raise(node, ctx, None, False, keep, noop)
    value = ctx.constant(node, 1)
    if value is None:
        return _raise(node, ctx, node.input[1], True, keep, noop)
    return _raise(node, ctx, value.astype(np.int64).reshape(-1), False, keep, noop)


def _raise(node, ctx, axes, runtime: bool, keep: int, noop: int):
    dtype = dialect_type(ctx, node)
    if isinstance(dtype, Keep):
        return dtype
    if not is_float(dtype):
        return Keep(f"{type_name(dtype)}: standard ReduceL2 truncates the root, the dialect rounds it half "
                    f"away from zero")
    data = node.input[0]
    rank = ctx.info.rank(data)
    b = ctx.builder(node)
    if runtime:
        given = b.op("Reshape", [axes, b.int64s([-1])], hint="axes")
        axes_input = given if noop else _all_if_empty(b, data, given, rank)
        how = "runtime axes" + ("" if noop else " (all axes when empty)")
    elif axes is None or axes.size == 0:
        if noop:
            axes_input, how = b.int64s([], hint="axes"), "no axes (|x|)"
        elif rank is None:
            axes_input, how = _all_axes(b, data, rank), "all axes"
        else:
            axes_input, how = b.int64s(list(range(rank)), hint="axes"), "all axes"
    else:
        values = [int(a) for a in axes]
        if rank is not None:
            if any(not -rank <= a < rank for a in values):
                return Keep(f"axes {values} out of range for rank {rank}: the node always fails")
            values = sorted({a % rank for a in values})
        elif len(values) > 1 and any(a < 0 for a in values):
            return Keep("the rank of data is unknown, so negative axes cannot be de-duplicated")
        else:
            values = sorted(set(values))
        axes_input, how = b.int64s(values, hint="axes"), f"axes {values}"
    b.op("ReduceL2", [data, axes_input], [node.output[0]], domain=DOMAIN, out_types=[NUMPY_TO_ONNX[dtype]],
         keep_dims=keep)
    return Converted(b, "raised", f"ReduceL2-4 {how}, keep_dims={keep}", domains={DOMAIN: DIALECT_OPSET})


def _all_axes(b, data, rank):
    """[0, 1, ..., rank-1] as int64 (computed when the rank is unknown)."""
    if rank is not None:
        return b.int64s(list(range(rank)), hint="all_axes")
    rank_scalar = b.op("Size", [b.op("Shape", [data])], hint="rank")
    return b.op("Range", [b.const(np.int64(0), hint="zero"), rank_scalar, b.const(np.int64(1), hint="one")],
                hint="all_axes")


def _all_if_empty(b, data, axes, rank):
    """axes, followed by all axes when axes is empty (ONNX noop_with_empty_axes=0 semantics)."""
    everything = _all_axes(b, data, rank)
    empty = b.op("Cast", [b.op("Equal", [b.op("Size", [axes]), b.const(np.int64(0), hint="zero")])],
                 to=TensorProto.INT64, hint="empty")
    length = b.op("Mul", [empty, b.op("Size", [everything])], hint="take")
    extra = b.op("Slice", [everything, b.int64s([0], hint="start"),
                           b.op("Reshape", [length, b.int64s([1])], hint="stop")], hint="extra_axes")
    return b.op("Concat", [b.cast(axes, TensorProto.INT64), extra], axis=0, hint="axes")
