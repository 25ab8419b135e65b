"""IR importer coverage on the model zoo (tests/helpers/zoo.py): python benchmarks/ir_zoo.py [NAME ...]

Builds each model with random weights, writes it as OpenVINO IR, imports it, runs it in onnxruntime and
compares with OpenVINO CPU (f32), then exports it back to IR and compares again. Prints one row per model:
converted? / matches OpenVINO? / max abs diff / the way back / missing ops. --markdown prints a table.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.zoo import ZOO, check  # noqa: E402


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    return f"{value:.2e}" if isinstance(value, float) else str(value)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"models (default: all of {', '.join(ZOO)})")
    parser.add_argument("--no-way-back", action="store_true", help="skip export_ir of the imported model")
    args = parser.parse_args(argv)
    names = args.names or list(ZOO)
    rows = [("model", "converted", "matches OpenVINO", "max abs diff", "way back", "back diff", "seconds",
             "missing ops / error")]
    converted = matched = 0
    for name in names:
        needs = ZOO[name][1]
        if importlib.util.find_spec(needs) is None:
            rows.append((name, "-", "-", "-", "-", "-", "-", f"skipped: {needs} not installed"))
            continue
        with tempfile.TemporaryDirectory() as directory:
            try:
                outcome = check(name, directory, way_back=not args.no_way_back)
            except Exception as error:  # noqa: BLE001 (a survey: report and go on)
                rows.append((name, "-", "-", "-", "-", "-", "-", f"build failed: {type(error).__name__}: "
                             f"{str(error).splitlines()[0][:120]}"))
                continue
        converted += outcome.converted
        matched += bool(outcome.matches)
        detail = ", ".join(outcome.missing) or outcome.error.splitlines()[0][:160] if (
            outcome.missing or outcome.error) else ""
        if outcome.error and not outcome.missing and len(outcome.error.splitlines()) > 1:
            detail = "; ".join(line.strip() for line in outcome.error.splitlines()[1:3])[:200]
        seconds = "/".join(f"{v:.1f}" for v in outcome.seconds.values())
        rows.append((name, _fmt(outcome.converted), _fmt(outcome.matches), _fmt(outcome.max_diff),
                     _fmt(outcome.round_trip), _fmt(outcome.round_trip_diff), seconds, detail))
        print(f"{name}: done", file=sys.stderr, flush=True)
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]) - 1)]
    print("| " + " | ".join(rows[0]) + " |")
    print("|" + "|".join("---" for _ in rows[0]) + "|")
    for row in rows[1:]:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths + [0])) + " |")
    print(f"\n{converted}/{len(names)} converted, {matched}/{len(names)} match OpenVINO CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
