"""Checks and index handling shared by the lowering rules."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto

import custom_ops
from custom_ops import checks as check
from custom_ops.element_types import NUMPY_TO_ONNX, type_name
from custom_ops.errors import OpError

from ..graph import Builder
from ..rules import Keep, RuleContext


def spec_attributes(ctx: RuleContext, node: onnx.NodeProto, version: int) -> dict | Keep:
    """The node's attributes with the op's defaults filled in, or Keep when they are invalid."""
    spec = custom_ops.resolve(node.op_type, version)
    try:
        return spec.attribute_values(ctx.attributes(node))
    except OpError as error:
        return Keep(f"invalid attribute, the node always fails: {error}")


def data_type(ctx: RuleContext, node: onnx.NodeProto, version: int, index: int = 0,
              port: str = "data") -> np.dtype | Keep:
    """Element type of a T input, or Keep when unknown or outside the op's types (the node then fails).
    Also checks that every required input is there."""
    spec = custom_ops.resolve(node.op_type, version)
    for position, required in enumerate(spec.inputs):
        if not required.optional and (position >= len(node.input) or not node.input[position]):
            return Keep(f"required input '{required.name}' is missing: the node always fails")
    dtype = ctx.dtype(node, index, port)
    if isinstance(dtype, Keep):
        return dtype
    allowed = spec.type_constraints[spec.inputs[index].type_constraint]
    if dtype not in allowed:
        return Keep(f"input '{port}' has type {type_name(dtype)}, which {node.op_type} does not accept "
                    f"(the node always fails)")
    return dtype


def scatter_inputs(ctx: RuleContext, node: onnx.NodeProto, version: int) -> tuple | Keep:
    """(data type, indices type, constant axis) of a scatter node (data, indices, updates, axis), or the
    first Keep."""
    dtype = data_type(ctx, node, version)
    if isinstance(dtype, Keep):
        return dtype
    index_type = ctx.dtype(node, 1, "indices")
    if isinstance(index_type, Keep):
        return index_type
    axis = constant_axis(ctx, node, 3, ctx.info.rank(node.input[0]))
    if isinstance(axis, Keep):
        return axis
    return dtype, index_type, axis


def constant_axis(ctx: RuleContext, node: onnx.NodeProto, index: int, rank: int | None) -> int | Keep:
    """The constant axis input normalised to [0, rank), or Keep (not constant, invalid, rank unknown)."""
    value = ctx.constant(node, index)
    if value is None:
        return Keep("axis is not a constant (initializer or Constant node): standard ONNX needs it as an "
                    "attribute")
    try:
        if rank is None:
            check.integer_type(node.op_type, "axis", value)
            axis = int(np.asarray(value).reshape(-1)[0]) if value.size == 1 else None
            if axis is None or value.ndim > 1:
                raise OpError(node.op_type, "input 'axis'", "must be a scalar or a one-element 1-D tensor",
                              value=value.tolist())
            if axis < 0:
                return Keep("the rank of data is unknown, so a negative axis cannot be resolved")
            return axis
        return check.scalar_axis(node.op_type, value, rank)
    except OpError as error:
        return Keep(f"invalid axis, the node always fails: {error}")


def scatter_indices(b: Builder, indices: str, dtype: np.dtype, data: str, axis: int) -> str:
    """Indices as int32/int64 for ScatterElements. uint64 values >= 2**63 turn negative in int64: they are
    moved to d (out of range) so the standard op rejects them as the dialect does."""
    dtype = np.dtype(dtype)
    if dtype in (np.int32, np.int64):
        return indices
    if dtype.itemsize <= 2:
        return b.cast(indices, TensorProto.INT32)
    wide = b.cast(indices, TensorProto.INT64)
    if dtype != np.uint64:
        return wide
    return out_of_range_negatives(b, wide, data, axis)


def out_of_range_negatives(b: Builder, indices: str, data: str, axis: int) -> str:
    """int64 indices with every negative value replaced by d = data.shape[axis] (out of range)."""
    size = b.dims(data, axis, axis + 1, hint="axis_size")
    negative = b.op("Less", [indices, b.const(np.int64(0), hint="zero")])
    return b.op("Where", [negative, size, indices], hint="checked_indices")


def onnx_type(dtype) -> int:
    return NUMPY_TO_ONNX[np.dtype(dtype)]


def runtime_check(b: Builder, verdict: str) -> str:
    """A [1] int64 tensor holding 0 that fails to compute when `verdict` (a one-element int64 tensor, 1 or 0)
    is 0: a one-element tensor reshaped to shape [verdict] (allowzero: [0] cannot hold 1 element). Add it to
    a value the graph needs, so that the check runs before the result exists."""
    shape = b.op("Reshape", [verdict, b.int64s([1], hint="one")], hint="verdict")
    return b.op("Reshape", [b.int64s([0], hint="zero"), shape], allowzero=1, hint="runtime_check")
