"""What the units' case generators share (custom_ops.unit.DialectUnit.cases): deterministic cycling of
element types and attribute values (a Latin square: case k = n b + d takes type d and value (d + b) mod m, so
the first cases already hold every type and every value), and seeded values, shapes, indices and the special
ingredients (duplicates, negative indices down to -d, NaN, -0.0, infinities, type extremes, empty tensors,
a few invalid inputs). The same rng state always gives the same cases."""
from __future__ import annotations

import numpy as np

from .._types import BFLOAT16, DATA_TYPES, INTEGER_TYPES, is_bool, is_float

NON_BOOL = tuple(t for t in DATA_TYPES if not is_bool(t))
INVALID_RATE = 0.04


def cycle(k: int, values, pace: int = 1):
    return values[(k // pace) % len(values)]


def latin(k: int, types, values):
    """(type, value) of case k: type k mod len(types), value (type index + block) mod len(values)."""
    block, position = divmod(k, len(types))
    return types[position], values[(position + block) % len(values)]


def values(rng, dtype, shape, *, special: bool = False, extremes: bool = False, pool: int = 0) -> np.ndarray:
    """Tensor of `dtype`: small numbers (halves for floats, exact in every float type), optionally type
    extremes, NaN/-0.0/inf (special), or drawn from `pool` distinct values (to make duplicates)."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape))
    if pool:
        choices = values(rng, dtype, (pool,), special=special, extremes=extremes)
        return choices[rng.integers(0, pool, size)].reshape(shape) if size else np.zeros(shape, dtype)
    if is_bool(dtype):
        return rng.integers(0, 2, size).astype(bool).reshape(shape)
    if dtype in INTEGER_TYPES:
        info = np.iinfo(dtype)
        low = -6 if info.min < 0 else 0
        out = rng.integers(low, 13 if low == 0 else 7, size).astype(dtype)
        if extremes and size:
            edge = np.array([info.min, info.max, info.max - 1, info.min + 1, info.max // 2 + 1], dtype)
            mask = rng.random(size) < 0.5
            out[mask] = edge[rng.integers(0, edge.size, int(mask.sum()))]
        return out.reshape(shape)
    out = rng.integers(-8, 9, size) * 0.5
    if dtype in (np.float32, np.float64) and rng.random() < 0.3:
        out = rng.standard_normal(size) * 4  # values that round differently between types
    if extremes and size:
        big = {np.dtype(np.float16): 6e4, BFLOAT16: 3e38, np.dtype(np.float32): 3e38}.get(dtype, 1e300)
        mask = rng.random(size) < 0.4
        out[mask] = big * rng.choice([-1.0, 1.0], int(mask.sum()))
    if special and size:
        mask = rng.random(size) < 0.3
        out[mask] = rng.choice([np.nan, -0.0, 0.0, np.inf, -np.inf], int(mask.sum()))
    return out.astype(np.float32).astype(dtype).reshape(shape) if dtype == BFLOAT16 else \
        out.astype(dtype).reshape(shape)


def shape(rng, rank: int, high: int = 4, empty: float = 0.06) -> tuple[int, ...]:
    dims = [int(d) for d in rng.integers(1, high + 1, rank)]
    if rank and rng.random() < empty:
        dims[int(rng.integers(0, rank))] = 0
    return tuple(dims)


def ingredients(rng, dtype) -> dict:
    """special (NaN, -0.0, inf) for floats, extremes (type limits) for integers and floats, sometimes."""
    return {"special": is_float(dtype) and rng.random() < 0.35, "extremes": rng.random() < 0.15}


def axis_value(rng, k: int, value: int, rank: int, pace: int) -> np.ndarray:
    """`value` as an axis tensor of a cycled integer type (unsigned: counted from the front), 0-D or [1]."""
    dtype = cycle(k, INTEGER_TYPES, pace)
    array = np.array(value % rank if dtype.kind == "u" else value, dtype)
    return array.reshape(1) if rng.random() < 0.3 else array


def indices(rng, dtype, shape, size: int, negative: bool) -> np.ndarray:
    """Index values in [-size, size-1] (negative) or [0, size-1]."""
    low = -size if negative and dtype.kind == "i" else 0
    if size == 0:
        return np.zeros(shape, dtype)
    return rng.integers(low, size, int(np.prod(shape))).astype(dtype).reshape(shape)


def invalidate(rng, indices: np.ndarray, size: int, allow_negative: bool) -> str | None:
    """Put one out-of-range index in (>= size, or below the lowest valid value); returns a note."""
    if indices.size == 0 or rng.random() >= INVALID_RATE:
        return None
    flat = indices.reshape(-1)
    position = int(rng.integers(0, flat.size))
    below = -size - 1 if allow_negative else -1
    if indices.dtype.kind == "i" and rng.random() < 0.5 and np.iinfo(indices.dtype).min <= below:
        flat[position] = below
        return "invalid"
    if size <= np.iinfo(indices.dtype).max:
        flat[position] = size
        return "invalid"
    return None
