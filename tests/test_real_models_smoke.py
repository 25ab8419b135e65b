"""benchmarks/real_models.py runs end to end (a tiny CNN, one timed round): f32 and nncf INT8 rows, the QDQ
form fused into onnxruntime's integer convolutions."""
from __future__ import annotations

import pytest

pytest.importorskip("openvino")
pytest.importorskip("nncf")
pytest.importorskip("torch")

pytestmark = [pytest.mark.openvino, pytest.mark.zoo, pytest.mark.filterwarnings("ignore")]


def test_real_models_table(capsys):
    """Three speed rows, the per-group geometric means, and one import row per IR (in process and in a fresh
    process against OpenVINO's read+save)."""
    from benchmarks import real_models

    assert real_models.main(["tiny_cnn", "--rounds", "1", "--imports", "1", "--fresh", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| tiny_cnn |")]
    assert [row.split("|")[2].strip() for row in rows] == ["f32", "int8 qdq", "int8 exact"]
    assert "QLinearConv" in rows[1] and "QLinearConv" not in rows[2]
    means = [line.split(":")[0] for line in out.splitlines() if line.startswith("geometric mean")]
    assert means == ["geometric mean, all rows, the default forms (f32, int8 qdq)", "geometric mean, f32 CNN",
                     "geometric mean, int8 qdq (the default INT8 form)", "geometric mean, int8 exact (`--int8 exact`)"]
    imports = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith(("| tiny_cnn f32 ",
                                                                                       "| tiny_cnn int8 "))]
    assert [cells[0].strip() for cells in imports] == ["tiny_cnn f32", "tiny_cnn int8"]
    for cells in imports:
        ops, ours, theirs, fresh_ours, fresh_theirs = (float(cells[i]) for i in (1, 4, 3, 7, 6))
        assert ops > 10 and ours > 0 and theirs > 0 and fresh_ours > ours / 1000 and fresh_theirs > theirs / 1000
        # one run each: the paired ratios are the ratios of the unrounded times
        assert float(cells[5].strip(" x")) == pytest.approx(ours / theirs, rel=0.05, abs=0.01)
        assert float(cells[8].strip(" x")) == pytest.approx(fresh_ours / fresh_theirs, rel=0.05, abs=0.01)
        peaks = [float(v.strip(" x")) for v in cells[9].split("/")]
        assert len(peaks) == 2 and all(v > 0 for v in peaks)  # each process's resident set grows while working
    assert "import, geometric mean in process:" in out and "import, geometric mean fresh process:" in out


def test_import_ratios_are_paired_by_round(tmp_path, monkeypatch):
    """Fresh-process import ratios: the median over rounds of the two runs' ratio (not the ratio of medians),
    the two kinds' order alternating from round to round."""
    import openvino as ov
    import openvino.opset13 as ops

    from benchmarks import ir_scale, real_models

    xml = tmp_path / "relu.xml"
    parameter = ops.parameter([2], ov.Type.f32)
    ov.save_model(ov.Model([ops.relu(parameter)], [parameter]), str(xml))
    walls = {"openvino": iter([1.0, 2.0, 1.0]), "cli": iter([1.5, 2.2, 1.6])}  # per round 1.5, 1.1, 1.6
    order = []

    def fake_run(kind, _xml, _directory):
        order.append(kind)
        return {"wall": next(walls[kind]), "peak": 1}

    monkeypatch.setattr(ir_scale, "run", fake_run)
    times = real_models.import_times(xml, tmp_path / "import", runs=1, fresh=3)
    assert order == ["openvino", "cli", "cli", "openvino", "openvino", "cli"]
    assert times["fresh_paired"] == pytest.approx(1.5)  # the ratio of the medians would be 1.6
    assert times["fresh_runs"] == 3 and times["fresh_convert_s"] == pytest.approx(1.6)


def test_model_sets():
    from benchmarks.real_models import DEFAULT, MODELS, models_of, unknown_models

    assert models_of([]) == list(DEFAULT) and models_of(["default", "resnet18"]) == list(DEFAULT)
    issue = models_of(["issue"])
    assert set(DEFAULT) < set(issue) and "tiny_cnn" not in issue and len(issue) == len(MODELS) - 1
    assert {MODELS[n].family for n in issue} == {"cnn", "transformer"}
    assert unknown_models(["issue", "tiny_cnn"]) is None and "resnet_nine" in unknown_models(["resnet_nine"])


def test_bench_models_writes_the_table_between_the_markers(tmp_path, capsys):
    import json

    from onnx_bridge.cli import main

    page = tmp_path / "performance.md"
    page.write_text("intro\n<!-- real-models: begin -->\nold table\n<!-- real-models: end -->\nafter\n")
    assert main(["bench", "--models", "tiny_cnn", "--tiny", "--markdown", str(page),
                 "--json", str(tmp_path / "rows.json")]) == 0
    text = page.read_text()
    assert text.startswith("intro\n<!-- real-models: begin -->\n| model | form |") and text.endswith(
        "<!-- real-models: end -->\nafter\n") and "old table" not in text
    assert [r["form"] for r in json.loads((tmp_path / "rows.json").read_text())["models"]] == [
        "f32", "int8 qdq", "int8 exact"]
    out = capsys.readouterr().out
    assert "| tiny_cnn | int8 qdq |" in out and "| tiny_cnn int8 | " in out  # --tiny: no fresh process
    assert "import, geometric mean in process" in out and "import, geometric mean fresh process" not in out


def test_bench_models_refuses_an_unknown_model(capsys):
    from onnx_bridge.cli import main

    assert main(["bench", "--models", "resnet_nine"]) != 0
    assert "unknown model(s) resnet_nine; choose from" in capsys.readouterr().err


def test_f64_semantics_is_the_fake_quantize_graph_in_float64():
    """f64_outputs computes the exact form in float64 (onnxruntime, or onnx.reference for a Conv): equal to
    numpy's float64 FakeQuantize formula, and not to the float32 result."""
    import numpy as np
    import openvino as ov
    from openvino import opset13 as op

    from benchmarks.real_models import f64_outputs
    from converters.openvino_ir import import_ir

    x = op.parameter([1, 2, 5, 5], np.float32, name="x")
    limits = [np.float32(v) for v in (-1.3, 2.9, -1.3, 2.9)]
    fq = op.fake_quantize(x, *[op.constant(v) for v in limits], 255)
    weights = np.random.default_rng(3).standard_normal((3, 2, 3, 3)).astype(np.float32)
    conv = op.convolution(fq, op.constant(weights), [1, 1], [0, 0], [0, 0], [1, 1])
    model = ov.Model([conv, op.divide(fq, op.constant(np.float32(3)))], [x])
    feeds = {"x": np.random.default_rng(4).uniform(-2, 3, (1, 2, 5, 5)).astype(np.float32)}
    got = f64_outputs(import_ir(model, int8="exact"), [feeds])[0]
    assert all(v.dtype == np.float64 for v in got)
    il, ih = (np.float64(v) for v in limits[:2])
    data = np.clip(feeds["x"].astype(np.float64), il, ih)
    quantized = np.round((data - il) / (ih - il) * 254) / 254 * (ih - il) + il
    np.testing.assert_allclose(got[1], quantized / 3, rtol=1e-15)
    windows = np.lib.stride_tricks.sliding_window_view(quantized, (3, 3), axis=(2, 3))  # [1, 2, 3, 3, 3, 3]
    conv64 = np.einsum("bchwij,ocij->bohw", windows, weights.astype(np.float64))
    np.testing.assert_allclose(got[0], conv64, rtol=1e-12, atol=1e-12)
