"""`onnx-bridge demo`: convert a real architecture's OpenVINO IR (torchvision resnet18 with random weights,
built now when torch is installed), run it and `compare` it with OpenVINO; then run the model gallery through
every path and show agreement and timing."""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np
import onnx

from ._files import InputFileError

HELP = "run the bundled model gallery through the custom ops, the lowered model and OpenVINO"
_CHECKOUT_MODELS = Path(__file__).resolve().parents[2] / "models"
#: The gallery: models/ of a checkout, or the copy an installed wheel carries (see setup.py).
DEFAULT_MODELS = _CHECKOUT_MODELS if _CHECKOUT_MODELS.is_dir() else Path(__file__).resolve().parents[1] / "gallery"


def add_arguments(parser) -> None:
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS,
                        help="directory holding <name>.onnx, <name>_inputs.npz and <name>.xml "
                             "(default: the bundled gallery, models/ in a checkout)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per path (median shown)")
    parser.add_argument("--no-architecture", action="store_true",
                        help="skip building, converting and comparing resnet18 (needs torch, torchvision)")


def _median_ms(run, repeat: int):
    outputs = run()  # warm-up, and the outputs compared
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return outputs, statistics.median(times) * 1e3


def _agreement(reference, outputs, names) -> str:
    if len(reference) != len(outputs):
        return f"{len(outputs)} outputs, expected {len(reference)}"
    worst, where = 0.0, []
    for name, want, got in zip(names, reference, outputs):
        got = np.asarray(got)
        if want.shape != got.shape:
            return f"shape {got.shape} != {want.shape}"
        if np.array_equal(want, got, equal_nan=want.dtype.kind == "f"):
            continue
        if want.dtype.kind != "f":
            return f"differs at {np.argwhere(want != got)[0].tolist()}"
        where.append(name)
        worst = max(worst, float(np.nanmax(np.abs(want.astype(np.float64) - got.astype(np.float64)))))
    return "identical" if worst == 0 else f"max |diff| {worst:.2g} in {', '.join(where)}"


def _paths(onnx_path: Path, xml_path: Path):
    """(label, factory) pairs; a factory returns a callable feeds -> outputs, or raises to say why not."""
    import onnxruntime as ort

    import onnx_bridge
    from converters import convert

    def custom_ops():
        session = onnx_bridge.InferenceSession(onnx_path, lower=False)
        return lambda feeds: session.run(None, feeds)

    def bridge():
        session = onnx_bridge.InferenceSession(onnx_path)
        kept = len(session.conversion_report.kept) if session.conversion_report else 0
        return (lambda feeds: session.run(None, feeds)), f"{kept} node(s) as custom ops"

    def standard():
        model, report = convert(onnx_path, to="standard")
        if report.kept:
            raise RuntimeError("kept: " + "; ".join(f"{e.op_type}: {e.reason}" for e in report.kept))
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return lambda feeds: session.run(None, feeds)

    def openvino():
        if not xml_path.is_file():
            raise FileNotFoundError(f"no OpenVINO IR {xml_path.name}")
        from onnx_bridge.backends import openvino as ov_backend
        compiled = ov_backend.compile(ov_backend.core().read_model(str(xml_path)))
        return lambda feeds: ov_backend.run_model(compiled, feeds)

    return [("onnxruntime + custom ops", custom_ops), ("onnx_bridge.InferenceSession", bridge),
            ("lowered standard ONNX", standard), ("OpenVINO CPU (IR)", openvino)]


