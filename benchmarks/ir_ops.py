"""Imported OpenVINO ops in onnxruntime vs OpenVINO CPU: recurrent (LSTM/GRU sequences), signal (STFT, RDFT)
and every dialect unit whose benchmark piece is not in the column table (custom_ops.unit.Benchmark, e.g. the
detection, sequence and linear-algebra units), built by the unit's OpenVINO factory.

    python benchmarks/ir_ops.py [--tiny] [--rounds N]

Each op is one small OpenVINO model; the ONNX import runs in onnx_bridge.InferenceSession and the IR in
OpenVINO CPU (f32 precision hint), both on one thread, timed interleaved (one call of each per round), medians
in milliseconds, ratio = onnxruntime / OpenVINO. Outputs are checked to agree first (a model whose import is
refused is listed as such). Not part of the test suite: timings on a shared machine are noisy.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402


def _f32(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _sequence(kind, b, t, i, h, bidirectional):
    import openvino as ov
    from openvino import opset1, opset5
    d = 2 if bidirectional else 1
    gates = {"lstm": 4, "gru": 3}[kind]
    x = opset1.parameter([b, t, i], np.float32, name="x")
    h0 = opset1.constant(np.zeros((b, d, h), np.float32))
    lengths = opset1.constant(np.full(b, t, np.int32))
    w, r = opset1.constant(_f32(1, d, gates * h, i) * 0.2), opset1.constant(_f32(2, d, gates * h, h) * 0.2)
    bias = opset1.constant(_f32(3, d, gates * h) * 0.1)
    direction = "bidirectional" if bidirectional else "forward"
    if kind == "lstm":
        node = opset5.lstm_sequence(x, h0, h0, lengths, w, r, bias, h, direction)
    else:
        node = opset5.gru_sequence(x, h0, lengths, w, r, bias, h, direction)
    return ov.Model([node.output(0)], [x], kind), {"x": _f32(4, b, t, i)}


def _stft(batch, samples, frame, step):
    import openvino as ov
    from openvino import opset1, opset15
    x = opset1.parameter([batch, samples], np.float32, name="x")
    window = opset1.constant(np.hanning(frame).astype(np.float32))
    node = opset15.stft(x, window, opset1.constant(np.int64(frame)), opset1.constant(np.int64(step)), True)
    return ov.Model([node], [x], "stft"), {"x": _f32(5, batch, samples)}


def _rdft(batch, samples):
    import openvino as ov
    from openvino import opset1, opset9
    x = opset1.parameter([batch, samples], np.float32, name="x")
    node = opset9.rdft(x, opset1.constant(np.array([1], np.int64)))
    return ov.Model([node], [x], "rdft"), {"x": _f32(6, batch, samples)}


def _unit_model(case, inputs: dict):
    """(ov.Model, feeds) of a unit's benchmark case: its OpenVINO node (benchmarks.models.openvino_node), the
    outputs the case times."""
    import openvino as ov

    from benchmarks import models
    node, parameters = models.openvino_node(case, inputs)
    outputs = node.outputs() if case.outputs is None else [node.output(i) for i in case.outputs]
    return ov.Model(outputs, parameters, case.id), {p.get_friendly_name(): inputs[p.get_friendly_name()]
                                                   for p in parameters}


def unit_cases(mode: str) -> list:
    """(row name, build) of every dialect unit benchmarked against OpenVINO (its benchmark piece, not in the
    column table)."""
    import custom_ops
    from custom_ops.unit import present
    rows = []
    for unit in custom_ops.units():
        if not present(unit.benchmark) or unit.benchmark.table:
            continue
        for case in unit.benchmark.all_cases(unit.op_type, mode):
            def build(case=case):
                return _unit_model(case, case.inputs(np.random.default_rng(7)))
            rows.append((f"{unit.op_type}-{unit.openvino.versions[-1]} {case.label}", build))
    return rows


def cases(tiny: bool):
    s = 1 if tiny else 0
    return [
        ("LSTMSequence-5 B8 T32 I64 H128", lambda: _sequence("lstm", 2, 4, 8, 8, False) if s else
         _sequence("lstm", 8, 32, 64, 128, False)),
        ("LSTMSequence-5 bidir B8 T32 I64 H64", lambda: _sequence("lstm", 2, 4, 8, 8, True) if s else
         _sequence("lstm", 8, 32, 64, 64, True)),
        ("GRUSequence-5 B8 T32 I64 H128", lambda: _sequence("gru", 2, 4, 8, 8, False) if s else
         _sequence("gru", 8, 32, 64, 128, False)),
        ("STFT-15 B4 16000 n_fft 400 hop 160", lambda: _stft(1, 64, 16, 8) if s else _stft(4, 16000, 400, 160)),
        ("RDFT-9 B16 1024", lambda: _rdft(2, 32) if s else _rdft(16, 1024)),
    ] + unit_cases("tiny" if tiny else "full")


def measure(build, rounds: int):
    import openvino as ov
    import onnxruntime as ort

    import onnx_bridge
    from converters.openvino_ir import import_ir

    model, feeds = build()
    try:
        onnx_model = import_ir(model)
    except Exception as exc:  # noqa: BLE001 (a refusal is a row)
        return {"refused": " ".join(str(exc).split())[:120]}
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnx_bridge.InferenceSession(onnx_model.SerializeToString(), options)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1})
    request = compiled.create_infer_request()
    got = session.run(None, feeds)
    want = [request.infer(feeds)[o] for o in compiled.outputs]
    # Agreement relative to the output's magnitude: a DFT of n points sums n products, so onnxruntime's and
    # OpenVINO's float32 results differ by ~n ulps of the largest bin (STFT n_fft 400: 3e-5 of it).
    agree = all(a.shape == b.shape and np.abs(a - b).max(initial=0) <= 1e-4 * max(1.0, np.abs(b).max(initial=0))
                for a, b in zip(got, want))
    times = {"onnxruntime": [], "openvino": []}
    for _ in range(rounds):
        start = time.perf_counter()
        session.run(None, feeds)
        times["onnxruntime"].append(time.perf_counter() - start)
        start = time.perf_counter()
        request.infer(feeds)
        times["openvino"].append(time.perf_counter() - start)
    medians = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    dialect = sorted({n.op_type for n in onnx_model.graph.node if n.domain == "org.openvinotoolkit"})
    return {**medians, "agree": agree, "form": ",".join(dialect) + " (dialect)" if dialect else "standard"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny shapes, 2 rounds (a smoke run)")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    rounds = 2 if args.tiny else args.rounds
    print("| op | form | onnxruntime ms | OpenVINO ms | ratio | agree |\n|---|---|---:|---:|---:|---|")
    failed = False
    for name, build in cases(args.tiny):
        row = measure(build, rounds)
        if "refused" in row:
            print(f"| {name} | refused: {row['refused']} | | | | |")
            continue
        failed |= not row["agree"]
        print(f"| {name} | {row['form']} | {row['onnxruntime']:.3f} | {row['openvino']:.3f} | "
              f"{row['onnxruntime'] / row['openvino']:.2f} | {'yes' if row['agree'] else 'NO'} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
