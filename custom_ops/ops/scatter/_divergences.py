"""The divergence rows of the two scatter units (custom_ops.unit.Divergence), with the measurements behind
them (measured on OpenVINO CPU, onnxruntime, the ONNX reference evaluator and torch by this project's probes):
ScatterElementsUpdate's in SCATTER_ELEMENTS_UPDATE, ScatterUpdate's in SCATTER_UPDATE, the rows both declare
written once."""
from __future__ import annotations

import math

import numpy as np

from custom_ops._types import BFLOAT16, is_float, is_integer
from custom_ops.unit import Divergence, Outcome

from .._divergence import (INT32, OV, Call, examples, f32_exact, f64_as_f32, f64_values_not_in_f32, fact,
                           int64_as_int32, isnan, on_call, outside, py, uint32_as_int32, uint32_high_values,
                           wide_int_values)

SEU, SU = "ScatterElementsUpdate", "ScatterUpdate"
A = np.array
_ex = examples(("data", "indices", "updates", "axis"))
_seu, _su = on_call(SEU), on_call(SU)
_seu_outputs = on_call(SEU, tuple)


# ------------------------------------------------------------------------------------------------------
# Facts and predicates

@fact
def _seu_updates_by_position(call: Call) -> dict[int, list]:
    """Flat position in data -> the updates a valid ScatterElementsUpdate sends there (Python numbers, in
    row-major order)."""
    from custom_ops.ops.scatter.scatter_elements_update import target_positions, validate
    data, indices, updates, axis, _, _ = validate(*call.inputs.values(), call["reduction"], call["use_init_val"])
    groups: dict[int, list] = {}
    for position, value in zip(target_positions(data.shape, indices, axis).reshape(-1).tolist(),
                               py(updates)):
        groups.setdefault(position, []).append(value)
    return groups


@fact
def _seu_groups(call: Call) -> list[tuple[list, list]]:
    """Per touched position of a valid ScatterElementsUpdate: (start, updates) as Python numbers.


    start is [data value] with use_init_val=1 and [] with 0; updates are in row-major order.
    """
    flat = py(call.inputs["data"])
    return [([flat[p]] if call["use_init_val"] else [], values)
            for p, values in _seu_updates_by_position(call).items()]


def _int_mean_truncates(call: Call) -> bool:
    """Some integer mean is negative and not whole: truncation toward 0 differs from floor."""
    if not (is_integer(call.dtype) and call["reduction"] == "mean"):
        return False
    for start, updates in _seu_groups(call):
        total, count = sum(start + updates), len(start) + len(updates)
        if total < 0 and total % count:
            return True
    return False


#: Accumulator range of the CPU plugin's integer mean (measured): 8-bit types in themselves, 16-bit
#: widened, 32- and 64-bit types in int32.
def _mean_accumulator(dtype: np.dtype):
    if dtype.itemsize == 1:
        info = np.iinfo(dtype)
        return int(info.min), int(info.max)
    return None if dtype.itemsize == 2 else INT32


def _mean_accumulator_wraps(call: Call) -> bool:
    dtype = call.dtype
    if not (is_integer(dtype) and call["reduction"] == "mean") or _mean_accumulator(dtype) is None:
        return False
    low, high = _mean_accumulator(dtype)
    return any(not low <= sum(start + updates) <= high for start, updates in _seu_groups(call))


def _nan_update_ignored(call: Call) -> bool:
    """A NaN update reaches a min/max accumulator that is not NaN (the CPU keeps the accumulator)."""
    if not (is_float(call.dtype) and call["reduction"] in ("min", "max")):
        return False
    return any(any(isnan(u) for u in updates) and not any(isnan(s) for s in start)
               for start, updates in _seu_groups(call))


