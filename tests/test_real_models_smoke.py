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
