"""Reports of a run: the terminal summary, Markdown, HTML and JSON.

All four say the same things in the same order: the verdict, the op x backend matrix, every unexpected
disagreement in full, the known divergences grouped by table entry (reason and an example), unsupported
configurations grouped by reason, skipped backends, and how to rerun a case.
"""
from __future__ import annotations

import html
import json
import math
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from custom_ops import units
from custom_ops.element_types import type_name

from . import divergence
from .cases import Case
from .compare import scalar_text
from .results import CRASH, ERROR, KNOWN, MATCH, MEANING, MISMATCH, STATUSES, UNSUPPORTED, Results

SYMBOLS = {MATCH: "✓", KNOWN: "~", UNSUPPORTED: "–", MISMATCH: "✗", ERROR: "!", CRASH: "☠"}
ASCII_SYMBOLS = {MATCH: "ok", KNOWN: "~", UNSUPPORTED: "-", MISMATCH: "X", ERROR: "!", CRASH: "#"}
#: Matrix rows: the dialect ops by family (custom_ops.units()), then model groups.
OP_ORDER = tuple(u.op_type for u in sorted(units(), key=lambda u: (u.family, u.op_type)))


# ------------------------------------------------------------------------------------------------------
# Shared views of the results


def verdict(results: Results) -> str:
    failures = results.failures()
    cells = len(results.cells)
    if failures:
        kinds = Counter(cell.status for _, cell in failures)
        plural = {MISMATCH: "mismatches", ERROR: "errors", CRASH: "crashes"}
        parts = ", ".join(f"{n} {plural[k] if n > 1 else k}" for k, n in kinds.items())
        return f"FAIL: {len(failures)} unexpected cell{'s' if len(failures) > 1 else ''} ({parts})"
    known = results.totals()[KNOWN]
    return (f"PASS: {cells} cells; every disagreement ({known}) is a declared known divergence"
            if known else f"PASS: {cells} cells, no disagreement")


def ops_of(results: Results) -> list[str]:
    """Matrix rows: the dialect ops in OP_ORDER, then model groups in corpus order."""
    rows = list(dict.fromkeys(case.row for case in results.cases))
    return [op for op in OP_ORDER if op in rows] + [row for row in rows if row not in OP_ORDER]


def corpus_line(results: Results) -> str:
    sources = Counter(case.source for case in results.cases)
    return ", ".join(f"{n} {s}" for s, n in sources.items())


def cell_text(counter: Counter, symbols=SYMBOLS) -> str:
    return " ".join(f"{symbols[s]}{counter[s]}" if symbols[s] != "ok" else f"{counter[s]} ok"
                    for s in STATUSES if counter.get(s))


def known_groups(results: Results) -> list[dict]:
    """One entry per divergence id: backends, count, title, reason, an example and the case ids."""
    groups: dict[str, dict] = {}
    for case, cell in results.by_status(KNOWN):
        group = groups.setdefault(cell.divergence, {"id": cell.divergence, "cells": 0, "backends": Counter(),
                                                    "cases": [], "example": (case, cell)})
        group["cells"] += 1
        group["backends"][cell.backend] += 1
        group["cases"].append(case.id)
    out = []
    for group in sorted(groups.values(), key=lambda g: (-g["cells"], g["id"])):
        try:
            group.update(divergence.describe(group["id"]))
        except (KeyError, ImportError):
            group.update(title=group["example"][1].reason, reason="")
        out.append(group)
    return out


_TYPE_WORD = r"\b(?:bool|u?int(?:8|16|32|64)|float(?:16|32|64)|bfloat16)\b"


