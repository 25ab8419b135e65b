"""OpSpec: what one version of one dialect op is (ports, attributes, types, kernel), and the registry.

Versions follow OpenVINO opsets: a model importing domain opset N runs, for each op, the spec with the
highest since_version <= N (as onnx.reference's load_op and OpenVINO's VersionRange do).
"""
from __future__ import annotations

import operator
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


#: Attribute kinds: ONNX INT, FLOAT, STRING, INTS, FLOATS.
ATTRIBUTE_KINDS = ("int", "float", "string", "ints", "floats")
#: The default of an attribute a node must give.
REQUIRED = None


@dataclass(frozen=True)
class Attribute:
    name: str
    kind: str  # one of ATTRIBUTE_KINDS
    default: object  # REQUIRED (None): the node must give it
    allowed: tuple = ()  # int (0, 1): a flag; strings: the values allowed
    short: str = ""  # short name in generated labels (function overload names); default: the name

    def value(self, op: str, value):
        """`value` checked and in its canonical Python form (int, float, str, list)."""
        if isinstance(value, bytes):
            value = value.decode()
        subject = f"attribute '{self.name}'"
        try:
            if self.kind == "int":
                if self.allowed == (0, 1):
                    return check.flag(op, self.name, value)
                return _integer(value)
            if self.kind == "float":
                return float(value)
            if self.kind in ("ints", "floats"):
                items = list(value)
                return [_integer(v) for v in items] if self.kind == "ints" else [float(v) for v in items]
        except OpError:
            raise
        except (TypeError, ValueError, OverflowError):
            raise OpError(op, subject, f"must be of kind {self.kind}", value=value) from None
        if self.allowed:
            return check.choice(op, self.name, value, self.allowed)
        return str(value)


def _integer(value) -> int:
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(value)
        return int(value)
    return operator.index(value)


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
    #: ONNX type and shape inference, infer(ctx) (onnx.defs InferenceContext); None: custom_ops._schemas' own
    infer: Callable | None = field(default=None, hash=False, compare=False)

    def attribute_values(self, given: dict | None = None) -> dict:
        """Every attribute with defaults filled in; unknown names and disallowed values raise OpError."""
        given = dict(given or {})
        values = {}
        for attribute in self.attributes:
            value = given.pop(attribute.name, attribute.default)
            if value is REQUIRED:
                raise OpError(self.op_type, f"attribute '{attribute.name}'", "is required but missing")
            values[attribute.name] = attribute.value(self.op_type, value)
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
_UNITS_LOADED = False


def _load_units() -> None:
    """Import and register every unit (custom_ops.ops.load) before the registry is first read."""
    global _UNITS_LOADED
    if not _UNITS_LOADED:
        from .ops import load
        load()
        _UNITS_LOADED = True


def register(spec: OpSpec) -> OpSpec:
    _REGISTRY.setdefault(spec.op_type, {})[spec.since_version] = spec
    return spec


def unregister_all() -> None:
    """Forget every spec (custom_ops.ops.load undoing a failed load)."""
    _REGISTRY.clear()


def op_types() -> list[str]:
    _load_units()
    return sorted(_REGISTRY)


def all_specs() -> list[OpSpec]:
    _load_units()
    return [spec for versions in _REGISTRY.values() for _, spec in sorted(versions.items())]


def resolve(op_type: str, opset: int) -> OpSpec:
    """The spec in force for `op_type` under domain opset `opset`."""
    _load_units()
    versions = _REGISTRY.get(op_type)
    if not versions:
        raise OpError(op_type, "op_type", f"not an op of domain {DOMAIN!r}", value=op_type,
                      allowed=", ".join(op_types()))
    usable = [v for v in versions if v <= opset]
    if not usable:
        raise OpError(op_type, "domain opset", f"{op_type} needs opset >= {min(versions)}", value=opset)
    return versions[max(usable)]
