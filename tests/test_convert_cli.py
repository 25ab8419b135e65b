"""`onnx-bridge convert`: table on stdout, --report JSON, clear errors (exit 2), atomic output."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from test_lowering_harness import dialect_node, model_of, run_dialect, with_output_shapes

from onnx_bridge import cli
from onnx_bridge.config import DOMAIN


@pytest.fixture
def dialect_file(tmp_path):
    values = {"data": np.arange(6, dtype=np.float32).reshape(2, 3), "idx": np.array([[0, 2, 2]]),
              "upd": np.ones((1, 3), np.float32), "axis": np.int64(1), "axes": np.array([1]),
              "runtime": np.int64(1)}
    nodes = [dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "axis"], ["sum"], "scatter_sum",
                          reduction="sum"),
             dialect_node("ReduceL2", ["data", "axes"], ["norm"], "norm"),
             dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "runtime"], ["other"], "runtime_axis")]
    model, feeds = model_of(nodes, values, constants=("axis", "axes"),
                            outputs={"sum": (np.float32, None), "norm": (np.float32, None),
                                     "other": (np.float32, None)})
    with_output_shapes(model, run_dialect(model, feeds))
    path = tmp_path / "dialect.onnx"
    onnx.save(model, str(path))
    return path


def test_convert_prints_the_table_and_writes_the_model(dialect_file, tmp_path, capsys):
    out = tmp_path / "out" / "standard.onnx"
    assert cli.main(["convert", str(dialect_file), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    assert lines[0].split() == ["node", "op", "action", "reason"]
    assert any(line.startswith("scatter_sum") and " lowered " in line for line in lines)
    assert any(line.startswith("runtime_axis") and " kept " in line for line in lines)
    assert "3 nodes: 2 lowered, 1 kept" in printed and f"wrote {out}" in printed
    converted = onnx.load(str(out))
    assert [n.name for n in converted.graph.node if n.domain == DOMAIN] == ["runtime_axis"]


def test_report_json(dialect_file, tmp_path):
    report = tmp_path / "report.json"
    assert cli.main(["convert", str(dialect_file), "-o", str(tmp_path / "o.onnx"), "--report", str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["counts"] == {"lowered": 2, "kept": 1}
    assert [n["name"] for n in data["nodes"]] == ["scatter_sum", "norm", "runtime_axis"]
    assert data["nodes"][0]["emitted"] == ["ScatterElements"] and data["nodes"][0]["version"] == 12


def test_to_openvino_and_keep_all(dialect_file, tmp_path, capsys):
    lowered = tmp_path / "std.onnx"
    assert cli.main(["convert", str(dialect_file), "-o", str(lowered)]) == 0
    raised = tmp_path / "back.onnx"
    assert cli.main(["convert", str(lowered), "-o", str(raised), "--to", "openvino"]) == 0
    assert "2 raised" in capsys.readouterr().out
    assert cli.main(["convert", str(dialect_file), "-o", str(tmp_path / "same.onnx"), "--mode", "keep-all"]) == 0
    assert "3 kept" in capsys.readouterr().out


def test_require_standard_fails_and_writes_nothing(dialect_file, tmp_path, capsys):
    out = tmp_path / "must_not_exist.onnx"
    code = cli.main(["convert", str(dialect_file), "-o", str(out), "--mode", "require-standard"])
    assert code == 2
    error = capsys.readouterr().err
    assert "runtime_axis" in error and "cannot be lowered" in error
    assert not out.exists() and list(tmp_path.iterdir()) == [dialect_file]


@pytest.mark.parametrize("content,code,message", [(b"\x00garbage\xff" * 10, 2, "not a readable ONNX model"),
                                                  (None, 3, "does not exist")])
def test_bad_input_is_a_clear_error(tmp_path, capsys, content, code, message):
    source = tmp_path / "bad.onnx"
    if content is not None:
        source.write_bytes(content)
    out = tmp_path / "out.onnx"
    out.write_bytes(b"previous")
    assert cli.main(["convert", str(source), "-o", str(out)]) == code
    error = capsys.readouterr().err
    assert error.startswith("onnx-bridge convert: error:") and message in error
    assert out.read_bytes() == b"previous"  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out.onnx"] + (["bad.onnx"] if content else []))


def test_output_is_replaced_atomically(dialect_file, tmp_path):
    out = tmp_path / "out.onnx"
    out.write_bytes(b"previous")
    assert cli.main(["convert", str(dialect_file), "-o", str(out)]) == 0
    assert onnx.load(str(out)).graph.node
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dialect.onnx", "out.onnx"]  # no temporary left


def test_console_script_exit_code(tmp_path):
    source = tmp_path / "bad.onnx"
    source.write_bytes(b"nope")
    done = subprocess.run([sys.executable, "-m", "onnx_bridge.cli", "convert", str(source), "-o",
                           str(tmp_path / "o.onnx")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "error" in done.stderr


@pytest.mark.openvino
@pytest.mark.skipif(importlib.util.find_spec("converters.openvino_ir") is None,
                    reason="converters.openvino_ir not present")
def test_to_openvino_ir(tmp_path, capsys):
    values = {"x": np.array([[3, 4], [6, 8]], np.float32)}
    node = onnx.helper.make_node("ReduceL2", ["x"], ["y"], axes=[1], keepdims=0)
    model, _ = model_of([node], values, outputs={"y": (np.float32, [2])}, opset=13, dialect_opset=None)
    source = tmp_path / "std.onnx"
    onnx.save(model, str(source))
    xml = tmp_path / "model.xml"
    assert cli.main(["convert", str(source), "-o", str(xml), "--to", "openvino-ir"]) == 0
    assert xml.exists() and xml.with_suffix(".bin").exists()
    assert "1 raised" in capsys.readouterr().out


@pytest.fixture
def never_runs_file(tmp_path):
    """A ScatterElementsUpdate without its required `updates` input: it fails on every input."""
    values = {"data": np.arange(6, dtype=np.float32).reshape(2, 3), "idx": np.array([[0, 2, 2]]),
              "axis": np.int64(1)}
    node = dialect_node("ScatterElementsUpdate", ["data", "idx", "", "axis"], ["out"], "no_updates")
    model, _ = model_of([node], values, constants=("axis",), outputs={"out": (np.float32, None)})
    path = tmp_path / "never.onnx"
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("to", ["standard", "openvino"])
def test_a_node_that_can_never_run_is_an_error(never_runs_file, tmp_path, capsys, to):
    out = tmp_path / "out.onnx"
    assert cli.main(["convert", str(never_runs_file), "-o", str(out), "--to", to,
                     "--report", str(tmp_path / "r.json")]) == 7
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'no_updates' (ScatterElementsUpdate): required input 'updates' is missing" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["never.onnx"]


def test_allow_invalid_writes_it_with_a_warning(never_runs_file, tmp_path, capsys):
    out = tmp_path / "out.onnx"
    assert cli.main(["convert", str(never_runs_file), "-o", str(out), "--allow-invalid"]) == 0
    assert "warning: written with a node that can never run: 'no_updates'" in capsys.readouterr().out
    assert out.is_file()


@pytest.mark.parametrize("message, clean", [
    ("OpenVINO cannot read m.xml: Exception from src/inference/src/model_reader.cpp:148:\n"
     "Unable to read the model: \"m.xml\"\n\n", "OpenVINO cannot read m.xml: Unable to read the model: \"m.xml\""),
    ("Check 'rank' failed at src/core/a.cpp:12:\nWhile validating: shape mismatch\nAt:\n  /a/b.py(58): create\n"
     "  /a/c.py(17): unique", "While validating: shape mismatch"),
    ("The axis must be a Constant. At: /a/node_factory.py(58): create /a/ops.py(176): unique /a/deco",
     "The axis must be a Constant."),
    ("Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n    f()\nValueError: bad",
     "ValueError: bad"),
    ("cannot import m into ONNX\n  1 unsupported op\n  supported ops: y",
     "cannot import m into ONNX\n  1 unsupported op\n  supported ops: y"),  # an indented list stays
], ids=["cpp-prefix", "check-and-pybind-frames", "pybind-frames-one-line", "python-traceback", "list"])
def test_messages_lose_frame_text(message, clean):
    assert cli.clean_message(message) == clean


@pytest.mark.openvino
def test_to_openvino_ir_refusal_is_one_clean_line(tmp_path, capsys):
    """OpenVINO's refusal of a Unique whose axis is not a constant comes with pybind11 frames."""
    values = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "axis": np.array([1])}
    node = dialect_node("Unique", ["x", "axis"], ["y", "i", "r", "c"], "uniq")
    model, _ = model_of([node], values, outputs={"y": (np.float32, None), "i": (np.int64, None),
                                                  "r": (np.int64, None), "c": (np.int64, None)})
    source = tmp_path / "uniq.onnx"
    onnx.save(model, str(source))
    assert cli.main(["convert", str(source), "-o", str(tmp_path / "u.xml"), "--to", "openvino-ir"]) == 2
    err = capsys.readouterr().err
    assert err == ("onnx-bridge convert: error: OpenVINO could not read the model: The 'axis' input of the "
                   "Unique operator must be connected to a Constant.\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["uniq.onnx"]
