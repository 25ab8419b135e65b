"""The one table of known divergences between the contract (docs/dialect.md) and other runtimes.

Every place that compares another runtime with the contract (differential tests, conformance) asks
`matching(backend, case)` which entries apply to a case, asserts the contract's value there and reports the
entries, instead of loosening a tolerance or skipping. Each entry has an id, the backend, the ops, a kind,
a short title, the reason with the measurement, a predicate `applies(case)` and an example case on which it
applies. The rows live in the units (`custom_ops.unit.Divergence`, `DialectUnit.divergences`, beside the op
they concern); this module is the op-agnostic table built from them. A row several units declare (same id)
is one entry naming every op that declares it.

Kinds:
- "value": the runtime returns a different value than the contract.
- "rejects": the runtime raises on an input the contract accepts.
- "accepts": the runtime returns a value where the contract raises.
- "nondeterministic": the runtime's value changes from run to run (or with what ran before).
- "crashes": the runtime kills the process or corrupts its heap (onnx_bridge.backends.openvino refuses
  these inputs).

A result that depends on the machine (e.g. OpenVINO CPU kernels that differ with the CPU's instruction set)
is an entry with `outcomes`: every measured outcome, where it was measured, and a model of its outputs.
Such an entry explains a value only if it is exactly one of those outcomes (the contract's value is always
a match), so a verdict does not depend on the CPU and an unexplained difference still fails.

Backends: "openvino-cpu" (OpenVINO 2026.4 CPU plugin, native ops, INFERENCE_PRECISION_HINT=f32),
"onnxruntime" (onnxruntime 1.31 standard ops: what a lowered model runs), "onnx-reference"
(onnx.reference.ReferenceEvaluator standard ops) and "torch" (torch 2.13: scatter, scatter_reduce,
index_copy, unique, linalg.vector_norm).

OpenVINO IR ops that import as standard ONNX are not dialect ops: where OpenVINO departs from their
specification, onnx_bridge.compare_explain.DEVIATIONS declares it; docs/divergences.md lists both tables.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from custom_ops import resolve, units
from custom_ops.unit import present
from custom_ops.element_types import BFLOAT16, is_float
from onnx_bridge.config import DIALECT_OPSET
from onnx_bridge.errors import OpError

BACKENDS = ("openvino-cpu", "onnxruntime", "onnx-reference", "torch")
KINDS = ("value", "rejects", "accepts", "nondeterministic", "crashes")


# ------------------------------------------------------------------------------------------------------
# Cases


class Case:
    """One call of a dialect op: op type, inputs by port name (numpy arrays), attributes (defaults filled)."""

    def __init__(self, op: str, inputs: dict, attributes: dict | None = None):
        self.op = op
        self.spec = resolve(op, DIALECT_OPSET)
        ports = [port.name for port in self.spec.inputs]
        unknown = set(inputs) - set(ports)
        if unknown:
            raise OpError(op, "inputs", "unknown input names", value=sorted(unknown), allowed=ports)
        self.inputs = {name: np.asarray(inputs[name]) for name in ports if inputs.get(name) is not None}
        given = dict(attributes or {})
        self.attributes = {a.name: given.pop(a.name, a.default) for a in self.spec.attributes}
        self.attributes.update(given)  # unknown attributes are kept (and rejected by the contract)

    @classmethod
    def of(cls, op: str, **values) -> "Case":
        """Case.of("ReduceL2", data=x, axes=[1], keep_dims=1): input ports and attributes by name."""
        ports = {port.name for port in resolve(op, DIALECT_OPSET).inputs}
        return cls(op, {k: v for k, v in values.items() if k in ports},
                   {k: v for k, v in values.items() if k not in ports})

    @property
    def args(self) -> tuple:
        """Inputs in port order, as OpSpec.run and onnx_bridge.backends.openvino.run take them."""
        return tuple(self.inputs.values())

    def __getitem__(self, name):
        """An attribute's value (defaults filled), or an input array by port name."""
        return self.attributes[name] if name in self.attributes else self.inputs[name]

    @functools.cached_property
    def contract(self):
        """The contract's outputs (tuple of arrays) or the OpError it raises."""
        try:
            return self.spec.run(self.args, self.attributes)
        except OpError as error:
            return error

    @property
    def valid(self) -> bool:
        return not isinstance(self.contract, OpError)

    def __repr__(self) -> str:
        parts = [f"{k}={_short(v)}" for k, v in self.inputs.items()]
        parts += [f"{k}={v!r}" for k, v in self.attributes.items()]
        return f"Case({self.op}: {', '.join(parts)})"


