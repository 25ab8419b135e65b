"""Generated cases: ops x attributes x element types x shapes, from one seed.

Every element type of the contract, every integer type for indices/axes, every attribute value is cycled
through deterministically: case k = 14 b + d takes element type d and attribute value (d + b) mod n (a Latin
square), so the first 14 cases of an op already hold every type and every attribute value, and 84 hold every
type x reduction pair; shapes, values and the special ingredients (duplicates,
negative indices down to -d, NaN, -0.0, infinities, type extremes, empty tensors, a few invalid inputs)
are drawn from a seeded generator. The same seed and size always give the same corpus.
"""
from __future__ import annotations

import warnings

import numpy as np

from custom_ops._types import BFLOAT16, DATA_TYPES, INTEGER_TYPES, is_bool, is_float, type_name
from custom_ops.ops.scatter.scatter_elements_update import REDUCTIONS

from onnx_bridge.errors import OpError

from .cases import SHORT, Case, full_attributes, spec_of
from .tags import auto_tags

#: Cases per op for each --size, and the share of each op in a --cases N corpus.
SIZES = {"small": 40, "medium": 300, "large": 1200}
SHARES = {"ScatterElementsUpdate": 0.4, "ScatterUpdate": 0.15, "ReduceL2": 0.2, "Unique": 0.25}
NON_BOOL = tuple(t for t in DATA_TYPES if not is_bool(t))
INVALID_RATE = 0.04


def generated_cases(per_op: int | None = None, total: int | None = None, seed: int = 0) -> list[Case]:
    """`per_op` cases of each op, or `total` cases split by SHARES."""
    counts = {op: per_op for op in SHARES} if total is None else _split(total)
    cases = []
    for op_index, (op, count) in enumerate(counts.items()):
        rng = np.random.default_rng([seed, op_index])
        make = _GENERATORS[op]
        for k in range(count):
            inputs, attributes, notes = make(rng, k)
            case = Case(f"gen/{SHORT[op]}/{k:04d}", op, inputs, full_attributes(op, attributes), "generated")
            case.tags = auto_tags(case) | frozenset(notes) | _validity(case)
            case.description = _describe(case)
            cases.append(case)
    return cases


