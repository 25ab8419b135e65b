"""FakeQuantize-1 and compressed weights (u8/i8/u4/i4 + f16 scales, as nncf writes them): OpenVINO vs
onnxruntime on the imported model, and the imported model exported back to IR."""
from __future__ import annotations

import logging

import numpy as np
import onnx
import pytest

ov = pytest.importorskip("openvino")
import openvino.opset13 as op  # noqa: E402

import onnx_bridge  # noqa: E402
from converters.openvino_ir import import_ir, to_openvino  # noqa: E402
from converters.openvino_ir._types import unpack_nibbles  # noqa: E402
from onnx_bridge.errors import ConversionError  # noqa: E402
from tests.helpers.int8 import unsaturating_int8_weights  # noqa: E402
from tests.helpers.ir_cases import op_types, ort_optimized, ort_session  # noqa: E402

pytestmark = pytest.mark.openvino
#: f32 throughout; no dynamic quantization of activations (the CPU plugin's default for compressed weights on
#: some CPUs, an approximation: docs/llm.md)
CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}
RNG = np.random.default_rng(21)
#: MatMul: the two runtimes accumulate in different orders
ACCUMULATION = dict(rtol=1e-5, atol=1e-5)


def _run_ov(model, feeds, **config):
    compiled = ov.Core().compile_model(model, "CPU", dict(CONFIG, **config))
    result = compiled(feeds)
    return [np.asarray(result[o]) for o in compiled.outputs]


def _run_onnx(onnx_model, feeds):
    return onnx_bridge.InferenceSession(onnx_model.SerializeToString()).run(None, feeds)


def _reference(x, il, ih, ol, oh, levels):
    """OpenVINO's reference formula in float32 (fake_quantize.hpp), numpy broadcasting."""
    x, il, ih, ol, oh = (np.asarray(v, np.float32) for v in (x, il, ih, ol, oh))
    steps = np.float32(levels - 1)
    value = np.round((x - il) / (ih - il) * steps) / steps * (oh - ol) + ol
    return np.where(x <= np.minimum(il, ih), ol, np.where(x > np.maximum(il, ih), oh, value)).astype(np.float32)


FQ_CASES = {
    "per_tensor_256": dict(shape=(2, 3, 4, 4), limits=[(-1.5,), (1.5,), (-1.5,), (1.5,)], levels=256),
    "per_tensor_u8_output": dict(shape=(2, 3, 4, 4), limits=[(0.0,), (2.0,), (0.0,), (255.0,)], levels=256),
    "per_channel_input": dict(shape=(2, 3, 4, 4), per_channel=(1, 3, 1, 1), levels=255),
    "per_channel_weights": dict(shape=(4, 3, 3, 3), per_channel=(4, 1, 1, 1), levels=255),
    "levels_16": dict(shape=(3, 8), limits=[(-1.0,), (2.0,), (-3.0,), (6.0,)], levels=16),
    "levels_2": dict(shape=(3, 8), limits=[(-0.5,), (0.5,), (0.0,), (1.0,)], levels=2),
    # input_low > input_high: the CPU plugin outputs output_low everywhere, its reference follows the
    # formula (docs/openvino_ir.md); the import follows the reference
    "inverted_limits": dict(shape=(3, 8), limits=[(1.0,), (-1.0,), (-2.0,), (2.0,)], levels=256, cpu=False),
    "ties": dict(shape=(1, 9), limits=[(0.0,), (8.0,), (0.0,), (8.0,)], levels=5,
                 data=np.float32([[0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 8.0, 9.0]])),
}


def _fq_arrays(case):
    shape = case["shape"]
    x = case.get("data")
    if x is None:
        x = (RNG.standard_normal(shape) * 1.5).astype(np.float32)
    if "limits" in case:
        limits = [np.float32(v[0]).reshape(()) for v in case["limits"]]
    else:
        lows = -np.abs(RNG.standard_normal(case["per_channel"])).astype(np.float32) - 0.1
        highs = np.abs(RNG.standard_normal(case["per_channel"])).astype(np.float32) + 0.1
        limits = [lows, highs, lows * 2, highs * 2]
    return x, limits


@pytest.mark.parametrize("case_id", list(FQ_CASES))
def test_fake_quantize_follows_openvino(case_id):
    case = FQ_CASES[case_id]
    x, limits = _fq_arrays(case)
    data = op.parameter(list(x.shape), ov.Type.f32, name="x")
    fq = op.fake_quantize(data, *[op.constant(v) for v in limits], case["levels"])
    model = ov.Model([fq], [data])
    got = _run_onnx(import_ir(model, int8="exact"), {"x": x})[0]
    want = _reference(x, *limits, case["levels"])
    np.testing.assert_array_equal(got, want)
    # OpenVINO's own reference (constant folding of the same op on a Constant input)
    folded = ov.Model([op.fake_quantize(op.constant(x), *[op.constant(v) for v in limits], case["levels"])], [])
    np.testing.assert_array_equal(_run_ov(folded, {})[0], want)
    if not case.get("cpu", True):
        return
    # OpenVINO's CPU plugin: equal or (measured) one quantization step off on rounding ties, where its
    # precomputed scale/shift rounds differently; never more
    cpu = _run_ov(model, {"x": x})[0]
    step = np.abs((np.asarray(limits[3]) - np.asarray(limits[2])) / (case["levels"] - 1))
    assert np.all(np.abs(cpu - want) <= np.broadcast_to(step, want.shape) * 1.0001)
    back = _run_ov(to_openvino(import_ir(model, int8="exact")), {"x": x})[0]
    assert np.all(np.abs(back - want) <= np.broadcast_to(step, want.shape) * 1.0001)


def test_unpack_nibbles():
    packed = np.array([0x21, 0xF8, 0x07], np.uint8)
    assert unpack_nibbles(packed, False, (5,)).tolist() == [1, 2, 8, 15, 7]
    assert unpack_nibbles(packed, True, (5,)).tolist() == [1, 2, -8, -1, 7]


def _compressed(mode, group_size=-1):
    nncf = pytest.importorskip("nncf")
    logging.getLogger("nncf").setLevel(logging.ERROR)
    x = op.parameter([3, 64], ov.Type.f32, name="x")
    w1 = op.constant(RNG.standard_normal((64, 64)).astype(np.float32))
    w2 = op.constant(RNG.standard_normal((32, 64)).astype(np.float32))
    model = ov.Model([op.matmul(op.relu(op.matmul(x, w1, False, True)), w2, False, True)], [x])
    extra = {"ratio": 1.0, "all_layers": True, "group_size": group_size} if "INT4" in mode else {}
    return nncf.compress_weights(model, mode=getattr(nncf.CompressWeightsMode, mode), **extra)


@pytest.mark.parametrize("mode,group_size", [("INT8_ASYM", -1), ("INT8_SYM", -1), ("INT4_ASYM", 32),
                                             ("INT4_SYM", 32), ("INT4_ASYM", -1)])
def test_compressed_weights_match_openvino(mode, group_size):
    model = _compressed(mode, group_size)
    types = {n.get_output_element_type(0).get_type_name() for n in model.get_ordered_ops()
             if n.get_type_name() == "Constant"}
    assert types & {"u8", "i8", "u4", "i4"}
    x = RNG.standard_normal((3, 64)).astype(np.float32)
    want = _run_ov(model, {"x": x})[0]
    onnx_model = import_ir(model)
    assert not [n for n in onnx_model.graph.node if n.op_type == "Cast" and n.attribute[0].i == 10], \
        "decompression must run in f32"
    np.testing.assert_allclose(_run_onnx(onnx_model, {"x": x})[0], want, **ACCUMULATION)
    np.testing.assert_allclose(_run_ov(to_openvino(onnx_model), {"x": x})[0], want, **ACCUMULATION)


def test_u4_constant_used_by_arithmetic_is_refused():
    x = op.parameter([4], ov.Type.u8, name="x")
    weights = ov.op.Constant(ov.Type.u4, ov.Shape([4]), [1, 2, 3, 4])
    model = ov.Model([op.add(op.convert(weights, "u8"), x), op.reshape(weights, op.constant(np.int64([2, 2])),
                                                                       False)], [x])
    with pytest.raises(ConversionError, match=r"u4 constant read by Reshape"):
        import_ir(model)


# -- the QDQ form (int8="qdq", the default) ----------------------------------------------------------------
def _step_limits(low_level, high_level, step):
    return [np.float32(low_level * step), np.float32(high_level * step)] * 2


