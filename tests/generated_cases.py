"""Seeded grids of valid cases: every op x attribute x data type x index/axis type, with duplicates,
negative indices (never below -d), special values (NaN, +-inf, -0.0, type limits) and empty dimensions.

`groups(op)` yields (label, cases); the cases of one group share op, attributes, element types, ranks and
the axis/axes value, so OpenVINO compiles one model per group. Index and axis types rotate through the
grid so that each pairs with every data type and every attribute value. Fully deterministic.
"""
from __future__ import annotations

import zlib

import numpy as np

from custom_ops._types import DATA_TYPES, INTEGER_TYPES, highest, is_bool, is_float, lowest, type_name
from onnx_bridge.divergences import Case

SEU, SU, L2, UNIQUE = "ScatterElementsUpdate", "ScatterUpdate", "ReduceL2", "Unique"
REDUCTIONS = ("none", "sum", "prod", "min", "max", "mean")
CASES_PER_GROUP = 8


def _rng(label: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(label.encode()))


def values(rng, dtype, shape, special=0.1, huge=True) -> np.ndarray:
    """Small numbers (whole or halves) with a share of special values; `huge` allows type limits."""
    dtype = np.dtype(dtype)
    if is_bool(dtype):
        return rng.random(shape) < 0.5
    if is_float(dtype):
        out = rng.integers(-12, 13, size=shape) / 2.0
        pool = [np.nan, np.inf, -np.inf, -0.0, 0.0, 0.1, 1 / 3] + ([highest(dtype), lowest(dtype)] if huge else [])
    else:
        low = max(-6, lowest(dtype))
        out = rng.integers(low, 7, size=shape)
        pool = [lowest(dtype), highest(dtype), lowest(dtype) + 1, highest(dtype) - 1] if huge else [0]
    out = np.asarray(out).astype(object)
    mask = np.asarray(rng.random(shape) < special)
    out[mask] = rng.choice(np.array(pool, dtype=object), size=int(mask.sum()))
    flat = np.array(out.reshape(-1).tolist(), dtype=np.float64 if is_float(dtype) else object)
    return flat.astype(dtype).reshape(np.shape(out))


def _axis_array(rng, value: int, rank: int, dtype) -> np.ndarray:
    """The axis as a 0-D or 1-element tensor, negative (counted from the end) when the type allows."""
    if np.dtype(dtype).kind == "i" and rng.random() < 0.5:
        value -= rank
    return np.array(value if rng.random() < 0.5 else [value], dtype=dtype)


def _shape(rng, rank: int, empty: float = 0.05) -> tuple:
    return tuple(0 if rng.random() < empty else int(rng.integers(1, 5)) for _ in range(rank))


def _rotate(seq, *keys):
    return seq[sum(keys) % len(seq)]


# ------------------------------------------------------------------------------------------------------


def seu_groups():
    for i, dtype in enumerate(DATA_TYPES):
        for j, reduction in enumerate(REDUCTIONS):
            for init in (1, 0):
                if reduction == "mean" and is_bool(dtype):
                    continue  # an error of the contract (test_kernel_errors.py)
                index_type = _rotate(INTEGER_TYPES, i, 2 * j, init)
                axis_type = _rotate(INTEGER_TYPES, 3 * i, j)
                rank = 1 + (i + j) % 3
                axis = (i + j + init) % rank
                label = f"{type_name(dtype)}-{reduction}-init{init}-idx_{type_name(index_type)}-axis{axis}of{rank}"
                rng = _rng(label)
                axis_array = _axis_array(rng, axis, rank, axis_type)
                yield label, [_seu_case(rng, dtype, reduction, init, index_type, axis_array, rank, axis)
                              for _ in range(CASES_PER_GROUP)]


def _seu_case(rng, dtype, reduction, init, index_type, axis_array, rank, axis):
    shape = _shape(rng, rank)
    size = shape[axis]
    index_shape = [int(rng.integers(0 if n == 0 else 1, n + 1)) for n in shape]
    index_shape[axis] = int(rng.integers(1, 7)) if size else 0  # longer than data's: duplicates
    low = -size if np.dtype(index_type).kind == "i" else 0
    indices = np.asarray(rng.integers(low, max(size, 1), size=index_shape)).astype(index_type)
    return Case.of(SEU, data=values(rng, dtype, shape), indices=indices,
                   updates=values(rng, dtype, index_shape), axis=axis_array, reduction=reduction,
                   use_init_val=init)


def seu_bulk_cases():
    """Hundreds of updates onto three positions: long duplicate chains for every reduction."""
    for dtype in (np.float32, np.int32, np.int8, np.float16):
        for reduction in REDUCTIONS:
            for init in (1, 0):
                rng = _rng(f"bulk-{np.dtype(dtype).name}-{reduction}-{init}")
                yield Case.of(SEU, data=values(rng, dtype, 3, special=0.0),
                              indices=rng.integers(-3, 3, size=300),
                              updates=values(rng, dtype, 300, special=0.0), axis=np.array(0),
                              reduction=reduction, use_init_val=init)


