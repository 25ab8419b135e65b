"""Walks a model (subgraphs and model-local function bodies included), applies the registered rules node by
node and runs the passes."""
from __future__ import annotations

import onnx
from onnx import helper

from converters.model_io import opset_of, set_opset
from custom_ops.config import DIALECT_OPSET, DOMAIN, IR_VERSION, TARGET_OPSET
from custom_ops.errors import ConversionError

from . import functions, passes
from .graph import ModelInfo, NameScope, all_graphs, subgraphs
from .registry import LOWERING, RAISING, Registry
from .report import NodeReport, Report
from .rules import Converted, Keep, RuleContext

MODES = ("default", "keep-all", "require-standard")


class _Walk:
    """One conversion walk: the rules of `registry` applied to the nodes `interesting` selects, the user's
    choices (mode, strict) read from `report`, which receives a row per node."""

    def __init__(self, model, registry: Registry, interesting, report: Report, *, rule_opset: int | None,
                 target_opset: int, blocked: str | None = None, ops=None,
                 definitions: functions.Definitions | None = None):
        self.model, self.registry, self.interesting = model, registry, interesting
        self.info_model = model  # what types and constants are read from (a function body's own model)
        self.definitions = definitions
        self.in_function = False
        self.rule_opset, self.report, self.mode, self.strict = rule_opset, report, report.mode, report.strict
        self.blocked, self.target_opset = blocked, target_opset
        self.ops = ops if ops is None or callable(ops) else frozenset(ops)
        self._ctx = None
        self.count = 0
        self.converted = 0
        self.domains: dict[str, int] = {}
        self.new_values: list[tuple[onnx.GraphProto, dict[str, int]]] = []
        self.kept_action = "kept" if report.direction == "standard" else "unchanged"

    def enter(self, info_model: onnx.ModelProto, rule_opset: int | None, blocked: str | None) -> None:
        """Convert another scope (a function body) from now on."""
        self.info_model, self.rule_opset, self.blocked, self._ctx = info_model, rule_opset, blocked, None
        self.in_function = True

    @property
    def ctx(self) -> RuleContext:
        if self._ctx is None:  # shape inference only when a rule actually runs
            info = ModelInfo(self.info_model)
            self._ctx = RuleContext(info, NameScope(info.names), self.target_opset)
        return self._ctx

    def graph(self, graph: onnx.GraphProto) -> None:
        nodes = []
        for node in graph.node:
            for sub in subgraphs(node):
                self.graph(sub)
            self.count += 1
            if not self.interesting(node):
                nodes.append(node)
                continue
            nodes.extend(self.node(node, graph))
        del graph.node[:]
        graph.node.extend(nodes)

    def node(self, node: onnx.NodeProto, graph: onnx.GraphProto) -> list[onnx.NodeProto]:
        found = self.registry.lookup(node.domain, node.op_type, self.rule_opset)
        version = found[0] if found else None
        entry = NodeReport(node.name or f"{node.op_type}#{self.count}", node.op_type, node.domain, version,
                           self.kept_action, "")
        self.report.add(entry)
        if self.mode == "keep-all":
            entry.reason = "mode keep-all"
            return [node]
        if callable(self.ops):
            declined = self.ops(node)
            if declined:
                entry.reason = declined
                return [node]
        elif self.ops is not None and node.op_type not in self.ops:
            entry.reason = f"not among the op types asked for ({', '.join(sorted(self.ops))})"
            return [node]
        if self.blocked:
            entry.reason = self.blocked
            return [node]
        referring = [f"{a.name} -> {a.ref_attr_name}" for a in node.attribute if a.ref_attr_name]
        if referring:
            entry.reason = (f"attribute {', '.join(referring)} refers to an attribute of the enclosing "
                            f"function: its value is known per call only")
            return [node]
        if found is None:
            entry.reason = (f"no rule for {node.op_type} at {node.domain or 'ai.onnx'} opset "
                            f"{self.rule_opset}")
            return [node]
        try:
            result = found[1](node, self.ctx)
        except ConversionError:
            raise
        except Exception as error:  # a malformed node (or a bug of ours): name it instead of a traceback
            raise ConversionError(f"cannot convert node {entry.name!r} ({node.op_type}): "
                                  f"{type(error).__name__}: {error}") from error
        if isinstance(result, Keep):
            entry.reason = result.reason
            return [node]
        assert isinstance(result, Converted), f"rule for {node.op_type} returned {result!r}"
        if result.caveat and self.strict and not (self.strict == "semantics" and result.rounding_only):
            entry.reason = f"strict: {result.caveat}"
            return [node]
        if self.definitions is not None and not self.in_function:
            return self.call(node, found, result, entry)
        if self.definitions is not None:  # measured: "org.openvinotoolkit:ScatterElementsUpdate(-1) is not a
            # registered function/op" from onnxruntime 1.32 for an overloaded call inside a function body
            result.reason += ("; lowered in place, not as a function: onnxruntime does not resolve overloaded "
                              "calls inside function bodies")
        builder = result.builder
        entry.action, entry.reason, entry.caveat = result.action, result.reason, result.caveat
        entry.emitted = [n.op_type for n in builder.nodes]
        graph.initializer.extend(builder.initializers)
        constants = {t.name for t in builder.initializers}
        self.new_values.append((graph, {k: v for k, v in builder.types.items() if k not in constants}))
        for domain, version in result.domains.items():
            self.domains[domain] = max(self.domains.get(domain, 0), version)
        self.converted += 1
        return builder.nodes

    def call(self, node, found, result: Converted, entry: NodeReport) -> list[onnx.NodeProto]:
        """as_functions: the node stays, as a call of a function whose body is its lowering."""
        made, why = self.definitions.call(node, found[0], found[1], self.ctx)
        if made is None:
            entry.reason = f"exact lowering, but not as a function: {why}"
            return [node]
        call, function, generic = made
        entry.action, entry.caveat = functions.ACTION, result.caveat
        entry.reason = f"calls function {function.name}::{function.overload} ({generic.action}: {generic.reason})"
        entry.emitted = [n.op_type for n in function.node]
        for domain, version in generic.domains.items():
            self.domains[domain] = max(self.domains.get(domain, 0), version)
        self.converted += 1
        return [call]


