"""4-bit weights (OpenVINO u4/i4 as nncf writes them) through the deferred import: MatMulNBits,
GatherBlockQuantized and DequantizeLinear-21 (UINT4/INT4) initializers stay out of the ModelProto, are written
straight from OpenVINO's bytes (into the .onnx or ONNX external data), and the written model equals the inline
one and OpenVINO CPU."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import onnx_bridge
from converters import model_io
from onnx_bridge.cli import main

ov = pytest.importorskip("openvino")
import openvino.opset13 as op  # noqa: E402
from converters.openvino_ir import import_ir  # noqa: E402
from converters.openvino_ir import _types  # noqa: E402
from converters.openvino_ir._importer import DEFER_ELEMENTS  # noqa: E402

#: MatMul over 64 products: onnxruntime and OpenVINO's CPU plugin may sum in different orders.
SUM_ORDER_TOLERANCE = 1e-5
#: 4-bit initializer types: MatMulNBits / GatherBlockQuantized keep uint8 bytes, DequantizeLinear-21 UINT4/INT4.
PACKED = {onnx.TensorProto.UINT4, onnx.TensorProto.INT4}
#: OpenVINO CPU without its dynamic quantization of activations for compressed weights (docs/llm.md).
REFERENCE = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}


def _decompressed(rng, n: int, k: int, group: int, signed: bool):
    """nncf's form: Constant u4/i4 [n, k/group, group] -> Convert f16 [-> Subtract zero point] -> Multiply f16
    scale [n, k/group, 1] -> Reshape [n, k] -> Convert f32."""
    kind, low, high = (ov.Type.i4, -8, 8) if signed else (ov.Type.u4, 0, 16)
    blocks = k // group
    weight = ov.op.Constant(kind, ov.Shape([n, blocks, group]), rng.integers(low, high, n * k).tolist())
    value = op.convert(weight, ov.Type.f16)
    if not signed:
        point = ov.op.Constant(kind, ov.Shape([n, blocks, 1]), rng.integers(low, high, n * blocks).tolist())
        value = op.subtract(value, op.convert(point, ov.Type.f16))
    scale = (rng.random((n, blocks, 1)) * 0.1 + 0.01).astype(np.float16)
    value = op.reshape(op.multiply(value, op.constant(scale)), op.constant(np.int64([n, k])), False)
    return op.convert(value, ov.Type.f32)


def _int4_ir(directory, seed: int = 0):
    """ids [2, 32] -> 4-bit embedding (GatherBlockQuantized) -> u4 linear (MatMulNBits) -> + i4 and * u4
    weights [32, 64] (DequantizeLinear-21 of INT4 / UINT4) -> [2, 32, 64]."""
    rng = np.random.default_rng(seed)
    ids = op.parameter([2, 32], ov.Type.i64, name="ids")
    value = op.gather(_decompressed(rng, 96, 64, 32, False), ids, op.constant(np.int64(0)))
    value = op.matmul(value, _decompressed(rng, 64, 64, 32, False), False, True)
    value = op.add(op.relu(value), _decompressed(rng, 32, 64, 32, True))
    value = op.multiply(value, _decompressed(rng, 32, 64, 16, False))
    xml = directory / "int4.xml"
    ov.save_model(ov.Model([value], [ids], "int4"), str(xml), compress_to_fp16=False)
    return xml


def _arrays(model: onnx.ModelProto, base=None) -> dict:
    return {t.name: numpy_helper.to_array(t, base or "") for t in model.graph.initializer}


@pytest.fixture
def ir(tmp_path):
    return _int4_ir(tmp_path)


def _ids(seed: int = 1):
    return np.random.default_rng(seed).integers(0, 96, (2, 32)).astype(np.int64)


def test_4bit_weights_are_deferred_without_a_copy(ir, tmp_path, monkeypatch):
    unpacked = []
    unpack = _types.unpack_nibbles
    monkeypatch.setattr(_types, "unpack_nibbles", lambda packed, signed, shape: unpacked.append(
        int(np.prod(shape))) or unpack(packed, signed, shape))
    weights = model_io.Weights()
    deferred = import_ir(ir, defer=weights)
    assert unpacked and max(unpacked) < DEFER_ELEMENTS  # zero points only: no weight is unpacked
    ops = [n.op_type for n in deferred.graph.node]
    assert {"GatherBlockQuantized", "MatMulNBits", "DequantizeLinear"} <= set(ops), ops
    tensors = {t.name: t for t in deferred.graph.initializer}
    four_bit = [t for t in tensors.values() if t.data_type in PACKED]
    packed = [t for t in four_bit if np.prod(t.dims) > DEFER_ELEMENTS]  # (zero points stay in the model)
    assert len(packed) == 2 and all(model_io.Weights.pending(t) == (t in packed) for t in four_bit)
    nbits = [n for n in deferred.graph.node if n.op_type == "MatMulNBits"][0]
    assert model_io.Weights.pending(tensors[nbits.input[1]])
    for tensor in packed + [tensors[nbits.input[1]]]:  # views of OpenVINO's bytes
        array = weights.arrays[tensor.name]
        assert not getattr(array, "packed", array).flags.owndata, tensor.name
    assert all(not t.raw_data for t in packed)

    model_io.save_model(deferred, tmp_path / "deferred.onnx", weights=weights)
    written, complete = onnx.load(tmp_path / "deferred.onnx"), import_ir(ir)
    assert written.graph.node == complete.graph.node
    got, want = _arrays(written), _arrays(complete)
    assert list(got) == list(want)
    for name in want:
        assert got[name].dtype == want[name].dtype and np.array_equal(got[name], want[name]), name
    assert weights.materialize(deferred) == complete


def test_int4_model_past_the_limit_is_written_with_external_data_that_runs(ir, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out" / "model.onnx"
    monkeypatch.setattr(model_io, "EXTERNAL_AUTO_BYTES", 4 * 1024)  # the 4-bit weights are ~9 KB
    assert main(["convert", str(ir), "-o", str(out)]) == 0
    assert f"wrote {out} and {out}.data" in capsys.readouterr().out
    header = onnx.load(out, load_external_data=False)
    external = {t.name: t for t in header.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL}
    assert any(t.data_type in PACKED for t in external.values())
    for tensor in external.values():  # each as many bytes as the packed values take
        length = int({e.key: e.value for e in tensor.external_data}["length"])
        assert length == model_io._tensor_bytes(tensor) and not tensor.raw_data, tensor.name

    inline = import_ir(ir)
    want = _arrays(inline)
    got = _arrays(onnx.load(out))
    assert list(got) == list(want)
    assert all(got[n].dtype == want[n].dtype and np.array_equal(got[n], want[n]) for n in want)

    feed = {"ids": _ids()}
    result = onnx_bridge.InferenceSession(str(out)).run(None, feed)[0]
    np.testing.assert_array_equal(result, onnx_bridge.InferenceSession(inline).run(None, feed)[0])
    reference = ov.Core().compile_model(str(ir), "CPU", REFERENCE)(feed)[0]
    np.testing.assert_allclose(result, reference, rtol=SUM_ORDER_TOLERANCE, atol=SUM_ORDER_TOLERANCE)


def test_4bit_constant_read_as_integers_is_unpacked():
    x = op.parameter([2, 40], ov.Type.f32, name="x")
    values = np.random.default_rng(2).integers(0, 16, (2, 40))
    weight = ov.op.Constant(ov.Type.u4, ov.Shape([2, 40]), values.reshape(-1).tolist())
    model = import_ir(ov.Model([op.add(x, op.convert(weight, ov.Type.f32))], [x]))
    [tensor] = model.graph.initializer
    assert tensor.data_type == onnx.TensorProto.UINT8 and np.array_equal(numpy_helper.to_array(tensor), values)
    got = onnx_bridge.InferenceSession(model).run(None, {"x": np.ones((2, 40), np.float32)})[0]
    np.testing.assert_array_equal(got, values + 1)
