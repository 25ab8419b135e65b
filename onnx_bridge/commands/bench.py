"""`onnx-bridge bench`: the performance benchmark (benchmarks/run.py of the source tree)."""
from __future__ import annotations

import importlib
import json
import importlib.util
import sys
from pathlib import Path

from ..errors import BridgeError
from ._files import check_output

HELP = ("time every dialect op through the bridge, stock marshaling, lowered and native onnxruntime, "
        "OpenVINO, torch and numpy; print a Markdown table (--json for data)")
_ROOT = Path(__file__).resolve().parents[2]


def _benchmark(name: str = "run"):
    """benchmarks.<name>, imported from the source tree (the benchmark is not part of the wheel)."""
    package = _ROOT / "benchmarks" / "__init__.py"
    if "benchmarks" not in sys.modules:
        if not package.exists():
            return None
        spec = importlib.util.spec_from_file_location("benchmarks", package,
                                                      submodule_search_locations=[str(package.parent)])
        package_module = importlib.util.module_from_spec(spec)
        sys.modules["benchmarks"] = package_module
        spec.loader.exec_module(package_module)
    return importlib.import_module(f"benchmarks.{name}")


def add_arguments(parser) -> None:
    options = _benchmark("options")  # light: no runtime imports while building the CLI
    if options is not None:
        options.add_arguments(parser)


def main(args) -> int:
    for option in ("json", "markdown"):  # bad paths fail now, not after minutes of timing
        path = getattr(args, option, None)
        if path and path != "-":
            check_output(path, f"--{option}")
    benchmark = _benchmark("real_models" if args.models is not None else "run")
    if benchmark is None:
        raise BridgeError(f"the benchmark is part of the source tree ({_ROOT / 'benchmarks'} not found): "
                          "run it from a checkout installed with `pip install -e .`")
    if args.models is not None:
        return _real_models(benchmark, args)
    return benchmark.main(args)


#: the lines around the real-model table in a --markdown file (docs/performance.md)
REAL_MODELS_MARKERS = ("<!-- real-models: begin -->", "<!-- real-models: end -->")


def _real_models(real_models, args) -> int:
    """`bench --models`: benchmarks/real_models.py's table, printed, and written as --json / --markdown."""
    unknown = real_models.unknown_models(args.models)
    if unknown:
        raise BridgeError(f"bench --models: {unknown}")
    if args.tiny:  # checks that everything runs: one call each, one in-process conversion, no fresh process
        rows = real_models.run(args.models, 1, imports=1, fresh=0)
    else:
        rows = real_models.run(args.models, args.repeats or 20)
    text = real_models.table(rows)
    print(text, end="")
    if args.json:
        payload = json.dumps({"models": rows}, indent=1)
        if args.json == "-":
            print(payload)
        else:
            Path(args.json).write_text(payload + "\n")
    if args.markdown and args.markdown != "-":  # "-": the table printed above
        from benchmarks import report
        report.write_markdown(args.markdown, text, REAL_MODELS_MARKERS)
    return 0
