"""Whole-model conformance: an OpenVINO model and its ONNX conversion on the same inputs (`onnx-bridge
compare`, `onnx_bridge.compare`).

1. Run OpenVINO CPU (INFERENCE_PRECISION_HINT f32) on the IR and onnx_bridge.InferenceSession on the
   converted model (imported here unless given) on the same inputs (an .npz, or random, seeded, shaped from
   the model: `onnx-bridge run`'s rules); compare every output with onnx_bridge.comparison.
2. Explain a difference without a human:
   - ties: an output downstream of a TopK/NMS-like op is compared again order-insensitively; agreeing so,
     it is tie-dependent (the op leaves the order of equal scores open);
   - INT8 (FakeQuantize in the IR) and compressed weights (u8/i8/u4/i4/... Constants decompressed by
     Convert): OpenVINO CPU runs it again without its approximations (LP_TRANSFORMS_MODE false:
     FakeQuantize in f32 as its specification says; DYNAMIC_QUANTIZATION_GROUP_SIZE 0: activations of
     compressed-weight MatMuls not quantized); the converted model within OpenVINO's own spread is explained;
   - otherwise the first diverging node is localised (`localise.py`) and its inputs re-run through the
     node's OpenVINO reference implementation (the specification): whichever side matches it follows the
     specification; known deviations (compare_explain.DEVIATIONS, onnx_bridge.divergences) give the reason.
3. Verdict and exit code: agree (0), explained (EXIT_EXPLAINED), unexplained (EXIT_DIFFERENT).
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import onnx

from .comparison import Tolerance, default_tolerance, is_float, measure
from .errors import BridgeError, ModelError

EXIT_AGREE, EXIT_DIFFERENT, EXIT_EXPLAINED = 0, 1, 9
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
#: OpenVINO CPU without low-precision (int8) transformations: FakeQuantize executed in f32
NO_LPT = {"LP_TRANSFORMS_MODE": False}
#: OpenVINO CPU without dynamic quantization of the activations of MatMuls with compressed weights
NO_DYNAMIC_QUANTIZATION = {"DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}
#: element types of compressed weights (Constants decompressed by a Convert)
COMPRESSED = {"u8", "i8", "u4", "i4", "u2", "u3", "u6", "nf4", "f4e2m1", "f8e4m3", "f8e5m2"}
#: standard OpenVINO ops (not dialect units) whose output order among equal scores is open (stable=false
#: TopK, NMS, detection outputs); the dialect ops say so in their unit (`open_order`), see tie_ops()
STANDARD_TIE_OPS = frozenset({"TopK"})
#: ops larger models are reported with progress lines
PROGRESS_OPS = 300


def tie_ops() -> frozenset:
    """OpenVINO op types whose output order among equal scores is open: the standard ones and the units
    that declare it."""
    from custom_ops import units
    return STANDARD_TIE_OPS | {unit.openvino.type_name for unit in units() if unit.open_order}


@dataclass
class Explanation:
    kind: str  # "tie-order", "int8-spread", "deviation", "reference"
    text: str
    follows_spec: str = "unknown"  # "converted", "openvino-cpu", "both", "unknown"
    id: str = ""
    outputs: list = field(default_factory=list)


@dataclass
class Localisation:
    """The first OpenVINO op whose output differs while its inputs agree."""

    node: str
    op: str
    attributes: dict
    onnx_value: str
    onnx_nodes: list  # "name (OpType attr=value, ...)" of the ONNX nodes the import emitted for it
    difference: dict  # OutputMetrics.to_json() at the node's output
    inputs_agree: bool
    probes: int
    reference: str = ""  # which side the node's reference implementation agrees with

    def text(self) -> str:
        attributes = ", ".join(f"{k}={v}" for k, v in self.attributes.items())
        lines = [f"first diverging node: {self.node!r} ({self.op}{', ' + attributes if attributes else ''})",
                 f"  output -> ONNX value {self.onnx_value!r}: {self.difference['summary']}"]
        if not self.inputs_agree:
            lines.append("  (its inputs could not all be checked: none of them is mapped)")
        lines += [f"  ONNX: {n}" for n in self.onnx_nodes[:8]]
        if self.reference:
            lines.append(f"  OpenVINO reference implementation: {self.reference}")
        lines.append(f"  ({self.probes} probe runs)")
        return "\n".join(lines)


@dataclass
class CompareReport:
    model: str
    converted: str
    inputs: str
    outputs: list  # OutputMetrics
    verdict: str = "agree"  # "agree", "explained", "differ"
    explanations: list = field(default_factory=list)
    localisation: Localisation | None = None
    spread: list = field(default_factory=list)  # OutputMetrics: OpenVINO int8 vs f32 (INT8 models)
    tie_dependent: list = field(default_factory=list)  # output names
    notes: list = field(default_factory=list)  # what could not be checked, and why
    seconds: dict = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return {"agree": EXIT_AGREE, "explained": EXIT_EXPLAINED}.get(self.verdict, EXIT_DIFFERENT)

    def to_json(self) -> dict:
        return {"model": self.model, "converted": self.converted, "inputs": self.inputs,
                "verdict": self.verdict, "exit_code": self.exit_code,
                "outputs": [dict(m.to_json(), summary=m.summary()) for m in self.outputs],
                "explanations": [asdict(e) for e in self.explanations],
                "localisation": asdict(self.localisation) if self.localisation else None,
                "spread": [dict(m.to_json(), summary=m.summary()) for m in self.spread],
                "tie_dependent": self.tie_dependent, "notes": self.notes,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()}}

    def text(self) -> str:
        lines = [f"compare {self.model} (OpenVINO CPU, f32) with {self.converted} (onnx_bridge), "
                 f"inputs {self.inputs}"]
        for metrics in self.outputs:
            mark = "ok  " if metrics.agree else "DIFF"
            lines.append(f"  {mark} {metrics.summary()}")
        for metrics in self.spread:
            lines.append(f"  OpenVINO int8 vs f32 spread: {metrics.summary()}")
        if self.localisation:
            lines.append(self.localisation.text())
        for explanation in self.explanations:
            follows = f" [follows the specification: {explanation.follows_spec}]" \
                if explanation.follows_spec != "unknown" else ""
            lines.append(f"explained ({explanation.kind}{' ' + explanation.id if explanation.id else ''}): "
                         f"{explanation.text}{follows}")
        lines += [f"note: {note}" for note in self.notes]
        lines.append({"agree": "verdict: agree",
                      "explained": "verdict: differences, all explained",
                      "differ": "verdict: UNEXPLAINED differences"}[self.verdict])
        return "\n".join(lines)


class _Say:
    def __init__(self, enabled: bool):
        self.enabled, self.start = enabled, time.monotonic()

    def __call__(self, text: str) -> None:
        if self.enabled:
            print(f"compare: {text} ({time.monotonic() - self.start:.1f} s)", file=sys.stderr, flush=True)


def _openvino():
    from converters.openvino_ir import openvino
    return openvino()


def read_openvino(model):
    """openvino.Model of an IR path (or the model itself), with clear errors."""
    ov = _openvino()
    if isinstance(model, ov.Model):
        return model, f"openvino.Model {model.get_friendly_name()!r}"
    path = Path(model)
    if not path.is_file():
        raise ModelError(f"OpenVINO IR not found: {path}")
    try:
        return ov.Core().read_model(str(path)), str(path)
    except Exception as exc:  # OpenVINO's reader raises RuntimeError subclasses with its own text
        raise ModelError(f"OpenVINO cannot read {path}: {exc}") from None


def run_openvino(ov_model, feeds: list, config=CONFIG) -> list[np.ndarray]:
    ov = _openvino()
    compiled = ov.Core().compile_model(ov_model, "CPU", config)
    # ONNX strings (object arrays of str) travel as numpy str and come back as object arrays
    result = compiled([np.asarray(f, dtype=str) if np.asarray(f).dtype == object else f for f in feeds])
    return [np.asarray(result[o]).astype(object) if np.asarray(result[o]).dtype.kind == "U" else np.asarray(result[o])
            for o in compiled.outputs]


def compare(model, onnx_model=None, *, inputs=None, seed: int = 0, dim_size: int | None = None,
            dims: dict | None = None, tolerance: Tolerance | None = None, localise: bool = True,
            progress: bool | None = None) -> CompareReport:
    """Compare OpenVINO CPU on `model` (IR path or openvino.Model) with onnx_bridge.InferenceSession on its
    conversion (`onnx_model`: path/proto; None: imported now). inputs: .npz path or {name: array} (None:
    random from `seed`, symbolic dims `dim_size` / `dims` by name). tolerance: for every float output
    (None: comparison.TOLERANCES by type). progress: lines on stderr (None: for models over PROGRESS_OPS ops)."""
    from converters.model_io import load_model
    from converters.openvino_ir import import_ir

    from .commands.run import DEFAULT_DIM_SIZE, random_inputs, read_inputs

    clock = {}
    start = time.monotonic()
    ov_model, source = read_openvino(model)
    say = _Say(progress if progress is not None else len(ov_model.get_ordered_ops()) > PROGRESS_OPS)
    if onnx_model is None:
        say("importing")
        converted, converted_name = import_ir(ov_model), "its import"
    else:
        converted = load_model(onnx_model)
        converted_name = str(onnx_model) if isinstance(onnx_model, (str, Path)) else "the given ONNX model"
    clock["import"] = time.monotonic() - start
    if inputs is None:
        feeds = random_inputs(converted, seed=seed, dim_size=dim_size or DEFAULT_DIM_SIZE, dims=dims)
        origin = f"random (seed {seed})"
    elif isinstance(inputs, dict):
        feeds, origin = {k: np.asarray(v) for k, v in inputs.items()}, "given arrays"
    else:
        feeds, origin = read_inputs(converted, Path(inputs)), str(inputs)
    runner = _Runner(ov_model, converted, feeds, say)
    say("running OpenVINO CPU and the converted model")
    want, got = runner.run()
    clock["run"] = time.monotonic() - start - clock["import"]
    if len(got) != len(want):
        raise ModelError(f"the converted model has {len(got)} outputs, the OpenVINO model {len(want)}")
    names = runner.output_names
    report = CompareReport(source, converted_name, origin, [])
    report.outputs = [measure(w, g, name, _tolerance(tolerance, w)) for name, w, g in zip(names, want, got)]
    if all(m.agree for m in report.outputs):
        report.seconds = {**clock, "total": time.monotonic() - start}
        return report

    from . import compare_explain
    pending = {i for i, m in enumerate(report.outputs) if not m.agree}
    pending -= compare_explain.ties(report, runner, want, got, tolerance, pending)
    if pending:
        pending -= compare_explain.approximation_spread(report, runner, want, got, tolerance, pending)
    if pending and localise:
        pending -= _localise(report, runner, tolerance, pending, say)
    report.verdict = "differ" if pending else "explained"
    report.seconds = {**clock, "total": time.monotonic() - start}
    return report


def _localise(report, runner, tolerance, pending: set, say) -> set:
    """Localise the first differing output's divergence; the outputs it explains (those downstream of an
    explained node). A probe OpenVINO or onnxruntime cannot run is reported in report.notes."""
    from . import compare_explain
    from .localise import _ancestors, localise

    say("localising the first diverging node")
    first = min(pending)
    try:
        report.localisation = localise(runner, first, tolerance, say)
        if report.localisation is None or not compare_explain.at_node(report, runner, tolerance):
            return set()
    except _probe_errors() as error:  # OpenVINO / onnxruntime refused a probe model
        report.notes.append(f"localisation stopped: {type(error).__name__}: {str(error).splitlines()[0][:200]}")
        return set()
    node = next(op for op in runner.ov_model.get_ordered_ops()
                if op.get_friendly_name() == report.localisation.node)
    results = runner.ov_model.get_results()
    return {index for index in pending if index == first
            or node.get_name() in _ancestors(results[runner.ov_outputs[index]])}


def _probe_errors() -> tuple:
    """What OpenVINO (RuntimeError subclasses), onnxruntime (its own Exception subclasses) and the bridge
    raise for a model they cannot compile or run."""
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_errors

    return (RuntimeError, BridgeError, ort_errors.Fail, ort_errors.InvalidGraph, ort_errors.InvalidArgument,
            ort_errors.NotImplemented, ort_errors.RuntimeException)


def _tolerance(tolerance, want) -> Tolerance:
    return default_tolerance(np.asarray(want).dtype) if tolerance is None or not is_float(
        np.asarray(want).dtype) else tolerance


class _Runner:
    """Runs both sides, with extra outputs exposed on request (probes)."""

    def __init__(self, ov_model, converted: onnx.ModelProto, feeds: dict, say):
        from converters.openvino_ir import NAMES_KEY

        self.ov_model, self.converted, self.say = ov_model, converted, say
        initialized = {t.name for t in converted.graph.initializer}
        self.input_names = [i.name for i in converted.graph.input if i.name not in initialized]
        missing = [n for n in self.input_names if n not in feeds]
        if missing:
            raise ModelError(f"inputs missing: {', '.join(missing)}")
        self.feeds = {n: feeds[n] for n in self.input_names}
        if len(self.input_names) != len(ov_model.get_parameters()):
            raise ModelError(f"the converted model takes {len(self.input_names)} inputs, the OpenVINO model "
                             f"{len(ov_model.get_parameters())}")
        props = {p.key: p.value for p in converted.metadata_props}
        names = json.loads(props[NAMES_KEY]) if NAMES_KEY in props else _same_names(ov_model, converted)
        computed = {output for node in converted.graph.node for output in node.output}
        self.names = {key: value for key, value in names.items() if value in computed}
        self.output_names = [o.name for o in converted.graph.output]
        # OpenVINO parameters and results matched to ONNX inputs and outputs by tensor name, else by position
        self.ov_inputs = _by_name([p.output(0) for p in ov_model.get_parameters()], self.input_names)
        self.ov_outputs = _by_name([r.input_value(0) for r in ov_model.get_results()], self.output_names)
        self.probes = 0
        self._types = None

    def has(self, op_type: str) -> bool:
        return any(op.get_type_name() == op_type for op in self.ov_model.get_ordered_ops())

    def ov_feeds(self) -> list:
        """The feeds in the order of the OpenVINO model's parameters."""
        position = {k: p for p, k in enumerate(self.ov_inputs)}
        return [self.feeds[self.input_names[position[k]]] for k in range(len(self.ov_inputs))]

    def run(self, config=CONFIG):
        try:
            want = run_openvino(self.ov_model, self.ov_feeds(), config)
        except RuntimeError as error:
            raise ModelError(f"OpenVINO CPU cannot run the model: {error}") from None
        try:
            got = self._onnx([])
        except _probe_errors() as error:
            if isinstance(error, BridgeError):
                raise
            raise ModelError(f"onnxruntime cannot run the converted model: {error}") from None
        return [want[k] for k in self.ov_outputs], got

    def _onnx(self, extra: list[str], types: dict | None = None) -> list[np.ndarray]:
        from .session import InferenceSession

        model = self.converted
        outputs = {o.name for o in model.graph.output}
        extra = [name for name in extra if name not in outputs]
        if extra:
            model = onnx.ModelProto()
            model.CopyFrom(self.converted)
            if self._types is None:
                self._types = value_types(self.converted)
            for name in extra:
                code = self._types.get(name) or (types or {}).get(name) or onnx.TensorProto.FLOAT
                model.graph.output.add().CopyFrom(onnx.helper.make_tensor_value_info(name, code, None))
        session = InferenceSession(model)
        wanted = [o.name for o in model.graph.output]
        values = dict(zip(wanted, session.run(wanted, self.feeds)))
        return [values[o.name] for o in self.converted.graph.output] + [values[n] for n in extra]

    def probe(self, ov_outputs: list, onnx_names: list[str], types: dict | None = None) -> tuple[list, list]:
        """OpenVINO arrays of `ov_outputs` ((friendly name, port)) and ONNX arrays of `onnx_names` (`types`:
        ONNX element types of those shape inference does not know)."""
        ov = _openvino()
        self.probes += 1
        ov_arrays = []
        if ov_outputs:
            clone = self.ov_model.clone()
            by_name = {op.get_friendly_name(): op for op in clone.get_ordered_ops()}
            extra = [ov.opset13.result(by_name[name].output(port)) for name, port in ov_outputs]
            probe = ov.Model(list(clone.get_results()) + extra, list(clone.get_parameters()), "probe")
            ov_arrays = run_openvino(probe, self.ov_feeds())[len(clone.get_results()):]
        onnx_arrays = []
        if onnx_names:
            everything = self._onnx(onnx_names, types)
            values = dict(zip(self.output_names, everything[:len(self.output_names)]))
            extra_names = [n for n in onnx_names if n not in values]
            values.update(zip(extra_names, everything[len(self.output_names):]))
            onnx_arrays = [values[n] for n in onnx_names]
        return ov_arrays, onnx_arrays


