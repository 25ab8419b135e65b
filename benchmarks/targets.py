"""The performance targets (issues 3 and 7), evaluated on one run's medians."""
from __future__ import annotations

from dataclasses import dataclass

SCATTERS = ("ScatterElementsUpdate", "ScatterUpdate")
MEMORY_LIMIT = 3.0  # peak of a scatter, in multiples of its data input


@dataclass(frozen=True)
class Comparison:
    target: str
    subject: tuple          # (case id, column)
    reference: tuple        # (case id, column)
    limit: float
    speedup: bool = False   # True: reference / subject >= limit; False: subject / reference <= limit
    strict: bool = False    # ratio must be < limit (not <=)
    note: str = ""


def comparisons(cases) -> list[Comparison]:
    ids = {c.id for c in cases}
    out = []
    bridges = ("bridge", "bridge_pyop")

    def add(*args, **kwargs):
        comparison = Comparison(*args, **kwargs)
        if comparison.subject[0] in ids and comparison.reference[0] in ids:
            out.append(comparison)

    other_init = "reference op computes use_init_val=1"
    for column in bridges:
        for reduction in ("none", "sum"):
            for init in (1, 0):
                add("SEU sum/none through the bridge <= 1.5x native ScatterElements",
                    (f"seu-{reduction}-init{init}", column), (f"seu-{reduction}-init1", "native"), 1.5,
                    note=other_init if init == 0 and reduction == "sum" else "")
        for init in (1, 0):
            add("SEU mean through the bridge <= 2x native ScatterElements add",
                (f"seu-mean-init{init}", column), ("seu-sum-init1", "native"), 2.0)
    for case in cases:
        if case.op == "ScatterElementsUpdate":
            reduction, init = case.attributes["reduction"], case.attributes["use_init_val"]
            if reduction == "mean":
                add("mean lowering <= 2.5x native ScatterElements add", (case.id, "lowered"),
                    ("seu-sum-init1", "native"), 2.5)
            else:
                add("lowered graph <= 1.3x the single native op", (case.id, "lowered"),
                    (f"seu-{reduction}-init1", "native"), 1.3,
                    note=other_init if init == 0 and reduction != "none" else "")
        else:
            add("lowered graph <= 1.3x the single native op", (case.id, "lowered"), (case.id, "native"), 1.3)
    for case in cases:
        if case.op == "Unique" and case.id != "unique-voxels":
            for column in bridges:
                add("Unique flat faster than onnxruntime's Unique", (case.id, column), (case.id, "native"),
                    1.0, strict=True)
                add("Unique flat <= 1.2x numpy.unique (index, inverse, counts)", (case.id, column),
                    (case.id, "numpy"), 1.2)
        if case.id == "unique-voxels":
            for column in bridges:
                add("Unique with axis <= 1.5x onnxruntime's Unique", (case.id, column), (case.id, "native"),
                    1.5)
        if case.op == "ReduceL2":
            for column in bridges:
                add("ReduceL2 through the bridge <= 1.2x native", (case.id, column), (case.id, "native"), 1.2)
    for column in bridges:
        for reduction in ("sum", "none"):
            case_id = f"seu-{reduction}-init1"
            add("SEU through the bridge >= 10x faster than stock marshaling", (case_id, column),
                (case_id, "stock"), 10.0, speedup=True)
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
        if case.op not in SCATTERS:
            continue
        result = results[case.id]
        for column in ("bridge", "bridge_pyop"):
            cell = result.get("memory", {}).get(column, {})
            row = {"target": f"peak memory of a scatter <= {MEMORY_LIMIT:g}x its data",
                   "subject": [case.id, column], "reference": None, "limit": MEMORY_LIMIT, "speedup": False,
                   "note": ""}
            if "peak" in cell:
                ratio = cell["peak"] / result["data_bytes"]
                row.update(ratio=ratio, met=ratio <= MEMORY_LIMIT)
                inputs = result["input_bytes"] / result["data_bytes"]
                if inputs > 2:
                    row["note"] = (f"its inputs are {inputs:.1f}x data; the peak is "
                                   f"{cell['peak'] / result['input_bytes']:.1f}x all inputs")
            else:
                row.update(ratio=None, met=None, why_unmeasured=cell.get("error", "not measured"))
            rows.append(row)
    return rows
