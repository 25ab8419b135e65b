"""The performance targets (docs/performance.md), evaluated on one run's medians: the rows of the units'
benchmark pieces (custom_ops.unit.Benchmark.targets, memory_limit)."""
from __future__ import annotations

from dataclasses import dataclass

import custom_ops
from custom_ops.unit import present


@dataclass(frozen=True)
class Comparison:
    target: str
    subject: tuple          # (case id, column)
    reference: tuple        # (case id, column)
    limit: float
    speedup: bool = False   # True: reference / subject >= limit; False: subject / reference <= limit
    strict: bool = False    # ratio must be < limit (not <=)
    note: str = ""


def _benchmark(op: str):
    piece = custom_ops.unit_of(op).benchmark
    return piece if present(piece) else None


def comparisons(cases) -> list[Comparison]:
    """Every unit's target rows over its cases in `cases`, where both sides are among them."""
    ids = {c.id for c in cases}
    by_op: dict[str, list] = {}
    for case in cases:
        by_op.setdefault(case.op, []).append(case)
    out = []
    for op, own in by_op.items():
        piece = _benchmark(op)
        if piece is None or piece.targets is None:
            continue
        for target, subject, reference, limit, options in piece.targets(own):
            comparison = Comparison(target, tuple(subject), tuple(reference), limit, **options)
            if comparison.subject[0] in ids and comparison.reference[0] in ids:
                out.append(comparison)
    return out


def evaluate(cases, results: dict) -> list[dict]:
    """One row per comparison: measured ratio, limit, met (None: a side was not measured)."""
    rows = []
    for c in comparisons(cases):
        cells = [results[case_id]["cells"].get(column, {}) for case_id, column in (c.subject, c.reference)]
        row = {"target": c.target, "subject": list(c.subject), "reference": list(c.reference),
               "limit": c.limit, "speedup": c.speedup, "note": c.note}
        missing = [cell.get("skipped") or cell.get("error") for cell in cells if "median" not in cell]
        if missing:
            row.update(ratio=None, met=None, why_unmeasured="; ".join(str(m) for m in missing))
        else:
            subject, reference = cells[0]["median"], cells[1]["median"]
            ratio = reference / subject if c.speedup else subject / reference
            met = ratio >= c.limit if c.speedup else (ratio < c.limit if c.strict else ratio <= c.limit)
            row.update(ratio=ratio, met=met)
        rows.append(row)
    return rows


def memory_rows(cases, results: dict) -> list[dict]:
    rows = []
    for case in cases:
        piece = _benchmark(case.op)
        limit = piece.memory_limit if piece is not None else None
        if limit is None:
            continue
        result = results[case.id]
        for column in ("bridge", "bridge_pyop"):
            cell = result.get("memory", {}).get(column, {})
            row = {"target": f"peak memory of {case.op} <= {limit:g}x its data",
                   "subject": [case.id, column], "reference": None, "limit": limit, "speedup": False,
                   "note": ""}
            if "peak" in cell:
                ratio = cell["peak"] / result["data_bytes"]
                row.update(ratio=ratio, met=ratio <= limit)
                inputs = result["input_bytes"] / result["data_bytes"]
                if inputs > 2:
                    row["note"] = (f"its inputs are {inputs:.1f}x data; the peak is "
                                   f"{cell['peak'] / result['input_bytes']:.1f}x all inputs")
            else:
                row.update(ratio=None, met=None, why_unmeasured=cell.get("error", "not measured"))
            rows.append(row)
    return rows