def _short(array: np.ndarray) -> str:
    text = np.array2string(array, threshold=12, separator=",").replace("\n", "")
    return f"{text}:{'bfloat16' if array.dtype == BFLOAT16 else array.dtype}"


# ------------------------------------------------------------------------------------------------------
# The table


@dataclass(frozen=True)
class Outcome:
    """One measured result of a runtime whose result depends on the machine (e.g. the CPU's instruction set).

    where: on what it was measured (CPU, instruction set, date, how); outputs(case): the runtime's outputs
    there, modelled exactly from the measurement (the contract's value when the runtime agrees there)."""
    where: str
    outputs: Callable[[Case], tuple]


@dataclass(frozen=True)
class Divergence:
    id: str
    backend: str
    ops: tuple[str, ...]
    kind: str
    title: str
    reason: str
    predicate: Callable[[Case], bool]
    example: Callable[[], Case]
    #: Non-empty for a result that depends on the machine: every measured outcome, each accepted. Then the
    #: entry explains a value only if it is exactly one of them (anything else stays unexplained).
    outcomes: tuple[Outcome, ...] = ()

    def applies(self, case: Case) -> bool:
        """Whether this divergence can show on `case`: the contract must accept it, except for "accepts"
        (the contract raises) and "crashes" (either)."""
        if case.op not in self.ops:
            return False
        if self.kind != "crashes" and case.valid == (self.kind == "accepts"):
            return False
        return bool(self.predicate(case))

    def outcome_of(self, case: Case, outputs) -> Outcome | None:
        """The declared outcome `outputs` are (bit for bit, NaN equal to NaN), or None."""
        got = tuple(np.asarray(x) for x in outputs)
        for outcome in self.outcomes:
            want = outcome.outputs(case)
            if len(got) == len(want) and all(_identical(w, g) for w, g in zip(want, got)):
                return outcome
        return None

    def explains(self, case: Case, outputs) -> bool:
        """Whether the entry explains a value of `outputs`: any value, or one of the declared outcomes."""
        return not self.outcomes or self.outcome_of(case, outputs) is not None


def _identical(want: np.ndarray, got: np.ndarray) -> bool:
    """Same dtype, shape and bits (any NaN equal to any NaN; -0.0 and 0.0 differ)."""
    want, got = np.asarray(want), np.asarray(got)
    if want.dtype != got.dtype or want.shape != got.shape:
        return False
    if not is_float(want.dtype):
        return bool(np.array_equal(want, got))
    both_nan = np.isnan(want.astype(np.float64)) & np.isnan(got.astype(np.float64))
    bits = np.uint16 if want.dtype.itemsize == 2 else want.dtype.str.replace("f", "u")
    return bool(np.all(both_nan | (want.view(bits) == got.view(bits))))


def _entry(op: str, row) -> Divergence:
    """A unit's row (custom_ops.unit.Divergence) as an entry of this table."""
    ports = [port.name for port in resolve(op, DIALECT_OPSET).inputs]
    example = {port: value for port, value in zip(ports, row.example.inputs) if value is not None}
    return Divergence(
        row.id, row.backend, (op,), row.kind, row.title, row.reason,
        lambda case: row.predicate(case.inputs, case.attributes),
        lambda: Case(op, example, row.example.attributes),
        tuple(Outcome(o.where, lambda case, o=o: o.outputs(case.inputs, case.attributes)) for o in row.outcomes))


