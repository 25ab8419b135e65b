"""`onnx-bridge audit FILE.py:FACTORY`: is stock torch.onnx export right for a module, and the bridge's?

FACTORY is a function of FILE.py taking no argument and returning (module, args) or (module, args, options):
options is a dict of torch.onnx.export arguments (dynamic_shapes for the dynamo exporters, dynamic_axes for the
TorchScript ones, input_names, ...) and may hold "input_sets", more input tuples to run the models at.
Prints one row per exporter (ok / wrong with max |diff| and the scatter-family aten ops / error with the
reason); the exit code is 1 when a bridge exporter is not ok. Needs torch (pip install 'onnx-bridge[torch]').
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from onnx_bridge.errors import BridgeError

HELP = "PyTorch: export a module with stock torch.onnx and with the bridge, run each, compare with torch."


def add_arguments(parser) -> None:
    parser.add_argument("target", metavar="FILE.py:FACTORY",
                        help="a Python file and a function in it returning (module, args[, options])")
    parser.add_argument("--exporter", action="append", metavar="NAME",
                        help="only this exporter (repeatable): 'stock dynamo', 'stock TorchScript', "
                             "'bridge dynamo', 'bridge TorchScript' (default: all four)")
    parser.add_argument("--no-lower", action="store_true",
                        help="keep the bridge's dialect nodes (run as custom ops) instead of lowering them")


def _factory(target: str):
    path, _, name = target.rpartition(":")
    if not path or not name:
        raise BridgeError(f"audit: expected FILE.py:FACTORY, got {target!r}")
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    if spec is None or not Path(path).is_file():
        raise BridgeError(f"audit: no such Python file: {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, name, None)):
        raise BridgeError(f"audit: {path} has no function {name!r}")
    return getattr(module, name)


def main(args) -> int:
    try:
        from onnx_bridge.torch.audit import EXPORTERS, audit
    except ImportError as exc:
        raise BridgeError(f"audit needs torch and onnxscript: pip install 'onnx-bridge[torch]' ({exc})")
    made = _factory(args.target)()
    if not isinstance(made, tuple) or len(made) not in (2, 3):
        raise BridgeError("audit: the factory must return (module, args) or (module, args, options)")
    module, inputs, options = (*made, {}) if len(made) == 2 else made
    options = dict(options)
    report = audit(module, inputs, input_sets=options.pop("input_sets", ()),
                   exporters=args.exporter or EXPORTERS, lower=not args.no_lower, **options)
    print(report)
    return int(any(r.status != "ok" for r in report.rows if r.exporter.startswith("bridge")))
