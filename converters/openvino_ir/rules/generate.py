"""Tensors generated from indices: OneHot, Eye; and the identity-like Identity, ConvertPromoteTypes.

OneHot and Eye are comparisons of index grids (Equal + Where / Cast), not ONNX OneHot/EyeLike: ONNX OneHot
counts negative indices from the end (OpenVINO OneHot-1 gives all off_value) and EyeLike needs a static shape.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule


def _scalar(ctx, node, index: int, code: int | None = None) -> str:
    """Input `index` (a scalar or one-element tensor) as a scalar, cast to `code` if given."""
    name = ctx.inp(node, index)
    if ctx.rank(node, index) != 0:
        name = ctx.emit("Reshape", [name, ctx.const(np.array([], np.int64), "scalar")])
    if code is not None and ctx.elem(node, index) != code:
        name = ctx.emit("Cast", [name], to=code)
    return name


@rule("OneHot", versions=(1, 16), onnx="Equal(Unsqueeze(indices), Range(depth)) + Where",
      notes="an index equal to k gives on_value at k: out-of-range indices give off_value everywhere; negative "
            "ones too in OneHot-1 and OneHot-16 ignore_negative, while OneHot-16 normalize adds depth to them "
            "first (as OpenVINO: -depth..-1 select, below stays off)",
      refuses=("a negative axis on indices of dynamic rank: the position of the new axis must be known",))
def one_hot(ctx, node):
    attributes = node.get_attributes()
    axis = int(attributes["axis"])
    indices = ctx.int64(node, 0)
    depth = _scalar(ctx, node, 1, TensorProto.INT64)
    if str(attributes.get("negative_indices_mode", "ignore_negative")).lower() == "normalize":
        negative = ctx.emit("Less", [indices, ctx.const(np.array(0, np.int64), "zero")])
        indices = ctx.emit("Where", [negative, ctx.emit("Add", [indices, depth]), indices])
    classes = ctx.emit("Range", [ctx.const(np.array(0, np.int64), "zero"), depth,
                                 ctx.const(np.array(1, np.int64), "one")])
    if axis == -1:
        expanded = ctx.emit("Unsqueeze", [indices, ctx.const(np.array([-1], np.int64), "axes")])
    else:
        rank = ctx.rank(node, 0)
        if rank is None:
            raise Unsupported(f"axis={axis} with indices of dynamic rank")
        axis = axis + rank + 1 if axis < 0 else axis
        expanded = ctx.emit("Unsqueeze", [indices, ctx.const(np.array([axis], np.int64), "axes")])
        trailing = rank - axis  # classes lie along `axis`: shape [depth, 1 x trailing]
        if trailing:
            classes = ctx.emit("Reshape", [classes, ctx.const(np.array([-1] + [1] * trailing, np.int64), "shape")])
    hot = ctx.emit("Equal", [expanded, classes])
    select(ctx, hot, _scalar(ctx, node, 2), _scalar(ctx, node, 3), ctx.out_elem(node), ctx.out(node))


#: element types onnxruntime's Where lacks -> a type that holds them exactly (None: bit arithmetic)
_WHERE_VIA = {TensorProto.INT16: TensorProto.INT32, TensorProto.UINT16: TensorProto.INT32,
              TensorProto.UINT64: None, TensorProto.BOOL: None}


def select(ctx, condition: str, a: str, b: str, code: int, output: str) -> str:
    """Where(condition, a, b) for every element type: widened where onnxruntime has no Where kernel, u64 as
    b + (a - b) * condition (exact modulo 2^64), bool as (c and a) or (not c and b)."""
    if code not in _WHERE_VIA:
        return ctx.emit("Where", [condition, a, b], [output])
    wide = _WHERE_VIA[code]
    if wide is not None:
        widened = ctx.emit("Where", [condition, ctx.emit("Cast", [a], to=wide), ctx.emit("Cast", [b], to=wide)])
        return ctx.emit("Cast", [widened], [output], to=code)
    if code == TensorProto.BOOL:
        return ctx.emit("Or", [ctx.emit("And", [condition, a]), ctx.emit("And", [ctx.emit("Not", [condition]), b])],
                        [output])
    picked = ctx.emit("Mul", [ctx.emit("Sub", [a, b]), ctx.emit("Cast", [condition], to=code)])
    return ctx.emit("Add", [b, picked], [output])


@rule("Eye", versions=(9,), onnx="Equal(Range(cols) - Range(rows)[:, None], diagonal) + Cast (+ Expand for batch)",
      notes="ones where column - row == diagonal_index, any diagonal (out of the matrix: all zeros); "
            "batch_shape prepends dims")
def eye(ctx, node):
    zero, one = ctx.const(np.array(0, np.int64), "zero"), ctx.const(np.array(1, np.int64), "one")
    rows = ctx.emit("Range", [zero, _scalar(ctx, node, 0, TensorProto.INT64), one])
    columns = ctx.emit("Range", [zero, _scalar(ctx, node, 1, TensorProto.INT64), one])
    offset = ctx.emit("Sub", [columns, ctx.emit("Unsqueeze", [rows, ctx.const(np.array([1], np.int64), "axes")])])
    diagonal = ctx.emit("Equal", [offset, _scalar(ctx, node, 2, TensorProto.INT64)])
    if node.get_input_size() < 4:
        ctx.emit("Cast", [diagonal], [ctx.out(node)], to=ctx.out_elem(node))
        return
    matrix = ctx.emit("Cast", [diagonal], to=ctx.out_elem(node))
    shape = ctx.emit("Concat", [ctx.int64_vector(node, 3), ctx.emit("Shape", [matrix])], axis=0)
    ctx.emit("Expand", [matrix, shape], [ctx.out(node)])


@rule("Identity", versions=(16,), onnx="Identity")
def identity(ctx, node):
    ctx.emit("Identity", [ctx.inp(node, 0)], [ctx.out(node)])


@rule("ConvertPromoteTypes", versions=(14,), onnx="Cast (or Identity) of each input to the promoted type",
      notes="the promoted type is OpenVINO's (its output types, fixed when the model is built)")
def convert_promote_types(ctx, node):
    for index in range(2):
        code = ctx.out_elem(node, index)
        name = ctx.inp(node, index)
        if ctx.elem(node, index) == code:
            ctx.emit("Identity", [name], [ctx.out(node, index)])
        else:
            ctx.emit("Cast", [name], [ctx.out(node, index)], to=code)

