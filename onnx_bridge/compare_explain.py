"""Explanations for `onnx-bridge compare` (see compare_models): tie order, OpenVINO's own int8-vs-f32
spread, and the diverging node checked against its OpenVINO reference implementation and the tables of
known deviations (DEVIATIONS below for OpenVINO IR ops; onnx_bridge.divergences for the dialect ops)."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from custom_ops.element_types import OPENVINO_NAMES, is_integer

from .comparison import measure


@dataclass(frozen=True)
class Deviation:
    """A known way OpenVINO's CPU plugin departs from OpenVINO's specification for an IR op."""

    id: str
    op: str  # one IR op type, or several joined by ", "
    title: str
    applies: Callable  # (openvino node, input arrays) -> bool
    follows_spec: str = "converted"
    #: OpenVINO's reference implementation (Node.evaluate) deviates the same way as the CPU plugin
    reference_too: bool = False


def _signed_integer_floor_differs(node, inputs) -> bool:
    if len(inputs) < 2 or inputs[0].dtype.kind != "i" or not node.get_attributes().get("m_pythondiv", True):
        return False
    a, b = np.broadcast_arrays(inputs[0].astype(np.int64), inputs[1].astype(np.int64))
    nonzero = b != 0
    return bool(np.any(nonzero & (np.fmod(a, np.where(nonzero, b, 1)) != 0) & ((a < 0) != (b < 0))))


def _unsigned_small(node, inputs) -> bool:
    return bool(inputs) and inputs[0].dtype in (np.uint8, np.uint16)


def _float_out_of_range(node, inputs) -> bool:
    target = node.get_output_element_type(0).get_type_name()
    kinds = {name: dtype for dtype, name in OPENVINO_NAMES.items() if is_integer(dtype)}
    if not inputs or inputs[0].dtype.kind != "f" or target not in kinds:
        return False
    info = np.iinfo(kinds[target])
    values = inputs[0].astype(np.float64)
    return bool(np.any((values < info.min) | (values > info.max) | np.isnan(values)))


def _erfinv_tail(node, inputs) -> bool:
    """Some |x| < 1 with w = -log((1 - x)(1 + x)) >= 5 (|x| >= 0.99662536): Giles' tail polynomial."""
    if not inputs or inputs[0].dtype.kind != "f":
        return False
    x = inputs[0].astype(np.float64)
    with np.errstate(all="ignore"):
        t = (1 - x) * (1 + x)
        return bool(np.any((t > 0) & (-np.log(np.where(t > 0, t, 1)) >= 5)))