#: FakeQuantize configurations that map onto QuantizeLinear/DequantizeLinear: (limits, levels)
QDQ_CASES = {
    "symmetric_256": (_step_limits(-128, 127, 0.01), 256),
    "after_relu_256": (_step_limits(0, 255, 0.004), 256),
    "asymmetric_256": (_step_limits(-37, 218, 0.02), 256),
    "narrow_255": (_step_limits(-127, 127, 0.01), 255),   # Clip, then QDQ
    "levels_16": (_step_limits(-5, 10, 0.1), 16),
    "per_channel_256": ([np.float32([-1.28, 0, -0.64]).reshape(1, 3, 1, 1),
                         np.float32([1.27, 2.55, 1.91]).reshape(1, 3, 1, 1)] * 2, 256),
}
#: ... and those that keep the exact form: (limits, levels, the reason in the notes)
EXACT_CASES = {
    "output_range_differs": ([np.float32(0), np.float32(2), np.float32(0), np.float32(255)], 256,
                             "output range differs from input range"),
    "zero_point_fractional": ([np.float32(-1.003), np.float32(1.5)] * 2, 256, "is not an integer"),
    "range_without_zero": (_step_limits(100, 355, 0.01), 256, "outside [0, 255]"),
    "levels_1024": (_step_limits(-512, 511, 0.01), 1024, "do not fit 8 bits"),
    "high_below_low": (_step_limits(127, -128, 0.01), 256, "input_high <= input_low"),
    "per_channel_output_range_differs": ([np.float32([-1.28, 0, -0.64]).reshape(1, 3, 1, 1),
                                          np.float32([1.27, 2.55, 1.91]).reshape(1, 3, 1, 1),
                                          np.float32([-1.28, 0, -0.64]).reshape(1, 3, 1, 1),
                                          np.float32([1.27, 2.56, 1.91]).reshape(1, 3, 1, 1)], 256,
                                         "output range differs from input range"),
    "per_channel_levels_255": ([np.float32([-1.27, -2.54, -0.127]).reshape(1, 3, 1, 1),
                                np.float32([1.27, 2.54, 0.127]).reshape(1, 3, 1, 1)] * 2, 255, "Clip takes one range"),
}


def _fq_model(limits, levels, shape=(2, 3, 4, 4), constant=None):
    data = op.constant(constant) if constant is not None else op.parameter(list(shape), ov.Type.f32, name="x")
    fq = op.fake_quantize(data, *[op.constant(np.asarray(v, np.float32)) for v in limits], levels)
    if constant is not None:  # weights: FakeQuantize on a constant, read by a convolution
        x = op.parameter([1, constant.shape[1], 5, 5], ov.Type.f32, name="x")
        return ov.Model([op.convolution(x, fq, [1, 1], [0, 0], [0, 0], [1, 1])], [x])
    return ov.Model([fq], [data])


def _data(seed, shape=(2, 3, 4, 4)):
    return (np.random.default_rng(seed).standard_normal(shape) * 1.5).astype(np.float32)


@pytest.mark.parametrize("case_id", list(QDQ_CASES))
def test_fake_quantize_qdq_form(case_id):
    limits, levels = QDQ_CASES[case_id]
    model = _fq_model(limits, levels)
    notes = []
    onnx_model = import_ir(model, notes=notes)
    assert {n.op_type for n in onnx_model.graph.node} >= {"QuantizeLinear", "DequantizeLinear"} and not notes
    x = _data(sum(map(ord, case_id)))
    low, high = np.ravel(limits[0])[0], np.ravel(limits[1])[0]
    x[0, 0, 0, :4] = [low - 1, high + 1, low, high]  # clamping and the limits (channel 0)
    got = _run_onnx(onnx_model, {"x": x})[0]
    want = _reference(x, *limits, levels)
    step = (limits[1] - limits[0]) / (levels - 1)
    # the same levels, up to a level apart on near-ties of the rounding (QuantizeLinear rounds x / scale + Z)
    assert np.all(np.abs(got - want) <= step * 1.0001)
    assert np.mean(np.abs(got - want) <= step * 1e-3) > 0.99
    cpu = _run_ov(model, {"x": x})[0]
    assert np.all(np.abs(got - cpu) <= step * 1.0001)


def test_limit_constants_shared_by_a_qdq_and_an_exact_fake_quantize():
    """Limit Constants read by two FakeQuantize nodes, one that maps onto QDQ and one kept exact (its output
    range differs): the import skips limit constants the QDQ form never reads by name, and must still emit
    them for the exact form, wherever in the walk that reads them."""
    x = op.parameter([2, 3, 4, 4], ov.Type.f32, name="x")
    low, high = (op.constant(np.float32(v)) for v in (-1.28, 1.27))
    mapped = op.fake_quantize(x, low, high, low, high, 256)
    exact = op.fake_quantize(x, low, high, op.constant(np.float32(0)), high, 256)
    model = ov.Model([mapped, exact], [x])
    notes = []
    onnx_model = import_ir(model, notes=notes)
    assert len(notes) == 1 and "output range differs" in notes[0]
    data = _data(5)
    got_mapped, got_exact = _run_onnx(onnx_model, {"x": data})
    step = np.float32(2.55 / 255)
    assert np.all(np.abs(got_mapped - _reference(data, -1.28, 1.27, -1.28, 1.27, 256)) <= step * 1.0001)
    np.testing.assert_array_equal(got_exact, _reference(data, -1.28, 1.27, 0, 1.27, 256))


def test_fake_quantize_qdq_ties_follow_the_grid():
    """Values on the grid and half-way between levels: QuantizeLinear and the reference round half to even."""
    limits, levels = _step_limits(-128, 127, 0.25), 256   # the step 0.25 is exact in binary
    x = (np.arange(-40, 40, dtype=np.float32) * 0.125).reshape(1, 80)
    got = _run_onnx(import_ir(_fq_model(limits, levels, x.shape)), {"x": x})[0]
    np.testing.assert_array_equal(got, _reference(x, *limits, levels))


@pytest.mark.parametrize("case_id", list(EXACT_CASES))
def test_fake_quantize_that_does_not_map_stays_exact(case_id):
    limits, levels, reason = EXACT_CASES[case_id]
    model = _fq_model(limits, levels)
    notes = []
    onnx_model = import_ir(model, notes=notes)
    assert len(notes) == 1 and reason in notes[0] and "kept in the exact form" in notes[0]
    assert "QuantizeLinear" not in {n.op_type for n in onnx_model.graph.node}
    x = _data(len(case_id))
    np.testing.assert_array_equal(_run_onnx(onnx_model, {"x": x})[0], _reference(x, *limits, levels))


def test_fake_quantize_on_weights_becomes_int8_initializer():
    rng = np.random.default_rng(5)
    weights = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    high = np.abs(weights).reshape(4, -1).max(1).reshape(4, 1, 1, 1).astype(np.float32)
    limits = [-high, high, -high, high]
    model = _fq_model(limits, 255, constant=weights)
    onnx_model = import_ir(model)
    dq = [n for n in onnx_model.graph.node if n.op_type == "DequantizeLinear"]
    assert len(dq) == 1 and "QuantizeLinear" not in {n.op_type for n in onnx_model.graph.node}
    stored = {i.name: i for i in onnx_model.graph.initializer}[dq[0].input[0]]
    assert stored.data_type == onnx.TensorProto.INT8
    levels = onnx.numpy_helper.to_array(stored).astype(np.int32)
    want_levels = np.round((weights + high) / (2 * high) * np.float32(254)).astype(np.int32) - 127
    np.testing.assert_array_equal(levels, want_levels)  # the reference's integer levels, symmetric int8
    x = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(_run_onnx(onnx_model, {"x": x})[0], _run_ov(model, {"x": x})[0], **ACCUMULATION)


def _rel_l2(got, want):
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


