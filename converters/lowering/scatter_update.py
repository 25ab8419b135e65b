"""ScatterUpdate-3 -> ScatterND-18 on data viewed as [pre, d, post] (no Transpose, no copy of data).

data is reshaped to [d, post] (axis 0) or [pre, d, post], updates to [n, post] or [pre, n, post] (n = number
of indices), and ScatterND writes whole rows: coordinates [i] or [p, i]. The result is reshaped back.

Duplicates: the dialect keeps the last one. onnxruntime's ScatterND copies rows in parallel, so with
duplicates the winner is a race (measured). Unless the indices are a constant without duplicates, ScatterND
gets each written row once, with the row of the last occurrence of its index: last = a max-ScatterElements of
positions over the d rows (sequential; -1 where untouched), the written rows = NonZero(last >= 0), their
blocks gathered from updates at last[row]. So at most d blocks are gathered, never more than data holds
(gathering all n, as before, copied the whole updates: 12.6x data at peak on the benchmark shape).
Negative indices, which the dialect rejects and ScatterND would accept, are moved out of range so that
onnxruntime rejects them too (its message differs). When static shapes cannot prove that updates has the
shape data.shape[:axis] + indices.shape + data.shape[axis+1:], a run-time check (assert_same_shape) makes
the graph fail on any other shape, as the dialect does (the Reshapes alone would accept any shape with as
many elements).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from onnx import TensorProto

from custom_ops.config import DOMAIN

from ..registry import LOWERING
from ..rules import Converted, Keep
from ._common import out_of_range_negatives, runtime_check, scatter_inputs


def _same_dims(first, second) -> bool | None:
    """True/False when shapes are provably equal/different, None when unknown (symbolic dims compare
    by name)."""
    if first is None or second is None:
        return None
    if len(first) != len(second):
        return False
    verdict = True
    for a, b in zip(first, second):
        if isinstance(a, int) and isinstance(b, int):
            if a != b:
                return False
        elif a is None or b is None or a != b:
            verdict = None
    return verdict


def assert_same_shape(b, first: str, second: str) -> str:
    """A [1] int64 zero that fails to compute unless shape vectors first == second: both are prefixed with
    their length and padded by the other's length, so that they compare element-wise."""
    def length(shape):
        return b.op("Reshape", [b.op("Size", [shape]), b.int64s([1])], hint="rank")

    def prefixed(shape, pad):
        pads = b.op("Concat", [b.int64s([0], hint="zero"), pad], axis=0, hint="pads")
        return b.op("Pad", [b.op("Concat", [length(shape), shape], axis=0), pads], hint="comparable_shape")

    same = b.op("Equal", [prefixed(first, length(second)), prefixed(second, length(first))], hint="same_dims")
    return runtime_check(b, b.op("ReduceMin", [b.op("Cast", [same], to=TensorProto.INT64)], keepdims=1,
                                 hint="same_shape"))


@LOWERING.register(DOMAIN, "ScatterUpdate", 3)
def lower_v3(node, ctx):
    found = scatter_inputs(ctx, node, 3)
    if isinstance(found, Keep):
        return found
    dtype, index_type, axis = found
    data, indices, updates = node.input[:3]
    checked = _static_checks(node, ctx, axis)
    if isinstance(checked, Keep):
        return checked
    same, constant, unique = checked

    b = ctx.builder(node)
    idx = b.op("Reshape", [b.cast(indices, TensorProto.INT64), b.int64s([-1])], hint="indices")
    remap = constant is None and (index_type.kind == "i" or index_type == np.uint64)
    if remap:
        idx = out_of_range_negatives(b, idx, data, axis)
    count = b.dims_product(indices, hint="n")
    if not same:  # the Reshapes below only check element counts: check the shape itself at run time
        expected_shape = b.op("Concat", [b.dims(data, 0, axis), b.dims(indices), b.dims(data, axis + 1)],
                              axis=0, hint="expected_updates_shape")
        count = b.op("Add", [count, assert_same_shape(b, b.op("Shape", [updates]), expected_shape)], hint="n")
    rows = b.dims(data, axis, axis + 1, hint="d")
    post = b.dims_product(data, axis + 1, hint="post")
    # the rows ScatterND writes, one per block, and how many
    written, source, blocks_count = (idx, None, count) if unique else _last_writers(b, idx, count, rows)
    plan = _Rows(data, updates, count, rows, post, written, source, blocks_count)
    table, coordinates, blocks = _rows_view(b, plan) if axis == 0 else _pre_rows_view(b, plan, axis)
    scattered = b.op("ScatterND", [table, coordinates, blocks], hint="scattered")
    b.op("Reshape", [scattered, b.dims(data, hint="data_shape")], node.output[0], allowzero=1)
    how = "rows of [d, post]" if axis == 0 else "rows of [pre, d, post]"
    notes = [f"ScatterND-18 writing {how}"]
    if source is not None:
        notes.append("duplicates resolved to the last: each written row once, from its last update "
                     "(ScatterND writes in parallel)")
    if remap:
        notes.append("negative indices rejected via out-of-range")
    if not same:
        notes.append("updates shape checked at run time")
    return Converted(b, "decomposed", "; ".join(notes))


