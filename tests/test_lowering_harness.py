"""Shared by the converter tests: build small models, run them (dialect through onnx_bridge.InferenceSession,
standard through plain onnxruntime), compare, and check converted models (checker, opsets, IR, domains)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

import onnx_bridge
from converters import convert
from custom_ops._schemas import register_schemas
from custom_ops._types import BFLOAT16, NUMPY_TO_ONNX
from onnx_bridge._feeds import graph_input, graph_output
from onnx_bridge.comparison import EXACT, tolerance_of
from onnx_bridge.comparison import assert_same as comparison_assert
from onnx_bridge.config import DOMAIN, IR_VERSION, TARGET_OPSET



def model_of(nodes, values: dict, constants=(), outputs=None, opset: int = 18, dialect_opset: int | None = 12,
             symbolic: bool = False):
    """A model running `nodes` (NodeProtos). `values` maps input names to arrays; names in `constants` become
    initializers, the others graph inputs (bfloat16 ones fed as float32 and Cast inside). `outputs` maps
    output names to (dtype, shape) (bfloat16 outputs are Cast to float32 and renamed `<name>_f32`).
    symbolic=True gives the graph inputs symbolic dims (shapes unknown to the converter)."""
    graph_nodes, inputs, initializers, feeds = [], [], [], {}
    for name, value in values.items():
        value = np.asarray(value)
        code = NUMPY_TO_ONNX[value.dtype]
        if name in constants:
            if value.dtype == BFLOAT16:
                initializers.append(helper.make_tensor(name, code, value.shape, value.view(np.uint16).tolist()))
            else:
                initializers.append(numpy_helper.from_array(value, name))
            continue
        shape = [f"{name}_{i}" for i in range(value.ndim)] if symbolic else list(value.shape)
        info, feed, casts = graph_input(name, value, shape)
        inputs.append(info)
        feeds.update(feed)
        graph_nodes.extend(casts)
    graph_nodes.extend(nodes)
    graph_outputs = []
    for name, (dtype, shape) in (outputs or {}).items():
        info, casts = graph_output(name, NUMPY_TO_ONNX[np.dtype(dtype)], shape)
        graph_outputs.append(info)
        graph_nodes.extend(casts)
    graph = helper.make_graph(graph_nodes, "test", inputs, graph_outputs, initializer=initializers)
    imports = [helper.make_opsetid("", opset)]
    if dialect_opset:
        imports.append(helper.make_opsetid(DOMAIN, dialect_opset))
    return helper.make_model(graph, opset_imports=imports, ir_version=IR_VERSION), feeds


def dialect_node(op_type, inputs, outputs, name="node", **attributes):
    return helper.make_node(op_type, inputs, outputs, name=name, domain=DOMAIN, **attributes)


def run_dialect(model, feeds):
    """Every dialect node through the custom ops (the session's own lowering switched off: it is what is
    being tested)."""
    return onnx_bridge.InferenceSession(model, lower=False).run(None, feeds)


def run_standard(model, feeds):
    """Plain onnxruntime, two intra-op threads (so that parallel kernels really run in parallel)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def run_reference(model, feeds):
    return run_dialect(model, feeds) if any(n.domain == DOMAIN for n in model.graph.node) \
        else run_standard(model, feeds)


def assert_same(got, expected, *, rtol: float = 0.0, what: str = ""):
    """Integers and bools bit-exact; floats equal (NaN == NaN, -0.0 == 0.0) or within rtol (bfloat16 exact)."""
    assert len(got) == len(expected), what
    for index, (a, b) in enumerate(zip(got, expected)):
        tolerance = tolerance_of(rtol=rtol) if np.asarray(b).dtype.kind == "f" else EXACT
        comparison_assert([a], [b], tolerance, f"{what} output {index}")


def check_model(model: onnx.ModelProto, *, dialect_free: bool = True):
    """What every converted model must satisfy."""
    register_schemas()
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == IR_VERSION
    if dialect_free:
        assert not [n for n in model.graph.node if n.domain == DOMAIN]
        assert DOMAIN not in {o.domain for o in model.opset_import}


def lower(model, **options):
    lowered, report = convert(model, to="standard", **options)
    return lowered, report


def with_output_shapes(model, arrays):
    """Give the graph outputs the shapes of `arrays` (onnx.checker wants output shapes)."""
    for value, array in zip(model.graph.output, arrays):
        shape = value.type.tensor_type.shape
        shape.Clear()
        shape.SetInParent()
        for dim in array.shape:
            shape.dim.add().dim_value = dim
    return model


def opset(model, domain=""):
    return {o.domain: o.version for o in model.opset_import}.get(domain)


def lower_and_compare(model, feeds, *, rtol=0.0, expect_actions=None, strict=False):
    """Run the dialect model, lower it, check it and compare. Returns (report, lowered)."""
    expected = run_dialect(model, feeds)
    with_output_shapes(model, expected)
    lowered, report = lower(model, strict=strict)
    actions = [e.action for e in report.nodes]
    if expect_actions is not None:
        assert actions == list(expect_actions), report.to_table()
    check_model(lowered, dialect_free="kept" not in actions)
    if "kept" not in actions:
        assert opset(lowered) >= TARGET_OPSET
    assert_same(run_reference(lowered, feeds), expected, rtol=rtol, what=report.to_table())
    return report, lowered
