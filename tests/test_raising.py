"""Raising standard ScatterElements / ReduceL2 / Unique into the dialect: the ONNX backend node tests
reproduced through the custom ops, unit cases against onnxruntime, and round trips with lowering."""
from __future__ import annotations

import importlib

import numpy as np
import onnx
import onnx.backend.test.case.node as backend_cases
import pytest
from onnx import TensorProto, helper
from test_lowering_harness import (
    assert_same,
    check_model,
    dialect_node,
    model_of,
    run_dialect,
    run_reference,
    run_standard,
    with_output_shapes,
)

from converters import convert
from custom_ops._types import BFLOAT16
from onnx_bridge.config import DIALECT_OPSET, DOMAIN

for _module in ("scatterelements", "reducel2", "unique"):  # importing a case module records its cases
    importlib.import_module(f"onnx.backend.test.case.node.{_module}")
PREFIXES = ("test_scatter_elements", "test_reduce_l2", "test_unique")
BACKEND = {case.name: case for case in backend_cases._NodeTestCases
           if case.name.startswith(PREFIXES) and not case.name.endswith("_expanded")}
RAISED_OPS = {"ScatterElements", "ReduceL2", "Unique"}


def test_backend_cases_were_collected():
    assert len(BACKEND) >= 20, sorted(BACKEND)


def _feedable(model: onnx.ModelProto, inputs, outputs):
    """bfloat16 graph inputs/outputs (not feedable from Python) wrapped as float32 with Casts."""
    model.graph.ClearField("value_info")
    nodes, feeds = [], {}
    for value, array in zip(list(model.graph.input), inputs):
        if value.type.tensor_type.elem_type == TensorProto.BFLOAT16:
            original = value.name
            value.name = f"{original}_f32"
            value.type.tensor_type.elem_type = TensorProto.FLOAT
            nodes.append(helper.make_node("Cast", [value.name], [original], to=TensorProto.BFLOAT16))
            array = array.astype(np.float32)
        feeds[value.name] = array
    expected = []
    for value, array in zip(model.graph.output, outputs):
        if value.type.tensor_type.elem_type == TensorProto.BFLOAT16:
            original = value.name
            value.name = f"{original}_f32"
            value.type.tensor_type.elem_type = TensorProto.FLOAT
            model.graph.node.append(helper.make_node("Cast", [original], [value.name], to=TensorProto.FLOAT))
            array = array.astype(np.float32)
        expected.append(array)
    for node in reversed(nodes):
        model.graph.node.insert(0, node)
    return feeds, expected


@pytest.mark.parametrize("name", sorted(BACKEND))
def test_backend_case_raised_reproduces_expected_outputs(name):
    case = BACKEND[name]
    raised, report = convert(case.model, to="openvino")
    assert [e.action for e in report.nodes] == ["raised"], report.to_table()
    assert not RAISED_OPS & {n.op_type for n in raised.graph.node if n.domain in ("", "ai.onnx")}
    check_model(raised, dialect_free=False)
    assert {o.domain: o.version for o in raised.opset_import}[DOMAIN] == DIALECT_OPSET
    for inputs, outputs in case.data_sets:
        model = onnx.ModelProto()
        model.CopyFrom(raised)
        feeds, expected = _feedable(model, inputs, outputs)
        got = run_dialect(model, feeds)
        # ReduceL2: the reference sums squares in another order than the kernel (float32).
        assert_same(got, [np.asarray(e) for e in expected], rtol=1e-6 if "reduce_l2" in name else 0.0, what=name)


# Unit cases: standard model on onnxruntime vs raised model through the custom ops ---------------------


def standard_model(node, values, outputs, opset, constants=()):
    return model_of([node], values, constants=constants, outputs=outputs, opset=opset, dialect_opset=None)


def raise_and_compare(model, feeds, *, expect="raised", rtol=0.0):
    expected = run_standard(model, feeds)
    with_output_shapes(model, expected)
    raised, report = convert(model, to="openvino")
    assert [e.action for e in report.nodes] == [expect], report.to_table()
    check_model(raised, dialect_free=False)
    assert_same(run_reference(raised, feeds), expected, rtol=rtol, what=report.to_table())
    return raised, report


SCATTER_CASES = [(11, None), (13, None), (16, "none"), (16, "add"), (16, "mul"), (18, "add"), (18, "mul"),
                 (18, "min"), (18, "max"), (18, "none")]