def _finish(model, walk: _Walk, used_before: set[str], report: Report) -> None:
    passes.remove_dead_constants(model, used_before, report.notes)
    passes.add_value_info(model, walk.new_values)
    passes.pin_runnable_opset(model, report.notes)


# Model-local function bodies ------------------------------------------------------------------------------


def _key(node_or_function) -> tuple[str, str, str]:
    if isinstance(node_or_function, onnx.FunctionProto):
        return node_or_function.domain, node_or_function.name, node_or_function.overload
    return node_or_function.domain, node_or_function.op_type, node_or_function.overload


def _body_nodes(nodes):
    """nodes and the nodes of their subgraphs."""
    for node in nodes:
        yield node
        for sub in subgraphs(node):
            yield from _body_nodes(sub.node)


def _callers_first(model: onnx.ModelProto) -> list[onnx.FunctionProto]:
    """The model's functions, each one after every function that calls it (ONNX forbids recursion)."""
    by_key = {_key(f): f for f in model.functions}
    order, done = [], set()

    def visit(key):  # callees first, reversed below
        if key in done:
            return
        done.add(key)
        for node in _body_nodes(by_key[key].node):
            if _key(node) in by_key:
                visit(_key(node))
        order.append(by_key[key])

    for key in by_key:
        visit(key)
    return order[::-1]


def _scope_model(model: onnx.ModelProto, function: onnx.FunctionProto, sites, notes) -> onnx.ModelProto:
    """A model whose graph is the function's body, its inputs typed as every call site types them (element
    type and rank; dims unknown, since calls may differ): what the rules read types and constants from."""
    inputs = []
    for index, name in enumerate(function.input):
        seen = set()
        for node, info in sites:
            actual = node.input[index] if index < len(node.input) else ""
            seen.add((info.elem_type(actual), info.rank(actual)) if actual else (None, None))
        (code, rank), = seen if len(seen) == 1 else ((None, None),)
        if len(seen) > 1:
            notes.append(f"function {function.name}: input {name!r} is typed differently by its calls; "
                         f"nodes that depend on its type stay")
        if code:
            inputs.append(helper.make_tensor_value_info(name, code, None if rank is None else [None] * rank))
        else:
            inputs.append(onnx.ValueInfoProto(name=name))
    graph = helper.make_graph(list(function.node), function.name or "function", inputs,
                              [onnx.ValueInfoProto(name=name) for name in function.output],
                              value_info=list(function.value_info))
    scope = helper.make_model(graph, opset_imports=list(function.opset_import), ir_version=IR_VERSION)
    scope.functions.extend(model.functions)
    return scope


