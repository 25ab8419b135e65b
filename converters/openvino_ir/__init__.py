"""OpenVINO IR <-> ONNX.

import_ir(xml_path_or_ov_model, defer=None) -> onnx.ModelProto
    Reads IR v10/v11 with OpenVINO's own reader and converts it op by op: the four dialect ops become
    nodes of domain org.openvinotoolkit (opset 12), the common core (supported_ops()) standard ONNX
    opset 18. Anything else stops with one ConversionError listing every unsupported op type and count.
    defer=model_io.Weights(): large constants stay views of OpenVINO's weights until
    model_io.save_model(model, path, weights=...) writes them (no copy of the weights in memory).
export_ir(onnx_model, xml_path)
    Loads a dialect (or standard) ONNX model into OpenVINO, dialect nodes as native ops, and saves IR.
to_openvino(onnx_model) -> openvino.Model
    The loading step of export_ir (_frontend.read_onnx: a ConversionExtension per
    dialect op).

OpenVINO is an optional dependency, imported when these functions are called.
"""
from __future__ import annotations

import functools
from pathlib import Path

import onnx

from custom_ops.errors import ModelError

from . import rules  # noqa: F401  (registers the import rules)
from ._exporter import export_ir, openvino, to_openvino
from ._frontend import OpenVINOError, core_with_extensions, extended_core, read_onnx
from ._frontend import reason as openvino_reason
from ._importer import NAMES_KEY, import_model
from ._registry import op_label, op_table, supported_ops
from ._types import onnx_type

__all__ = ["import_ir", "export_ir", "to_openvino", "supported_ops", "openvino", "OpenVINOError",
           "core_with_extensions", "extended_core", "read_onnx", "openvino_reason", "NAMES_KEY", "op_label",
           "op_table", "onnx_type"]


@functools.lru_cache(maxsize=None)
def core():
    """The process's one openvino.Core (creating one costs; reading models needs no per-call state)."""
    return openvino().Core()


def import_ir(model, weights=None, *, defer=None, int8: str = "qdq", notes: list | None = None) -> onnx.ModelProto:
    """ONNX model of an OpenVINO IR (path of the .xml; the .bin beside it, or `weights`) or of an
    openvino.Model. defer: a converters.model_io.Weights keeping the large constants (see the module doc).

    int8: "qdq" (default) writes FakeQuantize as QuantizeLinear/DequantizeLinear wherever its limits map onto a
    scale and zero point (onnxruntime runs integer kernels), "exact" as OpenVINO's reference formula
    (rules/quantization/). notes: a list receiving model-level notes (FakeQuantize kept exact, and why)."""
    ov = openvino()
    if isinstance(model, ov.Model):
        return import_model(model, source=f"openvino.Model {model.get_friendly_name()!r}", defer=defer, int8=int8,
                            notes=notes)
    path = Path(model)
    if not path.is_file():
        raise ModelError(f"OpenVINO IR not found: {path}")
    try:
        ov_model = core().read_model(str(path), None if weights is None else str(weights))
    except Exception as exc:
        raise ModelError(f"OpenVINO cannot read {path}: {exc}") from None
    return import_model(ov_model, source=str(path), doc=f"imported from OpenVINO IR {path.name}", defer=defer, int8=int8,
                        notes=notes)
