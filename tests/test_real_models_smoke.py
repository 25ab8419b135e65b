"""benchmarks/real_models.py runs end to end (a tiny CNN, one timed round): f32 and nncf INT8 rows, the QDQ
form fused into onnxruntime's integer convolutions."""
from __future__ import annotations

import pytest

pytest.importorskip("openvino")
pytest.importorskip("nncf")
pytest.importorskip("torch")

pytestmark = [pytest.mark.openvino, pytest.mark.zoo, pytest.mark.filterwarnings("ignore")]


def test_real_models_table(capsys):
    from benchmarks import real_models

    assert real_models.main(["tiny_cnn", "--rounds", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| tiny_cnn")]
    assert [row.split("|")[2].strip() for row in rows] == ["f32", "int8 qdq", "int8 exact"]
    assert "QLinearConv" in rows[1] and "QLinearConv" not in rows[2]


def test_bench_models_writes_the_table_between_the_markers(tmp_path, capsys):
    import json

    from onnx_bridge.cli import main

    page = tmp_path / "performance.md"
    page.write_text("intro\n<!-- real-models: begin -->\nold table\n<!-- real-models: end -->\nafter\n")
    assert main(["bench", "--models", "tiny_cnn", "--repeats", "1", "--markdown", str(page),
                 "--json", str(tmp_path / "rows.json")]) == 0
    text = page.read_text()
    assert text.startswith("intro\n<!-- real-models: begin -->\n| model | form |") and text.endswith(
        "<!-- real-models: end -->\nafter\n") and "old table" not in text
    assert [r["form"] for r in json.loads((tmp_path / "rows.json").read_text())["models"]] == [
        "f32", "int8 qdq", "int8 exact"]
    assert "| tiny_cnn | int8 qdq |" in capsys.readouterr().out


def test_bench_models_refuses_an_unknown_model(capsys):
    from onnx_bridge.cli import main

    assert main(["bench", "--models", "resnet_nine"]) != 0
    assert "unknown model(s) resnet_nine; choose from" in capsys.readouterr().err
