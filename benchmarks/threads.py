"""Throughput of sessions run from 1, 2 and 4 threads: a native MatMul chain plus one scatter mean (a
Python custom op, registered with onnx_bridge.custom_op on the same core as the dialect's), through
onnx_bridge.InferenceSession, against plain
onnxruntime on the same chain without the custom op. Also: errors crossing between threads, and a thread
feeding bad indices next to a good one (starvation).

    PYTHONPATH=. python benchmarks/threads.py [--seconds 3] [--repeats 3]

Every session gets intra_op_num_threads=1, so the threads are the only parallelism (with onnxruntime's
default the one-thread case would already use both cores). Figures: runs per second, median of
`--repeats` windows of `--seconds` each; the load average of the machine is printed with them.
"""
from __future__ import annotations

import argparse
import functools
import os
import statistics
import threading
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import onnx_bridge
from onnx_bridge.config import IR_VERSION

ROWS, WIDTH, DEPTH, SCATTER_ROWS = 256, 256, 8, 64
THREADS_DOMAIN = "org.onnxbridge.threads"


@functools.cache
def _register() -> None:
    @onnx_bridge.custom_op("ScatterMean", domain=THREADS_DOMAIN, inputs=["float32", "int64", "float32"],
                           outputs=["float32"])
    def scatter_mean(data, indices, updates):
        """Each position of data addressed by indices (rows; columns as their own): the mean of its value and
        the updates sent to it."""
        bad = indices[(indices < 0) | (indices >= len(data))]
        if bad.size:
            raise IndexError(f"index {int(bad[0])} out of range [0, {len(data)})")
        sums, counts = data.copy(), np.ones_like(data)
        index = (indices, np.broadcast_to(np.arange(data.shape[1]), indices.shape))
        np.add.at(sums, index, updates)
        np.add.at(counts, index, np.float32(1))
        return sums / counts


def chain_model(with_scatter: bool):
    rng = np.random.default_rng(0)
    nodes, inits, name = [], [], "x"
    for i in range(DEPTH):
        inits.append(numpy_helper.from_array((rng.standard_normal((WIDTH, WIDTH)) / 16).astype(np.float32),
                                             f"w{i}"))
        nodes.append(helper.make_node("MatMul", [name, f"w{i}"], [f"h{i}"]))
        name = f"h{i}"
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, WIDTH])]
    opsets = [helper.make_opsetid("", 18)]
    if with_scatter:
        _register()
        inputs += [helper.make_tensor_value_info("indices", TensorProto.INT64, [SCATTER_ROWS, WIDTH]),
                   helper.make_tensor_value_info("updates", TensorProto.FLOAT, [SCATTER_ROWS, WIDTH])]
        nodes.append(helper.make_node("ScatterMean", [name, "indices", "updates"], ["y"], domain=THREADS_DOMAIN,
                                      name="mean"))
        opsets.append(helper.make_opsetid(THREADS_DOMAIN, 1))
        name = "y"
    graph = helper.make_graph(nodes, "chain", inputs,
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, [ROWS, WIDTH])], inits)
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)


def feeds(thread: int, bad: bool = False, with_scatter: bool = True):
    rng = np.random.default_rng(thread)
    feed = {"x": rng.standard_normal((ROWS, WIDTH)).astype(np.float32)}
    if with_scatter:
        indices = rng.integers(0, ROWS, (SCATTER_ROWS, WIDTH))
        if bad:
            indices[0, 0] = ROWS + thread  # the error names the thread
        feed.update(indices=indices, updates=np.ones((SCATTER_ROWS, WIDTH), np.float32))
    return feed


def _options():
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return options


def make_session(kind: str):
    if kind == "bridge":
        return onnx_bridge.InferenceSession(chain_model(True), _options())
    return ort.InferenceSession(chain_model(False).SerializeToString(), _options(),
                                providers=["CPUExecutionProvider"])


def throughput(kind: str, threads: int, shared: bool, seconds: float) -> tuple[float, float]:
    """(runs per second, cores used: process CPU time / wall time) over one window."""
    sessions = [make_session(kind)] * threads if shared else [make_session(kind) for _ in range(threads)]
    counts, stop, barrier = [0] * threads, threading.Event(), threading.Barrier(threads + 1)

    def work(index):
        feed = feeds(index, with_scatter=kind == "bridge")
        sessions[index].run(None, feed)  # warm-up
        barrier.wait()
        while not stop.is_set():
            sessions[index].run(None, feed)
            counts[index] += 1

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    barrier.wait()
    start, cpu = time.perf_counter(), time.process_time()
    time.sleep(seconds)
    stop.set()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    for worker in workers:
        worker.join()
    return sum(counts) / elapsed, cpu / elapsed


def good_beside_bad(seconds: float) -> dict:
    """One thread runs good inputs while another feeds bad indices on another session: good runs per
    second (compare with one thread alone) and errors that crossed (a good run raising, or a bad run
    raising another thread's error)."""
    good_session, bad_session = make_session("bridge"), make_session("bridge")
    stop, result = threading.Event(), {"good": 0, "bad": 0, "crossed": 0}

    def bad():
        feed = feeds(1, bad=True)
        while not stop.is_set():
            try:
                bad_session.run(None, feed)
                result["crossed"] += 1
            except onnx_bridge.OpError as error:
                result["crossed"] += f"index {ROWS + 1} " not in str(error)
                result["bad"] += 1

    worker = threading.Thread(target=bad)
    worker.start()
    feed, start = feeds(0), time.perf_counter()
    while time.perf_counter() - start < seconds:
        try:
            good_session.run(None, feed)
            result["good"] += 1
        except Exception:  # noqa: BLE001
            result["crossed"] += 1
    stop.set()
    worker.join()
    elapsed = time.perf_counter() - start
    return {k: (v / elapsed if k != "crossed" else v) for k, v in result.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    print("Runs per second (cores used: process CPU time / wall time), medians of the windows.")
    print("| runtime | sessions | 1 thread | 2 threads | 4 threads | 2 threads / 1 |")
    print("|---|---|---|---|---|---|")
    for kind in ("bridge", "onnxruntime"):
        for shared in (True, False):
            cells = []
            for n in (1, 2, 4):
                windows = [throughput(kind, n, shared, args.seconds) for _ in range(args.repeats)]
                cells.append((statistics.median(w[0] for w in windows),
                              statistics.median(w[1] for w in windows)))
            name = "onnx_bridge.InferenceSession" if kind == "bridge" else "plain onnxruntime (no custom op)"
            print(f"| {name} | {'one shared' if shared else 'one per thread'} | "
                  + " | ".join(f"{r:.0f}/s ({c:.2f})" for r, c in cells)
                  + f" | {cells[1][0] / cells[0][0]:.2f}x |", flush=True)
    alone = statistics.median(throughput("bridge", 1, False, args.seconds)[0] for _ in range(args.repeats))
    beside = good_beside_bad(args.seconds * args.repeats)
    print(f"\ngood thread alone: {alone:.0f}/s; beside a thread failing {beside['bad']:.0f}/s: "
          f"{beside['good']:.0f}/s; crossed errors: {beside['crossed']}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
