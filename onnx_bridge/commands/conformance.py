"""`onnx-bridge conformance`: run a corpus of cases through every runtime and explain each disagreement."""
from __future__ import annotations

import sys
from pathlib import Path

from ..errors import BridgeError
from ._files import Outputs, check_input

HELP = "check that runtimes agree with the dialect's contract, case by case, and explain every difference"

EPILOG = """\
cells: match, known divergence (declared with a reason in onnx_bridge.divergences), unsupported (the runtime
has no equivalent), mismatch, error, crash. Exit code 0 when every cell is a match, a known divergence or
unsupported; 1 on any unexpected mismatch, error or crash; 2 on a usage error; 3-6 on a bad input or
--report path, checked before any case runs (onnx-bridge --help lists the codes).

examples:
  onnx-bridge conformance                              # default corpus (seed, ONNX backend, generated)
  onnx-bridge conformance --size large --report out/   # bigger corpus; out/conformance.{md,html,json}
  onnx-bridge conformance --only 'gen/*' --only nan --backends openvino,torch
  onnx-bridge conformance model.onnx --inputs x.npz    # your model on every runtime that runs ONNX
"""


def add_arguments(parser) -> None:
    import argparse

    from ..conformance.adapters import ADAPTERS
    from ..conformance.generate import SIZES, generating_units
    from custom_ops import units
    example_op = generating_units()[-1].op_type
    accumulating = [unit.op_type for unit in units() if unit.accumulates]
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("models", nargs="*", metavar="MODEL",
                        help="ONNX models to check (alone, unless --sources says otherwise); inputs come from "
                             "--inputs, or <model>_inputs.npz beside it, or are generated from the input types")
    parser.add_argument("--inputs", metavar="NPZ", help="input arrays for the models, by graph input name")
    parser.add_argument("--size", choices=list(SIZES), default="medium",
                        help="generated corpus size: %s cases per op (default: medium)"
                             % ", ".join(f"{k} {v}" for k, v in SIZES.items()))
    parser.add_argument("--cases", type=int, metavar="N", help="exactly N generated cases (overrides --size)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated cases (default 0)")
    parser.add_argument("--sources", metavar="LIST",
                        help="comma list of seed, onnx, generated (default: all three without models, none "
                             "with models)")
    parser.add_argument("--only", action="append", default=[], metavar="GLOB",
                        help=f"keep cases whose id, op or tag matches (repeatable): 'gen/*/00*', {example_op}, nan")
    parser.add_argument("--backends", metavar="LIST",
                        help=f"comma list of columns to run (default: all of {', '.join(ADAPTERS)})")
    parser.add_argument("--jobs", type=int, metavar="N",
                        help="worker processes (default: one per core; 0 = in this process, no crash isolation)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="S",
                        help="seconds a worker may spend on one cell before it is killed (default 120)")
    parser.add_argument("--model-tolerance", type=float, default=None, metavar="K",
                        help="float outputs of whole models may differ by K·ε·max|output| (their standard "
                             "ops accumulate in each runtime's order; default 64, 0 = exact); op cases are "
                             f"exact but for float sums of {'/'.join(accumulating)}")
    parser.add_argument("--report", metavar="PATH",
                        help="write the report: a directory gets conformance.md, .html and .json; a path ending "
                             "in .md, .html or .json gets that format")
    parser.add_argument("--details", type=int, default=20, metavar="N",
                        help="groups of unexpected cells shown on the terminal (default 20; the report has all)")
    parser.add_argument("--list", action="store_true", help="list the selected cases and exit")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def main(args) -> int:
    from ..conformance import build_corpus, report, runner
    from ..conformance.adapters import ADAPTERS
    from ..conformance.corpus import SOURCES

    if args.cases is not None and args.cases < 0:
        raise BridgeError("--cases must be >= 0")
    if args.sources:
        sources = tuple(s.strip() for s in args.sources.split(",") if s.strip())
        unknown = [s for s in sources if s not in SOURCES]
        if unknown:
            raise BridgeError(f"unknown source {', '.join(unknown)}; choose from seed, onnx, generated")
    else:
        sources = () if args.models else ("seed", "onnx", "generated")
    if args.inputs and not args.models:
        raise BridgeError("--inputs needs a model")
    sources_on_disk = [check_input(m, "model") for m in args.models] + (
        [check_input(args.inputs, "inputs file")] if args.inputs else [])
    files = Outputs(inputs=sources_on_disk)
    finished = {}
    for path in _report_paths(args.report) if args.report else []:  # checked now, written at the end
        files.add(path, lambda staging, name=path.name: report.write(finished["results"], staging / name),
                  "report")
    backends = tuple(ADAPTERS)
    if args.backends:
        backends = tuple(b.strip() for b in args.backends.split(",") if b.strip())
        unknown = [b for b in backends if b not in ADAPTERS and ":" not in b]
        if unknown:
            raise BridgeError(f"unknown backend {', '.join(unknown)}; choose from {', '.join(ADAPTERS)}")
    notes: list[str] = []
    cases = build_corpus(args.size, args.cases, args.seed, args.models, args.inputs, sources, args.only, notes)
    if not cases:
        raise BridgeError("no case selected" + (f" (--only {' '.join(args.only)} matches nothing)"
                                                if args.only else ""))
    if args.list:
        for case in cases:
            print(f"{case.id:<28} {case.op:<22} {case.summary()}")
        return 0
    progress = None if args.quiet else runner.stderr_progress()
    if not args.quiet:
        print(f"running {len(cases)} cases...", file=sys.stderr)
    from ..conformance.compare import MODEL_TOLERANCE
    tolerance = MODEL_TOLERANCE if args.model_tolerance is None else args.model_tolerance
    if tolerance < 0:
        raise BridgeError("--model-tolerance must be >= 0")
    results = runner.run(cases, backends, jobs=args.jobs, timeout=args.timeout, progress=progress,
                         model_tolerance=tolerance)
    results.notes = notes
    results.settings = {"size": args.size, "cases": args.cases, "seed": args.seed, "sources": list(sources),
                        "models": list(args.models), "only": list(args.only), "model_tolerance": tolerance}
    print(report.terminal(results, sys.stdout, details=args.details))
    if args.report:
        finished["results"] = results
        files.commit()
        print("report: " + ", ".join(str(p) for p in _report_paths(args.report)))
    return results.exit_code


def _report_paths(target) -> list[Path]:
    """What --report writes: a .json/.md/.html path is that file, anything else a directory of all three
    (as conformance.report.write decides)."""
    target = Path(target)
    if target.suffix.lower() in _REPORT_FORMATS:
        return [target]
    return [target / f"conformance{suffix}" for suffix in _REPORT_FORMATS]


_REPORT_FORMATS = (".json", ".md", ".html")