@functools.cache
def cpu_flags() -> frozenset | None:
    """The CPU's feature flags (/proc/cpuinfo's "flags"; None where there are none to read): OpenVINO's and
    onnxruntime's int8 and bf16 kernels choose by them (AVX2, AVX-512, VNNI, BF16, AMX)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            line = next(line for line in cpuinfo if line.startswith("flags"))
    except (OSError, StopIteration):
        return None
    return frozenset(line.split(":", 1)[1].split())


def _cpu_without_vnni() -> bool:
    """An x86 CPU whose int8 kernels are AVX2's vpmaddubsw (int16 pair sums), not VNNI's (int32); False where
    the flags are not known (the AVX2 kernels' saturation is not claimed)."""
    flags = cpu_flags()
    return flags is not None and "avx2" in flags and not any("vnni" in flag for flag in flags)


def _int8_levels(source) -> int | None:
    """The largest |level| of an integer operand: a FakeQuantize's, or nncf's weights' (Convert(int8 constant)
    [- zero point] [* scale]); None for anything else."""
    while source.get_type_name() in ("Multiply", "Subtract", "Convert"):
        source = source.input_value(0).get_node()
    if source.get_type_name() == "FakeQuantize":
        return int(source.get_attributes()["levels"]) // 2
    if source.get_type_name() == "Constant" and source.get_element_type().get_type_name() == "i8":
        return int(np.abs(source.get_data().astype(np.int16)).max(initial=0))
    return None


def _int8_pair_sums_can_saturate(node, inputs) -> bool:
    """On a CPU without VNNI, a product of two integer operands neither of which is within 7 bits (a uint8
    operand times |levels| <= 64 cannot saturate int16 pair sums: 255 * 64 * 2 <= 32767)."""
    levels = [_int8_levels(node.input_value(i).get_node()) for i in range(2)]
    return _cpu_without_vnni() and None not in levels and min(levels) > 64


#: OpenVINO CPU plugin deviations from the op specification (measured with OpenVINO 2026.4; the import
#: rules follow the specification and note these in docs/openvino_ir.md)
DEVIATIONS = (
    Deviation("ov-cpu-divide-int-truncates", "Divide",
              "signed integer Divide: the CPU plugin truncates toward zero, the specification (m_pythondiv) "
              "floors", _signed_integer_floor_differs),
    Deviation("ov-cpu-divide-unsigned-rounds", "Divide",
              "u8/u16 Divide: the CPU plugin rounds the quotient to nearest, the specification truncates",
              _unsigned_small),
    Deviation("ov-cpu-convert-saturates", "Convert",
              "float -> integer Convert of out-of-range values or NaN: the CPU plugin saturates, the "
              "specification and ONNX Cast leave it undefined", _float_out_of_range, follows_spec="unknown"),
    Deviation("ov-erfinv-tail-coefficient", "ErfInv",
              "ErfInv for |x| >= 0.99662536: OpenVINO's reference and CPU plugin have -0.00943887047 where Giles' "
              "approximation (2010) has +0.00943887047 in the tail polynomial, up to 5.3e-3 relative from the "
              "inverse error function the specification defines (erfinv(0.9967) = 2.0777028, OpenVINO 2.0668652); "
              "the converted model takes the paper's sign (within 2.5 ulp f32)", _erfinv_tail,
              reference_too=True),
    Deviation("ov-cpu-int8-pair-sums-saturate", "Convolution, GroupConvolution, MatMul, ScaledDotProductAttention",
              "int8 execution on CPUs without VNNI (AVX2): OpenVINO CPU's u8 x s8 kernels (vpmaddubsw) sum pairs "
              "of products in int16 with saturation (255 * 127 * 2 > 32767); onnxruntime's u8s8 kernels in the "
              "QDQ form do too, not always in the same places (its depthwise kernel does not; OpenVINO runs some "
              "convolutions in f32, the QDQ form some in float): measured up to 141 output levels apart on a 3x3 "
              "convolution with full 8-bit weights; nncf's 7-bit weights (|level| <= 64) cannot saturate, and "
              "the exact form follows the specification", _int8_pair_sums_can_saturate,
              follows_spec="neither in the QDQ form; the exact form follows it"),
)


def matching(node, inputs) -> list[Deviation]:
    return [d for d in DEVIATIONS if node.get_type_name() in d.op.split(", ") and d.applies(node, inputs)]


# ------------------------------------------------------------------------------------------------------


def _results_ancestry(result) -> list:
    from .localise import _ancestors
    return _ancestors(result)


def ties(report, runner, want, got, tolerance, pending: set) -> set:
    """Outputs downstream of TopK/NMS-like ops that agree once compared order-insensitively."""
    from .compare_models import Explanation, _tolerance, tie_ops

    explained = set()
    model = runner.ov_model
    ops = {op.get_name(): op for op in model.get_ordered_ops()}
    open_order = tie_ops()
    for index in sorted(pending):
        result = model.get_results()[runner.ov_outputs[index]]
        upstream = [ops[name] for name in _results_ancestry(result) if name in ops
                    and ops[name].get_type_name() in open_order]
        if not upstream:
            continue
        w, g = np.asarray(want[index]), np.asarray(got[index])
        producer = result.input_value(0)
        name = report.outputs[index].name
        sources = ", ".join(sorted({f"{op.get_type_name()} {op.get_friendly_name()!r}" for op in upstream}))
        if producer.get_node().get_type_name() == "TopK" and producer.get_index() == 1:
            how = _same_scores(runner, producer.get_node(), w, g)
        else:
            how = _as_multiset(w, g, name, _tolerance(tolerance, w))
        if how is None:
            continue
        metrics = measure(w, g, name, _tolerance(tolerance, w))
        metrics.status, metrics.note = "agree", f"tie-dependent: {how}"
        report.outputs[index] = metrics
        report.tie_dependent.append(name)
        report.explanations.append(Explanation(
            "tie-order", f"output {name!r} comes after {sources}, which leave the order of equal scores open "
            f"(TopK stable=false, NMS selection order): {how}; tie-dependent", "both", outputs=[name]))
        explained.add(index)
    return explained


def _same_scores(runner, topk, want, got) -> str | None:
    """TopK indices that differ only where both sides picked elements of equal score."""
    if want.shape != got.shape or want.dtype != got.dtype:
        return None
    source = topk.input_value(0)
    scores = np.asarray(runner.probe([(source.get_node().get_friendly_name(), source.get_index())], [])[0][0])
    axis = int(topk.get_attributes().get("axis", -1))
    extent = scores.shape[axis]
    if np.any((got < 0) | (got >= extent)):
        return None
    picked_want = np.take_along_axis(scores, want.astype(np.int64), axis)
    picked_got = np.take_along_axis(scores, got.astype(np.int64), axis)
    if not np.array_equal(picked_want, picked_got, equal_nan=True):
        return None
    differ = int(np.count_nonzero(want != got))
    return f"{differ} indices differ, each picking an element of the same score (ties)"


def _as_multiset(want, got, name, tolerance) -> str | None:
    """An output that agrees once its items are compared as a multiset (rows, or along one axis)."""
    if want.shape != got.shape or want.dtype != got.dtype:
        return None
    for option in ["rows"] + list(range(want.ndim)):
        metrics = measure(want, got, name, tolerance, unordered=option)
        if metrics.agree:
            return f"agrees compared order-insensitively ({metrics.unordered})"
    return None


def _compressed_weights(model) -> bool:
    from .compare_models import COMPRESSED

    return any(op.get_type_name() == "Constant" and op.get_output_element_type(0).get_type_name() in COMPRESSED
               and any(t.get_node().get_type_name() == "Convert" for t in op.output(0).get_target_inputs())
               for op in model.get_ordered_ops())


def approximation_spread(report, runner, want, got, tolerance, pending: set) -> set:
    """INT8 / compressed-weight models: OpenVINO CPU again without its approximations (see compare_models);
    a converted model within OpenVINO's own spread is explained."""
    from .compare_models import CONFIG, NO_DYNAMIC_QUANTIZATION, NO_LPT, Explanation, _tolerance, run_openvino

    config, what = dict(CONFIG), []
    if runner.has("FakeQuantize"):
        config.update(NO_LPT)
        what.append("int8 execution of FakeQuantize (LP_TRANSFORMS_MODE off: FakeQuantize in f32 as specified)")
    if _compressed_weights(runner.ov_model):
        config.update(NO_DYNAMIC_QUANTIZATION)
        what.append("dynamic quantization of the activations of compressed-weight MatMuls "
                    "(DYNAMIC_QUANTIZATION_GROUP_SIZE 0: f32 activations)")
    if not what:
        return set()
    runner.say("running OpenVINO CPU without its approximations: " + "; ".join(what))
    exact = run_openvino(runner.ov_model, runner.ov_feeds(), config)
    exact = [exact[k] for k in runner.ov_outputs]
    kind = "int8-spread" if runner.has("FakeQuantize") else "compressed-weights-spread"
    explained = set()
    for index in sorted(pending):
        name = report.outputs[index].name
        w, g, f = np.asarray(want[index]), np.asarray(got[index]), np.asarray(exact[index])
        tol = _tolerance(tolerance, w)
        spread = measure(w, f, name, tol)  # OpenVINO CPU vs OpenVINO CPU without approximations
        against_exact = measure(f, g, name, tol)
        report.spread.append(spread)
        difference = report.outputs[index].max_abs
        if against_exact.agree or difference <= spread.max_abs or against_exact.max_abs <= spread.max_abs:
            follows = "converted" if against_exact.agree else "both"
            report.explanations.append(Explanation(
                kind,
                f"output {name!r}: OpenVINO CPU differs from its own execution of the same graph without its "
                f"{' and '.join(what)} by max |Δ| {spread.max_abs:.4g} (rel L2 {spread.rel_l2:.3g}); the converted "
                f"model differs from OpenVINO CPU by {difference:.4g} and from that execution by "
                f"{against_exact.max_abs:.4g}: within OpenVINO's own spread"
                + (" (and agrees with the execution without approximations)" if against_exact.agree else
                   " (values at quantization bucket edges round either way)"),
                follows, outputs=[name]))
            explained.add(index)
    return explained


def at_node(report, runner, tolerance) -> bool:
    """Check the localised node against its OpenVINO reference implementation and the deviation tables;
    True when that explains the difference (the converted node follows the specification)."""
    from .compare_models import Explanation

    loc = report.localisation
    op = next(o for o in runner.ov_model.get_ordered_ops() if o.get_friendly_name() == loc.node)
    port = next((int(key.rsplit(":", 1)[1]) for key, value in runner.names.items()
                 if value == loc.onnx_value and key.rsplit(":", 1)[0] == loc.node), 0)
    sources = [op.input_value(i) for i in range(op.get_input_size())]
    ov_arrays, onnx_arrays = runner.probe(
        [(s.get_node().get_friendly_name(), s.get_index()) for s in sources] + [(loc.node, port)],
        [loc.onnx_value])
    inputs, cpu, converted = [np.asarray(a) for a in ov_arrays[:-1]], np.asarray(ov_arrays[-1]), \
        np.asarray(onnx_arrays[0])
    reference = _reference(op, inputs, port, cpu.shape)
    deviations = matching(op, inputs)
    dialect = _dialect_divergences(op, inputs)
    tol = tolerance if tolerance is not None and cpu.dtype.kind == "f" else None
    follows = "unknown"
    if reference is not None and reference.shape == cpu.shape:
        cpu_ok = measure(reference, cpu, "cpu", tol).agree
        converted_ok = converted.shape == reference.shape and measure(
            reference, converted.astype(reference.dtype), "converted", tol).agree
        follows = {(True, False): "converted", (False, True): "openvino-cpu", (True, True): "both"}.get(
            (converted_ok, cpu_ok), "neither")
        loc.reference = {
            "converted": "agrees with the converted model; OpenVINO CPU deviates from it",
            "openvino-cpu": "agrees with OpenVINO CPU; the converted node does not follow it (an import "
                            "defect: please report it with this output)",
            "both": "both sides are within tolerance of it here (the difference grows downstream)",
            "neither": "neither side agrees with it"}[follows]
    shared = [d for d in deviations if d.reference_too]
    if follows == "openvino-cpu" and shared:
        loc.reference = "agrees with OpenVINO CPU: both deviate from the specification (" + \
            ", ".join(d.id for d in shared) + ")"
    explained = False
    for deviation in deviations:
        if follows in ("converted", "unknown") or (follows == "openvino-cpu" and deviation.reference_too):
            report.explanations.append(Explanation("deviation", deviation.title, deviation.follows_spec,
                                                   deviation.id))
            explained = True
    for divergence in dialect if follows in ("converted", "unknown") else ():
        report.explanations.append(Explanation("deviation", f"{divergence.title}: {divergence.reason}",
                                               "converted", divergence.id))
        explained = True
    if follows == "converted" and not explained:
        report.explanations.append(Explanation(
            "reference", f"{loc.op} {loc.node!r}: OpenVINO CPU differs from OpenVINO's reference implementation "
            "of the op, the converted model follows it (a CPU plugin deviation not yet in the table)",
            "converted"))
        explained = True
    return explained


def _reference(op, inputs, port, shape):
    """Output `port` (of `shape`) of `op` by OpenVINO's reference implementation (Node.evaluate) on
    `inputs`, or None when the op has none for these types."""
    from .compare_models import _openvino

    ov = _openvino()
    try:
        outputs = []
        for index in range(op.get_output_size()):
            partial = op.get_output_partial_shape(index)
            if index != port and not partial.is_static:
                return None
            outputs.append(ov.Tensor(op.get_output_element_type(index),
                                     list(shape) if index == port else partial.to_shape()))
        if not op.evaluate(outputs, [ov.Tensor(np.ascontiguousarray(a)) for a in inputs]):
            return None
        return np.array(outputs[port].data)
    except (RuntimeError, TypeError, ValueError):  # no reference for this op / these types
        return None


def _dialect_divergences(op, inputs) -> list:
    """Known OpenVINO CPU divergences (onnx_bridge.divergences) for a dialect op of the IR."""
    from custom_ops import units

    from . import divergences

    unit = next((u for u in units() if u.openvino.type_name == op.get_type_name()), None)
    if unit is None:
        return []
    try:
        ports = [p.name for p in unit.newest.inputs]
        given = op.get_attributes()
        attributes = {m.name: m.to_onnx(given[m.ov_name]) for m in unit.openvino.attributes if m.ov_name in given}
        case = divergences.Case(unit.op_type, dict(zip(ports, inputs)), attributes)
        return divergences.matching("openvino-cpu", case)
    except (ValueError, KeyError, TypeError):  # attributes the contract names differently
        return []
