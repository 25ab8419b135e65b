"""The divergence rows of the ReduceL2 unit (custom_ops.unit.Divergence), with the measurements behind them
(measured on OpenVINO CPU, onnxruntime, the ONNX reference evaluator and torch by this project's probes)."""
from __future__ import annotations

import math

import numpy as np

from custom_ops._types import BFLOAT16, is_integer
from custom_ops.unit import Divergence

from .._divergence import (INT32, OV, Call, examples, f64_as_f32, f64_values_not_in_f32, fact, int64_as_int32,
                           on_call, uint32_as_int32, uint32_high_values, values, wide_int_values)

OP = "ReduceL2"
A = np.array
_ex = examples(("data", "axes"))
_l2 = on_call(OP)


def _square_sums(data: np.ndarray, axes_input: np.ndarray) -> list[int]:
    """Exact sums of squares of every output element of ReduceL2 on integers (empty axes: x*x)."""
    from custom_ops.ops.reduction.reduce_l2 import normalized_axes
    axes = normalized_axes(axes_input, data.ndim)
    squares = np.asarray(data.astype(object) ** 2, dtype=object)
    if not axes:
        return squares.reshape(-1).tolist()
    return np.asarray(np.sum(squares, axis=axes), dtype=object).reshape(-1).tolist()


@fact
def _l2_square_sums(call: Call) -> list[int]:
    return _square_sums(call.inputs["data"], call.inputs["axes"])


def _l2_integer_rounds_up(call: Call) -> bool:
    """Rounding half away from zero gives floor(sqrt) + 1 somewhere (runtimes that truncate differ)."""
    if not (is_integer(call.dtype) and call.inputs["axes"].size):
        return False
    return any(s - math.isqrt(s) ** 2 > math.isqrt(s) for s in _l2_square_sums(call))


#: Largest sum of squares the CPU plugin's integer ReduceL2 holds (measured): 8-bit types in themselves,
#: wider types in int32.
def _l2_overflows_cpu(call: Call) -> bool:
    dtype = call.dtype
    if not is_integer(dtype):
        return False
    limit = int(np.iinfo(dtype).max) if dtype.itemsize == 1 else INT32[1]
    return any(s > limit for s in _l2_square_sums(call))


def _l2_overflows_type(call: Call) -> bool:
    dtype = call.dtype
    return is_integer(dtype) and any(s > int(np.iinfo(dtype).max) for s in _l2_square_sums(call))


def _l2_empty_axes_rank2_dropped(call: Call) -> bool:
    return call.inputs["axes"].size == 0 and not call["keep_dims"] and call.inputs["data"].ndim >= 2


def _l2_duplicate_axes(call: Call) -> bool:
    """Axes valid but for duplicates (the contract rejects them)."""
    data, axes = call.inputs["data"], call.inputs["axes"]
    if axes.dtype.kind not in "iu" or axes.ndim > 1 or data.ndim == 0:
        return False
    values = [int(v) for v in axes.reshape(-1)]
    if not all(-data.ndim <= v < data.ndim for v in values):
        return False
    return len({v % data.ndim for v in values}) < len(values)


def _square_root_inexact(data: np.ndarray) -> bool:
    """sqrt(x*x) in the contract's float type (float32 for float32/bfloat16, float64 for float64) is not |x|
    for some element: x*x overflows (|x| > sqrt(max), ~1.8e19 in float32) or is subnormal or 0."""
    work = np.float64 if data.dtype == np.float64 else np.float32
    x = data.astype(work)
    with np.errstate(all="ignore"):
        root = np.sqrt(x * x).astype(data.dtype).astype(np.float64)
    magnitude = np.abs(data.astype(np.float64))
    return bool(np.any((root != magnitude) & ~np.isnan(magnitude)))


def _l2_empty_axes_square_inexact(call: Call) -> bool:
    """Empty axes on float32/bfloat16 data where the CPU's float32 sqrt(x*x) is not |x|."""
    data = call.inputs["data"]
    return call.inputs["axes"].size == 0 and data.dtype in (np.dtype(np.float32), BFLOAT16) and \
        _square_root_inexact(data)


