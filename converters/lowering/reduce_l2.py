"""ReduceL2-4 -> ReduceL2-18 (keepdims written, noop_with_empty_axes=1) or an exact integer subgraph.

- Constant empty axes: the result is |x| (Abs), not sqrt(x*x) (which overflows or underflows for floats).
- float32/float64: ReduceL2-18. Rounding can differ from the kernel in the last bits because the sum of
  squares is accumulated in another order (the contract fixes the accumulation type, not the order): a
  caveat, so strict=True (results bit-identical to the kernels) keeps float ReduceL2 with non-empty axes.
  float16/bfloat16: Cast to float32 around it (the kernel also computes in float32; onnxruntime has no
  bfloat16 ReduceL2). Runtime axes that may be empty: float32/float64/bfloat16 go through If(empty: Abs);
  float16 needs no If, as float32 x*x is exact for every float16 x, so sqrt(x*x) == |x|.
- int8/uint8/int16/uint16: the exact sum of squares in int64 (ReduceSum), the integer square root from
  float64 corrected by one step each way, rounded half away from zero (S - r*r > r), then Cast back (wraps
  like the kernel). Exact while S < 2**62: any size for 8-bit types, fewer than 2**30 elements per reduced
  group for 16-bit ones. onnxruntime's own integer ReduceL2 truncates, so it is not used.
- 32/64-bit integers stay dialect nodes: the exact sum of squares needs more than 64 bits.
- Runtime axes: Cast to int64 1-D, with a run-time check that they are distinct (the dialect rejects
  duplicates, onnxruntime would silently de-duplicate them).
"""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from custom_ops import checks as check
from custom_ops.element_types import BFLOAT16, type_name
from custom_ops.ops.reduction.reduce_l2 import normalized_axes
from custom_ops.config import DOMAIN
from custom_ops.errors import OpError

from ..registry import LOWERING
from ..rules import Converted, Keep
from ._common import data_type, onnx_type, runtime_check, spec_attributes

SMALL_INTEGERS = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16))
F32 = np.dtype(np.float32)


def _constant_axes(node, value, rank):
    """Sorted normalised axes (tuple) or Keep."""
    try:
        check.integer_type(node.op_type, "axes", value)
        if rank is None:
            flat = [int(v) for v in value.reshape(-1)]
            if value.ndim > 1 or any(v < 0 for v in flat):
                return Keep("the rank of data is unknown, so negative axes cannot be resolved")
            if len(set(flat)) != len(flat):
                raise OpError(node.op_type, "input 'axes'", "duplicate axis", value=flat)
            return tuple(sorted(flat))
        return normalized_axes(value, rank)
    except OpError as error:
        return Keep(f"invalid axes, the node always fails: {error}")


@LOWERING.register(DOMAIN, "ReduceL2", 4)
def lower_v4(node, ctx):
    attributes = spec_attributes(ctx, node, 4)
    if isinstance(attributes, Keep):
        return attributes
    keep = attributes["keep_dims"]
    dtype = data_type(ctx, node, 4)
    if isinstance(dtype, Keep):
        return dtype
    data = node.input[0]
    shape = ctx.info.shape(data)
    value = ctx.constant(node, 1)
    axes = None
    if value is not None:
        axes = _constant_axes(node, value, None if shape is None else len(shape))
        if isinstance(axes, Keep):
            return axes
    if axes == ():
        return _absolute(ctx, node, dtype)
    if dtype.kind in "iu" and dtype not in SMALL_INTEGERS:
        return Keep(f"{type_name(dtype)}: the exact sum of squares needs more than 64 bits, which standard "
                    f"ONNX cannot express (onnxruntime's integer ReduceL2 also truncates instead of rounding)")
    b = ctx.builder(node)
    if axes is None:
        axes_input = _checked_runtime_axes(b, node.input[0], node.input[1])
    else:
        axes_input = b.int64s(axes, hint="axes")
    if dtype in SMALL_INTEGERS:
        return _integer(b, node, dtype, axes_input, keep, axes, shape)
    rounding = ("float rounding: the sum of squares is accumulated in another order than in the kernel "
                "(results may differ in the last bits)")
    work = F32 if dtype in (np.float16, BFLOAT16) else dtype
    x = b.cast(data, onnx_type(work))
    last = node.output[0] if work == dtype else None
    reduce = dict(keepdims=keep, noop_with_empty_axes=1)
    notes = ["ReduceL2-18 keepdims explicit, noop_with_empty_axes=1"]
    if axes is None and dtype != np.float16:
        result = _if_empty(b, x, axes_input, work, last, reduce)
        notes.append("runtime axes: If(empty) -> Abs")
    else:
        result = b.op("ReduceL2", [x, axes_input], last, **reduce)
    if work != dtype:
        b.cast(result, onnx_type(dtype), output=node.output[0])
        notes.append(f"computed in {type_name(work)}")
    return Converted(b, "lowered", "; ".join(notes), caveat=rounding, rounding_only=True)


