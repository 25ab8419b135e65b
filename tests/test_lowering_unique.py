"""Lowering Unique: custom op vs lowered graph on onnxruntime, bit-exact (values are gathered from the input,
indices/inverse/counts are integers), NaN and -0.0 included."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from test_lowering_harness import dialect_node, lower, lower_and_compare, model_of

from custom_ops._types import BFLOAT16, DATA_TYPES, type_name

OUTPUTS = ["unique", "indices", "inverse", "counts"]


def unique_model(data, axis=None, symbolic=False, **attributes):
    values = {"data": data}
    inputs = ["data"]
    if axis is not None:
        values["axis"] = np.asarray(axis, np.int64)
        inputs.append("axis")
    node = dialect_node("Unique", inputs, OUTPUTS, **attributes)
    index = np.int32 if attributes.get("index_element_type") == "i32" else np.int64
    count = np.int32 if attributes.get("count_element_type") == "i32" else np.int64
    outputs = {"unique": (data.dtype, None), "indices": (index, None), "inverse": (index, None),
               "counts": (count, None)}
    return model_of([node], values, constants=("axis",), outputs=outputs, symbolic=symbolic)


def few_values(dtype, shape, key):
    """Values with many repeats: drawn from 5 distinct ones (extremes of integer types included)."""
    rng = np.random.default_rng(zlib.crc32(repr(key).encode()))
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        pool = np.array([False, True])
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        pool = np.array([info.min, info.max, 0, 1, info.max - 1], dtype)
    else:
        pool = np.array([-2.5, 0.0, 1.0, 3.0, -7.0], np.float32).astype(dtype)
    return pool[rng.integers(0, len(pool), shape)]


CASES = [(t, s, a) for t in DATA_TYPES for s in (1, 0) for a in (None, 0, 1)]


@pytest.mark.parametrize("dtype,sorted_,axis", CASES,
                         ids=[f"{type_name(t)}-sorted{s}-axis{a}" for t, s, a in CASES])
def test_unique(dtype, sorted_, axis):
    data = few_values(dtype, (6, 2), ("unique", type_name(dtype), sorted_, axis))
    model, feeds = unique_model(data, axis, sorted=sorted_)
    report, _ = lower_and_compare(model, feeds)
    assert report.nodes[0].action in ("lowered", "decomposed") and report.nodes[0].caveat is None


@pytest.mark.parametrize("dtype", [np.float16, BFLOAT16, np.float32, np.float64], ids=type_name)
@pytest.mark.parametrize("sorted_", [1, 0])
def test_nan_and_signed_zero(dtype, sorted_):
    """All NaNs are one value sorted last; -0.0 == 0.0 and the first occurrence is kept (onnxruntime's own
    Unique merges or drops values next to NaN)."""
    nan = np.nan
    data = np.array([1, nan, 2, -0.0, nan, 1, 0.0, 3, -nan, -0.0, np.inf, -np.inf], dtype)
    model, feeds = unique_model(data, sorted=sorted_)
    lower_and_compare(model, feeds, expect_actions=["decomposed"])
    rows = np.array([[nan, 1], [nan, 1], [0, 1], [-0.0, 1], [1, nan]], dtype)
    model, feeds = unique_model(rows, 0, sorted=sorted_)
    lower_and_compare(model, feeds, expect_actions=["decomposed"])


@pytest.mark.parametrize("shape,axis", [((0,), None), ((), None), ((0, 3), 0), ((0, 3), 1), ((3, 0), 0),
                                        ((2, 0, 3), 0), ((2, 0, 3), 1), ((4, 1), -1)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_empty_and_degenerate_shapes(shape, axis, dtype):
    """(3, 0) along axis 0 are 3 empty slices, all equal: onnxruntime's Unique aborts the process on such
    rows, the lowering pads them with a zero column."""
    data = few_values(dtype, shape, ("empty", shape, axis))
    model, feeds = unique_model(data, axis)
    lower_and_compare(model, feeds)


def test_three_dimensional_axis_and_i32_outputs():
    data = few_values(np.int16, (2, 5, 3), "3d")
    data[:, 3] = data[:, 1]
    model, feeds = unique_model(data, -2, sorted=0, index_element_type="i32", count_element_type="i32")
    report, _ = lower_and_compare(model, feeds)
    assert report.nodes[0].caveat is None and "size checked" in report.nodes[0].reason
    _, strict = lower(model, strict=True)
    assert strict.nodes[0].action == "lowered"


def test_symbolic_shapes_pad_the_key():
    data = few_values(np.float64, (4, 3), "symbolic")
    model, feeds = unique_model(data, 1, symbolic=True)
    report, _ = lower_and_compare(model, feeds)
    assert "zero column" in report.nodes[0].reason


def test_only_some_outputs_used():
    data = few_values(np.uint8, (9,), "some")
    node = dialect_node("Unique", ["data"], ["unused_values", "unused_indices", "inverse", "unused_counts"],
                        sorted=0)
    model, feeds = model_of([node], {"data": data}, outputs={"inverse": (np.int64, None)})
    lower_and_compare(model, feeds, expect_actions=["lowered"])


def test_non_constant_axis_is_kept():
    data = few_values(np.float32, (3, 2), "runtime")
    node = dialect_node("Unique", ["data", "axis"], OUTPUTS)
    model, _ = model_of([node], {"data": data, "axis": np.int64(0)},
                        outputs={name: (np.float32 if name == "unique" else np.int64, None) for name in OUTPUTS})
    _, report = lower(model)
    assert report.nodes[0].action == "kept" and "not a constant" in report.nodes[0].reason