def _l2_single_element_square_inexact(call: Call) -> bool:
    """Reduced dimensions holding one element in all (each output is one input element), on float32,
    bfloat16 or float64 data where the contract's sqrt(x*x) is not |x|."""
    from custom_ops.ops.reduction.reduce_l2 import normalized_axes
    data = call.inputs["data"]
    if data.dtype not in (np.dtype(np.float32), BFLOAT16, np.dtype(np.float64)) or not call.inputs["axes"].size:
        return False
    axes = normalized_axes(call.inputs["axes"], data.ndim)
    return math.prod(data.shape[a] for a in axes) == 1 and _square_root_inexact(data)


def _empty_byte_axes(call: Call) -> bool:
    axes = call.inputs["axes"]
    return axes.size == 0 and axes.dtype.itemsize == 1


def _float16_reduction(call: Call) -> bool:
    return call.dtype == np.float16 and call.inputs["axes"].size > 0


def _is_integer_data(call: Call) -> bool:
    return is_integer(call.dtype)



def _f64_inexact(call: Call) -> bool:
    """float64 work done in float32 can differ: a value float32 cannot hold, or a root that may round (taken
    as exact only for whole numbers below 2**12 whose square sums are perfect squares below 2**24; empty
    axes too: the CPU computes sqrt(x*x))."""
    if call.dtype != np.float64:
        return False
    if f64_values_not_in_f32(call):
        return True
    if not all(math.isfinite(v) and v == int(v) and abs(v) < 2**12 for v in values(call, "data")):
        return True
    return not all(s < 2**24 and math.isqrt(s) ** 2 == s
                   for s in _square_sums(call.inputs["data"].astype(np.int64), call.inputs["axes"]))


