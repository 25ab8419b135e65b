"""OpSpec: what one version of one dialect op is (ports, attributes, types, kernel), and the registry.

Versions follow OpenVINO opsets: a model importing domain opset N runs, for each op, the spec with the
highest since_version <= N (as onnx.reference's load_op and OpenVINO's VersionRange do).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .config import DOMAIN
from .errors import OpError

from . import _checks as check


@dataclass(frozen=True)
class Port:
    name: str
    type_constraint: str
    optional: bool = False


@dataclass(frozen=True)
class Attribute:
    name: str
    kind: str  # "int" or "string"
    default: object
    allowed: tuple = ()


@dataclass(frozen=True)
class OpSpec:
    op_type: str
    since_version: int
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    attributes: tuple[Attribute, ...]
    type_constraints: dict = field(hash=False)
    kernel: Callable = field(hash=False, compare=False)
    doc: str = ""
    domain: str = DOMAIN

    def attribute_values(self, given: dict | None = None) -> dict:
        """Every attribute with defaults filled in; unknown names and disallowed values raise OpError."""
        given = dict(given or {})
        values = {}
        for attribute in self.attributes:
            value = given.pop(attribute.name, attribute.default)
            if isinstance(value, bytes):
                value = value.decode()
            if attribute.kind == "int":
                value = check.flag(self.op_type, attribute.name, value) if attribute.allowed == (0, 1) \
                    else value
            elif attribute.allowed:
                value = check.choice(self.op_type, attribute.name, value, attribute.allowed)
            values[attribute.name] = value
        if given:
            raise OpError(self.op_type, "attributes", f"unknown for version {self.since_version}",
                          value=sorted(given), allowed=[a.name for a in self.attributes] or "none")
        return values

    def run(self, inputs, attributes: dict | None = None, node: str | None = None) -> tuple:
        """Run the kernel; any OpError is stamped with the node name."""
        try:
            return self.kernel(*inputs, **self.attribute_values(attributes))
        except OpError as error:
            raise error.with_node(node)


_REGISTRY: dict[str, dict[int, OpSpec]] = {}


def register(spec: OpSpec) -> OpSpec:
    _REGISTRY.setdefault(spec.op_type, {})[spec.since_version] = spec
    return spec


def op_types() -> list[str]:
    return sorted(_REGISTRY)


def all_specs() -> list[OpSpec]:
    return [spec for versions in _REGISTRY.values() for _, spec in sorted(versions.items())]


def resolve(op_type: str, opset: int) -> OpSpec:
    """The spec in force for `op_type` under domain opset `opset`."""
    versions = _REGISTRY.get(op_type)
    if not versions:
        raise OpError(op_type, "op_type", f"not an op of domain {DOMAIN!r}", value=op_type,
                      allowed=", ".join(op_types()))
    usable = [v for v in versions if v <= opset]
    if not usable:
        raise OpError(op_type, "domain opset", f"{op_type} needs opset >= {min(versions)}", value=opset)
    return versions[max(usable)]