def _validity(case: Case) -> frozenset:
    """{"invalid"} when the contract rejects the case (bool mean, an out-of-range index, ...)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            spec_of(case.op).run(case.input_list(), case.attributes)
    except OpError:
        return frozenset({"invalid"})
    return frozenset()


def _split(total: int) -> dict[str, int]:
    counts = {op: int(total * share) for op, share in SHARES.items()}
    for op in list(SHARES)[: total - sum(counts.values())]:
        counts[op] += 1
    return counts


def _cycle(k: int, values, pace: int = 1):
    return values[(k // pace) % len(values)]


def _latin(k: int, types, values):
    """(type, value) of case k: type k mod len(types), value (type index + block) mod len(values)."""
    block, position = divmod(k, len(types))
    return types[position], values[(position + block) % len(values)]


# ------------------------------------------------------------------------------------------------------
# Values


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


def _shape(rng, rank: int, high: int = 4, empty: float = 0.06) -> tuple[int, ...]:
    dims = [int(d) for d in rng.integers(1, high + 1, rank)]
    if rank and rng.random() < empty:
        dims[int(rng.integers(0, rank))] = 0
    return tuple(dims)


def _ingredients(rng, dtype) -> dict:
    """special (NaN, -0.0, inf) for floats, extremes (type limits) for integers and floats, sometimes."""
    return {"special": is_float(dtype) and rng.random() < 0.35, "extremes": rng.random() < 0.15}


def _axis_value(rng, k: int, value: int, rank: int, pace: int) -> np.ndarray:
    """`value` as an axis tensor of a cycled integer type (unsigned: counted from the front), 0-D or [1]."""
    dtype = _cycle(k, INTEGER_TYPES, pace)
    array = np.array(value % rank if dtype.kind == "u" else value, dtype)
    return array.reshape(1) if rng.random() < 0.3 else array


def _indices(rng, dtype, shape, size: int, negative: bool) -> np.ndarray:
    """Index values in [-size, size-1] (negative) or [0, size-1]."""
    low = -size if negative and dtype.kind == "i" else 0
    if size == 0:
        return np.zeros(shape, dtype)
    return rng.integers(low, size, int(np.prod(shape))).astype(dtype).reshape(shape)


def _invalidate(rng, indices: np.ndarray, size: int, allow_negative: bool) -> str | None:
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


# ------------------------------------------------------------------------------------------------------
# Ops


def _scatter_elements_update(rng, k):
    dtype, reduction = _latin(k, DATA_TYPES, REDUCTIONS)
    block, position = divmod(k, len(DATA_TYPES))
    use_init_val = 1 - (position // 7 + block // len(REDUCTIONS)) % 2
    index_type = _cycle(k, INTEGER_TYPES, 3)
    rank = int(rng.choice([1, 2, 2, 3, 3, 4]))
    data_shape = _shape(rng, rank)
    axis = int(rng.integers(-rank, rank))
    a = axis % rank
    d = data_shape[a]
    shape = [int(rng.integers(1, n + 1)) if n else 0 for n in data_shape]
    shape[a] = int(rng.integers(1, 2 * d + 2)) if d else 0  # longer than d: duplicates
    if rng.random() < 0.05:
        shape[int(rng.integers(0, rank))] = 0
    negative = rng.random() < 0.5
    indices = _indices(rng, index_type, shape, d, negative)
    notes = [_invalidate(rng, indices, d, allow_negative=True)]
    ingredients = _ingredients(rng, dtype)
    data = values(rng, dtype, data_shape, **ingredients)
    updates = values(rng, dtype, tuple(shape), **ingredients)
    inputs = {"data": data, "indices": indices, "updates": updates, "axis": _axis_value(rng, k, axis, rank, 5)}
    return inputs, {"reduction": reduction, "use_init_val": use_init_val}, [n for n in notes if n]


def _scatter_update(rng, k):
    dtype = _cycle(k, DATA_TYPES)
    index_type = _cycle(k, INTEGER_TYPES, 2)
    rank = int(rng.choice([1, 2, 2, 3]))
    data_shape = _shape(rng, rank)
    axis = int(rng.integers(-rank, rank))
    a = axis % rank
    d = data_shape[a]
    index_rank = int(rng.choice([0, 1, 1, 1, 2]))
    index_shape = tuple(int(n) for n in rng.integers(1, 4, index_rank)) if d else (0,)
    indices = _indices(rng, index_type, index_shape, d, negative=False)
    notes = [_invalidate(rng, indices, d, allow_negative=False)]
    ingredients = _ingredients(rng, dtype)
    updates_shape = data_shape[:a] + index_shape + data_shape[a + 1:]
    inputs = {"data": values(rng, dtype, data_shape, **ingredients), "indices": indices,
              "updates": values(rng, dtype, updates_shape, **ingredients),
              "axis": _axis_value(rng, k, axis, rank, 3)}
    return inputs, {}, [n for n in notes if n]


def _reduce_l2(rng, k):
    dtype, keep_dims = _latin(k, NON_BOOL, (0, 1))
    axes_type = _cycle(k, INTEGER_TYPES, 2)
    notes = []
    if rng.random() < 0.02:
        dtype, notes = np.dtype(np.bool_), ["invalid"]
    rank = int(rng.choice([0, 1, 2, 2, 3, 3, 4]))
    shape = _shape(rng, rank, high=5)
    count = int(rng.integers(0, rank + 1)) if rng.random() < 0.15 or rank == 0 else int(rng.integers(1, rank + 1))
    axes = [int(a) for a in rng.permutation(rank)[:count]]
    signed = axes_type.kind == "i"
    axes = [a - rank if signed and rng.random() < 0.4 else a for a in axes]
    if rank and rng.random() < INVALID_RATE:
        axes.append(axes[0] if axes else rank)  # a duplicate, or out of range
        notes.append("invalid")
    axes_array = np.array(axes, axes_type)
    if len(axes) == 1 and rng.random() < 0.3:
        axes_array = axes_array.reshape(())
    data = values(rng, dtype, shape, **_ingredients(rng, dtype))
    return {"data": data, "axes": axes_array}, {"keep_dims": keep_dims}, notes


def _unique(rng, k):
    dtype, sorted_ = _latin(k, DATA_TYPES, (1, 0))
    index_type = _cycle(k, ("i64", "i32"), 3)
    count_type = _cycle(k, ("i64", "i32"), 5)
    rank = int(rng.choice([0, 1, 1, 2, 2, 3]))
    shape = _shape(rng, rank, high=5, empty=0.08)
    special = is_float(dtype) and rng.random() < 0.4
    pool = int(rng.integers(1, 5))
    data = values(rng, dtype, shape, special=special, extremes=rng.random() < 0.1, pool=pool)
    if special and data.size and rng.random() < 0.5:  # a -0.0 / 0.0 pair, in either order
        flat = data.reshape(-1)
        flat[: min(2, flat.size)] = np.array([-0.0, 0.0] if rng.random() < 0.5 else [0.0, -0.0],
                                             np.float32)[: min(2, flat.size)].astype(dtype)
    inputs = {"data": data, "axis": None}
    if rank and rng.random() < 0.6:
        inputs["axis"] = _axis_value(rng, k, int(rng.integers(-rank, rank)), rank, 2)
    attributes = {"sorted": sorted_, "index_element_type": index_type, "count_element_type": count_type}
    return inputs, attributes, []


_GENERATORS = {"ScatterElementsUpdate": _scatter_elements_update, "ScatterUpdate": _scatter_update,
               "ReduceL2": _reduce_l2, "Unique": _unique}


# ------------------------------------------------------------------------------------------------------
# Descriptions


def _array(name: str, array: np.ndarray) -> str:
    return f"{name} {type_name(array.dtype)}{list(array.shape)}"


def _scalar(array: np.ndarray) -> str:
    return f"{array.reshape(-1).tolist()}" if array.ndim else f"{array.item()}"


def _describe(case: Case) -> str:
    i, a = case.inputs, case.attributes
    if case.op == "ScatterElementsUpdate":
        head = f"{a['reduction']}, use_init_val={a['use_init_val']}"
        parts = [head, _array("data", i["data"]), _array("indices", i["indices"]),
                 f"axis {_scalar(i['axis'])} ({type_name(i['axis'].dtype)})"]
    elif case.op == "ScatterUpdate":
        parts = [_array("data", i["data"]), _array("indices", i["indices"]),
                 f"axis {_scalar(i['axis'])} ({type_name(i['axis'].dtype)})"]
    elif case.op == "ReduceL2":
        parts = [f"keep_dims={a['keep_dims']}", _array("data", i["data"]),
                 f"axes {_scalar(i['axes'])} ({type_name(i['axes'].dtype)})"]
    else:
        axis = "no axis" if i.get("axis") is None else f"axis {_scalar(i['axis'])} ({type_name(i['axis'].dtype)})"
        parts = [f"sorted={a['sorted']}, {a['index_element_type']}/{a['count_element_type']}",
                 _array("data", i["data"]), axis]
    tags = sorted(case.tags)
    return " · ".join(parts) + (f" · {', '.join(tags)}" if tags else "")