def unsupported_groups(results: Results) -> list[dict]:
    """Unsupported cells grouped by reason, element types and quoted names merged ("not implemented for
    'UInt16', 'UInt32'"; "int32, uint64: the exact sum ..."), index lists elided; backends listed."""
    groups: dict[str, dict] = {}
    for case, cell in results.by_status(UNSUPPORTED):
        reason = re.sub(r"\[[^\]]*\]", "[...]", cell.reason)
        key = re.sub(_TYPE_WORD, "<type>", re.sub(r"'[^']*'", "'*'", reason))
        group = groups.setdefault(key, {"backends": Counter(), "cells": 0, "types": set(), "quoted": set(),
                                        "pattern": key, "cases": []})
        group["cells"] += 1
        group["backends"][cell.backend] += 1
        group["quoted"].update(re.findall(r"'([^']*)'", reason))
        group["types"].update(re.findall(_TYPE_WORD, re.sub(r"'[^']*'", "", reason)))
        if case.id not in group["cases"]:
            group["cases"].append(case.id)
    out = []
    for group in sorted(groups.values(), key=lambda g: (-g["cells"], g["pattern"])):
        text = group["pattern"].replace("'*'", ", ".join(sorted(group["quoted"])), 1).replace("'*'", "")
        group["reason"] = text.replace("<type>", "/".join(sorted(group["types"])), 1).replace("<type>", "")
        group["backend"] = ", ".join(group["backends"])
        out.append(group)
    return out


def failure_groups(failures: list) -> list[list]:
    """Unexpected cells grouped by backend, status, row and message with numbers and lists elided (one
    runtime bug usually shows on many cases); largest group first."""
    groups: dict[tuple, list] = {}
    for case, cell in failures:
        text = re.sub(r"\[[^\]]*\]", "[]", cell.detail)
        text = re.sub(r"-?\b\d+(?:\.\d+)?(?:e[-+]?\d+)?\b|\bnan\b|-?\binf\b", "N", text)
        text = re.sub(r"'[^']*'", "''", text)
        groups.setdefault((cell.backend, cell.status, case.row, text), []).append((case, cell))
    return sorted(groups.values(), key=len, reverse=True)


def rerun_command(results: Results, case_id: str) -> str:
    settings = results.settings
    parts = ["onnx-bridge conformance"]
    if settings.get("models"):
        parts += [str(m) for m in settings["models"]]
    if settings.get("cases") is not None:
        parts.append(f"--cases {settings['cases']}")
    elif settings.get("size", "medium") != "medium":
        parts.append(f"--size {settings['size']}")
    if settings.get("seed"):
        parts.append(f"--seed {settings['seed']}")
    parts.append(f"--only '{case_id}'")
    return " ".join(parts)


def array_text(array: np.ndarray, limit: int = 24) -> str:
    array = np.asarray(array)
    head = f"{type_name(array.dtype)}{list(array.shape)}"
    if array.size > limit:
        return head
    flat = [scalar_text(v) for v in array.reshape(-1)]
    body = _nest(flat, array.shape) if array.ndim else flat[0]
    return f"{head} {body}"


def _nest(flat: list[str], shape) -> str:
    if len(shape) == 1:
        return "[" + ", ".join(flat) + "]"
    step = len(flat) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"


def inputs_text(case: Case) -> list[str]:
    lines = [f"{name} = {array_text(value)}" for name, value in case.inputs.items() if value is not None]
    if case.attributes:
        lines.append(", ".join(f"{k}={v!r}" for k, v in case.attributes.items()))
    return lines


# ------------------------------------------------------------------------------------------------------
# Terminal


