"""onnx-bridge convert IN -o OUT --to standard|openvino|openvino-ir [--mode ...] [--strict] [--report F.json]"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

HELP = "convert between the OpenVINO dialect and standard ONNX (or OpenVINO IR), with a per-node report"

_TARGETS = ("standard", "openvino", "openvino-ir")
_MODES = ("default", "keep-all", "require-standard")


def add_arguments(parser) -> None:
    parser.add_argument("input", nargs="?", help="model to convert: .onnx (or OpenVINO IR .xml)")
    parser.add_argument("-o", "--output",
                        help="where to write the result (.onnx; .xml with --to openvino-ir); written atomically. "
                             "An OpenVINO IR that cannot be imported writes nothing and exits 3, listing "
                             "every unsupported op and configuration")
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
    parser.add_argument("--report", metavar="FILE.json", help="also write the report as JSON")
    parser.add_argument("--list-ops", action="store_true",
                        help="print the OpenVINO ops (and versions) an IR may contain, what each becomes in "
                             "ONNX and what it refuses, then exit")


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


#: exit code of an OpenVINO IR the importer refuses (unsupported ops or configurations); bad input is 2
REFUSED = 3


def main(args) -> int:
    import sys

    from converters import convert
    from custom_ops.errors import BridgeError, ConversionError

    if args.list_ops:
        from converters.openvino_ir._registry import op_table
        import converters.openvino_ir  # noqa: F401  (registers the rules)
        print(op_table(), end="")
        return 0
    if not args.input or not args.output:
        raise BridgeError("give the model to convert and -o OUTPUT (or --list-ops)")
    try:
        _, report = convert(args.input, to=args.to, mode=args.mode, strict=args.strict, output=args.output)
    except ConversionError as error:
        if Path(args.input).suffix.lower() != ".xml":
            raise
        print(f"onnx-bridge convert: refused: {error}", file=sys.stderr)
        return REFUSED
    print(report.to_table())
    if args.report:
        _write_text(Path(args.report), report.to_json() + "\n")
    print(f"wrote {args.output}")
    return 0
