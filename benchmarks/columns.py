"""The table's columns: ways of running a case. Each prepare() returns a Runner (a zero-argument callable
doing one inference, plus what is needed to check its result) or raises NotApplicable with the reason."""
from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field
from typing import Callable

import onnxruntime as ort

import custom_ops
import onnx_bridge
from onnx_bridge.config import DOMAIN

from . import models
from .options import COLUMN_KEYS
from .models import NotApplicable

OPENVINO_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


@dataclass
class Runner:
    run: Callable[[], object]                    # one timed inference
    to_contract: Callable = lambda out: out      # its result -> the dialect op's outputs (None: not given)
    note: str = ""
    keep: list = field(default_factory=list)     # objects that must outlive the timing (sessions, tensors)


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    prepare: Callable  # (case, inputs) -> Runner


def preload() -> None:
    """Import everything the columns use (then gc.freeze() keeps collections between timings cheap)."""
    import importlib
    for module in ("onnx_bridge.session", "custom_ops.pyops", "converters", "openvino", "torch"):
        if _has(module.split(".")[0]):
            importlib.import_module(module)


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _ort_session(model, library: bool = False) -> ort.InferenceSession:
    options = ort.SessionOptions()
    if library:
        options.register_custom_ops_library(onnx_bridge.get_library_path())
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _has_dialect_nodes(model) -> bool:
    return any(node.domain == DOMAIN for node in model.graph.node)


# --- onnxruntime ---------------------------------------------------------------------------------------

def bridge(case, inputs, **session_args) -> Runner:
    model, feeds = models.dialect_model(case, inputs)
    session = onnx_bridge.InferenceSession(model, **session_args)
    native = not _has_dialect_nodes(session.prepared_model)
    return Runner(lambda: session.run(None, feeds), note="lowered" if native else "", keep=[session])


def bridge_pyops(case, inputs) -> Runner:
    return bridge(case, inputs, lower=False)


def stock(case, inputs) -> Runner:
    if not case.stock:
        raise NotApplicable("not run: tolist() marshaling costs up to seconds per call, so it is timed on "
                            "representative rows only")
    from . import stock as stock_ops
    stock_ops.register(case.op, models.ordered_inputs(case, inputs)[0].dtype)
    model, feeds = models.stock_model(case, inputs)
    session = _ort_session(model, library=True)
    return Runner(lambda: session.run(None, feeds), keep=[session])


def lowered(case, inputs) -> Runner:
    try:
        from converters import convert
    except ImportError:
        raise NotApplicable("converters.convert is not available") from None
    model, feeds = models.dialect_model(case, inputs)
    result = convert(model, to="standard")
    standard = result[0] if isinstance(result, tuple) else result
    if _has_dialect_nodes(standard):
        raise NotApplicable("no exact standard lowering (kept as the dialect op)")
    session = _ort_session(standard)
    ops = sorted({n.op_type for n in standard.graph.node} - {"Constant"})
    return Runner(lambda: session.run(None, feeds), note=" + ".join(ops), keep=[session])


def native(case, inputs) -> Runner:
    model, feeds, label, to_contract = models.native_model(case, inputs)
    session = _ort_session(model)
    return Runner(lambda: session.run(None, feeds), to_contract, note=label, keep=[session, feeds])


# --- other runtimes ------------------------------------------------------------------------------------

def openvino(case, inputs) -> Runner:
    if not _has("openvino"):
        raise NotApplicable("openvino is not installed")
    import openvino as ov

    unit = custom_ops.unit_of(case.op)
    limit = unit.benchmark.openvino_rows
    first = unit.newest.inputs[0].name
    if limit is not None and len(inputs[first]) > limit:
        probe_runner = openvino(case, {**inputs, first: inputs[first][:limit]})
        probe_runner.run()
        seconds = min(_timed(probe_runner.run) for _ in range(2))
        raise NotApplicable(f"not run: too slow on the CPU plugin at this size (its benchmark piece's limit); on "
                            f"the first {limit} {'rows' if inputs[first].ndim > 1 else 'elements'} it took "
                            f"{seconds:.2f} s")
    node, parameters = models.openvino_node(case, inputs)
    compiled = ov.Core().compile_model(ov.Model(node.outputs(), parameters), "CPU", OPENVINO_CONFIG)
    request = compiled.create_infer_request()
    arrays = [inputs[p.get_friendly_name()] for p in parameters]
    outputs = compiled.outputs

    def run():
        result = request.infer(arrays, share_inputs=True)
        return [result[o] for o in outputs]
    return Runner(run, keep=[compiled, request, arrays])


def _timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _counterpart(name: str, runtime: str):
    """A column running the unit's benchmark counterpart `name` (torch, numpy)."""
    def prepare(case, inputs) -> Runner:
        if not _has(runtime):
            raise NotApplicable(f"{runtime} is not installed")
        build = getattr(custom_ops.unit_of(case.op).benchmark, name)
        if build is None:
            raise NotApplicable(f"no {runtime} counterpart")
        try:
            run, note = build(case, inputs)
        except NotImplementedError as reason:
            raise NotApplicable(str(reason)) from None
        return Runner(run, note=note)
    return prepare


torch_column = _counterpart("torch", "torch")
numpy_column = _counterpart("numpy", "numpy")


def kernel(case, inputs) -> Runner:
    spec = custom_ops.resolve(case.op, 12)
    args = models.ordered_inputs(case, inputs)
    return Runner(lambda: spec.kernel(*args, **case.attributes))


COLUMNS = (
    Column("bridge", "bridge (default)", bridge),
    Column("bridge_pyop", "bridge PyOps (lower=False)", bridge_pyops),
    Column("stock", "stock marshaling", stock),
    Column("lowered", "lowered model (ORT)", lowered),
    Column("native", "native ORT op", native),
    Column("openvino", "OpenVINO CPU", openvino),
    Column("torch", "torch", torch_column),
    Column("numpy", "numpy", numpy_column),
    Column("kernel", "kernel (numpy)", kernel),
)
assert tuple(c.key for c in COLUMNS) == COLUMN_KEYS
