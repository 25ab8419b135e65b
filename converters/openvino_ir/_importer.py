"""OpenVINO model -> ONNX graph: walk the ops in topological order and let each op's rule emit ONNX nodes.

Every op is visited even after a failure, so one ConversionError lists every unsupported op type (with
counts) and every unsupported configuration at once.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
from onnx import TensorProto, helper

from custom_ops._types import NUMPY_TO_ONNX
from custom_ops.config import DIALECT_OPSET, DOMAIN, IR_VERSION, TARGET_OPSET
from custom_ops.errors import ConversionError

from . import rules  # noqa: F401  (registers the rules)
from ._registry import Unsupported, find, op_label
from ._types import constant_array, onnx_type, tensor_proto, value_info


def _unique(wanted: str, taken: set) -> str:
    name, k = wanted, 1
    while name in taken:
        k += 1
        name = f"{wanted}_{k}"
    taken.add(name)
    return name


class Context:
    """What a rule sees: names of ONNX values, constant values, types and ranks, and node emission."""

    def __init__(self):
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.inputs: dict[str, onnx.ValueInfoProto] = {}   # OV node name -> graph input
        self.outputs: dict[str, str] = {}                  # OV Result name -> value it outputs
        self.uses_dialect = False
        self.node = None  # the OpenVINO node being converted
        self._names: dict[tuple[str, int], str] = {}
        self._taken: set[str] = set()
        self._node_names: set[str] = set()
        self._emitted = 0  # nodes emitted for the current OpenVINO node

    def begin(self, node) -> None:
        self.node, self._emitted = node, 0

    # -- names -------------------------------------------------------------------------------------
    def unique(self, wanted: str) -> str:
        return _unique(wanted, self._taken)

    def value(self, output) -> str:
        """ONNX name of an OpenVINO output (a tensor name of it when it has one)."""
        node = output.get_node()
        key = (node.get_name(), output.get_index())
        if key not in self._names:
            names = sorted(output.get_names())
            if names:
                wanted = names[0]
            else:
                wanted = node.get_friendly_name()
                if node.get_output_size() > 1:
                    wanted += f":{output.get_index()}"
            self._names[key] = self.unique(wanted)
        return self._names[key]

    def inp(self, node, index: int) -> str:
        return self.value(node.input_value(index))

    def out(self, node, index: int = 0) -> str:
        return self.value(node.output(index))

    def temp(self, hint: str) -> str:
        return self.unique(f"{self.node.get_friendly_name()}/{hint}")

    # -- emission ----------------------------------------------------------------------------------
    def emit(self, op_type: str, inputs, outputs=None, *, domain: str = "", **attributes) -> str:
        """Add one ONNX node; `outputs` defaults to one fresh name. Returns the first output's name."""
        outputs = list(outputs) if outputs is not None else [self.temp(op_type.lower())]
        base = self.node.get_friendly_name() if self.node is not None else "graph"
        name = _unique(base if self._emitted == 0 else f"{base}/{op_type}", self._node_names)
        self._emitted += 1
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, name=name, domain=domain,
                                           **attributes))
        if domain == DOMAIN:
            self.uses_dialect = True
        return outputs[0]

    def const(self, array, hint: str = "const", name: str | None = None) -> str:
        array = np.asarray(array)
        code = NUMPY_TO_ONNX.get(array.dtype)
        if code is None:
            raise Unsupported(f"constant of element type {array.dtype} has no ONNX equivalent")
        name = name or self.temp(hint)
        self.initializers.append(tensor_proto(array, name, code))
        return name

    # -- facts about the OpenVINO node -------------------------------------------------------------
    def const_value(self, node, index: int) -> np.ndarray | None:
        """The value of input `index` when it is a Constant, else None."""
        producer = node.input_value(index).get_node()
        return constant_array(producer) if producer.get_type_name() == "Constant" else None

    def elem(self, node, index: int) -> int:
        return _checked_type(node.get_input_element_type(index), f"input {index}")

    def out_elem(self, node, index: int = 0) -> int:
        return _checked_type(node.get_output_element_type(index), f"output {index}")

    def rank(self, node, index: int) -> int | None:
        rank = node.get_input_partial_shape(index).rank
        return rank.get_length() if rank.is_static else None

    def int64(self, node, index: int) -> str:
        """Input `index` (an integer tensor) as int64, as ONNX shape-like inputs require."""
        value = self.const_value(node, index)
        if value is not None and value.dtype != np.int64:
            return self.const(value.astype(np.int64), "i64")
        name = self.inp(node, index)
        if self.elem(node, index) == TensorProto.INT64:
            return name
        return self.emit("Cast", [name], to=TensorProto.INT64)

    def int64_vector(self, node, index: int) -> str:
        """Input `index` as a 1-D int64 tensor (OpenVINO takes scalar axes where ONNX wants 1-D)."""
        value = self.const_value(node, index)
        if value is not None and (value.dtype != np.int64 or value.ndim != 1):
            return self.const(value.astype(np.int64).reshape(-1), "i64")
        name = self.int64(node, index)
        if self.rank(node, index) == 1:
            return name
        return self.emit("Reshape", [name, self.const(np.array([-1], np.int64), "flat")])

    def int64_or_int32(self, node, index: int) -> str:
        """Input `index` as int32 or int64 (ONNX index inputs accept both)."""
        if self.elem(node, index) in (TensorProto.INT32, TensorProto.INT64):
            return self.inp(node, index)
        return self.int64(node, index)


