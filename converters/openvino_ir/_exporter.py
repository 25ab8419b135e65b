"""Dialect ONNX -> OpenVINO IR.

Reading uses _frontend.read_onnx: OpenVINO's ONNX frontend with one
ConversionExtension per dialect op, so each node becomes the native OpenVINO op.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import custom_ops
from converters.model_io import load_model, opset_of
from converters.passes import make_runnable
from custom_ops.config import DOMAIN
from custom_ops.errors import BridgeError, ConversionError, OpError

from ._frontend import openvino, read_onnx


def _prepare_dialect_nodes(model) -> None:
    """Check that every dialect node is an op of the model's dialect opset. read_onnx reads them as
    opset-12 ops: below opset 12 ScatterElementsUpdate is version 3, so its attributes are dropped."""
    opset = opset_of(model, DOMAIN)
    problems = []
    for node in model.graph.node:
        if node.domain != DOMAIN:
            continue
        if opset is None:
            problems.append(f"{node.op_type} {node.name!r}: the model does not import domain {DOMAIN!r}")
            continue
        try:
            spec = custom_ops.resolve(node.op_type, opset)
        except OpError as exc:
            problems.append(f"{node.op_type} {node.name!r}: not an op of {DOMAIN} opset {opset} ({exc})")
            continue
        if not spec.attributes:
            del node.attribute[:]
    if problems:
        raise ConversionError("cannot load into OpenVINO:\n  " + "\n  ".join(problems))


def to_openvino(onnx_model):
    """openvino.Model of an ONNX model (path, bytes or ModelProto); dialect nodes become native ops."""
    openvino()
    model = make_runnable(load_model(onnx_model))
    _prepare_dialect_nodes(model)
    return read_onnx(model)


def export_ir(onnx_model, xml_path) -> Path:
    """Save an ONNX model as OpenVINO IR (xml + bin, weights kept in their own precision), atomically."""
    ov = openvino()
    ov_model = onnx_model if isinstance(onnx_model, ov.Model) else to_openvino(onnx_model)
    xml_path = Path(xml_path)
    if xml_path.suffix != ".xml":
        raise BridgeError(f"an OpenVINO IR path ends in .xml, got {xml_path}")
    xml_path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{xml_path.stem}.", dir=xml_path.parent))
    try:
        ov.save_model(ov_model, str(staging / xml_path.name), compress_to_fp16=False)
        os.replace(staging / xml_path.with_suffix(".bin").name, xml_path.with_suffix(".bin"))
        os.replace(staging / xml_path.name, xml_path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return xml_path
