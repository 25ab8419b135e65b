"""Convert between the OpenVINO dialect (domain org.openvinotoolkit) and standard ONNX.

    model, report = convert("model.onnx", to="standard")        # lower dialect nodes where exact
    model, report = convert(std_model, to="openvino")           # raise ScatterElements/ReduceL2/Unique
    model, report = convert("model.onnx", to="standard", as_functions=True)   # portable: calls of functions
    model, report = convert(std_model, to="openvino-ir", output="model.xml")
    print(report.to_table())

Rules live in converters/lowering/<op>.py and converters/raising/<op>.py, registered by (domain, op_type,
since_version) in converters.registry; docs/converter.md lists them.
"""
from __future__ import annotations

import os
from pathlib import Path

import onnx

from converters.model_io import Weights, load_model, needs_external_data, opset_of, save_model
from custom_ops.config import DOMAIN
from custom_ops.errors import ConversionError

from ._driver import MODES, lower, raise_
from .graph import all_graphs
from .registry import LOWERING, RAISING
from .report import NodeReport, Report

TARGETS = ("standard", "openvino", "openvino-ir")

__all__ = ["convert", "Report", "NodeReport", "ConversionError", "LOWERING", "RAISING", "MODES", "TARGETS"]


def _openvino_ir():
    try:
        from . import openvino_ir
    except ImportError as exc:
        raise ConversionError(f"OpenVINO IR support is unavailable ({exc}); install onnx-bridge[openvino]") \
            from None
    for name in ("import_ir", "export_ir"):
        if not hasattr(openvino_ir, name):
            raise ConversionError(f"converters.openvino_ir has no {name}(); OpenVINO IR support is unavailable")
    return openvino_ir


def _is_ir(model) -> bool:
    return isinstance(model, (str, os.PathLike)) and Path(model).suffix.lower() == ".xml"


def convert(model, to: str = "standard", mode: str = "default", strict: bool | str = False,
            output=None, ops=None, as_functions: bool = False, external_data: bool | None = None,
            weights: Weights | None = None, int8: str = "qdq") -> tuple[onnx.ModelProto, Report]:
    """Convert `model` (ModelProto, bytes, .onnx path, or OpenVINO IR .xml path) and report per node.

    to:     "standard" lowers dialect nodes to standard ONNX (opset 18) wherever the result is exact;
            "openvino" raises standard ScatterElements, ReduceL2 and Unique into the dialect;
            "openvino-ir" raises, then writes OpenVINO IR to `output` (a .xml path).
    mode:   "default" converts what can be converted; "keep-all" converts nothing (report only);
            "require-standard" (to="standard") raises ConversionError listing every node left in the dialect.
    strict: also keep nodes whose converted graph is not bit-identical on every input (the report's
            caveats: float ReduceL2 rounding when lowering, NaN in float min/max when raising).
            strict="semantics" keeps only caveats that change semantics, converting nodes whose one
            difference is floating-point summation order (what onnx_bridge.InferenceSession uses).
    output: where to write the result (atomically); required for "openvino-ir".
    ops:    only convert nodes of these op types (others are reported as kept); None = all; or a
            function node -> reason (str) to keep that node, or None/"" to convert it.
    as_functions: (to="standard") each dialect node with an exact lowering stays a node of the dialect,
            defined by a model-local function (org.openvinotoolkit, op type, overload) whose body is
            that lowering: plain onnxruntime runs the model, tools still see the op, and to="openvino"
            gives the plain dialect nodes back (converters.functions).
    external_data: with `output` (.onnx): True writes the weights to `output`.data beside it (ONNX external
            data); None (default) only when they pass protobuf's 2 GB limit; False never.
    weights: (an OpenVINO IR input, to="standard") a converters.model_io.Weights: the IR's large constants
            stay in it, as views of OpenVINO's weights, instead of in the returned model; write the model
            with save_model(model, path, weights=weights). With `output` they are written straight from
            OpenVINO's memory either way (one pass, no copy of the weights).
    int8:   (OpenVINO IR input) "qdq" writes FakeQuantize as QuantizeLinear/DequantizeLinear where its limits
            map onto a scale and zero point (the others stay exact, a note each in the report); "exact"
            writes OpenVINO's reference formula everywhere.
    Dialect nodes inside subgraphs and model-local function bodies are converted too.
    The input is never modified. Returns (new model, Report); after writing external data, the returned
    model's large initializers refer to it (onnx.load_external_data_for_model(model, output's directory)).
    """
    if to not in TARGETS:
        raise ConversionError(f"unknown target {to!r}; choose one of {', '.join(TARGETS)}")
    if mode not in MODES:
        raise ConversionError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if strict not in (False, True, "semantics"):
        raise ConversionError(f"unknown strict {strict!r}; choose False, True or 'semantics'")
    if as_functions and to != "standard":
        raise ConversionError("as_functions applies to to='standard' only")
    if to == "openvino-ir" and (output is None or Path(output).suffix.lower() != ".xml"):
        raise ConversionError("to='openvino-ir' writes OpenVINO IR: give output='model.xml'")
    if int8 not in ("qdq", "exact"):
        raise ConversionError(f"unknown int8 form {int8!r}; choose qdq or exact")
    notes: list[str] = []
    if weights is not None and not (_is_ir(model) and to == "standard"):
        raise ConversionError("weights= applies to an OpenVINO IR input converted to='standard'")
    dialect_free = False
    if _is_ir(model):
        deferred = weights if weights is not None else Weights() if output is not None else None
        model = _openvino_ir().import_ir(model, defer=None if to != "standard" else deferred,
                                           int8=int8, notes=notes)
        dialect_free = opset_of(model, DOMAIN) is None  # (the importer imports the dialect with a node of it)
        if deferred is not None and len(deferred) and not dialect_free:
            # the lowering rules read their nodes' constant inputs from the model
            deferred.materialize(model, {name for graph in all_graphs(model.graph) for node in graph.node
                                         if node.domain == DOMAIN for name in node.input})
    else:
        deferred, model = None, load_model(model)
    if to == "standard":
        report = lower(model, mode, strict, ops, as_functions, dialect_free=dialect_free)
    else:
        report = raise_(model, mode, strict, ops)
    report.notes[:0] = notes
    if to == "openvino-ir":
        _openvino_ir().export_ir(model, output)
    elif output is not None:
        external = external_data if external_data is not None else needs_external_data(model)
        save_model(model, output, external_data=external, weights=deferred)
        if external:  # the caller gets the model as written: its weights refer to the external data
            model = onnx.load(str(output), load_external_data=False)
        elif deferred is not None:
            deferred.materialize(model)
    return model, report
