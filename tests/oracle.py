"""A deliberately naive second implementation of docs/dialect.md section 2, to check the kernels against.

Python loops over every element, exact Python integers, float arithmetic one step at a time in the
compute type (float32 for float16/bfloat16/float32, float64 for float64), data first and then the
updates in row-major order. Valid inputs only: errors are tested in test_kernel_errors.py.

ReduceL2 on floats returns the exact value in float64 (math.fsum, one rounding); compare it with
`assert_l2_close`, which allows for the accumulation order and the final rounding.
"""
from __future__ import annotations

import builtins
import math

import ml_dtypes
import numpy as np

from custom_ops._types import BFLOAT16, highest, is_bool, is_float, lowest

SEU, SU, L2, UNIQUE = "ScatterElementsUpdate", "ScatterUpdate", "ReduceL2", "Unique"
#: The ops this oracle implements (the seed ops; newer units are checked against OpenVINO in their own tests).
OPS = (SEU, SU, L2, UNIQUE)


def run(case) -> tuple:
    """The contract's outputs for a valid onnx_bridge.divergences.Case."""
    i, a = case.inputs, case.attributes
    if case.op == SEU:
        return (scatter_elements_update(i["data"], i["indices"], i["updates"], i["axis"], a["reduction"],
                                        a["use_init_val"]),)
    if case.op == SU:
        return (scatter_update(i["data"], i["indices"], i["updates"], i["axis"]),)
    if case.op == L2:
        return (reduce_l2(i["data"], i["axes"], a["keep_dims"]),)
    if case.op == UNIQUE:
        return unique(i["data"], i.get("axis"), a["sorted"], a["index_element_type"], a["count_element_type"])
    raise KeyError(f"the oracle has no {case.op} (OPS: {', '.join(OPS)})")


def _axis(axis, rank: int) -> int:
    return int(np.asarray(axis).reshape(-1)[0]) % rank


def _compute_type(dtype):
    return np.float64 if dtype == np.float64 else np.float32


# ------------------------------------------------------------------------------------------------------
# ScatterElementsUpdate


def scatter_elements_update(data, indices, updates, axis, reduction="none", use_init_val=1):
    axis = _axis(axis, data.ndim)
    size = data.shape[axis]
    groups: dict[tuple, list] = {}
    for position in np.ndindex(*indices.shape):
        index = int(indices[position])
        index += size if index < 0 else 0
        target = position[:axis] + (index,) + position[axis + 1:]
        groups.setdefault(target, []).append(updates[position])
    out = data.copy()
    for target, values in groups.items():
        start = [data[target]] if use_init_val else []
        out[target] = _reduce(reduction, data.dtype, start, values)
    return out


def _reduce(reduction, dtype, start, values):
    if reduction == "none":
        return values[-1]
    if is_bool(dtype):
        every = [bool(v) for v in start + values]
        return any(every) if reduction in ("sum", "max") else all(every)
    if is_float(dtype):
        return _reduce_float(reduction, dtype, start, values)
    every = [int(v) for v in start + values]
    if reduction == "mean":
        exact = sum(every) // len(every)  # floor, no wrap-around
    else:
        exact = {"sum": sum, "prod": math.prod, "min": min, "max": max}[reduction](every)
    return _wrap(exact, dtype)


def _wrap(value: int, dtype):
    bits = np.dtype(dtype).itemsize * 8
    value %= 1 << bits
    if np.dtype(dtype).kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _reduce_float(reduction, dtype, start, values):
    c = _compute_type(dtype)
    neutral = {"sum": 0, "mean": 0, "prod": 1, "min": highest(dtype), "max": lowest(dtype)}[reduction]
    acc = c(float(start[0])) if start else c(neutral)
    with np.errstate(all="ignore"):
        for value in values:
            value = c(float(value))
            if reduction in ("sum", "mean"):
                acc = c(acc + value)
            elif reduction == "prod":
                acc = c(acc * value)
            elif math.isnan(acc) or math.isnan(value):
                acc = c(math.nan)
            elif reduction == "min":
                acc = acc if acc < value else value  # a tie (0.0 / -0.0) takes the later value
            else:
                acc = acc if acc > value else value
        if reduction == "mean":
            acc = c(acc / c(len(start) + len(values)))
    return np.array(acc).astype(dtype)


# ------------------------------------------------------------------------------------------------------
# ScatterUpdate


def scatter_update(data, indices, updates, axis):
    axis = _axis(axis, data.ndim)
    out = data.copy()
    lead = (slice(None),) * axis
    for position in np.ndindex(*indices.shape):  # row-major: the last duplicate wins
        out[lead + (int(indices[position]),)] = updates[lead + position]
    return out


# ------------------------------------------------------------------------------------------------------
# ReduceL2