@pytest.mark.zoo
@pytest.mark.filterwarnings("ignore")
def test_nncf_int8_model_qdq_within_openvino_spread(tmp_path):
    """An nncf INT8 model: the QDQ form computes the FakeQuantize graph's values (onnxruntime without graph
    optimisation vs OpenVINO with its low-precision transformations off), and onnxruntime's integer kernels
    (QLinearConv) stay within OpenVINO's own int8-vs-f32 spread of OpenVINO CPU, floored at 1e-3 (on this tiny
    model OpenVINO's int8 kernels are exact, onnxruntime's quantize the bias: measured 2.5e-4)."""
    pytest.importorskip("nncf")
    from tests.helpers.zoo import nncf_int8_cnn

    model, feeds = nncf_int8_cnn()
    core = ov.Core()
    want = np.asarray(core.compile_model(model, "CPU", CONFIG)(feeds)[0])
    plain = np.asarray(core.compile_model(model, "CPU", dict(CONFIG, LP_TRANSFORMS_MODE=False))(feeds)[0])
    spread = _rel_l2(plain, want)
    exact_model, qdq_model = import_ir(model, int8="exact"), import_ir(model)
    assert "QuantizeLinear" not in {n.op_type for n in exact_model.graph.node}
    np.testing.assert_allclose(_run_onnx(exact_model, feeds)[0], plain, **ACCUMULATION)
    unfused = ort_session(qdq_model, optimize=False)
    np.testing.assert_allclose(unfused.run(None, feeds)[0], plain, **ACCUMULATION)
    session, optimized = ort_optimized(qdq_model, tmp_path / "optimized.onnx")
    ops = op_types(optimized)
    assert "QLinearConv" in ops
    assert _rel_l2(session.run(None, feeds)[0], want) <= max(spread, 1e-3)


def test_convert_cli_int8_forms(tmp_path, capsys):
    import json

    from onnx_bridge.cli import main

    data = op.parameter([1, 3, 4, 4], ov.Type.f32, name="x")
    limits = _step_limits(-128, 127, 0.01)
    mapped = op.fake_quantize(data, *[op.constant(v) for v in limits], 256)
    kept = op.fake_quantize(mapped, *[op.constant(np.float32(v)) for v in (0, 2, 0, 255)], 256)
    xml = tmp_path / "fq.xml"
    ov.save_model(ov.Model([kept], [data]), str(xml))
    for form, quantize_nodes in (("qdq", 1), ("exact", 0)):
        out, report = tmp_path / f"{form}.onnx", tmp_path / f"{form}.json"
        args = ["convert", str(xml), "-o", str(out), "--report", str(report)] + (["--int8", form] if form != "qdq"
                                                                                 else [])
        assert main(args) == 0
        ops = [n.op_type for n in onnx.load(str(out)).graph.node]
        assert ops.count("QuantizeLinear") == quantize_nodes
        notes = json.loads(report.read_text())["notes"]
        assert any("output range differs from input range" in n for n in notes) == (form == "qdq")
    capsys.readouterr()


