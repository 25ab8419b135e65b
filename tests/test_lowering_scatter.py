"""Lowering ScatterElementsUpdate and ScatterUpdate: the dialect model through the custom ops vs the lowered
model through plain onnxruntime, on seeded inputs with duplicate and negative indices. Bit-exact: the
lowered graphs do the kernel's arithmetic in the kernel's order (floats included)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from test_lowering_harness import (
    check_model,
    dialect_node,
    lower,
    lower_and_compare,
    model_of,
    run_dialect,
    run_standard,
    with_output_shapes,
)

from custom_ops._types import BFLOAT16, DATA_TYPES, INTEGER_TYPES, type_name
from onnx_bridge.errors import OpError

REDUCTIONS = ("none", "sum", "prod", "min", "max", "mean")


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def random_values(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in INTEGER_TYPES:
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return (rng.standard_normal(shape) * 8).astype(dtype)


def seu_case(dtype, reduction, use_init_val, rng):
    """Two nodes: axis 0 (int64 indices, 5x3 data, 8 rows of updates) and axis -1 given as a 1-element
    int32 tensor (int32 indices, 2x3x4 data, 6 updates per row)."""
    values = {
        "data_a": random_values(rng, dtype, (5, 3)), "idx_a": rng.integers(-5, 5, (8, 3)),
        "upd_a": random_values(rng, dtype, (8, 3)), "axis_a": np.int64(0),
        "data_b": random_values(rng, dtype, (2, 3, 4)), "idx_b": rng.integers(-4, 4, (2, 3, 6)).astype(np.int32),
        "upd_b": random_values(rng, dtype, (2, 3, 6)), "axis_b": np.array([-1], np.int32),
    }
    attributes = dict(reduction=reduction, use_init_val=use_init_val)
    nodes = [dialect_node("ScatterElementsUpdate", ["data_a", "idx_a", "upd_a", "axis_a"], ["out_a"], "a",
                          **attributes),
             dialect_node("ScatterElementsUpdate", ["data_b", "idx_b", "upd_b", "axis_b"], ["out_b"], "b",
                          **attributes)]
    outputs = {"out_a": (dtype, None), "out_b": (dtype, None)}
    return model_of(nodes, values, constants=("axis_a", "axis_b"), outputs=outputs)


def expected_seu_action(dtype, reduction, use_init_val):
    dtype = np.dtype(dtype)
    if reduction == "mean" and dtype in (np.int64, np.uint64):
        return "kept"
    if reduction == "none":
        return "lowered"
    if reduction == "mean" or not use_init_val or (dtype.kind == "f" or dtype == BFLOAT16) and \
            reduction in ("min", "max"):
        return "decomposed"
    return "lowered"


SEU_CASES = [(t, r, u) for t in DATA_TYPES for r in REDUCTIONS for u in (1, 0)
             if not (t == np.bool_ and r == "mean")]


@pytest.mark.parametrize("dtype,reduction,use_init_val", SEU_CASES,
                         ids=[f"{type_name(t)}-{r}-init{u}" for t, r, u in SEU_CASES])
def test_scatter_elements_update(dtype, reduction, use_init_val):
    model, feeds = seu_case(dtype, reduction, use_init_val, rng_for("seu", type_name(dtype), reduction,
                                                                     use_init_val))
    action = expected_seu_action(dtype, reduction, use_init_val)
    report, lowered = lower_and_compare(model, feeds, expect_actions=[action, action])
    for entry in report.nodes:
        assert entry.caveat is None
        if action == "kept":
            assert "wider than 64 bits" in entry.reason
        else:
            assert "mean" not in [a.s.decode() for n in lowered.graph.node for a in n.attribute
                                  if a.name == "reduction"]


@pytest.mark.parametrize("dtype", [np.float16, BFLOAT16, np.float32, np.float64], ids=type_name)
@pytest.mark.parametrize("reduction", ["min", "max"])
@pytest.mark.parametrize("use_init_val", [1, 0])
def test_min_max_propagate_nan(dtype, reduction, use_init_val):
    """NaN in data and in updates, before and after numbers at the same position (onnxruntime alone would
    let the later number replace the NaN)."""
    nan = np.nan
    values = {"data": np.array([nan, 1, 1, nan, 2, 7], dtype), "idx": np.array([0, 1, 2, 2, 3, 3, 3, 4, 0]),
              "upd": np.array([5, nan, nan, 5, nan, 5, 1, -3, -nan], dtype), "axis": np.int64(0)}
    node = dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "axis"], ["out"],
                        reduction=reduction, use_init_val=use_init_val)
    model, feeds = model_of([node], values, constants=("axis",), outputs={"out": (dtype, None)})
    lower_and_compare(model, feeds, expect_actions=["decomposed"])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_no_updates(reduction, dtype):
    values = {"data": np.arange(6).astype(dtype).reshape(2, 3), "idx": np.zeros((0, 3), np.int64),
              "upd": np.zeros((0, 3), dtype), "axis": np.int64(0)}
    node = dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "axis"], ["out"], reduction=reduction,
                        use_init_val=0)
    model, feeds = model_of([node], values, constants=("axis",), outputs={"out": (dtype, None)})
    lower_and_compare(model, feeds)


def test_seeds_of_the_contract():
    """docs/dialect.md section 3: sum with use_init_val 1 and 0, both lowered, reproduce the seed numbers."""
    for use_init_val, indices, expected in ((1, [1, 0, 0, -2, -1, 2], [52, 13, 104, 76]),
                                            (0, [1, 0, 0, 2, 3, 2], [50, 10, 100, 70])):
        values = {"data": np.array([2, 3, 4, 6]), "idx": np.array(indices),
                  "upd": np.array([10, 20, 30, 40, 70, 60]), "axis": np.int64(0)}
        node = dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "axis"], ["out"], reduction="sum",
                            use_init_val=use_init_val)
        model, feeds = model_of([node], values, constants=("axis",), outputs={"out": (np.int64, [4])})
        lowered, _ = lower(model)
        np.testing.assert_array_equal(run_standard(lowered, feeds)[0], expected)


def test_version_3_is_reduction_none():
    values = {"data": np.zeros((3, 4), np.float32), "idx": np.array([[1, 2], [0, 3]]),
              "upd": np.array([[11, 12], [13, 14]], np.float32), "axis": np.int64(1)}
    node = dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "axis"], ["out"])
    model, feeds = model_of([node], values, constants=("axis",), outputs={"out": (np.float32, [3, 4])},
                            dialect_opset=3)
    report, _ = lower_and_compare(model, feeds, expect_actions=["lowered"])
    assert report.nodes[0].version == 3


@pytest.mark.parametrize("index_type", INTEGER_TYPES, ids=type_name)
def test_every_index_type(index_type):
    rng = rng_for("index", type_name(index_type))
    low = 0 if np.dtype(index_type).kind == "u" else -4
    values = {"data": rng.standard_normal((4, 3)).astype(np.float32),
              "idx": rng.integers(low, 4, (6, 3)).astype(index_type),
              "upd": rng.standard_normal((6, 3)).astype(np.float32), "axis": np.uint8(0)}
    node = dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "axis"], ["out"], reduction="sum")
    model, feeds = model_of([node], values, constants=("axis",), outputs={"out": (np.float32, None)})
    lower_and_compare(model, feeds, expect_actions=["lowered"])


@pytest.mark.parametrize("index", [2**63, 2**64 - 1, 4])
def test_uint64_indices_out_of_range_fail_in_both(index):
    """uint64 indices >= 2**63 would turn into valid negative int64 indices: the lowering moves them out of
    range, so onnxruntime rejects them as the dialect does."""
    values = {"data": np.zeros(4, np.float32), "idx": np.array([1, index], np.uint64),
              "upd": np.ones(2, np.float32), "axis": np.int64(0)}
    node = dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "axis"], ["out"])
    model, feeds = model_of([node], values, constants=("axis",), outputs={"out": (np.float32, [4])})
    with pytest.raises(OpError):
        run_dialect(model, feeds)
    lowered, _ = lower(model)
    with pytest.raises(Exception, match="out of (data )?bounds|invalid"):
        run_standard(lowered, feeds)


def test_kept_with_reasons():
    values = {"data": np.zeros(4, np.float32), "idx": np.array([1]), "upd": np.ones(1, np.float32),
              "axis": np.int64(0), "c_axis": np.int64(0), "bad_axis": np.int64(3), "bools": np.zeros(2, bool),
              "bidx": np.array([0]), "bupd": np.ones(1, bool)}
    nodes = [dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "axis"], ["o1"], "runtime_axis"),
             dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "bad_axis"], ["o2"], "bad_axis"),
             dialect_node("ScatterElementsUpdate", ["bools", "bidx", "bupd", "c_axis"], ["o3"], "bool_mean",
                          reduction="mean"),
             dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "c_axis"], ["o4"], "bad_reduction",
                          reduction="average")]
    model, _ = model_of(nodes, values, constants=("bad_axis", "c_axis"),
                        outputs={"o1": (np.float32, [4]), "o2": (np.float32, [4]), "o3": (bool, [2]),
                                 "o4": (np.float32, [4])})
    lowered, report = lower(model)
    reasons = {e.name: (e.action, e.reason) for e in report.nodes}
    assert reasons["runtime_axis"][0] == "kept" and "not a constant" in reasons["runtime_axis"][1]
    assert reasons["bad_axis"][0] == "kept" and "out of range" in reasons["bad_axis"][1]
    assert reasons["bool_mean"][0] == "kept" and "bool" in reasons["bool_mean"][1]
    assert reasons["bad_reduction"][0] == "kept" and "average" in reasons["bad_reduction"][1]
    check_model(lowered, dialect_free=False)


# ScatterUpdate ------------------------------------------------------------------------------------------


def su_case(dtype, axis, index_shape, rng, constant_indices=False, symbolic=False):
    data_shape = (4, 3, 5)
    size = data_shape[axis]
    indices = rng.integers(0, size, index_shape)
    update_shape = data_shape[:axis % 3] + index_shape + data_shape[axis % 3 + 1:]
    values = {"data": random_values(rng, dtype, data_shape), "idx": indices,
              "upd": random_values(rng, dtype, update_shape), "axis": np.int64(axis)}
    node = dialect_node("ScatterUpdate", ["data", "idx", "upd", "axis"], ["out"])
    constants = ("axis", "idx") if constant_indices else ("axis",)
    return model_of([node], values, constants=constants, outputs={"out": (dtype, None)}, symbolic=symbolic)


@pytest.mark.parametrize("dtype", DATA_TYPES, ids=type_name)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_update(dtype, axis):
    """2-D indices with duplicates (more indices than rows), every type, first/middle/last axis."""
    model, feeds = su_case(dtype, axis, (3, 4), rng_for("su", type_name(dtype), axis))
    report, _ = lower_and_compare(model, feeds, expect_actions=["decomposed"])
    assert "duplicates" in report.nodes[0].reason and report.nodes[0].caveat is None


@pytest.mark.parametrize("index_shape", [(), (0,), (2,), (1, 1, 2)])
@pytest.mark.parametrize("axis", [0, 2])
def test_scatter_update_index_shapes(index_shape, axis):
    model, feeds = su_case(np.float32, axis, index_shape, rng_for("su-shape", index_shape, axis))
    lower_and_compare(model, feeds, expect_actions=["decomposed"])


def test_scatter_update_duplicates_with_parallel_writes():
    """Many duplicate indices and big rows: onnxruntime's ScatterND alone picks the winner by a thread race."""
    rng = rng_for("su-race")
    values = {"data": np.zeros((4, 50_000), np.float32), "idx": np.zeros(64, np.int64),
              "upd": np.repeat(np.arange(64, dtype=np.float32)[:, None], 50_000, 1), "axis": np.int64(0)}
    values["idx"][rng.integers(0, 64, 16)] = 2
    node = dialect_node("ScatterUpdate", ["data", "idx", "upd", "axis"], ["out"])
    model, feeds = model_of([node], values, constants=("axis",), outputs={"out": (np.float32, None)})
    expected = run_dialect(model, feeds)
    lowered, _ = lower(model)
    for _ in range(5):
        np.testing.assert_array_equal(run_standard(lowered, feeds)[0], expected[0])


