"""IR conversion at scale: python benchmarks/ir_scale.py [--case NAME ...] [--repeats 3] [--markdown]

Builds OpenVINO IRs shaped like real models and measures, each run in a FRESH process (start-up included),
the median of --repeats:
  openvino  python: core.read_model(xml) + openvino.save_model(model, out.xml)  (OpenVINO's own read + write)
  import    python: import_ir(xml, defer=Weights()) + save_model(onnx, out, weights=...): the one pass, large
            constants written straight from OpenVINO's memory
  proto     python: import_ir(xml) + save_model(onnx, out): a complete ModelProto in between
  cli       onnx-bridge convert model.xml -o out.onnx (the console script: start-up, per-node report, atomic
            save; external data when the weights pass protobuf's 2 GB limit)
Columns: wall seconds of the whole process; the work alone (after the imports, clocked inside the process);
peak memory = the process's peak resident set (VmHWM) minus its resident set after the imports, as a multiple
of the weights file (.bin). Targets: import <= 1.5x openvino's read + save (start-up
included) and peak <= 1.5x the weights; the >= 1 GB LLM case <= 2x openvino's time.

Cases:
  transformer  BERT-like encoder, 24 layers, hidden 384: ~3,000 ops, weights f16 (OpenVINO's
               compress_to_fp16: f16 Constants + decompression Converts), every layer tensor < 1 MiB,
               one 23 MB embedding table
  transformer-f32  the same, weights f32
  small        a small CNN (~1 MB), where start-up dominates
  resnet18     torchvision's resnet18 through ov.convert_model (needs torch; not in the default list)
  llm          24 decoder layers of [2048, 8192] f16 MatMul weights (~1.6 GB .bin; not in the default list):
               the CLI writes external data (--external-data), the progress line is shown
  llm-int4     16 gated-MLP layers of nncf's INT4_ASYM form (u4 [N, K/128, 128] + u4 zero points + f16 scales;
               1.08 GB of packed weights; not in the default list): MatMulNBits whose packed B is written
               straight from OpenVINO's bytes, one .onnx and with --external-data
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r'''
import json, sys, time
sys.path.insert(0, {root!r})
kind, xml, out = sys.argv[1:4]

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024

import openvino
from benchmarks.ir_scale import openvino_read_save
if kind != "openvino":
    import converters.openvino_ir, converters.model_io
open("/proc/self/clear_refs", "w").write("5")  # reset the peak resident set
base = status("VmRSS")
start = time.perf_counter()
if kind == "openvino":
    openvino_read_save(xml, out)
elif kind == "import":
    weights = converters.model_io.Weights()
    model = converters.openvino_ir.import_ir(xml, defer=weights)
    converters.model_io.save_model(model, out, weights=weights)
else:
    model = converters.openvino_ir.import_ir(xml)
    converters.model_io.save_model(model, out)
seconds = time.perf_counter() - start
print(json.dumps({{"work": seconds, "peak": status("VmHWM") - base}}))
'''

#: The CLI run: the console script's own code path, peak measured the same way (after its module imports, made
#: as the console script makes them: OpenBLAS on one thread, the cyclic collector paused), its process ended the
#: same way (cli.end_process).
_CLI = r'''
import gc, json, sys, time
sys.path.insert(0, {root!r})
from onnx_bridge import cli
cli.limit_blas_threads("convert")
gc.disable()
import converters.openvino_ir, openvino  # what every conversion of an IR imports: start-up, not conversion memory
from benchmarks.ir_scale import cli_convert

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024

base = status("VmRSS")
open("/proc/self/clear_refs", "w").write("5")
start = time.perf_counter()
cli_convert(sys.argv[2], sys.argv[3], *sys.argv[4:])
print(json.dumps({{"work": time.perf_counter() - start, "peak": status("VmHWM") - base}}))
cli.end_process(0, "convert")
'''


def openvino_read_save(xml, out) -> None:
    """OpenVINO's own read + write of an IR, what an import is measured against: core.read_model + save_model
    (weights as read: no second compression)."""
    import openvino

    openvino.save_model(openvino.Core().read_model(str(xml)), str(out), compress_to_fp16=False)


def cli_convert(xml, out, *options) -> None:
    """`onnx-bridge convert XML -o OUT [options]` in this process (its per-node report swallowed)."""
    import contextlib
    import io

    from onnx_bridge import cli

    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["convert", str(xml), "-o", str(out), *options])
    if code:
        raise RuntimeError(f"onnx-bridge convert {xml} failed with exit code {code}")


def _layer_norm(op, np, value, width, rng):
    mean = op.mvn(value, op.constant(np.int64([-1])), True, 1e-12, "inside_sqrt")
    return op.add(op.multiply(mean, op.constant(rng.standard_normal(width).astype(np.float32))),
                  op.constant(rng.standard_normal(width).astype(np.float32)))


def _dense(op, np, value, rows, cols, rng):
    weight = op.constant((rng.standard_normal((cols, rows)) / 32).astype(np.float32))
    return op.add(op.matmul(value, weight, False, True), op.constant(rng.standard_normal(cols).astype(np.float32)))


def build_transformer(directory: Path, layers=24, hidden=384, heads=6, ffn=1280, vocab=30522, seq=16,
                      f16=True) -> Path:
    """BERT-like encoder: per layer q/k/v/o dense, attention (reshape, transpose, matmul, softmax), two
    LayerNorms (MVN), a GELU MLP: about 120 ops and 14 constants per layer, each under 1 MiB."""
    import numpy as np
    import openvino as ov
    import openvino.opset13 as op

    rng = np.random.default_rng(0)
    ids = op.parameter([1, seq], ov.Type.i64, name="input_ids")
    table = op.constant((rng.standard_normal((vocab, hidden)) / 8).astype(np.float32))
    value = op.gather(table, ids, op.constant(np.int64(0)))
    value = _layer_norm(op, np, value, hidden, rng)
    head = hidden // heads
    split = op.constant(np.int64([1, seq, heads, head]))
    for _ in range(layers):
        def heads_of(x):
            return op.transpose(op.reshape(x, split, False), op.constant(np.int64([0, 2, 1, 3])))
        q, k, v = (heads_of(_dense(op, np, value, hidden, hidden, rng)) for _ in range(3))
        scores = op.multiply(op.matmul(q, k, False, True), op.constant(np.float32(1 / np.sqrt(head))))
        context = op.matmul(op.softmax(scores, -1), v, False, False)
        context = op.reshape(op.transpose(context, op.constant(np.int64([0, 2, 1, 3]))),
                             op.constant(np.int64([1, seq, hidden])), False)
        value = _layer_norm(op, np, op.add(value, _dense(op, np, context, hidden, hidden, rng)), hidden, rng)
        inner = op.gelu(_dense(op, np, value, hidden, ffn, rng), "erf")
        value = _layer_norm(op, np, op.add(value, _dense(op, np, inner, ffn, hidden, rng)), hidden, rng)
    xml = directory / "transformer.xml"
    ov.save_model(ov.Model([value], [ids], "transformer"), str(xml), compress_to_fp16=f16)
    return xml


def build_small(directory: Path) -> Path:
    """A small CNN: 8 convolutions with bias and ReLU, pooling, a classifier (~1 MB of f32 weights)."""
    import numpy as np
    import openvino as ov
    import openvino.opset13 as op

    rng = np.random.default_rng(1)
    x = op.parameter([1, 3, 32, 32], ov.Type.f32, name="image")
    value, channels = x, 3
    for layer in range(8):
        out = 32 * (1 + layer // 2)
        weight = op.constant((rng.standard_normal((out, channels, 3, 3)) / 16).astype(np.float32))
        value = op.convolution(value, weight, [1, 1], [1, 1], [1, 1], [1, 1])
        value = op.relu(op.add(value, op.constant(rng.standard_normal((1, out, 1, 1)).astype(np.float32))))
        if layer % 2:
            value = op.max_pool(value, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2]).output(0)
        channels = out
    value = op.reduce_mean(value, op.constant(np.int64([2, 3])), False)
    value = _dense(op, np, value, channels, 1000, rng)
    xml = directory / "small.xml"
    ov.save_model(ov.Model([value], [x], "small"), str(xml), compress_to_fp16=False)
    return xml


def build_llm(directory: Path, layers=24, hidden=2048, inner=8192) -> Path:
    """LLM-like: `layers` decoder MLP blocks with [inner, hidden] and [hidden, inner] f16 weights (each
    8192x2048 f16 = 32 MiB; 24 layers x 2 = 1.6 GB), decompression Converts to f32, RMS-norm-ish scaling."""
    import numpy as np
    import openvino as ov
    import openvino.opset13 as op

    rng = np.random.default_rng(2)
    x = op.parameter([1, 4, hidden], ov.Type.f32, name="hidden_states")
    value = x
    for layer in range(layers):
        def weight(rows, cols):
            data = rng.standard_normal((rows, cols), dtype=np.float32).astype(np.float16)
            return op.convert(op.constant(data), ov.Type.f32)
        up = op.matmul(value, weight(inner, hidden), False, True)
        down = op.matmul(op.swish(up), weight(hidden, inner), False, True)
        value = op.add(value, op.multiply(down, op.constant(np.float32(0.01))))
    xml = directory / "llm.xml"
    ov.save_model(ov.Model([value], [x], "llm"), str(xml), compress_to_fp16=False)
    return xml


def build_llm_int4(directory: Path, layers=16, hidden=4096, inner=11008, group=128) -> Path:
    """LLM-like with nncf's INT4_ASYM weights: `layers` gated MLP blocks (gate, up [inner, hidden], down
    [hidden, inner]), each weight Constant u4 [N, K/group, group] -> Convert f16 -> Subtract(u4 zero point
    [N, K/group, 1]) -> Multiply(f16 scale) -> Reshape [N, K] -> Convert f32 -> MatMul(transpose_b): 16 layers
    of 3 x 4096x11008 = 1.08 GB of packed weights (random bytes: every nibble a value)."""
    import numpy as np
    import openvino as ov
    import openvino.opset13 as op

    rng = np.random.default_rng(3)

    def u4(shape):
        tensor = ov.Tensor(ov.Type.u4, ov.Shape(shape))
        tensor.data[:] = rng.integers(0, 256, tensor.data.size, dtype=np.uint8)  # packed, two values a byte
        return op.convert(ov.op.Constant(tensor, shared_memory=True), ov.Type.f16)

    def weight(rows, cols):
        blocks = cols // group
        value = op.subtract(u4([rows, blocks, group]), u4([rows, blocks, 1]))
        scale = (rng.random((rows, blocks, 1), dtype=np.float32) / cols).astype(np.float16)  # finite outputs
        value = op.reshape(op.multiply(value, op.constant(scale)), op.constant(np.int64([rows, cols])), False)
        return op.convert(value, ov.Type.f32)

    x = op.parameter([1, 4, hidden], ov.Type.f32, name="hidden_states")
    value = x
    for layer in range(layers):
        gate = op.matmul(value, weight(inner, hidden), False, True)
        up = op.matmul(value, weight(inner, hidden), False, True)
        down = op.matmul(op.multiply(op.swish(gate), up), weight(hidden, inner), False, True)
        value = op.add(value, op.multiply(down, op.constant(np.float32(0.01))))
    xml = directory / "llm_int4.xml"
    ov.save_model(ov.Model([value], [x], "llm_int4"), str(xml), compress_to_fp16=False)
    return xml


def build_resnet18(directory: Path) -> Path:
    """torchvision's resnet18 (random weights, f32) through ov.convert_model: a real CNN's IR."""
    import openvino as ov
    import torch

    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.zoo import import_torchvision  # (torchvision's C ops do not load beside CPU torch)

    torchvision = import_torchvision()
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    converted = ov.convert_model(model, example_input=torch.zeros(1, 3, 224, 224))
    xml = directory / "resnet18.xml"
    ov.save_model(converted, str(xml), compress_to_fp16=False)
    return xml


BUILDERS = {
    "transformer": lambda d: build_transformer(d),
    "transformer-f32": lambda d: build_transformer(d, f16=False),
    "small": build_small,
    "llm": build_llm,
    "llm-int4": build_llm_int4,
    "resnet18": build_resnet18,
}


KINDS = ("openvino", "import", "proto", "cli")
PACKAGES = ("onnx_bridge", "converters", "custom_ops", "benchmarks")


@functools.cache
def compile_packages() -> None:
    """Byte-compile this checkout's packages, as installing a package does (OpenVINO, onnx and numpy come
    compiled in site-packages): with PYTHONDONTWRITEBYTECODE set and no __pycache__, every fresh process would
    compile our sources again (0.1-0.3 s of the start-up measured, not of a user's)."""
    import compileall

    for package in PACKAGES:
        compileall.compile_dir(str(ROOT / package), quiet=1)


def run(kind: str, xml: Path, directory: Path) -> dict:
    compile_packages()
    out = directory / ("out.xml" if kind == "openvino" else "out.onnx")
    script = (_CLI if kind.startswith("cli") else _CHILD).format(root=str(ROOT))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    extra = ["--external-data"] if kind == "cli --external-data" else []
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, kind, str(xml), str(out), *extra], capture_output=True,
                          text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{kind} failed: {done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["stderr"] = done.stderr
    for leftover in directory.glob("out.*"):
        leftover.unlink()
    result["wall"] = wall
    return result


def measure(case: str, repeats: int, directory: Path, only=None) -> tuple[dict, dict]:
    xml = BUILDERS[case](directory)
    import openvino as ov
    facts = {"case": case, "ops": len(ov.Core().read_model(str(xml)).get_ordered_ops()),
             "weights": xml.with_suffix(".bin").stat().st_size}
    kinds = {"llm": ("openvino", "import", "cli --external-data"),
             "llm-int4": ("openvino", "cli", "cli --external-data")}.get(case, KINDS)
    if only:
        kinds = [kind for kind in kinds if kind == "openvino" or kind.split()[0] in only]
    runs: dict[str, list] = {kind: [] for kind in kinds}
    for _ in range(repeats):  # interleaved, so load changes hit every kind alike
        for kind in runs:
            runs[kind].append(run(kind, xml, directory))
    results = {kind: {key: statistics.median(r[key] for r in rs) for key in ("wall", "work", "peak")}
               for kind, rs in runs.items()}
    progress = [line for rs in runs.values() for r in rs for line in r["stderr"].replace("\r", "\n").splitlines()
                if line.startswith(("importing", "writing"))]
    if progress:
        print(f"{case}: progress lines on stderr, e.g. {progress[-1]!r}", file=sys.stderr)
    for path in directory.iterdir():
        path.unlink() if path.is_file() else shutil.rmtree(path)
    return facts, results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(BUILDERS),
                        help="which IR (repeatable; default: transformer, transformer-f32, small)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--dir", help="build the IRs here (default: a temporary directory)")
    parser.add_argument("--kind", action="append", choices=KINDS,
                        help="measure only these (repeatable; openvino is always measured)")
    args = parser.parse_args(argv)
    header = ("case", "kind", "wall s", "vs openvino", "work s", "vs openvino", "peak MB", "peak / weights")
    rows = []
    for case in args.case or ["transformer", "transformer-f32", "small"]:
        with tempfile.TemporaryDirectory(dir=args.dir) as name:
            facts, results = measure(case, args.repeats, Path(name), args.kind)
        print(f"{case}: {facts['ops']} ops, weights {facts['weights'] / 1e6:.1f} MB, {args.repeats} runs each",
              file=sys.stderr)
        base = results["openvino"]
        for kind, r in results.items():
            rows.append((f"{case} ({facts['ops']} ops, {facts['weights'] / 1e6:.0f} MB)", kind, f"{r['wall']:.2f}",
                         f"{r['wall'] / base['wall']:.2f}x", f"{r['work']:.2f}", f"{r['work'] / base['work']:.2f}x",
                         f"{r['peak'] / 1e6:.0f}", f"{r['peak'] / facts['weights']:.2f}x"))
    if args.markdown:
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        for row in (header, *rows):
            print("  ".join(str(c).rjust(14) for c in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
