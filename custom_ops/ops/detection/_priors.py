"""What PriorBox and PriorBoxClustered share: the two shape inputs, the step/offset and variance attributes,
the [2, 4 * H * W * P] output of boxes and variances, and the frame of their refused cases."""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops._types import INTEGER_TYPES
from custom_ops.errors import OpError
from custom_ops.unit import Case

F32 = np.float32


def sizes(op: str, output_size, image_size) -> tuple[int, int, int, int]:
    """(H, W, IH, IW) from the two shape inputs, validated."""
    values = []
    for name, value in (("output_size", output_size), ("image_size", image_size)):
        array = check.as_array(op, name, value)
        check.data_type(op, name, array, INTEGER_TYPES)
        if array.shape != (2,):
            raise OpError(op, f"input '{name}'", "must be 1-D with 2 elements [height, width]",
                          value=array.shape, allowed="shape [2]")
        values.append(array.astype(np.int64) if array.dtype != np.uint64 else array)
    (h, w), (ih, iw) = (tuple(int(v) for v in a) for a in values)
    if h < 0 or w < 0:
        raise OpError(op, "input 'output_size'", "must not be negative", value=[h, w], allowed=">= 0")
    if ih <= 0 or iw <= 0:
        raise OpError(op, "input 'image_size'", "must be positive", value=[ih, iw], allowed="> 0")
    return h, w, ih, iw


def non_negative(op: str, name: str, value) -> np.float32:
    """A step or offset attribute as float32, refused unless finite and >= 0."""
    value = F32(value)
    if not (np.isfinite(value) and value >= 0):
        raise OpError(op, f"attribute '{name}'", "must be finite and not negative", value=float(value),
                      allowed=">= 0")
    return value


def variance(op: str, values) -> list:
    """The variance attribute as float32 values: none (0.1 for every coordinate), one for all or one per
    coordinate."""
    values = [F32(v) for v in values]
    if len(values) not in (0, 1, 4):
        raise OpError(op, "attribute 'variance'", "must have 0, 1 or 4 values", value=[float(v) for v in values],
                      allowed="0, 1 or 4 values")
    return values


def with_variances(boxes: np.ndarray, values: list) -> np.ndarray:
    """The op's output: row 0 the boxes [..., 4] flattened, row 1 each coordinate's variance."""
    values = np.asarray(values or [0.1], F32)
    variances = np.broadcast_to(values if values.size == 4 else values[0], boxes.shape)
    return np.stack([boxes.reshape(-1), variances.reshape(-1)]).astype(F32)


def bad_case(name: str, inputs: tuple, attributes: dict) -> Case:
    """A refused case: the shape inputs and attributes (offset 0.5 unless given)."""
    return Case(name, inputs, {"offset": 0.5, **attributes})


def i64(values) -> np.ndarray:
    return np.array(values, np.int64)
