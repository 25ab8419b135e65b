"""Runs in several threads are independent: each raises its own errors, none waits for another's
failures, and failing inputs are not retained. Correctness and isolation only; throughput figures are
benchmarks/threads.py's."""
import subprocess
import sys
import textwrap
import threading

import numpy as np
import onnxruntime as ort
import pytest

import onnx_bridge
from custom_ops import _ort
from tests.helpers.models import dialect_model


def mean_model():
    """int64 mean: no exact lowering (the sum needs more than 64 bits), so even the default session runs
    it as a Python op."""
    return dialect_model("ScatterElementsUpdate", dict(
        data=np.zeros(8, np.int64), indices=np.array([1, 2, 1]), updates=np.ones(3, np.int64),
        axis=np.array(0)), {"reduction": "mean"})


def feeds_for(bad_index: int | None, thread: int):
    indices = np.array([1, 2, 1] if bad_index is None else [1, bad_index, 1])
    return {"data": np.full(8, thread, np.int64), "indices": indices,
            "updates": np.ones(3, np.int64)}


def _hammer(sessions, runs=60):
    """Threads alternate good and bad runs, each bad index naming its thread; every failure must carry
    the thread's own index and every success its own data."""
    problems, barrier = [], threading.Barrier(len(sessions))

    def work(thread, session):
        barrier.wait()
        for i in range(runs):
            bad = 100 + thread if i % 2 else None
            try:
                (out,) = session.run(None, feeds_for(bad, thread))
                if bad is not None:
                    problems.append(f"thread {thread}: bad run returned {out}")
                elif out[0] != thread:
                    problems.append(f"thread {thread}: got another thread's data {out}")
            except onnx_bridge.OpError as error:
                if bad is None or error.value != bad:
                    problems.append(f"thread {thread} run {i}: crossed error {error}")

    threads = [threading.Thread(target=work, args=(t, s)) for t, s in enumerate(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return problems


@pytest.mark.parametrize("shared", [True, False], ids=["one session", "one session per thread"])
@pytest.mark.parametrize("lower", [True, False])
def test_errors_stay_with_their_run(shared, lower):
    model, _ = mean_model()
    first = onnx_bridge.InferenceSession(model, lower=lower)
    sessions = [first if shared or t == 0 else onnx_bridge.InferenceSession(model, lower=lower)
                for t in range(4)]
    assert _hammer(sessions) == []


def test_python_ops_run_on_the_calling_thread():
    """The premise of the run-local channel: sessions with Python ops run sequentially, so
    onnxruntime-extensions calls the op on the thread that called run(), whatever the thread counts."""
    seen, original = [], _ort._invoke
    options = ort.SessionOptions()
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    options.intra_op_num_threads = options.inter_op_num_threads = 2
    model, feeds = mean_model()
    session = onnx_bridge.InferenceSession(model, options)

    def spy(*args):
        seen.append(threading.get_ident())
        return original(*args)

    _ort.PyCustomOpDef.install_hooker(spy)
    try:
        callers = []
        for _ in range(3):
            thread = threading.Thread(target=lambda: session.run(None, feeds_for(None, 1)))
            thread.start()
            callers.append(thread.ident)
            thread.join()
    finally:
        _ort.PyCustomOpDef.install_hooker(original)
    assert seen == callers


def test_prepare_model_route_does_not_cross_into_sessions():
    """A user's own session failing in one thread (errors on its thread's take_errors list) while an
    InferenceSession runs well in another."""
    model, _ = mean_model()
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.register_custom_ops_library(onnx_bridge.get_library_path())
    own = ort.InferenceSession(onnx_bridge.prepare_model(model).SerializeToString(), options)
    bridge = onnx_bridge.InferenceSession(model)
    problems, collected = [], []

    def failing():
        for _ in range(100):
            own.run(None, feeds_for(99, 0))
        collected.extend(onnx_bridge.take_errors())

    def good():
        for _ in range(100):
            try:
                bridge.run(None, feeds_for(None, 2))
            except Exception as error:  # noqa: BLE001
                problems.append(error)

    threads = [threading.Thread(target=failing), threading.Thread(target=good)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    assert len(collected) == 100 and all(e.value == 99 for e in collected)
    assert onnx_bridge.take_errors() == []  # the main thread saw none


def test_a_failing_thread_does_not_starve_a_good_one():
    """Both threads finish their runs: a thread feeding bad indices holds no lock the good one needs.
    (No timing assertion: both must simply complete, and the good one gets all its results.)"""
    model, _ = mean_model()
    sessions = [onnx_bridge.InferenceSession(model) for _ in range(2)]
    done = {"good": 0, "bad": 0}
    stop = threading.Event()

    def bad():
        while not stop.is_set():
            with pytest.raises(onnx_bridge.OpError):
                sessions[0].run(None, feeds_for(50, 0))
            done["bad"] += 1

    thread = threading.Thread(target=bad)
    thread.start()
    try:
        for _ in range(100):
            sessions[1].run(None, feeds_for(None, 1))
            done["good"] += 1
    finally:
        stop.set()
        thread.join()
    assert done["good"] == 100 and done["bad"] > 0


RSS_SCRIPT = textwrap.dedent("""
    import gc, resource, sys
    import numpy as np, onnxruntime as ort
    import onnx_bridge
    from tests.helpers.models import dialect_model
    route = sys.argv[1]
    n = 2_000_000  # 8 MB of float32
    model, _ = dialect_model("ScatterElementsUpdate", dict(
        data=np.zeros(n, np.float32), indices=np.array([1]), updates=np.ones(1, np.float32),
        axis=np.array(0)), {"reduction": "mean" if route != "lowered" else "sum"})
    if route == "prepare_model":
        options = ort.SessionOptions(); options.log_severity_level = 4
        options.register_custom_ops_library(onnx_bridge.get_library_path())
        session = ort.InferenceSession(onnx_bridge.prepare_model(model).SerializeToString(), options)
    else:
        session = onnx_bridge.InferenceSession(model, lower=route == "lowered")
    feeds = {"data": np.ones(n, np.float32), "indices": np.array([n + 5]), "updates": np.ones(1, np.float32)}
    def fail():
        try:
            session.run(None, feeds)
        except onnx_bridge.OpError:
            pass
    def rss():
        gc.collect()
        return int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
    for _ in range(10):
        fail()
    before = rss()
    for _ in range(150):
        fail()
    after = rss()
    if route == "prepare_model":
        errors = onnx_bridge.take_errors()  # kept until taken, but without their inputs
        assert len(errors) == 160, len(errors)
    print((after - before) // 2**20)
""")


@pytest.mark.parametrize("route", ["custom_op", "lowered", "prepare_model"])
def test_rss_flat_over_failing_runs(route):
    """150 failing runs with 8 MB inputs: RSS grows by less than 3 inputs' worth (it grew by 1.2 GB
    when each recorded error kept its inputs)."""
    result = subprocess.run([sys.executable, "-c", RSS_SCRIPT, route], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout.split()[-1]) < 24, result.stdout
