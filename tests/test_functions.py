"""convert(..., as_functions=True): every dialect op configuration with an exact lowering, on the generated
cases (tests/generated_cases.py), stays a dialect node defined by a model-local function. The model passes
onnx.checker full_check, plain onnxruntime (no extension library) gives the custom ops' results, and
to="openvino" gives the original dialect nodes back."""
from __future__ import annotations

import generated_cases as gc
import numpy as np
import onnx
import pytest
from test_lowering_harness import assert_same, model_of, run_dialect, run_standard, with_output_shapes
from test_lowering_reduce_l2 import RTOL

import onnx_bridge
from converters import convert
from converters.functions import is_definition
from custom_ops._schemas import register_schemas
from custom_ops._types import is_float
from onnx_bridge.config import DOMAIN

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


def cases_model(op: str, keep=lambda case: True):
    """One model with a node per generated case of `op` (axis/axes as initializers); (model, feeds,
    {node name: group label}, {node name: case})."""
    nodes, values, constants, outputs, labels, cases = [], {}, [], {}, {}, {}
    for group, (label, group_cases) in enumerate(gc.all_groups(op)):
        for index, case in enumerate(group_cases):
            if not keep(case):
                continue
            prefix = f"g{group}c{index}_"
            inputs = []
            for port, value in case.inputs.items():
                values[prefix + port] = value
                inputs.append(prefix + port)
                if port in CONSTANT_PORTS:
                    constants.append(prefix + port)
            node_outputs = _outputs(case, prefix)
            outputs.update(node_outputs)
            nodes.append(onnx.helper.make_node(op, inputs, list(node_outputs), name=prefix + "node",
                                               domain=DOMAIN, **case.attributes))
            labels[prefix + "node"], cases[prefix + "node"] = label, case
    model, feeds = model_of(nodes, values, constants=constants, outputs=outputs)
    return model, feeds, labels, cases


def _rtol(op, case):
    dtype = case.inputs["data"].dtype
    return RTOL.get(dtype, 0.0) if op == gc.L2 and is_float(dtype) else 0.0


@pytest.mark.parametrize("op", [gc.SEU, gc.SU, gc.L2, gc.UNIQUE])
def test_every_exact_configuration_round_trips_as_functions(op):
    # Which nodes lack an exact lowering: they must stay plain dialect nodes, reported as kept.
    full, _, _, cases = cases_model(op)
    _, report = convert(full, to="standard", as_functions=True)
    kept = {entry.name for entry in report.kept}
    assert kept == {name for name, case in cases.items() if _without_exact_lowering(case)}, report.to_table()
    assert {entry.action for entry in report.nodes} <= {"function", "kept"}

    model, feeds, labels, cases = cases_model(op, keep=lambda case: not _without_exact_lowering(case))
    expected = run_dialect(model, feeds)  # the bridge's custom ops
    with_output_shapes(model, expected)  # onnx.checker wants output shapes
    converted, report = convert(model, to="standard", as_functions=True)
    assert report.counts == {"function": len(cases)}, report.to_table()

    # The dialect's identity stays: same nodes, now calls of functions of the dialect's domain.
    calls = list(converted.graph.node)
    assert [(n.op_type, n.domain, n.name) for n in calls] == [(n.op_type, n.domain, n.name) for n in model.graph.node
                                                               if n.domain == DOMAIN] or \
        [n.domain for n in calls if n.op_type == op] == [DOMAIN] * len(cases)
    defined = {(f.domain, f.name, f.overload): f for f in converted.functions}
    assert all(is_definition(f) for f in converted.functions)
    for node in calls:
        if node.domain == DOMAIN:
            function = defined[(node.domain, node.op_type, node.overload)]
            assert not [n for n in function.node if n.domain == DOMAIN]
    # One function per configuration, not per node: shapes never split a group (only types, axes, ...).
    groups = {labels[n.name] for n in calls if n.domain == DOMAIN}
    assert len(converted.functions) <= len(groups)
    if op == gc.SEU:  # every reduction x use_init_val is there
        assert {f.overload.split("_", 1)[1].rsplit("_", 1)[0] if f.overload.count("_") > 2 else
                f.overload.split("_", 1)[1] for f in converted.functions} >= \
            {f"{r}_init{u}" for r in gc.REDUCTIONS for u in (0, 1)}

    onnx.checker.check_model(converted, full_check=True)
    got = run_standard(converted, feeds)  # plain onnxruntime: no extension library registered
    names = [o.name for o in model.graph.output]
    for name, a, b in zip(names, got, expected):
        node = name.split("_", 1)[0] + "_node"
        case = cases[node]
        assert_same([a], [b], rtol=_rtol(op, case), what=f"{labels[node]} {name}")

    # Back to the dialect: the original nodes, no function left.
    back, back_report = convert(converted, to="openvino")
    assert not back.functions
    assert list(back.graph.node) == list(model.graph.node)
    assert not back_report.nodes or all(e.action == "unchanged" for e in back_report.nodes)
