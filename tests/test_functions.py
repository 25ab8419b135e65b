"""convert(..., as_functions=True): every dialect op configuration with an exact lowering, on the generated
cases (tests/generated_cases.py), stays a dialect node defined by a model-local function. The model passes
onnx.checker full_check, plain onnxruntime (no extension library) gives the custom ops' results, and
to="openvino" gives the original dialect nodes back."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import generated_cases as gc
import numpy as np
import onnx
import pytest
from test_lowering_harness import assert_same, model_of, run_dialect, run_standard, with_output_shapes
from test_lowering_reduce_l2 import RTOL

import onnx_bridge
from converters import convert
from converters.functions import is_definition
from custom_ops._types import is_float
from onnx_bridge.config import DOMAIN

def _onnxruntime_resolves_overloads() -> bool:
    """Whether the installed onnxruntime calls the overload a node names (IR 10 FunctionProto.overload):
    1.32 does; 1.25 (our lowest supported) runs another overload's body. Probe: two overloads of one
    function, Identity and Neg."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    def body(overload, op_type):
        return helper.make_function("t", "F", ["x"], ["y"], [helper.make_node(op_type, ["x"], ["y"])],
                                    [helper.make_opsetid("", 18)], overload=overload)

    graph = helper.make_graph(
        [helper.make_node("F", ["x"], ["a"], domain="t", overload="neg"),
         helper.make_node("F", ["x"], ["b"], domain="t", overload="same")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in "ab"])
    model = helper.make_model(graph, functions=[body("neg", "Neg"), body("same", "Identity")], ir_version=10,
                              opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("t", 1)])
    try:
        a, b = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, {"x": np.ones(1, np.float32)})
    except Exception:  # noqa: BLE001 - a refusal is a "no" too
        return False
    return bool(a[0] == -1 and b[0] == 1)


#: Plain-onnxruntime runs of as_functions models need overload resolution (docs/converter.md).
needs_overloads = pytest.mark.skipif(not _onnxruntime_resolves_overloads(),
                                     reason="this onnxruntime does not resolve function overloads "
                                            "(1.32 does; 1.25 runs another overload's body)")

CONSTANT_PORTS = ("axis", "axes")
OUTPUT_TYPES = {"i32": np.int32, "i64": np.int64}


def _without_exact_lowering(case) -> bool:
    """The configurations that stay plain dialect nodes (docs/converter.md, lowering table)."""
    dtype = case.inputs["data"].dtype
    if case.op == gc.SEU:
        return case["reduction"] == "mean" and dtype in (np.int64, np.uint64)
    if case.op == gc.L2:
        return dtype in (np.int32, np.uint32, np.int64, np.uint64) and case.inputs["axes"].size > 0
    return False


def _outputs(case, prefix):
    dtype = case.inputs["data"].dtype
    if case.op != gc.UNIQUE:
        return {f"{prefix}out": (dtype, None)}
    kinds = (case["index_element_type"], case["index_element_type"], case["count_element_type"])
    return {f"{prefix}y": (dtype, None), **{f"{prefix}{name}": (OUTPUT_TYPES[kind], None)
                                            for name, kind in zip(("indices", "inverse", "counts"), kinds)}}


def cases_model(groups, keep=lambda case: True):
    """One model with a node per case of `groups` ((label, cases) pairs; axis/axes as initializers);
    (model, feeds, {node name: group label}, {node name: case})."""
    nodes, values, constants, outputs, labels, cases = [], {}, [], {}, {}, {}
    for label, group_cases in groups:
        for index, case in enumerate(group_cases):
            if not keep(case):
                continue
            prefix = f"g{len(set(labels.values()) | {label}) - 1}c{index}_"
            inputs = []
            for port, value in case.inputs.items():
                values[prefix + port] = value
                inputs.append(prefix + port)
                if port in CONSTANT_PORTS:
                    constants.append(prefix + port)
            node_outputs = _outputs(case, prefix)
            outputs.update(node_outputs)
            nodes.append(onnx.helper.make_node(case.op, inputs, list(node_outputs), name=prefix + "node",
                                               domain=DOMAIN, **case.attributes))
            labels[prefix + "node"], cases[prefix + "node"] = label, case
    model, feeds = model_of(nodes, values, constants=constants, outputs=outputs)
    return model, feeds, labels, cases


def _rtol(case):
    dtype = case.inputs["data"].dtype
    return RTOL.get(dtype, 0.0) if case.op == gc.L2 and is_float(dtype) else 0.0


#: Groups per model: onnxruntime's session setup grows faster than linearly with the graph (measured:
#: 784 ScatterUpdate calls 45 s in one model, 0.16 s per 8).
CHUNK = 6
OPS = (gc.SEU, gc.SU, gc.L2, gc.UNIQUE)
GROUPS = {op: list(gc.all_groups(op)) for op in OPS}
CHUNKS = [(op, start) for op in OPS for start in range(0, len(GROUPS[op]), CHUNK)
          if not all(_without_exact_lowering(c) for _, cases in GROUPS[op][start:start + CHUNK] for c in cases)]


def _configuration(case) -> tuple:
    """What a function body may depend on: attributes, element types, ranks, constant axis/axes."""
    return (tuple(sorted(case.attributes.items())),
            tuple((port, value.dtype.str, value.ndim) for port, value in case.inputs.items()),
            tuple(repr(case.inputs[port].tolist()) for port in CONSTANT_PORTS if port in case.inputs))


