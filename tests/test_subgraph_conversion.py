"""Dialect nodes inside subgraphs (If/Loop/Scan bodies) and model-local function bodies are converted in
both directions; onnx_bridge.InferenceSession runs dialect nodes held by functions, and models written with
as_functions=True."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_lowering_harness import assert_same, dialect_node, run_dialect, run_standard

import onnx_bridge
from converters import convert
from converters.functions import is_definition
from custom_ops._schemas import register_schemas
from onnx_bridge.config import DIALECT_OPSET, DOMAIN, IR_VERSION

F32, I64 = TensorProto.FLOAT, TensorProto.INT64
EXAMPLE = "ai.example"
RNG = np.random.default_rng(15)
DATA = RNG.integers(-8, 9, (4, 3)).astype(np.float32)
INDICES = np.array([[0, 2, 1], [0, 2, 1], [3, 0, 0]], np.int64)
UPDATES = RNG.integers(-8, 9, (3, 3)).astype(np.float32)
FEEDS = {"data": DATA, "indices": INDICES, "updates": UPDATES}
IMPORTS = [helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 12)]


def _inputs():
    return [helper.make_tensor_value_info("data", F32, [4, 3]), helper.make_tensor_value_info("indices", I64, [3, 3]),
            helper.make_tensor_value_info("updates", F32, [3, 3])]


def _constants():
    return [numpy_helper.from_array(np.array(0, np.int64), "axis"), numpy_helper.from_array(np.array([1]), "axes")]


def _model(nodes, outputs, functions=(), imports=IMPORTS):
    graph = helper.make_graph(nodes, "g", _inputs(), [helper.make_tensor_value_info(n, F32, s) for n, s in outputs],
                              initializer=_constants())
    return helper.make_model(graph, opset_imports=imports, ir_version=IR_VERSION, functions=list(functions))


def _scatter(data="data", out="scattered", name="scatter", reduction="sum"):
    return dialect_node("ScatterElementsUpdate", [data, "indices", "updates", "axis"], [out], name,
                        reduction=reduction, use_init_val=1)


def _dialect_left(model) -> list[str]:
    def walk(nodes):
        for node in nodes:
            if node.domain == DOMAIN:
                yield node.op_type
            for attribute in node.attribute:
                for sub in ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else attribute.graphs):
                    yield from walk(sub.node)
    return list(walk(model.graph.node)) + [t for f in model.functions for t in walk(f.node)]


def _lowers_exactly(model, expected_kept=0):
    """Lower; no dialect node left anywhere; plain onnxruntime gives the custom ops' results."""
    expected = run_dialect(model, FEEDS)
    lowered, report = convert(model, to="standard")
    assert len(report.kept) == expected_kept, report.to_table()
    if not expected_kept:
        assert not _dialect_left(lowered)
        onnx.checker.check_model(lowered, full_check=True)
        assert_same(run_standard(lowered, FEEDS), expected)
    return lowered, report, expected


# Subgraphs --------------------------------------------------------------------------------------------------