def _signed_zero_tie(call: Call) -> bool:
    """A min/max that ends on a zero whose first and last occurrences differ in sign: the contract keeps the
    last zero, runtimes that keep the accumulator on a tie the first (NaN groups: the contract gives NaN).
    Measured exact on 3000 random cases for OpenVINO, torch and onnx.reference."""
    if not (is_float(call.dtype) and call["reduction"] in ("min", "max")):
        return False
    for start, updates in _seu_groups(call):
        values = start + updates
        if any(isnan(v) for v in values):
            continue
        zeros = [math.copysign(1.0, v) for v in values if v == 0]
        best = min(values) if call["reduction"] == "min" else max(values)
        if best == 0 and zeros[0] != zeros[-1]:
            return True
    return False


def _bfloat16_rounding(call: Call) -> bool:
    """A bfloat16 sum/prod/mean whose float32 result bfloat16 cannot hold (rounding direction matters)."""
    if not (call.dtype == BFLOAT16 and call["reduction"] in ("sum", "prod", "mean")):
        return False
    for start, updates in _seu_groups(call):
        acc = np.float32(start[0] if start else (1 if call["reduction"] == "prod" else 0))
        with np.errstate(all="ignore"):
            for value in updates:
                acc = acc * np.float32(value) if call["reduction"] == "prod" else acc + np.float32(value)
            if call["reduction"] == "mean":
                acc = acc / np.float32(len(start) + len(updates))
        if not math.isnan(acc) and float(np.float32(acc).astype(BFLOAT16)) != float(acc):
            return True
    return False


def _two_element_axis(call: Call) -> bool:
    axis, data = call.inputs["axis"], call.inputs["data"]
    return axis.dtype.kind in "iu" and axis.size >= 2 and data.ndim >= 1 and \
        -data.ndim <= int(axis.reshape(-1)[0]) < data.ndim


def _seu_large_non_axis_dim(call: Call) -> bool:
    data, indices, axis = call.inputs["data"], call.inputs["indices"], call.inputs["axis"]
    if indices.ndim != data.ndim or indices.shape != call.inputs["updates"].shape or axis.dtype.kind not in "iu" \
            or not axis.size or data.ndim == 0 or not -data.ndim <= int(axis.reshape(-1)[0]) < data.ndim:
        return False
    a = int(axis.reshape(-1)[0]) % data.ndim
    return any(i != a and have > limit for i, (have, limit) in enumerate(zip(indices.shape, data.shape)))


def _lowered_gather_smaller_indices(call: Call) -> bool:
    """The lowered ScatterElementsUpdate gathers from a data-sized tensor at the indices (float min/max with
    use_init_val=1; mean and use_init_val=0 gather from tensors shaped like the box the indices reach, which
    fit them) and the indices are smaller than data on a dimension other than axis."""
    data, indices, reduction = call.inputs["data"], call.inputs["indices"], call["reduction"]
    gathers = is_float(data.dtype) and reduction in ("min", "max") and call["use_init_val"]
    if not gathers or indices.size == 0:
        return False
    axis = int(call.inputs["axis"].reshape(-1)[0]) % data.ndim
    return any(d != axis and n < size for d, (n, size) in enumerate(zip(indices.shape, data.shape)))


def _mean_sum_leaves_type(call: Call) -> bool:
    """A mean whose sum (start included) the data type cannot hold: an integer sum outside the type's
    range, or a float16/bfloat16 float32 sum that the type does not hold exactly (or overflows)."""
    dtype = call.dtype
    if call["reduction"] != "mean":
        return False
    if is_integer(dtype):
        info = np.iinfo(dtype)
        return any(not info.min <= sum(start + updates) <= info.max for start, updates in _seu_groups(call))
    if dtype not in (np.dtype(np.float16), BFLOAT16):
        return False
    for start, updates in _seu_groups(call):
        total = np.float32(0)
        with np.errstate(all="ignore"):
            for value in start + updates:
                total = np.float32(total + np.float32(value))
            if not math.isnan(total) and float(np.float32(total).astype(dtype)) != float(total):
                return True
    return False


def _nan_replaced_by_later_update(call: Call) -> bool:
    """min/max: a NaN (data or update) followed by a non-NaN update (the later value replaces the NaN)."""
    if not (is_float(call.dtype) and call["reduction"] in ("min", "max")):
        return False
    for start, updates in _seu_groups(call):
        sequence = start + updates
        first_nan = next((i for i, v in enumerate(sequence) if isnan(v)), None)
        if first_nan is not None and any(not isnan(v) for v in sequence[first_nan + 1:]):
            return True
    return False