def scatter_update_groups():
    for i, dtype in enumerate(DATA_TYPES):
        for j, index_type in enumerate(INTEGER_TYPES):
            rank = 1 + (i + j) % 3
            axis = (i + 2 * j) % rank
            index_rank = 0 if (i + j) % 13 == 0 else 1 + (i + j) % 2
            axis_type = _rotate(INTEGER_TYPES, i, 3 * j)
            label = f"{type_name(dtype)}-idx_{type_name(index_type)}{index_rank}d-axis{axis}of{rank}"
            rng = _rng(label)
            axis_array = _axis_array(rng, axis, rank, axis_type)
            cases = []
            for _ in range(CASES_PER_GROUP if index_rank else 2):
                shape = list(_shape(rng, rank))
                shape[axis] = max(shape[axis], 1)  # the empty cases are empty indices or other dims
                shape = tuple(shape)
                index_shape = tuple(int(rng.integers(0, 4)) for _ in range(index_rank))
                indices = np.asarray(rng.integers(0, shape[axis], size=index_shape)).astype(index_type)
                updates = values(rng, dtype, shape[:axis] + index_shape + shape[axis + 1:])
                cases.append(Case.of(SU, data=values(rng, dtype, shape), indices=indices, updates=updates,
                                     axis=axis_array))
            yield label, cases


AXES_PATTERNS = ("empty", "one", "two", "all")


def reduce_l2_groups():
    for i, dtype in enumerate(t for t in DATA_TYPES if not is_bool(t)):
        for j, pattern in enumerate(AXES_PATTERNS):
            for keep in (0, 1):
                rank = (i + j + keep) % 4 if pattern == "empty" else 1 + (i + j + keep) % 3
                if pattern == "two":
                    rank = max(rank, 2)
                axes_type = _rotate(INTEGER_TYPES, i, 3 * j, keep)
                signed = np.dtype(axes_type).kind == "i"
                axes = {"empty": [], "one": [(i + j) % max(rank, 1)], "two": [0, rank - 1],
                        "all": list(range(rank))}[pattern]
                if signed and axes:
                    axes[-1] -= rank  # negative axes count from the end
                axes_array = np.array(axes, dtype=axes_type)
                if pattern == "one" and (i + keep) % 2:
                    axes_array = axes_array.reshape(())  # a 0-D axes scalar
                label = f"{type_name(dtype)}-axes_{pattern}_{type_name(axes_type)}-rank{rank}-keep{keep}"
                rng = _rng(label)
                cases = [Case.of(L2, data=values(rng, dtype, _shape(rng, rank), special=0.08, huge=False),
                                 axes=axes_array, keep_dims=keep)
                         for _ in range(CASES_PER_GROUP)]
                yield label, cases


def reduce_l2_integer_extremes():
    """Integer ReduceL2 near the type limits: wrap-around of the rounded root, no overflow of the sum."""
    for dtype in INTEGER_TYPES:
        rng = _rng(f"l2-extremes-{type_name(dtype)}")
        for _ in range(4):
            yield Case.of(L2, data=values(rng, dtype, (3, 4), special=0.5), axes=np.array([1]), keep_dims=0)


UNIQUE_AXES = (None, 0, -1)
OUTPUT_TYPES = (("i64", "i64"), ("i32", "i64"), ("i64", "i32"), ("i32", "i32"))


def unique_groups():
    for i, dtype in enumerate(DATA_TYPES):
        for j, axis in enumerate(UNIQUE_AXES):
            for sorted_ in (1, 0):
                index_type, count_type = _rotate(OUTPUT_TYPES, i, j, sorted_)
                rank = 1 + (i + j + sorted_) % 3
                axis_type = _rotate((np.int64, np.int32), i, j)
                label = f"{type_name(dtype)}-axis{axis}-sorted{sorted_}-{index_type}-{count_type}-rank{rank}"
                rng = _rng(label)
                axis_array = None if axis is None else np.array(axis if rng.random() < 0.5 else [axis], axis_type)
                cases = []
                for _ in range(CASES_PER_GROUP):
                    shape = _shape(rng, rank, empty=0.08)
                    pool = values(rng, dtype, 4, special=0.25)  # few distinct values: many duplicates
                    data = pool[rng.integers(0, pool.size, size=shape)]
                    cases.append(Case.of(UNIQUE, data=data, axis=axis_array, sorted=sorted_,
                                         index_element_type=index_type, count_element_type=count_type))
                yield label, cases


GROUPS = {SEU: seu_groups, SU: scatter_update_groups, L2: reduce_l2_groups, UNIQUE: unique_groups}
EXTRA = {SEU: seu_bulk_cases, L2: reduce_l2_integer_extremes}


def all_groups(op: str):
    """(label, cases) of the grid for `op`, then one group of extra cases (several compiled models)."""
    yield from GROUPS[op]()
    if op in EXTRA:
        yield f"{op}-extra", list(EXTRA[op]())
