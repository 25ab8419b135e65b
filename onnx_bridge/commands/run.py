"""`onnx-bridge run MODEL`: run a dialect or standard ONNX model, or an OpenVINO IR (.xml, imported with
converters.openvino_ir.import_ir), in onnxruntime through onnx_bridge.InferenceSession.

Inputs come from --inputs (an .npz keyed by input name) or are generated from the model's input types and
shapes (--seed):
- every symbolic or unknown dimension gets the same size, --dim-size (4); --dim NAME=SIZE sets one by name
  (the same size everywhere keeps inputs whose dims must agree consistent, even when their names differ);
- floats are standard normal, bools fair coin flips, strings 0 to 8 random lower-case ASCII letters;
- integers are indices in [0, bound): bound is the smallest extent of the axis they index (followed
  through Cast/Unsqueeze/Reshape/Expand/... into Gather, GatherElements, ScatterElements and the dialect
  scatters, using ONNX shape inference); when no such use is found, bound is --dim-size.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto

from custom_ops.element_types import ONNX_TO_NUMPY, type_name
from converters.model_io import load_model
from onnx_bridge.errors import BridgeError, ModelError
from onnx_bridge.inputs import DEFAULT_DIM_SIZE, graph_inputs, index_bounds, random_inputs  # noqa: F401

from ._files import Outputs, check_input

HELP = "Run a model (dialect or standard ONNX, or OpenVINO IR .xml) on given or random inputs."
def add_arguments(parser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "Random inputs (without --inputs):\n" + __doc__.split("(--seed):\n", 1)[1]
    parser.add_argument("model", type=Path, help="an .onnx model or an OpenVINO IR .xml")
    parser.add_argument("--inputs", type=Path, help=".npz with one array per model input (default: random)")
    parser.add_argument("--output", type=Path, help="write the outputs to this .npz (never the model or an "
                                                    "input file, refused with exit 6)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--dim-size", type=int, default=DEFAULT_DIM_SIZE,
                        help=f"size of symbolic dims in random inputs (default {DEFAULT_DIM_SIZE})")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                        help="size of one symbolic dim by name (repeatable)")
    parser.add_argument("--no-lower", action="store_true",
                        help="run every dialect node as a custom op (default: exactly-lowerable nodes "
                             "run as native onnxruntime kernels)")


def main(args) -> int:
    sources = [check_input(args.model, "model")]
    if args.model.suffix.lower() == ".xml":
        sources.append(args.model.with_suffix(".bin"))
    if args.inputs:
        sources.append(check_input(args.inputs, "inputs file"))
    files = Outputs(inputs=sources)  # --output never replaces the model or an input file
    results = {}
    if args.output:
        files.add(args.output, lambda staging: save_npz(staging / args.output.name, results), "--output")
    model = load(args.model)
    if args.inputs:
        feeds, origin = read_inputs(model, args.inputs), f"from {args.inputs}"
    else:
        feeds = random_inputs(model, seed=args.seed, dim_size=args.dim_size, dims=parse_dims(args.dim))
        origin = f"random (seed {args.seed})"
    from onnx_bridge.session import InferenceSession
    session = InferenceSession(model, lower=not args.no_lower)
    started = time.perf_counter()
    try:
        outputs = session.run(None, feeds)
    except BridgeError:
        raise
    except Exception as exc:
        raise ModelError(f"onnxruntime failed to run {args.model}: {exc}") from None
    elapsed = time.perf_counter() - started
    names = [o.name for o in session.get_outputs()]
    print(f"{args.model}: {len(feeds)} input(s) {origin}")
    for name, value in feeds.items():
        print(f"  in   {describe(name, value)}")
    for name, value in zip(names, outputs):
        print(f"  out  {describe(name, value)}")
    print(f"ran in {elapsed * 1e3:.1f} ms")
    if args.output:
        results.update(zip(names, outputs))
        files.commit()
        print(f"wrote {args.output}")
    return 0


def load(path: Path) -> onnx.ModelProto:
    if path.suffix.lower() == ".xml":
        from converters.openvino_ir import import_ir
        return import_ir(path)
    return load_model(path)


def parse_dims(specs) -> dict[str, int]:
    dims = {}
    for spec in specs:
        name, _, size = spec.partition("=")
        if not name or not size.isdigit():
            raise BridgeError(f"--dim expects NAME=SIZE with a non-negative integer size, got {spec!r}")
        dims[name] = int(size)
    return dims


def read_inputs(model: onnx.ModelProto, path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except Exception as exc:
        raise ModelError(f"cannot read inputs from {path}: {exc}") from None
    wanted = graph_inputs(model)
    missing = [i.name for i in wanted if i.name not in arrays]
    extra = sorted(set(arrays) - {i.name for i in wanted})
    takes = "the model takes: " + ", ".join(_signature(i) for i in wanted)
    if missing or extra:
        problem = "; ".join(text for text in (
            f"missing {', '.join(missing)}" if missing else "",
            f"not inputs of the model: {', '.join(extra)}" if extra else "") if text)
        raise ModelError(f"{path} does not match the model's inputs ({problem}); {takes}")
    for value in wanted:
        expected = ONNX_TO_NUMPY.get(value.type.tensor_type.elem_type)
        if expected is not None and arrays[value.name].dtype != expected:
            raise ModelError(f"{path}: input {value.name!r} is {type_name(arrays[value.name].dtype)}, "
                             f"not {type_name(expected)}; {takes}")
    return {i.name: arrays[i.name] for i in wanted}


def _signature(value: onnx.ValueInfoProto) -> str:
    code = value.type.tensor_type.elem_type
    element = TensorProto.DataType.Name(code).lower() if code else "?"
    if not value.type.tensor_type.HasField("shape"):
        return f"{value.name} {element}[...]"
    dims = [str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
            for d in value.type.tensor_type.shape.dim]
    return f"{value.name} {element}[{','.join(dims)}]"


def describe(name: str, value: np.ndarray) -> str:
    value = np.asarray(value)
    text = f"{name}: {type_name(value.dtype)}{list(value.shape)}"
    if value.size == 0:
        return text + "  (empty)"
    if value.dtype == np.bool_:
        return text + f"  true {int(value.sum())}/{value.size}"
    if value.dtype == object:   # strings
        lengths = [len(str(v)) for v in value.reshape(-1)]
        return text + f"  length min {min(lengths)} max {max(lengths)}"
    if value.dtype.kind in "iu":
        return text + f"  min {value.min()} max {value.max()}"
    finite = value[np.isfinite(value)].astype(np.float64)
    summary = f"  min {finite.min():.6g} max {finite.max():.6g} mean {finite.mean():.6g}" if finite.size else ""
    nonfinite = value.size - finite.size
    return text + summary + (f"  non-finite {nonfinite}" if nonfinite else "")


def save_npz(path: Path, arrays: dict) -> None:
    """Write an .npz atomically (temporary file beside it, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:   # strings as numpy str arrays (loadable without pickle)
            np.savez(stream, **{name: np.asarray(value, dtype=str) if np.asarray(value).dtype == object else value
                                for name, value in arrays.items()})
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp creates 0600; give the usual permissions
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
