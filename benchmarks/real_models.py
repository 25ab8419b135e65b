"""Real models, converted vs OpenVINO: python benchmarks/real_models.py [NAME|SET ...] [--rounds N] [--fresh N]

Each model is built with random weights (torchvision / transformers, via openvino.convert_model), saved as IR
the way users do (f16-compressed weights), and for the INT8 rows quantized first by nncf.quantize on a few
random calibration samples. The IR runs in OpenVINO CPU (f32 precision hint, 1 thread, 1 stream); the model
onnx-bridge converts from it runs in plain onnxruntime (ORT_ENABLE_ALL, 1 thread): INT8 models in both forms,
`int8="qdq"` (the default) and `int8="exact"`. All runners of a model are timed in the same process,
interleaved call by call in an order shuffled every round; the table gives medians, the ratio onnxruntime /
OpenVINO of the medians, the paired ratio (median over rounds of the two calls' ratio within a round: the
calls of a round run close together, so a burst of other work slows both), the ratio of the fastest calls
(on a loaded machine the fastest call is the one least disturbed) and their geometric means.

Agreement (median over AGREEMENT_INPUTS random inputs of the largest over outputs): relative L2 distance
from OpenVINO CPU's outputs; next to it OpenVINO's own spread on INT8
models, the distance of OpenVINO CPU with its low-precision transformations off (LP_TRANSFORMS_MODE false:
the f32 semantics of the FakeQuantize graph) from OpenVINO CPU's default int8 execution, and the distance of
the converted model from those semantics (two int8 executions each this far from the semantics can be up to
the sum apart from each other). Both OpenVINO executions are f32 approximations too, so the INT8 rows also
give the distance of ours, of OpenVINO CPU and of OpenVINO with LP_TRANSFORMS_MODE off from the FakeQuantize
graph computed in float64 (f64_outputs): the one reference none of them shares. `integer kernels` counts the
integer kernels onnxruntime's graph optimisation made (QLinearConv, QLinearMatMul, MatMulInteger...).

Import: every IR is also converted the way `onnx-bridge convert IR -o OUT` does (the CLI's code, in process,
after one untimed call: start-up excluded), interleaved with OpenVINO's own read_model + save_model of the same
IR (benchmarks/ir_scale.py's helpers), --imports calls each; and --fresh runs of each in a fresh process (wall
time, start-up included: ir_scale's "cli" and "openvino" kinds). Import ratios are paired (median over rounds
of the two calls' ratio within a round).

Sets: "default" (DEFAULT, `make bench`) and "issue" (every model but the smoke test's tiny CNN). The footer
gives the geometric means over all rows of the default forms and per group (f32 CNN, f32 transformer, int8
qdq, int8 exact), each with its slowest row, so no subset hides a slow model.
The numbers depend on the machine and its load: compare ratios of one run, not absolute times across runs.
"""
from __future__ import annotations

import argparse
import collections
import logging
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

#: 1 thread, 1 stream, not pinned to a core (on a shared machine a pinned thread waits for its core)
OV_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1, "NUM_STREAMS": 1,
             "ENABLE_CPU_PINNING": False}
#: issue 23's import target: `onnx-bridge convert` <= this times OpenVINO's read_model + save_model
IMPORT_TARGET = 1.5
INTEGER_KERNELS = ("QLinearConv", "QLinearMatMul", "MatMulInteger", "MatMulIntegerToFloat", "QLinearAdd",
                   "QLinearGlobalAveragePool", "QLinearAveragePool", "QLinearMul", "QLinearSigmoid",
                   "QGemm", "DynamicQuantizeMatMul")


def _vision(factory: str, shape=(1, 3, 224, 224), **kwargs):
    def build():
        import torch

        from tests.helpers.zoo import _seeded, _torch_model, import_torchvision
        torchvision = import_torchvision()
        _seeded()
        namespace, _, name = factory.rpartition(".")
        module = torchvision.models if not namespace else getattr(torchvision.models, namespace)
        net = getattr(module, name)(weights=None, **kwargs)
        _batch_norm_statistics(net, shape)
        return _torch_model(net, (torch.randn(*shape),), ["image"])
    return build


def _batch_norm_statistics(net, shape, batches: int = 2):
    """Batch-norm running statistics from a few random batches: with the initial ones (mean 0, variance 1)
    the activations of a randomly initialised mobilenet_v3 die out (outputs ~1e-9) and INT8 quantizes them
    all to zero, which would measure nothing."""
    import torch

    for module in net.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            module.momentum = None  # a cumulative average
    net.train()
    with torch.no_grad():
        for _ in range(batches):
            net(torch.randn(2, *shape[1:]))
    net.eval()


