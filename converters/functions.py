"""Dialect nodes as calls of model-local functions (convert(..., to="standard", as_functions=True)).

A dialect node with an exact lowering keeps its op type, domain, attributes and inputs, and gets an
`overload`; the model defines (org.openvinotoolkit, op type, overload) as a FunctionProto whose body is the
lowering. onnxruntime without any extension library inlines the body; tools still see the dialect op, and
unwrap() turns the calls back into plain dialect nodes.

The lowering rules read the node's context: element types, ranks, constant inputs (axis, axes, constant
indices), sometimes static dims. A body is built for the call site with its types, ranks and constants
but with every dim unknown (the rules then emit Shape ops or run-time checks instead of baking dims in),
so one function serves every call with the same configuration, whatever its shapes. Functions are shared
by identical bodies, so a body is only ever used at call sites that produced it: constants such as the
axis are part of the body (the axis input is still passed, and unused). Overloads are named after the
op version and attributes, e.g. ScatterElementsUpdate::v12_sum_init1 (a suffix _2, _3 for further bodies
with the same attributes, e.g. another data type or axis).
"""
from __future__ import annotations

import copy
import re

import onnx
import onnx.inliner
from onnx import helper

import custom_ops
from custom_ops.config import DOMAIN

from .graph import subgraphs
from .rules import Converted, RuleContext

#: What the report says about a node defined by a function.
ACTION = "function"


def is_definition(function: onnx.FunctionProto) -> bool:
    """A model-local function defining a dialect op (what as_functions writes)."""
    return function.domain == DOMAIN and function.name in custom_ops.op_types()


def _all_node_lists(model: onnx.ModelProto):
    """Every repeated node field of the model: graphs, subgraphs, function bodies and their subgraphs."""
    def graph_lists(nodes):
        yield nodes
        for node in nodes:
            for sub in subgraphs(node):
                yield from graph_lists(sub.node)
    yield from graph_lists(model.graph.node)
    for function in model.functions:
        yield from graph_lists(function.node)


def unwrap(model: onnx.ModelProto) -> int:
    """Calls of dialect-op definitions become plain dialect nodes and the definitions are removed (in place).
    Returns the number of calls unwrapped."""
    defined = {(f.domain, f.name, f.overload) for f in model.functions if is_definition(f)}
    if not defined:
        return 0
    calls = 0
    kept = [f for f in model.functions if not is_definition(f)]
    del model.functions[:]
    model.functions.extend(kept)
    for nodes in _all_node_lists(model):
        for node in nodes:
            if (node.domain, node.op_type, node.overload) in defined:
                node.ClearField("overload")
                calls += 1
    return calls


def generic(ctx: RuleContext) -> RuleContext:
    """The rule context with every dim unknown (element types, ranks and constants kept)."""
    info = copy.copy(ctx.info)
    info.shapes = {name: None if shape is None else (None,) * len(shape) for name, shape in ctx.info.shapes.items()}
    return RuleContext(info, ctx.names, ctx.target_opset)


def _label(node: onnx.NodeProto, version: int) -> str:
    """v12_sum_init1: the op version and the node's attribute values (defaults filled in)."""
    spec = custom_ops.resolve(node.op_type, version)
    given = {}
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        given[attribute.name] = value.decode() if isinstance(value, bytes) else value
    values = spec.attribute_values(given)
    short = {a.name: a.short or a.name for a in spec.attributes}
    parts = [f"v{spec.since_version}"]
    for name in sorted(values):
        value = values[name]
        parts.append(f"{short[name]}{value}" if isinstance(value, int) else str(value))
    return "_".join(parts)


class _Renamer:
    """Maps the names of one lowering to the function's: formal ports, then the rules' hints numbered in
    order of appearance (so that equal lowerings give equal bodies whatever the node was called)."""

    def __init__(self, mapping: dict[str, str], base: str):
        self.mapping, self.prefix = dict(mapping), f"{base}/"
        self.taken = set(mapping.values())

    def __call__(self, name: str) -> str:
        if not name:
            return name
        if name not in self.mapping:
            short = name[len(self.prefix):] if name.startswith(self.prefix) else name
            stem = re.sub(r"_\d+$", "", short) or short  # the rule's hint, without the model's counter
            candidate, counter = stem, 1
            while candidate in self.taken:
                counter += 1
                candidate = f"{stem}_{counter}"
            self.taken.add(candidate)
            self.mapping[name] = candidate
        return self.mapping[name]


def _constant_node(tensor: onnx.TensorProto) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [tensor.name], name=tensor.name, value=tensor)


def _rename_graph(graph: onnx.GraphProto, rename: _Renamer) -> None:
    """Rename a subgraph in place; its initializers become Constant nodes (a function has none)."""
    constants = [_constant_node(t) for t in graph.initializer]
    del graph.initializer[:]
    nodes = constants + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.name = rename(graph.name)
    _rename_nodes(graph.node, rename)
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        value.name = rename(value.name)