def _static_checks(node, ctx, axis: int):
    """(same, constant, unique) from static shapes and constant indices: whether updates provably has the
    expected shape (True/False/None), the constant indices (None: computed) and whether they are free of
    duplicates; Keep when the node always fails."""
    data, indices, updates = node.input[:3]
    data_shape = ctx.info.shape(data)
    size = data_shape[axis] if data_shape is not None and isinstance(data_shape[axis], int) else None
    index_shape = ctx.info.shape(indices)
    expected = None if data_shape is None or index_shape is None else \
        data_shape[:axis] + index_shape + data_shape[axis + 1:]
    same = _same_dims(expected, ctx.info.shape(updates))
    if same is False:
        return Keep(f"updates shape {ctx.info.shape(updates)} is not data.shape[:axis] + indices.shape + "
                    f"data.shape[axis+1:] = {expected}: the node always fails")
    constant = ctx.constant(node, 1)
    unique = False
    if constant is not None:
        flat = constant.reshape(-1).astype(np.int64) if constant.dtype != np.uint64 else None
        if flat is None or (flat.size and flat.min() < 0) or (size is not None and flat.size and flat.max() >= size):
            return Keep(f"constant indices outside [0, {size if size is not None else 'd'} - 1]: "
                        f"the node always fails")
        unique = np.unique(flat).size == flat.size
    return same, constant, unique


def _last_writers(b, idx: str, count: str, rows: str) -> tuple[str, str, str]:
    """(written rows, their source positions, how many): each written row once, from the last update aimed at
    it. last[r] = the last position whose index is r (-1: untouched), so only the winning rows are gathered
    (at most d, never all n: the gathered blocks are no larger than data) and no two blocks race."""
    zero, one = b.const(np.int64(0), hint="zero"), b.const(np.int64(1), hint="one")
    scalar_count = b.op("Squeeze", [count, b.int64s([0], hint="axes")], hint="n_scalar")
    positions = b.op("Range", [zero, scalar_count, one], hint="positions")
    last = b.op("ScatterElements", [b.filled(rows, -1, np.int64), idx, positions], axis=0,
                reduction="max", hint="last_position")
    touched = b.op("GreaterOrEqual", [last, zero], hint="touched")
    nonzero = b.op("NonZero", [touched], hint="touched_rows", out_types=[TensorProto.INT64])
    written = b.op("Reshape", [nonzero, b.int64s([-1])], hint="written_rows")
    source = b.op("Gather", [last, written], axis=0, hint="source_position")
    return written, source, b.op("Shape", [written], hint="k")


class _Rows(NamedTuple):
    """The row view of a ScatterUpdate: data and updates, n (update rows), d (data rows), post (row size),
    the written rows, their source positions (None: all, in order) and how many (k)."""
    data: str
    updates: str
    count: str
    rows: str
    post: str
    written: str
    source: str | None
    blocks_count: str


def _view(b, *parts: str) -> str:
    return b.op("Concat", list(parts), axis=0, hint="view")


def _rows_view(b, plan: _Rows) -> tuple[str, str, str]:
    """axis 0: (data as [d, post], coordinates [k, 1], update blocks [k, post])."""
    data, updates, count, rows, post, written, source, _ = plan
    blocks = b.op("Reshape", [updates, _view(b, count, post)], allowzero=1, hint="update_rows")
    if source is not None:
        blocks = b.op("Gather", [blocks, source], axis=0, hint="update_rows_last")
    table = b.op("Reshape", [data, _view(b, rows, post)], allowzero=1, hint="data_rows")
    coordinates = b.op("Unsqueeze", [written, b.int64s([-1], hint="axes")], hint="coordinates")
    return table, coordinates, blocks


def _pre_rows_view(b, plan: _Rows, axis: int) -> tuple[str, str, str]:
    """axis > 0: (data as [pre, d, post], coordinates [pre, k, 2], update blocks [pre, k, post])."""
    data, updates, count, rows, post, written, source, blocks_count = plan
    pre = b.dims_product(data, 0, axis, hint="pre")
    blocks = b.op("Reshape", [updates, _view(b, pre, count, post)], allowzero=1, hint="update_rows")
    if source is not None:
        blocks = b.op("Gather", [blocks, source], axis=1, hint="update_rows_last")
    table = b.op("Reshape", [data, _view(b, pre, rows, post)], allowzero=1, hint="data_rows")
    zero, one = b.const(np.int64(0), hint="zero"), b.const(np.int64(1), hint="one")
    scalar_pre = b.op("Squeeze", [pre, b.int64s([0], hint="axes")], hint="pre_scalar")
    outer = b.op("Reshape", [b.op("Range", [zero, scalar_pre, one], hint="outer"),
                             b.int64s([-1, 1, 1])], hint="outer")
    inner = b.op("Reshape", [written, b.int64s([1, -1, 1])], hint="inner")
    # Tile, not Expand: onnxruntime's shape inference of Expand takes 1 against a 0 dim (measured:
    # pre = 0 failed to load, "Inferred=1 Declared=0").
    outer_repeats = _view(b, b.int64s([1], hint="one"), blocks_count, b.int64s([1], hint="one"))
    inner_repeats = _view(b, pre, b.int64s([1, 1], hint="ones"))
    coordinates = b.op("Concat", [b.op("Tile", [outer, outer_repeats], hint="outer"),
                                  b.op("Tile", [inner, inner_repeats], hint="inner")], axis=2, hint="coordinates")
    return table, coordinates, blocks
