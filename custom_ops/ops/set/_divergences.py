"""The divergence rows of the Unique unit (custom_ops.unit.Divergence), with the measurements behind them
(measured on OpenVINO CPU, onnxruntime, the ONNX reference evaluator and torch by this project's probes)."""
from __future__ import annotations

import numpy as np

from custom_ops._types import BFLOAT16, is_float
from custom_ops.unit import Divergence

from .._divergence import (OV, Call, examples, f64_as_f32, f64_values_not_in_f32, int64_as_int32, nan_in,
                           on_call, uint32_as_int32, uint32_high_values, wide_int_values)

OP = "Unique"
A = np.array
_ex = examples(("data", "axis"))
_unique = on_call(OP)


def _unique_axis(call: Call):
    """Normalised axis of a valid Unique call, or None without one."""
    if "axis" not in call.inputs:
        return None
    return int(call.inputs["axis"].reshape(-1)[0]) % call.inputs["data"].ndim


def _unique_axis_not_first(call: Call) -> bool:
    axis = _unique_axis(call)
    return axis not in (None, 0) and call.inputs["data"].shape[axis] >= 2


def _unique_byte_type_with_axis(call: Call) -> bool:
    return "axis" in call.inputs and call.dtype.itemsize == 1 and call.inputs["data"].size > 0


def _unique_nan(call: Call) -> bool:
    return nan_in(call, "data")


def _unique_empty(call: Call) -> bool:
    return call.inputs["data"].size == 0


def _unique_other_dimension_empty(call: Call) -> bool:
    """With an axis, a dimension other than the axis is 0."""
    axis = _unique_axis(call)
    return axis is not None and any(n == 0 for d, n in enumerate(call.inputs["data"].shape) if d != axis)


def _unique_signed_zeros(call: Call) -> bool:
    """Float data holding both -0.0 and 0.0 (equal: which sign the unique value keeps is a choice)."""
    data = call.inputs["data"]
    if not is_float(data.dtype):
        return False
    signs = np.signbit(data.astype(np.float64)[data.astype(np.float64) == 0])
    return bool(signs.any() and not signs.all())


def _unique_bfloat16(call: Call) -> bool:
    return call.dtype == BFLOAT16 and call.inputs["data"].size > 0


def _unique_axis_type(call: Call) -> bool:
    return "axis" in call.inputs and call.inputs["axis"].dtype not in (np.dtype(np.int32), np.dtype(np.int64))


def _unique_unsorted_nd(call: Call) -> bool:
    return not call["sorted"] and (call.inputs["data"].ndim >= 2)


def _unique_unsorted_not_ascending(call: Call) -> bool:
    """sorted=0 and the first-occurrence order is not ascending (torch always sorts)."""
    if call["sorted"]:
        return False
    ascending = call.with_attributes(sorted=1).contract
    return not np.array_equal(call.contract[1], ascending[1])



