"""`onnx-bridge compare MODEL.xml [--onnx CONVERTED.onnx]`: OpenVINO CPU (f32) on the IR against the converted
model in onnx_bridge.InferenceSession, on the same inputs; per output max |Δ|, relative L2 and the fraction
of elements beyond tolerance; a difference is localised to the first diverging node and explained where it
can be (tie order after TopK/NMS, OpenVINO's own int8-vs-f32 spread, the op's reference implementation and
the known deviations). See docs/compare.md."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from onnx_bridge.errors import BridgeError

from ._files import Outputs, check_input

HELP = "compare an OpenVINO IR with its ONNX conversion: where outputs differ, which node, and why"


def add_arguments(parser) -> None:
    from onnx_bridge.compare_models import EXIT_AGREE, EXIT_DIFFERENT, EXIT_EXPLAINED

    from .run import DEFAULT_DIM_SIZE

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (f"exit codes: {EXIT_AGREE} the outputs agree; {EXIT_EXPLAINED} they differ and every "
                     f"difference is explained; {EXIT_DIFFERENT} unexplained differences (others: see "
                     "onnx-bridge --help).\nTolerances (floats; integers and bools are exact): "
                     "onnx_bridge.comparison.TOLERANCES by type unless --rtol/--atol are given.")
    parser.add_argument("model", type=Path, help="the OpenVINO IR (.xml, its .bin beside it)")
    parser.add_argument("--onnx", type=Path, help="the converted model (default: import the IR now)")
    parser.add_argument("--inputs", type=Path, help=".npz with one array per model input (default: random)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--dim-size", type=int, default=DEFAULT_DIM_SIZE,
                        help=f"size of symbolic dims in random inputs (default {DEFAULT_DIM_SIZE})")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                        help="size of one symbolic dim by name (repeatable)")
    parser.add_argument("--rtol", type=float, help="relative tolerance of float outputs (default by type)")
    parser.add_argument("--atol", type=float, help="absolute tolerance of float outputs (default by type)")
    parser.add_argument("--no-localise", action="store_true",
                        help="do not look for the first diverging node (faster on big models)")
    parser.add_argument("--json", metavar="FILE", nargs="?", const="-",
                        help="write the report as JSON (to stdout without FILE)")
    parser.add_argument("--progress", action="store_true",
                        help="progress lines on stderr (default: for models over 300 ops)")


def main(args) -> int:
    from onnx_bridge.comparison import tolerance_of
    from onnx_bridge.compare_models import compare

    from .run import parse_dims

    model = check_input(args.model, "OpenVINO IR")
    if model.suffix.lower() != ".xml":
        raise BridgeError(f"compare takes an OpenVINO IR .xml, not {model.name}")
    converted = check_input(args.onnx, "converted model") if args.onnx else None
    inputs = check_input(args.inputs, "inputs") if args.inputs else None
    outputs = Outputs(inputs=[p for p in (model, model.with_suffix(".bin"), converted, inputs) if p])
    document = {}
    if args.json and args.json != "-":
        outputs.add(Path(args.json), lambda staging: (staging / Path(args.json).name).write_text(
            json.dumps(document, indent=1) + "\n"), "--json")
    tolerance = None
    if args.rtol is not None or args.atol is not None:
        tolerance = tolerance_of(rtol=args.rtol or 0.0, atol=args.atol or 0.0)
    report = compare(model, converted, inputs=inputs, seed=args.seed, dim_size=args.dim_size,
                     dims=parse_dims(args.dim), tolerance=tolerance, localise=not args.no_localise,
                     progress=True if args.progress else None)
    if args.json == "-":
        json.dump(report.to_json(), sys.stdout, indent=1)
        print()
    else:
        print(report.text())
        if args.json:
            document.update(report.to_json())
            outputs.commit()
    return report.exit_code
