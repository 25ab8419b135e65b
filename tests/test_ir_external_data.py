"""IR import in one pass: large constants written straight from OpenVINO's memory (model_io.Weights), ONNX
external data (on request, and automatically past protobuf's limit: here a lowered threshold), atomic writes,
and the written models run: onnx_bridge.InferenceSession and `onnx-bridge run` against OpenVINO CPU."""
from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import onnx_bridge
import onnx_bridge.session
from converters import convert, model_io
from onnx_bridge.cli import main

ov = pytest.importorskip("openvino")
import openvino.opset13 as op  # noqa: E402
from converters.openvino_ir import import_ir  # noqa: E402

#: MatMul over 64 products: onnxruntime and OpenVINO's CPU plugin may sum in different orders.
SUM_ORDER_TOLERANCE = 1e-5


def _ir(directory, seed: int = 0):
    """x [2, 64] -> MatMul with f16 weights (decompression Convert), f32 weights, a bias, a reshape round trip,
    a bf16 constant through Convert: constants above and below the deferral and external-data thresholds."""
    rng = np.random.default_rng(seed)
    x = op.parameter([2, 64], ov.Type.f32, name="x")
    w16 = op.convert(op.constant(rng.standard_normal((64, 64)).astype(np.float16)), ov.Type.f32)
    value = op.matmul(x, w16, False, False)
    value = op.add(value, op.constant(rng.standard_normal(64).astype(np.float32)))
    value = op.reshape(op.reshape(value, op.constant(np.int64([2, 8, 8])), False),
                       op.constant(np.int64([2, 64])), False)
    value = op.matmul(op.relu(value), op.constant(rng.standard_normal((64, 48)).astype(np.float32)), False, False)
    scale = op.constant(ov.Tensor(rng.standard_normal(48).astype(np.float32)).data, ov.Type.bf16)
    value = op.multiply(value, op.convert(scale, ov.Type.f32))
    xml = directory / "model.xml"
    ov.save_model(ov.Model([value], [x], "tiny"), str(xml), compress_to_fp16=False)
    return xml


def _openvino(xml, feed):
    compiled = ov.Core().compile_model(str(xml), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return compiled({"x": feed})[0]


def _arrays(model: onnx.ModelProto, base=None) -> dict:
    return {t.name: numpy_helper.to_array(t, base or "") for t in model.graph.initializer}


@pytest.fixture
def ir(tmp_path):
    return _ir(tmp_path)


def test_deferred_weights_write_the_same_model(ir, tmp_path):
    weights = model_io.Weights()
    deferred = import_ir(ir, defer=weights)
    assert len(weights) == 2  # the two weight matrices (over 1024 elements); the rest is in the model
    assert all(model_io.Weights.pending(t) == (t.name in weights.arrays) for t in deferred.graph.initializer)
    model_io.save_model(deferred, tmp_path / "deferred.onnx", weights=weights)
    model_io.save_model(import_ir(ir), tmp_path / "complete.onnx")
    written, complete = onnx.load(tmp_path / "deferred.onnx"), onnx.load(tmp_path / "complete.onnx")
    assert written.graph.node == complete.graph.node
    got, want = _arrays(written), _arrays(complete)
    assert list(got) == list(want)
    for name in want:
        assert got[name].dtype == want[name].dtype and np.array_equal(got[name], want[name]), name
    assert not any(t.external_data for t in written.graph.initializer)
    assert weights.materialize(deferred) == complete  # materialize gives the complete model


def test_deferred_data_without_its_weights_is_refused(ir, tmp_path):
    model = import_ir(ir, defer=model_io.Weights())
    with pytest.raises(onnx_bridge.ModelError, match="deferred data"):
        model_io.save_model(model, tmp_path / "m.onnx")
    assert not list(tmp_path.glob("m.onnx*")) and not list(tmp_path.glob(".m.onnx*"))


@pytest.mark.parametrize("op_type, domain", [("If", ""), ("Loop", ""), ("Custom", "example.domain")])
def test_deferred_data_in_a_subgraph_is_refused(tmp_path, op_type, domain):
    """The check looks into the graph attributes of the standard control-flow ops and of other-domain nodes."""
    from onnx import TensorProto, helper

    tensor = model_io.Weights().defer(TensorProto(), np.zeros(2, np.float32), "w", TensorProto.FLOAT)
    body = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "body", [],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], initializer=[tensor])
    node = helper.make_node(op_type, ["c"], ["out"], domain=domain, body=body)
    model = helper.make_model(helper.make_graph([node], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                                                [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2])]))
    with pytest.raises(onnx_bridge.ModelError, match="deferred data"):
        model_io.save_model(model, tmp_path / "m.onnx")


