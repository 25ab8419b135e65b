"""Walks a model (subgraphs included), applies the registered rules node by node and runs the passes."""
from __future__ import annotations

import onnx

from converters.model_io import opset_of, set_opset
from custom_ops.config import DIALECT_OPSET, DOMAIN, TARGET_OPSET
from custom_ops.errors import ConversionError

from . import passes
from .graph import ModelInfo, NameScope, all_graphs, subgraphs
from .registry import LOWERING, RAISING, Registry
from .report import NodeReport, Report
from .rules import Converted, Keep, RuleContext

MODES = ("default", "keep-all", "require-standard")


class _Walk:
    def __init__(self, model, registry: Registry, domain_of_interest, rule_opset: int | None,
                 report: Report, mode: str, strict, blocked: str | None, target_opset: int,
                 ops=None):
        self.model, self.registry, self.interesting = model, registry, domain_of_interest
        self.rule_opset, self.report, self.mode, self.strict = rule_opset, report, mode, strict
        self.blocked, self.target_opset = blocked, target_opset
        self.ops = ops if ops is None or callable(ops) else frozenset(ops)
        self._ctx = None
        self.count = 0
        self.converted = 0
        self.domains: dict[str, int] = {}
        self.new_values: list[tuple[onnx.GraphProto, dict[str, int]]] = []
        self.kept_action = "kept" if report.direction == "standard" else "unchanged"

    @property
    def ctx(self) -> RuleContext:
        if self._ctx is None:  # shape inference only when a rule actually runs
            info = ModelInfo(self.model)
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


def _finish(model, walk: _Walk, used_before: set[str], report: Report) -> None:
    passes.remove_dead_constants(model, used_before, report.notes)
    passes.add_value_info(model, walk.new_values)
    passes.pin_runnable_opset(model, report.notes)


def lower(model: onnx.ModelProto, mode: str, strict, ops=None) -> Report:
    """Dialect -> standard ONNX, in place on `model` (a copy owned by the caller)."""
    report = Report("standard", mode, strict)
    if not passes.uses_domain(model, DOMAIN):
        passes.pin_ir(model)
        return report
    dialect_opset = opset_of(model, DOMAIN)
    target, blocked = passes.plan_default_opset(model, TARGET_OPSET)
    if dialect_opset is None:
        blocked = f"the model does not import domain {DOMAIN!r} (add opset_import {DOMAIN} 12)"
    used_before = passes.used_names(model)
    walk = _Walk(model, LOWERING, lambda n: n.domain == DOMAIN, dialect_opset, report, mode, strict,
                 blocked, target or TARGET_OPSET, ops)
    walk.graph(model.graph)
    if mode == "require-standard" and report.kept:
        lines = "\n".join(f"  {e.name} ({e.op}): {e.reason}" for e in report.kept)
        raise ConversionError(f"{len(report.kept)} dialect node(s) cannot be lowered to standard ONNX:\n{lines}")
    if walk.converted:
        if opset_of(model, "") != target:
            if opset_of(model, "") is not None:
                report.notes.append(f"default-domain opset {opset_of(model, '')} -> {target}")
            set_opset(model, "", target)
        passes.drop_domain_if_unused(model, DOMAIN)
        _finish(model, walk, used_before, report)
    passes.pin_ir(model)
    return report


def raise_(model: onnx.ModelProto, mode: str, strict, ops=None) -> Report:
    """Standard ONNX -> dialect, in place on `model`."""
    if mode == "require-standard":
        raise ConversionError("mode 'require-standard' applies to to='standard' only")
    report = Report("openvino", mode, strict)
    default_opset = opset_of(model, "")
    used_before = passes.used_names(model)

    def interesting(node):
        return node.domain in ("", "ai.onnx") and RAISING.handles(node.domain, node.op_type)

    if default_opset is None or not any(interesting(n) for g in all_graphs(model.graph) for n in g.node):
        passes.pin_ir(model)
        return report
    walk = _Walk(model, RAISING, interesting, default_opset, report, mode, strict, None, default_opset, ops)
    walk.graph(model.graph)
    if walk.converted:
        current = opset_of(model, DOMAIN) or 0
        if current < DIALECT_OPSET:
            set_opset(model, DOMAIN, DIALECT_OPSET)  # ScatterElementsUpdate-3 == -12 with its defaults
        for domain, version in walk.domains.items():
            if domain != DOMAIN and (opset_of(model, domain) or 0) < version:
                set_opset(model, domain, version)
        _finish(model, walk, used_before, report)
    passes.pin_ir(model)
    return report


