"""Lowering ReduceL2: custom op vs lowered graph on onnxruntime.

Integer results are compared bit-exactly. Float results may differ in the last bits: the kernel and
onnxruntime's ReduceL2 add the squares in different orders (the contract fixes the accumulation type, not
the order), so floats are compared with a tolerance of a few units in the last place of the type."""
from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from test_lowering_harness import dialect_node, lower, lower_and_compare, model_of, run_dialect, run_standard

from custom_ops._types import BFLOAT16, type_name
from tests.helpers.models import dialect_model
from onnx_bridge.errors import OpError

FLOATS = (np.dtype(np.float16), BFLOAT16, np.dtype(np.float32), np.dtype(np.float64))
SMALL_INTEGERS = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16))
WIDE_INTEGERS = tuple(np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64))
# Summation order only: f32/f64 a few ulps; f16/bf16 may round the float32 result to the neighbouring value.
RTOL = {np.dtype(np.float16): 1e-3, BFLOAT16: 8e-3, np.dtype(np.float32): 4e-6, np.dtype(np.float64): 1e-14}
AXES = {"one": np.array([1]), "two": np.array([0, -1], np.int32), "none": np.zeros(0, np.int64),
        "scalar": np.int8(2)}


def values_for(dtype, shape, key):
    rng = np.random.default_rng(zlib.crc32(repr(key).encode()))
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return (rng.standard_normal(shape) * 10).astype(dtype)


def reduce_model(data, axes, keep_dims, runtime_axes=False, symbolic=False):
    node = dialect_node("ReduceL2", ["data", "axes"], ["out"], keep_dims=keep_dims)
    return model_of([node], {"data": data, "axes": axes}, constants=() if runtime_axes else ("axes",),
                    outputs={"out": (data.dtype, None)}, symbolic=symbolic)


@pytest.mark.parametrize("dtype", FLOATS + SMALL_INTEGERS, ids=type_name)
@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("keep_dims", [0, 1])
def test_constant_axes(dtype, axes, keep_dims):
    data = values_for(dtype, (3, 4, 5), ("constant", type_name(dtype), axes, keep_dims))
    model, feeds = reduce_model(data, AXES[axes], keep_dims)
    expected = "decomposed" if dtype in SMALL_INTEGERS and axes != "none" else "lowered"
    report, _ = lower_and_compare(model, feeds, rtol=RTOL.get(dtype, 0.0), expect_actions=[expected])
    rounding = dtype in FLOATS and axes != "none"  # summation order: strict keeps those
    assert (report.nodes[0].caveat is not None) == rounding
    if rounding:
        assert "float rounding" in report.nodes[0].caveat
    if axes == "none":
        assert report.nodes[0].emitted[-1] in ("Abs", "Cast")


@pytest.mark.parametrize("dtype", FLOATS + SMALL_INTEGERS, ids=type_name)
@pytest.mark.parametrize("axes", ["one", "two", "none"], ids=str)
def test_runtime_axes(dtype, axes):
    """Axes fed at run time, empty ones included (then |x|, via If for float32/float64/bfloat16)."""
    data = values_for(dtype, (3, 4, 5), ("runtime", type_name(dtype), axes))
    model, feeds = reduce_model(data, AXES[axes], 1, runtime_axes=True, symbolic=True)
    report, _ = lower_and_compare(model, feeds, rtol=RTOL.get(dtype, 0.0))
    assert (report.nodes[0].caveat is None) == (dtype in SMALL_INTEGERS)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BFLOAT16], ids=type_name)
def test_empty_axes_is_abs_even_where_squares_overflow(dtype):
    """sqrt(x*x) would give inf and 0 here; the contract says |x|. Constant and runtime empty axes."""
    data = np.array([3e38 if dtype != np.float64 else 1e300, -1e-30 if dtype != np.float64 else -1e-300, -0.0,
                     np.inf, np.nan], dtype)
    for runtime in (False, True):
        model, feeds = reduce_model(data, np.zeros(0, np.int64), 0, runtime_axes=runtime)
        lower_and_compare(model, feeds)


def row_with_sum_of_squares(total: int, largest: int, width: int = 1024) -> np.ndarray:
    """Non-negative integers <= largest whose squares add up to `total` (greedy), padded with zeros."""
    row = []
    while total:
        value = min(math.isqrt(total), largest)
        row.append(value)
        total -= value * value
    assert len(row) <= width
    return np.array(row + [0] * (width - len(row)), np.int64)


