"""IR conversion at scale: python benchmarks/ir_scale.py [--mb 100] [--repeats 3] [--markdown]

Builds a ~100 MB OpenVINO IR from a random-weight model (an MLP of f32 MatMul layers with bias, activation,
reshapes; weights kept in f32), then measures, each in a fresh process, median of --repeats:
  openvino   core.read_model(xml) + openvino.save_model(model, xml)   (OpenVINO reading and serializing it)
  import     converters.openvino_ir.import_ir(xml) + converters.model_io.save_model(onnx)
  cli        onnx-bridge convert model.xml -o model.onnx   (import, the per-node report, atomic save;
             the CLI's start-up, importing its modules, is excluded)
Peak memory: the process's peak resident set (VmHWM, reset after the imports) minus the resident set at
that point, as a multiple of the weights file (.bin). Targets (issue 13): import <= 2x openvino's time,
peak <= 2.5x the weights.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r'''
import json, sys, time
sys.path.insert(0, {root!r})
kind, xml, out = sys.argv[1:4]
import numpy, onnx, openvino
import converters.openvino_ir, converters.model_io, onnx_bridge.cli
onnx_bridge.cli.build_parser()  # the CLI's start-up (importing every subcommand) is not conversion time

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024

open("/proc/self/clear_refs", "w").write("5")  # reset the peak resident set
base = status("VmRSS")
start = time.perf_counter()
if kind == "openvino":
    core = openvino.Core()
    model = core.read_model(xml)
    openvino.save_model(model, out, compress_to_fp16=False)
elif kind == "import":
    model = converters.openvino_ir.import_ir(xml)
    converters.model_io.save_model(model, out)
else:
    import contextlib, io
    with contextlib.redirect_stdout(io.StringIO()):
        code = onnx_bridge.cli.main(["convert", xml, "-o", out])
    assert code == 0, code
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "peak": status("VmHWM") - base}}))
'''


def build(directory: Path, megabytes: int) -> Path:
    """An MLP whose f32 weights total ~`megabytes` MB: 1024x1024 MatMul layers with bias, Relu / Gelu, and
    a reshape round trip every layer (a few hundred ops)."""
    import numpy as np
    import openvino as ov
    import openvino.opset13 as op

    rng = np.random.default_rng(0)
    width = 1024
    layers = max(1, round(megabytes * 1e6 / (width * width * 4)))
    x = op.parameter([4, width], ov.Type.f32, name="x")
    value = x
    for layer in range(layers):
        weight = op.constant((rng.standard_normal((width, width)) / 32).astype(np.float32))
        bias = op.constant(rng.standard_normal(width).astype(np.float32))
        value = op.add(op.matmul(value, weight, False, layer % 2 == 1), bias)
        value = op.relu(value) if layer % 2 else op.gelu(value, "erf")
        value = op.reshape(op.reshape(value, op.constant(np.int64([4, 32, 32])), False),
                           op.constant(np.int64([4, width])), False)
    xml = directory / "scale.xml"
    ov.save_model(ov.Model([value], [x], "scale"), str(xml), compress_to_fp16=False)
    return xml


def measure(kind: str, xml: Path, directory: Path) -> dict:
    out = directory / (f"{kind}.xml" if kind == "openvino" else f"{kind}.onnx")
    done = subprocess.run([sys.executable, "-c", _CHILD.format(root=str(ROOT)), kind, str(xml), str(out)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100, help="weights size in MB (default 100)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        xml = build(directory, args.mb)
        weights = xml.with_suffix(".bin").stat().st_size
        import openvino as ov
        ops = len(ov.Core().read_model(str(xml)).get_ordered_ops())
        results = {}
        for kind in ("openvino", "import", "cli"):
            runs = [measure(kind, xml, directory) for _ in range(args.repeats)]
            results[kind] = {"seconds": statistics.median(r["seconds"] for r in runs),
                             "peak": statistics.median(r["peak"] for r in runs)}
    base = results["openvino"]["seconds"]
    rows = [(kind, f"{r['seconds']:.2f}", f"{r['seconds'] / base:.2f}x", f"{r['peak'] / 1e6:.0f}",
             f"{r['peak'] / weights:.2f}x") for kind, r in results.items()]
    header = ("", "seconds (median)", "vs openvino", "peak MB", "peak / weights")
    print(f"IR: {ops} ops, weights {weights / 1e6:.1f} MB, {args.repeats} runs each")
    if args.markdown:
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        for row in (header, *rows):
            print("  ".join(str(c).rjust(16) for c in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
