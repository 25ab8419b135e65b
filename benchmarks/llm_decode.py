"""Decode speed of a converted LLM: python benchmarks/llm_decode.py [--layers 4 --hidden 512 --steps 32]

A LLaMA with random weights (transformers config, no download; tests/helpers/llm.py builds and makes it stateful
as optimum-intel does), f32 and nncf INT4_ASYM group 64 / INT8_ASYM: per-token decode latency after a 16-token
prefill, medians over interleaved runs, of
  - OpenVINO CPU, f32 precision, no dynamic quantization (the reference the conversion matches);
  - OpenVINO CPU with its defaults (its dynamic int8 quantization of activations: an approximation);
  - onnxruntime, onnx_bridge.InferenceSession stateful: the converted model (MatMulNBits for compressed weights);
  - the same with MatMulNBits accuracy_level 4 (onnx_bridge.llm.set_accuracy_level: an approximation, opt-in);
  - onnxruntime on the DequantizeLinear + MatMul form (the standard-ONNX alternative, not the one emitted);
and the sizes: IR .bin vs ONNX file.
"""
from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402


def _decode_times(run, steps: int, prompt: int) -> list[float]:
    """Seconds of each one-token step after a prompt-token prefill; `run(ids, start)` -> logits."""
    logits = run(np.arange(3, 3 + prompt)[None], 0)
    times, position = [], prompt
    for _ in range(steps):
        token = np.array([[int(np.argmax(logits[0, -1]))]])
        start = time.perf_counter()
        logits = run(token, position)
        times.append(time.perf_counter() - start)
        position += 1
    return times


#: the weight forms measured: (label, nncf mode, group size)
FORMS = (("f32", None, None), ("INT4_ASYM g64", "INT4_ASYM", 64), ("INT8_ASYM", "INT8_ASYM", -1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)

    from tests.helpers import llm

    # A larger model than the tests' (module constants of the helper; its disk cache is not used).
    llm.LAYERS, llm.HIDDEN, llm.HEADS, llm.KV_HEADS = args.layers, args.hidden, args.hidden // 64, args.hidden // 128
    llm.HEAD_DIM, llm.INTERMEDIATE, llm.VOCAB = 64, args.hidden * 11 // 4, 4096
    base, _ = llm._build("llama")
    rows = []
    for label, mode, group in FORMS:
        model = llm.make_stateful(llm.compressed(base, mode, group) if mode else base.clone())
        onnx_model, sizes = _convert(model)
        runners = {**_openvino_runners(model), **_onnxruntime_runners(model, onnx_model, mode)}
        times = {name: [] for name in runners}
        for _ in range(args.rounds):  # interleaved
            for name, run in runners.items():
                times[name] += _decode_times(run, args.steps, 16)
        reference = statistics.median(times["OpenVINO f32"])
        for name, values in times.items():
            median = statistics.median(values)
            rows.append((label, name, median * 1e3, median / reference))
        size = f"size: IR .bin {sizes[0] / 1e6:.2f} MB, ONNX {sizes[1] / 1e6:.2f} MB"
        rows.append((label, size, sizes[1] / sizes[0], None))
    print(f"LLaMA {args.layers} layers, hidden {args.hidden}, vocab {llm.VOCAB}; decode ms/token (median), "
          f"ratio to OpenVINO f32")
    for label, name, value, ratio in rows:
        if ratio is None:
            print(f"{label:14s} {name} (ratio {value:.2f})")
        else:
            print(f"{label:14s} {name:30s} {value:8.2f} ms  x{ratio:.2f}")
    return 0


def _convert(model):
    """(the ONNX import of `model`, (IR .bin bytes, ONNX file bytes))."""
    import openvino as ov

    from converters.model_io import save_model
    from converters.openvino_ir import import_ir

    with tempfile.TemporaryDirectory() as tmp:
        ov.save_model(model, f"{tmp}/m.xml", compress_to_fp16=False)
        onnx_model = import_ir(model)
        save_model(onnx_model, f"{tmp}/m.onnx")
        return onnx_model, (Path(f"{tmp}/m.bin").stat().st_size, Path(f"{tmp}/m.onnx").stat().st_size)


def _openvino_runners(model) -> dict:
    """OpenVINO CPU runners `run(ids, start)` -> logits: the exact configuration and the defaults."""
    import openvino as ov

    from onnx_bridge.llm import OPENVINO_EXACT

    core, runners = ov.Core(), {}
    for name, config in (("OpenVINO f32", OPENVINO_EXACT), ("OpenVINO default", {})):
        request = core.compile_model(model, "CPU", config).create_infer_request()

        def run_ov(ids, start, request=request):
            if start == 0:
                request.reset_state()
            n = ids.shape[1]
            return request.infer({"input_ids": ids, "attention_mask": np.ones((1, start + n), np.int64),
                                  "position_ids": np.arange(start, start + n)[None],
                                  "beam_idx": np.zeros(1, np.int32)})["logits"]
        runners[name] = run_ov
    return runners


def _onnxruntime_runners(model, onnx_model, mode) -> dict:
    """onnx_bridge.InferenceSession runners of the emitted model and, for compressed weights, its
    accuracy_level 4 variant (INT4) and the DequantizeLinear + MatMul form."""
    import onnx_bridge
    from converters.openvino_ir import import_ir, rules

    forms = {"onnxruntime (emitted)": onnx_model}
    if mode and mode.startswith("INT4"):
        from onnx_bridge.llm import set_accuracy_level
        forms["onnxruntime level 4 (opt-in)"] = set_accuracy_level(onnx_model.__deepcopy__(), 4)
    if mode:
        original = rules.nn.matmul_nbits
        rules.nn.matmul_nbits = lambda ctx, node: False
        try:
            forms["onnxruntime DQ+MatMul"] = import_ir(model)
        finally:
            rules.nn.matmul_nbits = original
    runners = {}
    for name, form in forms.items():
        session = onnx_bridge.InferenceSession(form)

        def run_ort(ids, start, session=session):
            if start == 0:
                session.reset_state()
            n = ids.shape[1]
            return session.run(["logits"], {"input_ids": ids, "attention_mask": np.ones((1, start + n), np.int64),
                                            "position_ids": np.arange(start, start + n)[None]})[0]
        runners[name] = run_ort
    return runners


if __name__ == "__main__":
    sys.exit(main())
