"""Searches in sorted sequences: Bucketize, SearchSorted.

Both are counts of comparisons: the insertion index of v in a sorted sequence s is the number of s[i] < v
(left) or s[i] <= v (right), a comparison over a broadcast grid summed over the sequence axis (for NaN
values each op's own comparison is kept: Bucketize's upper bound counts not v < s[i]). Exact
for sorted sequences (the ops' precondition), NaN values included; memory is len(values) x len(sequence).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule


def _count(ctx, compared: str, code: int, output: str) -> str:
    """The number of true comparisons along the last axis of the grid, as output type `code`."""
    counts = ctx.emit("ReduceSum", [ctx.emit("Cast", [compared], to=TensorProto.INT64),
                                    ctx.const(np.array([-1], np.int64), "axes")], keepdims=0)
    if code == TensorProto.INT64:
        return ctx.emit("Identity", [counts], [output])
    return ctx.emit("Cast", [counts], [output], to=code)


def _common(ctx, node, a: int, b: int) -> tuple[str, str]:
    """Inputs a and b in one element type (OpenVINO compares across types: both go to the wider one)."""
    first, second = ctx.inp(node, a), ctx.inp(node, b)
    code_a, code_b = ctx.elem(node, a), ctx.elem(node, b)
    if code_a != code_b:
        wide = TensorProto.DOUBLE
        first, second = (ctx.emit("Cast", [first], to=wide), ctx.emit("Cast", [second], to=wide))
    return first, second


@rule("Bucketize", versions=(3,), onnx="Less (+ Not) on a grid + Cast + ReduceSum",
      notes="with_right_bound: bucket i holds buckets[i-1] < x <= buckets[i] (the count of bounds < x), "
            "else buckets[i-1] <= x < buckets[i] (bounds <= x); NaN data goes to bucket 0 with the right bound, "
            "to the last one without (OpenVINO's lower/upper bound searches)")
def bucketize(ctx, node):
    data, buckets = _common(ctx, node, 0, 1)
    grid = ctx.emit("Unsqueeze", [data, ctx.const(np.array([-1], np.int64), "axes")])
    if node.get_attributes().get("with_right_bound", True):  # std::lower_bound: bounds < x
        compared = ctx.emit("Less", [buckets, grid])
    else:  # std::upper_bound: bounds b with not x < b (NaN x: every bound)
        compared = ctx.emit("Not", [ctx.emit("Less", [grid, buckets])])
    _count(ctx, compared, ctx.out_elem(node), ctx.out(node))


@rule("SearchSorted", versions=(15,), onnx="Less / LessOrEqual on a grid + Cast + ReduceSum",
      notes="left: the count of sequence elements < value, right_mode: <= value; a 1-D sequence serves values "
            "of any shape, an N-D one is searched along its last axis per leading index",
      refuses=("an N-D sorted_sequence of dynamic rank",))
def search_sorted(ctx, node):
    sequence, values = _common(ctx, node, 0, 1)
    rank = ctx.rank(node, 0)
    if rank is None:
        raise Unsupported("sorted_sequence needs a static rank")
    values = ctx.emit("Unsqueeze", [values, ctx.const(np.array([-1], np.int64), "axes")])  # [..., K, 1]
    if rank > 1:  # [..., M] -> [..., 1, M]
        sequence = ctx.emit("Unsqueeze", [sequence, ctx.const(np.array([-2], np.int64), "axes")])
    right = bool(node.get_attributes().get("right_mode", False))
    compared = ctx.emit("LessOrEqual" if right else "Less", [sequence, values])  # NaN values: index 0
    _count(ctx, compared, ctx.out_elem(node), ctx.out(node))
