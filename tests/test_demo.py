"""`onnx-bridge demo` (the README's main command) runs the gallery and every path agrees."""
import pytest

from onnx_bridge.cli import main


@pytest.mark.openvino
def test_demo_runs_the_gallery(capsys):
    assert main(["demo", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    for model in ("gnn_aggregation", "kv_cache", "voxel_pooling", "pyg_gnn"):
        assert f"\n{model}:" in out
    assert out.count("reference") == 4
    assert "torch eager (recorded)" in out  # pyg_gnn, exported from torch: compared with torch's outputs
    assert "not run" not in out and "differs" not in out and "shape" not in out.split("agreement")[-1]