@pytest.mark.parametrize("opset,reduction", SCATTER_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.float64])
def test_scatter_elements(opset, reduction, dtype):
    rng = np.random.default_rng(opset)
    attributes = {"axis": 1} | ({"reduction": reduction} if reduction else {})
    node = helper.make_node("ScatterElements", ["data", "idx", "upd"], ["out"], **attributes)
    indices = rng.integers(-3, 3, (2, 5)) if reduction not in (None, "none") else \
        np.array([[0, 2, -1, 1, 0], [1, 1, 0, 2, 2]])  # duplicates with none: last wins in both
    values = {"data": (rng.standard_normal((3, 3)) * 5).astype(dtype), "idx": indices,
              "upd": (rng.standard_normal((2, 5)) * 5).astype(dtype)}
    model, feeds = standard_model(node, values, {"out": (dtype, None)}, opset)
    raised, report = raise_and_compare(model, feeds)
    node = [n for n in raised.graph.node if n.domain == DOMAIN][0]
    assert node.op_type == "ScatterElementsUpdate"
    has_caveat = np.dtype(dtype).kind == "f" and reduction in ("min", "max")
    assert (report.nodes[0].caveat is not None) == has_caveat


def test_scatter_elements_bool_add_mul_are_or_and():
    for reduction in ("add", "mul"):
        node = helper.make_node("ScatterElements", ["data", "idx", "upd"], ["out"], reduction=reduction)
        values = {"data": np.array([0, 0, 1, 1], bool), "idx": np.array([0, 0, 1, 1, 2, 2, 3, 3]),
                  "upd": np.array([0, 0, 0, 1, 0, 0, 1, 1], bool)}
        model, feeds = standard_model(node, values, {"out": (bool, [4])}, 18)
        raise_and_compare(model, feeds)


@pytest.mark.parametrize("dtype,reduction,opset,reason", [
    (np.float16, "add", 18, "rounds at every step"), (BFLOAT16, "mul", 18, "rounds at every step"),
    (np.float32, "min", 16, "not defined"), (np.float32, "mean", 18, "not defined")])
def test_scatter_elements_left_alone(dtype, reduction, opset, reason):
    node = helper.make_node("ScatterElements", ["data", "idx", "upd"], ["out"], reduction=reduction)
    values = {"data": np.ones(3, dtype), "idx": np.array([0]), "upd": np.ones(1, dtype)}
    model, _ = standard_model(node, values, {"out": (dtype, [3])}, opset)
    raised, report = convert(model, to="openvino")
    assert report.nodes[0].action == "unchanged" and reason in report.nodes[0].reason
    assert "ScatterElements" in [n.op_type for n in raised.graph.node]


def test_strings_are_left_alone():
    node = helper.make_node("Unique", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.STRING, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.STRING, [None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    _, report = convert(model, to="openvino")
    assert report.nodes[0].action == "unchanged" and "string" in report.nodes[0].reason


def test_strict_leaves_float_min_max_alone():
    node = helper.make_node("ScatterElements", ["data", "idx", "upd"], ["out"], reduction="max")
    values = {"data": np.ones(3, np.float32), "idx": np.array([0]), "upd": np.ones(1, np.float32)}
    model, _ = standard_model(node, values, {"out": (np.float32, [3])}, 18)
    _, report = convert(model, to="openvino", strict=True)
    assert report.nodes[0].action == "unchanged" and "NaN" in report.nodes[0].reason


L2_CASES = {
    "v1_axes": (1, {"axes": [1]}, None), "v11_negative_axes_no_keep": (11, {"axes": [-1], "keepdims": 0}, None),
    "v13_all_axes": (13, {}, None), "v13_duplicate_axes": (13, {"axes": [1, -2]}, None),
    "v18_constant_axes": (18, {"keepdims": 0}, ("const", [0, 2])),
    "v18_absent_axes_reduce_all": (18, {}, None), "v18_absent_axes_noop": (18, {"noop_with_empty_axes": 1}, None),
    "v18_empty_axes_reduce_all": (18, {"keepdims": 0}, ("const", [])),
    "v18_empty_axes_noop": (18, {"noop_with_empty_axes": 1}, ("const", [])),
    "v18_runtime_axes": (18, {}, ("runtime", [1])),
    "v18_runtime_empty_axes_reduce_all": (18, {"keepdims": 0}, ("runtime", [])),
    "v18_runtime_axes_noop": (18, {"noop_with_empty_axes": 1}, ("runtime", [-1])),
    "v18_runtime_empty_axes_noop": (18, {"noop_with_empty_axes": 1}, ("runtime", [])),
}


# float16 only from opset 13: for older opsets onnxruntime's own float16 -> float32 Cast insertion emits an
# invalid Cast-1 and refuses the standard model.
L2_PARAMETERS = [(name, dtype) for name in L2_CASES for dtype in (np.float32, np.float16)
                 if dtype == np.float32 or L2_CASES[name][0] >= 13]


@pytest.mark.parametrize("name,dtype", L2_PARAMETERS)
def test_reduce_l2(name, dtype):
    opset, attributes, axes = L2_CASES[name]
    values = {"data": (np.random.default_rng(len(name)).standard_normal((2, 3, 4)) * 3).astype(dtype)}
    inputs, constants = ["data"], ()
    if axes is not None:
        kind, axes = axes
        values["axes"] = np.array(axes, np.int64)
        inputs.append("axes")
        constants = ("axes",) if kind == "const" else ()
    node = helper.make_node("ReduceL2", inputs, ["out"], **attributes)
    model, feeds = standard_model(node, values, {"out": (dtype, None)}, opset, constants)
    raise_and_compare(model, feeds, rtol=1e-6 if dtype == np.float32 else 1e-3)


def test_reduce_l2_integers_are_left_alone():
    node = helper.make_node("ReduceL2", ["data"], ["out"], axes=[0])
    model, _ = standard_model(node, {"data": np.array([[2, 2]], np.int32)}, {"out": (np.int32, [1, 2])}, 13)
    _, report = convert(model, to="openvino")
    assert report.nodes[0].action == "unchanged" and "truncates" in report.nodes[0].reason


UNIQUE_CASES = [({}, None), ({"sorted": 0}, None), ({"axis": 0}, None), ({"axis": -1, "sorted": 0}, None),
                ({"axis": 1}, None)]


@pytest.mark.parametrize("attributes,_", UNIQUE_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8, np.float64])
def test_unique(attributes, _, dtype):
    data = np.array([[2, 1, 2], [0, 1, 0], [2, 1, 2], [-1, 0, -1]], dtype)
    node = helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], **attributes)
    outputs = {"y": (dtype, None), "indices": (np.int64, None), "inverse": (np.int64, None),
               "counts": (np.int64, None)}
    model, feeds = standard_model(node, {"x": data}, outputs, 18)
    raise_and_compare(model, feeds)


