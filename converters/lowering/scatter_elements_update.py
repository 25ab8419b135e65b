"""ScatterElementsUpdate-3/-12 -> ScatterElements-18.

none/sum/prod/min/max with use_init_val=1: one ScatterElements (none/add/mul/min/max), in the data type or,
where onnxruntime has no kernel for it, in float32 with Casts around (float16 add/mul, all bfloat16).
bool: sum/max are OR (add), prod/min are AND (mul), which onnxruntime runs natively for bool.
The box: indices' shape with the axis dimension widened to data's. Every target lies in this corner of data
(indices never exceed data on the other dimensions), so per-position work (use_init_val=0, mean) is done in
box-sized tensors and data is copied once, by the final scatter (1000x20x7x6 instead of 1000x256x7x7 on
the benchmark shape).
use_init_val=0: the reduction runs in the box, started from the reduction's neutral value (the kernel's
neutral_value, as the kernel starts every touched position), its value at each target is gathered and
scattered into data with "none" (duplicates write the same value); untouched positions keep data.
Float min/max: onnxruntime lets a later update replace a NaN already there (NaN in data, or an earlier NaN
update), the contract propagates NaN (numpy.maximum). So every update whose target must end NaN is made
NaN first (see _nan_sticky_updates): then the last write there is NaN too.
mean: sum and count scatters in the box (the sum starts from data's corner, a Slice, or from 0 with
use_init_val=0), then every target of data rewritten with sum / count (gathered per update, so the division
is updates-sized), the kernel's arithmetic exactly: floats sum sequentially in the compute type
(float32 for float16/bfloat16) and divide once; integers up to 32 bits sum in int64 (exact for fewer than
2**31 updates per position) and floor-divide as Div(Sub(a, Mod(a, b)), b); untouched positions keep data.
Counts are int32 when the number of updates is statically below 2**31, else int64. 64-bit integer mean
needs a wider sum and stays a dialect node.
reduction="mean" is never emitted (onnxruntime would run it as "none").
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from custom_ops.element_types import BFLOAT16, compute_dtype, is_bool, is_float, type_name
from custom_ops.ops.scatter.scatter_elements_update import neutral_value
from custom_ops.config import DOMAIN

from ..registry import LOWERING
from ..rules import Converted, Keep
from ._common import onnx_type, scatter_indices, scatter_inputs, spec_attributes

ONNX_REDUCTION = {"none": "none", "sum": "add", "prod": "mul", "min": "min", "max": "max"}
BOOL_REDUCTION = {"sum": "add", "prod": "mul", "min": "mul", "max": "add"}  # OR, AND, AND, OR
F16 = np.dtype(np.float16)


def _work_type(dtype: np.dtype, reduction: str) -> np.dtype:
    """Type the scatter runs in: the data type unless onnxruntime lacks a kernel it needs (float16 add,
    also needed by the NaN pass of min/max; bfloat16 everything)."""
    if dtype in (BFLOAT16, F16) and reduction != "none":
        return np.dtype(np.float32)
    return dtype


@LOWERING.register(DOMAIN, "ScatterElementsUpdate", 3)
def lower_v3(node, ctx):
    return _lower(node, ctx, 3, "none", 1)


@LOWERING.register(DOMAIN, "ScatterElementsUpdate", 12)
def lower_v12(node, ctx):
    attributes = spec_attributes(ctx, node, 12)
    if isinstance(attributes, Keep):
        return attributes
    return _lower(node, ctx, 12, attributes["reduction"], attributes["use_init_val"])


def _lower(node, ctx, version, reduction, use_init_val):
    found = scatter_inputs(ctx, node, version)
    if isinstance(found, Keep):
        return found
    dtype, index_type, axis = found
    data, indices, updates = node.input[:3]
    if reduction == "mean" and is_bool(dtype):
        return Keep("mean is not defined for bool data: the node always fails")
    if reduction == "mean" and dtype in (np.int64, np.uint64):
        return Keep(f"{type_name(dtype)} mean needs an exact sum wider than 64 bits, which standard ONNX "
                    f"cannot express")
    b = ctx.builder(node)
    idx = scatter_indices(b, indices, index_type, data, axis)
    out = node.output[0]
    if reduction == "none":  # use_init_val has no effect; every type has a native kernel
        b.op("ScatterElements", [data, idx, updates], [out], axis=axis, reduction="none")
        return Converted(b, "lowered", "ScatterElements-18 reduction none")
    if reduction == "mean":
        return _mean(b, node, dtype, idx, axis, use_init_val)
    onnx_reduction = BOOL_REDUCTION[reduction] if is_bool(dtype) else ONNX_REDUCTION[reduction]
    work = _work_type(dtype, onnx_reduction)
    if not use_init_val:
        return _from_neutral(b, node, dtype, idx, axis, reduction, onnx_reduction, work)
    base = b.cast(data, onnx_type(work))
    values = b.cast(updates, onnx_type(work))
    steps = []
    nan_fix = is_float(dtype) and reduction in ("min", "max")
    if nan_fix:
        values = _nan_sticky_updates(b, base, idx, values, axis, work, use_init_val)
        steps.append("NaN made sticky (updates to a NaN target set to NaN)")
    last = out if work == dtype else None  # the op that writes the node's output
    result = b.op("ScatterElements", [base, idx, values], last, axis=axis, reduction=onnx_reduction)
    if work != dtype:
        b.cast(result, onnx_type(dtype), output=out)
        steps.append(f"computed in {type_name(work)}")
    what = _what(onnx_reduction, reduction, dtype)
    if nan_fix:
        return Converted(b, "decomposed", "; ".join([what] + steps))
    return Converted(b, "lowered", "; ".join([what] + steps))


def _from_neutral(b, node, dtype, idx, axis, reduction, onnx_reduction, work):
    """use_init_val=0: the reduction runs in the box the indices reach, started from the neutral value (as the
    kernel starts every touched position), and its value at each target is scattered into data ("none":
    duplicates write the same value). One data-sized pass, the final scatter, in the data type."""
    data, indices, updates = node.input[:3]
    neutral = neutral_value(reduction, dtype)
    values = b.cast(updates, onnx_type(work))
    start = b.filled(_box_shape(b, data, indices, axis), neutral, work, hint="neutral")
    steps = [f"{_what(onnx_reduction, reduction, dtype)} from the neutral value {neutral} over the box the indices "
             f"reach, written back at the targets"]
    if is_float(dtype) and reduction in ("min", "max"):
        values = _nan_sticky_updates(b, start, idx, values, axis, work, 0)
        steps.append("NaN made sticky (updates to a NaN target set to NaN)")
    reduced = b.op("ScatterElements", [start, idx, values], axis=axis, reduction=onnx_reduction, hint="reduced")
    at_target = b.cast(b.op("GatherElements", [reduced, idx], axis=axis, hint="result_at_target"),
                       onnx_type(dtype))
    b.op("ScatterElements", [data, idx, at_target], node.output[0], axis=axis, reduction="none", hint="written")
    if work != dtype:
        steps.append(f"computed in {type_name(work)}")
    return Converted(b, "decomposed", "; ".join(steps))


def _what(onnx_reduction: str, reduction: str, dtype) -> str:
    what = f"ScatterElements-18 reduction {onnx_reduction}"
    if is_bool(dtype):
        what += f" ({reduction} on bool = {'OR' if onnx_reduction == 'add' else 'AND'})"
    return what


def _box_shape(b, data, indices, axis) -> str:
    """indices' shape with the axis dimension widened to data's: every target lies in this corner of data
    (indices never exceed data on the other dimensions), so per-position work needs only this much."""
    return b.op("Concat", [b.dims(indices, 0, axis), b.dims(data, axis, axis + 1), b.dims(indices, axis + 1)],
                axis=0, hint="box_shape")


def _nan_sticky_updates(b, base, idx, values, axis, work, use_init_val):
    """Updates with NaN put in every update whose target ends NaN in the contract: the target receives a NaN
    update, or (use_init_val=1) holds NaN. Then every write to such a target is NaN, so the last one is.
    Which targets receive a NaN update needs a data-sized uint8 mask scatter: done inside If, only when some
    update is NaN. Everything else is updates-sized."""
    nan_update = b.op("IsNaN", [values], hint="nan_update")
    count = b.op("ReduceMax", [b.op("Cast", [nan_update], to=TensorProto.UINT8)], keepdims=0, hint="any_nan")
    some = b.op("Cast", [count], to=TensorProto.BOOL, hint="any_nan")

    def mask(t):
        flags = t.op("Cast", [nan_update], to=TensorProto.UINT8, hint="nan_flags")
        zeros = t.filled(t.op("Shape", [base]), 0, np.uint8, hint="no_nan")
        marked = t.op("ScatterElements", [zeros, idx, flags], axis=axis, reduction="max", hint="nan_targets")
        return [t.op("Cast", [t.op("GatherElements", [marked, idx], axis=axis)], to=TensorProto.BOOL,
                     hint="meets_nan_update")]

    hit = b.if_(some, mask, lambda e: [e.op("Identity", [nan_update])], hint="meets_nan_update")
    if use_init_val:  # with use_init_val=0 touched positions start from the neutral value, never NaN
        met = b.op("GatherElements", [base, idx], axis=axis, hint="base_at_target")
        hit = b.op("Or", [hit, b.op("IsNaN", [met], hint="nan_base")], hint="meets_nan")
    return b.op("Where", [hit, b.const(np.array(np.nan, work), hint="nan"), values], hint="nan_sticky_updates")


def _mean(b, node, dtype, idx, axis, use_init_val):
    """Sum and count scatters into the box the indices reach, then each touched position of data rewritten
    with sum / count (computed per update from gathered sums and counts: updates-sized work; duplicates write
    the same value). One data-sized pass: the final scatter."""
    data, indices, updates = node.input[:3]
    out = node.output[0]
    integer = not is_float(dtype)
    work = np.dtype(np.int64) if integer else compute_dtype(dtype)
    values = b.cast(updates, onnx_type(work))
    update_shape = b.op("Shape", [idx])
    # The box: indices' shape with the axis dimension widened to data's. Every target lies in it (indices
    # never exceed data on the other dimensions), so sums and counts need only box-sized tensors, and the
    # box's corner of data (a Slice, cast to the work type) is where the sums start from.
    data_is_box = _box_is_data(b, data, indices, axis)
    box = _box_shape(b, data, indices, axis)
    if not use_init_val:
        start = b.filled(box, 0, work, hint="zeros")
    elif data_is_box:
        start = b.cast(data, onnx_type(work))
    else:
        rank = len(b.info.static_shape(data) or ()) or None
        zeros = b.filled(b.op("Shape", [box]), 0, np.int64, hint="box_start") if rank is None else \
            b.int64s([0] * rank, hint="box_start")
        start = b.cast(b.op("Slice", [data, zeros, box], hint="data_in_box"), onnx_type(work))
    total = b.op("ScatterElements", [start, idx, values], axis=axis, reduction="add", hint="sum")
    static = b.info.static_shape(indices)
    counter = np.int32 if static is not None and np.prod(static, dtype=np.int64) < 2**31 else np.int64
    count_start = b.filled(box, use_init_val, counter, hint="count_start")
    count = b.op("ScatterElements", [count_start, idx, b.filled(update_shape, 1, counter, hint="ones")],
                 axis=axis, reduction="add", hint="count")
    summed = b.op("GatherElements", [total, idx], axis=axis, hint="sum_at_target")
    divisor = b.cast(b.op("GatherElements", [count, idx], axis=axis, hint="count_at_target"), onnx_type(work))
    if integer:
        remainder = b.op("Mod", [summed, divisor], fmod=0, hint="remainder")
        mean = b.op("Div", [b.op("Sub", [summed, remainder], hint="floor_multiple"), divisor], hint="mean")
        how = "int64 sum, floor division Div(Sub(a, Mod(a, b)), b)"
    else:
        mean = b.op("Div", [summed, divisor], hint="mean")
        how = f"{type_name(work)} sum, one division"
    # The means land in data itself, in its type (a mean lies within the range of what it averages), or in
    # the sums when those already are data in its type.
    target = total if data_is_box and use_init_val and work == dtype else data
    b.op("ScatterElements", [target, idx, b.cast(mean, onnx_type(dtype))], out, axis=axis, reduction="none",
         hint="means")
    start_note = "from data" if use_init_val else "from 0 (use_init_val=0)"
    return Converted(b, "decomposed", f"mean: ScatterElements-18 add for sum ({start_note}) and count over the "
                                      f"box the indices reach ({how}), means written back at the targets")


def _box_is_data(b, data, indices, axis) -> bool:
    """Whether static shapes prove that indices match data on every dimension but the axis."""
    data_shape, index_shape = b.info.static_shape(data), b.info.static_shape(indices)
    if data_shape is None or index_shape is None or len(data_shape) != len(index_shape):
        return False
    return all(n == m for d, (n, m) in enumerate(zip(data_shape, index_shape)) if d != axis)
