"""Embedding bags and segment reductions: EmbeddingBagPacked(Sum), EmbeddingBagOffsets(Sum),
EmbeddingSegmentsSum, SegmentMax.

Each is a Gather of the table rows (times per_sample_weights) reduced into its bag: packed bags by a
ReduceSum/ReduceMean over the bag axis, offsets and segments by a ScatterND add (max) into a zero (lowest)
tensor; empty bags take the default_index row, or zeros. The sums accumulate in index order, as OpenVINO
does, but onnxruntime and OpenVINO's CPU plugin may group them differently (float sums within accumulation
tolerance; integers exact).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from .._registry import Unsupported, rule

_I64 = TensorProto.INT64
_TABLE_REFUSES = ("emb_table types other than f16, f32, f64, i32, i64 (onnxruntime's ReduceSum/Where kernels)",)


def _c(ctx, value, hint: str) -> str:
    return ctx.const(np.array(value, np.int64), hint)


#: table types onnxruntime reduces and selects (ReduceSum, Where)
_TABLE_TYPES = (TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, _I64)


def _rows(ctx, node, index_input: int, weights_input: int | None) -> str:
    """table[indices] (times the per-sample weights, broadcast over the row), shape indices.shape + row."""
    code = ctx.elem(node, 0)
    if code not in _TABLE_TYPES:
        raise Unsupported(f"emb_table of element type {TensorProto.DataType.Name(code)} (f16, f32, f64, i32, "
                          "i64: onnxruntime's ReduceSum and Where kernels)")
    rows = ctx.emit("Gather", [ctx.inp(node, 0), ctx.int64(node, index_input)], axis=0)
    if weights_input is not None and node.get_input_size() > weights_input:
        weights = ctx.inp(node, weights_input)
        row_rank = ctx.rank(node, 0)
        if row_rank is None:
            raise Unsupported("per_sample_weights need an emb_table of static rank")
        if row_rank > 1:
            weights = ctx.emit("Unsqueeze", [weights, _c(ctx, list(range(-row_rank + 1, 0)), "row_axes")])
        rows = ctx.emit("Mul", [rows, weights])
    return rows


def _reduction(node) -> str:
    return str(node.get_attributes().get("reduction", "sum")).lower()


@rule("EmbeddingBagPackedSum", versions=(3,), onnx="Gather (+ Mul) + ReduceSum", refuses=_TABLE_REFUSES)
def embedding_bag_packed_sum(ctx, node):
    rows = _rows(ctx, node, 1, 2)
    ctx.emit("ReduceSum", [rows, _c(ctx, [1], "bag_axis")], [ctx.out(node)], keepdims=0)


@rule("EmbeddingBagPacked", versions=(15,), onnx="Gather (+ Mul) + ReduceSum / ReduceMean",
      notes="reduction sum (with per_sample_weights) or mean", refuses=_TABLE_REFUSES)
def embedding_bag_packed(ctx, node):
    reduction = _reduction(node)
    if reduction not in ("sum", "mean"):
        raise Unsupported(f"reduction={reduction!r}")
    rows = _rows(ctx, node, 1, 2)
    ctx.emit("ReduceSum" if reduction == "sum" else "ReduceMean", [rows, _c(ctx, [1], "bag_axis")],
             [ctx.out(node)], keepdims=0)


def _scatter_bags(ctx, node, rows: str, bag_of: str, bags: str, default_input: int | None, mean: bool = False):
    """Sum `rows` into bag `bag_of[i]` of `bags` bags; empty bags take the default row (or zeros); mean: the
    sums divided by the bag sizes."""
    table_shape = ctx.emit("Shape", [ctx.inp(node, 0)])
    out_shape = ctx.emit("Concat", [bags, ctx.emit("Slice", [table_shape, _c(ctx, [1], "start"),
                                                            _c(ctx, [np.iinfo(np.int64).max], "stop")])], axis=0)
    zero = ctx.emit("CastLike", [ctx.const(np.array(0, np.float32), "zero"), ctx.inp(node, 0)])
    zeros = ctx.emit("Expand", [zero, out_shape])
    targets = ctx.emit("Unsqueeze", [bag_of, _c(ctx, [1], "axes")])
    sums = ctx.emit("ScatterND", [zeros, targets, rows], reduction="add")
    ones = ctx.emit("Expand", [_c(ctx, 1, "one"), ctx.emit("Shape", [bag_of])])
    counts = ctx.emit("ScatterND", [ctx.emit("Expand", [_c(ctx, 0, "zero_count"), bags]), targets, ones],
                      reduction="add")  # [bags]
    row_rank = ctx.rank(node, 0)
    if row_rank is None:
        raise Unsupported("emb_table needs a static rank")
    counts_b = ctx.emit("Unsqueeze", [counts, _c(ctx, list(range(1, row_rank)), "row_axes")]) if row_rank > 1 \
        else counts
    if mean:
        divisor = ctx.emit("Max", [counts_b, _c(ctx, 1, "one_count")])
        sums = ctx.emit("Div", [sums, ctx.emit("CastLike", [divisor, sums])])
    if default_input is None or node.get_input_size() <= default_input:
        return ctx.emit("Identity", [sums], [ctx.out(node)])
    default = ctx.int64(node, default_input)
    empty = ctx.emit("Equal", [counts_b, _c(ctx, 0, "zero_count")])
    # default_index -1 (or outside the table, which OpenVINO rejects): empty bags stay zero
    valid = ctx.emit("And", [ctx.emit("GreaterOrEqual", [default, _c(ctx, 0, "zero_index")]),
                             ctx.emit("Less", [default, ctx.emit("Squeeze", [ctx.emit("Slice", [
                                 table_shape, _c(ctx, [0], "start"), _c(ctx, [1], "stop")])])])])
    safe_default = ctx.emit("Gather", [ctx.inp(node, 0), ctx.emit("Where", [valid, default, _c(ctx, 0, "first")])],
                            axis=0)
    fill = ctx.emit("Where", [valid, safe_default, zero])
    return ctx.emit("Where", [empty, fill, sums], [ctx.out(node)])


def _offsets_bags(ctx, node) -> tuple[str, str]:
    """(bag of each index, bag count) for offsets: index i belongs to the last bag whose offset is <= i."""
    offsets = ctx.int64(node, 2)
    positions = ctx.emit("Range", [_c(ctx, 0, "zero"), ctx.emit("Squeeze", [ctx.emit("Shape", [ctx.inp(node, 1)])]),
                                   _c(ctx, 1, "one")])
    started = ctx.emit("LessOrEqual", [offsets, ctx.emit("Unsqueeze", [positions, _c(ctx, [1], "axes")])])
    bag_of = ctx.emit("Sub", [ctx.emit("ReduceSum", [ctx.emit("Cast", [started], to=_I64), _c(ctx, [1], "axes")],
                                       keepdims=0), _c(ctx, 1, "one")])
    return bag_of, ctx.emit("Shape", [offsets])


@rule("EmbeddingBagOffsetsSum", versions=(3,), onnx="Gather (+ Mul) + ScatterND add (+ Where for empty bags)",
      notes="bag b holds indices[offsets[b]:offsets[b+1]]; empty bags: the default_index row, zeros without it "
            "or with -1 (an index past the table, which OpenVINO rejects, also gives zeros)", refuses=_TABLE_REFUSES)
def embedding_bag_offsets_sum(ctx, node):
    bag_of, bags = _offsets_bags(ctx, node)
    _scatter_bags(ctx, node, _rows(ctx, node, 1, 4), bag_of, bags, 3)


@rule("EmbeddingBagOffsets", versions=(15,), onnx="Gather (+ Mul) + ScatterND add (+ Div for mean, Where)",
      notes="as EmbeddingBagOffsetsSum-3, reduction sum or mean (the bag's sum over its size)",
      refuses=_TABLE_REFUSES)
def embedding_bag_offsets(ctx, node):
    reduction = _reduction(node)
    if reduction not in ("sum", "mean"):
        raise Unsupported(f"reduction={reduction!r}")
    bag_of, bags = _offsets_bags(ctx, node)
    _scatter_bags(ctx, node, _rows(ctx, node, 1, 4), bag_of, bags, 3, mean=reduction == "mean")


@rule("EmbeddingSegmentsSum", versions=(3,), onnx="Gather (+ Mul) + ScatterND add (+ Where for empty segments)",
      notes="row i added into segment segment_ids[i] of num_segments; empty segments: the default_index row, "
            "zeros without it", refuses=_TABLE_REFUSES)
def embedding_segments_sum(ctx, node):
    bags = ctx.int64_vector(node, 3)
    _scatter_bags(ctx, node, _rows(ctx, node, 1, 5), ctx.int64(node, 2), bags, 4)


@rule("SegmentMax", versions=(16,), onnx="ScatterND max into the lowest value (+ Where for empty segments)",
      notes="segments 0..num_segments-1 (default: max(segment_ids) + 1); empty ones are 0 (fill_mode zero) or "
            "the type's lowest value (lowest)",
      refuses=("element types other than floats and 32/64-bit integers",))
def segment_max(ctx, node):
    code = ctx.elem(node, 0)
    dtype = helper.tensor_dtype_to_np_dtype(code)
    if code not in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT32, _I64):
        raise Unsupported(f"element type {TensorProto.DataType.Name(code)}")
    lowest = np.finfo(dtype).min if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min
    ids = ctx.int64(node, 1)
    if node.get_input_size() > 2:
        segments = ctx.int64_vector(node, 2)
    else:
        segments = ctx.emit("Add", [ctx.emit("ReduceMax", [ids], keepdims=1), _c(ctx, [1], "one")])
    data_shape = ctx.emit("Shape", [ctx.inp(node, 0)])
    out_shape = ctx.emit("Concat", [segments, ctx.emit("Slice", [data_shape, _c(ctx, [1], "start"),
                                                                _c(ctx, [np.iinfo(np.int64).max], "stop")])], axis=0)
    low = ctx.const(np.array(lowest, dtype), "lowest")
    targets = ctx.emit("Unsqueeze", [ids, _c(ctx, [1], "axes")])
    maxima = ctx.emit("ScatterND", [ctx.emit("Expand", [low, out_shape]), targets, ctx.inp(node, 0)], reduction="max")
    if str(node.get_attributes().get("fill_mode", "zero")).lower() == "lowest":
        ctx.emit("Identity", [maxima], [ctx.out(node)])
        return
    ones = ctx.emit("Expand", [_c(ctx, 1, "one"), ctx.emit("Shape", [ids])])
    counts = ctx.emit("ScatterND", [ctx.emit("Expand", [_c(ctx, 0, "zero"), segments]), targets, ones],
                      reduction="add")
    rank = ctx.rank(node, 0)
    if rank is None:
        raise Unsupported("data needs a static rank")
    if rank > 1:
        counts = ctx.emit("Unsqueeze", [counts, _c(ctx, list(range(1, rank)), "row_axes")])
    empty = ctx.emit("Equal", [counts, _c(ctx, 0, "zero")])
    ctx.emit("Where", [empty, ctx.const(np.array(0, dtype), "zero_value"), maxima], [ctx.out(node)])


@rule("GRN", versions=(1,), onnx="ReduceSumSquare + Add + Sqrt + Div",
      notes="GRN-0 (recorded as opset1): x / sqrt(sum over channels of x^2 + bias)")
def grn(ctx, node):
    data = ctx.inp(node, 0)
    squares = ctx.emit("ReduceSumSquare", [data, _c(ctx, [1], "channels")], keepdims=1)
    bias = ctx.emit("CastLike", [ctx.const(np.array(float(node.get_attributes()["bias"]), np.float32), "bias"), data])
    ctx.emit("Div", [data, ctx.emit("Sqrt", [ctx.emit("Add", [squares, bias])])], [ctx.out(node)])