def architecture() -> int:
    """resnet18 (random weights) -> OpenVINO IR -> ONNX -> run -> compare. 1 on an unexplained difference."""
    import tempfile

    print("resnet18 (torchvision, random weights): OpenVINO IR -> ONNX -> onnx_bridge.InferenceSession -> compare")
    try:
        import openvino as ov
        import torch
        from ..torchvision_compat import import_torchvision
        torchvision = import_torchvision()
    except ImportError as exc:
        print(f"  skipped: {exc} (pip install torch torchvision openvino)")
        return 0
    from converters.model_io import save_model
    from converters.openvino_ir import import_ir
    from onnx_bridge.compare_models import EXIT_DIFFERENT, compare

    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None).eval()
    with tempfile.TemporaryDirectory() as directory:
        xml, converted = Path(directory) / "resnet18.xml", Path(directory) / "resnet18.onnx"
        start = time.perf_counter()
        example = (torch.randn(1, 3, 64, 64),)
        with torch.no_grad():  # traced once (convert_model's own trace check re-runs the model)
            ir = ov.convert_model(torch.jit.trace(net, example, check_trace=False), example_input=example)
        ir.inputs[0].get_tensor().set_names({"image"})
        ir.outputs[0].get_tensor().set_names({"logits"})
        ov.save_model(ir, str(xml))
        print(f"  built {xml.name} ({time.perf_counter() - start:.1f} s; what `ovc` or openvino.convert_model "
              "gives users)")
        start = time.perf_counter()
        model = import_ir(xml)
        save_model(model, converted)
        print(f"  onnx-bridge convert resnet18.xml -o resnet18.onnx: {len(model.graph.node)} ONNX nodes "
              f"({time.perf_counter() - start:.1f} s)")
        report = compare(xml, converted)
    print("  onnx-bridge compare resnet18.xml --onnx resnet18.onnx:")
    print("\n".join("    " + line for line in report.text().splitlines()))
    return 1 if report.exit_code == EXIT_DIFFERENT else 0


def main(args) -> int:
    failures = 0 if args.no_architecture else architecture()
    if not args.models.is_dir():
        raise InputFileError(f"--models {args.models} is not a directory")
    models = sorted(args.models.glob("*.onnx"))
    if not models:
        print(f"no models in {args.models}")
        return 1
    for onnx_path in models:
        feeds = dict(np.load(onnx_path.with_name(f"{onnx_path.stem}_inputs.npz")))
        names = [o.name for o in onnx.load(str(onnx_path), load_external_data=False).graph.output]
        print(f"\n{onnx_path.stem}: " + ", ".join(f"{k} {v.dtype}{list(v.shape)}" for k, v in feeds.items()))
        print(f"  {'path':30} {'median ms':>10}  agreement with the custom ops (the contract)")
        reference = None
        for label, factory in _paths(onnx_path, onnx_path.with_suffix(".xml")):
            try:
                made = factory()
                run, note = made if isinstance(made, tuple) else (made, "")
                outputs, ms = _median_ms(lambda: run(feeds), args.repeat)
            except (ImportError, FileNotFoundError) as exc:  # FileNotFoundError: no .xml (a torch export)
                print(f"  {label:30} {'-':>10}  skipped: {exc}")
                continue
            except Exception as exc:  # a path that cannot run this model says why
                print(f"  {label:30} {'-':>10}  not run: {str(exc).splitlines()[0][:100]}")
                continue
            if reference is None:
                reference, verdict = [np.asarray(o) for o in outputs], "reference"
            else:
                verdict = _agreement(reference, outputs, names)
                failures += not (verdict == "identical" or verdict.startswith("max |diff|"))
            print(f"  {label:30} {ms:10.2f}  {verdict}{f' ({note})' if note else ''}")
        recorded = onnx_path.with_name(f"{onnx_path.stem}_torch.npz")  # torch eager's outputs, if exported from torch
        if recorded.is_file() and reference is not None:
            verdict = _agreement(reference, list(np.load(recorded).values()), names)
            failures += not (verdict == "identical" or verdict.startswith("max |diff|"))
            print(f"  {'torch eager (recorded)':30} {'-':>10}  {verdict}")
    from custom_ops import units
    accumulating = [unit.op_type for unit in units() if unit.accumulates]
    print(f"\nfloat differences come from summation order ({', '.join(accumulating + ['MatMul', 'Softmax'])}) "
          "and are listed, not hidden;"
          "\nsee docs/divergences.md for where OpenVINO's CPU plugin departs from the contract.")
    return 1 if failures else 0