@pytest.mark.parametrize("dtype", SMALL_INTEGERS, ids=type_name)
def test_integer_rounding_is_half_away_from_zero(dtype):
    """Sums of squares k^2 + k (root just below k + 1/2: rounds down) and k^2 + k + 1 (just above: rounds
    up), k^2 - 1 and k^2, with negative values mixed in for signed types, plus the type's extremes."""
    info = np.iinfo(dtype)
    rows = [row_with_sum_of_squares(total, info.max)
            for k in (1, 2, 3, 7, 100, 181, 1000, 4000)
            for total in (k * k + k, k * k + k + 1, k * k - 1, k * k)]
    data = np.array(rows)
    if info.min < 0:
        data[:, ::2] *= -1
    data = np.concatenate([data, np.full((2, 1024), info.max), np.full((1, 1024), info.min)]).astype(dtype)
    model, feeds = reduce_model(data, np.array([1]), 0)
    lower_and_compare(model, feeds, expect_actions=["decomposed"])


@pytest.mark.parametrize("dtype", WIDE_INTEGERS, ids=type_name)
def test_wide_integers_are_kept_unless_axes_are_empty(dtype):
    data = values_for(dtype, (2, 3), ("wide", type_name(dtype)))
    model, feeds = reduce_model(data, np.array([1]), 0)
    _, report = lower(model)
    assert report.nodes[0].action == "kept" and "more than 64 bits" in report.nodes[0].reason
    data[0, 0] = np.iinfo(dtype).min  # Abs wraps like numpy's
    model, feeds = reduce_model(data, np.zeros(0, np.int64), 1)
    lower_and_compare(model, feeds, expect_actions=["lowered"])


@pytest.mark.parametrize("axes,problem", [(np.array([1, -2]), "duplicate"), (np.array([3]), "out of range")])
def test_invalid_constant_axes_are_kept(axes, problem):
    model, _ = reduce_model(np.ones((2, 3, 4), np.float32), axes, 0)
    _, report = lower(model)
    assert report.nodes[0].action == "kept" and problem in report.nodes[0].reason


@pytest.mark.parametrize("dtype", [np.float32, np.int16], ids=type_name)
@pytest.mark.parametrize("axes", [[1, -1], [0, 0], [-2, 0, 1]])
def test_duplicate_runtime_axes_fail_in_both(dtype, axes):
    """onnxruntime would silently de-duplicate them; the lowered graph checks at run time."""
    model, feeds = reduce_model(np.ones((2, 3), dtype), np.array([0]), 0, runtime_axes=True, symbolic=True)
    lowered, report = lower(model)
    assert report.nodes[0].action != "kept"
    bad = dict(feeds, axes=np.array(axes))
    with pytest.raises(OpError, match="duplicate"):
        run_dialect(model, bad)
    with pytest.raises(Exception, match="reshape"):
        run_standard(lowered, bad)


def test_strict_keeps_float_reduction_but_not_integer_or_abs():
    for data, axes, action in ((np.ones((2, 3), np.float32), np.array([1]), "kept"),
                               (np.ones((2, 3), np.uint8), np.array([1]), "decomposed"),
                               (np.ones((2, 3), np.float32), np.zeros(0, np.int64), "lowered")):
        model, _ = reduce_model(data, axes, 0)
        _, report = lower(model, strict=True)
        assert report.nodes[0].action == action, report.to_table()


def test_empty_input_and_scalar():
    model, feeds = reduce_model(np.zeros((0, 3), np.float32), np.array([0]), 0)
    lower_and_compare(model, feeds, expect_actions=["lowered"])
    model, feeds = reduce_model(np.zeros((2, 0, 4), np.int16), np.array([1]), 1)
    lower_and_compare(model, feeds, expect_actions=["decomposed"])
    model, feeds = reduce_model(np.array(-3.5, np.float32), np.zeros(0, np.int64), 0)
    lower_and_compare(model, feeds, expect_actions=["lowered"])


@pytest.mark.parametrize("axes, fails", [(np.array(1), False), (np.array([1]), False),
                                         (np.array([[1]]), True), (np.array([[0, 1]]), True)])
def test_runtime_axes_of_rank_above_1_fail_in_the_lowered_graph(axes, fails):
    # The contract takes axes as a scalar or 1-D; the lowering flattens them, so it checks the rank at run
    # time as the op does (lower=False raises OpError on the same feed).
    import onnxruntime as ort
    import onnx_bridge
    from converters import convert
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    model, feeds = dialect_model("ReduceL2", dict(data=data, axes=axes), constants=())
    lowered, report = convert(model, to="standard")
    assert report.counts == {"lowered": 1}
    custom = onnx_bridge.InferenceSession(model, lower=False)
    if fails:  # at load (onnxruntime folds the check when the declared rank is known) or at run time
        with pytest.raises(Exception, match="runtime_check|axes_checked_rank|cannot be reshaped"):
            ort.InferenceSession(lowered.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
        with pytest.raises(onnx_bridge.OpError):
            custom.run(None, feeds)
    else:
        session = ort.InferenceSession(lowered.SerializeToString(), providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(session.run(None, feeds)[0], custom.run(None, feeds)[0], rtol=1e-6)
