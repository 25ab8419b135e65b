"""Run the benchmark: python benchmarks/run.py [--quick | --tiny] [--json FILE] [--markdown FILE] ...

Every case (benchmarks/cases.py) is run by every column (benchmarks/columns.py) in one process; each
column's first result is checked against the kernel's and the median of its repeats reported. The PyOp
floor (benchmarks/floor.py) is measured in this process too, peak memory in a child (benchmarks/memory.py).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import custom_ops  # noqa: E402
from benchmarks import columns, memory, models, report, targets  # noqa: E402
from benchmarks.cases import all_cases  # noqa: E402
from benchmarks.check import compare  # noqa: E402
from benchmarks.floor import floor_runners  # noqa: E402
from benchmarks.models import NotApplicable  # noqa: E402
from benchmarks.options import add_arguments  # noqa: E402
from benchmarks.timing import Plan, measure  # noqa: E402

FULL = Plan(repeats=15, warmup=2, budget=3.0, single_run=8.0, max_cell=20.0, second_pass_below=0.25)
QUICK = Plan(repeats=5, warmup=1, budget=0.5, min_repeats=2, single_run=3.0, max_cell=3.0, passes=1,
             max_passes=1)
TINY = Plan(repeats=1, warmup=1, budget=0.0, min_repeats=1, single_run=60.0, max_cell=60.0, passes=1,
            max_passes=1)
MEMORY_SKIP_SECONDS = 8.0  # cells slower than this are not re-run for the memory measurement
PLANS = {"full": FULL, "quick": QUICK, "tiny": TINY}


def machine_info() -> dict:
    import onnx
    import onnxruntime
    import onnxruntime_extensions
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        memory_gb = None
    versions = {"python": platform.python_version(), "numpy": np.__version__, "onnx": onnx.__version__,
                "onnxruntime": onnxruntime.__version__,
                "onnxruntime-extensions": onnxruntime_extensions.__version__}
    for name in ("openvino", "torch"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = None
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": memory_gb, "platform": platform.platform(),
            "vector_extensions": vector_extensions(), "versions": versions}


#: the x86 extensions integer and float kernels choose by: without VNNI, OpenVINO CPU's and onnxruntime's
#: u8 x s8 kernels sum products in int16 with saturation, so INT8 results (and speed) depend on them
VECTOR_FLAGS = {"avx2": "AVX2", "avx512f": "AVX-512", "avx512_vnni": "AVX-512 VNNI", "avx_vnni": "AVX-VNNI",
                "amx_int8": "AMX-INT8"}


def vector_extensions(flags: set | None = None) -> str:
    """"AVX2, no AVX-512, no VNNI"-style summary of the CPU flags (compare_explain.cpu_flags() by default;
    "unknown" where there are none)."""
    if flags is None:
        from onnx_bridge.compare_explain import cpu_flags

        flags = cpu_flags()
        if flags is None:
            return "unknown"
    found = [label for flag, label in VECTOR_FLAGS.items() if flag in flags]
    if "avx512f" not in flags:
        found.append("no AVX-512")
    if not flags & {"avx512_vnni", "avx_vnni"}:
        found.append("no VNNI")
    return ", ".join(found)


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _predicted_too_slow(key: str, result: dict, smaller: dict | None, plan: Plan) -> str:
    """Why column `key` is not run on this case, judged from its time on the smaller case ('' = run it).

    The native onnxruntime op always runs: it is the reference of the targets."""
    cell = (smaller or {}).get("cells", {}).get(key, {})
    if key == "native" or "median" not in cell:
        return ""
    predicted = cell["median"] * result["data_bytes"] / smaller["data_bytes"]
    if predicted <= plan.max_cell:
        return ""
    return (f"not run: {report.duration(cell['median'])} on '{smaller['id']}' predicts "
            f"{report.duration(predicted)} or more per run here")


def _floor_case(cases):
    """The case whose first input's shape the PyOp floor is measured on: the first with a memory limit (a
    scatter, whose work is about one copy of it), else the first."""
    limited = [c for c in cases if custom_ops.unit_of(c.op).benchmark.memory_limit is not None]
    return (limited or cases)[0]


def run_case(case, plan: Plan, column_keys, log, smaller: dict | None = None) -> dict:
    inputs = case.inputs(np.random.default_rng(0))
    spec = custom_ops.resolve(case.op, 12)
    ordered = models.ordered_inputs(case, inputs)
    expected = spec.run(ordered, case.attributes)
    constant = models.constant_ports(case)
    result = {"id": case.id, "op": case.op, "label": case.label, "note": case.note,
              "data_bytes": int(ordered[0].nbytes),
              "input_bytes": int(sum(v.nbytes for k, v in inputs.items() if k not in constant)),
              "cells": {}}
    runners = {}
    for column in columns.COLUMNS:
        if column.key not in column_keys:
            continue
        too_slow = _predicted_too_slow(column.key, result, smaller, plan)
        if too_slow:
            result["cells"][column.key] = {"skipped": too_slow}
            continue
        try:
            runners[column.key] = column.prepare(case, inputs)
        except NotApplicable as reason:
            result["cells"][column.key] = {"skipped": str(reason)}
        except Exception as error:  # a column that cannot run is reported, the benchmark goes on
            result["cells"][column.key] = {"error": f"{type(error).__name__}: {error}"}
            log(f"  {column.key}: {type(error).__name__}: {error}")

    def check(key, outputs):
        try:
            result["cells"][key] = {"check": compare(runners[key].to_contract(outputs), expected)}
        except Exception as error:
            result["cells"][key] = {"check": f"cannot compare: {error}"}

    cells = measure({k: r.run for k, r in runners.items()}, plan, on_first=check)
    for key, cell in cells.items():
        result["cells"][key].update(median=cell.median, times=cell.times, single=cell.single,
                                    pass_medians=cell.pass_medians, note=runners[key].note)
    timed = {k: c["median"] for k, c in result["cells"].items() if "median" in c}
    if timed:
        result["fastest"] = min(timed, key=timed.get)
    log("  " + ", ".join(f"{k} {report.duration(v)}" for k, v in timed.items()))
    return result


def run(args) -> dict:
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    plan = PLANS[mode]
    if args.repeats:
        plan = dataclasses.replace(plan, repeats=args.repeats)
    cases = [c for c in all_cases(mode)
             if not args.only or any(c.id == o or c.id.startswith(o) for o in args.only)]
    column_keys = args.columns or columns.COLUMN_KEYS
    started = time.time()
    machine = machine_info()
    columns.preload()
    gc.freeze()  # keep the imported modules' objects out of the collections between timings
    info = {"units": "times in seconds, sizes in bytes",
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "mode": mode, "machine": machine, "load_start": _load(),
            "plan": vars(plan), "columns": {c.key: c.title for c in columns.COLUMNS if c.key in column_keys}}
    results = {}
    for case in cases:
        log(f"[{time.time() - started:5.0f} s] {case.id}: {case.label}")
        try:
            results[case.id] = run_case(case, plan, column_keys, log, results.get(case.scales_from))
        except Exception as error:
            log(traceback.format_exc())
            results[case.id] = {"id": case.id, "op": case.op, "label": case.label, "note": case.note,
                                "cells": {}, "error": f"{type(error).__name__}: {error}"}
        gc.collect()
    log(f"[{time.time() - started:5.0f} s] floor of the PyOp path")
    floor_case = _floor_case(cases or all_cases(mode))
    floor_shape = models.ordered_inputs(floor_case, floor_case.inputs(np.random.default_rng(0)))[0].shape
    floor = {"shape": list(floor_shape), "bytes": int(np.prod(floor_shape)) * 4, "op": floor_case.op,
             "cells": {k: {"median": c.median, "times": c.times}
                       for k, c in measure(floor_runners(floor_shape), plan).items()}}
    if not args.no_memory and cases:
        log(f"[{time.time() - started:5.0f} s] peak memory (child process)")
        skip = {case_id: [k for k, cell in result["cells"].items()
                          if cell.get("median", 0) > MEMORY_SKIP_SECONDS or "median" not in cell]
                for case_id, result in results.items()}
        measured = memory.measure_in_child([c.id for c in cases], mode, skip)
        for case_id, result in results.items():
            result["memory"] = ({"error": measured["error"]} if "error" in measured
                                else measured.get(case_id, {}))
    evaluated = [c for c in cases if "error" not in results[c.id]]
    info.update(load_end=_load(), seconds=round(time.time() - started, 1), floor=floor,
                cases=[results[c.id] for c in cases],
                targets=targets.evaluate(evaluated, results) + targets.memory_rows(evaluated, results))
    return info


def main(args) -> int:
    outcome = run(args)
    text = report.markdown(outcome)
    if args.markdown:
        report.write_markdown(args.markdown, text)
    if args.json == "-":
        print(json.dumps(outcome, indent=1))
    else:
        if args.json:
            report.write_atomic(args.json, json.dumps(outcome, indent=1) + "\n")
        print(text)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
