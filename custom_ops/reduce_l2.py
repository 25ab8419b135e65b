"""ReduceL2-4 (OpenVINO): sqrt of the sum of squares over `axes`.

Empty axes reduce nothing: the result is |x|. Floats accumulate in float32 (float16/bfloat16 too) or
float64; integers are summed exactly and the root is rounded half away from zero, then cast back (wraps).
"""
from __future__ import annotations

import math
import string

import numpy as np

from .errors import OpError

from . import _checks as check
from ._spec import Attribute, OpSpec, Port, register
from ._types import DATA_TYPES, compute_dtype, is_integer

OP = "ReduceL2"
SUPPORTED_TYPES = tuple(t for t in DATA_TYPES if t != np.bool_)


def normalized_axes(axes, rank: int) -> tuple[int, ...]:
    if not isinstance(axes, np.ndarray) and not np.size(axes):
        axes = np.zeros(0, np.int64)  # a Python [] means "no axes", not float64
    axes = check.as_array(OP, "axes", axes)
    check.integer_type(OP, "axes", axes)
    if axes.ndim > 1:
        raise OpError(OP, "input 'axes'", "must be a scalar or 1-D", value=axes.shape, allowed="shape [] or [n]")
    result = []
    for value in (int(v) for v in axes.reshape(-1)):
        if rank == 0 or not -rank <= value < rank:
            raise OpError(OP, "input 'axes'", f"axis out of range for rank {rank}", value=value,
                          allowed=f"[{-rank}, {rank - 1}]" if rank else "no axes for a scalar")
        if value % rank in result:
            raise OpError(OP, "input 'axes'", "duplicate axis", value=axes.tolist(), allowed="each axis once")
        result.append(value % rank)
    return tuple(sorted(result))


def _sum_of_squares(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """sum(x*x) over axes in x's dtype, without a squared temporary (einsum)."""
    letters = string.ascii_letters[: x.ndim]
    kept = "".join(c for i, c in enumerate(letters) if i not in axes)
    return np.einsum(f"{letters},{letters}->{kept}", x, x)


def reduce_l2(data, axes, keep_dims=0):
    data = check.as_array(OP, "data", data)
    check.data_type(OP, "data", data, SUPPORTED_TYPES)
    keep_dims = check.flag(OP, "keep_dims", keep_dims)
    axes = normalized_axes(axes, data.ndim)
    if not axes:
        return np.abs(data)
    if is_integer(data.dtype):
        result = _integer_l2(data, axes)
    else:
        work = data.astype(compute_dtype(data.dtype), copy=False)
        result = np.sqrt(_sum_of_squares(work, axes)).astype(data.dtype)
    if keep_dims:
        result = result.reshape([1 if i in axes else n for i, n in enumerate(data.shape)])
    return np.asarray(result)


def _integer_l2(data: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    count = math.prod(data.shape[a] for a in axes)
    magnitude = max(abs(int(data.min())), abs(int(data.max()))) if data.size else 0
    bound = magnitude * magnitude * max(count, 1)
    if bound < 2**53:  # float64 sums of integer squares are exact here
        sums = _sum_of_squares(data.astype(np.float64), axes).astype(np.int64)
        root = np.floor(np.sqrt(sums)).astype(np.int64)
        root -= root * root > sums
        root += (root + 1) * (root + 1) <= sums
        root += sums - root * root > root  # round half away from zero: S - r^2 > r
        return _wrap(root, data.dtype)
    squares = data.astype(object) ** 2
    sums = np.add.reduce(squares, axis=axes) if axes else squares
    sums = np.asarray(sums, dtype=object)
    roots = np.vectorize(_rounded_isqrt, otypes=[object])(sums)
    return _wrap(roots, data.dtype)


def _rounded_isqrt(value: int) -> int:
    root = math.isqrt(int(value))
    return root + 1 if value - root * root > root else root


def _wrap(values: np.ndarray, dtype) -> np.ndarray:
    """Cast non-negative integers to dtype modulo 2**bits (C++ static_cast semantics)."""
    bits = np.dtype(dtype).itemsize * 8
    if values.dtype == object:
        values = np.asarray([int(v) % (1 << bits) for v in values.reshape(-1)],
                            dtype=np.uint64).reshape(values.shape)
    return values.astype(dtype)


def _kernel_v4(data, axes, keep_dims=0):
    return (reduce_l2(data, axes, keep_dims),)


register(OpSpec(OP, 4, (Port("data", "T"), Port("axes", "T_IND")), (Port("output", "T"),),
                (Attribute("keep_dims", "int", 0, (0, 1)),),
                {"T": SUPPORTED_TYPES, "T_IND": check.INTEGER_TYPES}, _kernel_v4,
                doc="L2 norm over axes; empty axes give |x|; integers rounded half away from zero."))