def _checked_runtime_axes(b, data, axes):
    """Runtime axes as int64 1-D, plus a run-time check that they are a scalar or 1-D (the Reshape below would
    accept any rank; the dialect rejects more) and distinct (onnxruntime would silently de-duplicate them;
    the dialect rejects them). Range errors are left to ReduceL2/ReduceSum."""
    axes_rank = b.op("Size", [b.op("Shape", [axes])], hint="axes_rank")
    scalar_or_vector = b.cast(b.op("LessOrEqual", [axes_rank, b.const(np.int64(1), hint="one")],
                                   hint="axes_at_most_1d"), TensorProto.INT64)
    flat = b.op("Reshape", [b.cast(axes, TensorProto.INT64), b.int64s([-1])], hint="axes")
    flat = b.op("Add", [flat, runtime_check(b, b.op("Reshape", [scalar_or_vector, b.int64s([1])]))],
                hint="axes_checked_rank")
    rank = b.op("Size", [b.op("Shape", [data])], hint="rank")
    divisor = b.op("Max", [rank, b.const(np.int64(1), hint="one")], hint="rank_at_least_1")  # no x % 0
    normalised = b.op("Mod", [b.op("Add", [flat, rank]), divisor], fmod=0, hint="axes_normalised")
    distinct = b.op("Unique", [normalised], n=4, hint="distinct_axes")[0]
    verdict = b.cast(b.op("Equal", [b.op("Size", [distinct]), b.op("Size", [flat])], hint="axes_distinct"),
                     TensorProto.INT64)
    return b.op("Add", [flat, runtime_check(b, verdict)], hint="axes")


def _absolute(ctx, node, dtype):
    b = ctx.builder(node)
    if dtype == BFLOAT16:
        wide = b.op("Abs", [b.cast(node.input[0], TensorProto.FLOAT)])
        b.cast(wide, TensorProto.BFLOAT16, output=node.output[0])
    else:
        b.op("Abs", [node.input[0]], node.output[0])
    return Converted(b, "lowered", "empty axes: Abs (|x|, no reduction)")


def _if_empty(b, x, axes, work, output, reduce):
    """If(Size(axes) == 0, Abs(x), ReduceL2(x, axes))."""
    empty = b.op("Equal", [b.op("Size", [axes]), b.const(np.int64(0), hint="zero")], hint="no_axes")
    return b.if_(empty, lambda t: [t.op("Abs", [x])], lambda e: [e.op("ReduceL2", [x, axes], **reduce)],
                 output, hint="l2_or_abs")


def _integer(b, node, dtype, axes_input, keep, axes, shape):
    notes = ["int64 sum of squares (ReduceSum-18), integer square root rounded half away from zero"]
    if dtype.itemsize == 2:
        static = None
        if axes is not None and shape is not None and all(isinstance(shape[a], int) for a in axes):
            static = math.prod(shape[a] for a in axes)
        if static is not None and static >= 2**30:
            return Keep(f"{static} elements per reduced group: the int64 sum of 16-bit squares may overflow")
        if static is None:
            notes.append("exact below 2**30 elements per reduced group")
    i64, f64 = TensorProto.INT64, TensorProto.DOUBLE
    x = b.cast(node.input[0], i64)
    total = b.op("ReduceSum", [b.op("Mul", [x, x], hint="squares"), axes_input], keepdims=keep,
                 noop_with_empty_axes=1, hint="sum_squares")
    root = b.cast(b.op("Sqrt", [b.cast(total, f64)], hint="root"), i64)

    def flag(op_type, left, right):
        return b.cast(b.op(op_type, [left, right]), i64)

    one = b.const(np.int64(1), hint="one")
    root = b.op("Sub", [root, flag("Greater", b.op("Mul", [root, root]), total)], hint="root_floor")
    above = b.op("Add", [root, one])
    root = b.op("Add", [root, flag("LessOrEqual", b.op("Mul", [above, above]), total)], hint="root_floor")
    excess = b.op("Sub", [total, b.op("Mul", [root, root])], hint="excess")
    root = b.op("Add", [root, flag("Greater", excess, root)], hint="root_rounded")
    b.cast(root, onnx_type(dtype), output=node.output[0])
    return Converted(b, "decomposed", "; ".join(notes))