def _constants_as_nodes(graph: onnx.GraphProto) -> None:
    """Initializers (which a function body cannot hold) become Constant nodes, in subgraphs too."""
    for node in graph.node:
        for sub in subgraphs(node):
            _constants_as_nodes(sub)
    if graph.initializer:
        constants = [helper.make_node("Constant", [], [t.name], value=t) for t in graph.initializer]
        nodes = constants + list(graph.node)
        del graph.initializer[:]
        del graph.node[:]
        graph.node.extend(nodes)


def _function_bodies(walk: _Walk, model: onnx.ModelProto, rule_opset_of, blocked_of, report: Report) -> set:
    """Convert the nodes of interest inside the model's functions; returns the keys of changed functions."""
    functions_in_order = _callers_first(model)
    if not any(walk.interesting(n) for f in functions_in_order for n in _body_nodes(f.node)):
        return set()
    infos = {None: ModelInfo(model)}  # where each scope's values are typed; None = the main graph
    calls: dict[tuple, list] = {}
    for graph in all_graphs(model.graph):
        for node in graph.node:
            calls.setdefault(_key(node), []).append((node, infos[None]))
    changed = set()
    for function in functions_in_order:
        key = _key(function)
        scope = _scope_model(model, function, calls.get(key, []), report.notes)
        if not any(walk.interesting(n) for n in _body_nodes(function.node)):
            local = {_key(f) for f in functions_in_order}
            if any(_key(n) in local for n in _body_nodes(function.node)):  # types for its own calls
                info = ModelInfo(scope)
                for node in _body_nodes(function.node):
                    calls.setdefault(_key(node), []).append((node, info))
            continue
        walk.enter(scope, rule_opset_of(function), blocked_of(function))
        info = walk.ctx.info
        graph = onnx.GraphProto()
        graph.node.extend(function.node)
        values_before, converted_before = len(walk.new_values), walk.converted
        walk.graph(graph)
        del walk.new_values[values_before:]  # a function body carries no value_info of ours
        _constants_as_nodes(graph)
        del function.node[:]
        function.node.extend(graph.node)
        if walk.converted > converted_before:
            changed.add(key)
        for node in _body_nodes(function.node):
            calls.setdefault(_key(node), []).append((node, info))
    return changed


def _function_blocked(function: onnx.FunctionProto, target: int | None, blocked: str | None) -> str | None:
    if blocked:
        return blocked
    if opset_of(function, DOMAIN) is None:
        return f"function {function.name} does not import domain {DOMAIN!r}"
    own = opset_of(function, "")
    if own is not None and target is not None and own < target:
        body = onnx.ModelProto()
        body.graph.node.extend(function.node)
        blockers = passes.opset_blockers(body, own, target)
        if blockers:
            return (f"function {function.name} imports default-domain opset {own}; the standard ops need "
                    f"{target}, and raising its import would change {', '.join(blockers[:5])}")
    return None


def _local_calls(model: onnx.ModelProto) -> set[tuple[str, str, str]]:
    """Calls of the model's own functions (not the dialect-op definitions): not nodes of an op to convert."""
    return {_key(f) for f in model.functions if not functions.is_definition(f)}


def _set_function_imports(model, changed: set, domain: str, version: int, default: int | None) -> None:
    """Changed functions import `domain`; every function imports the model's default opset (onnxruntime
    runs function bodies at the model's opset) and drops the dialect when no dialect node is left."""
    for function in model.functions:
        if _key(function) in changed and domain and (opset_of(function, domain) or 0) < version:
            set_opset(function, domain, version)
        if default is not None and (opset_of(function, "") is not None or _key(function) in changed):
            set_opset(function, "", default)
        if _key(function) in changed and not any(n.domain == DOMAIN for n in _body_nodes(function.node)):
            kept = [entry for entry in function.opset_import if entry.domain != DOMAIN]
            del function.opset_import[:]
            function.opset_import.extend(kept)


