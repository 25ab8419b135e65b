from pathlib import Path

from onnx_bridge.cli import usage_markdown


def test_cli_page_is_current(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    page = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
    assert page.read_text() == usage_markdown(), "regenerate: python -m onnx_bridge.cli --markdown > docs/cli.md"
