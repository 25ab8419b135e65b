"""onnx_bridge.comparison, the one output comparer: integers exact, NaN == NaN positionally, tolerances by
dtype from one table, metrics, order-insensitive items, and the wrappers conformance and tests use."""
from __future__ import annotations

import numpy as np
import pytest

from custom_ops._types import BFLOAT16
from onnx_bridge.comparison import (EXACT, TOLERANCES, Tolerance, assert_same, compare_arrays, measure,
                                    tolerance_of)

A = np.array


def test_integers_and_bools_are_exact_whatever_the_tolerance():
    loose = Tolerance(rtol=0.5, atol=10)
    assert not measure(A([100, 200], np.int64), A([100, 201], np.int64), tolerance=loose).agree
    assert not measure(A([True, False]), A([True, True]), tolerance=loose).agree
    metrics = measure(A([1, 2, 3], np.int32), A([1, 5, 3], np.int32))
    assert (metrics.status, metrics.count, metrics.first, metrics.max_abs, metrics.tolerance) == \
        ("values", 1, (1,), 3.0, "exact")


def test_nan_equals_nan_at_the_same_position_only():
    nan = np.nan
    assert measure(A([1, nan, 3], np.float32), A([1, nan, 3], np.float32)).agree
    moved = measure(A([1, nan, 3], np.float32), A([nan, 1, 3], np.float32))
    assert moved.status == "values" and moved.count == 2 and moved.note == "NaN where the other has a number"
    assert compare_arrays(A([nan], np.float64), A([nan], np.float64), "o") is None


def test_default_tolerance_by_dtype_from_the_table():
    for dtype, tolerance in TOLERANCES.items():
        want = A([1.0, 2.0], np.float32).astype(dtype)
        inside = (want.astype(np.float64) * (1 + tolerance.rtol / 2)).astype(dtype)
        outside = (want.astype(np.float64) + 4 * (tolerance.atol + tolerance.rtol * 2)).astype(dtype)
        assert measure(want, inside).agree, dtype
        assert not measure(want, outside).agree, dtype
    assert TOLERANCES[np.dtype(np.float32)].rtol == 1e-4  # the zoo's tolerance


def test_signed_zero_counts_only_when_asked():
    assert measure(A([0.0], np.float32), A([-0.0], np.float32), tolerance=EXACT).agree
    difference = compare_arrays(A([0.0], np.float32), A([-0.0], np.float32), "o")  # conformance: it counts
    assert difference.note == "differs only in the sign of zero"
    assert compare_arrays(A([0.0], np.float32), A([-0.0], np.float32), "o", scale=64) is None


def test_ulps_and_scale_allowances():
    one = np.float32(1)
    next_up = np.nextafter(one, np.float32(2))
    assert compare_arrays(A([one]), A([next_up]), "o") is not None
    assert compare_arrays(A([one]), A([next_up]), "o", ulps=1) is None
    big = A([1000.0, 0.0], np.float32)
    near = A([1000.0, 0.00001], np.float32)  # 1e-5 <= 64·ε·1000
    assert compare_arrays(big, near, "o", scale=64) is None and compare_arrays(big, near, "o") is not None


def test_metrics_max_abs_rel_l2_and_fraction_beyond():
    want = A([1.0, 2.0, 3.0, 4.0], np.float32)
    got = A([1.0, 2.5, 3.0, 4.0], np.float32)
    metrics = measure(want, got, "y")
    assert metrics.max_abs == pytest.approx(0.5)
    assert metrics.rel_l2 == pytest.approx(0.5 / np.sqrt(30))
    assert (metrics.count, metrics.total, metrics.beyond, metrics.first) == (1, 4, 0.25, (1,))
    assert "got 2.5, expected 2.0" in metrics.summary()
    data = metrics.to_json()
    assert data["agree"] is False and data["first"] == [1] and data["status"] == "values"


def test_shape_and_dtype_mismatch():
    assert measure(A([1, 2], np.float32), A([1, 2, 3], np.float32)).status == "shape"
    assert measure(A([1, 2], np.float32), A([1, 2], np.float64)).status == "dtype"


def test_order_insensitive_rows_and_axis():
    boxes = A([[0, 0, 1, 1, 0.9], [2, 2, 3, 3, 0.9], [1, 1, 2, 2, 0.5]], np.float32)
    swapped = boxes[[1, 0, 2]]
    assert not measure(boxes, swapped).agree
    assert measure(boxes, swapped, unordered="rows").agree
    assert not measure(boxes, swapped[:, ::-1].copy(), unordered="rows").agree  # rows stay rows
    indices = A([[1, 2, 3], [0, 4, 5]], np.int64)
    assert measure(indices, indices[:, ::-1].copy(), unordered=1).agree
    assert not measure(indices, indices[::-1].copy(), unordered=1).agree
    assert measure(boxes.astype(BFLOAT16), swapped.astype(BFLOAT16), unordered="rows").agree


def test_assert_same_names_the_output_and_keeps_numpy_style_tolerances():
    assert_same([A([1.0, 2.0], np.float32)], [A([1.0, 2.00001], np.float32)], {"rtol": 1e-4}, "case")
    assert_same([A([1.0], np.float32)], [A([1.0], np.float32)], {}, "case")
    with pytest.raises(AssertionError, match="case output 0"):
        assert_same([A([1.0], np.float32)], [A([1.1], np.float32)], {"rtol": 1e-4}, "case")
    with pytest.raises(AssertionError, match="dtype"):
        assert_same([A([1], np.int32)], [A([1], np.int64)], EXACT, "case")
    assert tolerance_of() == EXACT