@pytest.mark.parametrize("conv_is_output", [False, True])
def test_quantized_conv_takes_its_bias(conv_is_output):
    """Conv(QDQ input, int8 weights) + per-channel Add becomes one Conv with a bias (what onnxruntime fuses),
    unless the convolution's own output is needed too."""
    rng = np.random.default_rng(8)
    x = op.parameter([1, 3, 6, 6], ov.Type.f32, name="x")
    limits = _step_limits(-128, 127, 0.02)
    data = op.fake_quantize(x, *[op.constant(v) for v in limits], 256)
    weights = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    wq = op.fake_quantize(op.constant(weights), *[op.constant(np.float32(v)) for v in (-3, 3, -3, 3)], 255)
    conv = op.convolution(data, wq, [1, 1], [0, 0], [0, 0], [1, 1])
    biased = op.add(conv, op.constant(rng.standard_normal((1, 4, 1, 1)).astype(np.float32)))
    model = ov.Model([biased, conv] if conv_is_output else [biased], [x])
    onnx_model = import_ir(model)
    convs = [n for n in onnx_model.graph.node if n.op_type == "Conv"]
    assert len(convs) == 1 and len(convs[0].input) == (2 if conv_is_output else 3)
    feeds = {"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)}
    for got, want in zip(_run_onnx(onnx_model, feeds), _run_ov(model, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _depthwise_model(zero_points, multiplier=1):
    """x -> FakeQuantize per channel (zero points `zero_points`) -> GroupConvolution with nncf's int8 weights
    (Convert(i8) * scale) -> bias Add -> FakeQuantize per tensor."""
    rng = np.random.default_rng(12)
    channels = len(zero_points)
    x = op.parameter([1, channels, 6, 6], ov.Type.f32, name="x")
    step = np.float32([0.011, 0.023, 0.0047, 0.017])[:channels].reshape(1, channels, 1, 1)
    zero = np.float32(zero_points).reshape(1, channels, 1, 1)
    low, high = (-zero * step).astype(np.float32), ((255 - zero) * step).astype(np.float32)
    data = op.fake_quantize(x, *[op.constant(v) for v in (low, high, low, high)], 256)
    q = rng.integers(-127, 128, (channels, multiplier, 1, 3, 3)).astype(np.int8)
    scale = (rng.uniform(0.5, 2, (channels, multiplier, 1, 1, 1)) / 127).astype(np.float32)
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
    conv = op.group_convolution(data, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    biased = op.add(conv, op.constant(rng.standard_normal((1, channels * multiplier, 1, 1)).astype(np.float32)))
    out_limits = _step_limits(-128, 127, 0.02)
    out = op.fake_quantize(biased, *[op.constant(v) for v in out_limits], 256)
    feeds = {"x": rng.standard_normal((1, channels, 6, 6)).astype(np.float32)}
    return ov.Model([out], [x]), feeds


@pytest.mark.parametrize("multiplier", [1, 2])
def test_depthwise_input_quantized_per_channel_runs_as_integer_convolution(tmp_path, multiplier):
    """Per-channel input limits with one zero point before a depthwise convolution: the scales move into the
    weights (Div + per-tensor QDQ), the same integer levels, so onnxruntime fuses QLinearConv; within one
    output level of OpenVINO (rounding near-ties after the sums' float rounding), mostly equal: the float QDQ
    graph of OpenVINO's f32 semantics (LP_TRANSFORMS_MODE off), the integer kernel of OpenVINO's int8 execution
    (with 2 outputs per group both sum pairs of taps in int16 and saturate on AVX2 without VNNI: up to 98
    levels from the semantics)."""
    model, feeds = _depthwise_model([128, 128, 128, 128], multiplier)
    onnx_model = import_ir(model)
    assert "Div" in {n.op_type for n in onnx_model.graph.node}
    semantics = _run_ov(model, feeds, LP_TRANSFORMS_MODE=False)[0]
    unfused = ort_session(onnx_model, optimize=False)
    session, optimized = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    ops = op_types(optimized)
    assert "QLinearConv" in ops
    int8 = _run_ov(model, feeds)[0]
    for got, want in ((unfused.run(None, feeds)[0], semantics), (session.run(None, feeds)[0], int8)):
        np.testing.assert_allclose(got, want, rtol=0, atol=0.02 * 1.01)
        assert np.mean(got == want) > 0.95


def test_depthwise_input_with_per_channel_zero_points_stays_per_channel():
    model, feeds = _depthwise_model([128, 0, 128, 64])
    onnx_model = import_ir(model)
    assert "Div" not in {n.op_type for n in onnx_model.graph.node}
    np.testing.assert_allclose(_run_onnx(onnx_model, feeds)[0], _run_ov(model, feeds)[0], rtol=0, atol=0.02 * 1.01)


def test_conv_after_max_pool_keeps_per_channel_int8_weights(tmp_path):
    """FakeQuantize -> MaxPool -> Conv (resnet's first block): onnxruntime moves the DequantizeLinear across
    the MaxPool and fuses QLinearConv, so the weights must be nncf's per-channel int8 values (given float
    weights onnxruntime re-quantizes them per tensor: several output levels off) and the bias in the Conv."""
    rng = np.random.default_rng(5)
    x = op.parameter([1, 3, 8, 8], ov.Type.f32, name="x")
    data = op.fake_quantize(x, *[op.constant(v) for v in _step_limits(0, 255, 0.02)], 256)
    pooled = op.max_pool(data, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2]).output(0)
    q = unsaturating_int8_weights(rng, (8, 3, 3, 3))
    scale = (np.geomspace(0.05, 4, 8).reshape(8, 1, 1, 1) / 127).astype(np.float32)
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
    conv = op.convolution(pooled, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    biased = op.add(conv, op.constant(rng.standard_normal((1, 8, 1, 1)).astype(np.float32)))
    out = op.fake_quantize(biased, *[op.constant(v) for v in _step_limits(-128, 127, 0.05)], 256)
    model = ov.Model([out], [x])
    onnx_model = import_ir(model)
    producer = {o: n for n in onnx_model.graph.node for o in n.output}
    conv_node = next(n for n in onnx_model.graph.node if n.op_type == "Conv")
    assert len(conv_node.input) == 3 and producer[conv_node.input[1]].op_type == "DequantizeLinear"
    session, optimized = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    ops = op_types(optimized)
    assert "QLinearConv" in ops
    for seed in range(3):
        feeds = {"x": np.random.default_rng(seed).uniform(0, 5, (1, 3, 8, 8)).astype(np.float32)}
        got, want = session.run(None, feeds)[0], _run_ov(model, feeds)[0]
        np.testing.assert_allclose(got, want, rtol=0, atol=0.05 * 1.01)  # one level at most (near-ties)
        assert np.mean(got == want) > 0.95


def _saturating_conv_model(channels, kernel, signed, seed=3):
    """x -> FakeQuantize -> Conv with nncf's int8 weights of magnitude 100-127, one sign per output channel ->
    bias Add -> FakeQuantize: on large inputs two neighbouring products exceed int16 (255 · 127 · 2 > 32767)."""
    rng = np.random.default_rng(seed)
    x = op.parameter([1, channels, 6, 6], ov.Type.f32, name="x")
    limits = _step_limits(-128, 127, 0.02) if signed else _step_limits(0, 255, 0.02)
    data = op.fake_quantize(x, *[op.constant(v) for v in limits], 256)
    q = (rng.choice([-1, 1], (8, 1, 1, 1)) * rng.integers(100, 128, (8, channels, kernel, kernel))).astype(np.int8)
    scale = (np.geomspace(0.05, 4, 8).reshape(8, 1, 1, 1) / 127).astype(np.float32)
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
    pad = [kernel // 2] * 2
    conv = op.convolution(data, weights, [1, 1], pad, pad, [1, 1])
    biased = op.add(conv, op.constant(rng.standard_normal((1, 8, 1, 1)).astype(np.float32)))
    out = op.fake_quantize(biased, *[op.constant(v) for v in _step_limits(-128, 127, 20.0)], 256)
    return ov.Model([out], [x]), {"x": np.random.default_rng(1).uniform(3, 6, (1, channels, 6, 6)).astype(np.float32)}


@pytest.mark.parametrize("channels, kernel, signed", [(8, 1, False), (8, 3, False), (16, 3, True), (6, 3, False)])
def test_integer_convolution_saturates_as_openvino_does(tmp_path, channels, kernel, signed):
    """Without VNNI (AVX2), OpenVINO CPU's u8 x s8 convolution sums neighbouring input channels' products in
    int16 with saturation (vpmaddubsw), and so does onnxruntime's QLinearConv given int8 weights: on data that
    saturates, equal outputs (measured up to 56 levels from the f32 semantics, and unsaturated uint8 weights
    moved resnet18-int8 from 2.1e-2 to 7.3e-2 from OpenVINO). With VNNI neither saturates."""
    model, feeds = _saturating_conv_model(channels, kernel, signed)
    session, optimized = ort_optimized(import_ir(model), tmp_path / "optimized.onnx")
    ops = op_types(optimized)
    assert "QLinearConv" in ops
    np.testing.assert_array_equal(session.run(None, feeds)[0], _run_ov(model, feeds)[0])


def test_saturation_is_a_known_deviation_beyond_7_bit_weights():
    """compare_explain names the int16 saturation for full 8-bit weights on a CPU without VNNI, where OpenVINO
    CPU's int8 output then leaves the f32 semantics (LP_TRANSFORMS_MODE off), and never for nncf's 7-bit
    weights (tests.helpers.int8)."""
    from onnx_bridge import compare_explain

    def deviations(model):
        return {d.id for n in model.get_ordered_ops() if n.get_type_name() == "Convolution"
                for d in compare_explain.matching(n, [])}

    model, feeds = _saturating_conv_model(8, 3, False)
    applies = deviations(model) == {"ov-cpu-int8-pair-sums-saturate"}
    assert applies == compare_explain._cpu_without_vnni()
    if applies:
        assert not np.array_equal(_run_ov(model, feeds)[0], _run_ov(model, feeds, LP_TRANSFORMS_MODE=False)[0])
    assert deviations(_stem_model(3, (8, 8), (3, 3), 2, [1, 1], [1, 1], seed=3)[0]) == set()


def _pointwise_model(kernel=1, also_float=False, bias=True, swish=False):
    """x -> FakeQuantize -> Conv kernel x kernel with nncf's int8 weights -> bias Add -> HSwish -> per-channel
    Multiply -> FakeQuantize: a convolution whose own output is not quantized (mobilenet_v3's expand convs);
    swish: Swish -> FakeQuantize instead (efficientnet's, written Sigmoid and Mul in the QDQ form)."""
    rng = np.random.default_rng(17)
    x = op.parameter([1, 6, 5, 5], ov.Type.f32, name="x")
    data = op.fake_quantize(x, *[op.constant(v) for v in _step_limits(-128, 127, 0.03)], 256)
    q = unsaturating_int8_weights(rng, (8, 6, kernel, kernel))
    scale = (np.geomspace(0.1, 3, 8).reshape(8, 1, 1, 1) / 127).astype(np.float32)
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
    pad = [kernel // 2] * 2
    conv = op.convolution(data, weights, [1, 1], pad, pad, [1, 1])
    biased = op.add(conv, op.constant(rng.standard_normal((1, 8, 1, 1)).astype(np.float32))) if bias else conv
    activated = op.swish(biased) if swish else op.hswish(biased)
    scaled = activated if swish else op.multiply(
        activated, op.constant(rng.uniform(0.5, 2, (1, 8, 1, 1)).astype(np.float32)))
    out = op.fake_quantize(scaled, *[op.constant(v) for v in _step_limits(-128, 127, 0.04)], 256)
    feeds = {"x": rng.standard_normal((1, 6, 5, 5)).astype(np.float32) * 2}
    return ov.Model([out, activated] if also_float else [out], [x]), feeds


@pytest.mark.parametrize("also_float, bias, swish", [(False, True, False), (True, True, False),
                                                     (False, False, False), (False, True, True)])
def test_pointwise_conv_with_float_output_runs_as_integer_matmul(tmp_path, also_float, bias, swish):
    """A 1x1 convolution of quantized data whose output is not quantized becomes Transpose of the uint8 data
    -> com.microsoft MatMulIntegerToFloat (int8 weights, exact integer sums, the bias Add after the convolution
    taken in) -> activation (HSwish, or Swish as Sigmoid and Mul), per-channel Mul and QuantizeLinear channels
    last -> Transpose of the uint8 levels back; the values stay OpenVINO's."""
    model, feeds = _pointwise_model(also_float=also_float, bias=bias, swish=swish)
    onnx_model = import_ir(model)
    ops = [n.op_type for n in onnx_model.graph.node]
    assert "Conv" not in ops and "Add" not in ops and ops.count("Transpose") == 2
    if not also_float:  # (a model output stays channels first)
        producer = {o: n for n in onnx_model.graph.node for o in n.output}
        back = [n for n in onnx_model.graph.node if n.op_type == "Transpose"][-1]
        assert producer[back.input[0]].op_type == "QuantizeLinear"
    [matmul] = [n for n in onnx_model.graph.node if n.op_type == "MatMulIntegerToFloat"]
    assert matmul.domain == "com.microsoft" and len(matmul.input) == (7 if bias else 5)
    session, optimized = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    optimized_ops = set(op_types(optimized))
    assert "MatMulIntegerToFloat" in optimized_ops and not optimized_ops & {"Gemm", "Conv", "Add", "MatMul"}
    got, want = session.run(None, feeds), _run_ov(model, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=0.04 * 1.01)  # one level at most (near-ties)
    assert np.mean(got[0] == want[0]) > 0.95
    if also_float:
        np.testing.assert_allclose(got[1], want[1], **ACCUMULATION)


def test_larger_conv_with_float_output_stays_a_float_conv():
    model, feeds = _pointwise_model(kernel=3)
    onnx_model = import_ir(model)
    assert "MatMul" not in {n.op_type for n in onnx_model.graph.node}
    np.testing.assert_allclose(_run_onnx(onnx_model, feeds)[0], _run_ov(model, feeds)[0], rtol=0, atol=0.04 * 1.01)



def _patch_model(size=(8, 12), block=4, bias=True, seed=23):
    """x -> FakeQuantize -> Conv block x block at stride block (a ViT patch embedding) with nncf's int8 weights
    [-> bias Add] -> flatten -> Transpose to tokens: a float output, not quantized."""
    rng = np.random.default_rng(seed)
    x = op.parameter([2, 3, *size], ov.Type.f32, name="x")
    data = op.fake_quantize(x, *[op.constant(v) for v in _step_limits(-37, 218, 0.02)], 256)
    q = unsaturating_int8_weights(rng, (6, 3, block, block))
    scale = (np.geomspace(0.1, 3, 6).reshape(6, 1, 1, 1) / 127).astype(np.float32)
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
    conv = op.convolution(data, weights, [block, block], [0, 0], [0, 0], [1, 1])
    if bias:
        conv = op.add(conv, op.constant(rng.standard_normal((1, 6, 1, 1)).astype(np.float32)))
    tokens = op.transpose(op.reshape(conv, op.constant(np.array([2, 6, -1], np.int64)), False),
                          op.constant(np.array([0, 2, 1], np.int64)))
    feeds = {"x": rng.uniform(-0.8, 4.5, (2, 3, *size)).astype(np.float32)}
    return ov.Model([tokens], [x]), feeds


@pytest.mark.parametrize("bias", [True, False])
def test_patch_embedding_runs_as_integer_matmul(tmp_path, bias):
    """A Conv of kernel = stride, no padding, over quantized data with a float output becomes SpaceToDepth of
    the uint8 data -> the 1x1 convolution's MatMulIntegerToFloat (exact integer sums); values OpenVINO's."""
    model, feeds = _patch_model(bias=bias)
    onnx_model = import_ir(model)
    ops = [n.op_type for n in onnx_model.graph.node]
    assert "Conv" not in ops and ops.count("SpaceToDepth") == 1 and "MatMulIntegerToFloat" in ops
    session, optimized = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    optimized_ops = set(op_types(optimized))
    assert "MatMulIntegerToFloat" in optimized_ops and not optimized_ops & {"Conv", "MatMul", "Gemm"}
    for seed in range(3):
        data = {"x": np.random.default_rng(seed).uniform(-0.8, 4.5, feeds["x"].shape).astype(np.float32)}
        np.testing.assert_allclose(session.run(None, data)[0], _run_ov(model, data)[0], **ACCUMULATION)


@pytest.mark.parametrize("size, block", [((10, 12), 4), ((8, 8), 1)])
def test_patch_conv_not_in_whole_blocks_stays_a_conv(size, block):
    model, feeds = _patch_model(size=size, block=block)
    onnx_model = import_ir(model)
    assert "SpaceToDepth" not in {n.op_type for n in onnx_model.graph.node}
    np.testing.assert_allclose(_run_onnx(onnx_model, feeds)[0], _run_ov(model, feeds)[0], **ACCUMULATION)


def _flattened_matmul(shape, outputs, rng):
    """Parameter x -> FakeQuantize -> Reshape to a computed 2-D shape [batch, -1] -> MatMul by nncf's int8
    weights (Convert * per-output scale, transposed): a classifier's layer. Returns (x, the MatMul)."""
    x = op.parameter(list(shape), ov.Type.f32, name="x")
    data = op.fake_quantize(x, *[op.constant(v) for v in _step_limits(0, 255, 0.02)], 256)
    batch = op.gather(op.shape_of(data), op.constant(np.array([0], np.int64)), op.constant(np.int64(0)))
    flat = op.reshape(data, op.concat([batch, op.constant(np.array([-1], np.int64))], 0), False)
    q = unsaturating_int8_weights(rng, (outputs, int(np.prod(shape[1:]))))
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32),
                          op.constant((rng.uniform(0.5, 2, (outputs, 1)) / 127).astype(np.float32)))
    return x, op.matmul(flat, weights, False, True)


def _classifier_model(bias_shape, seed=9):
    """_flattened_matmul + bias Add: resnet's classifier head."""
    rng = np.random.default_rng(seed)
    x, matmul = _flattened_matmul((1, 4, 2, 2), 5, rng)
    out = op.add(matmul, op.constant(rng.standard_normal(bias_shape).astype(np.float32)))
    feeds = {"x": rng.uniform(0, 5, (1, 4, 2, 2)).astype(np.float32)}
    return ov.Model([out], [x]), feeds


@pytest.mark.parametrize("bias_shape", [(5,), (1, 5)])
def test_classifier_after_a_computed_flatten_runs_as_integer_matmul(tmp_path, bias_shape):
    """The classifier head is lifted to 3-D (Unsqueeze, bias [1, 1, N], Squeeze) with its int8 weights, so
    onnxruntime fuses MatMulIntegerToFloat (exact integer sums) instead of a float Gemm that would dequantize
    the weights on every call (or, given float weights, read 4x the bytes); the output keeps its shape and
    OpenVINO's values."""
    model, feeds = _classifier_model(bias_shape)
    onnx_model = import_ir(model)
    ops = [n.op_type for n in onnx_model.graph.node]
    assert ops.count("Unsqueeze") == 1 and ops.count("Squeeze") == 1
    session, optimized = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    optimized_ops = set(op_types(optimized))
    assert "MatMulIntegerToFloat" in optimized_ops and "Gemm" not in optimized_ops
    got, want = session.run(None, feeds)[0], _run_ov(model, feeds)[0]
    assert got.shape == want.shape == (1, 5)
    np.testing.assert_allclose(got, want, **ACCUMULATION)


def _stem_model(channels, size, kernel, stride, pads_begin, pads_end, seed, preprocess=False):
    """x [-> - mean, * scale] -> FakeQuantize -> strided Conv with nncf's per-channel int8 weights -> bias Add
    -> FakeQuantize (an image model's stem)."""
    rng = np.random.default_rng(seed)
    x = op.parameter([1, channels, *size], ov.Type.f32, name="x")
    image = x
    if preprocess:
        image = op.multiply(op.subtract(x, op.constant(np.float32(rng.uniform(0, 1, (1, channels, 1, 1))))),
                            op.constant(np.float32(1.5)))
    data = op.fake_quantize(image, *[op.constant(v) for v in _step_limits(-128, 127, 0.02)], 256)
    q = unsaturating_int8_weights(rng, (8, channels, *kernel))
    scale = (np.geomspace(0.05, 2, 8).reshape(8, 1, 1, 1) / 127).astype(np.float32)
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
    conv = op.convolution(data, weights, [stride] * 2, pads_begin, pads_end, [1, 1])
    biased = op.add(conv, op.constant(rng.standard_normal((1, 8, 1, 1)).astype(np.float32)))
    out = op.fake_quantize(biased, *[op.constant(v) for v in _step_limits(-128, 127, 0.05)], 256)
    feeds = {"x": (rng.standard_normal((1, channels, *size)) * 1.5).astype(np.float32)}
    return ov.Model([out], [x]), feeds


#: (input channels, spatial size, kernel, stride, pads begin, pads end), whether a Pad comes first (sizes not
#: whole blocks), whether a mean and scale come before the FakeQuantize: resnet's 7x7/2 stem, asymmetric
#: padding, odd sizes, a kernel smaller than the stride, a non-square kernel, no padding
STEM_CASES = {
    "resnet_stem": ((3, (16, 16), (7, 7), 2, [3, 3], [3, 3]), False, False),
    "even_asymmetric": ((2, (12, 16), (5, 5), 2, [1, 2], [2, 1]), False, False),
    "odd_size": ((1, (15, 13), (3, 3), 2, [1, 1], [1, 1]), True, False),
    "stride_4_asymmetric": ((3, (14, 17), (3, 5), 4, [2, 0], [1, 2]), True, False),
    "rectangular_unpadded": ((2, (9, 10), (2, 3), 2, [0, 0], [0, 0]), True, False),
    "after_mean_and_scale": ((3, (8, 8), (3, 3), 2, [1, 1], [1, 1]), False, True),
}


@pytest.mark.parametrize("case_id", list(STEM_CASES))
def test_strided_stem_convolution_runs_on_space_to_depth(tmp_path, monkeypatch, case_id):
    """A strided integer convolution of few input channels becomes [Pad(zero point) ->] SpaceToDepth ->
    stride-1 Conv with the int8 weights rearranged: onnxruntime's fused integer convolution gives the very
    same values as on the convolution as written (the same integer sums), within one level of OpenVINO."""
    from converters.openvino_ir.rules.quantization import space_to_depth

    case, padded, preprocess = STEM_CASES[case_id]
    model, feeds = _stem_model(*case, seed=len(case_id), preprocess=preprocess)
    onnx_model = import_ir(model)
    ops = [n.op_type for n in onnx_model.graph.node]
    assert ops.count("SpaceToDepth") == 1 and ops.count("Pad") == int(padded)
    conv = next(n for n in onnx_model.graph.node if n.op_type == "Conv")
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in conv.attribute}
    assert "strides" not in attributes and ("pads" in attributes) != padded
    session, optimized = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    optimized_ops = set(op_types(optimized))
    assert "QLinearConv" in optimized_ops and "Conv" not in optimized_ops
    monkeypatch.setattr(space_to_depth, "SPACE_TO_DEPTH_CHANNELS", 0)
    as_written = import_ir(model)
    assert "SpaceToDepth" not in {n.op_type for n in as_written.graph.node}
    plain, optimized = ort_optimized(as_written, tmp_path / "plain.onnx")
    optimized_ops = set(op_types(optimized))
    assert "QLinearConv" in optimized_ops
    for seed in range(3):
        feeds = {"x": (np.random.default_rng(seed).standard_normal(feeds["x"].shape) * 1.5).astype(np.float32)}
        got, want = session.run(None, feeds)[0], _run_ov(model, feeds)[0]
        np.testing.assert_array_equal(got, plain.run(None, feeds)[0])
        np.testing.assert_allclose(got, want, rtol=0, atol=0.05 * 1.01)  # one level at most (near-ties)
        assert np.mean(got == want) > 0.9


@pytest.mark.parametrize("channels,stride", [(4, 2), (8, 2), (3, 1), (3, 3)])
def test_convolution_not_helped_by_space_to_depth_keeps_its_form(channels, stride):
    """Four channels (onnxruntime's direct kernel takes them already), stride 1, or a stride whose square
    times the channels is not a multiple of four (7x7/3 on 3 channels: slower rewritten)."""
    model, feeds = _stem_model(channels, (8, 8), (3, 3), stride, [1, 1], [1, 1], seed=3)
    onnx_model = import_ir(model)
    assert "SpaceToDepth" not in {n.op_type for n in onnx_model.graph.node}


def _average_pool_model(axes, keep_dims=True, shape=(2, 16, 7, 7)):
    """x -> FakeQuantize -> ReduceMean(axes) -> FakeQuantize: a squeeze-excitation block's average pool."""
    x = op.parameter(list(shape), ov.Type.f32, name="x")
    data = op.fake_quantize(x, *[op.constant(v) for v in _step_limits(-20, 235, 0.02)], 256)
    mean = op.reduce_mean(data, op.constant(np.array(axes, np.int64)), keep_dims)
    out = op.fake_quantize(mean, *[op.constant(v) for v in _step_limits(0, 255, 0.004)], 256)
    feeds = {"x": np.random.default_rng(len(shape) * 10 + len(axes)).uniform(-0.5, 2, shape).astype(np.float32)}
    return ov.Model([out], [x]), feeds


@pytest.mark.parametrize("axes", [[2, 3], [-1, -2]])
def test_quantized_spatial_mean_runs_as_integer_global_average_pool(tmp_path, axes):
    """FakeQuantize -> ReduceMean over H, W (keep_dims) -> FakeQuantize becomes GlobalAveragePool, which
    onnxruntime fuses into QLinearGlobalAveragePool; the values stay OpenVINO's (a level apart at most, on
    near-ties), in the fused and the unfused graph."""
    model, feeds = _average_pool_model(axes)
    onnx_model = import_ir(model)
    ops = [n.op_type for n in onnx_model.graph.node]
    assert "GlobalAveragePool" in ops and "ReduceMean" not in ops
    session, optimized = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    optimized_ops = set(op_types(optimized))
    assert "QLinearGlobalAveragePool" in optimized_ops and "GlobalAveragePool" not in optimized_ops
    want = _run_ov(model, feeds)[0]
    for got in (session.run(None, feeds)[0], _run_onnx(onnx_model, feeds)[0]):
        np.testing.assert_allclose(got, want, rtol=0, atol=0.004 * 1.01)
        assert np.mean(got == want) > 0.95


@pytest.mark.parametrize("axes, keep_dims, shape", [([1], True, (2, 16, 7, 7)), ([2, 3], False, (2, 16, 7, 7)),
                                                     ([2, 3], True, (2, 16, 3, 7, 7))])
def test_other_quantized_means_stay_reduce_mean(axes, keep_dims, shape):
    model, feeds = _average_pool_model(axes, keep_dims, shape)
    onnx_model = import_ir(model)
    ops = [n.op_type for n in onnx_model.graph.node]
    assert "ReduceMean" in ops and "GlobalAveragePool" not in ops
    np.testing.assert_allclose(_run_onnx(onnx_model, feeds)[0], _run_ov(model, feeds)[0], rtol=0, atol=0.004 * 1.01)


def test_matmul_after_a_computed_flatten_without_bias_runs_on_integers(tmp_path):
    """FakeQuantize -> Reshape to a computed 2-D shape -> MatMul with nncf's int8 weights and no bias Add
    (mobilenet_v3's first classifier layer, its zero bias removed): int8 DequantizeLinear weights, which
    onnxruntime fuses into MatMulIntegerToFloat (exact integer sums) instead of a float MatMul."""
    rng = np.random.default_rng(11)
    x, matmul = _flattened_matmul((1, 32, 1, 1), 24, rng)
    model = ov.Model([op.hswish(matmul)], [x])
    onnx_model = import_ir(model)
    assert any(n.op_type == "DequantizeLinear" and n.input[0].endswith("int8_weights") for n in onnx_model.graph.node)
    session, optimized = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    optimized_ops = set(op_types(optimized))
    assert "MatMulIntegerToFloat" in optimized_ops and "MatMul" not in optimized_ops
    feeds = {"x": rng.uniform(0, 5, (1, 32, 1, 1)).astype(np.float32)}
    np.testing.assert_allclose(session.run(None, feeds)[0], _run_ov(model, feeds)[0], **ACCUMULATION)


def _grouped_model(in_channels, out_channels, groups, size, stride, seed):
    """FakeQuantize -> GroupConvolution 3x3 with nncf's per-channel int8 weights -> bias Add -> FakeQuantize (a
    regnet block's grouped convolution)."""
    rng = np.random.default_rng(seed)
    x = op.parameter([1, in_channels, size, size], ov.Type.f32, name="x")
    data = op.fake_quantize(x, *[op.constant(v) for v in _step_limits(0, 255, 0.02)], 256)
    shape = (groups, out_channels // groups, in_channels // groups, 3, 3)
    q = unsaturating_int8_weights(rng, shape)
    scale = (rng.uniform(0.05, 2, shape[:2] + (1, 1, 1)) / 127).astype(np.float32)
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32), op.constant(scale))
    conv = op.group_convolution(data, weights, [stride] * 2, [1, 1], [1, 1], [1, 1])
    biased = op.add(conv, op.constant(rng.standard_normal((1, out_channels, 1, 1)).astype(np.float32)))
    out = op.fake_quantize(biased, *[op.constant(v) for v in _step_limits(-128, 127, 0.05)], 256)
    feeds = {"x": rng.uniform(-0.5, 5, (1, in_channels, size, size)).astype(np.float32)}
    return ov.Model([out], [x]), feeds


#: (input channels, output channels, groups, size, stride) -> groups after the rewrite: regnet's groups of 8
#: (pairs merged; 3 groups of 8 only all together, 13 padded to 14 and merged in pairs: MAX_DENSE_GROUPS), a
#: stride, groups of 4 in, 8 out
GROUPED_CASES = {
    "regnet_pairs": ((48, 48, 6, 6, 1), 3),
    "strided": ((32, 32, 4, 7, 2), 2),
    "prime_group_count": ((24, 24, 3, 5, 1), 1),
    "prime_group_count_above_dense_limit": ((104, 104, 13, 5, 1), 7),
    "wider_output": ((16, 32, 4, 5, 1), 1),
}


@pytest.mark.parametrize("case_id", list(GROUPED_CASES))
def test_narrow_grouped_convolution_merges_groups(tmp_path, monkeypatch, case_id):
    """A grouped integer convolution of fewer than GROUP_WIDTH input channels per group is written with
    neighbouring groups merged (block-diagonal int8 weights, zeros elsewhere; a prime group count first padded
    with zero groups, the input by a Pad, the output cut by a Slice): onnxruntime's fused QLinearConv gives the
    very same values as on the convolution as written, within one level of OpenVINO."""
    from converters.openvino_ir.rules.quantization import grouped_conv

    case, merged = GROUPED_CASES[case_id]
    model, feeds = _grouped_model(*case, seed=len(case_id))
    onnx_model = import_ir(model)
    conv = next(n for n in onnx_model.graph.node if n.op_type == "Conv")
    assert {a.name: onnx.helper.get_attribute_value(a) for a in conv.attribute}.get("group", 1) == merged
    session, optimized = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    optimized_ops = set(op_types(optimized))
    assert "QLinearConv" in optimized_ops and "Conv" not in optimized_ops
    monkeypatch.setattr(grouped_conv, "GROUP_WIDTH", 2)
    as_written = import_ir(model)
    conv = next(n for n in as_written.graph.node if n.op_type == "Conv")
    assert {a.name: onnx.helper.get_attribute_value(a) for a in conv.attribute}["group"] == case[2]
    plain, optimized = ort_optimized(as_written, tmp_path / "plain.onnx")
    optimized_ops = set(op_types(optimized))
    assert "QLinearConv" in optimized_ops
    for seed in range(3):
        feeds = {"x": np.random.default_rng(seed).uniform(-0.5, 5, feeds["x"].shape).astype(np.float32)}
        got, want = session.run(None, feeds)[0], _run_ov(model, feeds)[0]
        np.testing.assert_array_equal(got, plain.run(None, feeds)[0])
        np.testing.assert_allclose(got, want, rtol=0, atol=0.05 * 1.01)  # one level at most (near-ties)
        assert np.mean(got == want) > 0.9


@pytest.mark.parametrize("channels,groups", [(32, 2), (8, 8)])
def test_wide_or_depthwise_grouped_convolution_keeps_its_groups(channels, groups):
    """Groups of GROUP_WIDTH channels already, and depthwise convolutions (MLAS's own kernel), stay as written."""
    model, _ = _grouped_model(channels, channels, groups, 5, 1, seed=4)
    conv = next(n for n in import_ir(model).graph.node if n.op_type == "Conv")
    assert {a.name: onnx.helper.get_attribute_value(a) for a in conv.attribute}["group"] == groups


def _swish_model(quantized_output: bool, beta=None, seed=6):
    """FakeQuantize -> Conv with nncf's int8 weights + bias -> Swish [-> FakeQuantize] (efficientnet's
    expansion convolution and its Swish)."""
    rng = np.random.default_rng(seed)
    x = op.parameter([1, 8, 6, 6], ov.Type.f32, name="x")
    data = op.fake_quantize(x, *[op.constant(v) for v in _step_limits(0, 255, 0.02)], 256)
    q = unsaturating_int8_weights(rng, (16, 8, 3, 3))
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32),
                          op.constant((rng.uniform(0.05, 0.5, (16, 1, 1, 1)) / 127).astype(np.float32)))
    conv = op.add(op.convolution(data, weights, [1, 1], [1, 1], [1, 1], [1, 1]),
                  op.constant(rng.standard_normal((1, 16, 1, 1)).astype(np.float32)))
    out = op.swish(conv) if beta is None else op.swish(conv, op.constant(np.float32(beta)))
    if quantized_output:
        out = op.fake_quantize(out, *[op.constant(v) for v in _step_limits(-20, 235, 0.03)], 256)
    return ov.Model([out], [x]), {"x": rng.uniform(-0.5, 5, (1, 8, 6, 6)).astype(np.float32)}


