"""onnx-bridge convert IN -o OUT --to standard|openvino|openvino-ir [--mode ...] [--strict] [--as-functions]
[--int8 qdq|exact] [--external-data] [--genai] [--report F.json]

Every output (-o, the .bin of an IR, --report) is checked before converting and written all-or-nothing
(onnx_bridge/commands/_files.py)."""
from __future__ import annotations

from pathlib import Path

import onnx

from converters.model_io import Weights, save_model
from onnx_bridge.errors import ConversionError

from ._files import Outputs, check_input

HELP = "convert between the OpenVINO dialect and standard ONNX (or OpenVINO IR), with a per-node report"

_TARGETS = ("standard", "openvino", "openvino-ir")
_MODES = ("default", "keep-all", "require-standard")


def _raised_ops() -> list[str]:
    """The dialect ops standard ONNX patterns are raised into (units with a raising)."""
    from custom_ops import units
    from custom_ops.unit import present
    return [unit.op_type for unit in units() if present(unit.raising)]


def _accumulating_ops() -> list[str]:
    """The dialect ops whose float results depend on summation order (units with accumulation_ulps)."""
    from custom_ops import units
    return [unit.op_type for unit in units() if unit.accumulation_ulps is not None]


class _OpsHelp(str):
    """A help text naming ops ("{ops}": '/'.join(ops())), filled in when argparse formats it (`help %
    params`): building the parser to run a command imports no op unit."""

    def __new__(cls, template: str, ops):
        text = super().__new__(cls, template)
        text.ops = ops
        return text

    def __mod__(self, params):
        return str.__mod__(str(self).replace("{ops}", "/".join(self.ops())), params)


def add_arguments(parser) -> None:
    parser.add_argument("input", nargs="?", help="model to convert: .onnx (or OpenVINO IR .xml)")
    parser.add_argument("-o", "--output",
                        help="where to write the result (.onnx; .xml with --to openvino-ir); written atomically")
    parser.add_argument("--to", choices=_TARGETS, default="standard",
                        help=_OpsHelp("standard: lower dialect nodes to standard ONNX where exact (default); "
                                      "openvino: raise standard ONNX into the dialect ops {ops}; openvino-ir: "
                                      "raise, then write OpenVINO IR", _raised_ops))
    parser.add_argument("--mode", choices=_MODES, default="default",
                        help="default: convert what is exact; keep-all: convert nothing, only report; "
                             "require-standard: fail (exit 2) listing every node that cannot be lowered")
    parser.add_argument("--strict", action="store_true",
                        help=_OpsHelp("also keep nodes whose converted graph is not bit-identical on every input "
                                      "(float rounding of {ops}; NaN in raised float min/max)", _accumulating_ops))
    parser.add_argument("--as-functions", action="store_true",
                        help="(--to standard) keep each dialect node with an exact lowering as a call of a "
                             "model-local function whose body is that lowering: plain onnxruntime runs it, "
                             "tools still see the op, --to openvino restores the plain node")
    parser.add_argument("--int8", choices=("qdq", "exact"), default="qdq",
                        help="(OpenVINO IR input) qdq: FakeQuantize as QuantizeLinear/DequantizeLinear where its "
                             "limits map onto a scale and zero point, so onnxruntime runs integer kernels "
                             "(default; the others stay exact, noted in the report); exact: OpenVINO's "
                             "reference formula everywhere")
    parser.add_argument("--report", metavar="FILE.json", help="also write the report as JSON")
    parser.add_argument("--allow-invalid", action="store_true",
                        help="write the result even when a dialect node in it can never run (a required "
                             "input missing, an invalid attribute; exit 7 without this flag)")
    parser.add_argument("--external-data", action="store_true",
                        help="write the weights to OUTPUT.data beside the .onnx (ONNX external data); done "
                             "anyway when they pass protobuf's 2 GB limit")
    parser.add_argument("--genai", action="store_true",
                        help="(OpenVINO IR LLM -> .onnx) also write genai_config.json beside the output for "
                             "onnxruntime-genai, from the config.json / generation_config.json beside the .xml "
                             "(optimum-intel writes them) or the model's shapes (docs/llm.md)")
    parser.add_argument("--list-ops", action="store_true",
                        help="print the OpenVINO ops (and versions) an IR may contain, what each becomes in "
                             "ONNX and what it refuses, then exit")


