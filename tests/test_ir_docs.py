"""The supported-op table: generated from the import rules into docs/openvino_ir.md and printed by
`onnx-bridge convert --list-ops`; and the CLI's behaviour on an IR it refuses."""
from __future__ import annotations

import pytest

from converters.openvino_ir import supported_ops
from converters.openvino_ir._doctable import PAGE, render
from converters.openvino_ir._registry import DOCS
from onnx_bridge import cli


def test_docs_table_is_current():
    text = PAGE.read_text()
    assert text == render(text), "regenerate: python -m converters.openvino_ir._doctable"


def test_every_rule_says_what_it_emits():
    assert not [f"{name}-{version}" for (name, version), doc in DOCS.items() if not doc.onnx]


def test_list_ops_prints_every_supported_op(capsys):
    assert cli.main(["convert", "--list-ops"]) == 0
    printed = capsys.readouterr().out
    assert not [label for label in supported_ops() if label not in printed]
    assert "FakeQuantize-1" in printed and "Loop-5" in printed and "refuses:" in printed


def test_convert_needs_input_and_output(capsys):
    assert cli.main(["convert", "model.onnx"]) == 2


@pytest.mark.openvino
def test_refused_ir_lists_everything_exits_8_and_writes_nothing(tmp_path, capsys):
    ov = pytest.importorskip("openvino")
    import openvino.opset13 as op
    x = op.parameter([4], ov.Type.f32, name="x")
    order = op.parameter([1], ov.Type.i64, name="order")  # Transpose: ONNX needs a constant order
    model = ov.Model([op.transpose(x, order).output(0), op.transpose(op.negative(x), order).output(0)], [x, order])
    xml = tmp_path / "m.xml"
    ov.save_model(model, str(xml))
    out = tmp_path / "m.onnx"
    code = cli.main(["convert", str(xml), "-o", str(out)])
    error = capsys.readouterr().err
    assert code == 8 and not out.exists()
    assert error.count("order (input 1) must be a Constant") == 2
    assert cli.main(["convert", str(tmp_path / "missing.xml"), "-o", str(out)]) == 3  # a missing input


@pytest.mark.openvino
def test_slow_conversion_prints_progress(monkeypatch, capsys):
    ov = pytest.importorskip("openvino")
    import openvino.opset13 as op
    from converters.openvino_ir import _importer, import_ir
    monkeypatch.setattr(_importer, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(_importer._Progress, "INTERVAL", 0.0)
    x = op.parameter([2], ov.Type.f32, name="x")
    value = x
    for _ in range(80):
        value = op.relu(value)
    import_ir(ov.Model([value], [x]))
    assert "importing openvino.Model" in capsys.readouterr().err