def _init0_all_infinite(call: Call) -> bool:
    """use_init_val=0 max (min) where every update of a position is -inf (+inf)."""
    if not (is_float(call.dtype) and not call["use_init_val"] and call["reduction"] in ("min", "max")):
        return False
    sign = 1.0 if call["reduction"] == "min" else -1.0
    return any(all(u == sign * math.inf for u in updates) for _, updates in _seu_groups(call))


def _init0_infinite_positions(call: Call) -> list[int]:
    """use_init_val=0 min (max): the positions whose updates are all +inf (-inf)."""
    sign = 1.0 if call["reduction"] == "min" else -1.0
    return [p for p, updates in _seu_updates_by_position(call).items()
            if all(u == sign * math.inf for u in updates)]


def _half_init0_all_infinite(call: Call) -> bool:
    """float16/bfloat16 use_init_val=0 max (min) where every update of a position is -inf (+inf)."""
    return call.dtype in (np.dtype(np.float16), BFLOAT16) and _init0_all_infinite(call)


def _neutral_as_infinity(call: Call) -> tuple:
    """The contract's output with the all-infinite positions of a use_init_val=0 min/max set to the infinity:
    the neutral value lowest/max(float32) rounded to float16/bfloat16."""
    output = np.array(call.contract[0], copy=True)
    sign = 1.0 if call["reduction"] == "min" else -1.0
    output.reshape(-1)[_init0_infinite_positions(call)] = sign * np.inf
    return (output,)


def _seu_shape_mismatch(call: Call) -> bool:
    return call.inputs["indices"].shape != call.inputs["updates"].shape


def _whole_and_small(values: list, reduction: str) -> bool:
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < len(values):
        return True  # NaN propagates the same way in float32 and float64 (inf was ruled out before)
    if not all(v == int(v) for v in finite):
        return False
    if reduction == "prod":
        return math.prod(max(1, abs(int(v))) for v in finite) < 2**24
    if sum(abs(int(v)) for v in finite) >= 2**24:
        return False
    return reduction != "mean" or f32_exact(sum(finite) / len(finite))



def _scalar_indices(call: Call) -> bool:
    return call.inputs["indices"].ndim == 0


def _duplicate_indices_threaded(call: Call) -> bool:
    """Duplicate indices, except on the CPU plugin's sequential path: 1-D data of at most 64 elements of a
    16/32/64-bit integer type (the plugin runs them as i32) with indices of rank <= 1."""
    data, indices = call.inputs["data"], call.inputs["indices"]
    if data.ndim == 1 and data.size <= 64 and indices.ndim <= 1 and is_integer(data.dtype) and \
            data.dtype.itemsize >= 2:
        return False
    flat = indices.reshape(-1)
    return np.unique(flat).size < flat.size


def _index_outside_int32(call: Call) -> bool:
    indices = call.inputs["indices"]
    return indices.dtype.kind in "iu" and indices.size > 0 and outside(indices.reshape(-1).tolist(), *INT32)


def _index_out_of_range(call: Call) -> bool:
    """An index outside the contract's range ([-d, d-1]; ScatterUpdate [0, d-1]) on a resolvable axis."""
    data, indices, axis = call.inputs["data"], call.inputs["indices"], call.inputs["axis"]
    if indices.dtype.kind not in "iu" or not indices.size or data.ndim == 0 or axis.dtype.kind not in "iu" \
            or not axis.size or not -data.ndim <= int(axis.reshape(-1)[0]) < data.ndim:
        return False
    size = data.shape[int(axis.reshape(-1)[0]) % data.ndim]
    first = -size if call.op == SEU else 0
    return int(indices.min()) < first or int(indices.max()) > size - 1