def main(args) -> int:
    from converters import convert

    if args.list_ops:
        import converters.openvino_ir  # noqa: F401  (registers the rules)
        from converters.openvino_ir import op_table
        print(op_table(), end="")
        return 0
    if not args.input or not args.output:
        raise ConversionError("give the model to convert and -o OUTPUT (or --list-ops)")
    source = check_input(args.input, "input model")
    outputs = Outputs(inputs=[source] + ([source.with_suffix(".bin")] if source.suffix.lower() == ".xml" else []))
    to_ir = args.to == "openvino-ir"
    if to_ir and args.external_data:
        raise ConversionError("--external-data writes ONNX external data; --to openvino-ir writes OpenVINO IR")
    if to_ir and Path(args.output).suffix.lower() != ".xml":
        raise ConversionError(f"--to openvino-ir writes OpenVINO IR: give an output ending in .xml, not {args.output}")
    converted = {}
    # An IR converted to standard ONNX: its large constants go from OpenVINO's memory straight to the file.
    weights = Weights() if source.suffix.lower() == ".xml" and args.to == "standard" else None
    if to_ir:
        outputs.add(args.output, lambda staging: _write_ir(converted["model"], staging / Path(args.output).name),
                    "output", companions=(".bin",))
    else:
        def write_onnx(staging: Path) -> None:
            target = staging / Path(args.output).name
            save_model(converted["model"], target, external_data=args.external_data or None, weights=weights)
            converted["data"] = target.with_name(target.name + ".data").exists()

        outputs.add(args.output, write_onnx, optional=(Path(args.output).name + ".data",))
    if args.report:
        outputs.add(args.report, lambda staging: (staging / Path(args.report).name).write_text(
            converted["report"].to_json() + "\n"), "report")

    if args.genai and (to_ir or args.to != "standard" or source.suffix.lower() != ".xml"):
        raise ConversionError("--genai converts an OpenVINO IR LLM (.xml) to standard ONNX (--to standard)")
    try:
        model, report = convert(source, to="openvino" if to_ir else args.to, mode=args.mode, strict=args.strict,
                                as_functions=args.as_functions, weights=weights, int8=args.int8)
    except ConversionError as error:
        if source.suffix.lower() == ".xml":  # the importer lists every unsupported op and configuration
            raise RefusedModelError(f"refused: {error}") from None
        raise
    print(report.to_table())
    invalid = never_runs(model, report)
    if invalid and not args.allow_invalid:
        raise InvalidModelError(f"{len(invalid)} dialect node(s) can never run, nothing written "
                                f"(--allow-invalid writes it anyway): " + "; ".join(invalid))
    if to_ir:
        from converters.openvino_ir import to_openvino
        model = to_openvino(model)  # OpenVINO's refusals surface here, before anything is written
    converted.update(model=model, report=report)
    if args.genai:
        from onnx_bridge.llm import GENAI_CONFIG, genai_config
        import json
        config = genai_config(model, Path(args.output).name, source.parent)
        outputs.add_bytes(Path(args.output).parent / GENAI_CONFIG, (json.dumps(config, indent=2) + "\n").encode(),
                          "genai config")
    outputs.commit()
    for line in invalid:
        print(f"warning: written with a node that can never run: {line}")
    if to_ir:
        companion = f" and {Path(args.output).with_suffix('.bin')}"
    else:
        companion = f" and {args.output}.data" if converted.get("data") else ""
    if args.genai:
        companion += f" and {Path(args.output).parent / 'genai_config.json'}"
    print(f"wrote {args.output}{companion}")
    return 0


class InvalidModelError(ConversionError):
    exit_code = 7


class RefusedModelError(ConversionError):
    """An OpenVINO IR with ops or configurations the importer does not support."""
    exit_code = 8


def _write_ir(ov_model, xml: Path) -> None:
    from converters.openvino_ir import export_ir
    export_ir(ov_model, xml)


def never_runs(model, report) -> list[str]:
    """Dialect nodes of `model` that fail on every input: a required input missing or an invalid
    attribute (checked against the op's spec), or a node the conversion kept because it always fails."""
    import custom_ops
    from converters.model_io import opset_of
    from onnx_bridge.config import DOMAIN
    from onnx_bridge.errors import OpError

    found = {}
    opset = opset_of(model, DOMAIN)
    for node in model.graph.node:
        if node.domain != DOMAIN:
            continue
        label = f"{node.name or '(unnamed)'!r} ({node.op_type})"
        try:
            spec = custom_ops.resolve(node.op_type, opset or 0)
        except OpError as error:
            found[node.name] = f"{label}: {error}"
            continue
        for position, port in enumerate(spec.inputs):
            if not port.optional and (position >= len(node.input) or not node.input[position]):
                found[node.name] = f"{label}: required input '{port.name}' is missing"
                break
        else:
            try:
                spec.attribute_values({a.name: onnx.helper.get_attribute_value(a) for a in node.attribute})
            except OpError as error:
                found[node.name] = f"{label}: {error}"
    for entry in report.nodes:
        if entry.domain == DOMAIN and entry.action == "kept" and "always fails" in entry.reason:
            found.setdefault(entry.name, f"{entry.name!r} ({entry.op_type}): {entry.reason}")
    return list(found.values())
