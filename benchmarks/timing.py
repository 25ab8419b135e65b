"""Medians over repeats, after a warm-up, with a per-cell time budget.

Columns are timed one after the other, not interleaved: onnxruntime's and torch's worker threads keep
spinning for a while after a run, and on a 2-core machine that steals the core from whatever runs next
(measured: a 5 ms kernel took 25 ms when interleaved with onnxruntime sessions). Against bursts of other
work on the machine, fast cells are timed in at least two passes (the later ones in reverse column
order), more (up to max_passes) while their two lowest pass medians differ by more than `agree`, and keep
the lowest median.
"""
from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Plan:
    repeats: int = 15         # timed runs per cell (fewer when one run is slow, see budget)
    warmup: int = 2           # untimed runs first (the first also gives the result to check)
    budget: float = 4.0       # seconds of timed runs per cell
    min_repeats: int = 3
    single_run: float = 8.0   # a first run slower than this is the only one (timed, no warm-up)
    max_cell: float = 20.0    # a column predicted (from smaller data) to need longer per run is not run
    passes: int = 2           # passes over the columns for cells faster than second_pass_below
    max_passes: int = 4       # ... more while the two lowest pass medians disagree by more than agree
    agree: float = 0.2
    second_pass_below: float = 1.0


@dataclass
class Cell:
    times: list = field(default_factory=list)  # seconds, of the pass whose median is reported
    single: bool = False  # only one (cold) run was timed
    pass_medians: list = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def _once(run) -> tuple[float, object]:
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def time_one(run, plan: Plan, on_first=None) -> Cell:
    gc.collect()
    first, result = _once(run)
    if on_first:
        on_first(result)
    del result
    if first > plan.single_run:
        return Cell([first], single=True)
    slow = first > plan.budget / 4  # then the first run is the warm-up and counts as a repeat
    for _ in range(0 if slow else plan.warmup - 1):
        first = min(first, _once(run)[0])
    repeats = max(plan.min_repeats, min(plan.repeats, int(plan.budget / max(first, 1e-9))))
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return Cell(([first] if slow else []) + [_once(run)[0] for _ in range(repeats - slow)])
    finally:
        if gc_was_enabled:
            gc.enable()


def measure(runners: dict, plan: Plan, on_first=None) -> dict[str, Cell]:
    """Time every runner; on_first(key, result) sees each runner's first result."""
    cells = {key: time_one(run, plan, on_first and (lambda result, key=key: on_first(key, result)))
             for key, run in runners.items()}
    for cell in cells.values():
        cell.pass_medians = [cell.median]

    def settled(cell: Cell) -> bool:
        done = len(cell.pass_medians)
        if cell.single or cell.median >= plan.second_pass_below or done >= plan.max_passes:
            return True
        if done < plan.passes:
            return False
        low, second = sorted(cell.pass_medians)[:2]
        return second <= low * (1 + plan.agree)

    for _ in range(plan.max_passes - 1):
        for key in reversed(list(runners)):
            cell = cells[key]
            if settled(cell):
                continue
            again = time_one(runners[key], plan)
            cell.pass_medians.append(again.median)
            if again.median < cell.median:
                cell.times = again.times
    return cells