# Directions -----------------------------------------------------------------------------------------------


def _unwrap(model, mode: str, report: Report) -> None:
    if mode != "keep-all":
        count = functions.unwrap(model)
        if count:
            report.notes.append(f"{count} call(s) of dialect-op functions (as_functions) read as plain "
                                f"dialect nodes; their functions removed")


def lower(model: onnx.ModelProto, mode: str, strict, ops=None, as_functions: bool = False, *,
          dialect_free: bool = False) -> Report:
    """Dialect -> standard ONNX, in place on `model` (a copy owned by the caller). as_functions: each
    converted node stays, as a call of a model-local function whose body is its lowering. dialect_free: the
    caller knows the model holds no dialect node (an IR import that emitted none), so no scan looks for one."""
    report = Report("standard", mode, strict)
    _unwrap(model, mode, report)
    if dialect_free or not passes.uses_domain(model, DOMAIN):
        passes.pin_ir(model)
        return report
    dialect_opset = opset_of(model, DOMAIN)
    target, blocked = passes.plan_default_opset(model, TARGET_OPSET)
    if dialect_opset is None:
        blocked = f"the model does not import domain {DOMAIN!r} (add opset_import {DOMAIN} 12)"
    used_before = passes.used_names(model)
    local = _local_calls(model)
    definitions = functions.Definitions(target or TARGET_OPSET) if as_functions else None
    walk = _Walk(model, LOWERING, lambda n: n.domain == DOMAIN and _key(n) not in local, report,
                 rule_opset=dialect_opset, target_opset=target or TARGET_OPSET, blocked=blocked, ops=ops,
                 definitions=definitions)
    walk.graph(model.graph)
    changed = _function_bodies(walk, model, lambda f: opset_of(f, DOMAIN),
                               lambda f: _function_blocked(f, target, blocked), report)
    if mode == "require-standard" and report.kept:
        lines = "\n".join(f"  {e.name} ({e.op}): {e.reason}" for e in report.kept)
        raise ConversionError(f"{len(report.kept)} dialect node(s) cannot be lowered to standard ONNX:\n{lines}")
    if walk.converted:
        if opset_of(model, "") != target:
            if opset_of(model, "") is not None:
                report.notes.append(f"default-domain opset {opset_of(model, '')} -> {target}")
            set_opset(model, "", target)
        if definitions is not None:
            model.functions.extend(definitions.functions)
        _set_function_imports(model, changed, "", 0, target)
        passes.drop_domain_if_unused(model, DOMAIN)
        _finish(model, walk, used_before, report)
    passes.pin_ir(model)
    return report


def raise_(model: onnx.ModelProto, mode: str, strict, ops=None) -> Report:
    """Standard ONNX -> dialect, in place on `model`."""
    if mode == "require-standard":
        raise ConversionError("mode 'require-standard' applies to to='standard' only")
    report = Report("openvino", mode, strict)
    _unwrap(model, mode, report)
    default_opset = opset_of(model, "")
    used_before = passes.used_names(model)
    local = _local_calls(model)

    def interesting(node):
        return node.domain in ("", "ai.onnx") and RAISING.handles(node.domain, node.op_type) and \
            _key(node) not in local

    everywhere = [n for g in all_graphs(model.graph) for n in g.node] + \
        [n for f in model.functions for n in _body_nodes(f.node)]
    if default_opset is None or not any(interesting(n) for n in everywhere):
        passes.pin_ir(model)
        return report
    walk = _Walk(model, RAISING, interesting, report, rule_opset=default_opset, target_opset=default_opset, ops=ops)
    walk.graph(model.graph)
    changed = _function_bodies(walk, model, lambda f: opset_of(f, "") or default_opset, lambda f: None, report)
    if walk.converted:
        current = opset_of(model, DOMAIN) or 0
        if current < DIALECT_OPSET:
            set_opset(model, DOMAIN, DIALECT_OPSET)  # ScatterElementsUpdate-3 == -12 with its defaults
        for domain, version in walk.domains.items():
            if domain != DOMAIN and (opset_of(model, domain) or 0) < version:
                set_opset(model, domain, version)
        _set_function_imports(model, changed, DOMAIN, DIALECT_OPSET, None)
        _finish(model, walk, used_before, report)
    passes.pin_ir(model)
    return report