def _by_name(ov_ports: list, onnx_names: list[str]) -> list[int]:
    """For each ONNX name, the index of the OpenVINO port carrying that tensor name (position otherwise)."""
    order = []
    for position, name in enumerate(onnx_names):
        found = [k for k, port in enumerate(ov_ports) if name in port.get_names()]
        order.append(found[0] if len(found) == 1 else position)
    if len(order) != len(ov_ports) or sorted(order) != list(range(len(ov_ports))):
        return list(range(len(ov_ports)))
    return order


def _same_names(ov_model, converted: onnx.ModelProto) -> dict:
    """The OpenVINO output -> ONNX value map of a model the importer did not write: tensor names both share
    (an IR made from ONNX keeps them)."""
    computed = {output for node in converted.graph.node for output in node.output}
    found = {}
    for op in ov_model.get_ordered_ops():
        for port in range(op.get_output_size()):
            shared = sorted(op.output(port).get_names() & computed)
            if shared:
                found[f"{op.get_friendly_name()}:{port}"] = shared[0]
    return found


def value_types(model: onnx.ModelProto) -> dict[str, int]:
    """ONNX element type of every value, by shape inference (0 where unknown)."""
    from custom_ops.schemas import register_schemas

    register_schemas()
    types = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError):  # types stay unknown
        inferred = model
    graph = inferred.graph
    for value in list(graph.value_info) + list(graph.input) + list(graph.output):
        types[value.name] = value.type.tensor_type.elem_type
    return types


__all__ = ["compare", "CompareReport", "Localisation", "Explanation", "EXIT_AGREE", "EXIT_DIFFERENT",
           "EXIT_EXPLAINED", "value_types"]
