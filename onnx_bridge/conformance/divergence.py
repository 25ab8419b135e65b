"""Looking a disagreement up in THE table of known divergences (onnx_bridge.divergences).

Columns map onto the table's backends: ort-lowered runs onnxruntime's standard ops, reference the ONNX
reference evaluator's, openvino the CPU plugin's, torch torch's. ort-dialect runs the kernels themselves,
so nothing it does is a known divergence. Among entries that apply, the one whose kind best fits the
outcome is chosen (an error is first explained by a "rejects" entry, a wrong value by a "value" entry).
"""
from __future__ import annotations

from .cases import Case

TABLE_BACKEND = {"ort-lowered": "onnxruntime", "reference": "onnx-reference", "openvino": "openvino-cpu",
                 "torch": "torch"}
_KINDS = {"mismatch": ("value", "nondeterministic"), "accepted": ("accepts",),
          "error": ("rejects", "value", "nondeterministic"), "crash": ("crashes", "rejects")}


def find(backend: str, case: Case, cell) -> tuple[str, str] | None:
    """(id, title) of the known divergence explaining `cell`, or None."""
    table_backend = TABLE_BACKEND.get(backend)
    if table_backend is None or case.is_model:
        return None
    from onnx_bridge import divergences
    entries = divergences.matching(table_backend, _table_case(divergences, case))
    if not entries:
        return None
    outcome = cell.status
    if cell.difference and cell.difference.get("kind") == "accepted":
        outcome = "accepted"
    preference = _KINDS.get(outcome, ())
    chosen = min(entries, key=lambda d: preference.index(d.kind) if d.kind in preference else len(preference))
    return chosen.id, chosen.title


def _table_case(divergences, case: Case):
    inputs = {name: value for name, value in case.inputs.items() if value is not None}
    return divergences.Case(case.op, inputs, case.attributes)


def describe(divergence_id: str) -> dict:
    """id, backend, kind, title, reason of a table entry (for reports)."""
    from onnx_bridge import divergences
    entry = divergences.BY_ID[divergence_id]
    return {"id": entry.id, "backend": entry.backend, "kind": entry.kind, "title": entry.title,
            "reason": entry.reason}
