"""Per-call overhead of a user's Python op (onnx_bridge.custom_op) against native onnxruntime: a model of one
identity node, 1 KB and 50 MB float32 inputs.

    PYTHONPATH=. python benchmarks/user_op_overhead.py [--repeats 30]

Columns: native Identity in plain onnxruntime; the same model through onnx_bridge.InferenceSession (its
wrapper alone); a user identity op (`return x`) through onnx_bridge.InferenceSession; the same user op in a
float16 model (widened to float32 around the op, so two more Casts). Medians of `--repeats` runs after a
warm-up; intra_op_num_threads=1.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

import onnx_bridge
from onnx_bridge.config import IR_VERSION

USER_DOMAIN = "ai.example.bench"


@onnx_bridge.custom_op("UserIdentity", domain=USER_DOMAIN)
def user_identity(x):
    return x


def model(op_type: str, domain: str = "", code=TensorProto.FLOAT):
    node = helper.make_node(op_type, ["x"], ["y"], domain=domain)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", code, None)],
                              [helper.make_tensor_value_info("y", code, None)])
    opsets = [helper.make_opsetid("", 18)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)


def median_ms(session, feed, repeats):
    session.run(None, feed)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    sessions = {
        "native Identity (onnxruntime)": (ort.InferenceSession(model("Identity").SerializeToString(), options,
                                                               providers=["CPUExecutionProvider"]), np.float32),
        "native Identity (onnx_bridge session)": (onnx_bridge.InferenceSession(model("Identity"), options),
                                                  np.float32),
        "user identity op": (onnx_bridge.InferenceSession(model("UserIdentity", USER_DOMAIN), options),
                             np.float32),
        "user identity op, float16": (onnx_bridge.InferenceSession(
            model("UserIdentity", USER_DOMAIN, TensorProto.FLOAT16), options), np.float16),
    }
    print(f"load average: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    print("| path | 1 KB | 50 MB |")
    print("|---|---|---|")
    for name, (session, dtype) in sessions.items():
        cells = []
        for nbytes in (1024, 50 * 2**20):
            x = np.random.default_rng(0).standard_normal(nbytes // np.dtype(dtype).itemsize).astype(dtype)
            (y,) = session.run(None, {"x": x})
            assert np.array_equal(y, x)
            cells.append(f"{median_ms(session, {'x': x}, args.repeats if nbytes < 2**20 else max(5, args.repeats // 3)):.3f} ms")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
