"""The lowered (standard ONNX) model of a case, shared by the ort-lowered and reference adapters.

Lowering is converters.convert(model, to="standard") — what `onnx-bridge convert` gives users. A node
the converter keeps (no exact standard form for this configuration) makes the case unsupported for the
standard-ONNX backends, with the converter's reason.
"""
from __future__ import annotations

import functools
from collections import OrderedDict

import onnx

from onnx_bridge.config import DOMAIN

from ..cases import Case, op_model, signature
from . import Unsupported, has_module

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 512


def missing() -> str | None:
    if not has_module("converters"):
        return "the converters package is not installed"
    try:
        from converters import convert  # noqa: F401
    except ImportError as exc:
        return f"converters.convert is not available ({exc})"
    return None


@functools.cache
def _convert():
    from converters import convert
    return convert


def lowered(case: Case) -> tuple[onnx.ModelProto, dict, object]:
    """(standard model, feeds, cache key) of a case; raises Unsupported when a dialect node is kept."""
    if case.is_model:
        key, feeds = ("model", case.id), case.inputs
    else:
        key = signature(case)
        feeds = None
    if key not in _CACHE:
        source = case.model if case.is_model else op_model(case)[0]
        try:
            model, report = _convert()(source, to="standard")
            kept = _kept_reason(model, report)
            _CACHE[key] = Unsupported(kept) if kept else model
        except Unsupported as exc:
            _CACHE[key] = exc
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    entry = _CACHE[key]
    if isinstance(entry, Unsupported):
        raise entry
    if feeds is None:
        feeds = op_model(case)[1]
    return entry, feeds, key


def _kept_reason(model: onnx.ModelProto, report) -> str | None:
    """Why the converter kept dialect nodes (None when the model is all standard ONNX)."""
    kept = [node for node in model.graph.node if node.domain == DOMAIN]
    if not kept:
        return None
    reasons = []
    for entry in getattr(report, "kept", None) or []:
        reason = getattr(entry, "reason", None) or str(entry)
        if reason not in reasons:
            reasons.append(reason)
    text = "; ".join(reasons) or "the converter keeps this node as a dialect node"
    return f"not lowered: {text}"