def reduce_l2(data, axes, keep_dims=0):
    axes = {int(a) % data.ndim for a in np.asarray(axes).reshape(-1)} if data.ndim else set()
    groups: dict[tuple, list] = {}
    for position in np.ndindex(*data.shape):
        key = tuple(0 if d in axes else p for d, p in enumerate(position))
        groups.setdefault(key, []).append(data[position])
    kept_shape = tuple(1 if d in axes else n for d, n in enumerate(data.shape))
    integer = np.dtype(data.dtype).kind in "iu"
    out = np.zeros(kept_shape, data.dtype if integer else np.float64)
    for key in np.ndindex(*kept_shape):
        values = groups.get(key, [])
        if integer:
            total = sum(int(v) ** 2 for v in values)
            root = math.isqrt(total)
            out[key] = _wrap(root + (total - root * root > root), data.dtype)  # half away from zero
        else:
            out[key] = math.sqrt(math.fsum(float(v) ** 2 for v in values))
    if not keep_dims:
        out = out.reshape(tuple(n for d, n in enumerate(data.shape) if d not in axes))
    return out


def is_float_l2(case) -> bool:
    return case.op == L2 and is_float(case.inputs["data"].dtype)


def l2_terms(case) -> int:
    """How many squares each output element of a ReduceL2 case sums."""
    data = case.inputs["data"]
    axes = {int(a) % data.ndim for a in case.inputs["axes"].reshape(-1)} if data.ndim else set()
    return math.prod(data.shape[a] for a in axes)


def _finfo(dtype):
    return ml_dtypes.finfo(dtype) if dtype == BFLOAT16 else np.finfo(dtype)


def l2_tolerance(exact: np.ndarray, dtype, terms: int) -> np.ndarray:
    """Allowed |result - exact| for a float ReduceL2 summing `terms` squares.

    A sum of n squares in the compute type is within n*u of the exact sum (u: unit roundoff), the root
    halves that, and rounding to the output type adds half an ulp of it; one ulp and (n + 2)*u leave room.
    """
    unit = 2.0 ** -53 if dtype == np.float64 else 2.0 ** -24
    info = _finfo(dtype)
    magnitude = np.abs(np.where(np.isfinite(exact), exact, 0.0))
    exponent = np.maximum(np.frexp(magnitude)[1] - 1, int(info.minexp))
    ulp = np.ldexp(1.0, exponent - int(info.nmant))
    return (terms + 2) * unit * magnitude + ulp


def assert_l2_close(actual: np.ndarray, exact: np.ndarray, dtype, terms: int, what: str = "") -> None:
    """actual (of dtype) is the exact float64 value within l2_tolerance; NaN, and infinities (also an exact
    value too large for dtype), must match exactly."""
    assert actual.dtype == dtype and actual.shape == exact.shape, (what, actual.dtype, actual.shape, exact.shape)
    got = actual.astype(np.float64)
    with np.errstate(over="ignore"):
        rounded = exact.astype(dtype).astype(np.float64)
    special = ~np.isfinite(rounded) | ~np.isfinite(got)
    assert np.array_equal(got[special], rounded[special], equal_nan=True), (what, got, exact)
    error = np.abs(got[~special] - exact[~special])
    limit = l2_tolerance(exact[~special], dtype, terms)
    assert (error <= limit).all(), (what, got, exact, error, limit)


# ------------------------------------------------------------------------------------------------------
# Unique


def _key(value):
    """Order and equality of the contract: -0.0 == 0.0; NaN equal to NaN, after every number."""
    if isinstance(value, float):
        return (1, 0.0) if math.isnan(value) else (0, value + 0.0)
    return (0, value)


def unique(data, axis=None, sorted=1, index_element_type="i64", count_element_type="i64"):
    elements = data.astype(np.float64) if is_float(data.dtype) else data
    if axis is None:
        keys = [(_key(v),) for v in elements.reshape(-1).tolist()]
    else:
        axis = _axis(axis, data.ndim)
        keys = [tuple(_key(v) for v in np.take(elements, i, axis=axis).reshape(-1).tolist())
                for i in range(data.shape[axis])]
    first: dict[tuple, int] = {}
    counts: dict[tuple, int] = {}
    for position, key in enumerate(keys):
        first.setdefault(key, position)
        counts[key] = counts.get(key, 0) + 1
    order = builtins.sorted(first) if sorted else list(first)  # dicts keep first-occurrence order
    rank = {key: r for r, key in enumerate(order)}
    first_indices = [first[key] for key in order]
    if axis is None:
        values = data.reshape(-1)[np.array(first_indices, np.intp)]
    else:
        values = np.take(data, np.array(first_indices, np.intp), axis=axis)
    index_type = np.int32 if index_element_type == "i32" else np.int64
    count_type = np.int32 if count_element_type == "i32" else np.int64
    return (values, np.array(first_indices, index_type), np.array([rank[k] for k in keys], index_type),
            np.array([counts[k] for k in order], count_type))


# ------------------------------------------------------------------------------------------------------
# Comparison


def assert_identical(actual: tuple, expected: tuple, what: str = "") -> None:
    """Same number of outputs, dtypes, shapes and values; floats bit-for-bit up to the NaN payload
    (NaN matches NaN, -0.0 does not match 0.0)."""
    assert len(actual) == len(expected), what
    for i, (got, want) in enumerate(zip(actual, expected)):
        want = np.asarray(want)
        assert got.dtype == want.dtype, (what, i, got.dtype, want.dtype)
        assert got.shape == want.shape, (what, i, got.shape, want.shape)
        if is_float(got.dtype):
            g, w = got.astype(np.float64), want.astype(np.float64)
            same = (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))
        else:
            same = got == want
        assert np.all(same), f"{what} output {i}:\n got {got!r}\nwant {want!r}"