@pytest.mark.parametrize("op", [gc.SEU, gc.L2])  # ScatterUpdate and Unique always have one
def test_configurations_without_exact_lowering_stay_plain(op):
    model, _, _, cases = cases_model(GROUPS[op], keep=_without_exact_lowering)
    assert cases
    converted, report = convert(model, to="standard", as_functions=True)
    assert report.counts == {"kept": len(cases)}, report.to_table()
    assert not converted.functions and list(converted.graph.node) == list(model.graph.node)


@needs_overloads
@pytest.mark.parametrize("op,start", CHUNKS, ids=[f"{op}-{start // CHUNK}" for op, start in CHUNKS])
def test_exact_configurations_round_trip_as_functions(op, start):
    groups = GROUPS[op][start:start + CHUNK]
    model, feeds, labels, cases = cases_model(groups, keep=lambda case: not _without_exact_lowering(case))
    expected = run_dialect(model, feeds)  # the bridge's custom ops
    with_output_shapes(model, expected)  # onnx.checker wants output shapes
    converted, report = convert(model, to="standard", as_functions=True)
    assert report.counts == {"function": len(cases)}, report.to_table()

    # The dialect's identity stays: the same nodes (op type, domain, attributes, inputs), now calls.
    calls = [n for n in converted.graph.node if n.domain == DOMAIN]
    originals = [n for n in model.graph.node if n.domain == DOMAIN]
    assert [(n.op_type, n.name, list(n.input), list(n.output), list(n.attribute)) for n in calls] == \
        [(n.op_type, n.name, list(n.input), list(n.output), list(n.attribute)) for n in originals]
    defined = {(f.domain, f.name, f.overload): f for f in converted.functions}
    assert all(is_definition(f) for f in converted.functions)
    for node in calls:
        body = defined[(node.domain, node.op_type, node.overload)].node
        assert not [n for n in body if n.domain == DOMAIN]
    # One function per configuration, not per node: shapes never split one.
    assert len(converted.functions) <= len({_configuration(case) for case in cases.values()})

    onnx.checker.check_model(converted, full_check=True)
    got = run_standard(converted, feeds)  # plain onnxruntime: no extension library registered
    for output, a, b in zip(model.graph.output, got, expected):
        node = output.name.split("_", 1)[0] + "_node"
        assert_same([a], [b], rtol=_rtol(cases[node]), what=f"{labels[node]} {output.name}")

    # Back to the dialect: the original nodes, no function left.
    back, back_report = convert(converted, to="openvino")
    assert not back.functions
    assert list(back.graph.node) == list(model.graph.node)
    assert all(e.action == "unchanged" for e in back_report.nodes)


def test_every_scatter_elements_update_configuration_is_a_function():
    """Each reduction x use_init_val gets its own function (the overload names them)."""
    groups = [(label, cases[:1]) for label, cases in gc.seu_groups() if label.startswith("float32-")]
    model, _, _, _ = cases_model(groups)
    converted, report = convert(model, to="standard", as_functions=True)
    assert set(report.counts) == {"function"}
    overloads = {f.overload.rsplit("_", 1)[0] if f.overload.count("_") > 2 else f.overload
                 for f in converted.functions}
    assert overloads == {f"v12_{r}_init{u}" for r in gc.REDUCTIONS for u in (0, 1)}


@needs_overloads
def test_cli_as_functions(tmp_path, capsys):
    from onnx_bridge import cli

    groups = [(label, cases[:2]) for label, cases in gc.seu_groups() if label.startswith("int8-")][:4]
    model, feeds, _, _ = cases_model(groups)
    expected = run_dialect(model, feeds)
    with_output_shapes(model, expected)
    source, out = tmp_path / "dialect.onnx", tmp_path / "portable.onnx"
    onnx.save(model, str(source))
    assert cli.main(["convert", str(source), "-o", str(out), "--as-functions"]) == 0
    assert "8 nodes: 8 function" in capsys.readouterr().out
    converted = onnx.load(str(out))
    # A fresh interpreter, without the dialect's schemas: only the functions define the ops.
    checked = subprocess.run([sys.executable, "-c", "import onnx, sys; onnx.checker.check_model(sys.argv[1], "
                              "full_check=True)", str(out)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert converted.functions and all(n.overload for n in converted.graph.node if n.domain == DOMAIN)
    for a, b in zip(run_standard(converted, feeds), expected):
        assert_same([a], [b])
    assert cli.main(["convert", str(source), "-o", str(out), "--to", "openvino", "--as-functions"]) == 2
    assert "as_functions applies to to='standard' only" in capsys.readouterr().err


@needs_overloads
@pytest.mark.parametrize("name", ["gnn_aggregation", "kv_cache", "voxel_pooling"])
def test_gallery_models_as_functions(name):
    """The gallery models: every dialect node a call, plain onnxruntime agrees with the custom ops (float
    ReduceL2 to its summation-order tolerance), and the dialect nodes come back unchanged."""
    folder = Path(__file__).resolve().parents[1] / "models"
    model = onnx.load(str(folder / f"{name}.onnx"))
    feeds = dict(np.load(folder / f"{name}_inputs.npz"))
    expected = onnx_bridge.InferenceSession(model, lower=False).run(None, feeds)
    converted, report = convert(model, to="standard", as_functions=True)
    assert set(report.counts) == {"function"}, report.to_table()
    onnx.checker.check_model(converted, full_check=True)
    assert_same(run_standard(converted, feeds), expected, rtol=4e-6 if name == "voxel_pooling" else 0.0)
    back, _ = convert(converted, to="openvino")
    assert [n for n in back.graph.node if n.domain == DOMAIN] == [n for n in model.graph.node if n.domain == DOMAIN]
