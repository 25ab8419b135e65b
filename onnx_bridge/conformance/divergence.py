"""Looking a disagreement up in THE table of known divergences (onnx_bridge.divergences).

Columns map onto the table's backends: ort-lowered runs onnxruntime's standard ops, reference the ONNX
reference evaluator's, openvino the CPU plugin's, torch torch's. ort-dialect runs the kernels themselves,
so nothing it does is a known divergence.

An entry explains a cell only if its kind fits what happened: a different value is explained by a
"value" or "nondeterministic" entry, a result where the contract rejects the input by "accepts", an error
by "rejects" (or "crashes", "nondeterministic"), or by a "value" entry whose reason quotes the runtime's
message (e.g. 'Cannot get dims for non static shape'), a crash by "crashes". Among fitting entries the
first in the table is chosen; others that also apply are named after it. An entry whose result depends on
the machine (its `outcomes`, e.g. one per CPU instruction set) explains a value only if the outputs are
exactly one of its measured outcomes; the cell names which.
"""
from __future__ import annotations

import re

from .cases import Case

TABLE_BACKEND = {"ort-lowered": "onnxruntime", "reference": "onnx-reference", "openvino": "openvino-cpu",
                 "torch": "torch"}
_KINDS = {"mismatch": ("value", "nondeterministic"), "accepted": ("accepts",),
          "error": ("rejects", "crashes", "nondeterministic"), "crash": ("crashes",)}


def find(backend: str, case: Case, cell, outputs=None) -> tuple[str, str] | None:
    """(id, title) of the known divergence explaining `cell` (`outputs`: what the backend returned, if it
    returned), or None."""
    table_backend = TABLE_BACKEND.get(backend)
    if table_backend is None or case.is_model:
        return None
    from onnx_bridge import divergences
    table_case = _table_case(divergences, case)
    entries = divergences.matching(table_backend, table_case)
    outcome = cell.status
    if cell.difference and cell.difference.get("kind") == "accepted":
        outcome = "accepted"
    fitting = [d for d in entries if (d.kind in _KINDS.get(outcome, ()) or
                                      (outcome == "error" and _quotes(d.reason, cell.detail)))
               and (not d.outcomes or (outputs is not None and d.explains(table_case, outputs)))]
    if not fitting:
        return None
    chosen, others = fitting[0], [d.id for d in fitting[1:]]
    title = chosen.title
    if chosen.outcomes:
        title += f" (measured outcome: {chosen.outcome_of(table_case, outputs).where})"
    return chosen.id, title + (f" (also applies: {', '.join(others)})" if others else "")


def _quotes(reason: str, message: str) -> bool:
    """Whether the runtime's message contains a message the entry's reason quotes."""
    return any(len(quoted) >= 12 and quoted in message for quoted in _QUOTED.findall(reason))


#: 'a quoted message': quotes not inside a word, so apostrophes ("OpenVINO's", "aren't") are no quotes.
_QUOTED = re.compile(r"(?<!\w)'(.+?)'(?!\w)")


def _table_case(divergences, case: Case):
    inputs = {name: value for name, value in case.inputs.items() if value is not None}
    return divergences.Case(case.op, inputs, case.attributes)


def describe(divergence_id: str) -> dict:
    """id, backend, kind, title, reason of a table entry (for reports)."""
    from onnx_bridge import divergences
    entry = divergences.BY_ID[divergence_id]
    described = {"id": entry.id, "backend": entry.backend, "kind": entry.kind, "title": entry.title,
                 "reason": entry.reason}
    if entry.outcomes:  # depends on the machine: every measured outcome is accepted
        described["outcomes"] = [outcome.where for outcome in entry.outcomes]
    return described
