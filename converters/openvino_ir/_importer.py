"""OpenVINO model -> ONNX graph: walk the ops in topological order and let each op's rule emit ONNX nodes.

Every op is visited even after a failure, so one ConversionError lists every unsupported op type (with
counts) and every unsupported configuration at once.
"""
from __future__ import annotations

import functools
import json
import sys
import time
from collections import Counter

import numpy as np
import onnx
from onnx import TensorProto, helper

from custom_ops.cycles import cycle_collection_paused
from custom_ops.element_types import NUMPY_TO_ONNX
from custom_ops.config import DIALECT_OPSET, DOMAIN, IR_VERSION, TARGET_OPSET
from custom_ops.errors import ConversionError

from ..graph import subgraphs
from ..model_io import SUBGRAPH_OPS, Weights

from . import rules  # noqa: F401  (registers the rules)
from ._registry import Unsupported, find, op_label
from ._types import (REAL_TYPE_NAMES, MappedPages, Unpacked, constant_array, deferred_constant, fill_tensor,
                     onnx_type, value_info)
from .rules.attention import scores_scale_into_dequantize
from .rules.quantization import (CHANGED_BY_OPSET_21, MICROSOFT, GraphIndex, dequantized_weights,
                                 quantized_frames_as_channels)
from .rules.state import beam_gathers, refused_model_form, state_boundary


def _unique(wanted: str, taken: set) -> str:
    name, k = wanted, 1
    while name in taken:
        k += 1
        name = f"{wanted}_{k}"
    taken.add(name)
    return name


class _Shared:
    """State of one import shared by the main graph and every body (names are unique model-wide, as
    ONNX subgraphs see outer-scope values by name; all constants become initializers of the main graph)."""

    def __init__(self):
        #: (name, ONNX type, array) of every constant; written into the model's initializers at the end, only
        #: those referenced, straight into the ModelProto (large arrays are views of OpenVINO's weights)
        self.initializers: list[tuple[str, int, np.ndarray]] = []
        self.names: dict[tuple[str, int], str] = {}
        self.taken: set[str] = set()
        self.node_names: set[str] = set()
        self.uses_dialect = False
        self.missing: Counter = Counter()
        self.problems: list[str] = []
        self.visited = 0
        self.progress = None  # callable(count) for long conversions
        self.int8 = "qdq"  # FakeQuantize form: "qdq" or "exact" (rules/quantization/fake_quantize_rule.py)
        self.notes: list[str] = []  # model-level notes for the conversion report
        self.states: dict[str, dict] = {}  # variable id -> its ReadValue/Assign (rules/state.py)
        self.passthrough: set[str] = set()  # OV nodes whose output is their input 0 (beam_idx Gathers) or
        # the value they were bound to (a 3-D convolution's bias, residual Add and Relu taken into it: rules/conv.py)
        self.frames: dict[str, list | str] = {}  # 5-D value -> its frames as 4-D values, in order, or (a clip of
        # one) one 4-D value holding them as its batch (rules/conv.py)
        self.clip_shapes: dict[str, tuple] = {}  # data of a quantized 3-D convolution -> its shape (rules/conv.py)
        # 4-bit weight Constant -> its MatMulNBits inputs (rules/quantization/compressed_weights.py)
        self.packed: dict[str, tuple] = {}
        self.opset_of: dict[str, int] = {}  # output of a node needing a newer default-domain opset -> it
        self.unread_limits: dict[str, object] = {}  # FakeQuantize limit Constants not yet emitted (_limits_only)