UNIQUE: tuple[Divergence, ...] = (
    # --- OpenVINO CPU plugin
    int64_as_int32(_unique(wide_int_values), _ex(data=A([2**40 + 1, 2**40, 2**40 + 1], np.int64))),
    uint32_as_int32(_unique(lambda call: call["sorted"] and uint32_high_values(call)),
                    _ex(data=A([2**31 + 1, 1], np.uint32))),
    f64_as_f32(_unique(lambda call: call.dtype == np.float64 and f64_values_not_in_f32(call)),
               _ex(data=A([0.1, 0.1 + 1e-12]))),
    Divergence(
        "ov-unique-axis-merge", OV, "value", "Unique with axis != 0 misses equal slices",
        "The CPU sometimes does not merge equal slices along axis != 0 (columns (1,3),(1,2),(1,2) -> 3 "
        "'unique' columns; 16 of OpenVINO's own reference cases fail), occasionally even without "
        "duplicates (4 of 400 random probes). axis 0 is correct.",
        _unique(_unique_axis_not_first),
        _ex(data=A([[1, 1, 1], [3, 2, 2]], np.int32), axis=A(1))),
    Divergence(
        "ov-unique-byte-type-axis", OV, "value",
        "Unique of i8/u8/bool with an axis: wrong or uninitialised indices/counts",
        "With an axis, 1-byte types give wrong or uninitialised first indices and counts (garbage such as "
        "[-1921646591, 21921], changing between runs), also for 1-D data with axis 0. Without an axis "
        "they are correct.",
        _unique(_unique_byte_type_with_axis),
        _ex(data=A([1, 0, 1, 1, 0], np.int8), axis=A(0), sorted=0)),
    Divergence(
        "ov-unique-nan", OV, "value", "Unique with NaN",
        "The contract treats all NaNs as equal and sorts them last. The CPU gives garbage when sorted "
        "([2,1,nan,1,2] -> values [1,2,nan,1,2], counts [2,2,0,2,2]) and keeps every NaN distinct when "
        "unsorted.",
        _unique(_unique_nan),
        _ex(data=A([2.0, 1.0, np.nan, 1.0, 2.0], np.float32))),
    Divergence(
        "ov-unique-empty", OV, "value", "Unique of an empty input fails or returns stale data",
        "The contract gives empty outputs (with an axis: slices of size 0 are all equal). On a fresh "
        "compiled model the CPU raises 'Cannot get dims for non static shape' for (0,), for (0,2) without "
        "axis and for (2,0) with axis 0; on a compiled model that already ran, any empty input (also (0,3) "
        "with axis 0) returns the outputs of the previous inference or uninitialised values (f16 (0,5) after a "
        "(3,5) input with 3 unique values: outputs of shapes (3,), (3,), (15,), (3,)), which "
        "onnx_bridge.backends.openvino refuses: 'returned Unique outputs of shape'. With one inference "
        "thread it returns empty outputs (measured).",
        _unique(_unique_empty),
        _ex(data=np.zeros((0, 3), np.float32), axis=A(1))),
    Divergence(
        "ov-unique-bfloat16-values", OV, "nondeterministic",
        "Unique of bf16: the values output is sometimes garbage",
        "On a compiled model reused with another input shape, the first values of the 'unique' output of a "
        "bf16 Unique are sometimes uninitialised (e.g. [3.14e+23, 0, 4.89e+23, 0, 2, 3, 4] for "
        "[-4,-3,-2,0,1,2,3]; 5 of 160 runs); indices and counts are right, f16 and a fresh model are fine.",
        _unique(_unique_bfloat16),
        _ex(data=A([3, 3, -0.5, 3, 4.5, 2.5, 2.5], BFLOAT16))),
    Divergence(
        "ov-unique-axis-type", OV, "rejects", "Unique axis must be i32 or i64",
        "The contract takes any integer axis type; OpenVINO's Unique rejects an i8, u8 or u64 axis at "
        "build time.",
        _unique(_unique_axis_type),
        _ex(data=A([3, 1, 3], np.int32), axis=A(0, np.int8))),
    Divergence(
        "ort-unique-nan", "onnxruntime", "value", "Unique with NaN is wrong",
        "ORT's Unique orders values with '<' in a std::map, so NaN compares equal to everything: "
        "[nan,1,nan,2,1] -> Y [nan], counts [6]; [1,nan,2,nan,1,3,0.5] -> NaNs vanish. The contract merges "
        "NaNs into one value sorted last.",
        _unique(_unique_nan),
        _ex(data=A([np.nan, 1.0, np.nan, 2.0, 1.0], np.float32))),
    Divergence(
        "ref-unique-unsorted-nd", "onnx-reference", "value",
        "Unique sorted=0 is broken for >= 2-D inputs",
        "onnx.reference's sorted=0 raises IndexError or returns a wrong-shaped Y for flattened >= 2-D "
        "input or axis != 0; 1-D input is correct.",
        _unique(_unique_unsorted_nd),
        _ex(data=A([[3, 1], [3, 2]], np.int64), sorted=0)),
    Divergence(
        "torch-unique-nan", "torch", "value", "torch.unique keeps every NaN distinct",
        "torch.unique returns each NaN as its own value ([nan,1,nan,2,1] -> [1,2,nan,nan]); the contract "
        "merges them.",
        _unique(_unique_nan),
        _ex(data=A([np.nan, 1.0, np.nan], np.float32))),
    Divergence(
        "torch-unique-unsorted", "torch", "value", "torch.unique has no first-occurrence order",
        "torch.unique(sorted=False) on CPU still returns sorted output and has no first-occurrence "
        "indices output; the contract's sorted=0 is the order of first occurrence.",
        _unique(_unique_unsorted_not_ascending),
        _ex(data=A([3, 1, 3], np.int64), sorted=0)),
    Divergence(
        "torch-unique-signed-zero", "torch", "value",
        "torch.unique keeps the -0.0 or 0.0 its sort puts first",
        "The contract keeps the first occurrence's zero. torch.unique keeps the zero its sort puts first: "
        "the first occurrence up to 16 elements, beyond that either one ([-0.0] + 16 x [0.0] -> 0.0, "
        "[0.0] + 16 x [-0.0] -> -0.0), sorted or not, with or without dim.",
        _unique(_unique_signed_zeros),
        _ex(data=A([-0.0] + [0.0] * 16, np.float32))),
    Divergence(
        "torch-unique-empty-slices", "torch", "rejects",
        "torch.unique(dim) rejects an empty dimension other than dim",
        "The contract gives one unique (empty) slice, or none when the axis is empty too; torch.unique(dim=a) "
        "raises 'There are 0 sized dimensions, and they aren't selected' when another dimension is 0 ((0,3) "
        "with dim 1, (2,0,3) with dim 0 or 2), and 'Number of zero sized dimensions is more than one' for "
        "(0,0).",
        _unique(_unique_other_dimension_empty),
        _ex(data=np.zeros((0, 3), np.int64), axis=A(1))),

)
