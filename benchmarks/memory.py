"""Peak memory of one inference, measured in a child process (benchmarks/memory.py JSON-REQUEST).

For each (case, column): build the inputs and the session, then read VmRSS, reset the peak (VmHWM, via
/proc/self/clear_refs), run once and read the peak again. Reported: the peak above the state just before
run() (inputs and session already allocated), so it counts what the inference itself allocates.
"""
from __future__ import annotations

import ctypes
import gc
import json
import os
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

COLUMNS = ("bridge", "bridge_pyop", "native")


def _status(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"{field} not in /proc/self/status")


def _trim() -> None:
    """Return free heap memory to the system (glibc), so that reusing it shows in RSS."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")


def measure_in_child(case_ids, mode: str, skip: dict | None = None, timeout: float = 900) -> dict:
    """{case id: {column: {"peak": bytes, "retained": bytes} | {"error": str}}}, or {"error": ...}.

    skip: {case id: [columns]} not to measure (too slow, or not run in the timing either)."""
    request = json.dumps({"mode": mode, "cases": list(case_ids), "skip": skip or {}})
    command = [sys.executable, str(Path(__file__).resolve()), request]
    # Every allocation of 64 KB or more gets its own mapping, returned to the system when freed: memory
    # freed by an earlier measurement cannot be reused unseen by the next one's RSS.
    environment = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=environment,
                              cwd=Path(__file__).resolve().parents[1])
    except subprocess.TimeoutExpired:
        return {"error": f"memory measurement exceeded {timeout:.0f} s"}
    if done.returncode != 0:
        return {"error": f"memory child failed ({done.returncode}): {done.stderr.strip()[-500:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _child(mode: str, case_ids, skip: dict) -> dict:
    import numpy as np

    from benchmarks import columns
    from benchmarks.cases import all_cases
    from benchmarks.models import NotApplicable

    columns.preload()
    gc.freeze()
    try:
        _reset_peak()
    except OSError as error:
        return {"error": f"cannot reset the peak RSS here ({error})"}
    by_key = {c.key: c for c in columns.COLUMNS}
    results = {}
    for case in all_cases(mode):
        if case.id not in case_ids:
            continue
        results[case.id] = {}
        for key in COLUMNS:
            if key in skip.get(case.id, ()):
                results[case.id][key] = {"error": "not measured (not timed, or too slow to run again)"}
                continue
            inputs = case.inputs(np.random.default_rng(0))
            try:
                runner = by_key[key].prepare(case, inputs)
            except NotApplicable as reason:
                results[case.id][key] = {"error": str(reason)}
                continue
            gc.collect()
            _trim()
            before = _status("VmRSS")
            _reset_peak()
            result = runner.run()
            peak = _status("VmHWM") - before
            del result
            gc.collect()
            results[case.id][key] = {"peak": peak, "retained": _status("VmRSS") - before}
            del runner, inputs
            gc.collect()
    return results


if __name__ == "__main__":
    request = json.loads(sys.argv[1])
    print(json.dumps(_child(request["mode"], request["cases"], request["skip"])))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown of onnxruntime/openvino/torch state