class Context:
    """What a rule sees: names of ONNX values, constant values, types and ranks, and node emission.

    One Context per ONNX graph: the main graph, and one per If branch / Loop body (`body()`)."""

    def __init__(self, shared: _Shared | None = None):
        self.shared = shared or _Shared()
        self.nodes: list[onnx.NodeProto] = []
        self.inputs: dict[str, onnx.ValueInfoProto] = {}   # OV node name -> graph input
        self.outputs: dict[str, str] = {}                  # OV Result name -> value it outputs
        self.node = None  # the OpenVINO node being converted
        self.is_body = False
        self._emitted = 0  # nodes emitted for the current OpenVINO node
        # the current node's facts asked of OpenVINO once (every emitted node and temp name carries the friendly
        # name; the walk, _limits_only and the rules read output element types)
        self._friendly: str | None = None
        self._out_types: dict[int, str] = {}  # output index -> element type name

    @property
    def initializers(self) -> list[tuple[str, int, np.ndarray]]:
        return self.shared.initializers

    @property
    def uses_dialect(self) -> bool:
        return self.shared.uses_dialect

    def begin(self, node) -> None:
        self.node, self._emitted, self._friendly, self._out_types = node, 0, None, {}

    def friendly_name(self) -> str:
        """The friendly name of the OpenVINO node being converted."""
        if self._friendly is None:
            self._friendly = self.node.get_friendly_name()
        return self._friendly

    # -- names -------------------------------------------------------------------------------------
    def unique(self, wanted: str) -> str:
        return _unique(wanted, self.shared.taken)

    def value(self, output) -> str:
        """ONNX name of an OpenVINO output (a tensor name of it when it has one)."""
        node = output.get_node()
        key = (node.get_name(), output.get_index())
        names_of = self.shared.names
        name = names_of.get(key)
        if name is None:
            names = sorted(output.get_names())
            if names:
                wanted = names[0]
            else:
                wanted = node.get_friendly_name()
                if node.get_output_size() > 1:
                    wanted += f":{output.get_index()}"
            name = names_of[key] = self.unique(wanted)
            limit = self.shared.unread_limits.pop(key[0], None)
            if limit is not None:  # a FakeQuantize limit a rule reads by name after all: emitted now
                find(limit)(self, limit)
        return name

    def inp(self, node, index: int) -> str:
        return self.value(node.input_value(index))

    def out(self, node, index: int = 0) -> str:
        return self.value(node.output(index))

    def temp(self, hint: str) -> str:
        return self.unique(f"{self.friendly_name()}/{hint}")

    # -- emission ----------------------------------------------------------------------------------
    def emit(self, op_type: str, inputs, outputs=None, *, domain: str = "", **attributes) -> str:
        """Add one ONNX node; `outputs` defaults to one fresh name. Returns the first output's name."""
        outputs = list(outputs) if outputs is not None else [self.temp(op_type.lower())]
        base = self.friendly_name() if self.node is not None else "graph"
        name = _unique(base if self._emitted == 0 else f"{base}/{op_type}", self.shared.node_names)
        self._emitted += 1
        self.nodes.append(_make_node(op_type, inputs, outputs, name, domain, attributes))
        if domain == DOMAIN:
            self.shared.uses_dialect = True
        return outputs[0]

    def const(self, array, hint: str = "const", name: str | None = None) -> str:
        array = np.asarray(array)
        code = NUMPY_TO_ONNX.get(array.dtype)
        if code is None:
            raise Unsupported(f"constant of element type {array.dtype} has no ONNX equivalent")
        if array.dtype == object and not all(isinstance(v, str) and _utf8(v) for v in array.reshape(-1).tolist()):
            raise Unsupported("string constant with bytes that are not UTF-8 (ONNX strings are UTF-8 text)")
        name = name or self.temp(hint)
        self.initializers.append((name, code, array))
        return name

    # -- graphs and bodies --------------------------------------------------------------------------
    def walk(self, ov_model, *, body: bool = False) -> list[tuple[object, str]]:
        """Convert every op of `ov_model` into this graph; returns (op, its name) in the order walked. In a body,
        Parameters must be bound first (`bind`); problems and unsupported ops are collected in the shared state
        (one error at the end)."""
        shared = self.shared
        outer = self.node
        qdq = shared.int8 == "qdq"
        walked = []
        for node in ov_model.get_ordered_ops():
            shared.visited += 1
            if shared.progress is not None:
                shared.progress.tick(shared.visited)
            # each fact about the node asked of OpenVINO once (a call costs 0.5-3 us; ~40% of the walk's own time)
            type_name, name = node.get_type_name(), node.get_name()
            walked.append((node, name))
            if body and type_name == "Parameter":
                if (name, 0) not in shared.names:
                    shared.problems.append(f"{op_label(outer)} {outer.get_friendly_name()!r}: body parameter "
                                           f"{node.get_friendly_name()!r} is not connected")
                continue
            if name in shared.passthrough:
                if (name, 0) not in shared.names:  # not bound by the rule that took it (rules/conv.py)
                    self.bind(node.output(0), self.inp(node, 0))
                continue
            self.begin(node)
            if qdq and type_name == "Constant" and _limits_only(node, self.out_type(node)):
                shared.unread_limits[name] = node
                continue
            handler = find(node)
            if handler is None:
                shared.missing[op_label(node)] += 1
                continue
            try:
                if type_name != "Constant":
                    for index in range(node.get_output_size()):
                        self.out_elem(node, index)
                elif not deferred_constant(self.out_type(node)):
                    self.out_elem(node)
                handler(self, node)
            except Unsupported as reason:
                shared.problems.append(f"{op_label(node)} {node.get_friendly_name()!r}: {reason}")
        self.begin(outer)
        return walked

    def body(self) -> "Context":
        """A Context for a subgraph of the current node (If branch, Loop body)."""
        sub = Context(self.shared)
        sub.is_body = True
        sub.begin(self.node)
        return sub

    def bind(self, output, name: str) -> None:
        """Make OpenVINO output `output` (a body Parameter's) the existing ONNX value `name`."""
        self.shared.names[(output.get_node().get_name(), output.get_index())] = name

    def graph_input(self, hint: str, code: int, dims=None) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(self.unique(hint), code, dims)

    def make_graph(self, name: str, inputs, results) -> onnx.GraphProto:
        """This context's nodes as a subgraph; `results` are (ONNX value, OpenVINO output) pairs, each
        output through its own Identity (a subgraph output must be a fresh value of that subgraph); an
        OpenVINO output None is a bool scalar (a Loop condition passed through). Output shapes are given
        (dynamic dims unnamed): OpenVINO's ONNX reader needs them to give a body static ranks."""
        outputs = []
        for value, ov_output in results:
            fresh = self.emit("Identity", [value], [self.unique(f"{value}_out")])
            if ov_output is None:
                outputs.append(helper.make_tensor_value_info(fresh, TensorProto.BOOL, []))
            else:
                outputs.append(value_info(fresh, _checked_type(ov_output.get_element_type(), "body output"),
                                          ov_output.get_partial_shape()))
        return helper.make_graph(self.nodes, self.unique(name), list(inputs), outputs)

    def result_values(self, ov_body) -> list[tuple[str, object]]:
        """(ONNX value, OpenVINO output) of each Result of a walked body, in the body's order."""
        return [(self.outputs.get(r.get_name(), ""), r.input_value(0)) for r in ov_body.get_results()]

    # -- facts about the OpenVINO node -------------------------------------------------------------
    def const_value(self, node, index: int) -> np.ndarray | None:
        """The value of input `index` when it is a Constant, else None."""
        producer = node.input_value(index).get_node()
        return constant_array(producer) if producer.get_type_name() == "Constant" else None

    def elem(self, node, index: int) -> int:
        return _checked_type(node.get_input_element_type(index), f"input {index}")

    def out_elem(self, node, index: int = 0) -> int:
        return _checked_type(self.out_type(node, index), f"output {index}")

    def out_type(self, node, index: int = 0) -> str:
        """OpenVINO element type name of output `index` of `node` (of the node being converted: asked once)."""
        if node is not self.node:
            return node.get_output_element_type(index).get_type_name()
        cached = self._out_types.get(index)
        if cached is None:
            cached = self._out_types[index] = node.get_output_element_type(index).get_type_name()
        return cached

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