def _empty_slices_index_out_of_range(call: Call) -> bool:
    """ScatterUpdate: an out-of-range index while another dimension of data is 0 (nothing is copied)."""
    if not _index_out_of_range(call) or call.inputs["updates"].size:
        return False
    data = call.inputs["data"]
    axis = int(call.inputs["axis"].reshape(-1)[0]) % data.ndim
    return any(n == 0 for d, n in enumerate(data.shape) if d != axis)


def _negative_index(call: Call) -> bool:
    indices = call.inputs["indices"]
    return indices.dtype.kind == "i" and indices.size > 0 and int(indices.min()) < 0


def _seu_f64_inexact(call: Call) -> bool:
    """float64 work done in float32 can differ: a value float32 cannot hold, or a sum/prod/mean that may
    round (taken as exact in float32 only for whole numbers whose partial results stay below 2**24)."""
    if call.dtype != np.float64:
        return False
    if f64_values_not_in_f32(call):
        return True
    return call["reduction"] in ("sum", "prod", "mean") and not all(
        _whole_and_small(start + updates, call["reduction"]) for start, updates in _seu_groups(call))


def _seu_uint32_signed(call: Call) -> bool:
    """u32 values >= 2**31 in a min/max/mean (the CPU compares or averages them as int32)."""
    return call["reduction"] in ("min", "max", "mean") and uint32_high_values(call)


def _both(on, example_read, example_range) -> tuple[Divergence, Divergence]:
    """The index rows both scatter units declare, with the unit's predicate wrapper and examples."""
    return (
        Divergence(
            "ov-index-read-in-32-bits", OV, "accepts", "index values are read in 32 bits",
            "Index values outside int32 are read modulo 2^32: i64 2^32 -> 0 and u64 2^32+1 -> 1 are silently "
            "valid, u32 2^32-1 -> -1 (position d-1 in ScatterElementsUpdate). The contract rejects them. "
            "onnx_bridge.backends.openvino refuses such inputs (they can also become indices below -d).",
            on(_index_outside_int32), example_read),
        Divergence(
            "ov-scatter-index-out-of-range", OV, "crashes",
            "out-of-range indices crash the process or corrupt the heap",
            "ScatterElementsUpdate has no lower bound check: -5 on a dimension of 4 gives SIGSEGV, 'free(): "
            "invalid next size' or 'double free or corruption'; -100 silently returns zeros. Indices OpenVINO "
            "does report (>= d; negative for ScatterUpdate) raise, but leave the heap corrupted: with one CPU "
            "core, index 3 on size 3, then any other model, then the same op again segfaulted. The contract "
            "rejects all of them; onnx_bridge.backends.openvino refuses them before OpenVINO sees them.",
            on(_index_out_of_range), example_range),
    )


# ------------------------------------------------------------------------------------------------------
# The rows

