"""Input and attribute checks shared by the kernels. Each failure raises OpError naming what is wrong."""
from __future__ import annotations

import numpy as np

from .errors import OpError

from ._types import DATA_TYPES, INTEGER_TYPES, type_name

INTEGER_NAMES = "int8, uint8, int16, uint16, int32, uint32, int64, uint64"


def as_array(op: str, name: str, value) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(value)
    except Exception as exc:  # e.g. ragged lists
        raise OpError(op, f"input '{name}'", f"is not a tensor ({exc})") from None


def data_type(op: str, name: str, array: np.ndarray, allowed=DATA_TYPES) -> None:
    if array.dtype not in allowed:
        raise OpError(op, f"input '{name}'", "unsupported element type", value=type_name(array.dtype),
                      allowed=", ".join(type_name(t) for t in allowed))


def integer_type(op: str, name: str, array: np.ndarray) -> None:
    if array.dtype not in INTEGER_TYPES:
        raise OpError(op, f"input '{name}'", "must have an integer element type",
                      value=type_name(array.dtype), allowed=INTEGER_NAMES)


def flag(op: str, name: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
        return int(value)
    raise OpError(op, f"attribute '{name}'", "must be 0 or 1", value=value, allowed="0, 1")


def choice(op: str, name: str, value, allowed: tuple[str, ...]) -> str:
    if isinstance(value, bytes):
        value = value.decode()
    if value not in allowed:
        raise OpError(op, f"attribute '{name}'", "unknown value", value=value, allowed=", ".join(allowed))
    return value


def scalar_axis(op: str, axis, rank: int, name: str = "axis") -> int:
    """A scalar or one-element integer axis, normalised into [0, rank)."""
    axis = as_array(op, name, axis)
    integer_type(op, name, axis)
    if axis.ndim > 1 or axis.size != 1:
        raise OpError(op, f"input '{name}'", "must be a scalar or a one-element 1-D tensor",
                      value=axis.tolist(), allowed="shape [] or [1]")
    value = int(axis.reshape(()))
    if not -rank <= value < rank:
        raise OpError(op, f"input '{name}'", f"out of range for rank {rank}", value=value,
                      allowed=f"[{-rank}, {rank - 1}]")
    return value % rank


def index_range(op: str, name: str, indices: np.ndarray, size: int, allow_negative: bool,
                axis: int) -> None:
    """Every index in [-size, size-1] (or [0, size-1]); checked in the original dtype."""
    if indices.size == 0:
        return
    low, high = int(indices.min()), int(indices.max())
    first = -size if allow_negative else 0
    if low < first or high > size - 1:
        bad = low if low < first else high
        raise OpError(op, f"input '{name}'", f"index out of range for axis {axis} of size {size}",
                      value=bad, allowed=f"[{first}, {size - 1}]")


def normalized_indices(indices: np.ndarray, size: int) -> np.ndarray:
    """Indices as intp with negative values counted from the end (range already checked)."""
    out = indices.astype(np.intp, copy=True)
    if indices.dtype.kind == "i":
        out[out < 0] += size
    return out