_ATTRIBUTE = onnx.AttributeProto


def _limits_only(constant, type_name: str) -> bool:
    """Whether a Constant of element type `type_name` is a float read only as FakeQuantize limits (inputs 1-4).
    The QDQ form reads their values (Context.const_value), never the constants themselves: such a Constant is
    emitted only when a rule asks for its name (Context.value; a FakeQuantize kept in the exact form), else
    skipped, with the naming and the initializer (about a third of an nncf model's ops)."""
    if type_name not in REAL_TYPE_NAMES:
        return False
    return all(target.get_index() > 0 and target.get_node().get_type_name() == "FakeQuantize"
               for target in constant.output(0).get_target_inputs())


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _make_node(op_type: str, inputs, outputs, name: str, domain: str, attributes: dict) -> onnx.NodeProto:
    """helper.make_node, with the common attribute kinds (int, float, str, lists of ints or floats) set
    directly: make_attribute's generic type checks cost more than the rest of an op's conversion. Fields are
    assigned one by one: the keyword constructors of upb messages cost more (measured on the nodes of four real
    IRs: 0.78x make_node's previous form)."""
    node = onnx.NodeProto()
    node.op_type, node.name, node.domain = op_type, name, domain
    node.input.extend(inputs)
    node.output.extend(outputs)
    if attributes:
        for key in sorted(attributes):
            _add_attribute(node, key, attributes[key])
    return node


