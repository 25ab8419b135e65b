"""`onnx-bridge run`: given or random inputs, dialect / standard ONNX / OpenVINO IR, atomic --output."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_bridge
from onnx_bridge.cli import main
from onnx_bridge.inputs import random_inputs

MODELS = Path(__file__).resolve().parents[1] / "models"


def _outputs(path: Path) -> dict:
    with np.load(path) as archive:
        return {key: archive[key] for key in archive.files}


def _inputs(name: str) -> dict:
    return _outputs(MODELS / f"{name}_inputs.npz")


def _standard_model(path: Path) -> Path:
    """x (float, [N, 3]) + flags (bool, [N]) + k (int64, [N]) -> three outputs, standard ONNX only."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["relu"]), helper.make_node("Not", ["flags"], ["not"]),
         helper.make_node("Gather", ["x", "k"], ["rows"], axis=0)], "standard",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("flags", TensorProto.BOOL, ["N"]),
         helper.make_tensor_value_info("k", TensorProto.INT64, ["K"])],
        [helper.make_tensor_value_info(n, t, None) for n, t in
         (("relu", TensorProto.FLOAT), ("not", TensorProto.BOOL), ("rows", TensorProto.FLOAT))])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10), path)
    return path


def test_given_inputs_and_atomic_output(tmp_path, capsys):
    out = tmp_path / "results" / "out.npz"
    code = main(["run", str(MODELS / "gnn_aggregation.onnx"), "--inputs",
                 str(MODELS / "gnn_aggregation_inputs.npz"), "--output", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "from " in printed and "out  node_embeddings: float32[12, 8]" in printed
    assert "out  neighbour_aggregates: float32[12, 24]" in printed
    assert sorted(p.name for p in out.parent.iterdir()) == ["out.npz"]  # no temporary left behind
    session = onnx_bridge.InferenceSession(str(MODELS / "gnn_aggregation.onnx"))
    expected = dict(zip([o.name for o in session.get_outputs()],
                        session.run(None, _inputs("gnn_aggregation"))))
    got = _outputs(out)
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value)


def test_random_inputs_are_seeded(tmp_path, capsys):
    model = str(MODELS / "voxel_pooling.onnx")
    runs = {}
    for label, seed in (("a", 3), ("b", 3), ("c", 4)):
        assert main(["run", model, "--seed", str(seed), "--dim-size", "20", "--output",
                     str(tmp_path / f"{label}.npz")]) == 0
        runs[label] = _outputs(tmp_path / f"{label}.npz")
    assert "random (seed 4)" in capsys.readouterr().out
    assert runs["a"]["voxel_features"].shape[1] == 4 and runs["a"]["point_voxel"].shape == (20,)
    for name in runs["a"]:
        np.testing.assert_array_equal(runs["a"][name], runs["b"][name])
    assert not np.array_equal(runs["a"]["feature_norms"], runs["c"]["feature_norms"])


def test_index_inputs_stay_in_range():
    """edge_index indexes node_features' first axis (through Gather rows, Unsqueeze, Expand, the scatter)."""
    model = onnx.load(MODELS / "gnn_aggregation.onnx")
    feeds = random_inputs(model, dim_size=50, dims={"node_features_0": 3})
    assert feeds["node_features"].shape == (3, 8) and feeds["edge_index"].shape == (2, 50)
    assert feeds["edge_index"].min() >= 0 and feeds["edge_index"].max() == 2
    session = onnx_bridge.InferenceSession(model)
    session.run(None, feeds)  # valid: no OpError
    kv = random_inputs(onnx.load(MODELS / "kv_cache.onnx"), dims={"key_cache_2": 7}, dim_size=30)
    assert kv["positions"].max() < 7  # the ScatterUpdate axis of the cache


def test_standard_model_with_bool_and_int_inputs(tmp_path, capsys):
    model = _standard_model(tmp_path / "standard.onnx")
    assert main(["run", str(model), "--dim", "N=5", "--dim", "K=2", "--output", str(tmp_path / "o.npz")]) == 0
    printed = capsys.readouterr().out
    assert "in   x: float32[5, 3]" in printed and "in   flags: bool[5]  true" in printed
    assert "in   k: int64[2]" in printed
    assert _outputs(tmp_path / "o.npz")["rows"].shape == (2, 3)


@pytest.mark.openvino
def test_openvino_ir_is_imported(tmp_path, capsys):
    pytest.importorskip("openvino")
    out = tmp_path / "ir.npz"
    assert main(["run", str(MODELS / "kv_cache.xml"), "--inputs", str(MODELS / "kv_cache_inputs.npz"),
                 "--output", str(out)]) == 0
    assert "out  attention: float32[1, 2, 2, 8]" in capsys.readouterr().out
    session = onnx_bridge.InferenceSession(str(MODELS / "kv_cache.onnx"))
    expected = session.run(None, _inputs("kv_cache"))
    for name, value in zip([o.name for o in session.get_outputs()], expected):
        np.testing.assert_array_equal(_outputs(out)[name], value)


def _npz(path: Path, **arrays) -> Path:
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("arrays, message", [
    (lambda f: {"points": f["points"]}, "missing features"),
    (lambda f: dict(f, bias=np.zeros(1)), "not inputs of the model: bias"),
    (lambda f: dict(f, points=f["points"].astype(np.float64)), "'points' is float64, not float32"),
], ids=["missing", "extra", "dtype"])
def test_bad_inputs_file(tmp_path, capsys, arrays, message):
    out = tmp_path / "out.npz"
    bad = _npz(tmp_path / "bad.npz", **arrays(_inputs("voxel_pooling")))
    assert main(["run", str(MODELS / "voxel_pooling.onnx"), "--inputs", str(bad), "--output", str(out)]) == 2
    error = capsys.readouterr().err
    assert message in error and "the model takes: points float[points_0,3], features float[features_0,4]" in error
    assert not out.exists()


def test_failing_op_reports_and_writes_nothing(tmp_path, capsys):
    feeds = _inputs("kv_cache")
    feeds["positions"] = np.array([5, 99])  # outside the 16-slot cache
    out = tmp_path / "out.npz"
    assert main(["run", str(MODELS / "kv_cache.onnx"), "--inputs", str(_npz(tmp_path / "i.npz", **feeds)),
                 "--output", str(out)]) == 2
    error = capsys.readouterr().err
    assert "ScatterUpdate" in error and "99" in error
    assert not out.exists() and list(tmp_path.iterdir()) == [tmp_path / "i.npz"]


@pytest.mark.parametrize("argv, code, message", [
    (["run", "nowhere.onnx"], 3, "model nowhere.onnx does not exist"),
    (["run", str(MODELS / "kv_cache.onnx"), "--dim", "N"], 2, "--dim expects NAME=SIZE"),
])
def test_usage_errors(capsys, argv, code, message):
    assert main(argv) == code
    assert message in capsys.readouterr().err
