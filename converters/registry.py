"""Conversion rules keyed by (domain, op_type, since_version).

As in tf2onnx's handler registry and onnx.reference's load_op, a node is handled by the rule with the
highest since_version <= the opset its model imports for the node's domain. LOWERING holds the rules for
dialect nodes (keyed by OpenVINO op version), RAISING those for standard nodes (keyed by ONNX op version).
A rule is `rule(node, ctx) -> Converted | Keep` (see converters.rules). The rule modules (the package
converters.lowering / converters.raising) are imported on the registry's first lookup, not before: a model
without dialect nodes never loads them (nor the op units they are listed in).
"""
from __future__ import annotations

import importlib
from collections.abc import Callable


def _domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


class Registry:
    def __init__(self, name: str, package: str):
        self.name = name
        self.package = package  # importing it registers every rule
        self._loaded = False
        self._rules: dict[tuple[str, str], dict[int, Callable]] = {}

    def _load(self) -> None:
        if not self._loaded:  # (another thread importing it meanwhile: the import waits for it)
            importlib.import_module(self.package)
            self._loaded = True

    def register(self, domain: str, op_type: str, *since_versions: int):
        """Decorator: the rule handles `op_type` from each of `since_versions` on (until a newer one)."""
        def decorate(rule: Callable) -> Callable:
            versions = self._rules.setdefault((_domain(domain), op_type), {})
            for version in since_versions:
                if version in versions:
                    raise ValueError(f"{self.name}: {domain}/{op_type}-{version} registered twice")
                versions[version] = rule
            return rule
        return decorate

    def handles(self, domain: str, op_type: str) -> bool:
        self._load()
        return (_domain(domain), op_type) in self._rules

    def lookup(self, domain: str, op_type: str, opset: int | None) -> tuple[int, Callable] | None:
        """(since_version, rule) in force at `opset`, or None."""
        self._load()
        versions = self._rules.get((_domain(domain), op_type))
        if not versions or opset is None:
            return None
        usable = [v for v in versions if v <= opset]
        if not usable:
            return None
        since = max(usable)
        return since, versions[since]

    def entries(self) -> list[tuple[str, str, int]]:
        self._load()
        return sorted((d, op, v) for (d, op), versions in self._rules.items() for v in versions)


LOWERING = Registry("lowering", "converters.lowering")
RAISING = Registry("raising", "converters.raising")
