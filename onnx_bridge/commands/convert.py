"""onnx-bridge convert IN -o OUT --to standard|openvino|openvino-ir [--mode ...] [--strict] [--as-functions]
[--report F.json]"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

HELP = "convert between the OpenVINO dialect and standard ONNX (or OpenVINO IR), with a per-node report"

_TARGETS = ("standard", "openvino", "openvino-ir")
_MODES = ("default", "keep-all", "require-standard")


def add_arguments(parser) -> None:
    parser.add_argument("input", help="model to convert: .onnx (or OpenVINO IR .xml)")
    parser.add_argument("-o", "--output", required=True,
                        help="where to write the result (.onnx; .xml with --to openvino-ir); written atomically")
    parser.add_argument("--to", choices=_TARGETS, default="standard",
                        help="standard: lower dialect nodes to standard ONNX where exact (default); openvino: "
                             "raise ScatterElements/ReduceL2/Unique into the dialect; openvino-ir: raise, "
                             "then write OpenVINO IR")
    parser.add_argument("--mode", choices=_MODES, default="default",
                        help="default: convert what is exact; keep-all: convert nothing, only report; "
                             "require-standard: fail (exit 2) listing every node that cannot be lowered")
    parser.add_argument("--strict", action="store_true",
                        help="also keep nodes whose converted graph is not bit-identical on every input "
                             "(float ReduceL2 rounding; NaN in raised float min/max)")
    parser.add_argument("--as-functions", action="store_true",
                        help="(--to standard) keep each dialect node with an exact lowering as a call of a "
                             "model-local function whose body is that lowering: plain onnxruntime runs it, "
                             "tools still see the op, --to openvino restores the plain node")
    parser.add_argument("--report", metavar="FILE.json", help="also write the report as JSON")


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def main(args) -> int:
    from converters import convert

    _, report = convert(args.input, to=args.to, mode=args.mode, strict=args.strict, output=args.output,
                        as_functions=args.as_functions)
    print(report.to_table())
    if args.report:
        _write_text(Path(args.report), report.to_json() + "\n")
    print(f"wrote {args.output}")
    return 0