def terminal(results: Results, stream=None, details: int = 20) -> str:
    """The run summary for a terminal: verdict, matrix, unexpected cells, known and unsupported groups."""
    stream = stream or sys.stdout
    symbols = SYMBOLS if _can_print(stream, "✓✗☠–") else ASCII_SYMBOLS
    lines = [f"onnx-bridge conformance: {len(results.cases)} cases ({corpus_line(results)}) x "
             f"{len(results.backends)} columns, {results.jobs or 'no'} worker"
             f"{'s' if results.jobs != 1 else ''}, {results.seconds:.0f} s", ""]
    lines += _matrix_lines(results, symbols)
    lines.append("  " + "  ".join(f"{symbols[s]} {s}" for s in STATUSES))
    failures = results.failures()
    if failures:
        groups = failure_groups(failures)
        lines += ["", f"Unexpected ({len(failures)} cells in {len(groups)} groups; these fail the run):"]
        for group in groups[:details]:
            (case, cell), more = group[0], len(group) - 1
            lines.append(f"  {symbols[cell.status]} {cell.backend} {cell.status}, {case.row}" +
                         (f" ({len(group)} cells)" if more else "") + f": {cell.detail}")
            lines.append(f"      {case.id}: {case.summary()}")
            if more:
                others = ", ".join(c.id for c, _ in group[1:4]) + (", ..." if more > 3 else "")
                lines.append(f"      also {others}")
        if len(groups) > details:
            lines.append(f"  ... and {len(groups) - details} more groups (see --report)")
    groups = known_groups(results)
    if groups:
        lines += ["", f"Known divergences ({sum(g['cells'] for g in groups)} cells; reasons in the report "
                      "and docs/divergences.md):"]
        width = max(len(g["id"]) for g in groups)
        for g in groups:
            backends = ", ".join(g["backends"])
            lines.append(f"  {g['id']:<{width}}  {g['cells']:>4}  {backends}: {g['title']}")
    unsupported = unsupported_groups(results)
    if unsupported:
        lines += ["", f"Unsupported ({sum(g['cells'] for g in unsupported)} cells):"]
        width = max(len(g["backend"]) for g in unsupported)
        for g in unsupported:
            lines.append(f"  {g['cells']:>4}  {g['backend']:<{width}}  {_clip(g['reason'], 100)}")
    if results.skipped:
        lines += ["", "Skipped backends:"]
        lines += [f"  {name}: {reason}" for name, reason in results.skipped.items()]
    tolerated = [cell for _, cell in results.by_status(MATCH) if cell.detail.startswith("within the model")]
    if tolerated:
        lines += ["", f"Note: {len(tolerated)} model cells match within the model tolerance "
                      f"({results.settings.get('model_tolerance', 64):g}·ε·max|output|); "
                      "--model-tolerance 0 compares them exactly."]
    for note in results.notes:
        lines.append(f"Note: {note}")
    lines += ["", verdict(results)]
    return "\n".join(lines)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _can_print(stream, text: str) -> bool:
    try:
        text.encode(getattr(stream, "encoding", None) or "ascii")
        return True
    except (UnicodeEncodeError, LookupError):
        return False