def _add_attribute(node: onnx.NodeProto, key: str, value) -> None:
    if value is None:
        return
    kind = type(value)
    if kind is int:
        attribute = node.attribute.add()
        attribute.name, attribute.type, attribute.i = key, _ATTRIBUTE.INT, value
    elif kind is float:
        attribute = node.attribute.add()
        attribute.name, attribute.type, attribute.f = key, _ATTRIBUTE.FLOAT, value
    elif kind is str:
        attribute = node.attribute.add()
        attribute.name, attribute.type, attribute.s = key, _ATTRIBUTE.STRING, value.encode()
    elif kind in (list, tuple) and value and all(type(v) is int for v in value):
        attribute = node.attribute.add()
        attribute.name, attribute.type = key, _ATTRIBUTE.INTS
        attribute.ints.extend(value)
    elif kind in (list, tuple) and value and all(type(v) is float for v in value):
        attribute = node.attribute.add()
        attribute.name, attribute.type = key, _ATTRIBUTE.FLOATS
        attribute.floats.extend(value)
    else:
        node.attribute.append(helper.make_attribute(key, value))


def _checked_type(ov_type, where: str) -> int:
    """ONNX element type of an ov.Type or its name; Unsupported when ONNX cannot carry it."""
    code = onnx_type(ov_type)
    if code is None:
        name = ov_type if isinstance(ov_type, str) else ov_type.get_type_name()
        raise Unsupported(f"{where} has element type {name}, which ONNX cannot carry")
    return code


def _live(nodes, needed: set, computed: set | None = None) -> list:
    """The nodes that contribute to `needed` (rules may leave dead nodes behind, e.g. f16 decompression
    subgraphs re-emitted in f32); `computed` receives their outputs."""
    kept = []
    for node in reversed(nodes):
        outputs = node.output[:]  # (a slice is one list made in protobuf's C code)
        if not needed.isdisjoint(outputs):
            kept.append(node)
            needed.update(node.input[:])
            if computed is not None:
                computed.update(outputs)
            if node.domain or node.op_type in SUBGRAPH_OPS:  # (reading attributes costs ~45% of the pass)
                _subgraphs_read(node, needed)
    return kept[::-1]


def _subgraphs_read(node: onnx.NodeProto, needed: set) -> None:
    """Every value the subgraphs of `node`'s attributes read, into `needed`."""
    for sub in subgraphs(node):
        _referenced(sub, needed)


def _referenced(graph: onnx.GraphProto, into: set) -> set:
    """Every value name a node of `graph` or of its subgraphs reads, plus the graph outputs."""
    for node in graph.node:
        into.update(node.input)
        _subgraphs_read(node, into)
    into.update(o.name for o in graph.output)
    return into


