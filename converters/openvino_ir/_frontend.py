"""Dialect ONNX models in OpenVINO: its ONNX frontend with one ConversionExtension per dialect op (naming
the domain: OpenVINO's ONNX frontend knows no op of org.openvinotoolkit), built from the op's unit
(custom_ops.unit: its native node factory), so each node is read as the native OpenVINO op. Used by the
IR exporter and by onnx_bridge.backends.openvino."""
from __future__ import annotations

import functools
import io
import re

from converters.model_io import load_model
from converters.passes import make_runnable
from custom_ops.config import DOMAIN
from custom_ops.errors import BridgeError


class OpenVINOError(BridgeError, RuntimeError):
    """OpenVINO refused or failed to build, compile or run something (its message is kept)."""


def openvino():
    try:
        import openvino as ov
    except ImportError:
        raise BridgeError("OpenVINO is not installed: pip install 'onnx-bridge[openvino]'") from None
    return ov


def reason(exc: Exception) -> str:
    """OpenVINO's message without its chain of "Exception from <file>:<line>:" / "Check ... failed at" prefixes."""
    text = " ".join(str(exc).split())
    tail = re.split(r"(?:failed at|Exception from) \S+?:\d+:\s*", text)[-1].strip()
    tail = re.sub(r"^While validating node '.*?' with friendly_name '[^']*':\s*", "", tail)
    return (tail or text)[:400]


def _attribute_value(ctx, attribute):
    """A dialect attribute of the node being translated, its default when absent."""
    if attribute.default is None:  # required: no default to pass (OpenVINO raises when missing)
        return ctx.get_attribute(attribute.name)
    return ctx.get_attribute(attribute.name, attribute.default)


def unit_translator(unit):
    """The ConversionExtension translator of a unit: its native node factory on the node's inputs (absent
    optional inputs as None) and attributes (dialect values mapped to OpenVINO's)."""
    def translate(ctx):
        ov = openvino()
        spec = unit.newest
        inputs = [ctx.get_input(i) if i < ctx.get_input_size() else None for i in range(len(spec.inputs))]
        given = {a.name: _attribute_value(ctx, a) for a in spec.attributes}
        attributes = unit.openvino.ov_attributes(spec.attribute_values(given))
        return unit.openvino.factory(ov, inputs, attributes).outputs()
    return translate


def _translators() -> dict:
    from custom_ops import units
    return {unit.op_type: unit_translator(unit) for unit in units()}


def core_with_extensions():
    """A new ov.Core whose ONNX frontend reads the dialect's ops as OpenVINO's native ops."""
    ov = openvino()
    from openvino.frontend.onnx import ConversionExtension
    extended = ov.Core()
    for op_type, translator in _translators().items():
        extended.add_extension(ConversionExtension(op_type, DOMAIN, translator))
    return extended


@functools.cache
def extended_core():
    return core_with_extensions()


def read_onnx(model):
    """A dialect ONNX model (path, bytes or ModelProto) as an ov.Model; IR version pinned for the reader."""
    proto = make_runnable(load_model(model))
    try:
        return extended_core().read_model(io.BytesIO(proto.SerializeToString()))
    except RuntimeError as exc:
        raise OpenVINOError(f"OpenVINO could not read the model: {reason(exc)}") from None
