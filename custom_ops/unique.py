"""Unique-10 (OpenVINO): unique elements (or slices along `axis`) with first indices, inverse and counts.

-0.0 equals 0.0 and the first occurrence's value is kept; all NaNs are equal and sort last. sorted=1 gives
ascending (lexicographic for slices), sorted=0 the order of first occurrence.
"""
from __future__ import annotations

import numpy as np

from onnx_bridge.errors import OpError

from . import _checks as check
from ._spec import Attribute, OpSpec, Port, register
from ._types import DATA_TYPES, is_float

OP = "Unique"
INDEX_TYPES = ("i64", "i32")
_NUMPY_INDEX = {"i64": np.dtype(np.int64), "i32": np.dtype(np.int32)}


def _sort_keys(values: np.ndarray) -> np.ndarray:
    """Values whose order and equality are the contract's: -0.0 -> 0.0; NaN stays NaN (sorts last)."""
    if is_float(values.dtype):
        keys = values.astype(np.float64 if values.dtype == np.float64 else np.float32)
        return keys + 0.0  # -0.0 + 0.0 == +0.0
    return values


def _equal_neighbours(keys: np.ndarray) -> np.ndarray:
    """keys[i] == keys[i-1] for sorted rows of keys (2-D: n x width), NaN equal to NaN."""
    same = keys[1:] == keys[:-1]
    if keys.dtype.kind == "f":
        same |= np.isnan(keys[1:]) & np.isnan(keys[:-1])
    return same.all(axis=1) if keys.ndim == 2 else same


def unique(data, axis=None, sorted=1, index_element_type="i64", count_element_type="i64"):
    data = check.as_array(OP, "data", data)
    check.data_type(OP, "data", data)
    sorted_ = check.flag(OP, "sorted", sorted)
    index_type = _NUMPY_INDEX[check.choice(OP, "index_element_type", index_element_type, INDEX_TYPES)]
    count_type = _NUMPY_INDEX[check.choice(OP, "count_element_type", count_element_type, INDEX_TYPES)]
    if axis is None:
        slices = data.reshape(-1, 1)
    else:
        if data.ndim == 0:
            raise OpError(OP, "input 'axis'", "given for a 0-D input", value=int(np.asarray(axis)),
                          allowed="no axis")
        axis = check.scalar_axis(OP, axis, data.ndim)
        slices = np.moveaxis(data, axis, 0).reshape(data.shape[axis], data.size // max(data.shape[axis], 1)
                                                        if data.shape[axis] else 0)
    count = slices.shape[0]
    for name, dtype in (("index_element_type", index_type), ("count_element_type", count_type)):
        if count > np.iinfo(dtype).max:
            raise OpError(OP, f"attribute '{name}'", f"{count} elements do not fit", value="i32",
                          allowed="i64")
    first, inverse, counts = _group(slices, sorted_)
    if axis is None:
        values = data.reshape(-1)[first]
    else:
        values = np.take(data, first, axis=axis)
    return (values, first.astype(index_type), inverse.astype(index_type), counts.astype(count_type))


def _group(slices: np.ndarray, sorted_: int):
    """first index, inverse and counts of the unique rows of `slices` (n x width)."""
    count, width = slices.shape
    if count == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    if width == 0:  # slices of size 0 are all equal
        return np.zeros(1, np.int64), np.zeros(count, np.int64), np.array([count], np.int64)
    keys = _sort_keys(slices)
    if width == 1:
        keys = keys[:, 0]
        order = np.argsort(keys, kind="stable")
    else:
        order = np.lexsort(keys.T[::-1])  # stable: first column most significant
    starts = np.ones(count, dtype=bool)
    starts[1:] = ~_equal_neighbours(keys[order])
    group_of_sorted = np.cumsum(starts) - 1
    first = order[starts]  # stable sort: the first element of a group is its first occurrence
    counts = np.diff(np.append(np.flatnonzero(starts), count))
    inverse = np.empty(count, np.int64)
    inverse[order] = group_of_sorted
    if not sorted_:
        by_occurrence = np.argsort(first, kind="stable")
        rank = np.empty_like(by_occurrence)
        rank[by_occurrence] = np.arange(by_occurrence.size)
        first, counts, inverse = first[by_occurrence], counts[by_occurrence], rank[inverse]
    return first.astype(np.int64), inverse, counts


def _kernel_v10(data, axis=None, sorted=1, index_element_type="i64", count_element_type="i64"):
    return unique(data, axis, sorted, index_element_type, count_element_type)


register(OpSpec(OP, 10, (Port("data", "T"), Port("axis", "T_AXIS", optional=True)),
                (Port("unique", "T"), Port("indices", "T_IDX"), Port("reverse_indices", "T_IDX"),
                 Port("counts", "T_CNT")),
                (Attribute("sorted", "int", 1, (0, 1)),
                 Attribute("index_element_type", "string", "i64", INDEX_TYPES),
                 Attribute("count_element_type", "string", "i64", INDEX_TYPES)),
                {"T": DATA_TYPES, "T_AXIS": check.INTEGER_TYPES,
                 "T_IDX": (np.dtype(np.int32), np.dtype(np.int64)),
                 "T_CNT": (np.dtype(np.int32), np.dtype(np.int64))},
                _kernel_v10, doc="Unique elements or slices with first indices, inverse and counts."))