#: FakeQuantize forms (rules/quantization/fake_quantize_rule.py): "qdq" QuantizeLinear/DequantizeLinear where
#: the limits map, "exact" OpenVINO's reference formula everywhere
INT8_FORMS = ("qdq", "exact")



#: With a Weights object, constants of more elements than this stay out of the ModelProto (graph._LIGHT_LIMIT:
#: the lowering rules never read such a constant's value).
DEFER_ELEMENTS = 1024
#: With a Weights object, also drop the mapped pages of each deferred constant once save_model has written it
#: (model_io.Weights.release). Measured on a loaded machine: the peak falls below OpenVINO's own (resnet18-int8
#: 1.87x -> 1.10x the .bin, f32 IRs over 20 MB 1.2x -> 0.3-0.6x), but `convert` in process takes 4-31% longer
#: (release on / off interleaved, 15-20 rounds), while without it the INT8 peaks are OpenVINO's +-0.2x: off.
RELEASE_WRITTEN = False


def _without_cycle_collection(function):
    """`function` run with Python's cyclic garbage collector paused: an import allocates tens of thousands of
    objects (NodeProtos, names, index dicts) and frees almost none in cycles, so every collection the
    allocations trigger walks the growing heap for nothing (measured: `convert` 0.87-1.00x the CPU time)."""
    @functools.wraps(function)
    def paused(*args, **kwargs):
        with cycle_collection_paused():
            return function(*args, **kwargs)
    return paused


@_without_cycle_collection
def import_model(ov_model, *, source: str = "model", doc: str | None = None,
                 progress: bool | None = None, defer: Weights | None = None,
                 int8: str = "qdq", notes: list | None = None) -> onnx.ModelProto:
    """ONNX of an openvino.Model; `source` names it in errors, `doc` is the model's doc_string.

    progress: a line on stderr now and then for long conversions (None: when stderr is a terminal or the
    conversion takes longer than PROGRESS_AFTER seconds).
    defer: a model_io.Weights to keep the data of constants over DEFER_ELEMENTS elements in, as views of
    OpenVINO's weights (model_io.save_model(model, path, weights=weights) writes them straight to the file);
    None puts every constant's bytes into the ModelProto.
    int8: the form of FakeQuantize, one of INT8_FORMS. notes: a list that receives model-level notes (e.g.
    each FakeQuantize kept in the exact form, with the reason)."""
    if int8 not in INT8_FORMS:
        raise ConversionError(f"unknown int8 form {int8!r}; choose one of {', '.join(INT8_FORMS)}")
    op_types = {op.get_type_name() for op in ov_model.get_ordered_ops()}  # (one scan for both model-form checks)
    refused = refused_model_form(op_types)
    if refused:
        raise ConversionError(f"cannot import {source} into ONNX: {refused}")
    ctx = Context()
    ctx.shared.progress = _Progress(source, progress)
    ctx.shared.int8 = int8
    ctx.shared.passthrough, beam_idx = beam_gathers(ov_model, op_types)
    walked = ctx.walk(ov_model)
    ctx.shared.progress.done()
    shared = ctx.shared
    state_inputs, state_outputs = _state_ports(ctx)
    _refuse_problems(shared, source)
    if notes is not None:
        notes.extend(shared.notes)

    ctx.begin(None)
    inputs = [ctx.inputs[p.get_name()] for p in ov_model.get_parameters() if p.get_name() != beam_idx]
    results = [(None, ctx.outputs[r.get_name()], r.input_value(0)) for r in ov_model.get_results()]
    # variables: inputs and outputs as OpenVINO's stateful_to_stateless_transformation
    inputs += state_inputs
    results += state_outputs
    outputs = _graph_outputs(ctx, inputs, results)
    _drop_unread_unpacked(ctx, outputs)
    mapped = MappedPages()  # (after the walk: every constant read)
    if int8 == "qdq":
        index = GraphIndex(ctx.nodes, ctx.initializers)  # (one set of lookups for the three passes)
        dequantized_weights(index, ctx.outputs.values(), inputs, mapped.release)
        quantized_frames_as_channels(index, ctx.outputs.values(), shared.clip_shapes, mapped.release)
        scores_scale_into_dequantize(index, ctx.outputs.values(), ctx.unique)
    referenced = {o.name for o in outputs}  # then every value a kept node (or its subgraphs) reads
    computed = set()  # (the values the main graph's nodes compute, for _record_names)
    live = _live(ctx.nodes, referenced, computed)
    model = helper.make_model(helper.make_graph([], ov_model.get_friendly_name() or "openvino_model", inputs,
                                                outputs),
                              opset_imports=_opset_imports(ctx, live, source), ir_version=IR_VERSION,
                              producer_name="onnx-bridge", doc_string=doc or f"imported from {source}")
    model.graph.node.extend(live)  # (make_model copies its graph: nodes and constants are added after)
    _write_initializers(model, ctx.initializers, referenced, defer, mapped)
    mapped.flush()  # (while OpenVINO's mapping surely exists: later, only written deferred arrays are added)
    _record_names(model, walked, shared.names, computed)
    return model