def _rename_nodes(nodes, rename: _Renamer) -> None:
    for node in nodes:
        node.name = rename(node.name) if node.name else node.name
        node.input[:] = [rename(n) for n in node.input]
        node.output[:] = [rename(n) for n in node.output]
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR and attribute.t.name:
                attribute.t.name = node.output[0] if node.op_type == "Constant" else rename(attribute.t.name)
        for sub in subgraphs(node):
            _rename_graph(sub, rename)


def _free_names(nodes, defined: set[str]) -> set[str]:
    """Names the nodes read that neither they nor `defined` produce (outer-scope references)."""
    free, known = set(), set(defined)
    for node in nodes:
        free.update(n for n in node.input if n and n not in known)
        for sub in subgraphs(node):
            inner = known | {v.name for v in sub.input} | {t.name for t in sub.initializer}
            free.update(_free_names(sub.node, inner))
        known.update(node.output)
    return free


class Definitions:
    """The functions one conversion defines: one per distinct body, named by op type and overload."""

    def __init__(self, default_opset: int):
        self.default_opset = default_opset
        self.functions: list[onnx.FunctionProto] = []
        self._by_body: dict[bytes, onnx.FunctionProto] = {}
        self._labels: dict[tuple[str, str], int] = {}
        self._generic: tuple[RuleContext, RuleContext] | None = None

    def call(self, node: onnx.NodeProto, version: int, rule, ctx: RuleContext) -> tuple:
        """(call node, function, Converted) for `node`, whose rule converted it in `ctx`; or (None, reason).

        The rule runs again with every dim unknown (see generic) on a copy of the node whose blank outputs
        are named, so that the body writes every formal output."""
        spec = custom_ops.resolve(node.op_type, version)
        site = onnx.NodeProto()
        site.CopyFrom(node)
        site.ClearField("overload")
        for index, name in enumerate(site.output):
            if not name:
                site.output[index] = ctx.names.fresh(f"{node.name or node.op_type}/unused_{index}")
        if self._generic is None or self._generic[0] is not ctx:  # one copy per scope, not per node
            self._generic = (ctx, generic(ctx))
        result = rule(site, self._generic[1])
        if not isinstance(result, Converted):
            return None, f"no shape-independent body ({result.reason})"
        formal_inputs = [port.name for port in spec.inputs[:len(node.input)]]
        formal_outputs = [port.name for port in spec.outputs[:len(node.output)]]
        mapping = {}
        for actual, formal in zip(site.input, formal_inputs):
            if actual:
                mapping.setdefault(actual, formal)
        for actual, formal in zip(site.output, formal_outputs):
            mapping[actual] = formal
        if set(site.input) & set(site.output):
            return None, "an input is also an output"
        builder = result.builder
        body = [_constant_node(t) for t in builder.initializers] + list(builder.nodes)
        body = [copy.deepcopy(n) for n in body]
        free = _free_names(body, set(a for a in site.input if a))
        if free:
            return None, f"the lowering reads values outside the node ({', '.join(sorted(free))})"
        rename = _Renamer(mapping, builder.base)
        _rename_nodes(body, rename)
        attributes = sorted({a.name for a in node.attribute} | {a.name for a in spec.attributes})
        imports = [helper.make_opsetid("", self.default_opset)]
        imports += [helper.make_opsetid(d, v) for d, v in sorted(result.domains.items()) if d]
        function = helper.make_function(DOMAIN, node.op_type, formal_inputs, formal_outputs, body, imports,
                                        attributes, doc_string=f"exact lowering of {node.op_type}-{version} "
                                                               f"by onnx-bridge: {result.reason}")
        key = function.SerializeToString(deterministic=True)
        known = self._by_body.get(key)
        if known is None:
            label = _label(node, version)
            count = self._labels[(node.op_type, label)] = self._labels.get((node.op_type, label), 0) + 1
            function.overload = label if count == 1 else f"{label}_{count}"
            self._by_body[key] = known = function
            self.functions.append(function)
        call = onnx.NodeProto()
        call.CopyFrom(node)
        call.overload = known.overload
        return (call, known, result), None


def _holds_dialect_nodes(nodes) -> bool:
    return any(node.domain == DOMAIN for node in _all_nodes(nodes))


def plain_dialect_nodes(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with every dialect node in its graph (or subgraphs), where a custom-op runtime finds it:
    calls of dialect-op definitions become plain dialect nodes (unwrap) and model-local functions holding
    dialect nodes, and the functions calling those, are inlined. Returns `model` (changed in place) or a
    new model."""
    unwrap(model)
    holders = {(f.domain, f.name) for f in model.functions if _holds_dialect_nodes(f.node)}
    if not holders:
        return model
    while True:  # also inline the functions that call a holder, so that no dialect node stays in a body
        callers = {(f.domain, f.name) for f in model.functions
                   if (f.domain, f.name) not in holders and any((n.domain, n.op_type) in holders
                                                                for n in _all_nodes(f.node))}
        if not callers:
            break
        holders |= callers
    inlined = onnx.inliner.inline_selected_functions(model, sorted(holders))
    inlined.ir_version = model.ir_version
    return inlined


def _all_nodes(nodes):
    for node in nodes:
        yield node
        for sub in subgraphs(node):
            yield from _all_nodes(sub.node)