def test_scatter_update_constant_unique_indices_skip_dedup():
    values = {"data": np.arange(15, dtype=np.float32).reshape(3, 5), "idx": np.array([0, 2]),
              "upd": np.array([[1, 1], [1, 1], [1, 2]], np.float32), "axis": np.int64(1)}
    node = dialect_node("ScatterUpdate", ["data", "idx", "upd", "axis"], ["out"])
    model, feeds = model_of([node], values, constants=("axis", "idx"), outputs={"out": (np.float32, [3, 5])})
    report, lowered = lower_and_compare(model, feeds, expect_actions=["decomposed"])
    assert "duplicates" not in report.nodes[0].reason
    assert "ScatterElements" not in {n.op_type for n in lowered.graph.node}


def test_scatter_update_negative_index_fails_in_both():
    values = {"data": np.zeros((3, 2), np.float32), "idx": np.array([0, -1]), "upd": np.ones((2, 2), np.float32),
              "axis": np.int64(0)}
    node = dialect_node("ScatterUpdate", ["data", "idx", "upd", "axis"], ["out"])
    model, feeds = model_of([node], values, constants=("axis",), outputs={"out": (np.float32, [3, 2])})
    with pytest.raises(OpError):
        run_dialect(model, feeds)
    lowered, report = lower(model)
    assert report.nodes[0].caveat is None
    with pytest.raises(Exception, match="out of (data )?bounds|invalid"):
        run_standard(lowered, feeds)