def _loop_model():
    """Loop twice: carried = ScatterElementsUpdate(carried, outer indices/updates/axis) in the body."""
    body = helper.make_graph(
        [_scatter("carried", "next", "in_loop"), helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("carried", F32, [4, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("next", F32, [4, 3])])
    trips = numpy_helper.from_array(np.array(2, np.int64), "trips")
    loop = helper.make_node("Loop", ["trips", "", "data"], ["out"], body=body)
    model = _model([loop], [("out", [4, 3])])
    model.graph.initializer.append(trips)
    return model


def _scan_model():
    """Scan over the rows of data: each row's L2 norm (ReduceL2 in the body) and a running sum."""
    body = helper.make_graph(
        [helper.make_node("Add", ["total_in", "row"], ["total_out"]),
         dialect_node("ReduceL2", ["row", "zero_axes"], ["norm"], "in_scan", keep_dims=1)], "body",
        [helper.make_tensor_value_info("total_in", F32, [3]), helper.make_tensor_value_info("row", F32, [3])],
        [helper.make_tensor_value_info("total_out", F32, [3]), helper.make_tensor_value_info("norm", F32, [1])],
        initializer=[numpy_helper.from_array(np.array([0]), "zero_axes")])
    zeros = numpy_helper.from_array(np.zeros(3, np.float32), "zeros")
    scan = helper.make_node("Scan", ["zeros", "data"], ["total", "norms"], body=body, num_scan_inputs=1)
    model = _model([scan], [("total", [3]), ("norms", [4, 1])])
    model.graph.initializer.append(zeros)
    return model


@pytest.mark.parametrize("build", [_loop_model, _scan_model], ids=["Loop", "Scan"])
def test_dialect_nodes_in_loop_and_scan_bodies_are_lowered(build):
    _, report, _ = _lowers_exactly(build())
    assert [e.action for e in report.nodes] == ["lowered"]


def test_standard_nodes_in_an_if_branch_are_raised_and_lowered_back():
    branch = helper.make_graph([helper.make_node("ScatterElements", ["data", "indices", "updates"], ["branch_out"],
                                                 axis=0, reduction="add")], "then", [],
                               [helper.make_tensor_value_info("branch_out", F32, [4, 3])])
    other = helper.make_graph([helper.make_node("Identity", ["data"], ["other_out"])], "else", [],
                              [helper.make_tensor_value_info("other_out", F32, [4, 3])])
    flag = numpy_helper.from_array(np.array(True), "flag")
    model = _model([helper.make_node("If", ["flag"], ["out"], then_branch=branch, else_branch=other)],
                   [("out", [4, 3])], imports=[helper.make_opsetid("", 18)])
    model.graph.initializer.append(flag)
    expected = run_standard(model, FEEDS)
    raised, report = convert(model, to="openvino")
    assert [e.action for e in report.nodes] == ["raised"]
    assert _dialect_left(raised) == ["ScatterElementsUpdate"]
    register_schemas()
    onnx.checker.check_model(raised, full_check=True)
    assert_same(run_dialect(raised, FEEDS), expected)
    lowered, _ = convert(raised, to="standard")
    assert not _dialect_left(lowered)
    assert_same(run_standard(lowered, FEEDS), expected)


# Model-local functions --------------------------------------------------------------------------------------


def _block(name="Block", inner_call=None):
    """ai.example.Block(data, indices, updates) = ReduceL2(ScatterElementsUpdate sum on axis 0, axes [1]), the
    axis and axes Constant nodes of the body."""
    nodes = [helper.make_node("Constant", [], ["axis"], value=numpy_helper.from_array(np.array(0, np.int64))),
             helper.make_node("Constant", [], ["axes"], value_ints=[1]),
             _scatter("data", "scattered", "f_scatter"),
             dialect_node("ReduceL2", ["scattered", "axes"], ["norm"], "f_norm", keep_dims=0)]
    if inner_call:
        nodes = [helper.make_node(inner_call, ["data", "indices", "updates"], ["norm"], domain=EXAMPLE)]
    imports = IMPORTS + ([helper.make_opsetid(EXAMPLE, 1)] if inner_call else [])
    return helper.make_function(EXAMPLE, name, ["data", "indices", "updates"], ["norm"], nodes, imports, [])


def _calling(function_name, functions):
    call = helper.make_node(function_name, ["data", "indices", "updates"], ["out"], domain=EXAMPLE)
    return _model([call], [("out", [4])], functions, imports=IMPORTS + [helper.make_opsetid(EXAMPLE, 1)])


def test_dialect_nodes_inside_a_function_are_lowered():
    lowered, report, _ = _lowers_exactly(_calling("Block", [_block()]))
    assert [e.name for e in report.nodes] == ["f_scatter", "f_norm"]
    function = lowered.functions[0]
    assert {o.domain: o.version for o in function.opset_import} == {"": 18}
    assert not [n for n in function.node if n.domain == DOMAIN]


def test_nested_functions_are_lowered_and_the_session_runs_the_dialect_model():
    model = _calling("Outer", [_block("Outer", inner_call="Block"), _block()])
    expected = run_dialect(model, FEEDS)  # the session inlines the functions that hold dialect nodes
    np.testing.assert_allclose(expected[0], np.linalg.norm(_reference_scatter(), axis=1), rtol=1e-6)
    _lowers_exactly(model)
    assert_same(onnx_bridge.InferenceSession(model).run(None, FEEDS), expected, rtol=4e-6)


def _reference_scatter():
    out = DATA.copy()
    np.add.at(out, (INDICES, np.arange(3)[None, :].repeat(3, 0)), UPDATES)
    return out


def test_function_called_with_different_types_keeps_its_dialect_nodes():
    model = _calling("Block", [_block()])
    second = helper.make_node("Block", ["data64", "indices", "updates64"], ["out64"], domain=EXAMPLE)
    model.graph.node.extend([helper.make_node("Cast", ["data"], ["data64"], to=TensorProto.DOUBLE),
                             helper.make_node("Cast", ["updates"], ["updates64"], to=TensorProto.DOUBLE), second])
    model.graph.output.append(helper.make_tensor_value_info("out64", TensorProto.DOUBLE, [4]))
    lowered, report = convert(model, to="standard")
    assert [e.action for e in report.nodes] == ["kept", "kept"], report.to_table()
    assert any("typed differently" in note for note in report.notes)
    assert "unknown" in report.nodes[0].reason
    expected = run_dialect(model, FEEDS)
    assert_same(onnx_bridge.InferenceSession(lowered, lower=False).run(None, FEEDS), expected)


def test_attribute_referring_to_the_function_keeps_the_node():
    function = _block()
    reduction = helper.make_attribute("reduction", "")
    reduction.ref_attr_name = "how"
    del function.node[2].attribute[:]
    function.node[2].attribute.extend([reduction, helper.make_attribute("use_init_val", 1)])
    function.attribute.append("how")
    model = _calling("Block", [function])
    model.graph.node[0].attribute.append(helper.make_attribute("how", "sum"))
    _, report = convert(model, to="standard")
    assert report.nodes[0].action == "kept" and "enclosing function" in report.nodes[0].reason
    assert report.nodes[1].action == "lowered"


def test_standard_nodes_inside_a_function_are_raised():
    function = helper.make_function(EXAMPLE, "Std", ["data", "indices", "updates"], ["out"],
                                    [helper.make_node("ScatterElements", ["data", "indices", "updates"], ["out"],
                                                      axis=0, reduction="mul")], [helper.make_opsetid("", 18)], [])
    call = helper.make_node("Std", ["data", "indices", "updates"], ["out"], domain=EXAMPLE)
    model = _model([call], [("out", [4, 3])], [function],
                   imports=[helper.make_opsetid("", 18), helper.make_opsetid(EXAMPLE, 1)])
    expected = run_standard(model, FEEDS)
    raised, report = convert(model, to="openvino")
    assert [e.action for e in report.nodes] == ["raised"]
    assert {o.domain: o.version for o in raised.functions[0].opset_import}[DOMAIN] == DIALECT_OPSET
    assert {o.domain: o.version for o in raised.opset_import}[DOMAIN] == DIALECT_OPSET
    register_schemas()
    onnx.checker.check_model(raised, full_check=True)
    assert_same(run_dialect(raised, FEEDS), expected)


# as_functions together with functions and the session ------------------------------------------------------


def test_as_functions_and_the_session():
    """Main-graph nodes become calls; nodes inside a function body are lowered in place (onnxruntime does not
    resolve overloaded calls nested in function bodies). The session runs the result either way."""
    model = _calling("Block", [_block()])
    model.graph.node.append(_scatter(name="main_scatter", out="main_out", reduction="max"))
    model.graph.output.append(helper.make_tensor_value_info("main_out", F32, [4, 3]))
    expected = run_dialect(model, FEEDS)
    converted, report = convert(model, to="standard", as_functions=True)
    assert [e.action for e in report.nodes] == ["function", "lowered", "lowered"], report.to_table()
    assert "not as a function" in report.nodes[1].reason
    definitions = [f for f in converted.functions if is_definition(f)]
    assert [(f.name, f.overload) for f in definitions] == [("ScatterElementsUpdate", "v12_max_init1")]
    assert [n.overload for n in converted.graph.node] == ["", "v12_max_init1"]
    onnx.checker.check_model(converted, full_check=True)
    assert_same(run_standard(converted, FEEDS), expected, rtol=4e-6)
    for lower in (True, False):  # the session: lowered again, or every call run by the custom kernel
        assert_same(onnx_bridge.InferenceSession(converted, lower=lower).run(None, FEEDS), expected, rtol=4e-6)
    plain, _ = convert(converted, to="standard")
    assert not _dialect_left(plain) and not any(is_definition(f) for f in plain.functions)
    back, _ = convert(converted, to="openvino")
    assert [f.name for f in back.functions] == ["Block"] and list(back.graph.node) == list(model.graph.node)


def test_keep_all_leaves_calls_and_functions_alone():
    model = _model([_scatter(out="out")], [("out", [4, 3])])
    converted, _ = convert(model, to="standard", as_functions=True)
    kept, report = convert(converted, to="standard", mode="keep-all")
    assert kept.functions == converted.functions and report.counts == {"kept": 1}
    again, report = convert(converted, to="standard", as_functions=True)  # idempotent
    assert again.functions == converted.functions and list(again.graph.node) == list(converted.graph.node)