def _text(config: str, model: str, length: int = 128, vocab: int = 1000, **settings):
    """A transformers encoder/decoder from a local config (random weights), its last_hidden_state the output;
    inputs: `length` token ids and an attention mask of ones."""
    def build():
        import torch

        from tests.helpers.zoo import _Field, _seeded, _torch_model, import_torchvision
        import_torchvision()  # transformers imports torchvision (see tests/helpers/zoo.py)
        import transformers
        _seeded()
        net = getattr(transformers, model)(getattr(transformers, config)(vocab_size=vocab, **settings))
        ids = torch.randint(0, vocab, (1, length))
        mask = torch.ones(1, length, dtype=torch.int64)
        return _torch_model(_Field(net, "last_hidden_state", tokens=True), (ids, mask),
                            ["input_ids", "attention_mask"])
    return build


def _vit(**settings):
    """transformers' ViTModel from a local config, a 224x224 image in, last_hidden_state out."""
    def build():
        import torch

        from tests.helpers.zoo import _Field, _seeded, _torch_model, import_torchvision
        import_torchvision()
        from transformers import ViTConfig, ViTModel
        _seeded()
        net = ViTModel(ViTConfig(image_size=224, patch_size=16, **settings), add_pooling_layer=False)
        return _torch_model(_Field(net, "last_hidden_state"), (torch.randn(1, 3, 224, 224),), ["pixel_values"])
    return build


def _tiny_cnn():
    """A small CNN (the smoke test's model: seconds)."""
    import torch

    from tests.helpers.zoo import _seeded, _torch_model
    _seeded()
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
                              torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                              torch.nn.Flatten(), torch.nn.Linear(16, 10))
    _batch_norm_statistics(net, (1, 3, 32, 32))
    return _torch_model(net, (torch.randn(1, 3, 32, 32),), ["image"])


@dataclass(frozen=True)
class Model:
    build: Callable  # () -> (openvino.Model, feeds)
    family: str      # "cnn" or "transformer": the table's group and nncf's model type
    int8: bool = True  # also an nncf.quantize INT8 row


MODELS = {
    "tiny_cnn": Model(_tiny_cnn, "cnn"),
    "resnet18": Model(_vision("resnet18"), "cnn"),
    "mobilenet_v3_small": Model(_vision("mobilenet_v3_small"), "cnn"),
    "bert_mini": Model(_text("BertConfig", "BertModel", hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                             intermediate_size=1024, max_position_embeddings=128), "transformer"),
    "efficientnet_b0": Model(_vision("efficientnet_b0"), "cnn"),
    "r3d_18": Model(_vision("video.r3d_18", (1, 3, 4, 56, 56)), "cnn"),
    # the rest of the set: more CNNs and transformers users convert
    "resnet50": Model(_vision("resnet50"), "cnn"),
    "mobilenet_v2": Model(_vision("mobilenet_v2"), "cnn"),
    "regnet_y_400mf": Model(_vision("regnet_y_400mf"), "cnn"),
    "shufflenet_v2_x1_0": Model(_vision("shufflenet_v2_x1_0"), "cnn"),
    "googlenet": Model(_vision("googlenet", aux_logits=False, init_weights=True), "cnn"),
    "convnext_tiny": Model(_vision("convnext_tiny"), "cnn"),
    "deit_tiny": Model(_vit(hidden_size=192, num_hidden_layers=12, num_attention_heads=3, intermediate_size=768),
                       "transformer"),
    "distilbert": Model(_text("DistilBertConfig", "DistilBertModel", vocab=30522), "transformer"),  # the base size
    "gpt2_mini": Model(_text("GPT2Config", "GPT2Model", n_embd=256, n_layer=4, n_head=4, n_positions=128,
                             use_cache=False), "transformer"),
}
DEFAULT = ("resnet18", "mobilenet_v3_small", "bert_mini")
#: named groups `--models` / the command line accept beside model names
SETS = {"default": DEFAULT, "issue": tuple(n for n in MODELS if n != "tiny_cnn")}


