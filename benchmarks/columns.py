"""The table's columns: ways of running a case. Each prepare() returns a Runner (a zero-argument callable
doing one inference, plus what is needed to check its result) or raises NotApplicable with the reason."""
from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnxruntime as ort

import custom_ops
import onnx_bridge
from onnx_bridge.config import DOMAIN

from . import models
from .options import COLUMN_KEYS
from .models import NotApplicable

OPENVINO_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
OPENVINO_UNIQUE_PROBE = 20_000  # elements (rows) of the prefix OpenVINO's Unique is timed on


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
    for module in ("onnx_bridge.session", "custom_ops._ort", "converters", "openvino", "torch"):
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
    stock_ops.register(case.op, inputs["data"].dtype)
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
    from openvino import opset3, opset4, opset10, opset12

    def parameter(name):
        return opset12.parameter(list(inputs[name].shape), ov.Type(inputs[name].dtype), name=name)

    def constant(name):
        return opset12.constant(inputs[name])

    a = case.attributes
    if case.op == "ScatterElementsUpdate":
        params = [parameter(n) for n in ("data", "indices", "updates")]
        node = opset12.scatter_elements_update(*params, constant("axis"), a.get("reduction", "none"),
                                               bool(a.get("use_init_val", 1)))
    elif case.op == "ScatterUpdate":
        params = [parameter(n) for n in ("data", "indices", "updates")]
        node = opset3.scatter_update(*params, constant("axis"))
    elif case.op == "ReduceL2":
        params = [parameter("data")]
        node = opset4.reduce_l2(params[0], constant("axes"), bool(a.get("keep_dims", 0)))
    else:
        params = [parameter("data")]
        axis = constant("axis") if "axis" in inputs else None
        node = opset10.unique(params[0], axis, bool(a.get("sorted", 1)), "i64", "i64")
    compiled = ov.Core().compile_model(ov.Model(node.outputs(), params), "CPU", OPENVINO_CONFIG)
    request = compiled.create_infer_request()
    arrays = [inputs[p.get_friendly_name()] for p in params]
    outputs = compiled.outputs

    def run():
        result = request.infer(arrays, share_inputs=True)
        return [result[o] for o in outputs]
    if case.op == "Unique" and len(inputs["data"]) > OPENVINO_UNIQUE_PROBE:
        # The CPU plugin's Unique is quadratic in the number of distinct values (10k: 0.24 s, 30k: 1.8 s,
        # 100k: 12 s measured): at these sizes it would run for hours. Time it on a prefix instead.
        probe = {**inputs, "data": inputs["data"][:OPENVINO_UNIQUE_PROBE]}
        probe_runner = openvino(case, probe)
        probe_runner.run()
        seconds = min(_timed(probe_runner.run) for _ in range(2))
        raise NotApplicable(f"not run: the CPU plugin's Unique is quadratic in distinct values; on the "
                            f"first {OPENVINO_UNIQUE_PROBE} {'rows' if 'axis' in inputs else 'elements'} "
                            f"it took {seconds:.2f} s")
    return Runner(run, keep=[compiled, request, arrays])


def _timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def torch_column(case, inputs) -> Runner:
    if not _has("torch"):
        raise NotApplicable("torch is not installed")
    import torch

    t = {k: torch.from_numpy(v) for k, v in inputs.items() if k not in models.CONSTANT_PORTS}
    a = case.attributes
    if case.op == "ScatterElementsUpdate":
        axis, reduction = int(inputs["axis"]), a.get("reduction", "none")
        data, indices, updates = t["data"], t["indices"], t["updates"]
        if reduction == "none":
            return Runner(lambda: [torch.scatter(data, axis, indices, updates).numpy()], note="scatter",
                          keep=[t])
        reduce = {"sum": "sum", "prod": "prod", "min": "amin", "max": "amax", "mean": "mean"}[reduction]
        include_self = bool(a.get("use_init_val", 1))
        return Runner(lambda: [torch.scatter_reduce(data, axis, indices, updates, reduce,
                                                    include_self=include_self).numpy()],
                      note=f"scatter_reduce {reduce}", keep=[t])
    if case.op == "ScatterUpdate":
        axis = int(inputs["axis"])
        shape = inputs["data"].shape[:axis] + (-1,) + inputs["data"].shape[axis + 1:]
        flat_indices, updates = t["indices"].reshape(-1), t["updates"].reshape(shape)
        return Runner(lambda: [torch.index_copy(t["data"], axis, flat_indices, updates).numpy()],
                      note="index_copy", keep=[t, flat_indices, updates])
    if case.op == "ReduceL2":
        dims = tuple(int(x) for x in inputs["axes"])
        return Runner(lambda: [torch.linalg.vector_norm(t["data"], 2, dim=dims).numpy()],
                      note="linalg.vector_norm", keep=[t])
    dim = int(inputs["axis"]) if "axis" in inputs else None

    def unique():
        values, inverse, counts = torch.unique(t["data"], sorted=True, return_inverse=True,
                                               return_counts=True, dim=dim)
        return [values.numpy(), None, inverse.numpy().reshape(-1), counts.numpy()]
    return Runner(unique, note="unique (no first indices)", keep=[t])


def _along_axis(indices: np.ndarray, axis: int) -> tuple:
    """Fancy index addressing data at `indices` along axis, own position elsewhere."""
    grids = list(np.ogrid[tuple(slice(n) for n in indices.shape)])
    grids[axis] = indices
    return tuple(grids)


def numpy_column(case, inputs) -> Runner:
    a = case.attributes
    data = inputs["data"]
    if case.op == "ScatterElementsUpdate":
        reduction, axis = a.get("reduction", "none"), int(inputs["axis"])
        if reduction == "mean":
            raise NotApplicable("no numpy idiom for a scatter mean")
        ufunc = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}.get(reduction)
        from custom_ops.ops.scatter.scatter_elements_update import neutral_value
        neutral = neutral_value(reduction, data.dtype) if ufunc and not a.get("use_init_val", 1) else None

        def run():
            out = data.copy()
            index = _along_axis(inputs["indices"], axis)
            if ufunc is None:
                out[index] = inputs["updates"]
            else:
                if neutral is not None:
                    out[index] = neutral
                ufunc.at(out, index, inputs["updates"])
            return [out]
        return Runner(run, note="copy + fancy index" if ufunc is None else f"copy + {ufunc.__name__}.at")
    if case.op == "ScatterUpdate":
        axis = int(inputs["axis"])

        def run():
            out = data.copy()
            out[(slice(None),) * axis + (inputs["indices"],)] = inputs["updates"]
            return [out]
        return Runner(run, note="copy + fancy index")
    if case.op == "ReduceL2":
        axes = tuple(int(x) for x in inputs["axes"])
        return Runner(lambda: [np.linalg.norm(data, axis=axes)], note="linalg.norm")
    axis = int(inputs["axis"]) if "axis" in inputs else None

    def run():
        values, first, inverse, counts = np.unique(data, return_index=True, return_inverse=True,
                                                   return_counts=True, axis=axis)
        return [values, first, inverse.reshape(-1), counts]
    return Runner(run, note="np.unique (index, inverse, counts)")


def kernel(case, inputs) -> Runner:
    spec = custom_ops.resolve(case.op, 12)
    args = [inputs[p] for p in models.PORTS[case.op][0] if p in inputs]
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