SCATTER_ELEMENTS_UPDATE: tuple[Divergence, ...] = (
    # --- OpenVINO CPU plugin
    Divergence(
        "ov-seu-int-mean-truncates", OV, "value", "integer mean truncates toward 0",
        "The contract floors (OpenVINO's spec: 'rounded down'; its core reference and constant folding "
        "floor too). The CPU kernel truncates: data [0,1,1,1,-7,0,5], idx [0,0,1,1,2,3,4,4,5,5], "
        "upd [-1,-1,1,2,-4,-2,2,2,-3,-4] gives [0,1,-1,0,-1,-2,5] instead of [-1,1,-2,-1,-1,-3,5]; "
        "(-2-3)/2 gives -2 instead of -3.",
        _seu(_int_mean_truncates),
        _ex(data=A([0, -2], np.int32), indices=A([1, 1]), updates=A([-3, 0], np.int32), axis=A(0),
            reduction="mean", use_init_val=0)),
    Divergence(
        "ov-seu-mean-narrow-accumulator", OV, "value",
        "integer mean accumulates in 8 bits (i8/u8) or 32 bits and wraps",
        "The contract accumulates exactly. The CPU sums i8/u8 in the 8-bit type (u8 (10+255)/2 -> 4, "
        "i8 (100+100+100)/3 -> 14), i32/u32/i64/u64 in int32 (i32 (2^31-1)*3/3 -> 715827881); i16/u16 are "
        "widened (exact). Sums wrap identically to the contract for reduction sum, which is unaffected.",
        _seu(_mean_accumulator_wraps),
        _ex(data=A([10], np.uint8), indices=A([0]), updates=A([255], np.uint8), axis=A(0),
            reduction="mean")),
    Divergence(
        "ov-seu-bfloat16-truncates", OV, "value", "bf16 sum/prod/mean results are truncated",
        "The contract computes bf16 in f32 and rounds once to nearest. The CPU converts the f32 result to "
        "bf16 toward zero: 1 + 0.005859375 -> 1 (nearest: 1.0078125), 1.0859375^2 -> 1.171875 (nearest "
        "1.1796875), (1 + 0.005859375)/2 -> 0.5.",
        _seu(_bfloat16_rounding),
        _ex(data=A([1.0], BFLOAT16), indices=A([0]), updates=A([0.005859375], BFLOAT16), axis=A(0),
            reduction="sum")),
    Divergence(
        "ov-seu-minmax-nan-ignored", OV, "value", "min/max ignore a NaN update",
        "The contract propagates NaN (numpy.minimum/maximum). The CPU keeps the accumulator when the "
        "comparison is false: min(1, NaN) -> 1 (a NaN already in data stays: max(NaN, 5) -> NaN). "
        "OpenVINO's core reference keeps the update instead (min(1, NaN) -> NaN, max(NaN, 5) -> 5).",
        _seu(lambda call: call["use_init_val"] and _nan_update_ignored(call)),
        _ex(data=A([1.0, 2.0], np.float32), indices=A([0]), updates=A([np.nan], np.float32),
            axis=A(0), reduction="min")),
    Divergence(
        "ov-seu-minmax-nan-init0", OV, "value",
        "use_init_val=0 min/max: NaN updates ignored, all-NaN gives -+FLT_MAX",
        "With use_init_val=0 a touched position starts from the neutral value (max of T for min, lowest "
        "for max) and the CPU ignores NaN updates, so a position that only receives NaN keeps the neutral "
        "value (+FLT_MAX for min, -FLT_MAX for max; f16/bf16 on an AVX2-only CPU: +inf/-inf, see "
        "ov-seu-init0-half-neutral-isa) where the contract gives NaN.",
        _seu(lambda call: not call["use_init_val"] and _nan_update_ignored(call)),
        _ex(data=A([1.0, 2.0], np.float32), indices=A([0]), updates=A([np.nan], np.float32),
            axis=A(0), reduction="max", use_init_val=0)),
    Divergence(
        "ov-seu-init0-half-neutral-isa", OV, "value",
        "f16/bf16 use_init_val=0 min/max of only infinities: depends on the CPU's instruction set",
        "With use_init_val=0 a touched position starts from the neutral value, lowest(T) for max and max(T) "
        "for min (the contract, OpenVINO's reduction_neutral_value), so updates that are all -inf (max) or "
        "+inf (min) leave lowest/max(T): bf16 -+3.3895e38, f16 -+65504. What the CPU plugin returns depends "
        "on the CPU: on an x86 Xeon with AVX-512/AMX it gave the contract's value (bf16 max of [-inf], "
        "conformance case gen/SEU/0010, 2026-11-22); on an AMD EPYC with AVX2 and no AVX-512 it gives the "
        "infinity itself, for f16 and bf16, min and max (2026-11-23), as if the neutral value were the f32 "
        "one rounded to the 16-bit type. Either outcome is accepted, nothing else; f32 gives -+FLT_MAX on "
        "both. (NaN updates: ov-seu-minmax-nan-init0.)",
        _seu(_half_init0_all_infinite),
        _ex(data=A([1.0, 2.0], BFLOAT16), indices=A([0, 0]), updates=A([-np.inf, -np.inf], BFLOAT16),
            axis=A(0), reduction="max", use_init_val=0),
        outcomes=(
            Outcome("the contract's lowest/max(T): x86 Xeon with AVX-512 and AMX, OpenVINO 2026.4.1 "
                    "(bf16, 2026-11-22; f16 not measured there)", _seu_outputs(lambda call: call.contract)),
            Outcome("-inf (max) / +inf (min): AMD EPYC, AVX2 without AVX-512, OpenVINO 2026.4.1 (f16 and "
                    "bf16, 2026-11-23)", _seu_outputs(_neutral_as_infinity)),
        )),
    Divergence(
        "ov-seu-minmax-signed-zero", OV, "value", "min/max of -0.0 and 0.0 keeps the accumulator",
        "-0.0 == 0.0, so the kept zero depends on the tie rule. The contract (numpy.minimum/maximum, and "
        "OpenVINO's core reference) takes the later value: min(0.0, -0.0) -> -0.0; the CPU keeps the "
        "accumulator: -> 0.0 (measured for min and max, use_init_val 0 and 1).",
        _seu(_signed_zero_tie),
        _ex(data=A([0.0], np.float32), indices=A([0]), updates=A([-0.0], np.float32), axis=A(0),
            reduction="min")),
    int64_as_int32(_seu(wide_int_values),
                   _ex(data=A([2**40, 0], np.int64), indices=A([1]), updates=A([2**40 + 1], np.int64), axis=A(0))),
    uint32_as_int32(_seu(_seu_uint32_signed),
                    _ex(data=A([2**31 + 5], np.uint32), indices=A([0]), updates=A([2**30], np.uint32), axis=A(0),
                        reduction="max")),
    f64_as_f32(_seu(_seu_f64_inexact),
               _ex(data=np.zeros(4), indices=A([0]), updates=A([0.1]), axis=A(0), reduction="sum")),
    Divergence(
        "ov-axis-two-elements", OV, "accepts", "a 2-element axis is accepted",
        "The contract requires a scalar or 1-element axis; OpenVINO's ScatterElementsUpdate accepts [0,1] "
        "and uses the first element.",
        _seu(_two_element_axis),
        _ex(data=np.zeros((2, 2), np.float32), indices=A([[1, 0]]), updates=A([[1.0, 2.0]], np.float32),
            axis=A([0, 1]))),
    Divergence(
        "ov-seu-large-non-axis-dim", OV, "accepts",
        "indices larger than data on a non-axis dimension are accepted",
        "The contract rejects them; OpenVINO writes through the flattened offset (data(2,2), idx [[0,1,0]], "
        "upd [[1,2,3]] -> [[1,0],[3,2]]), past the end of the buffer for larger shapes. "
        "onnx_bridge.backends.openvino refuses such inputs.",
        _seu(_seu_large_non_axis_dim),
        _ex(data=np.zeros((2, 2), np.float32), indices=A([[0, 1, 0]]),
            updates=A([[1.0, 2.0, 3.0]], np.float32), axis=A(0))),
    *_both(_seu, _ex(data=np.zeros(4, np.float32), indices=A([2**32]), updates=A([7.0], np.float32), axis=A(0)),
           _ex(data=np.zeros(4, np.float32), indices=A([-5]), updates=A([1.0], np.float32), axis=A(0))),
    Divergence(
        "ort-scatterelements-minmax-nan-replaced", "onnxruntime", "value",
        "ScatterElements min/max replace a NaN by a later value",
        "ORT computes acc < u ? acc : u (max likewise), so a NaN update propagates but a NaN already held "
        "is replaced by the next update: data [1,NaN], updates [NaN,5] -> [NaN,5]. The contract gives "
        "[NaN,NaN].",
        _seu(_nan_replaced_by_later_update),
        _ex(data=A([np.nan], np.float32), indices=A([0]), updates=A([5.0], np.float32), axis=A(0),
            reduction="min")),
    Divergence(
        "ref-scatterelements-minmax-nan-ignored", "onnx-reference", "value",
        "ScatterElements min/max ignore a NaN update",
        "onnx.reference uses Python min/max, which keep the accumulator when the comparison is false: "
        "data [1,NaN], updates [NaN,5] -> [1,NaN]. The contract gives [NaN,NaN].",
        _seu(_nan_update_ignored),
        _ex(data=A([1.0], np.float32), indices=A([0]), updates=A([np.nan], np.float32), axis=A(0),
            reduction="min")),
    Divergence(
        "ref-scatterelements-shape-unchecked", "onnx-reference", "accepts",
        "ScatterElements does not check updates' shape",
        "onnx.reference silently uses the indices' shape when updates differ; the contract rejects the "
        "mismatch.",
        _seu(_seu_shape_mismatch),
        _ex(data=np.zeros(3, np.float32), indices=A([0]), updates=A([1.0, 2.0], np.float32), axis=A(0))),
    Divergence(
        "ref-gatherelements-smaller-indices", "onnx-reference", "rejects",
        "GatherElements rejects indices smaller than data on a non-axis dimension",
        "ONNX lets indices be smaller than data on every dimension and onnxruntime runs that; onnx.reference's "
        "GatherElements raises 'all dimensions of index and self should be the same size' (data (3,2), "
        "indices (1,1), axis 0 or 1). The lowered ScatterElementsUpdate gathers from data at the indices "
        "for float min/max with use_init_val=1 (NaN handling); mean and use_init_val=0 gather from tensors "
        "shaped like the box the indices reach, which run.",
        _seu(_lowered_gather_smaller_indices),
        _ex(data=np.zeros((2, 2), np.float32), indices=A([[0, 0]]), updates=A([[1.0, 3.0]], np.float32),
            axis=A(1), reduction="max", use_init_val=1)),
    Divergence(
        "ref-scatterelements-minmax-signed-zero", "onnx-reference", "value",
        "ScatterElements min/max of -0.0 and 0.0 keeps the accumulator",
        "onnx.reference uses Python min/max, which keep the first of equal values: min(0.0, -0.0) -> 0.0, "
        "min(-0.0, 0.0) -> -0.0. The contract (numpy.minimum/maximum) takes the later value: -0.0 and 0.0.",
        _seu(_signed_zero_tie),
        _ex(data=A([0.0], np.float32), indices=A([0]), updates=A([-0.0], np.float32), axis=A(0),
            reduction="min")),
    Divergence(
        "torch-scatter-negative-indices", "torch", "rejects", "scatter_reduce rejects negative indices",
        "torch raises 'index -1 is out of bounds'; the contract counts negative indices from the end.",
        _seu(_negative_index),
        _ex(data=np.zeros(3, np.float32), indices=A([-1]), updates=A([1.0], np.float32), axis=A(0))),
    Divergence(
        "torch-scatter-init0-infinity", "torch", "value",
        "include_self=False amax/amin of only -inf/+inf gives the infinity",
        "With use_init_val=0 a touched position starts from OpenVINO's neutral value, lowest/max of T "
        "(finite: -FLT_MAX for max), so updates that are all -inf give -FLT_MAX; torch's include_self=False "
        "reduces the updates alone and gives -inf.",
        _seu(_init0_all_infinite),
        _ex(data=A([1.0], np.float32), indices=A([0]), updates=A([-np.inf], np.float32), axis=A(0),
            reduction="max", use_init_val=0)),
    Divergence(
        "torch-scatter-narrow-accumulator", "torch", "value",
        "scatter_reduce mean keeps the sum in the data type",
        "The contract's mean sums exactly (floats in float32) and rounds once. torch stores the sum in the "
        "data type before dividing (then floors integers): integer sums wrap (int8 mean of -43,-43,-43 -> 42, "
        "int32 2^30+2^30 -> -2^30, int64 likewise), float16/bfloat16 sums are rounded to the type (float16 "
        "-40000,-40000 -> -inf, the contract -40000). This model of torch matched 5600 random mean cases "
        "bit for bit (int8 to int64, float16, bfloat16); sum, prod and float32/float64 agree.",
        _seu(_mean_sum_leaves_type),
        _ex(data=A([-43], np.int8), indices=A([0, 0]), updates=A([-43, -43], np.int8), axis=A(0),
            reduction="mean")),
    Divergence(
        "torch-seu-minmax-signed-zero", "torch", "value",
        "amin/amax of -0.0 and 0.0 keep the first value",
        "-0.0 == 0.0: torch keeps the first participating value (data with include_self, else the first "
        "update): min(0.0, -0.0) -> 0.0, and with include_self=False updates [-0.0, 0.0] -> -0.0. The "
        "contract (numpy.minimum/maximum) takes the later value.",
        _seu(_signed_zero_tie),
        _ex(data=A([0.0], np.float32), indices=A([0]), updates=A([-0.0], np.float32), axis=A(0),
            reduction="min")),

)