def _calibration(feeds: dict, count: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(count):
        sample = {}
        for name, value in feeds.items():
            if value.dtype.kind == "f":
                sample[name] = rng.standard_normal(value.shape).astype(value.dtype)
            else:
                sample[name] = value.copy()
        samples.append(sample)
    return samples


def _agreement_inputs(feeds: dict, count: int, seed: int) -> list[dict]:
    """Random inputs for the agreement columns: float inputs drawn as for calibration, integer ones (token
    ids) shuffled along their last axis, so that a model with integer inputs only (BERT) is not measured
    `count` times on the same input."""
    rng = np.random.default_rng(seed + 1000)
    samples = _calibration(feeds, count, seed)
    for sample in samples:
        for name, value in sample.items():
            if value.dtype.kind in "iu":
                sample[name] = rng.permutation(value, axis=-1) if value.ndim else value
    return samples


def quantize(model, feeds: dict, kind: str, samples: int = 4):
    """nncf.quantize(model) on `samples` random inputs (the tokens of a transformer are kept); its progress bars
    go to stderr (stdout is the table's)."""
    import contextlib

    import nncf

    logging.getLogger("nncf").setLevel(logging.ERROR)
    extra = {"model_type": nncf.ModelType.TRANSFORMER} if kind == "transformer" else {}
    with contextlib.redirect_stdout(sys.stderr):
        return nncf.quantize(model, nncf.Dataset(_calibration(feeds, samples, 1)), subset_size=samples, **extra)


def rel_l2(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    norm = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / norm) if norm else float(np.linalg.norm(got - want))


#: random inputs the agreement is measured on (the median is reported: on random-weight networks a value
#: one quantization level apart early on moves the output a lot, input by input)
AGREEMENT_INPUTS = 5


def _distance(got: list, want: list) -> float:
    """Median over inputs of the largest rel L2 over outputs."""
    return float(np.median([max(rel_l2(a, b) for a, b in zip(g, w)) for g, w in zip(got, want)]))


def f64_outputs(exact_model, inputs: list[dict]) -> list[list[np.ndarray]]:
    """The FakeQuantize graph's semantics in float64: the `int8="exact"` form (OpenVINO's reference formula
    operation for operation) with every float32 tensor made float64, in onnxruntime without graph optimisation
    (onnx.reference where onnxruntime has no float64 kernel: Conv). onnxruntime has no float64 Erf: Gelu's erf
    is taken in float32 (one rounding, ~6e-8 relative). The reference both int8 executions and OpenVINO's f32
    one (LP_TRANSFORMS_MODE off) are measured against."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from converters.passes import make_runnable
    from tests.helpers.ir_cases import ort_session

    model = make_runnable(exact_model)
    graph = model.graph

    def widen(tensor):
        if tensor.data_type == TensorProto.FLOAT:
            tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float64), tensor.name))

    for tensor in graph.initializer:
        widen(tensor)
    nodes = []
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.name == "to" and attribute.i == TensorProto.FLOAT:
                attribute.i = TensorProto.DOUBLE
            if attribute.type == onnx.AttributeProto.TENSOR:
                widen(attribute.t)
        if node.op_type == "Erf":
            narrow, result = node.input[0] + "/f32", node.output[0] + "/f32"
            nodes += [helper.make_node("Cast", [node.input[0]], [narrow], to=TensorProto.FLOAT),
                      helper.make_node("Erf", [narrow], [result]),
                      helper.make_node("Cast", [result], [node.output[0]], to=TensorProto.DOUBLE)]
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            value.type.tensor_type.elem_type = TensorProto.DOUBLE
    wide = [{k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in f.items()} for f in inputs]
    try:
        session = ort_session(model, optimize=False)
    except ort.capi.onnxruntime_pybind11_state.NotImplemented:  # no float64 Conv: onnx's numpy reference
        from onnx.reference import ReferenceEvaluator
        evaluator = ReferenceEvaluator(model)
        return [evaluator.run(None, f) for f in wide]
    return [session.run(None, f) for f in wide]


def _fused(optimized: Path) -> str:
    import onnx

    counts = collections.Counter(n.op_type for n in onnx.load(str(optimized), load_external_data=False).graph.node)
    found = [f"{counts[k]} {k}" for k in INTEGER_KERNELS if counts[k]]
    return ", ".join(found) or "-"


def measure(name: str, directory: Path, rounds: int, int8: bool, imports: int = 5, fresh: int = 7) -> list[dict]:
    """Rows of one model: f32 (and its INT8 forms) in onnxruntime vs OpenVINO CPU; the import columns (see
    import_times) on the rows of the forms `onnx-bridge convert` writes by default (f32, int8 qdq)."""
    import openvino as ov

    from converters.openvino_ir import import_ir
    from tests.helpers.ir_cases import ort_session  # (the tests' session: the fusions they check are the ones timed)

    spec = MODELS[name]
    kind = spec.family
    model, feeds = spec.build()
    # static shapes, as deployed (OpenVINO CPU runs a dynamic-shape model through its slower dynamic path)
    model.reshape({port: ov.PartialShape(list(feeds[port.get_any_name()].shape)) for port in model.inputs})
    core = ov.Core()
    variants = [("f32", model)]
    if int8 and spec.int8:
        variants.append(("int8", quantize(model, feeds, kind)))
    rows = []
    for precision, variant in variants:
        xml = directory / f"{name}_{precision}.xml"
        ov.save_model(variant, str(xml))
        saved = core.read_model(str(xml))
        compiled = core.compile_model(saved, "CPU", OV_CONFIG)
        inputs = [feeds] + _agreement_inputs(feeds, AGREEMENT_INPUTS - 1, 2)  # agreement: median over these
        want = [[np.asarray(v) for v in compiled(f).values()] for f in inputs]
        spread, semantics, truth, f64 = None, None, None, {}
        if precision == "int8":
            plain = core.compile_model(saved, "CPU", dict(OV_CONFIG, LP_TRANSFORMS_MODE=False))
            semantics = [[np.asarray(v) for v in plain(f).values()] for f in inputs]
            spread = _distance(semantics, want)
            truth = f64_outputs(import_ir(xml, int8="exact"), inputs)
            f64 = dict(openvino_to_f64=_distance(want, truth), openvino_lp_off_to_f64=_distance(semantics, truth))
        runners = {"openvino": lambda c=compiled: c(feeds)}
        forms = ("qdq", "exact") if precision == "int8" else ("qdq",)
        info = {}
        for form in forms:
            start = time.perf_counter()
            notes: list[str] = []
            onnx_model = import_ir(xml, int8=form, notes=notes)
            seconds = time.perf_counter() - start
            optimized = directory / f"{name}_{precision}_{form}.opt.onnx"
            session = ort_session(onnx_model, optimized)
            got = [session.run(None, f) for f in inputs]
            info[form] = dict(agreement=_distance(got, want), fused=_fused(optimized),
                              to_semantics=None if semantics is None else _distance(got, semantics),
                              to_f64=None if truth is None else _distance(got, truth),
                              import_s=seconds, kept_exact=sum("kept in the exact form" in n for n in notes))
            runners[form] = lambda s=session: s.run(None, feeds)
        times = {key: [] for key in runners}
        for run in runners.values():  # warm-up
            run()
            run()
        # the order shuffled every round: in a fixed order the runner right after OpenVINO's measured
        # 1-3% slower than an identical model one slot later
        order = np.random.default_rng(0)
        for _ in range(rounds):
            for key in order.permutation(list(runners)):
                start = time.perf_counter()
                runners[key]()
                times[key].append(time.perf_counter() - start)
        ov_ms = 1000 * float(np.median(times["openvino"]))
        for form in forms:
            ms = 1000 * float(np.median(times[form]))
            label = "f32" if precision == "f32" else f"int8 {form}"
            paired = float(np.median(np.array(times[form]) / np.array(times["openvino"])))
            rows.append(dict(model=name, family=kind, form=label, openvino_ms=ov_ms, onnxruntime_ms=ms,
                             ratio=ms / ov_ms, paired_ratio=paired, fastest_ratio=min(times[form]) / min(times["openvino"]),
                             spread=spread, **f64, **info[form]))
        rows[-len(forms)].update(import_times(xml, directory / "import", imports, fresh))
        print(f"{name} {precision}: done", file=sys.stderr, flush=True)
    return rows


def import_times(xml: Path, directory: Path, runs: int, fresh: int) -> dict:
    """`onnx-bridge convert` of the IR (the import and the ONNX write, its default options) vs OpenVINO's own
    read_model + save_model of it (benchmarks/ir_scale.py's two helpers), interleaved: `runs` calls in this
    process after one untimed call each (start-up excluded), and `fresh` runs each in a fresh process (wall
    time, start-up included; ir_scale.run's "cli" and "openvino" kinds; 0: not measured) with their peak
    memory (the rise of the resident set after the module imports, ir_scale's "peak"). Each round runs both
    kinds back to back, the order alternating between rounds; the ratios are paired: the median over rounds
    of the two runs' ratio (a fresh process's wall time moves by +-20% from run to run with the machine's
    load, and a burst of other work slows both runs of a round alike)."""
    import openvino as ov

    from benchmarks import ir_scale

    directory.mkdir(exist_ok=True)
    calls = {"openvino": lambda: ir_scale.openvino_read_save(xml, directory / "out.xml"),
             "convert": lambda: ir_scale.cli_convert(xml, directory / "out.onnx")}
    times = {key: [] for key in calls}
    for call in calls.values():
        call()
    for _ in range(runs):
        for key, call in calls.items():
            start = time.perf_counter()
            call()
            times[key].append(time.perf_counter() - start)
    fresh_runs = {"openvino": [], "cli": []}
    for round_ in range(fresh):
        for kind in (("openvino", "cli") if round_ % 2 == 0 else ("cli", "openvino")):
            fresh_runs[kind].append(ir_scale.run(kind, xml, directory))
    for leftover in directory.iterdir():
        leftover.unlink()
    median = lambda values: float(np.median(values)) if values else None  # noqa: E731
    return dict(ops=len(ov.Core().read_model(str(xml)).get_ordered_ops()),
                weights_mb=xml.with_suffix(".bin").stat().st_size / 1e6,
                openvino_save_ms=1000 * median(times["openvino"]), convert_ms=1000 * median(times["convert"]),
                convert_paired=median([c / o for c, o in zip(times["convert"], times["openvino"])]),
                fresh_runs=fresh,
                fresh_paired=median([c["wall"] / o["wall"]
                                     for c, o in zip(fresh_runs["cli"], fresh_runs["openvino"])]),
                **{f"fresh_{key}_{measure}": median([r[field] for r in fresh_runs[kind]])
                   for key, kind in (("openvino", "openvino"), ("convert", "cli"))
                   for measure, field in (("s", "wall"), ("peak", "peak"))})


def _geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


#: the footer's groups: label, which rows
GROUPS = (("all rows, the default forms (f32, int8 qdq)", lambda r: r["form"] != "int8 exact"),
          ("f32 CNN", lambda r: r["form"] == "f32" and r["family"] == "cnn"),
          ("f32 transformer", lambda r: r["form"] == "f32" and r["family"] == "transformer"),
          ("int8 qdq (the default INT8 form)", lambda r: r["form"] == "int8 qdq"),
          ("int8 exact (`--int8 exact`)", lambda r: r["form"] == "int8 exact"))


def table(rows: list[dict]) -> str:
    lines = ["| model | form | OpenVINO ms | onnxruntime ms | ratio | paired ratio | ratio of fastest calls | "
             "rel L2 vs OpenVINO | "
             "OpenVINO's own int8 spread | rel L2 vs FQ semantics | rel L2 vs f64 semantics: ours / OpenVINO / "
             "OpenVINO LP off | integer kernels (onnxruntime) | FQ kept exact |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    number = lambda v: "-" if v is None else f"{v:.2e}"  # noqa: E731
    for r in rows:
        lines.append(f"| {r['model']} | {r['form']} | {r['openvino_ms']:.2f} | {r['onnxruntime_ms']:.2f} | "
                     f"{r['ratio']:.2f}x | {r['paired_ratio']:.2f}x | {r['fastest_ratio']:.2f}x | "
                     f"{r['agreement']:.2e} | {number(r['spread'])} | "
                     f"{number(r['to_semantics'])} | {_f64_cell(r)} | {r['fused']} | "
                     f"{r['kept_exact'] if r['form'] != 'f32' else '-'} |")
    for label, pick in GROUPS:
        chosen = [r for r in rows if pick(r)]
        if chosen:
            mean = {key: _geomean(r[key] for r in chosen) for key in ("ratio", "paired_ratio", "fastest_ratio")}
            slowest = max(chosen, key=lambda r: r["paired_ratio"])
            lines.append(f"\ngeometric mean, {label}: {mean['ratio']:.2f}x OpenVINO's time (paired "
                         f"{mean['paired_ratio']:.2f}x, fastest calls {mean['fastest_ratio']:.2f}x; "
                         f"{len(chosen)} rows; slowest {slowest['model']} {slowest['paired_ratio']:.2f}x paired)")
    imported = [r for r in rows if r.get("convert_ms") is not None]
    if imported:
        lines += ["", "| IR | ops | .bin MB | OpenVINO read+save ms | onnx-bridge convert ms | paired ratio | "
                  "fresh process: OpenVINO read+save s | onnx-bridge convert s | paired ratio | "
                  "peak memory / .bin: OpenVINO / convert |", "|---|" + "---|" * 9]
        for r in imported:
            bin_bytes = 1e6 * r["weights_mb"]
            fresh = (f"{r['fresh_openvino_s']:.2f} | {r['fresh_convert_s']:.2f} | {r['fresh_paired']:.2f}x | "
                     f"{r['fresh_openvino_peak'] / bin_bytes:.2f}x / {r['fresh_convert_peak'] / bin_bytes:.2f}x"
                     if r["fresh_convert_s"] else "- | - | - | -")
            lines.append(f"| {r['model']} {r['form'].split()[0]} | {r['ops']} | {r['weights_mb']:.1f} | "
                         f"{r['openvino_save_ms']:.1f} | {r['convert_ms']:.1f} | {r['convert_paired']:.2f}x | "
                         f"{fresh} |")
        for label, key in (("in process", "convert_paired"), ("fresh process", "fresh_paired")):
            ratios = {r["model"] + " " + r["form"].split()[0]: r[key] for r in imported if r[key]}
            if ratios:
                slowest = max(ratios, key=ratios.get)
                over = sorted((name for name, ratio in ratios.items() if ratio > IMPORT_TARGET),
                              key=ratios.get, reverse=True)
                runs = f", {imported[0]['fresh_runs']} runs each" if key == "fresh_paired" else ""
                lines.append(f"\nimport, geometric mean {label}: {_geomean(ratios.values()):.2f}x OpenVINO's "
                             f"read+save (paired ratios, {len(ratios)} IRs{runs}; slowest {slowest} "
                             f"{ratios[slowest]:.2f}x; above {IMPORT_TARGET}x: "
                             f"{', '.join(f'{n} {ratios[n]:.2f}x' for n in over) or 'none'})")
    lines.append(f"\n{machine_line()}")
    return "\n".join(lines) + "\n"


def machine_line() -> str:
    """Where the table was measured: INT8 speed and agreement depend on the CPU's vector extensions."""
    from benchmarks.run import machine_info

    info = machine_info()
    versions = info["versions"]
    return (f"machine: {info['cpu']}, {info['cores']} cores, {info['vector_extensions']}; onnxruntime "
            f"{versions['onnxruntime']}, OpenVINO {versions['openvino']}")


def _f64_cell(row: dict) -> str:
    if row.get("to_f64") is None:
        return "-"
    return f"{row['to_f64']:.2e} / {row['openvino_to_f64']:.2e} / {row['openvino_lp_off_to_f64']:.2e}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"models or sets (default: {', '.join(DEFAULT)}; sets: "
                        f"{', '.join(SETS)}; models: {', '.join(MODELS)})")
    parser.add_argument("--rounds", type=int, default=20, help="timed calls per runner (interleaved)")
    parser.add_argument("--no-int8", action="store_true", help="f32 rows only")
    parser.add_argument("--imports", type=int, default=5,
                        help="timed in-process conversions per IR (and as many OpenVINO read+saves)")
    parser.add_argument("--fresh", type=int, default=7,
                        help="fresh-process conversions per IR (and as many OpenVINO read+saves; 0: none)")
    args = parser.parse_args(argv)
    unknown = unknown_models(args.names)
    if unknown:
        parser.error(unknown)
    print(table(run(args.names, args.rounds, not args.no_int8, args.imports, args.fresh)), end="")
    return 0


def models_of(names) -> list[str]:
    """The models `names` stand for (model names and set names; none: DEFAULT), each once, in order."""
    chosen = []
    for name in names or DEFAULT:
        for model in SETS.get(name, (name,)):
            if model not in chosen:
                chosen.append(model)
    return chosen


def unknown_models(names) -> str | None:
    """The error message for names neither in MODELS nor in SETS, or None."""
    unknown = [n for n in names if n not in MODELS and n not in SETS]
    if unknown:
        return (f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)} "
                f"or a set: {', '.join(SETS)}")
    return None


def run(names=(), rounds: int = 20, int8: bool = True, imports: int = 5, fresh: int = 7) -> list[dict]:
    """The rows of `names` (models or sets; default DEFAULT), measured one model after the other."""
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for name in models_of(names):
            rows += measure(name, Path(directory), rounds, int8, imports, fresh)
    return rows


if __name__ == "__main__":
    sys.exit(main())