REDUCE_L2: tuple[Divergence, ...] = (
    # --- OpenVINO CPU plugin
    int64_as_int32(_l2(wide_int_values), _ex(data=A([[2**40, 1]], np.int64), axes=A([1]))),
    uint32_as_int32(_l2(uint32_high_values), _ex(data=A([[2**31 + 5, 1]], np.uint32), axes=A([1]))),
    f64_as_f32(_l2(_f64_inexact), _ex(data=A([[0.1, 0.2]]), axes=A([1]))),
    Divergence(
        "ov-reducel2-int-truncates", OV, "value", "integer ReduceL2 truncates",
        "The contract rounds half away from zero (OpenVINO's own reference test expects rounding). The CPU "
        "truncates: sqrt(13)=3.61 -> 3, sqrt(61)=7.81 -> 7, sqrt(80000)=282.8 -> 282.",
        _l2(_l2_integer_rounds_up),
        _ex(data=A([[2, 3]], np.int32), axes=A([1]))),
    Divergence(
        "ov-reducel2-int-overflow", OV, "value", "integer ReduceL2 sum of squares overflows",
        "The contract sums squares exactly. The CPU sums i8/u8 in the 8-bit type (i8 [12,0] -> 11, "
        "u8 [200,200] -> 0; empty axes: i8 -128 -> 11) and wider types in int32 (i32 [40000,40000] -> "
        "-2147483648, u16 [40000,40000] -> 0, i64 [2^31+1] -> -2147483648).",
        _l2(_l2_overflows_cpu),
        _ex(data=A([[40000, 40000]], np.int32), axes=A([1]))),
    Divergence(
        "ov-reducel2-empty-axes-no-keep", OV, "rejects",
        "empty axes with keep_dims=0 and rank >= 2 fail to compile",
        "Empty axes mean |x| (the contract, OpenVINO's reference and the CPU with keep_dims=1 or rank <= 1 "
        "agree). With keep_dims=0 and rank >= 2 the CPU plugin fails to compile: 'ReduceL2 node ... gets "
        "incorrect number of input/output dimensions'.",
        _l2(_l2_empty_axes_rank2_dropped),
        _ex(data=A([[-3.0, 4.0]], np.float32), axes=A([], np.int64))),
    Divergence(
        "ov-reducel2-empty-byte-axes", OV, "rejects", "empty i8/u8 axes fail at inference",
        "An empty axes Constant of element type i8 or u8 makes the CPU plugin fail with 'ptr is Null' "
        "(shape inference); empty i16/u16/i32/u64 axes work.",
        _l2(_empty_byte_axes),
        _ex(data=A([3.0, -4.0], np.float32), axes=A([], np.uint8), keep_dims=1)),
    Divergence(
        "ov-reducel2-empty-axes-square", OV, "value",
        "empty axes: |x| computed as sqrt(x*x) in f32 overflows and underflows",
        "Empty axes mean |x|. The CPU computes sqrt(x*x) in f32 (f32 and bf16 data): |x| above "
        "sqrt(FLT_MAX) ~ 1.8e19 gives inf (3e38, -3e38, 1e20 -> inf), |x| below ~1e-19 loses precision "
        "in the subnormal square (1e-22 -> 9.9e-23) or gives 0 (1e-30 -> 0). Matched element for element "
        "on 20000 random values per type; f16 data is exact (f64: ov-f64-as-f32).",
        _l2(_l2_empty_axes_square_inexact),
        _ex(data=A([3e38, 1e-30, -2.5], np.float32), axes=A([], np.int64), keep_dims=1)),
    Divergence(
        "ov-reducel2-duplicate-axes", OV, "accepts", "duplicate axes are reduced once",
        "The contract rejects duplicate axes; OpenVINO accepts [1,1] and [1,-1] and reduces once "
        "([[3,4],[6,8]] -> [5,10]).",
        _l2(_l2_duplicate_axes),
        _ex(data=A([[3.0, 4.0], [6.0, 8.0]], np.float32), axes=A([1, -1]))),
    Divergence(
        "ort-reducel2-int-truncates", "onnxruntime", "value", "integer ReduceL2 truncates",
        "ORT's int32/int64 ReduceL2 truncates ([[2,3],[6,5],[4,7]] -> [3,7,8]); the contract rounds "
        "(sqrt(13) -> 4). ORT sums int32 squares without overflow ([50000,50000] -> 70710).",
        _l2(_l2_integer_rounds_up),
        _ex(data=A([[2, 3]], np.int32), axes=A([1]))),
    Divergence(
        "ref-reducel2-float16", "onnx-reference", "value", "float16 ReduceL2 accumulates in float16",
        "The contract accumulates float16 in float32 or wider; onnx.reference sums in float16, so "
        "[300,300] overflows to inf (the contract 424.25) and sums round at every step.",
        _l2(_float16_reduction),
        _ex(data=A([[300, 300]], np.float16), axes=A([1]))),
    Divergence(
        "ref-reducel2-int-truncates", "onnx-reference", "value",
        "integer ReduceL2 truncates and overflows",
        "onnx.reference truncates (sqrt(8), sqrt(5), sqrt(2) -> 2, 2, 1) and sums squares in the input "
        "type (int32 [50000,50000] -> INT_MIN); the contract rounds and sums exactly.",
        _l2(lambda call: _l2_integer_rounds_up(call) or _l2_overflows_type(call)),
        _ex(data=A([[2, 3]], np.int32), axes=A([1]))),
    Divergence(
        "torch-norm-single-element", "torch", "value",
        "vector_norm of one element is |x| (no overflow or underflow of x*x)",
        "When the reduced dimensions hold one element (size 1), torch.linalg.vector_norm returns |x|; the "
        "contract squares in the float type (float32 for float32/bfloat16): 3e38 and 2e19 -> inf, 1e-30 "
        "-> 0 (torch 3e38, 2e19, 1e-30), float64 1e300 -> inf. With two or more elements torch squares "
        "too ([3e38, 0] -> inf); float16 data cannot overflow float32 squares.",
        _l2(_l2_single_element_square_inexact),
        _ex(data=A([[3e38], [1e-30]], np.float32), axes=A([1]))),
    Divergence(
        "torch-norm-integer", "torch", "rejects", "no L2 norm of integer tensors",
        "torch.linalg.vector_norm rejects integer input ('Expected a floating point or complex tensor'), "
        "even with dtype=float32.",
        _l2(_is_integer_data),
        _ex(data=A([[3, 4]], np.int32), axes=A([1]))),

)