SCATTER_UPDATE: tuple[Divergence, ...] = (
    # --- OpenVINO CPU plugin
    int64_as_int32(_su(wide_int_values),
                   _ex(data=A([2**40, 0], np.int64), indices=A([1]), updates=A([2**40 + 1], np.int64), axis=A(0))),
    f64_as_f32(_su(lambda call: call.dtype == np.float64 and f64_values_not_in_f32(call)),
               _ex(data=np.zeros(4), indices=A([0, 1, 2, 3]), updates=A([0.1, 1e300, 0.5, 1 / 3]), axis=A(0))),
    Divergence(
        "ov-scatterupdate-scalar-indices", OV, "rejects", "ScatterUpdate 0-D indices rejected",
        "The contract allows 0-D indices (OpenVINO's reference too); the CPU plugin refuses them: "
        "'ScatterUpdate node ... do not support scalar input'. (ScatterElementsUpdate 0-D data is "
        "rejected by the contract as well.)",
        _su(_scalar_indices),
        _ex(data=np.zeros((3, 2), np.float32), indices=A(1), updates=A([5.0, 6.0], np.float32),
            axis=A(0))),
    Divergence(
        "ov-scatterupdate-duplicates-nondeterministic", OV, "nondeterministic",
        "ScatterUpdate with duplicate indices is nondeterministic",
        "The contract: the last duplicate wins. The CPU copies the updates in parallel over (batch, index), "
        "so an earlier duplicate sometimes wins: 3000 updates to one index give the last or the middle one "
        "from run to run (n=10000: 5000 or 10000), and small ones too: 57 of 5000 random f32 cases with "
        "2-39 indices on 1-7 slots (0 of 5000 with INFERENCE_NUM_THREADS=1); u8 data [6,1], indices "
        "[[1],[0],[1]], updates [[11],[9],[7]] gave [9,11] about once in 1500 runs (the conformance run hit "
        "it). Not flagged: 1-D data of <= 64 elements of 16/32/64-bit integers with indices of rank <= 1, "
        "which the plugin updates sequentially (0 of 27000 random cases).",
        _su(_duplicate_indices_threaded),
        _ex(data=np.zeros(10, np.float32), indices=np.full(3000, 3),
            updates=np.arange(1, 3001, dtype=np.float32), axis=A(0))),
    *_both(_su, _ex(data=np.zeros(4, np.float32), indices=A([2**32]), updates=A([7.0], np.float32), axis=A(0)),
           _ex(data=np.zeros(4, np.float32), indices=A([4]), updates=A([1.0], np.float32), axis=A(0))),
    Divergence(
        "ort-scatternd-negative-indices", "onnxruntime", "accepts",
        "ScatterND accepts negative indices",
        "ScatterUpdate lowers to ScatterND, which accepts negative indices (counted from the end); the "
        "contract rejects them.",
        _su(_negative_index),
        _ex(data=np.zeros(3, np.float32), indices=A([-1]), updates=A([1.0], np.float32), axis=A(0))),
    Divergence(
        "torch-indexcopy-empty-unchecked", "torch", "accepts",
        "index_copy does not check indices when data has another empty dimension",
        "With nothing to copy (a dimension of data other than the axis is 0), index_copy returns data for "
        "any index (data (0,1), axis 1, indices [1,1,5], [-5] or [10^12]); the contract rejects indices "
        "outside [0, d-1] even when nothing is written. An empty axis dimension is checked.",
        _su(_empty_slices_index_out_of_range),
        _ex(data=np.zeros((0, 1), np.float32), indices=A([1, 5]), updates=np.zeros((0, 2), np.float32),
            axis=A(1))),

)
