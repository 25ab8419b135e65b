"""SparseFillEmptyRows-16: a sparse 2-D tensor (indices [N, 2], values [N]) with every empty row given one
entry [row, 0] = default_value, in (row, column) order as OpenVINO outputs it."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from .._registry import rule

_I64 = TensorProto.INT64


def _c(ctx, value, hint):
    return ctx.const(np.array(value, np.int64), hint)


@rule("SparseFillEmptyRows", versions=(16,),
      onnx="ScatterND add (row counts) + NonZero + Concat + TopK (row-major order) + Gather",
      notes="empty rows get [row, 0] = default_value; all entries are then ordered by (row, column), as OpenVINO "
            "sorts them (a TopK over row * columns + column; equal positions keep their order); "
            "empty_row_indicator marks the rows that were empty")
def sparse_fill_empty_rows(ctx, node):
    values = ctx.inp(node, 0)
    shape = ctx.int64_vector(node, 1)
    indices = ctx.int64(node, 2)
    # one-element vectors of statically known length (OpenVINO reading the model back needs static ranks)
    rows = ctx.emit("Unsqueeze", [ctx.emit("Gather", [shape, _c(ctx, 0, "first")], axis=0), _c(ctx, [0], "axes")])
    columns = ctx.emit("Gather", [shape, _c(ctx, 1, "second")], axis=0)
    row_of = ctx.emit("Slice", [indices, _c(ctx, [0], "start"), _c(ctx, [1], "stop"), _c(ctx, [1], "axis")])  # [N, 1]
    ones = ctx.emit("ConstantOfShape", [ctx.emit("Shape", [values])], value=helper.make_tensor("one", _I64, [1], [1]))
    zeros = ctx.emit("ConstantOfShape", [rows], value=helper.make_tensor("zero", _I64, [1], [0]))
    counts = ctx.emit("ScatterND", [zeros, row_of, ones], reduction="add")
    empty = ctx.emit("Equal", [counts, _c(ctx, 0, "zero")])
    if ctx.out_elem(node, 2) == TensorProto.BOOL:
        ctx.emit("Identity", [empty], [ctx.out(node, 2)])
    else:
        ctx.emit("Cast", [empty], [ctx.out(node, 2)], to=ctx.out_elem(node, 2))
    empty_rows = ctx.emit("Transpose", [ctx.emit("NonZero", [empty])], perm=[1, 0])  # [E, 1]
    filler = ctx.emit("Concat", [empty_rows, ctx.emit("Mul", [empty_rows, _c(ctx, 0, "zero")])], axis=1)
    fill_values = ctx.emit("Tile", [ctx.emit("Reshape", [ctx.inp(node, 3), _c(ctx, [1], "one_value")]),
                                    ctx.emit("Shape", [empty_rows], start=0, end=1)])
    all_indices = ctx.emit("Concat", [indices, filler], axis=0)
    all_values = ctx.emit("Concat", [values, fill_values], axis=0)
    row, column = (ctx.emit("Squeeze", [ctx.emit("Slice", [all_indices, _c(ctx, [k], "start"), _c(ctx, [k + 1], "stop"),
                                                           _c(ctx, [1], "axis")]), _c(ctx, [1], "axes")])
                   for k in (0, 1))
    keys = ctx.emit("Add", [ctx.emit("Mul", [row, columns]), column])
    order = ctx.temp("order")
    ctx.emit("TopK", [keys, ctx.emit("Shape", [keys])], [ctx.temp("sorted_keys"), order], axis=0, largest=0, sorted=1)
    ordered = ctx.emit("Gather", [all_indices, order], axis=0)
    if ctx.out_elem(node, 0) == TensorProto.INT64:
        ctx.emit("Identity", [ordered], [ctx.out(node, 0)])
    else:
        ctx.emit("Cast", [ordered], [ctx.out(node, 0)], to=ctx.out_elem(node, 0))
    ctx.emit("Gather", [all_values, order], [ctx.out(node, 1)], axis=0)