@pytest.mark.parametrize("automatic", [False, True], ids=["--external-data", "past-the-limit"])
def test_cli_writes_external_data_that_runs(ir, tmp_path, monkeypatch, capsys, automatic):
    out = tmp_path / "out" / "model.onnx"
    args = ["convert", str(ir), "-o", str(out)]
    if automatic:
        monkeypatch.setattr(model_io, "EXTERNAL_AUTO_BYTES", 16 * 1024)  # the weights are ~26 KB
    else:
        args.append("--external-data")
    assert main(args) == 0
    assert f"wrote {out} and {out}.data" in capsys.readouterr().out
    data = out.parent / "model.onnx.data"
    assert data.is_file() and sorted(p.name for p in out.parent.iterdir()) == ["model.onnx", "model.onnx.data"]
    header = onnx.load(out, load_external_data=False)
    external = [t for t in header.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert len(external) == 2 and all(len(t.raw_data) == 0 for t in external)  # f16 8 KB, f32 12 KB
    assert out.stat().st_size < 4096 < data.stat().st_size
    want = _arrays(import_ir(ir))
    got = _arrays(onnx.load(out))
    assert all(np.array_equal(got[name], want[name]) for name in want)

    feed = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
    expected = _openvino(ir, feed)
    result = onnx_bridge.InferenceSession(str(out)).run(None, {"x": feed})[0]
    np.testing.assert_allclose(result, expected, rtol=SUM_ORDER_TOLERANCE, atol=SUM_ORDER_TOLERANCE)
    np.savez(tmp_path / "in.npz", x=feed)
    assert main(["run", str(out), "--inputs", str(tmp_path / "in.npz"), "--output", str(tmp_path / "o.npz")]) == 0
    with np.load(tmp_path / "o.npz") as saved:
        np.testing.assert_array_equal(next(iter(saved.values())), result)


def test_small_models_stay_in_one_file(ir, tmp_path):
    out = tmp_path / "model.onnx"
    assert main(["convert", str(ir), "-o", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.bin", "model.onnx", "model.xml"]
    assert not any(t.data_location == onnx.TensorProto.EXTERNAL for t in onnx.load(out).graph.initializer)


def test_a_failed_write_replaces_nothing(ir, tmp_path, monkeypatch):
    out = tmp_path / "model.onnx"
    assert main(["convert", str(ir), "-o", str(out), "--external-data"]) == 0
    before = {p.name: p.read_bytes() for p in (out, tmp_path / "model.onnx.data")}

    def half_written(model, path, *_):
        (path.parent / f"{path.name}.data").write_bytes(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(model_io, "_write_external", half_written)
    other = tmp_path / "other"
    other.mkdir()
    assert main(["convert", str(_ir(other, seed=5)), "-o", str(out), "--external-data"]) == 5
    assert {p.name: p.read_bytes() for p in (out, tmp_path / "model.onnx.data")} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.bin", "model.onnx", "model.onnx.data",
                                                         "model.xml", "other"]


def test_python_convert_with_external_data(ir, tmp_path):
    out = tmp_path / "m.onnx"
    model, _ = convert(ir, output=out, external_data=True)
    assert (tmp_path / "m.onnx.data").is_file()
    assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
    onnx.load_external_data_for_model(model, str(tmp_path))
    complete, _ = convert(ir, output=tmp_path / "inline.onnx")
    assert not (tmp_path / "inline.onnx.data").exists()
    assert all(np.array_equal(a, b) for a, b in zip(_arrays(model).values(), _arrays(complete).values()))
    assert not any(model_io.Weights.pending(t) for t in complete.graph.initializer)


def test_check_ir_reads_only_the_head(tmp_path):
    from onnx_bridge.commands._files import check_ir

    bad = tmp_path / "notes.xml"
    bad.write_text("<notes><a/></notes>")
    with pytest.raises(onnx_bridge.ModelError, match="root element is <notes>"):
        check_ir(bad)
    broken = tmp_path / "broken.xml"
    broken.write_text("not xml at all")
    with pytest.raises(onnx_bridge.ModelError, match="not well-formed"):
        check_ir(broken)
    head_only = tmp_path / "big.xml"
    head_only.write_text("<net name='x' version='11'>" + "<layer/>" * 10000 + "<unclosed")
    check_ir(head_only)  # the rest is OpenVINO's to judge
    assert os.path.getsize(head_only) > 70000


def test_a_session_on_a_model_past_the_limit(ir, tmp_path, monkeypatch):
    """Past protobuf's limit (here lowered) the session hands onnxruntime a copy with external data."""
    monkeypatch.setattr(model_io, "EXTERNAL_AUTO_BYTES", 16 * 1024)
    out = tmp_path / "model.onnx"
    assert main(["convert", str(ir), "-o", str(out)]) == 0
    serialized = []
    real = onnx_bridge.session._serialized

    def spy(model):
        context = real(model)
        serialized.append(model_io.needs_external_data(model))
        return context

    monkeypatch.setattr(onnx_bridge.session, "_serialized", spy)
    feed = np.random.default_rng(2).standard_normal((2, 64)).astype(np.float32)
    result = onnx_bridge.InferenceSession(str(out)).run(None, {"x": feed})[0]
    assert serialized == [True]
    np.testing.assert_allclose(result, _openvino(ir, feed), rtol=SUM_ORDER_TOLERANCE, atol=SUM_ORDER_TOLERANCE)


def test_slow_writes_print_progress(ir, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(model_io, "PROGRESS_AFTER", -1.0)
    monkeypatch.setattr(model_io._Progress, "INTERVAL", 0.0)
    weights = model_io.Weights()
    model_io.save_model(import_ir(ir, defer=weights), tmp_path / "m.onnx", weights=weights, external_data=True)
    assert "writing m.onnx.data: " in capsys.readouterr().err


def test_released_mapped_pages_still_read_the_same(tmp_path):
    """import_ir without defer drops the mapped pages of copied constants; OpenVINO's model reads the same."""
    from converters.openvino_ir import core
    from converters.openvino_ir._importer import import_model

    weights = np.random.default_rng(3).standard_normal((128, 256)).astype(np.float32)  # 128 KB, 32 pages
    x = op.parameter([2, 128], ov.Type.f32, name="x")
    xml = tmp_path / "big.xml"
    ov.save_model(ov.Model([op.matmul(x, op.constant(weights), False, False)], [x], "big"), str(xml),
                  compress_to_fp16=False)
    model = core().read_model(str(xml))
    imported = import_model(model)
    constant = next(n for n in model.get_ordered_ops() if n.get_type_name() == "Constant")
    assert np.array_equal(constant.get_data(), weights)  # faulted in again from the file
    assert np.array_equal(numpy_helper.to_array(imported.graph.initializer[0]), weights)
    feed = np.ones((2, 128), np.float32)
    np.testing.assert_allclose(core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(
        {"x": feed})[0], feed @ weights, rtol=1e-5, atol=1e-4)


def test_dialect_nodes_read_their_deferred_constants(tmp_path):
    """An IR with a dialect op (lowered by convert): the op's large constant input is put into the model
    before lowering, the other large constants stay deferred; the written model equals OpenVINO."""
    rng = np.random.default_rng(4)
    x = op.parameter([2, 64], ov.Type.f32, name="x")
    table = rng.standard_normal((64, 64)).astype(np.float32)
    updated = op.scatter_update(op.constant(table), op.constant(np.int64([3, 1])), op.relu(x),
                                op.constant(np.int64(0)))
    weights = rng.standard_normal((64, 48)).astype(np.float32)
    value = op.matmul(updated, op.constant(weights), False, False)
    xml = tmp_path / "scatter.xml"
    ov.save_model(ov.Model([value], [x], "scatter"), str(xml), compress_to_fp16=False)
    out = tmp_path / "scatter.onnx"
    assert main(["convert", str(xml), "-o", str(out)]) == 0
    written = onnx.load(out)
    assert not any(n.domain for n in written.graph.node)  # lowered to standard ONNX
    feed = rng.standard_normal((2, 64)).astype(np.float32)
    np.testing.assert_allclose(onnx_bridge.InferenceSession(str(out)).run(None, {"x": feed})[0],
                               _openvino(xml, feed), rtol=SUM_ORDER_TOLERANCE, atol=SUM_ORDER_TOLERANCE)
    weights_store = model_io.Weights()
    model, _ = convert(xml, weights=weights_store)
    pending = {t.name for t in model.graph.initializer if model_io.Weights.pending(t)}
    assert len(pending) == 1 and np.array_equal(weights_store.arrays[pending.pop()], weights)


def test_external_data_of_a_model_without_large_tensors(tmp_path, capsys):
    """--external-data on an ONNX input whose tensors are all small: one file, and the message says so."""
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Add", ["x", "b"], ["y"])], "small",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                              [numpy_helper.from_array(np.arange(4, dtype=np.float32), "b")])
    source = tmp_path / "in.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10), source)
    out = tmp_path / "out.onnx"
    assert main(["convert", str(source), "-o", str(out), "--external-data"]) == 0
    assert f"wrote {out}\n" in capsys.readouterr().out and not (tmp_path / "out.onnx.data").exists()
    assert np.array_equal(numpy_helper.to_array(onnx.load(out).graph.initializer[0]), np.arange(4))


@pytest.mark.parametrize("shape, dtype", [((768, 3072), np.int8), ((1024, 1000), np.uint8), ((520, 264), np.int8),
                                          ((260, 1024), np.int8), ((64, 64), np.int8), ((512, 512), np.float32)])
def test_contiguous_copy_of_a_transposed_weight_keeps_every_byte(shape, dtype):
    """model_io.contiguous copies a large transposed byte array ([N, K] int8 weights read as [K, N]) in 8-byte
    words then bytes (rows a multiple of 8, from an unaligned source too), other arrays as numpy does; its
    blocks (transposed_blocks) are the same rows, WORD_TRANSPOSE_ROWS at a time."""
    rng = np.random.default_rng(7)
    source = rng.integers(0, 127, shape[::-1]).astype(dtype)
    unaligned = np.empty(source.size + 1, dtype)[1:].reshape(source.shape)
    unaligned[...] = source
    for array in (source.T, unaligned.T, source.T[:, 1:]):
        copied = model_io.contiguous(array)
        assert copied.flags.c_contiguous and copied.dtype == dtype and np.array_equal(copied, array)
        if model_io.word_transposable(array):
            blocks = [block.copy() for block in model_io.transposed_blocks(array)]
            assert max(len(b) for b in blocks) == min(model_io.WORD_TRANSPOSE_ROWS, len(array))
            np.testing.assert_array_equal(np.concatenate(blocks), array)
    assert model_io.word_transposable(source.T) == (dtype != np.float32 and source.nbytes >= 1 << 18
                                                    and shape[0] % 8 == 0)


@pytest.mark.parametrize("external_data", [False, True])
def test_deferred_transposed_weights_are_written_block_by_block(tmp_path, monkeypatch, external_data):
    """A deferred int8 weight kept as a transposed view is written in blocks (no contiguous copy of it made):
    the same file as with the contiguous array, in one piece or as external data."""
    weight = np.random.default_rng(3).integers(-128, 127, (1024, 520)).astype(np.int8).T  # [520, 1024] view
    files = {}
    for kind, array in (("view", weight), ("copy", np.ascontiguousarray(weight))):
        model = onnx.helper.make_model(onnx.helper.make_graph(
            [onnx.helper.make_node("Identity", ["w"], ["y"])], "g", [],
            [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.INT8, list(weight.shape))]))
        weights = model_io.Weights()
        weights.defer(model.graph.initializer.add(), array, "w", onnx.TensorProto.INT8)
        made = []
        if kind == "view":
            monkeypatch.setattr(model_io, "contiguous", lambda a: made.append(a) or np.ascontiguousarray(a))
        path = model_io.save_model(model, tmp_path / kind / "m.onnx", weights=weights, external_data=external_data)
        monkeypatch.undo()
        assert not made  # (the writer never asked for the whole array contiguous)
        files[kind] = [f.read_bytes() for f in sorted(path.parent.iterdir())]
    assert files["view"] == files["copy"]
    loaded = onnx.load(str(tmp_path / "view" / "m.onnx"))
    np.testing.assert_array_equal(numpy_helper.to_array(loaded.graph.initializer[0]), weight)