def _matrix_lines(results: Results, symbols) -> list[str]:
    counts = results.counts()
    ops = ops_of(results)
    rows = [(op, [cell_text(counts.get((op, b), Counter()), symbols) for b in results.backends]) for op in ops]
    total = [cell_text(sum((counts.get((op, b), Counter()) for op in ops), Counter()), symbols)
             for b in results.backends]
    rows.append(("all", total))
    label = max(len(r[0]) for r in rows)
    widths = [max(len(b), *(len(r[1][i]) for r in rows)) for i, b in enumerate(results.backends)]
    header = " " * label + "  " + "  ".join(b.ljust(w) for b, w in zip(results.backends, widths))
    lines = [header]
    for name, cells in rows:
        lines.append(name.ljust(label) + "  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths)))
    return [line.rstrip() for line in lines]


# ------------------------------------------------------------------------------------------------------
# Markdown


def markdown(results: Results) -> str:
    out = ["# onnx-bridge conformance report", "",
           f"**{verdict(results)}**", "",
           f"{len(results.cases)} cases ({corpus_line(results)}) on {len(results.backends)} columns; "
           f"{results.jobs or 'no'} worker processes; {results.seconds:.0f} s. " + _settings_text(results), ""]
    out += ["## Matrix", "", "Cells per op and backend: " +
            ", ".join(f"{SYMBOLS[s]} {s}" for s in STATUSES) + ".", ""]
    counts = results.counts()
    ops = ops_of(results)
    out.append("| op | " + " | ".join(results.backends) + " |")
    out.append("|---|" + "---|" * len(results.backends))
    for op in ops:
        out.append(f"| {op} | " + " | ".join(cell_text(counts.get((op, b), Counter())) or "·"
                                           for b in results.backends) + " |")
    totals = [cell_text(sum((counts.get((op, b), Counter()) for op in ops), Counter())) for b in results.backends]
    out.append("| **all** | " + " | ".join(totals) + " |")
    out += ["", "### Columns", ""]
    out += [f"- **{name}**: {results.titles.get(name, '')}" for name in results.backends]
    out += [f"- **{name}** (skipped): {reason}" for name, reason in results.skipped.items()]
    out += ["", "### What a cell means", ""]
    out += [f"- {SYMBOLS[s]} **{s}**: {MEANING[s]}" for s in STATUSES]

    models = [(case, cells) for case, cells in results.rows() if case.source == "model"]
    if models:
        out += ["", "## Models", ""]
        for case, cells in models:
            out += [f"### {case.row}", "", case.summary(), ""]
            out += [f"- **{b}**: {cell.status}: " + (cell.detail or cell.reason or "exact")
                    for b, cell in cells.items()]
            out.append("")
    failures = results.failures()
    out += ["", f"## Unexpected disagreements ({len(failures)})", ""]
    if not failures:
        out.append("None: every cell is a match, a declared known divergence, or an unsupported configuration.")
    for case, cell in failures:
        out += [f"### {case.id} on {cell.backend}: {cell.status}", "",
                f"{case.summary()}", "", f"- **{cell.status}**: {cell.detail}"]
        out += _case_block(results, case)

    groups = known_groups(results)
    out += ["", f"## Known divergences ({sum(g['cells'] for g in groups)} cells, {len(groups)} entries)", "",
            "Declared once in `onnx_bridge/divergences.py` with the measurement behind each; the contract "
            "is asserted, never loosened.", ""]
    for g in groups:
        case, cell = g["example"]
        out += [f"### `{g['id']}`: {g['title']}", "",
                f"{g['cells']} cells on {', '.join(f'{b} ({n})' for b, n in g['backends'].items())}.", ""]
        if g.get("reason"):
            out += [f"> {g['reason']}", ""]
        if g.get("outcomes"):
            out += ["Depends on the machine; accepted outcomes (nothing else is): " + "; ".join(g["outcomes"]) +
                    f". This run: {cell.reason}", ""]
        out += [f"Example **{case.id}** ({case.summary()}): {cell.detail}", ""]
        out += [f"    {line}" for line in inputs_text(case)] + [""]
        out.append("Cases: " + _id_list(g["cases"]))
        out.append("")

    unsupported = unsupported_groups(results)
    out += [f"## Unsupported configurations ({sum(g['cells'] for g in unsupported)} cells)", ""]
    if unsupported:
        out += ["| backend | cells | reason | e.g. |", "|---|---|---|---|"]
        out += [f"| {g['backend']} | {g['cells']} | {g['reason'].replace('|', '/')} | {g['cases'][0]} |"
                for g in unsupported]
    else:
        out.append("None.")
    if results.skipped:
        out += ["", "## Skipped backends", ""]
        out += [f"- **{name}**: {reason}" for name, reason in results.skipped.items()]
    out += ["", "## Corpus", ""]
    tags = Counter(tag for case in results.cases for tag in case.tags)
    out.append("Tags: " + (", ".join(f"{tag} ({n})" for tag, n in tags.most_common()) or "none") + ".")
    out += [f"", f"Versions: " + ", ".join(f"{k} {v}" for k, v in results.versions.items()) + "."]
    for note in results.notes:
        out.append(f"\nNote: {note}")
    out += ["", "Rerun one case: `" + rerun_command(results, "ID") + "` (ids, ops and tags take globs)."]
    return "\n".join(out) + "\n"


def _settings_text(results: Results) -> str:
    s = results.settings
    parts = []
    if s.get("cases") is not None:
        parts.append(f"--cases {s['cases']}")
    elif "size" in s:
        parts.append(f"size {s['size']}")
    if "seed" in s:
        parts.append(f"seed {s['seed']}")
    return ("Corpus: " + ", ".join(parts) + ".") if parts else ""


def _case_block(results: Results, case: Case) -> list[str]:
    lines = ["", "Inputs:", ""] + [f"    {line}" for line in inputs_text(case)]
    others = [f"{b}: {results.cells[(results.cases.index(case), b)].status}" for b in results.backends
              if (results.cases.index(case), b) in results.cells]
    lines += ["", "All columns: " + ", ".join(others) + ".", "",
              f"Rerun: `{rerun_command(results, case.id)}`", ""]
    return lines


def _id_list(ids: list[str], limit: int = 12) -> str:
    shown = ", ".join(f"`{i}`" for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


# ------------------------------------------------------------------------------------------------------
# HTML (the Markdown's content with a coloured matrix)

_CSS = """body{font:15px/1.5 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}
th{background:#f4f4f4}.pass{color:#176b2c}.fail{color:#b00020}code,pre{background:#f6f6f6;padding:0 .2em}
pre{padding:.6em;overflow:auto}.match{background:#e8f5e9}.known{background:#fff8e1}
.unsupported{background:#f1f1f1}.mismatch,.error,.crash{background:#ffebee}
blockquote{margin:.5em 0;padding:.2em 1em;border-left:4px solid #ddd;color:#555}"""


def html_report(results: Results) -> str:
    esc = html.escape
    ok = not results.failures()
    parts = [f"<!doctype html><meta charset='utf-8'><title>onnx-bridge conformance</title><style>{_CSS}</style>",
             "<h1>onnx-bridge conformance report</h1>",
             f"<p class='{'pass' if ok else 'fail'}'><b>{esc(verdict(results))}</b></p>",
             f"<p>{len(results.cases)} cases ({esc(corpus_line(results))}); {results.seconds:.0f} s. "
             f"{esc(_settings_text(results))}</p>", "<h2>Matrix</h2><table><tr><th>op</th>"]
    parts += [f"<th title='{esc(results.titles.get(b, ''))}'>{esc(b)}</th>" for b in results.backends]
    parts.append("</tr>")
    counts = results.counts()
    for op in ops_of(results):
        parts.append(f"<tr><th>{esc(op)}</th>")
        for b in results.backends:
            counter = counts.get((op, b), Counter())
            worst = next((s for s in reversed(STATUSES) if counter.get(s)), MATCH)
            parts.append(f"<td class='{worst}'>{esc(cell_text(counter))}</td>")
        parts.append("</tr>")
    parts.append("</table><p>" + " &nbsp; ".join(f"{SYMBOLS[s]} {esc(s)}: {esc(MEANING[s])}<br>"
                                                 for s in STATUSES) + "</p>")
    parts.append("<h2>Columns</h2><ul>" + "".join(f"<li><b>{esc(b)}</b>: {esc(results.titles.get(b, ''))}</li>"
                                                  for b in results.backends) +
                 "".join(f"<li><b>{esc(b)}</b> (skipped): {esc(r)}</li>" for b, r in results.skipped.items()) +
                 "</ul>")
    failures = results.failures()
    parts.append(f"<h2>Unexpected disagreements ({len(failures)})</h2>")
    for case, cell in failures:
        parts.append(f"<h3 class='{cell.status}'>{esc(case.id)} on {esc(cell.backend)}: {cell.status}</h3>"
                     f"<p>{esc(case.summary())}</p><p><b>{esc(cell.detail)}</b></p>"
                     f"<pre>{esc(chr(10).join(inputs_text(case)))}</pre>"
                     f"<p>Rerun: <code>{esc(rerun_command(results, case.id))}</code></p>")
    groups = known_groups(results)
    parts.append(f"<h2>Known divergences ({sum(g['cells'] for g in groups)} cells)</h2>")
    for g in groups:
        case, cell = g["example"]
        parts.append(f"<h3><code>{esc(g['id'])}</code>: {esc(g['title'])}</h3><p>{g['cells']} cells on "
                     f"{esc(', '.join(f'{b} ({n})' for b, n in g['backends'].items()))}</p>"
                     f"<blockquote>{esc(g.get('reason', ''))}</blockquote>"
                     + (f"<p>Depends on the machine; accepted outcomes (nothing else is): "
                        f"{esc('; '.join(g['outcomes']))}. This run: {esc(cell.reason)}</p>"
                        if g.get("outcomes") else "") +
                     f"<p>Example <b>{esc(case.id)}</b> ({esc(case.summary())}): {esc(cell.detail)}</p>"
                     f"<pre>{esc(chr(10).join(inputs_text(case)))}</pre>")
    unsupported = unsupported_groups(results)
    parts.append(f"<h2>Unsupported configurations ({sum(g['cells'] for g in unsupported)} cells)</h2>"
                 "<table><tr><th>backend</th><th>cells</th><th>reason</th><th>e.g.</th></tr>")
    parts += [f"<tr><td>{esc(g['backend'])}</td><td>{g['cells']}</td><td>{esc(g['reason'])}</td>"
              f"<td>{esc(g['cases'][0])}</td></tr>" for g in unsupported]
    parts.append("</table>")
    parts.append("<p>Versions: " + esc(", ".join(f"{k} {v}" for k, v in results.versions.items())) + "</p>")
    parts += [f"<p>Note: {esc(note)}</p>" for note in results.notes]
    return "\n".join(parts) + "\n"


# ------------------------------------------------------------------------------------------------------
# JSON


def to_json(results: Results) -> dict:
    cases = []
    for index, case in enumerate(results.cases):
        cells = {b: results.cells[(index, b)].to_json() for b in results.backends if (index, b) in results.cells}
        entry = {"id": case.id, "op": case.op, "source": case.source, "description": case.summary(),
                 "tags": sorted(case.tags), "cells": cells}
        if case.attributes:
            entry["attributes"] = case.attributes
        if any(c["status"] != MATCH for c in cells.values()):
            entry["inputs"] = {k: _array_json(v) for k, v in case.inputs.items() if v is not None}
        cases.append(entry)
    totals = results.totals()
    return {
        "verdict": verdict(results), "passed": not results.failures(), "exit_code": results.exit_code,
        "seconds": round(results.seconds, 2), "jobs": results.jobs, "settings": _jsonable(results.settings),
        "versions": results.versions, "notes": results.notes,
        "columns": {b: {"title": results.titles.get(b, "")} for b in results.backends},
        "skipped": results.skipped,
        "totals": {s: totals[s] for s in STATUSES},
        "matrix": {f"{op}|{b}": dict(c) for (op, b), c in results.counts().items()},
        "known_divergences": [{k: (dict(v) if isinstance(v, Counter) else v) for k, v in g.items()
                               if k != "example"} for g in known_groups(results)],
        "unsupported": [{"reason": g["reason"], "cells": g["cells"], "backends": dict(g["backends"]),
                         "cases": g["cases"]} for g in unsupported_groups(results)],
        "cases": cases,
    }


def _array_json(array: np.ndarray, limit: int = 256) -> dict:
    array = np.asarray(array)
    entry = {"dtype": type_name(array.dtype), "shape": list(array.shape)}
    if array.size <= limit:
        entry["values"] = _nested([_json_scalar(v) for v in array.reshape(-1)], array.shape)
    return entry


def _nested(flat: list, shape):
    if not shape:
        return flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nested(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])] if len(shape) > 1 \
        else flat


def _json_scalar(value):
    """A JSON number, or a string for what JSON has no number for (nan, inf, -0.0)."""
    array = np.asarray(value)
    if array.dtype.kind in "iu":
        return int(array)
    if array.dtype.kind == "b":
        return bool(array)
    number = float(array.astype(np.float64))
    if not math.isfinite(number) or (number == 0 and math.copysign(1, number) < 0):
        return scalar_text(value)
    return number


def _jsonable(value):
    return json.loads(json.dumps(value, default=str))


# ------------------------------------------------------------------------------------------------------
# Writing


def write(results: Results, target) -> list[Path]:
    """Write the report: a directory gets conformance.json, .md and .html; a file path gets its format
    (.json, .md or .html). Files are written atomically. Returns the paths written."""
    target = Path(target)
    formats = {".json": lambda: json.dumps(to_json(results), indent=1, allow_nan=False) + "\n",
               ".md": lambda: markdown(results), ".html": lambda: html_report(results)}
    if target.suffix.lower() in formats:
        paths = [target]
    else:
        paths = [target / f"conformance{suffix}" for suffix in formats]
    for path in paths:
        _write_text(path, formats[path.suffix.lower()]())
    return paths


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes 0600; a report is an ordinary file
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
