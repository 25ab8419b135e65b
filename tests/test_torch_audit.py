"""onnx_bridge.torch.audit and `onnx-bridge audit`: stock torch.onnx vs the bridge, against torch eager."""
from __future__ import annotations

import textwrap

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")

from onnx_bridge.cli import main  # noqa: E402
from onnx_bridge.torch.audit import EXPORTERS, audit  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]


class ScatterMean(torch.nn.Module):
    def forward(self, data, index):
        return data.scatter_reduce(0, index, data, "mean")


ARGS = (torch.tensor([1.0, 2, 3, 4]), torch.tensor([0, 0, 1, 1]))


def test_audit_tells_silently_wrong_stock_export_from_the_bridge():
    report = audit(ScatterMean(), ARGS, input_sets=[(torch.tensor([5.0, 2, 3, 8]), torch.tensor([1, 1, 1, 0]))])
    status = {row.exporter: row.status for row in report.rows}
    # stock dynamo exports mean as ScatterElements(reduction="none"); stock TorchScript refuses mean
    assert status == {"stock dynamo": "wrong", "stock TorchScript": "error", "bridge dynamo": "ok",
                      "bridge TorchScript": "ok"}
    wrong = report.row("stock dynamo")
    assert wrong.max_abs_diff > 0 and "scatter_reduce" in wrong.detail
    assert "mean reduction" in report.row("stock TorchScript").detail
    table = str(report)
    assert all(exporter in table for exporter in EXPORTERS) and "scatter_reduce" in table


def test_audit_restores_the_bridge_symbolics():
    import onnx_bridge.torch as obt
    obt.register_symbolics()
    audit(ScatterMean(), ARGS, exporters=["stock TorchScript"])
    assert obt._REGISTERED  # the stock TorchScript export unregistered them only while it ran


def test_cli_audit(tmp_path, capsys):
    factory = tmp_path / "factory.py"
    factory.write_text(textwrap.dedent("""
        import torch

        class M(torch.nn.Module):
            def forward(self, x, i):
                return torch.zeros(3, dtype=torch.int64).index_add(0, i, x)

        def make():
            return M(), (torch.tensor([5, 7, 9]), torch.tensor([0, 0, 2]))
    """))
    code = main(["audit", f"{factory}:make", "--exporter", "bridge TorchScript", "--exporter", "bridge dynamo"])
    out = capsys.readouterr().out
    assert code == 0 and "bridge TorchScript  ok" in out and "bridge dynamo       ok" in out
    assert main(["audit", f"{factory}:nothing"]) == 2
    assert "has no function 'nothing'" in capsys.readouterr().err
