"""convert(to="standard") as a whole: modes, strict, opsets, subgraphs, the report, model hygiene."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from test_lowering_harness import (
    check_model,
    dialect_node,
    lower,
    model_of,
    opset,
    run_dialect,
    run_standard,
    with_output_shapes,
)

import onnx_bridge
from converters import LOWERING, RAISING, convert
from onnx_bridge.config import DOMAIN
from onnx_bridge.errors import ConversionError, ModelError


def mixed_model(opset_version=18, extra_nodes=()):
    """A lowerable mean, a kept node (runtime axis) and a Relu, sharing inputs."""
    values = {"data": np.arange(12, dtype=np.float32).reshape(4, 3), "idx": np.array([[0, 1, 3], [0, 0, 3]]),
              "upd": np.ones((2, 3), np.float32), "axis": np.int64(0), "runtime_axis": np.int64(0)}
    nodes = [dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "axis"], ["mean"], "mean_node",
                          reduction="mean"),
             dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "runtime_axis"], ["kept"],
                          "runtime_node", reduction="max"),
             helper.make_node("Relu", ["mean"], ["relu"], name="relu"), *extra_nodes]
    outputs = {"mean": (np.float32, [4, 3]), "kept": (np.float32, [4, 3]), "relu": (np.float32, [4, 3])}
    return model_of(nodes, values, constants=("axis",), outputs=outputs, opset=opset_version)


def test_default_mode_lowers_what_is_exact_and_keeps_the_rest():
    model, feeds = mixed_model()
    lowered, report = convert(model, to="standard")
    assert [(e.name, e.action) for e in report.nodes] == [("mean_node", "decomposed"), ("runtime_node", "kept")]
    assert report.counts == {"decomposed": 1, "kept": 1}
    check_model(lowered, dialect_free=False)
    assert [n.op_type for n in lowered.graph.node if n.domain == DOMAIN] == ["ScatterElementsUpdate"]
    for got, expected in zip(run_dialect(lowered, feeds), run_dialect(model, feeds)):
        np.testing.assert_array_equal(got, expected)
    assert "axis" not in {t.name for t in lowered.graph.initializer}  # only the lowered node used it


def test_input_model_is_not_modified():
    model, _ = mixed_model()
    before = model.SerializeToString()
    convert(model, to="standard")
    convert(model, to="openvino")
    assert model.SerializeToString() == before


def test_keep_all_changes_nothing_but_reports():
    model, _ = mixed_model()
    lowered, report = convert(model, to="standard", mode="keep-all")
    assert {e.action for e in report.nodes} == {"kept"} and report.nodes[0].reason == "mode keep-all"
    assert [n.op_type for n in lowered.graph.node] == [n.op_type for n in model.graph.node]


def test_require_standard_lists_every_node_that_stays():
    model, _ = mixed_model(extra_nodes=[dialect_node("ReduceL2", ["data", "axis"], ["norm"], "int_free",
                                                     keep_dims=1),
                                        dialect_node("Unique", ["idx", "runtime_axis"], ["u"], "unique_node")])
    with pytest.raises(ConversionError) as error:
        convert(model, to="standard", mode="require-standard")
    message = str(error.value)
    assert "2 dialect node(s)" in message and "runtime_node" in message and "unique_node" in message
    assert "int_free" not in message and "mean_node" not in message


def test_require_standard_passes_when_everything_lowers():
    values = {"data": np.ones((2, 3), np.float32), "axes": np.array([1])}
    model, feeds = model_of([dialect_node("ReduceL2", ["data", "axes"], ["out"])], values, constants=("axes",),
                            outputs={"out": (np.float32, [2])})
    lowered, report = convert(model, to="standard", mode="require-standard")
    check_model(lowered)
    np.testing.assert_allclose(run_standard(lowered, feeds)[0], np.sqrt([3, 3]), rtol=1e-6)


@pytest.mark.parametrize("bad", [dict(to="tensorflow"), dict(mode="fast"), dict(to="openvino-ir"),
                                 dict(to="openvino", mode="require-standard")])
def test_bad_arguments(bad):
    model, _ = mixed_model()
    with pytest.raises(ConversionError):
        convert(model, **bad)


def test_bad_input():
    with pytest.raises(ModelError):
        convert(b"not a model")
    with pytest.raises(ModelError):
        convert("/nonexistent/model.onnx")


def test_old_opset_is_raised_when_safe():
    """A model at opset 14 whose own ops are defined the same at 18 (Relu-14) gets opset 18, with a note."""
    model, feeds = mixed_model(opset_version=14)
    lowered, report = convert(model, to="standard")
    assert opset(lowered) == 18 and report.nodes[0].action == "decomposed"
    assert any("opset 14 -> 18" in note for note in report.notes)
    check_model(lowered, dialect_free=False)


def test_old_opset_blocks_lowering_when_unsafe():
    """At opset 12 the model has Relu-6 and ReduceSum-11; at 18 they would be Relu-14 and ReduceSum-13 (axes
    attribute -> input): every dialect node is kept, saying why."""
    extra = [helper.make_node("ReduceSum", ["relu"], ["total"], name="sum", axes=[0])]
    model, _ = mixed_model(opset_version=12, extra_nodes=extra)
    lowered, report = convert(model, to="standard")
    assert {e.action for e in report.nodes} == {"kept"}
    assert "ReduceSum-11 -> ReduceSum-13" in report.nodes[0].reason
    assert opset(lowered) == 12


def test_newer_opset_is_kept():
    model, feeds = mixed_model(opset_version=21)
    lowered, _ = convert(model, to="standard")
    assert opset(lowered) == 21
    check_model(lowered, dialect_free=False)


def test_model_without_dialect_nodes_is_returned_as_is():
    model, _ = model_of([helper.make_node("Relu", ["x"], ["y"])], {"x": np.ones(2, np.float32)},
                        outputs={"y": (np.float32, [2])}, dialect_opset=None)
    lowered, report = convert(model, to="standard")
    assert report.nodes == [] and report.summary() == "no node to convert"
    assert [n.op_type for n in lowered.graph.node] == ["Relu"]


def test_missing_domain_import_keeps_nodes():
    values = {"data": np.ones((2, 3), np.float32), "axes": np.array([1])}
    model, _ = model_of([dialect_node("ReduceL2", ["data", "axes"], ["out"])], values, constants=("axes",),
                        outputs={"out": (np.float32, [2])}, dialect_opset=None)
    _, report = convert(model, to="standard")
    assert report.nodes[0].action == "kept" and "does not import domain" in report.nodes[0].reason


def test_dialect_node_inside_a_subgraph():
    then_graph = helper.make_graph(
        [dialect_node("ReduceL2", ["data", "axes"], ["norm"], "inner", keep_dims=0)], "then", [],
        [helper.make_tensor_value_info("norm", TensorProto.FLOAT, [2])])
    else_graph = helper.make_graph([helper.make_node("Identity", ["zeros"], ["top"])], "else", [],
                                   [helper.make_tensor_value_info("top", TensorProto.FLOAT, [2])])
    node = helper.make_node("If", ["flag"], ["out"], then_branch=then_graph, else_branch=else_graph)
    values = {"data": np.array([[3, 4], [6, 8]], np.float32), "axes": np.array([1]), "flag": np.array(True),
              "zeros": np.zeros(2, np.float32)}
    model, feeds = model_of([node], values, constants=("axes", "zeros"), outputs={"out": (np.float32, [2])})
    lowered, report = convert(model, to="standard")
    assert report.nodes[0].name == "inner" and report.nodes[0].action == "lowered"
    check_model(lowered)
    np.testing.assert_allclose(run_standard(lowered, feeds)[0], [5, 10])


def test_report_table_and_json():
    model, _ = mixed_model()
    _, report = convert(model, to="standard")
    table = report.to_table()
    lines = table.splitlines()
    assert lines[0].split() == ["node", "op", "action", "reason"]
    assert "mean_node" in lines[1] and "ScatterElementsUpdate-12" in lines[1] and "decomposed" in lines[1]
    assert "runtime_node" in lines[2] and "kept" in lines[2] and "not a constant" in lines[2]
    assert "2 nodes: 1 decomposed, 1 kept" in table
    data = json.loads(report.to_json())
    assert data["direction"] == "standard" and data["counts"] == {"decomposed": 1, "kept": 1}
    assert "Div" in data["nodes"][0]["emitted"] and data["nodes"][1]["emitted"] == []


def test_registry_lookup_picks_highest_version_not_above_opset():
    assert LOWERING.lookup(DOMAIN, "ScatterElementsUpdate", 11)[0] == 3
    assert LOWERING.lookup(DOMAIN, "ScatterElementsUpdate", 12)[0] == 12
    assert LOWERING.lookup(DOMAIN, "ScatterElementsUpdate", 2) is None
    assert RAISING.lookup("", "ScatterElements", 17)[0] == 16
    assert RAISING.lookup("ai.onnx", "ReduceL2", 12)[0] == 11
    assert RAISING.lookup("", "Unique", 28)[0] == 11


def test_public_entry_point_and_output_file(tmp_path):
    model, feeds = mixed_model()
    target = tmp_path / "lowered.onnx"
    lowered, _ = onnx_bridge.convert(model, output=target)
    assert onnx.load(str(target)) == lowered
    expected = run_dialect(model, feeds)
    with_output_shapes(model, expected)
    assert [a.tolist() for a in run_dialect(onnx.load(str(target)), feeds)] == [a.tolist() for a in expected]


def test_lowered_model_runs_in_the_session_too():
    """onnx_bridge.InferenceSession on the lowered model (custom ops for what stayed) gives the same."""
    model, feeds = mixed_model()
    lowered, _ = lower(model)
    for got, expected in zip(run_dialect(lowered, feeds), run_dialect(model, feeds)):
        np.testing.assert_array_equal(got, expected)