@pytest.mark.parametrize("outputs", [["y"], ["y", "indices"], ["y", "", "inverse"]])
def test_unique_with_fewer_outputs(outputs):
    """The dialect's Unique declares four outputs: unused ones are named."""
    node = helper.make_node("Unique", ["x"], outputs, sorted=0)
    model, feeds = standard_model(node, {"x": np.array([3, 1, 3, 2], np.float32)},
                                  {o: (np.float32 if o == "y" else np.int64, None) for o in outputs if o}, 18)
    raised, _ = raise_and_compare(model, feeds)
    assert len(raised.graph.node[-1].output) == 4


# Round trips ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset,reduction", [(18, "add"), (18, "max"), (11, None), (16, "mul")])
def test_lower_of_raise_keeps_outputs(opset, reduction):
    node = helper.make_node("ScatterElements", ["data", "idx", "upd"], ["out"],
                            **({"reduction": reduction} if reduction else {}))
    values = {"data": np.arange(6, dtype=np.float32), "idx": np.array([5, -1, 0, 2]),
              "upd": np.array([1.5, -2, 7, 0.25], np.float32)}
    model, feeds = standard_model(node, values, {"out": (np.float32, [6])}, opset)
    expected = run_standard(model, feeds)
    raised, _ = convert(model, to="openvino")
    back, report = convert(raised, to="standard")
    assert report.nodes[0].action in ("lowered", "decomposed")
    check_model(back)
    assert_same(run_standard(back, feeds), expected)


def test_raise_of_lower_keeps_outputs():
    values = {"data": np.arange(12, dtype=np.float32).reshape(4, 3), "idx": np.array([[0, 1, 3], [0, 0, 3]]),
              "upd": np.ones((2, 3), np.float32), "axis": np.int64(0), "x": np.array([3, 1, 3, 2], np.int32),
              "axes": np.array([1])}
    nodes = [dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "axis"], ["mean"], "mean",
                          reduction="mean", use_init_val=0),
             dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "axis"], ["max"], "max",
                          reduction="max"),
             dialect_node("ReduceL2", ["data", "axes"], ["norm"], "norm"),
             dialect_node("Unique", ["x"], ["u", "i", "r", "c"], "unique", sorted=0)]
    outputs = {"mean": (np.float32, None), "max": (np.float32, None), "norm": (np.float32, None),
               "u": (np.int32, None), "i": (np.int64, None), "r": (np.int64, None), "c": (np.int64, None)}
    model, feeds = model_of(nodes, values, constants=("axis", "axes"), outputs=outputs)
    expected = run_dialect(model, feeds)
    with_output_shapes(model, expected)
    lowered, _ = convert(model, to="standard")
    raised, report = convert(lowered, to="openvino")
    assert report.counts.get("raised", 0) >= 4
    check_model(raised, dialect_free=False)
    assert_same(run_dialect(raised, feeds), expected, rtol=1e-6)