@pytest.mark.parametrize("beta", [None, 1.5])
def test_quantized_swish_runs_as_quick_gelu(tmp_path, beta):
    """In the QDQ form a Swish read only by a FakeQuantize is x * Sigmoid(beta x), which onnxruntime runs as one
    QuickGelu: within a level of OpenVINO (near-ties), equal on almost every value; the exact form keeps
    the exact Swish."""
    model, feeds = _swish_model(True, beta)
    onnx_model = import_ir(model)
    ops = [n.op_type for n in onnx_model.graph.node]
    assert "Sigmoid" in ops and "Exp" not in ops
    session, optimized = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    optimized_ops = set(op_types(optimized))
    assert "QuickGelu" in optimized_ops and "Exp" not in optimized_ops
    for seed in range(3):
        feeds = {"x": np.random.default_rng(seed).uniform(-0.5, 5, feeds["x"].shape).astype(np.float32)}
        got, want = session.run(None, feeds)[0], _run_ov(model, feeds)[0]
        np.testing.assert_allclose(got, want, rtol=0, atol=0.03 * 1.01)
        assert np.mean(got == want) > 0.9
    exact = import_ir(model, int8="exact")
    assert "Exp" in {n.op_type for n in exact.graph.node} and "Sigmoid" not in {n.op_type for n in exact.graph.node}


