"""FakeQuantize-1 and compressed weights (u8/i8/u4/i4 + f16 scales, as nncf writes them): OpenVINO vs
onnxruntime on the imported model, and the imported model exported back to IR."""
from __future__ import annotations

import logging

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
import openvino.opset13 as op  # noqa: E402

import onnx_bridge  # noqa: E402
from converters.openvino_ir import import_ir, to_openvino  # noqa: E402
from converters.openvino_ir._types import unpack_nibbles  # noqa: E402
from onnx_bridge.errors import ConversionError  # noqa: E402

pytestmark = pytest.mark.openvino
#: f32 throughout; no dynamic quantization of activations (the CPU plugin's default for compressed weights on
#: some CPUs, an approximation: docs/llm.md)
CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}
RNG = np.random.default_rng(21)
#: MatMul: the two runtimes accumulate in different orders
ACCUMULATION = dict(rtol=1e-5, atol=1e-5)


def _run_ov(model, feeds):
    compiled = ov.Core().compile_model(model, "CPU", CONFIG)
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
    got = _run_onnx(import_ir(model), {"x": x})[0]
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
    back = _run_ov(to_openvino(import_ir(model)), {"x": x})[0]
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
