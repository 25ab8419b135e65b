"""INT8 (QDQ form): convolutions followed by a ReLU6 (Clip) before their output FakeQuantize (mobilenet_v2) get
nncf's per-channel int8 weights as DequantizeLinear, so onnxruntime's WeightBiasQuantization has nothing to
re-quantize per tensor; values against OpenVINO CPU."""
from __future__ import annotations

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
import openvino.opset13 as op  # noqa: E402
from onnx import numpy_helper  # noqa: E402

from converters.openvino_ir import import_ir  # noqa: E402
from tests.helpers.int8 import unsaturating_int8_weights  # noqa: E402
from tests.helpers.ir_cases import op_types, ort_optimized, ort_session  # noqa: E402

pytestmark = pytest.mark.openvino
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


def _limits(low_level, high_level, step, shape=()):
    low, high = (np.full(shape, v, np.float32) for v in (low_level * step, high_level * step))
    return [op.constant(v) for v in (low, high, low, high)]


def _relu6_model(depthwise: bool, out_step: float, seed: int):
    """x -> FakeQuantize (per channel with one zero point before a depthwise convolution, as nncf does) ->
    Convolution / GroupConvolution 3x3 with nncf's int8 weights (Convert(i8) * per-channel scale) -> bias Add
    -> Clamp(0, 6) -> FakeQuantize [0, 255 * out_step]."""
    rng = np.random.default_rng(seed)
    channels = 8
    x = op.parameter([1, channels, 7, 7], ov.Type.f32, name="x")
    if depthwise:
        step = rng.uniform(0.005, 0.03, (1, channels, 1, 1)).astype(np.float32)
        low, high = (-128 * step).astype(np.float32), (127 * step).astype(np.float32)
        data = op.fake_quantize(x, *[op.constant(v) for v in (low, high, low, high)], 256)
        q = unsaturating_int8_weights(rng, (channels, 1, 1, 3, 3))
        # per-channel ranges far apart: a per-tensor re-quantization loses the small channels
        scale = (np.geomspace(0.02, 4, channels).reshape(channels, 1, 1, 1, 1) / 127).astype(np.float32)
        weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
        conv = op.group_convolution(data, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    else:
        data = op.fake_quantize(x, *_limits(-128, 127, 0.02), 256)
        q = unsaturating_int8_weights(rng, (channels, channels, 3, 3))
        scale = (np.geomspace(0.02, 4, channels).reshape(channels, 1, 1, 1) / 127 / 8).astype(np.float32)
        weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
        conv = op.convolution(data, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    biased = op.add(conv, op.constant(rng.uniform(-0.5, 1.5, (1, channels, 1, 1)).astype(np.float32)))
    clamped = op.clamp(biased, 0.0, 6.0)
    out = op.fake_quantize(clamped, *_limits(0, 255, out_step), 256)
    return ov.Model([out], [x]), rng


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
@pytest.mark.parametrize("out_step", [0.02, 0.03], ids=["clip_absorbed", "clip_kept"])
def test_conv_clip_quantize_keeps_per_channel_int8_weights(tmp_path, depthwise, out_step):
    """Conv -> bias -> Clip(0, 6) -> FakeQuantize: the Conv reads DequantizeLinear weights with one scale per
    output channel, and no convolution onnxruntime runs has per-tensor weights (its WeightBiasQuantization
    re-quantizes float weights on the path Conv -> Relu/Clip -> QuantizeLinear per tensor); within one output
    level of OpenVINO CPU, mostly equal. With the quantized range [0, 7.65] wider than the Clip, onnxruntime
    cannot drop the Clip: the values must stay right there too."""
    model, rng = _relu6_model(depthwise, out_step, seed=3 + depthwise)
    onnx_model = import_ir(model)
    producer = {o: n for n in onnx_model.graph.node for o in n.output}
    values = {t.name: numpy_helper.to_array(t) for t in onnx_model.graph.initializer}
    [conv] = [n for n in onnx_model.graph.node if n.op_type == "Conv"]
    weights = producer[conv.input[1]]
    assert weights.op_type == "DequantizeLinear" and values[weights.input[1]].size == 8
    assert len(conv.input) == 3  # the bias inside the Conv
    session, graph = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    fused = [n for n in graph.node if n.op_type == "QLinearConv"]
    for node in fused:  # QLinearConv(x, x_scale, x_zp, w, w_scale, ...): per-channel weight scales
        assert initializers[node.input[4]].size == 8
    for node in graph.node:
        if node.op_type == "Conv" and node.input[1] in initializers:  # a float Conv keeps the exact weights
            assert len(np.unique(initializers[node.input[1]])) > 256
    compiled = ov.Core().compile_model(model, "CPU", CONFIG)
    for case in range(3):
        x = np.random.default_rng(case).standard_normal((1, 8, 7, 7)).astype(np.float32)
        got, want = session.run(None, {"x": x})[0], np.asarray(compiled({"x": x})[0])
        np.testing.assert_allclose(got, want, rtol=0, atol=out_step * 1.01)  # one level at most (near-ties)
        assert np.mean(got == want) > 0.95


def _fq(node, step, low=0, high=255):
    return op.fake_quantize(node, *_limits(low, high, step), 256)


def _conv(data, rng, in_channels, out_channels, kernel=1, relu=True):
    """nncf's int8 weights (Convert(i8) * per-channel scale), a bias Add and a Relu."""
    q = unsaturating_int8_weights(rng, (out_channels, in_channels, kernel, kernel))
    scale = (rng.uniform(0.3, 2, (out_channels, 1, 1, 1)) / 127 / in_channels).astype(np.float32)
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
    pad = [kernel // 2] * 2
    conv = op.add(op.convolution(data, weights, [1, 1], pad, pad, [1, 1]),
                  op.constant(rng.uniform(-0.2, 0.5, (1, out_channels, 1, 1)).astype(np.float32)))
    return op.relu(conv) if relu else conv


def _inception(unified: bool):
    """x -> FakeQuantize -> two convolution branches, each FakeQuantized (the same limits when `unified`, as
    nncf writes a Concat's inputs) -> Concat -> 1x1 convolution -> FakeQuantize; and Concat -> MaxPool -> 1x1
    convolution -> FakeQuantize (googlenet's inception block)."""
    rng = np.random.default_rng(8)
    x = op.parameter([1, 4, 8, 8], ov.Type.f32, name="x")
    data = _fq(x, 0.02, -128, 127)
    branches = [_fq(_conv(data, rng, 4, 4, kernel), 0.01 if unified else 0.01 + 0.005 * kernel)
                for kernel in (1, 3)]
    joined = op.concat(branches, 1)
    pooled = op.max_pool(joined, [1, 1], [1, 1], [1, 1], [1, 1], [3, 3]).output(0)
    outs = [_fq(_conv(joined, rng, 8, 6), 0.01), _fq(_conv(pooled, rng, 8, 6), 0.01)]
    return ov.Model(outs, [x])


def _channel_shuffle():
    """Two FakeQuantized branches -> Concat -> Reshape [1, 2, 4, 6, 6] -> Transpose -> Reshape -> Split in two
    -> a convolution on each half -> FakeQuantize (shufflenet's channel shuffle)."""
    rng = np.random.default_rng(9)
    x = op.parameter([1, 4, 6, 6], ov.Type.f32, name="x")
    data = _fq(x, 0.02, -128, 127)
    joined = op.concat([_fq(_conv(data, rng, 4, 4, kernel), 0.01) for kernel in (1, 3)], 1)
    grouped = op.reshape(joined, op.constant(np.int64([1, 2, 4, 6, 6])), False)
    shuffled = op.reshape(op.transpose(grouped, op.constant(np.int64([0, 2, 1, 3, 4]))),
                          op.constant(np.int64([1, 8, 6, 6])), False)
    halves = op.split(shuffled, op.constant(np.int64(1)), 2)
    outs = [_fq(_conv(halves.output(i), rng, 4, 4, 3), 0.01) for i in range(2)]
    return ov.Model(outs, [x])


def _check_against_openvino(model, session, step=0.01):
    compiled = ov.Core().compile_model(model, "CPU", CONFIG)
    shape = list(model.inputs[0].get_shape())
    for case in range(3):
        x = np.random.default_rng(case).standard_normal(shape).astype(np.float32)
        want = [np.asarray(v) for v in compiled({"x": x}).values()]
        for got, expected in zip(session.run(None, {"x": x}), want):
            np.testing.assert_allclose(got, expected, rtol=0, atol=step * 1.01)  # one level at most
            assert np.mean(got == expected) > 0.95


@pytest.mark.parametrize("build", [lambda: _inception(True), _channel_shuffle], ids=["inception", "shuffle"])
def test_convs_after_concat_and_split_run_on_integers(tmp_path, build):
    """The Concat of same-limit FakeQuantize outputs, the MaxPool / Reshape / Transpose / Split after it run on
    the uint8 values with a DequantizeLinear after: every convolution reads a DequantizeLinear, gets nncf's
    per-channel int8 weights, and onnxruntime runs all of them as QLinearConv (none float, no per-tensor
    weights); the values stay within a level of OpenVINO CPU."""
    model = build()
    onnx_model = import_ir(model)
    producer = {o: n for n in onnx_model.graph.node for o in n.output}
    for node in onnx_model.graph.node:
        if node.op_type in ("Concat", "Split", "MaxPool", "Transpose"):
            assert producer[node.input[0]].op_type != "DequantizeLinear", node.op_type
        if node.op_type == "Conv":
            assert producer[node.input[1]].op_type == "DequantizeLinear"
    session, graph = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    fused = [n for n in graph.node if n.op_type == "QLinearConv"]
    assert len(fused) == 4 and not [n for n in graph.node if n.op_type in ("Conv", "FusedConv")]
    assert all(initializers[n.input[4]].size > 1 for n in fused)
    _check_against_openvino(model, session)


def test_concat_of_different_limits_stays_float():
    """Concat inputs quantized with different limits: no integer Concat (one scale cannot hold both); the
    convolutions after it keep float weights, run as float convolutions: the same values as the graph without
    onnxruntime's optimisation, within a level of OpenVINO CPU."""
    model = _inception(False)
    onnx_model = import_ir(model)
    [concat] = [n for n in onnx_model.graph.node if n.op_type == "Concat"]
    producer = {o: n for n in onnx_model.graph.node for o in n.output}
    assert all(producer[i].op_type == "DequantizeLinear" for i in concat.input)
    session = ort_session(onnx_model)
    unfused = ort_session(onnx_model, optimize=False)
    compiled = ov.Core().compile_model(model, "CPU", CONFIG)
    for case in range(3):
        x = np.random.default_rng(case).standard_normal((1, 4, 8, 8)).astype(np.float32)
        want = [np.asarray(v) for v in compiled({"x": x}).values()]
        for got, semantics, expected in zip(session.run(None, {"x": x}), unfused.run(None, {"x": x}), want):
            assert np.mean(got == semantics) > 0.99
            np.testing.assert_allclose(got, expected, rtol=0, atol=0.01 * 1.01)


def test_classifier_after_global_mean_runs_on_integers(tmp_path):
    """Conv -> Relu -> FakeQuantize -> ReduceMean over H, W (no kept dims) -> FakeQuantize -> MatMul by
    FakeQuantized constant weights -> bias Add (shufflenet's head): the 2-D MatMul + Add is lifted to 3-D, so
    onnxruntime runs MatMulIntegerToFloat instead of a float Gemm dequantizing the weights on every call."""
    rng = np.random.default_rng(10)
    x = op.parameter([1, 4, 6, 6], ov.Type.f32, name="x")
    features = _fq(_conv(_fq(x, 0.02, -128, 127), rng, 4, 16, 3), 0.01)
    pooled = _fq(op.reduce_mean(features, op.constant(np.int64([2, 3])), False), 0.005)
    weights = rng.uniform(-1, 1, (16, 10)).astype(np.float32)
    limits = [np.float32(-1.0), np.float32(1.0)] * 2
    quantized = op.fake_quantize(op.constant(weights), *[op.constant(v) for v in limits], 255)
    out = op.add(op.matmul(pooled, quantized, False, False), op.constant(rng.standard_normal(10).astype(np.float32)))
    model = ov.Model([out], [x])
    onnx_model = import_ir(model)
    session, graph = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    ops = op_types(graph)
    assert "MatMulIntegerToFloat" in ops and "Gemm" not in ops and "MatMul" not in ops
    unfused = ort_session(onnx_model, optimize=False)
    compiled = ov.Core().compile_model(model, "CPU", CONFIG)
    for case in range(3):
        feeds = {"x": np.random.default_rng(case).standard_normal((1, 4, 6, 6)).astype(np.float32)}
        got, want = session.run(None, feeds)[0], np.asarray(compiled(feeds)[0])
        assert got.shape == want.shape == (1, 10)
        # the unfused graph's float sums: the same up to their rounding (MatMulIntegerToFloat sums exactly)
        np.testing.assert_allclose(got, unfused.run(None, feeds)[0], rtol=1e-5, atol=1e-5)
        # OpenVINO: a pooled value a level (0.005) apart near a tie moves an output by at most 0.005 * |w|
        np.testing.assert_allclose(got, want, rtol=0, atol=0.005 * 1.01 * np.abs(weights).max() * 16)


def _expand_relu6_depthwise(wide_channel: bool = False):
    """x -> FakeQuantize -> 1x1 Conv (nncf's int8 weights) -> bias -> Clamp(0, 6) -> FakeQuantize per channel,
    zero point 0, the top of every channel's range <= 6 (nncf before a depthwise convolution; `wide_channel`:
    one channel's top at 12, so the Clamp changes its levels) -> depthwise 3x3 -> bias -> FakeQuantize
    (mobilenet_v2's inverted residual)."""
    rng = np.random.default_rng(11)
    x = op.parameter([1, 4, 6, 6], ov.Type.f32, name="x")
    expanded = op.clamp(_conv(_fq(x, 0.02, -128, 127), rng, 4, 8, relu=False), 0.0, 6.0)
    step = (np.float32(6.0) / 255 * rng.uniform(0.3, 1, (1, 8, 1, 1))).astype(np.float32)
    step[0, 0] = np.float32(6.0) / 255
    if wide_channel:
        step[0, 1] = np.float32(12.0) / 255
    low, high = np.zeros_like(step), (255 * step).astype(np.float32)
    data = op.fake_quantize(expanded, *[op.constant(v) for v in (low, high, low, high)], 256)
    q = unsaturating_int8_weights(rng, (8, 1, 1, 3, 3))
    scale = (rng.uniform(0.5, 2, (8, 1, 1, 1, 1)) / 127).astype(np.float32)
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
    conv = op.group_convolution(data, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    biased = op.add(conv, op.constant(rng.uniform(-0.5, 0.5, (1, 8, 1, 1)).astype(np.float32)))
    return ov.Model([_fq(biased, 0.02, -128, 127)], [x])


#: (FOLD_CLIP_DIV_INTO_SCALES, FOLD_REDUNDANT_CLIP) -> (Clip and Div left, QLinearConv count)
_EXPANSION_FORMS = {"default": ((True, False), (False, 1)), "unfolded": ((False, False), (True, 1)),
                    "fold_redundant_clip": ((False, True), (False, 2))}


@pytest.mark.parametrize("form", list(_EXPANSION_FORMS))
def test_expansion_before_depthwise_input_scale(tmp_path, monkeypatch, form):
    """The 1x1 expansion whose ReLU6 output feeds a depthwise convolution's per-channel input scale: by
    default the channels-last integer MatMul with the Div folded into its weight scales and float bias and
    the Clip (no level changes) gone, QuantizeLinear after it; unfolded, Clip and Div stay after the MatMul;
    with FOLD_REDUNDANT_CLIP both convolutions run as QLinearConv. Within a level of OpenVINO CPU each way."""
    from converters.openvino_ir.rules.quantization import depthwise, pointwise

    (scales, clip), (kept, convs) = _EXPANSION_FORMS[form]
    monkeypatch.setattr(pointwise, "FOLD_CLIP_DIV_INTO_SCALES", scales)
    monkeypatch.setattr(depthwise, "FOLD_REDUNDANT_CLIP", clip)
    model = _expand_relu6_depthwise()
    onnx_model = import_ir(model)
    ops = [n.op_type for n in onnx_model.graph.node]
    assert ("Clip" in ops) == kept and ("Div" in ops) == kept
    session, graph = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    fused = op_types(graph)
    assert fused.count("QLinearConv") == convs
    assert ("MatMulIntegerToFloat" in fused) == (convs == 1)
    _check_against_openvino(model, session, step=0.02)


def test_clip_div_fold_keeps_levels(monkeypatch):
    """The Div folded into MatMulIntegerToFloat's scales and bias moves a level only at near-ties of the
    unfolded form (both onnxruntime, fused), on 20 inputs; a Clip that changes some channel's levels (a
    channel's range reaching 12 past ReLU6's 6) stays, and the Div with it."""
    from converters.openvino_ir.rules.quantization import pointwise

    model = _expand_relu6_depthwise()
    sessions = []
    for fold in (True, False):
        monkeypatch.setattr(pointwise, "FOLD_CLIP_DIV_INTO_SCALES", fold)
        sessions.append(ort_session(import_ir(model)))
    differing = total = 0
    for case in range(20):
        feeds = {"x": np.random.default_rng(case).standard_normal((1, 4, 6, 6)).astype(np.float32)}
        folded, unfolded = (s.run(None, feeds)[0] for s in sessions)
        np.testing.assert_allclose(folded, unfolded, rtol=0, atol=0.02 * 1.01)
        differing, total = differing + int(np.sum(folded != unfolded)), total + folded.size
    assert differing <= 0.01 * total
    monkeypatch.setattr(pointwise, "FOLD_CLIP_DIV_INTO_SCALES", True)
    wide = _expand_relu6_depthwise(wide_channel=True)
    ops = [n.op_type for n in import_ir(wide).graph.node]
    assert "Clip" in ops and "Div" in ops
    session = ort_session(import_ir(wide))
    _check_against_openvino(wide, session, step=0.02)