def test_swish_with_a_float_output_stays_exact():
    model, feeds = _swish_model(False)
    onnx_model = import_ir(model)
    assert "Exp" in {n.op_type for n in onnx_model.graph.node}
    np.testing.assert_allclose(_run_onnx(onnx_model, feeds)[0], _run_ov(model, feeds)[0], rtol=1e-5, atol=1e-4)


def _attention_value_model(smoothing, bias: bool, seed=31):
    """Quantized x [1, 6, 8] -> value projection (nncf's int8 weights [+ bias]) -> head split (Reshape
    [0, 6, 2, 4], Transpose) -> probabilities @ V -> head merge -> nncf's smooth-quant Multiply by `smoothing`
    [1, 1, 8]: the attention output before the output projection's quantizer. Weights within [-63, 63]: no
    int16 pair sum of u8 x s8 products saturates on CPUs without VNNI."""
    rng = np.random.default_rng(seed)
    x = op.parameter([1, 6, 8], ov.Type.f32, name="x")
    scores = op.parameter([1, 2, 6, 6], ov.Type.f32, name="scores")
    data = op.fake_quantize(x, *[op.constant(v) for v in _step_limits(0, 255, 0.02)], 256)
    q = rng.integers(-63, 64, (8, 8)).astype(np.int8)
    weights = op.multiply(op.convert(op.constant(q), ov.Type.f32),
                          op.constant((rng.uniform(0.5, 2, (8, 1)) / 127).astype(np.float32)))
    value = op.matmul(data, weights, False, True)
    if bias:
        value = op.add(value, op.constant(rng.standard_normal(8).astype(np.float32)))
    heads = op.transpose(op.reshape(value, op.constant(np.array([0, 6, 2, 4], np.int64)), True),
                         op.constant(np.array([0, 2, 1, 3], np.int64)))
    attended = op.matmul(op.softmax(scores, -1), heads, False, False)
    merged = op.reshape(op.transpose(attended, op.constant(np.array([0, 2, 1, 3], np.int64))),
                        op.constant(np.array([0, 6, 8], np.int64)), True)
    out = op.multiply(merged, op.constant(np.asarray(smoothing, np.float32).reshape(1, 1, 8)))
    feeds = {"x": rng.uniform(0, 5, (1, 6, 8)).astype(np.float32),
             "scores": rng.standard_normal((1, 2, 6, 6)).astype(np.float32)}
    return ov.Model([out], [x, scores]), feeds


