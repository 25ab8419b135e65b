"""Quantized 3-D convolutions (the QDQ form): 2-D integer convolutions per output frame, the time taps
stacked into channels (rules/quantization/conv3d.py), bit for bit the values of the 3-D QLinearConv they replace and
within one level of OpenVINO CPU's int8 execution."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

ov = pytest.importorskip("openvino")
import openvino.opset13 as op  # noqa: E402

from converters.openvino_ir import _importer, import_ir  # noqa: E402
from tests.helpers.int8 import unsaturating_int8_weights  # noqa: E402
from tests.helpers.ir_cases import op_types, ort_optimized, ort_session  # noqa: E402

pytestmark = pytest.mark.openvino
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
#: the output FakeQuantize's step: ours and OpenVINO's int8 kernels round the bias and near-ties apart
OUT_STEP = 0.05


def _step_limits(low_level, high_level, step):
    return [np.float32(low_level * step), np.float32(high_level * step)] * 2


def _conv3d_model(shape, kernel, strides, pads_begin, pads_end, dilations, relu, seed, outputs=8):
    """x -> FakeQuantize -> 3-D Convolution with nncf's per-channel int8 weights (Convert(i8) * scale) -> bias
    Add [-> Relu] -> FakeQuantize (as nncf quantizes r3d_18)."""
    rng = np.random.default_rng(seed)
    x = op.parameter(list(shape), ov.Type.f32, name="x")
    data = op.fake_quantize(x, *[op.constant(v) for v in _step_limits(-128, 127, 0.02)], 256)
    q = unsaturating_int8_weights(rng, (outputs, shape[1], *kernel))
    scale = (np.geomspace(0.02, 0.5, outputs).reshape(outputs, 1, 1, 1, 1) / 127).astype(np.float32)
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
    conv = op.convolution(data, weights, strides, pads_begin, pads_end, dilations)
    out = op.add(conv, op.constant(rng.standard_normal((1, outputs, 1, 1, 1)).astype(np.float32)))
    if relu:
        out = op.relu(out)
    limits = _step_limits(0, 255, OUT_STEP) if relu else _step_limits(-128, 127, OUT_STEP)
    return ov.Model([op.fake_quantize(out, *[op.constant(v) for v in limits], 256)], [x])


#: (data shape (-1: dynamic batch), kernel, strides, pads begin, pads end, dilations, Relu), the number of
#: 2-D convolutions: r3d_18's 3x3x3 block and 3x7x7/(1,2,2) stem, a stride in time, its 1x1x1 downsample, a
#: dilation in time, asymmetric time padding, a kernel longer than the clip, a convolution over space only
#: (1xkxk, as in mc3_18 / r2plus1d_18: the frames as the batch, one convolution), a dynamic batch
CASES = {
    "r3d_block": (((1, 4, 4, 6, 6), (3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1], True), 4),
    "r3d_stem": (((1, 3, 4, 12, 12), (3, 7, 7), [1, 2, 2], [1, 3, 3], [1, 3, 3], [1, 1, 1], True), 4),
    "time_stride": (((1, 4, 5, 6, 6), (3, 3, 3), [2, 2, 2], [1, 1, 1], [1, 1, 1], [1, 1, 1], True), 3),
    "downsample": (((1, 4, 4, 6, 6), (1, 1, 1), [2, 2, 2], [0, 0, 0], [0, 0, 0], [1, 1, 1], False), 2),
    "time_dilation": (((1, 4, 6, 5, 5), (3, 3, 3), [1, 1, 1], [2, 1, 1], [2, 1, 1], [2, 1, 1], True), 6),
    "asymmetric_time_pads": (((1, 4, 4, 5, 5), (3, 3, 3), [1, 1, 1], [2, 1, 0], [0, 0, 1], [1, 1, 1], False), 4),
    "kernel_longer_than_clip": (((1, 4, 2, 5, 5), (3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1], True), 2),
    "space_only": (((1, 4, 3, 6, 6), (1, 3, 3), [1, 2, 2], [0, 1, 1], [0, 1, 1], [1, 1, 1], True), 1),
    "space_only_dynamic_batch": (((-1, 4, 3, 5, 5), (1, 3, 3), [1, 1, 1], [0, 1, 1], [0, 1, 1], [1, 1, 1], False), 1),
    "dynamic_batch": (((-1, 4, 3, 5, 5), (3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1], True), 3),
}


@pytest.mark.parametrize("case_id", list(CASES))
def test_quantized_conv3d_runs_as_2d_integer_convolutions_per_frame(tmp_path, monkeypatch, case_id):
    case, convolutions = CASES[case_id]
    model = _conv3d_model(*case, seed=len(case_id))
    onnx_model = import_ir(model)
    ops = [n.op_type for n in onnx_model.graph.node]
    assert ops.count("Conv") == convolutions and ops.count("QuantizeLinear") == 1 + convolutions
    session, optimized = ort_optimized(onnx_model, tmp_path / "frames.onnx")
    fused = [n for n in optimized.node if n.op_type == "QLinearConv"]
    assert len(fused) == convolutions and "Conv" not in op_types(optimized)
    assert all(len(onnx.helper.get_attribute_value(next(a for a in n.attribute if a.name == "pads"))) == 4
               for n in fused)  # 2-D
    monkeypatch.setattr(_importer, "quantized_frames_as_channels", lambda *args: 0)
    plain, optimized = ort_optimized(import_ir(model), tmp_path / "plain.onnx")
    assert op_types(optimized).count("QLinearConv") == 1  # the 3-D form it replaces
    shape = [2 if d == -1 else d for d in case[0]]
    for seed in range(3):
        feeds = {"x": (np.random.default_rng(seed).standard_normal(shape) * 1.5).astype(np.float32)}
        got = session.run(None, feeds)[0]
        np.testing.assert_array_equal(got, plain.run(None, feeds)[0])
        want = np.asarray(ov.Core().compile_model(model, "CPU", CONFIG)(feeds)[0])
        np.testing.assert_allclose(got, want, rtol=0, atol=OUT_STEP * 1.01)  # one level at most (near-ties)
        assert np.mean(got == want) > 0.9


def test_quantized_conv3d_with_output_frames_reading_padding_only_stays_3d(tmp_path):
    """An output frame reading the time padding only has no integer convolution to run: the 3-D form stays."""
    model = _conv3d_model((1, 4, 2, 5, 5), (3, 3, 3), [1, 1, 1], [3, 1, 1], [0, 1, 1], [1, 1, 1], False, seed=4)
    onnx_model = import_ir(model)
    assert [n.op_type for n in onnx_model.graph.node].count("Conv") == 1
    session, optimized = ort_optimized(onnx_model, tmp_path / "plain.onnx")
    assert op_types(optimized).count("QLinearConv") == 1
    feeds = {"x": (np.random.default_rng(1).standard_normal((1, 4, 2, 5, 5)) * 1.5).astype(np.float32)}
    want = np.asarray(ov.Core().compile_model(model, "CPU", CONFIG)(feeds)[0])
    np.testing.assert_allclose(session.run(None, feeds)[0], want, rtol=0, atol=OUT_STEP * 1.01)


def test_quantized_conv3d_whose_output_is_read_twice_stays_3d():
    """A convolution whose float output another node reads too (no QuantizeLinear right after) is not an
    integer convolution in onnxruntime: left as it is."""
    model = _conv3d_model((1, 4, 3, 5, 5), (3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1], True, seed=5)
    result = model.get_results()[0].input_value(0).get_node()  # the output FakeQuantize
    relu = result.input_value(0).get_node()
    extra = ov.Model([result.output(0), op.sigmoid(relu.output(0)).output(0)], model.get_parameters())
    onnx_model = import_ir(extra)
    assert [n.op_type for n in onnx_model.graph.node].count("Conv") == 1


def test_quantized_conv3d_resnet_block_keeps_channels_last_between_convolutions(tmp_path, monkeypatch):
    """An r3d_18 block (conv, conv, residual Add of the block's input, Relu, each quantized): the layout moves
    between the integer convolutions cancel in onnxruntime (two Transposes left: into and out of the block),
    and the values are the 3-D form's, bit for bit."""
    rng = np.random.default_rng(23)
    x = op.parameter([1, 8, 4, 6, 6], ov.Type.f32, name="x")
    block_input = op.fake_quantize(x, *[op.constant(v) for v in _step_limits(-128, 127, 0.02)], 256)

    def conv(data, relu):
        q = unsaturating_int8_weights(rng, (8, 8, 3, 3, 3))
        scale = (np.geomspace(0.002, 0.01, 8).reshape(8, 1, 1, 1, 1)).astype(np.float32)
        weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
        out = op.add(op.convolution(data, weights, [1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1]),
                     op.constant(rng.standard_normal((1, 8, 1, 1, 1)).astype(np.float32)))
        out = op.relu(out) if relu else out
        limits = _step_limits(0, 255, OUT_STEP) if relu else _step_limits(-128, 127, OUT_STEP)
        return op.fake_quantize(out, *[op.constant(v) for v in limits], 256)

    added = op.relu(op.add(conv(conv(block_input, True), False), block_input))
    model = ov.Model([op.fake_quantize(added, *[op.constant(v) for v in _step_limits(0, 255, OUT_STEP)], 256)], [x])
    session, optimized = ort_optimized(import_ir(model), tmp_path / "frames.onnx")
    ops = op_types(optimized)
    assert ops.count("QLinearConv") == 8 and ops.count("QLinearAdd") == 1 and ops.count("Transpose") == 2
    monkeypatch.setattr(_importer, "quantized_frames_as_channels", lambda *args: 0)
    plain = ort_session(import_ir(model))
    for seed in range(2):
        feeds = {"x": (np.random.default_rng(seed).standard_normal((1, 8, 4, 6, 6)) * 1.5).astype(np.float32)}
        got = session.run(None, feeds)[0]
        np.testing.assert_array_equal(got, plain.run(None, feeds)[0])
        want = np.asarray(ov.Core().compile_model(model, "CPU", CONFIG)(feeds)[0])
        # a level apart here and there (bias and near-ties rounded apart), two layers deep: measured 0.27%
        assert np.linalg.norm(got - want) <= 0.01 * np.linalg.norm(want) and np.mean(got == want) > 0.9


@pytest.mark.parametrize("read_twice", [False, True])
def test_kernel_of_a_rewritten_conv3d_is_released(monkeypatch, read_twice):
    """Once its taps are copied into the 2-D kernels, the 3-D int8 kernel no node reads is passed to the
    importer's release (its memory-mapped pages dropped: the weights are not resident twice); a kernel a kept
    convolution still reads is not."""
    released, rewrite = [], _importer.quantized_frames_as_channels
    monkeypatch.setattr(_importer, "quantized_frames_as_channels",
                        lambda index, outputs, shapes, release: rewrite(index, outputs, shapes, released.append))
    model = _conv3d_model(*CASES["r3d_block"][0], seed=3)
    if read_twice:  # a second reader of the float output: that convolution stays 3-D (test above)
        result = model.get_results()[0].input_value(0).get_node()
        relu = result.input_value(0).get_node()
        model = ov.Model([result.output(0), op.sigmoid(relu.output(0)).output(0)], model.get_parameters())
    onnx_model = import_ir(model)
    kernels = [a for a in released if a.ndim == 5 and a.dtype == np.int8]
    assert [n.op_type for n in onnx_model.graph.node].count("Conv") == (1 if read_twice else 4)
    assert [k.shape for k in kernels] == ([] if read_twice else [(8, 4, 3, 3, 3)])