def test_scatter_update_unknown_shapes_are_checked_at_run_time():
    """With symbolic shapes the converter cannot prove updates has the right shape; the lowered graph checks
    it at run time: an updates tensor with as many elements but another shape fails in both."""
    model, feeds = su_case(np.float32, 1, (2,), rng_for("su-sym"), symbolic=True)
    report, lowered = lower_and_compare(model, feeds, expect_actions=["decomposed"])
    assert report.nodes[0].caveat is None and "checked at run time" in report.nodes[0].reason
    _, strict = lower(model, strict=True)
    assert strict.nodes[0].action == "decomposed"
    for shape in [(4, 5, 2), (2, 4, 5), (5, 4, 2)]:  # as many elements as (4, 2, 5); inputs declare rank 3
        bad = dict(feeds, upd=feeds["upd"].reshape(shape))
        with pytest.raises(OpError):
            run_dialect(model, bad)
        with pytest.raises(Exception, match="reshape"):
            run_standard(lowered, bad)


def test_scatter_update_static_shape_mismatch_is_kept():
    values = {"data": np.zeros((3, 2), np.float32), "idx": np.array([0, 1]), "upd": np.ones((2, 3), np.float32),
              "axis": np.int64(0)}
    node = dialect_node("ScatterUpdate", ["data", "idx", "upd", "axis"], ["out"])
    model, _ = model_of([node], values, constants=("axis",), outputs={"out": (np.float32, [3, 2])})
    _, report = lower(model)
    assert report.nodes[0].action == "kept" and "always fails" in report.nodes[0].reason


def test_lowered_model_is_valid_onnx():
    model, feeds = seu_case(np.float32, "mean", 0, rng_for("valid"))
    expected = run_dialect(model, feeds)
    with_output_shapes(model, expected)
    lowered, _ = lower(model)
    check_model(lowered)
    names = {v.name for v in lowered.graph.value_info}
    produced = {o for n in lowered.graph.node for o in n.output} - {o.name for o in lowered.graph.output}
    assert produced <= names, produced - names  # every new value is typed
    assert all(v.type.tensor_type.elem_type for v in lowered.graph.value_info)