@pytest.mark.parametrize("positive, bias", [(True, True), (True, False), (False, True)])
def test_smoothing_after_attention_moves_into_the_value_weights(positive, bias):
    """nncf's smooth-quant Multiply after attention scales channel c of probabilities @ V, i.e. column c of
    V: a positive one is folded into the value projection's int8 weight scales (and bias), the Mul is gone;
    one with a negative factor stays. Both give OpenVINO's values."""
    smoothing = np.linspace(0.5, 20, 8) * (1 if positive else np.where(np.arange(8) == 3, -1, 1))
    model, feeds = _attention_value_model(smoothing, bias)
    onnx_model = import_ir(model)
    assert ("Mul" in [n.op_type for n in onnx_model.graph.node]) != positive
    np.testing.assert_allclose(_run_onnx(onnx_model, feeds)[0], _run_ov(model, feeds)[0], **ACCUMULATION)


#: models whose import runs each qdq pass with an edit (depthwise scales, pointwise and patch MatMuls, a
#: classifier head, a space-to-depth stem, merged and padded groups, a Swish, Concat / MaxPool / Split on
#: integers, a smooth-quant Mul folded into attention's value weights)
INDEXED_MODELS = {
    "smoothing": lambda: _attention_value_model(np.linspace(0.5, 20, 8), True),
    "depthwise": lambda: _depthwise_model([128, 128, 128, 128]),
    "pointwise_swish": lambda: _pointwise_model(also_float=True, swish=True),
    "patches": lambda: _patch_model(),
    "classifier": lambda: _classifier_model((5,)),
    "stem": lambda: _stem_model(*STEM_CASES[next(iter(STEM_CASES))][0], seed=1),
    "padded_groups": lambda: _grouped_model(*GROUPED_CASES["prime_group_count_above_dense_limit"][0], seed=2),
    "swish": lambda: _swish_model(True),
    "inception": lambda: (_int8_clip_models()._inception(True), None),
    "channel_shuffle": lambda: (_int8_clip_models()._channel_shuffle(), None),
}


def _int8_clip_models():
    import test_ir_int8_clip  # (its inception and channel-shuffle builders: integer data movement)

    return test_ir_int8_clip


