"""Backend adapters: each runs a case on one runtime, in that runtime's own terms.

An adapter has a column `name`, a one-line `title`, `missing()` (why it cannot run here, or None: checked
without importing the runtime), `run(case) -> tuple of arrays`, and optionally `runs_models = False` (no
use for whole-model cases) and `prepare(cases)` (the contract-accepted cases about to run, for batching).
run() raises Unsupported when the runtime has no equivalent of the case's configuration (the reason is
shown) and lets every other exception out (an error cell). Adapters live in worker processes and keep
their compiled models cached.
"""
from __future__ import annotations

import importlib
import importlib.util
import re


class Unsupported(Exception):
    """The runtime has no equivalent of this configuration (the message says why)."""


#: Column name -> "module:Class". Order = column order (OpenVINO last: it is the one that can crash).
ADAPTERS = {
    "ort-dialect": "onnx_bridge.conformance.adapters.onnxruntime:DialectAdapter",
    "ort-lowered": "onnx_bridge.conformance.adapters.onnxruntime:LoweredAdapter",
    "reference": "onnx_bridge.conformance.adapters.reference:ReferenceAdapter",
    "torch": "onnx_bridge.conformance.adapters.torch:TorchAdapter",
    "openvino": "onnx_bridge.conformance.adapters.openvino:OpenVINOAdapter",
}
#: The kernel itself: checked against documented values; its result is every other column's reference.
CONTRACT = "contract"


def load(spec: str):
    """The adapter class named by a column name or a "module:Class" path (tests plug in fakes this way)."""
    path = ADAPTERS.get(spec, spec)
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def first_line(error: BaseException, limit: int = 400) -> str:
    """An exception as one readable line: type and message, runtimes' multi-line noise folded."""
    text = " ".join(str(error).split()) or type(error).__name__
    text = re.sub(r"While validating node '.*?' with friendly_name '.*?':\s*", "", text)  # OpenVINO
    if not isinstance(error, Unsupported) and type(error).__name__ not in text:
        text = f"{type(error).__name__}: {text}"
    return text if len(text) <= limit else text[: limit - 3] + "..."
