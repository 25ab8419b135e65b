"""Running a corpus on backends in worker processes that may die.

Workers are spawned processes (no runtime is ever loaded in the parent). Each takes a chunk of cases and
streams back one cell per (case, column): the contract first, then the backends in column order, OpenVINO
last. When a worker dies (SIGSEGV, abort, heap corruption) or stops answering for `timeout` seconds, the
cell it was computing is reported as a crash (with the signal and the last line it wrote to stderr), a
fresh worker is started, and the rest of its chunk is rerun there. jobs=0 runs in-process (no isolation).
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import tempfile
import time
from collections import deque
from multiprocessing.connection import wait
from pathlib import Path

from ..errors import BridgeError
from . import divergence
from .adapters import ADAPTERS, CONTRACT, load
from .cases import Case
from .compare import MODEL_TOLERANCE
from .results import CRASH, KNOWN, Cell, Results

DEFAULT_TIMEOUT = 120.0
STARTUP_TIMEOUT = 120.0  # a worker's imports (torch, openvino) do not count against --timeout
CONTRACT_TITLE = "the custom_ops kernels, which implement the contract (checked against documented results)"
_PACKAGES = ("onnx-bridge", "numpy", "onnx", "onnxruntime", "onnxruntime-extensions", "openvino", "torch")


def versions() -> dict[str, str]:
    """Installed versions of the packages involved (read from metadata: nothing is imported)."""
    from importlib import metadata
    found = {}
    for package in _PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return found


def resolve_backends(requested, cases=()) -> tuple[dict[str, str], dict[str, str]]:
    """(column name -> adapter spec for the columns that can run, column -> reason for the skipped ones).

    `requested`: column names of ADAPTERS or "module:Class" paths (tests plug fake backends in this way).
    """
    runnable, skipped = {}, {}
    only_models = bool(cases) and all(case.is_model for case in cases)
    for spec in requested:
        cls = load(spec)
        reason = cls.missing()
        if not reason and only_models and not getattr(cls, "runs_models", True):
            reason = "every case is a whole model, which this backend does not run"
        if reason:
            skipped[cls.name] = reason
        else:
            runnable[cls.name] = spec
    return runnable, skipped


def run(cases: list[Case], backends=tuple(ADAPTERS), jobs: int | None = None,
        timeout: float = DEFAULT_TIMEOUT, progress=None, model_tolerance: float = MODEL_TOLERANCE) -> Results:
    """Evaluate every case on the contract and every available backend; progress(done, total) is called
    as cases complete. model_tolerance: K of compare's model tolerance (0: model outputs exact too).
    A script calling this needs `if __name__ == "__main__":` (workers are spawned processes)."""
    runnable, skipped = resolve_backends(backends, cases)
    columns = [CONTRACT, *runnable]
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    results = Results(cases, columns, skipped, jobs=jobs, versions=versions())
    results.titles = {CONTRACT: CONTRACT_TITLE, **{load(spec).name: load(spec).title for spec in backends}}
    start = time.perf_counter()
    specs = {CONTRACT: CONTRACT, **runnable}
    if jobs <= 0:
        _run_inline(cases, specs, results, progress, model_tolerance)
    else:
        _Pool(cases, (specs, model_tolerance), results, min(jobs, max(len(cases), 1)), timeout, progress).run()
    results.seconds = time.perf_counter() - start
    return results


def _run_inline(cases, specs, results, progress, model_tolerance):
    from .evaluate import Evaluator
    evaluator = Evaluator(specs, model_tolerance)
    done = 0
    for chunk in _chunks(cases, 1):
        evaluator.prepare([cases[i] for i in chunk], set(specs))
        for index in chunk:
            for cell in evaluator.evaluate(cases[index]):
                results.cells[(index, cell.backend)] = cell
            done += 1
            if progress:
                progress(done, len(cases))


def _chunks(cases: list[Case], jobs: int) -> list[list[int]]:
    """Consecutive cases in chunks: small enough to keep every worker busy, large enough (up to 16) for
    adapters that batch a chunk (one onnxruntime session per chunk)."""
    size = max(1, min(16, len(cases) // (jobs * 6) or 1))
    order = list(range(len(cases)))
    return [order[i:i + size] for i in range(0, len(order), size)]


class _Worker:
    def __init__(self, context, setup: tuple):
        self.log = tempfile.NamedTemporaryFile(prefix="onnx-bridge-worker-", suffix=".log", delete=False)
        self.log.close()
        parent, child = context.Pipe()
        from .worker import main
        self.process = context.Process(target=main, args=(child, setup, self.log.name), daemon=True)
        self.process.start()
        child.close()
        self.conn = parent
        self.pending: deque = deque()  # (case index, column) not yet answered, in evaluation order
        self.last = time.monotonic()
        self.ready = False  # imports done (a worker dying before that is a setup problem, not a crash)

    @property
    def busy(self) -> bool:
        return bool(self.pending)

    def send(self, task: list[tuple[int, Case, list[str]]]) -> None:
        for index, _, columns in task:
            self.pending.extend((index, column) for column in columns)
        self.last = time.monotonic()
        self.conn.send(task)

    def last_words(self) -> str:
        """The last non-empty line the worker wrote to stderr (glibc's 'double free or corruption', ...)."""
        try:
            lines = [line.strip() for line in Path(self.log.name).read_text(errors="replace").splitlines()]
        except OSError:
            return ""
        lines = [line for line in lines if line]
        return lines[-1][:200] if lines else ""

    def stop(self, kill: bool = False) -> None:
        if kill and self.process.is_alive():
            self.process.kill()
        elif self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()
        Path(self.log.name).unlink(missing_ok=True)


class _Pool:
    def __init__(self, cases, setup, results, jobs, timeout, progress):
        self.cases, self.setup, self.results = cases, setup, results
        self.jobs, self.timeout, self.progress = jobs, timeout, progress
        self.context = multiprocessing.get_context("spawn")
        self.columns = list(setup[0])
        self.queue = deque([(i, c) for i in chunk for c in self.columns] for chunk in _chunks(cases, jobs))
        self.remaining = {i: len(self.columns) for i in range(len(cases))}
        self.done = 0
        self.failed_starts = 0

    def run(self) -> None:
        workers = [_Worker(self.context, self.setup) for _ in range(self.jobs)]
        try:
            while self.queue or any(w.busy for w in workers):
                for worker in workers:
                    if not worker.busy and self.queue:
                        worker.send(self._task(self.queue.popleft()))
                busy = [w for w in workers if w.busy]
                ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=1.0)
                for position, worker in enumerate(list(workers)):
                    if worker not in busy:
                        continue
                    if worker.conn in ready:
                        self._receive(worker)
                    limit = self.timeout if worker.ready else max(self.timeout, STARTUP_TIMEOUT)
                    hung = time.monotonic() - worker.last > limit
                    if worker.busy and (worker.process.sentinel in ready or hung):
                        workers[position] = self._replace(worker, hung)
        finally:
            for worker in workers:
                worker.stop()

    def _task(self, pairs) -> list[tuple[int, Case, list[str]]]:
        """Group (case, column) pairs by case, keeping order."""
        task: list = []
        for index, column in pairs:
            if task and task[-1][0] == index:
                task[-1][2].append(column)
            else:
                task.append((index, self.cases[index], [column]))
        return task

    def _receive(self, worker: _Worker) -> None:
        try:
            while worker.conn.poll():
                index, cell = worker.conn.recv()
                if index < 0:
                    worker.ready, worker.last, self.failed_starts = True, time.monotonic(), 0
                    continue
                self._record(worker, index, cell)
        except (EOFError, OSError):
            pass  # died mid-message: the sentinel reports it

    def _record(self, worker: _Worker, index: int, cell: Cell) -> None:
        worker.last = time.monotonic()
        if worker.pending and worker.pending[0] == (index, cell.backend):
            worker.pending.popleft()
        else:  # should not happen; keep the bookkeeping right anyway
            worker.pending = deque(p for p in worker.pending if p != (index, cell.backend))
        self.results.cells[(index, cell.backend)] = cell
        self.remaining[index] -= 1
        if self.remaining[index] == 0:
            self.done += 1
            if self.progress:
                self.progress(self.done, len(self.cases))

    def _replace(self, worker: _Worker, hung: bool) -> _Worker:
        """Report the cell the dead (or hung) worker was computing; requeue the rest of its chunk."""
        self._receive(worker)  # cells it sent before dying
        words = worker.last_words()
        worker.stop(kill=True)
        if not worker.ready and not hung:
            self.failed_starts += 1
            if self.failed_starts >= 3:
                raise BridgeError("conformance worker processes die while starting "
                                  f"({_exit_text(worker.process.exitcode)}): {words or 'see the messages above'}"
                                  " (a script using onnx_bridge.conformance.run needs "
                                  "`if __name__ == '__main__':`)")
            self.queue.appendleft(list(worker.pending))
            worker.pending.clear()
        elif worker.pending:
            index, column = worker.pending.popleft()
            self._record(worker, index, self._crash_cell(index, column, worker, hung, words))
            if worker.pending:
                self.queue.appendleft(list(worker.pending))
                worker.pending.clear()
        return _Worker(self.context, self.setup)

    def _crash_cell(self, index: int, column: str, worker: _Worker, hung: bool, words: str) -> Cell:
        if hung:
            detail = f"no answer for {self.timeout:g} s: worker killed"
        else:
            detail = f"worker process died ({_exit_text(worker.process.exitcode)})"
        if words:
            detail += f"; its last words: {words}"
        cell = Cell(column, CRASH, detail)
        known = divergence.find(column, self.cases[index], cell)
        if known:
            cell.status, cell.divergence, cell.reason = KNOWN, known[0], known[1]
        return cell


def _exit_text(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def stderr_progress(stream=sys.stderr, every: float = 1.0):
    """A progress callback: one updating line on a terminal, a line every ~10% otherwise."""
    start = time.perf_counter()
    state = {"shown": 0.0, "step": -1}
    tty = stream.isatty()

    def show(done: int, total: int) -> None:
        now = time.perf_counter()
        elapsed = now - start
        finished = done == total
        if tty:
            if not finished and now - state["shown"] < every:
                return
            state["shown"] = now
            eta = elapsed / done * (total - done) if done else 0
            stream.write(f"\r  {done}/{total} cases  {elapsed:5.0f} s  (about {eta:.0f} s left)  ")
            if finished:
                stream.write("\r" + " " * 60 + "\r")
            stream.flush()
        else:
            step = done * 10 // max(total, 1)
            if step != state["step"] and (step > state["step"]):
                state["step"] = step
                stream.write(f"  {done}/{total} cases, {elapsed:.0f} s\n")
                stream.flush()
    return show