def _merged(entries: list[Divergence]) -> Divergence:
    """One entry for a row several units declare: the same text, every op, each op's own predicate and
    outcome models; the first unit's example."""
    first = entries[0]
    for other in entries[1:]:
        if (other.backend, other.kind, other.title, other.reason, len(other.outcomes)) != \
                (first.backend, first.kind, first.title, first.reason, len(first.outcomes)):
            raise ValueError(f"divergence {first.id!r}: {other.ops[0]} declares it with another text")
    by_op = {entry.ops[0]: entry for entry in entries}
    outcomes = tuple(
        Outcome(outcome.where, lambda case, n=n: by_op[case.op].outcomes[n].outputs(case))
        for n, outcome in enumerate(first.outcomes))
    return Divergence(first.id, first.backend, tuple(by_op), first.kind, first.title, first.reason,
                      lambda case: by_op[case.op].predicate(case), first.example, outcomes)


def _from_units() -> tuple[Divergence, ...]:
    """Every unit's rows, in unit order; a row declared by several units once, where it first appears."""
    by_id: dict[str, list[Divergence]] = {}
    for unit in units():
        if present(unit.divergences):
            for row in unit.divergences:
                by_id.setdefault(row.id, []).append(_entry(unit.op_type, row))
    return tuple(_merged(entries) for entries in by_id.values())


DIVERGENCES: tuple[Divergence, ...] = _from_units()
BY_ID = {d.id: d for d in DIVERGENCES}


def matching(backend: str, case: Case) -> list[Divergence]:
    """The divergences of `backend` that apply to `case`."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    return [d for d in DIVERGENCES if d.backend == backend and d.applies(case)]


def to_markdown() -> str:
    """The table as Markdown (docs/divergences.md is generated from it)."""
    lines = ["# Known divergences from the contract", "",
             "Generated from the units' rows (`divergences` of each unit, custom_ops/ops/<family>/) by "
             "`onnx_bridge/divergences.py` (`python -m onnx_bridge.divergences > docs/divergences.md`); do not "
             "edit by hand.", "",
             "Where another runtime differs from the contract (`docs/dialect.md`), the tests assert the contract's "
             "value and report the entry that applies. Kinds: " + ", ".join(f"`{k}`" for k in KINDS) + ".", ""]
    titles = {"openvino-cpu": "OpenVINO CPU plugin (native ops)",
              "onnxruntime": "onnxruntime (standard ONNX ops, as in lowered models)",
              "onnx-reference": "ONNX reference evaluator (standard ONNX ops)", "torch": "torch"}
    for backend in BACKENDS:
        lines += [f"## {titles[backend]}", "", "| id | op | kind | divergence | reason |",
                  "|---|---|---|---|---|"]
        for d in (d for d in DIVERGENCES if d.backend == backend):
            ops = ", ".join(d.ops)
            reason = d.reason
            if d.outcomes:
                reason += (" **Depends on the machine (or on what ran before); accepted outcomes, nothing else:** "
                           + "; ".join(f"({n}) {o.where}" for n, o in enumerate(d.outcomes, 1)) + ".")
            lines.append(f"| `{d.id}` | {ops} | {d.kind} | {d.title} | {reason.replace('|', '/')} |")
        lines.append("")
    from .compare_explain import DEVIATIONS  # OpenVINO IR ops imported as standard ONNX
    lines += ["## OpenVINO IR ops imported as standard ONNX", "",
              "OpenVINO (CPU plugin, and its reference where marked) against the op's specification, which the "
              "import follows; declared in `onnx_bridge/compare_explain.py` `DEVIATIONS` (`onnx-bridge compare` "
              "names them).", "", "| id | op | divergence | OpenVINO's reference too | the converted model |",
              "|---|---|---|---|---|"]
    follows = {"converted": "follows the specification", "unknown": "specification leaves it open"}
    for d in DEVIATIONS:
        lines.append(f"| `{d.id}` | {d.op} | {d.title.replace('|', '/')} | {'yes' if d.reference_too else 'no'} "
                     f"| {follows.get(d.follows_spec, d.follows_spec)} |")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(to_markdown(), end="")
