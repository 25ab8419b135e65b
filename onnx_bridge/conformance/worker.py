"""The worker process: evaluates the chunks of cases it is sent and streams back one cell at a time."""
from __future__ import annotations

import os
import signal
import sys
import warnings

READY = (-1, None)  # first message: imports done, the worker can take work


def _isolate_output(log_path: str) -> None:
    """Runtimes print to fds 1 and 2 (OpenVINO, glibc's heap checks): keep the parent's terminal clean and
    keep stderr in a file the parent reads when this process dies."""
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(log, 2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (lives as long as the process)
    sys.stderr = open(log_path, "a", buffering=1)  # noqa: SIM115


def main(conn, setup: tuple, log_path: str) -> None:
    """setup: (column name -> adapter spec, model tolerance)."""
    _isolate_output(log_path)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    warnings.simplefilter("ignore")
    import onnx.reference  # noqa: F401  (before any dialect schema exists: it rejects ReduceL2 twice)

    from .evaluate import Evaluator
    evaluator = Evaluator(*setup)
    conn.send(READY)
    while True:
        try:
            task = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if task is None:
            return
        evaluator.prepare([case for _, case, _ in task], {c for _, _, columns in task for c in columns})
        for index, case, columns in task:
            for cell in evaluator.evaluate(case, columns):
                conn.send((index, cell))
