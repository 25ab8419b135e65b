"""Unique-10 -> Unique-11 on a key tensor whose order and equality are the contract's; unique values are
gathered from the data at the first indices (so the first occurrence's value is kept, e.g. -0.0).

Keys (onnxruntime's Unique runs int8, int64, float and double only):
- int8, int64: the data; bool/uint8/int16/uint16/int32/uint32: Cast to int64 (order-preserving);
  uint64: Cast to int64 then BitwiseXor with the sign bit (unsigned order as signed order).
- floats: onnxruntime's Unique is wrong with NaN (it merges or drops values), so NaN must not reach it.
  float16/bfloat16/float32 are widened to float64 (exact) with +inf -> 1e300 (above every float32) and
  NaN -> +inf: NaNs are then equal to each other and sort after every number, -0.0 equals 0.0.
  float64 has no spare value, so each element becomes the pair (IsNaN(x), NaN ? 0 : x), compared
  lexicographically with Unique(axis=0) (about 1.5x slower in onnxruntime).
With axis: the axis is moved first (Transpose) and each slice flattened into one key row. A zero-width key
row would abort onnxruntime (measured), so a zero column is appended when the width may be 0.
i32 outputs: Cast from int64, after a run-time check that the element (slice) count fits int32 (the dialect
fails otherwise).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from custom_ops.element_types import ONNX_TO_NUMPY, is_float, type_name
from custom_ops.config import DOMAIN

from ..registry import LOWERING
from ..rules import Converted, Keep
from ._common import constant_axis, data_type, runtime_check, spec_attributes

NATIVE_KEYS = (np.dtype(np.int8), np.dtype(np.int64))


@LOWERING.register(DOMAIN, "Unique", 10)
def lower_v10(node, ctx):
    attributes = spec_attributes(ctx, node, 10)
    if isinstance(attributes, Keep):
        return attributes
    dtype = data_type(ctx, node, 10)
    if isinstance(dtype, Keep):
        return dtype
    data = node.input[0]
    shape = ctx.info.shape(data)
    axis = None
    if len(node.input) > 1 and node.input[1]:
        if shape is not None and len(shape) == 0:
            return Keep("axis given for a 0-D input: the node always fails")
        axis = constant_axis(ctx, node, 1, None if shape is None else len(shape))
        if isinstance(axis, Keep):
            return axis
        if axis and shape is None:
            return Keep("the rank of data is unknown, so the axis cannot be moved first")
    b = ctx.builder(node)
    outputs = list(node.output) + [""] * (4 - len(node.output))
    floating = is_float(dtype)
    notes = []
    if axis is None:
        flat = b.op("Reshape", [data, b.int64s([-1])], hint="flat")
        if dtype == np.float64:
            key, unique_axis = _nan_safe_pairs(b, flat), {"axis": 0}
        elif floating:
            key, unique_axis = _widened_key(b, flat), {}
        else:
            key, unique_axis = _integer_key(b, flat, dtype), {}
        source, gather_axis = flat, 0
    else:
        rank = len(shape) if shape is not None else None
        moved = data if axis == 0 else b.op("Transpose", [data], hint="axis_first",
                                             perm=[axis] + [i for i in range(rank) if i != axis])
        count = b.dims(data, axis, axis + 1, hint="slices")
        width = _known_width(shape, axis)
        if dtype == np.float64:
            key = _rows(b, _nan_safe_pairs(b, moved), data, axis, count, factor=2)
        elif floating:
            key = _rows(b, _widened_key(b, moved), data, axis, count)
        else:
            key = _rows(b, _integer_key(b, moved, dtype), data, axis, count)
        if width is None or width == 0:
            zeros = b.filled(b.op("Concat", [count, b.int64s([1])], axis=0), 0,
                             ONNX_TO_NUMPY[b.type_of(key)], hint="pad_column")
            key = b.op("Concat", [key, zeros], axis=1, hint="key")
            notes.append("zero column appended (zero-width rows abort onnxruntime)")
        unique_axis = {"axis": 0}
        source, gather_axis = data, axis
    direct = not floating and axis is None and dtype in NATIVE_KEYS
    kinds = (None, "index_element_type", "index_element_type", "count_element_type")
    names = [outputs[0] if direct and outputs[0] else b.fresh("values")]
    names += [outputs[i] if outputs[i] and attributes[kinds[i]] == "i64" else b.fresh(f"unique_{i}")
              for i in (1, 2, 3)]
    b.op("Unique", [key], names, sorted=attributes["sorted"], **unique_axis)
    if not direct and outputs[0]:
        b.op("Gather", [source, names[1]], [outputs[0]], axis=gather_axis, hint="unique_values")
    narrowed = _int32_outputs(b, data, axis, names, outputs, [attributes[kind] if kind else None for kind in kinds])
    what = "Unique-11" + ("" if axis is None else f" over slices along axis {axis}")
    if dtype == np.float64:
        notes.insert(0, "NaN-safe key: (IsNaN, value) pairs")
    elif floating:
        notes.insert(0, "NaN-safe key: float64 with +inf -> 1e300, NaN -> +inf")
    elif dtype not in NATIVE_KEYS:
        notes.insert(0, f"{type_name(dtype)} keyed as int64" + (" with the sign bit flipped"
                                                                 if dtype == np.uint64 else ""))
    action = "decomposed" if floating or dtype == np.uint64 or notes and "zero column" in notes[-1] \
        else "lowered"
    if narrowed:
        notes.append("i32 outputs cast from int64 (size checked)")
    return Converted(b, action, "; ".join([what] + notes))


def _int32_outputs(b, data, axis, names: list, outputs: list, types: list) -> bool:
    """The index and count outputs asked as i32: Unique's int64 ones cast, after a run-time check that the
    counts fit int32 (the dialect fails otherwise; so does the graph). Whether there were any."""
    check = None
    for index in (1, 2, 3):
        if outputs[index] and types[index] == "i32":
            if check is None:
                elements = b.dims_product(data) if axis is None else b.dims(data, axis, axis + 1)
                fits = b.op("LessOrEqual", [elements, b.int64s([2**31 - 1], hint="int32_max")], hint="fits")
                check = runtime_check(b, b.cast(fits, TensorProto.INT64))
            checked = b.op("Add", [names[index], check], hint=f"checked_{index}")
            b.cast(checked, TensorProto.INT32, output=outputs[index])
    return check is not None


def _known_width(shape, axis):
    if shape is None:
        return None
    others = [d for i, d in enumerate(shape) if i != axis]
    if not all(isinstance(d, int) for d in others):
        return None if 0 not in others else 0
    return int(np.prod(others, dtype=np.int64))


def _rows(b, tensor, data, axis, count, factor=1):
    """tensor (slices first) reshaped to [count, width * factor], width = product of the other dims
    (computed, not -1, so that zero-size shapes stay unambiguous)."""
    before = b.dims_product(data, 0, axis, hint="before")
    after = b.dims_product(data, axis + 1, hint="after")
    width = b.op("Mul", [b.op("Mul", [before, after]), b.int64s([factor])], hint="width")
    return b.op("Reshape", [tensor, b.op("Concat", [count, width], axis=0)], allowzero=1, hint="key")


def _integer_key(b, values, dtype):
    if dtype in NATIVE_KEYS:
        return values
    key = b.cast(values, TensorProto.INT64)
    if dtype == np.uint64:
        key = b.op("BitwiseXor", [key, b.const(np.int64(np.iinfo(np.int64).min), hint="sign_bit")],
                   hint="key")
    return key


def _widened_key(b, values):
    """float16/bfloat16/float32 as float64 with +inf -> 1e300 (above every float32) and NaN -> +inf."""
    wide = b.cast(values, TensorProto.DOUBLE)
    capped = b.op("Min", [wide, b.const(np.float64(1e300), hint="above_float32")], hint="capped")
    return b.op("Where", [b.op("IsNaN", [wide]), b.const(np.float64(np.inf), hint="inf"), capped], hint="key")


def _nan_safe_pairs(b, values):
    """float64 as [..., 2] pairs (IsNaN(x), x with NaN -> 0): no float64 value is left above +inf."""
    nan = b.op("IsNaN", [values])
    flag = b.cast(nan, TensorProto.DOUBLE)
    number = b.op("Where", [nan, b.const(np.float64(0), hint="zero"), values], hint="number")
    axes = b.int64s([-1], hint="axes")
    return b.op("Concat", [b.op("Unsqueeze", [flag, axes]), b.op("Unsqueeze", [number, axes])], axis=-1,
                hint="key_pairs")
