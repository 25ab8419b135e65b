"""Squeeze-excitation blocks (regnet, mobilenet_v3) in forms onnxruntime keeps in its NCHWc layout
(rules/_nchwc.py): ReduceMean over H, W as GlobalAveragePool, the gate Resized to the map and multiplied at equal
shapes, an identity depthwise Conv before the gate's activation. Checked against OpenVINO CPU and against the
broadcasting form imported before (non-finite inputs included: NaN where it has NaN)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

ov = pytest.importorskip("openvino")
from openvino import opset1, opset4, opset5  # noqa: E402

from converters.openvino_ir import import_ir  # noqa: E402
from tests.helpers.ir_cases import ACCUMULATION, assert_same, ort_optimized, ort_session, ov_run  # noqa: E402

pytestmark = pytest.mark.openvino

F32 = np.float32
SPATIAL = dict(strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1])
#: name -> (data shape, channels, SE hidden width, activation of the map, gate)
CASES = {
    "regnet_relu_sigmoid_hidden_12": ((1, 8, 9, 9), 16, 12, "relu", "sigmoid"),
    "mobilenet_hswish_hsigmoid": ((1, 8, 7, 7), 16, 8, "hswish", "hsigmoid"),
    "batch_2_hidden_16": ((2, 4, 6, 5), 32, 16, "relu", "sigmoid"),
}


def _conv(x, weights, bias, pads=SPATIAL):
    return opset1.add(opset1.convolution(x, opset1.constant(weights), **pads), opset1.constant(bias))


def _se_model(case: str, *, seed: int, map_activation: str | None = None, keep_dims: bool = True):
    """Parameter -> Convolution + bias -> activation -> SE (ReduceMean, 1x1 Convolution + Relu, 1x1
    Convolution, gate) -> Multiply (map by gate) -> 1x1 Convolution."""
    shape, channels, hidden, activation, gate = CASES[case]
    activation = map_activation or activation
    rng = np.random.default_rng(seed)

    def weights(*dims, scale=0.5):
        return (rng.standard_normal(dims) * scale).astype(F32)

    data = opset1.parameter(list(shape), ov.Type.f32, name="data")
    x = _conv(data, weights(channels, shape[1], 3, 3), weights(1, channels, 1, 1))
    x = {"relu": opset1.relu, "hswish": opset4.hswish, "swish": opset4.swish}[activation](x)
    pointwise = dict(strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1])
    pooled = opset1.reduce_mean(x, opset1.constant(np.array([2, 3], np.int64)), keep_dims=keep_dims)
    if not keep_dims:
        pooled = opset1.unsqueeze(pooled, opset1.constant(np.array([2, 3], np.int64)))
    squeezed = opset1.relu(_conv(pooled, weights(hidden, channels, 1, 1), weights(1, hidden, 1, 1), pointwise))
    logits = _conv(squeezed, weights(channels, hidden, 1, 1, scale=2), weights(1, channels, 1, 1), pointwise)
    scale = opset1.sigmoid(logits) if gate == "sigmoid" else opset5.hsigmoid(logits)
    gated = opset1.multiply(x, scale)
    y = _conv(gated, weights(8, channels, 1, 1), weights(1, 8, 1, 1), pointwise)
    return ov.Model([y.output(0)], [data], case)


def _feeds(case: str, seed: int, non_finite: bool = False) -> dict:
    data = (np.random.default_rng(seed + 1).standard_normal(CASES[case][0]) * 2).astype(F32)
    if non_finite:  # an inf in the last image: it spreads through its map, mean and gate (inf, NaN), not further
        data[-1, 0, 1, 2] = np.inf
    return {"data": data}


def _broadcast_form(model: onnx.ModelProto) -> onnx.ModelProto:
    """The form imported before: GlobalAveragePool as ReduceMean over H, W, the gate's Resize and identity
    Conv taken out (the Mul then broadcasts)."""
    graph = model.graph
    axes = helper.make_tensor("hw_axes", onnx.TensorProto.INT64, [2], [2, 3])
    rename, nodes = {}, []
    for node in graph.node:
        if node.op_type == "GlobalAveragePool":
            nodes.append(helper.make_node("ReduceMean", [node.input[0], "hw_axes"], list(node.output), keepdims=1))
        elif node.op_type == "Resize" or (node.op_type == "Conv" and "identity" in node.input[1]):
            rename[node.output[0]] = node.input[0]
        else:
            nodes.append(node)
    for node in nodes:
        node.input[:] = [rename.get(name, name) for name in node.input]
    copy = helper.make_model(helper.make_graph(nodes, graph.name, graph.input, graph.output,
                                               list(graph.initializer) + [axes]),
                             opset_imports=model.opset_import, ir_version=model.ir_version)
    return copy


@pytest.mark.parametrize("non_finite", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_se_block_keeps_the_blocked_layout(case, non_finite, tmp_path):
    seed = sorted(CASES).index(case)
    feeds = _feeds(case, seed, non_finite)
    model = import_ir(_se_model(case, seed=seed))
    types = [n.op_type for n in model.graph.node]
    assert "ReduceMean" not in types and {"GlobalAveragePool", "Resize"} <= set(types)
    session, optimized = ort_optimized(model, tmp_path / "optimized.onnx")
    got = session.run(None, feeds)
    before = ort_session(_broadcast_form(model)).run(None, feeds)
    # sums of up to 9·C products: the summation order's rounding scales with the largest terms, not each output
    finite = before[0][np.isfinite(before[0])]
    tolerance = dict(rtol=ACCUMULATION["rtol"], atol=4 * ACCUMULATION["atol"] * float(np.abs(finite).max(initial=1)))
    assert_same(got, before, tolerance, "the NCHWc forms vs the broadcasting form")  # NaN where NaN
    if non_finite:  # onnxruntime's and OpenVINO's convolutions differ on non-finite inputs, either form
        assert not np.isfinite(got[0][-1]).all() and np.isfinite(got[0][:-1]).all()
    else:
        assert_same(got, ov_run(_se_model(case, seed=seed), feeds), tolerance, "onnxruntime vs OpenVINO")
    reorders = _reorders(optimized)
    if reorders is not None:  # onnxruntime ran its NCHWc transformer (AVX2 / AVX-512): no reorder inside the SE
        assert reorders <= 2 < _reorders(ort_optimized(_broadcast_form(model), tmp_path / "before.onnx")[1])


def _reorders(optimized) -> int | None:
    """Layout reorders in onnxruntime's optimized graph, None where onnxruntime made no NCHWc node."""
    if not any(n.domain == "com.microsoft.nchwc" for n in optimized.node):
        return None
    return sum(n.op_type in ("ReorderInput", "ReorderOutput") for n in optimized.node)


@pytest.mark.parametrize("variant", ["after_swish", "no_keep_dims"])
def test_se_forms_only_where_the_map_is_blocked(variant):
    """After efficientnet's Swish (onnxruntime runs it in NCHW) the SE keeps ReduceMean and the broadcasting
    Mul (measured faster there); a ReduceMean without keep_dims stays ReduceMean."""
    case = "regnet_relu_sigmoid_hidden_12"
    kwargs = dict(map_activation="swish") if variant == "after_swish" else dict(keep_dims=False)
    model = import_ir(_se_model(case, seed=3, **kwargs))
    types = [n.op_type for n in model.graph.node]
    assert "ReduceMean" in types and "GlobalAveragePool" not in types
    assert ("Resize" in types) == (variant == "no_keep_dims")
    feeds = _feeds(case, 3)
    assert_same(ort_session(model).run(None, feeds), ov_run(_se_model(case, seed=3, **kwargs), feeds), ACCUMULATION,
                "onnxruntime vs OpenVINO")