@pytest.mark.parametrize("case_id", list(INDEXED_MODELS))
def test_shared_graph_index_is_never_read_stale(monkeypatch, case_id):
    """The qdq passes share one GraphIndex and rebuild it only after a pass said it edited the graph, reading
    again only the nodes the pass said it rewired: every lookup served, from the cache or rebuilt from the
    nodes' fields as read before, equals the index built afresh from the graph as it is then."""
    from converters.openvino_ir.rules import quantization

    served = []

    def checked(index):
        cached = index._lookups
        found = original(index)
        fresh = quantization._index(index.nodes, index.initializers)
        assert {k: id(v) for k, v in found[0].items()} == {k: id(v) for k, v in fresh[0].items()}
        assert {k: id(v) for k, v in found[1].items()} == {k: id(v) for k, v in fresh[1].items()}
        assert {k: [id(n) for n in v] for k, v in found[2].items()} \
            == {k: [id(n) for n in v] for k, v in fresh[2].items()}
        if cached is not None:
            served.append(True)
        return found

    original = quantization.GraphIndex.lookups
    monkeypatch.setattr(quantization.GraphIndex, "lookups", checked)
    model, _ = INDEXED_MODELS[case_id]()
    import_ir(model)
    assert served  # (some pass reused the lookups)


def test_subgraph_reads_are_found_once_per_import(monkeypatch):
    """The qdq passes take the values subgraphs read (_outer_reads: every attribute of every node scanned)
    from the shared GraphIndex, found once per import rather than once per pass."""
    from converters.openvino_ir.rules.quantization import graph

    calls, original = [], graph._outer_reads
    monkeypatch.setattr(graph, "_outer_reads", lambda nodes: calls.append(1) or original(nodes))
    model, _ = INDEXED_MODELS["channel_shuffle"]()
    onnx_model = import_ir(model)
    assert "DequantizeLinear" in {n.op_type for n in onnx_model.graph.node}  # (the passes ran)
    assert len(calls) == 1


def test_graph_index_lookups_match_a_plain_walk_of_the_nodes():
    """_index (protobuf fields read as slices): constants by name, each value's producer and its readers in node
    order (a node reading a value twice listed twice), as a plain walk of the nodes finds them."""
    from onnx import helper

    from converters.openvino_ir.rules.quantization import _index

    nodes = [helper.make_node("Split", ["x"], ["a", "b"]), helper.make_node("Mul", ["a", "a"], ["c"]),
             helper.make_node("Add", ["c", "b"], ["d"]), helper.make_node("Concat", ["b", "w", "d"], ["e"], axis=0)]
    initializers = [("w", onnx.TensorProto.FLOAT, np.ones(2, np.float32))]
    values, producer, readers = _index(nodes, initializers)
    assert list(values) == ["w"] and values["w"] is initializers[0][2]
    assert {name: nodes.index(node) for name, node in producer.items()} == {"a": 0, "b": 0, "c": 1, "d": 2, "e": 3}
    assert {name: [nodes.index(n) for n in found] for name, found in readers.items()} \
        == {"x": [0], "a": [1, 1], "c": [2], "b": [2, 3], "w": [3], "d": [3]}
    assert list(readers) == ["x", "a", "c", "b", "w", "d"]


def test_graph_index_rebuild_reads_again_only_the_rewired_nodes():
    """After edited(rewired=...) the lookups are rebuilt from the inputs and outputs read before, but for the
    rewired nodes and the new ones; a node rewired but not reported keeps its old fields (why every pass
    reports the nodes it rewires), and edited() without `rewired` reads every node again."""
    from onnx import helper

    from converters.openvino_ir.rules.quantization import GraphIndex

    relu, mul = helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Mul", ["a", "a"], ["b"])
    index = GraphIndex([relu, mul], [])
    index.lookups()
    sigmoid = helper.make_node("Sigmoid", ["x"], ["s"])
    index.nodes.insert(1, sigmoid)
    mul.input[1] = "s"
    index.edited(rewired=[mul])
    _, producer, readers = index.lookups()
    assert producer["s"] is sigmoid and [id(n) for n in readers["a"]] == [id(mul)] and readers["s"] == [mul]
    relu.output[0] = "r"  # (not reported: the old fields are served)
    index.edited(rewired=[])
    assert "a" in index.lookups()[1] and "r" not in index.lookups()[1]
    index.edited()
    assert "r" in index.lookups()[1] and "a" not in index.lookups()[1]


def test_node_edits_are_made_in_one_go_by_identity():
    """_NodeEdits: a node replaced by a list (which may hold it: an insertion before or after), removed nodes
    left out (also where replaced), nodes named by identity (an equal message elsewhere is not touched)."""
    from onnx import helper

    from converters.openvino_ir.rules.quantization.graph import _NodeEdits

    a, twin, b = (helper.make_node("Relu", ["x"], ["y"]) for _ in range(3))
    c = helper.make_node("Abs", ["y"], ["z"])
    nodes = [a, twin, b, c]
    assert a == twin and not _NodeEdits().apply(nodes) and nodes == [a, twin, b, c]
    new = [helper.make_node("Neg", ["x"], [f"n{i}"]) for i in range(3)]
    edits = _NodeEdits()
    edits.replace(a, [new[0], a])
    edits.replace(b, [new[1]])
    edits.replace(c, [c, new[2]])
    edits.remove(twin, b)
    assert edits.apply(nodes)
    assert [id(n) for n in nodes] == [id(new[0]), id(a), id(c), id(new[2])]


class _LimitsOnly:
    """The three facts _qdq_parameters asks its context about a FakeQuantize: float32 data of rank 4, limits."""

    def __init__(self, limits):
        self.limits = limits

    def elem(self, node, index):
        return onnx.TensorProto.FLOAT

    def rank(self, node, index):
        return 4

    def const_value(self, node, index):
        return self.limits[index - 1]


@pytest.mark.parametrize("levels", [256, 255, 16])
def test_per_tensor_limits_give_the_per_channel_arithmetic(levels):
    """One value per limit (scalars in float32) gives what the array path computes for the same value in every
    channel: scale, zero point and limits bit for bit, and the same reason where it does not map."""
    from converters.openvino_ir.rules.quantization import _qdq_parameters

    rng = np.random.default_rng(levels)
    cases = [(np.float32(lo), np.float32(hi)) for lo, hi in zip(-rng.random(20) * 3, rng.random(20) * 5)]
    cases += [(np.float32(0), np.float32(6)), (np.float32(-1.0), np.float32(1.0)), (np.float32(1), np.float32(2)),
              (np.float32(-3), np.float32(-1)), (np.float32(2), np.float32(2)), (np.float64(-0.1), np.float64(0.3))]
    for low, high in cases:
        scalar = _qdq_parameters(_LimitsOnly([np.array(v) for v in (low, high, low, high)]), None, levels)
        channels = _qdq_parameters(_LimitsOnly([np.full((1, 2, 1, 1), v) for v in (low, high, low, high)]),
                                   None, levels)
        if isinstance(channels, str):
            assert scalar == channels
            continue
        assert scalar[2] is None and channels[2] == 1
        for got, want in zip(scalar[:2] + scalar[3:], channels[:2] + channels[3:]):
            assert got.dtype == want.dtype and got.shape == (1,) and got.tobytes() == want[:1].tobytes()
    differ = _qdq_parameters(_LimitsOnly([np.array(np.float32(v)) for v in (0, 1, 0, 2)]), None, levels)
    assert differ == "output range differs from input range"


#: the switches and tuning constants of rules/quantization/
QUANTIZATION_SETTINGS = ("FOLD_SMOOTHING_INTO_VALUES", "FOLD_CLIP_DIV_INTO_SCALES", "FOLD_REDUNDANT_CLIP",
                         "GROUP_WIDTH", "MAX_DENSE_GROUPS", "SPACE_TO_DEPTH_CHANNELS", "CHANNEL_GROUP",
                         "ZERO_POINT_TOLERANCE")


def test_quantization_settings_live_only_in_the_module_that_reads_them():
    """Each pass reads the settings of its own module: the package does not re-export them and no other module
    imports a copy, so a monkeypatch of any other place fails (no such attribute) rather than changing nothing."""
    import importlib
    import pkgutil

    from converters.openvino_ir.rules import quantization

    modules = [importlib.import_module(f"{quantization.__name__}.{m.name}")
               for m in pkgutil.iter_modules(quantization.__path__)]
    for name in QUANTIZATION_SETTINGS:
        assert not hasattr(quantization, name)
        assert len([m for m in modules if name in vars(m)]) == 1, name