def _state_ports(ctx: Context) -> tuple[list, list]:
    """The graph inputs and results standing for the model's variables ([] and [] without any); a state the
    conversion cannot express is recorded as a problem."""
    shared = ctx.shared
    if shared.states and not shared.problems:
        try:
            return state_boundary(ctx)
        except Unsupported as reason:
            shared.problems.append(f"state: {reason}")
    return [], []


def _refuse_problems(shared, source: str) -> None:
    """ConversionError listing every unsupported op type and configuration the walk met, if any."""
    if not (shared.missing or shared.problems):
        return
    lines = [f"cannot import {source} into ONNX"]
    if shared.missing:
        total = sum(shared.missing.values())
        listed = ", ".join(f"{label} (x{count})" for label, count in sorted(shared.missing.items()))
        lines.append(f"{len(shared.missing)} unsupported OpenVINO op type(s) ({total} node(s)): {listed}")
    lines += [f"unsupported configuration: {problem}" for problem in shared.problems]
    lines.append("supported ops: converters.openvino_ir.supported_ops() / docs/openvino_ir.md")
    raise ConversionError("\n  ".join(lines))


def _graph_outputs(ctx: Context, inputs: list, results: list) -> list:
    """value_info of each result; a value that is an input, a constant, another output or not the wanted name
    is given its own name through an Identity."""
    outputs, used = [], {i.name for i in inputs} | {name for name, _, _ in ctx.initializers}
    for wanted, value, source_output in results:
        if value in used or (wanted is not None and value != wanted):  # a distinct name produced by a node
            value = ctx.emit("Identity", [value], [wanted or ctx.unique(f"{value}_output")])
        used.add(value)
        code = onnx_type(source_output.get_element_type())
        outputs.append(value_info(value, code, source_output.get_partial_shape()))
    return outputs


def _drop_unread_unpacked(ctx: Context, outputs: list) -> None:
    """u4/i4 constants a live node reads are unpacked; the others stay packed (for dequantized_weights)."""
    if any(isinstance(array, Unpacked) for _, _, array in ctx.initializers):
        read = {o.name for o in outputs}
        _live(ctx.nodes, read)
        ctx.initializers[:] = [(name, code, array.array() if isinstance(array, Unpacked) else array)
                               for name, code, array in ctx.initializers
                               if name in read or not isinstance(array, Unpacked)]