def _checked_type(ov_type, where: str) -> int:
    code = onnx_type(ov_type)
    if code is None:
        raise Unsupported(f"{where} has element type {ov_type.get_type_name()}, which ONNX cannot carry")
    return code


def import_model(ov_model, *, source: str = "model", doc: str | None = None) -> onnx.ModelProto:
    """ONNX of an openvino.Model; `source` names it in errors, `doc` is the model's doc_string."""
    ctx = Context()
    missing: Counter = Counter()
    problems: list[str] = []
    for node in ov_model.get_ordered_ops():
        handler = find(node)
        if handler is None:
            missing[op_label(node)] += 1
            continue
        ctx.begin(node)
        try:
            for index in range(node.get_output_size()):
                ctx.out_elem(node, index)
            handler(ctx, node)
        except Unsupported as reason:
            problems.append(f"{op_label(node)} {node.get_friendly_name()!r}: {reason}")
    if missing or problems:
        lines = [f"cannot import {source} into ONNX"]
        if missing:
            total = sum(missing.values())
            listed = ", ".join(f"{label} (x{count})" for label, count in sorted(missing.items()))
            lines.append(f"{len(missing)} unsupported OpenVINO op type(s) ({total} node(s)): {listed}")
        lines += [f"unsupported configuration: {problem}" for problem in problems]
        lines.append("supported ops: converters.openvino_ir.supported_ops() / docs/openvino_ir.md")
        raise ConversionError("\n  ".join(lines))

    ctx.begin(None)
    inputs = [ctx.inputs[p.get_name()] for p in ov_model.get_parameters()]
    outputs, used = [], {i.name for i in inputs} | {t.name for t in ctx.initializers}
    for result in ov_model.get_results():
        value = ctx.outputs[result.get_name()]
        source_output = result.input_value(0)
        if value in used:  # a graph output must be a distinct name produced by a node
            value = ctx.emit("Identity", [value], [ctx.unique(f"{value}_output")])
        used.add(value)
        code = onnx_type(source_output.get_element_type())
        outputs.append(value_info(value, code, source_output.get_partial_shape()))
    # Constants consumed only as attributes (Transpose order, Gather axis, ...) are not needed.
    referenced = {name for node in ctx.nodes for name in node.input} | {o.name for o in outputs}
    initializers = [t for t in ctx.initializers if t.name in referenced]
    graph = helper.make_graph(ctx.nodes, ov_model.get_friendly_name() or "openvino_model", inputs, outputs,
                              initializer=initializers)
    opsets = [helper.make_opsetid("", TARGET_OPSET)]
    if ctx.uses_dialect:
        opsets.append(helper.make_opsetid(DOMAIN, DIALECT_OPSET))
    model = helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION,
                              producer_name="onnx-bridge", doc_string=doc or f"imported from {source}")
    return model

