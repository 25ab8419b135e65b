"""Markdown rendering of one benchmark run (the JSON is the run's dict as is)."""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 0.01:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e3:.3f} ms"


def size(nbytes: float) -> str:
    return f"{nbytes / 2**20:.0f} MB" if abs(nbytes) >= 2**20 else f"{nbytes / 2**10:.0f} KB"


def _header(outcome: dict) -> list[str]:
    m = outcome["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v)
    plan = outcome["plan"]
    memory = f", {m['memory_gb']:.0f} GB RAM" if m.get("memory_gb") else ""
    passes = (f"Cells under {plan['second_pass_below']:g} s are timed in {plan['passes']} to "
              f"{plan['max_passes']} passes over the columns (later passes in reverse order; more passes "
              f"while the two best pass medians differ by more than {plan['agree']:.0%}) and keep the lowest "
              "median, so that a burst of other work during one pass does not decide a ratio. "
              if plan["passes"] > 1 else "")
    return [
        f"Run {outcome['date']} ({outcome['mode']} mode, {outcome['seconds']:.0f} s) on {m['cpu']}, "
        f"{m['cores']} cores{memory}, {m['platform']}; {versions}. Load average (1/5/15 min) "
        f"{outcome['load_start']} at start, {outcome['load_end']} at end: other work shared the cores.",
        "",
        f"Each cell: median of up to {plan['repeats']} runs (at least {plan['min_repeats']}, about "
        f"{plan['budget']:g} s per cell) after {plan['warmup']} warm-up run(s) (runs over "
        f"{plan['budget'] / 4:g} s: the first run counts), columns one after the other. " + passes +
        "`xN` = time / fastest of the row (fastest in bold). Every result is checked against the "
        "kernel's: `≈` = float results differ only by summation order (relative difference <= 1e-5), "
        "`≠` = they differ (see notes); `(1 run)` = one cold run only (too slow to repeat); "
        "`—` = not run (see notes). `(lowered)` = the bridge ran the node natively from its standard "
        "lowering; otherwise the bridge ran it as a Python op.",
    ]


def _cell_text(cell: dict, fastest: float | None, bridge_note: bool) -> str:
    if "median" not in cell:
        return "error" if "error" in cell else "—"
    text = duration(cell["median"])
    ratio = cell["median"] / fastest if fastest else None
    if ratio is not None and ratio < 1.0005:
        text = f"**{text}**"
    elif ratio is not None:
        text += f" x{ratio:.1f}" if ratio < 100 else f" x{ratio:.0f}"
    check = cell.get("check", "")
    if check.startswith("rounding"):
        text += " ≈"
    elif check != "exact":
        text += " ≠"
    if cell.get("single"):
        text += " (1 run)"
    if bridge_note and cell.get("note"):
        text += f" ({cell['note']})"
    return text


def _case_tables(outcome: dict) -> list[str]:
    lines = []
    titles = outcome["columns"]
    groups: dict[str, list] = {}
    for case in outcome["cases"]:
        groups.setdefault(case["op"], []).append(case)
    for op, cases in groups.items():
        keys = [k for k in titles if any(k in c["cells"] for c in cases)]
        lines += ["", f"### {op}", "", "| case | " + " | ".join(titles[k] for k in keys) + " |",
                  "|---|" + "---|" * len(keys)]
        notes: dict[str, list[str]] = {}

        def note(key, text):
            bucket = notes.setdefault(titles.get(key, key), [])
            if text not in bucket:
                bucket.append(text)

        for case in cases:
            if "error" in case:
                lines.append(f"| {case['label']} | error: {case['error']} |" + " |" * (len(keys) - 1))
                continue
            timed = [c["median"] for c in case["cells"].values() if "median" in c]
            fastest = min(timed) if timed else None
            row = [_cell_text(case["cells"].get(k, {}), fastest, k in ("bridge", "lowered")) for k in keys]
            label = case["label"] + (f" ({case['note']})" if case.get("note") else "")
            lines.append(f"| {label} | " + " | ".join(row) + " |")
            for key in keys:
                cell = case["cells"].get(key, {})
                if "skipped" in cell or "error" in cell:
                    note(key, f"— {cell.get('skipped') or cell.get('error')}")
                elif key not in ("bridge", "lowered") and cell.get("note"):
                    note(key, cell["note"])
                check = cell.get("check", "exact")
                if "median" in cell and check != "exact":
                    mark = "≈" if check.startswith("rounding") else "≠"
                    note(key, f"{mark} on '{case['id']}': {check.removeprefix('rounding: ')}")
        if notes:
            lines += [""] + [f"- {title}: " + "; ".join(texts) + "." for title, texts in notes.items()]
    return lines


def _floor(outcome: dict) -> list[str]:
    floor = outcome["floor"]
    shape = "x".join(map(str, floor["shape"]))
    lines = ["", "### Floor of the PyOp path", "",
             f"Moving one {size(floor['bytes'])} float32 tensor ({shape}, the data of the {floor.get('op', '')} "
             "cases) "
             "with no work done. A PyOp receives a fresh copy of every input and its result is copied into "
             "onnxruntime's output, so its floor is about two copies plus a fixed cost per call (last rows).",
             "", "| what | median |", "|---|---|"]
    lines += [f"| {name} | {duration(cell['median'])} |" for name, cell in floor["cells"].items()]
    return lines


def _memory(outcome: dict) -> list[str]:
    cases = [c for c in outcome["cases"] if c.get("memory")]
    if not cases:
        return []
    errors = {c["memory"]["error"] for c in cases if "error" in c["memory"]}
    if errors:
        return ["", "### Peak memory", "", "Not measured: " + "; ".join(sorted(errors))]
    keys = ["bridge", "bridge_pyop", "native"]
    titles = outcome["columns"]
    lines = ["", "### Peak memory", "",
             "Measured in a child process: the RSS peak during one run() above the RSS just before it "
             "(inputs and session already allocated), in MB and as a multiple of the `data` input; in "
             "brackets what stays allocated once the result is released (onnxruntime's arena, numpy's "
             "cache).", "",
             "| case | data | all inputs | " + " | ".join(titles.get(k, k) for k in keys) + " |",
             "|---|---|---|" + "---|" * len(keys)]
    for case in cases:
        row = []
        for key in keys:
            cell = case["memory"].get(key)
            if not cell or "peak" not in cell:
                row.append("—")
            else:
                row.append(f"{size(cell['peak'])} = {cell['peak'] / case['data_bytes']:.1f}x "
                           f"[{size(cell['retained'])}]")
        lines.append(f"| {case['label']} | {size(case['data_bytes'])} | {size(case['input_bytes'])} | "
                     + " | ".join(row) + " |")
    return lines


def _targets(outcome: dict) -> list[str]:
    titles = outcome["columns"]

    def side(pair):
        return f"{pair[0]} {titles.get(pair[1], pair[1])}"

    lines = ["", "### Targets", "", "| target | measured | compared | limit | status |",
             "|---|---|---|---|---|"]
    for row in outcome["targets"]:
        compared = side(row["subject"]) + (f" vs {side(row['reference'])}" if row.get("reference") else "")
        if row.get("note"):
            compared += f" ({row['note']})"
        limit = f">= {row['limit']:g}x faster" if row["speedup"] else f"<= {row['limit']:g}x"
        if row["ratio"] is None:
            measured, status = "—", f"not measured: {row.get('why_unmeasured', '')}"
        else:
            measured = f"{row['ratio']:.0f}x faster" if row["speedup"] else f"{row['ratio']:.2f}x"
            if row["met"]:
                status = "met"
            elif row["speedup"]:
                status = f"**missed** ({row['limit'] / row['ratio']:.1f}x short)"
            else:
                status = f"**missed** by {(row['ratio'] / row['limit'] - 1) * 100:.0f}%"
        lines.append(f"| {row['target']} | {measured} | {compared} | {limit} | {status} |")
    return lines


def markdown(outcome: dict) -> str:
    lines = _header(outcome) + _case_tables(outcome) + _floor(outcome) + _memory(outcome) + _targets(outcome)
    return "\n".join(lines) + "\n"


def write_atomic(path, text: str) -> None:
    """Write text to path through a temporary file and a rename: never a half-written file."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def write_markdown(path, text: str, markers: tuple[str, str] = (BEGIN, END)) -> None:
    """Write `text` to path; if the file has the `markers` (each alone on a line), replace only what is
    between them."""
    path = Path(path)
    begin, end = markers
    if path.exists():
        current = path.read_text()
        marked = re.search(rf"^{re.escape(begin)}\n(.*?)^{re.escape(end)}$", current, re.M | re.S)
        if marked:
            text = current[:marked.start(1)] + text + current[marked.end(1):]
    write_atomic(path, text)