def _opset_imports(ctx: Context, live: list, source: str) -> list:
    """The model's opset imports: the highest opset a live node needs (4-bit weights: DequantizeLinear-21,
    refused where that changes another op), com.microsoft and the dialect when used."""
    opset_of = ctx.shared.opset_of  # (empty unless 4-bit weights: then each live node's output is looked up)
    opset = max([TARGET_OPSET] + [opset_of.get(n.output[0], 0) for n in live]) if opset_of else TARGET_OPSET
    if opset > TARGET_OPSET:  # 4-bit weights: DequantizeLinear-21 (rules/quantization/compressed_weights.py)
        changed = sorted({f"{n.op_type} ({CHANGED_BY_OPSET_21[n.op_type]})" for n in live
                          if n.op_type in CHANGED_BY_OPSET_21})
        if changed:
            raise ConversionError(f"cannot import {source} into ONNX: its compressed weights need opset "
                                  f"{opset}, which changes {', '.join(changed)}")
    opsets = [helper.make_opsetid("", opset)]
    if any(n.domain == MICROSOFT for n in live):
        opsets.append(helper.make_opsetid(MICROSOFT, 1))
    if ctx.uses_dialect:
        opsets.append(helper.make_opsetid(DOMAIN, DIALECT_OPSET))
    return opsets


def _write_initializers(model: onnx.ModelProto, initializers: list, referenced: set,
                        defer: Weights | None, mapped: MappedPages) -> None:
    """The referenced constants into the model, or left to `defer` (their bytes are written by save_model).
    Constants consumed only as attributes (Transpose order, Gather axis, ...) are not needed. `mapped` drops
    the pages of OpenVINO's memory-mapped weights once copied (or, deferred, once written)."""
    if defer is not None and RELEASE_WRITTEN:  # written from OpenVINO's mapped weights: drop their pages then
        defer.release = mapped.release
    for name, code, array in initializers:
        if name in referenced:
            dense = isinstance(array, np.ndarray)  # else packed 4-bit values (_types.Nibbles)
            if defer is not None and array.size > DEFER_ELEMENTS:
                defer.defer(model.graph.initializer.add(), array, name, code)
            else:
                fill_tensor(model.graph.initializer.add(), array, name, code)
                if defer is None:  # copied: the weights are not held twice
                    mapped.release(array if dense else array.packed)


#: metadata_props key of the OpenVINO output -> ONNX value map (JSON {"friendly name:port": value name})
NAMES_KEY = "openvino_names"


def _record_names(model: onnx.ModelProto, walked: list, names: dict, computed: set) -> None:
    """Which ONNX value is which OpenVINO op output (main graph, values some node of it computes: `computed`;
    ambiguous friendly names left out): what `onnx-bridge compare` exposes to find where two runtimes part.
    `walked`: (op, name) of the main graph's ops, in order."""
    ops = [(name, op.get_friendly_name()) for op, name in walked]
    computed_ports: dict[str, list[int]] = {}  # op name -> its outputs whose value a node computes
    for (op_name, index), value in names.items():
        if value in computed:
            computed_ports.setdefault(op_name, []).append(index)
    found, seen = {}, Counter(friendly for _, friendly in ops)
    for name, friendly in ops:
        if seen[friendly] > 1 or name not in computed_ports:
            continue
        for index in sorted(computed_ports[name]):
            found[f"{friendly}:{index}"] = names[(name, index)]
    model.metadata_props.add(key=NAMES_KEY, value=json.dumps(found, separators=(",", ":")))


#: Seconds after which a conversion reports progress on stderr.
PROGRESS_AFTER = 2.0


class _Progress:
    """'importing NAME: k ops' on stderr, at most every INTERVAL seconds, once the conversion is slow."""

    INTERVAL = 0.5

    def __init__(self, source: str, enabled: bool | None):
        self.source, self.enabled = source, enabled
        self.start = self.last = time.monotonic()
        self.shown = False

    def tick(self, count: int) -> None:
        if self.enabled is False or count % 64:
            return
        now = time.monotonic()
        if (self.enabled or now - self.start > PROGRESS_AFTER) and now - self.last >= self.INTERVAL:
            self.last, self.shown = now, True
            print(f"\rimporting {self.source}: {count} ops, {now - self.start:.1f} s", end="",
                  file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.shown:
            print(file=sys.stderr, flush=True)
