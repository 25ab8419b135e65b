"""The one table of known divergences between the contract (DIALECT.md) and other runtimes.

Every place that compares another runtime with the contract (differential tests, conformance) asks
`matching(backend, case)` which entries apply to a case, asserts the contract's value there and reports the
entries, instead of loosening a tolerance or skipping. Each entry has an id, the backend, the ops, a kind,
a short title, the reason with the measurement (research/openvino_observed.md, onnx_ort_observed.md,
and this project's probes), a predicate `applies(case)` and an example case on which it applies.

Kinds:
- "value": the runtime returns a different value than the contract.
- "rejects": the runtime raises on an input the contract accepts.
- "accepts": the runtime returns a value where the contract raises.
- "nondeterministic": the runtime's value changes from run to run (or with what ran before).
- "crashes": the runtime kills the process or corrupts its heap (onnx_bridge.backends.openvino refuses
  these inputs).

A result that depends on the machine (e.g. OpenVINO CPU kernels that differ with the CPU's instruction set)
is an entry with `outcomes`: every measured outcome, where it was measured, and a model of its outputs.
Such an entry explains a value only if it is exactly one of those outcomes (the contract's value is always
a match), so a verdict does not depend on the CPU and an unexplained difference still fails.

Backends: "openvino-cpu" (OpenVINO 2026.4 CPU plugin, native ops, INFERENCE_PRECISION_HINT=f32),
"onnxruntime" (onnxruntime 1.31 standard ops: what a lowered model runs), "onnx-reference"
(onnx.reference.ReferenceEvaluator standard ops) and "torch" (torch 2.13: scatter, scatter_reduce,
index_copy, unique, linalg.vector_norm).

OpenVINO IR ops that import as standard ONNX are not dialect ops: where OpenVINO departs from their
specification, onnx_bridge.compare_explain.DEVIATIONS declares it; docs/divergences.md lists both tables.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from custom_ops import resolve, units
from custom_ops.unit import present
from custom_ops._types import BFLOAT16, is_float, is_integer
from onnx_bridge.config import DIALECT_OPSET
from onnx_bridge.errors import OpError

SEU, SU, L2, UNIQUE = "ScatterElementsUpdate", "ScatterUpdate", "ReduceL2", "Unique"
BACKENDS = ("openvino-cpu", "onnxruntime", "onnx-reference", "torch")
KINDS = ("value", "rejects", "accepts", "nondeterministic", "crashes")
_INT32 = (-2**31, 2**31 - 1)


# ------------------------------------------------------------------------------------------------------
# Cases


class Case:
    """One call of a dialect op: op type, inputs by port name (numpy arrays), attributes (defaults filled)."""

    def __init__(self, op: str, inputs: dict, attributes: dict | None = None):
        self.op = op
        self.spec = resolve(op, DIALECT_OPSET)
        ports = [port.name for port in self.spec.inputs]
        unknown = set(inputs) - set(ports)
        if unknown:
            raise OpError(op, "inputs", "unknown input names", value=sorted(unknown), allowed=ports)
        self.inputs = {name: np.asarray(inputs[name]) for name in ports if inputs.get(name) is not None}
        given = dict(attributes or {})
        self.attributes = {a.name: given.pop(a.name, a.default) for a in self.spec.attributes}
        self.attributes.update(given)  # unknown attributes are kept (and rejected by the contract)

    @classmethod
    def of(cls, op: str, **values) -> "Case":
        """Case.of("ReduceL2", data=x, axes=[1], keep_dims=1): input ports and attributes by name."""
        ports = {port.name for port in resolve(op, DIALECT_OPSET).inputs}
        return cls(op, {k: v for k, v in values.items() if k in ports},
                   {k: v for k, v in values.items() if k not in ports})

    @property
    def args(self) -> tuple:
        """Inputs in port order, as OpSpec.run and onnx_bridge.backends.openvino.run take them."""
        return tuple(self.inputs.values())

    def __getitem__(self, name):
        """An attribute's value (defaults filled), or an input array by port name."""
        return self.attributes[name] if name in self.attributes else self.inputs[name]

    @functools.cached_property
    def contract(self):
        """The contract's outputs (tuple of arrays) or the OpError it raises."""
        try:
            return self.spec.run(self.args, self.attributes)
        except OpError as error:
            return error

    @property
    def valid(self) -> bool:
        return not isinstance(self.contract, OpError)

    def __repr__(self) -> str:
        parts = [f"{k}={_short(v)}" for k, v in self.inputs.items()]
        parts += [f"{k}={v!r}" for k, v in self.attributes.items()]
        return f"Case({self.op}: {', '.join(parts)})"


def _short(array: np.ndarray) -> str:
    text = np.array2string(array, threshold=12, separator=",").replace("\n", "")
    return f"{text}:{'bfloat16' if array.dtype == BFLOAT16 else array.dtype}"


# ------------------------------------------------------------------------------------------------------
# Facts about a case the predicates share


def _py(array: np.ndarray) -> list:
    """Elements as Python numbers (floats exact as float64; bfloat16/float16 included)."""
    array = np.asarray(array)
    return (array.astype(np.float64) if is_float(array.dtype) else array).reshape(-1).tolist()


def _isnan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _dtype(case: Case) -> np.dtype:
    return case.inputs["data"].dtype


def _per_case(function):
    """Compute a fact once per case (several predicates share it)."""
    @functools.wraps(function)
    def cached(case: Case):
        memo = case.__dict__.setdefault("_facts", {})
        if function.__name__ not in memo:
            memo[function.__name__] = function(case)
        return memo[function.__name__]
    return cached


@_per_case
def _seu_updates_by_position(case: Case) -> dict[int, list]:
    """Flat position in data -> the updates a valid ScatterElementsUpdate sends there (Python numbers, in
    row-major order)."""
    from custom_ops.ops.scatter.scatter_elements_update import target_positions, validate
    data, indices, updates, axis, _, _ = validate(*case.args, case["reduction"], case["use_init_val"])
    groups: dict[int, list] = {}
    for position, value in zip(target_positions(data.shape, indices, axis).reshape(-1).tolist(),
                               _py(updates)):
        groups.setdefault(position, []).append(value)
    return groups


@_per_case
def _seu_groups(case: Case) -> list[tuple[list, list]]:
    """Per touched position of a valid ScatterElementsUpdate: (start, updates) as Python numbers.

    start is [data value] with use_init_val=1 and [] with 0; updates are in row-major order.
    """
    flat = _py(case.inputs["data"])
    return [([flat[p]] if case["use_init_val"] else [], values)
            for p, values in _seu_updates_by_position(case).items()]


def _square_sums(data: np.ndarray, axes_input: np.ndarray) -> list[int]:
    """Exact sums of squares of every output element of ReduceL2 on integers (empty axes: x*x)."""
    from custom_ops.ops.reduction.reduce_l2 import normalized_axes
    axes = normalized_axes(axes_input, data.ndim)
    squares = np.asarray(data.astype(object) ** 2, dtype=object)
    if not axes:
        return squares.reshape(-1).tolist()
    return np.asarray(np.sum(squares, axis=axes), dtype=object).reshape(-1).tolist()


@_per_case
def _l2_square_sums(case: Case) -> list[int]:
    return _square_sums(case.inputs["data"], case.inputs["axes"])


def _values(case: Case, *names) -> list:
    return [v for name in names if name in case.inputs for v in _py(case.inputs[name])]


def _nan_in(case: Case, *names) -> bool:
    return is_float(_dtype(case)) and any(_isnan(v) for v in _values(case, *names))


def _unique_axis(case: Case):
    """Normalised axis of a valid Unique case, or None without one."""
    if "axis" not in case.inputs:
        return None
    return int(case.inputs["axis"].reshape(-1)[0]) % case.inputs["data"].ndim


# ------------------------------------------------------------------------------------------------------
# Predicates


def _int_mean_truncates(case: Case) -> bool:
    """Some integer mean is negative and not whole: truncation toward 0 differs from floor."""
    if not (is_integer(_dtype(case)) and case["reduction"] == "mean"):
        return False
    for start, updates in _seu_groups(case):
        total, count = sum(start + updates), len(start) + len(updates)
        if total < 0 and total % count:
            return True
    return False


#: Accumulator range of the CPU plugin's integer mean (measured): 8-bit types in themselves, 16-bit
#: widened, 32- and 64-bit types in int32.
def _mean_accumulator(dtype: np.dtype):
    if dtype.itemsize == 1:
        info = np.iinfo(dtype)
        return int(info.min), int(info.max)
    return None if dtype.itemsize == 2 else _INT32


def _mean_accumulator_wraps(case: Case) -> bool:
    dtype = _dtype(case)
    if not (is_integer(dtype) and case["reduction"] == "mean") or _mean_accumulator(dtype) is None:
        return False
    low, high = _mean_accumulator(dtype)
    return any(not low <= sum(start + updates) <= high for start, updates in _seu_groups(case))


def _nan_update_ignored(case: Case) -> bool:
    """A NaN update reaches a min/max accumulator that is not NaN (the CPU keeps the accumulator)."""
    if not (is_float(_dtype(case)) and case["reduction"] in ("min", "max")):
        return False
    return any(any(_isnan(u) for u in updates) and not any(_isnan(s) for s in start)
               for start, updates in _seu_groups(case))


def _signed_zero_tie(case: Case) -> bool:
    """A min/max that ends on a zero whose first and last occurrences differ in sign: the contract keeps the
    last zero, runtimes that keep the accumulator on a tie the first (NaN groups: the contract gives NaN).
    Measured exact on 3000 random cases for OpenVINO, torch and onnx.reference."""
    if not (is_float(_dtype(case)) and case["reduction"] in ("min", "max")):
        return False
    for start, updates in _seu_groups(case):
        values = start + updates
        if any(_isnan(v) for v in values):
            continue
        zeros = [math.copysign(1.0, v) for v in values if v == 0]
        best = min(values) if case["reduction"] == "min" else max(values)
        if best == 0 and zeros[0] != zeros[-1]:
            return True
    return False


def _outside(values, low, high) -> bool:
    return any(not _isnan(v) and not low <= v <= high for v in values)


def _wide_int_values(case: Case) -> bool:
    """i64/u64 values outside int32 in the inputs or the contract's outputs."""
    if _dtype(case) not in (np.dtype(np.int64), np.dtype(np.uint64)):
        return False
    values = _values(case, "data", "updates") + _py(case.contract[0])
    return _outside(values, *_INT32)


def _uint32_high_values(case: Case) -> bool:
    """u32 values >= 2**31 where the CPU plugin compares or averages them as int32."""
    if _dtype(case) != np.uint32:
        return False
    signed_ops = (case.op == SEU and case["reduction"] in ("min", "max", "mean")) or \
        (case.op == UNIQUE and case["sorted"]) or case.op == L2
    return signed_ops and _outside(_values(case, "data", "updates"), 0, _INT32[1])


def _f32_exact(value: float) -> bool:
    """float32 holds value (NaN stays NaN; +-inf do not survive: the CPU turns f64 inf into +-FLT_MAX)."""
    return math.isnan(value) or (math.isfinite(value) and float(np.float32(value)) == value)


def _f64_not_exact_in_f32(case: Case) -> bool:
    """float64 work done in float32 can differ: a value float32 cannot hold, or arithmetic that may round.

    Arithmetic is taken as exact in float32 only for whole numbers whose partial results stay below 2**24
    (sum, mean quotient, product) or whose square sum is a perfect square below 2**24 (ReduceL2).
    """
    if _dtype(case) != np.float64:
        return False
    values = _values(case, "data", "updates") + _py(case.contract[0])
    if not all(_f32_exact(v) for v in values):
        return True
    if case.op == SEU and case["reduction"] in ("sum", "prod", "mean"):
        return not all(_whole_and_small(start + updates, case["reduction"]) for start, updates in
                       _seu_groups(case))
    if case.op == L2:  # also empty axes: the CPU computes sqrt(x*x)
        if not all(math.isfinite(v) and v == int(v) and abs(v) < 2**12 for v in _values(case, "data")):
            return True
        return not all(s < 2**24 and math.isqrt(s) ** 2 == s
                       for s in _square_sums(case.inputs["data"].astype(np.int64), case.inputs["axes"]))
    return False


def _whole_and_small(values: list, reduction: str) -> bool:
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < len(values):
        return True  # NaN propagates the same way in float32 and float64 (inf was ruled out before)
    if not all(v == int(v) for v in finite):
        return False
    if reduction == "prod":
        return math.prod(max(1, abs(int(v))) for v in finite) < 2**24
    if sum(abs(int(v)) for v in finite) >= 2**24:
        return False
    return reduction != "mean" or _f32_exact(sum(finite) / len(finite))


def _l2_integer_rounds_up(case: Case) -> bool:
    """Rounding half away from zero gives floor(sqrt) + 1 somewhere (runtimes that truncate differ)."""
    if not (is_integer(_dtype(case)) and case.inputs["axes"].size):
        return False
    return any(s - math.isqrt(s) ** 2 > math.isqrt(s) for s in _l2_square_sums(case))


#: Largest sum of squares the CPU plugin's integer ReduceL2 holds (measured): 8-bit types in themselves,
#: wider types in int32.
def _l2_overflows_cpu(case: Case) -> bool:
    dtype = _dtype(case)
    if not is_integer(dtype):
        return False
    limit = int(np.iinfo(dtype).max) if dtype.itemsize == 1 else _INT32[1]
    return any(s > limit for s in _l2_square_sums(case))


def _l2_overflows_type(case: Case) -> bool:
    dtype = _dtype(case)
    return is_integer(dtype) and any(s > int(np.iinfo(dtype).max) for s in _l2_square_sums(case))


def _l2_empty_axes_rank2_dropped(case: Case) -> bool:
    return case.inputs["axes"].size == 0 and not case["keep_dims"] and case.inputs["data"].ndim >= 2


def _l2_duplicate_axes(case: Case) -> bool:
    """Axes valid but for duplicates (the contract rejects them)."""
    data, axes = case.inputs["data"], case.inputs["axes"]
    if axes.dtype.kind not in "iu" or axes.ndim > 1 or data.ndim == 0:
        return False
    values = [int(v) for v in axes.reshape(-1)]
    if not all(-data.ndim <= v < data.ndim for v in values):
        return False
    return len({v % data.ndim for v in values}) < len(values)


def _unique_axis_not_first(case: Case) -> bool:
    axis = _unique_axis(case)
    return axis not in (None, 0) and case.inputs["data"].shape[axis] >= 2


def _unique_byte_type_with_axis(case: Case) -> bool:
    return "axis" in case.inputs and _dtype(case).itemsize == 1 and case.inputs["data"].size > 0


def _unique_nan(case: Case) -> bool:
    return _nan_in(case, "data")


def _unique_empty(case: Case) -> bool:
    return case.inputs["data"].size == 0


def _unique_other_dimension_empty(case: Case) -> bool:
    """With an axis, a dimension other than the axis is 0."""
    axis = _unique_axis(case)
    return axis is not None and any(n == 0 for d, n in enumerate(case.inputs["data"].shape) if d != axis)


def _unique_signed_zeros(case: Case) -> bool:
    """Float data holding both -0.0 and 0.0 (equal: which sign the unique value keeps is a choice)."""
    data = case.inputs["data"]
    if not is_float(data.dtype):
        return False
    signs = np.signbit(data.astype(np.float64)[data.astype(np.float64) == 0])
    return bool(signs.any() and not signs.all())


def _unique_bfloat16(case: Case) -> bool:
    return _dtype(case) == BFLOAT16 and case.inputs["data"].size > 0


def _bfloat16_rounding(case: Case) -> bool:
    """A bfloat16 sum/prod/mean whose float32 result bfloat16 cannot hold (rounding direction matters)."""
    if not (_dtype(case) == BFLOAT16 and case["reduction"] in ("sum", "prod", "mean")):
        return False
    for start, updates in _seu_groups(case):
        acc = np.float32(start[0] if start else (1 if case["reduction"] == "prod" else 0))
        with np.errstate(all="ignore"):
            for value in updates:
                acc = acc * np.float32(value) if case["reduction"] == "prod" else acc + np.float32(value)
            if case["reduction"] == "mean":
                acc = acc / np.float32(len(start) + len(updates))
        if not math.isnan(acc) and float(np.float32(acc).astype(BFLOAT16)) != float(acc):
            return True
    return False


def _square_root_inexact(data: np.ndarray) -> bool:
    """sqrt(x*x) in the contract's float type (float32 for float32/bfloat16, float64 for float64) is not |x|
    for some element: x*x overflows (|x| > sqrt(max), ~1.8e19 in float32) or is subnormal or 0."""
    work = np.float64 if data.dtype == np.float64 else np.float32
    x = data.astype(work)
    with np.errstate(all="ignore"):
        root = np.sqrt(x * x).astype(data.dtype).astype(np.float64)
    magnitude = np.abs(data.astype(np.float64))
    return bool(np.any((root != magnitude) & ~np.isnan(magnitude)))


def _l2_empty_axes_square_inexact(case: Case) -> bool:
    """Empty axes on float32/bfloat16 data where the CPU's float32 sqrt(x*x) is not |x|."""
    data = case.inputs["data"]
    return case.inputs["axes"].size == 0 and data.dtype in (np.dtype(np.float32), BFLOAT16) and \
        _square_root_inexact(data)


def _l2_single_element_square_inexact(case: Case) -> bool:
    """Reduced dimensions holding one element in all (each output is one input element), on float32,
    bfloat16 or float64 data where the contract's sqrt(x*x) is not |x|."""
    from custom_ops.ops.reduction.reduce_l2 import normalized_axes
    data = case.inputs["data"]
    if data.dtype not in (np.dtype(np.float32), BFLOAT16, np.dtype(np.float64)) or not case.inputs["axes"].size:
        return False
    axes = normalized_axes(case.inputs["axes"], data.ndim)
    return math.prod(data.shape[a] for a in axes) == 1 and _square_root_inexact(data)


def _empty_byte_axes(case: Case) -> bool:
    axes = case.inputs["axes"]
    return axes.size == 0 and axes.dtype.itemsize == 1


def _unique_axis_type(case: Case) -> bool:
    return "axis" in case.inputs and case.inputs["axis"].dtype not in (np.dtype(np.int32), np.dtype(np.int64))


def _unique_unsorted_nd(case: Case) -> bool:
    return not case["sorted"] and (case.inputs["data"].ndim >= 2)


def _unique_unsorted_not_ascending(case: Case) -> bool:
    """sorted=0 and the first-occurrence order is not ascending (torch always sorts)."""
    if case["sorted"]:
        return False
    ascending = Case(UNIQUE, case.inputs, {**case.attributes, "sorted": 1}).contract
    return not np.array_equal(case.contract[1], ascending[1])


def _scalar_indices(case: Case) -> bool:
    return case.inputs["indices"].ndim == 0


def _duplicate_indices_threaded(case: Case) -> bool:
    """Duplicate indices, except on the CPU plugin's sequential path: 1-D data of at most 64 elements of a
    16/32/64-bit integer type (the plugin runs them as i32) with indices of rank <= 1."""
    data, indices = case.inputs["data"], case.inputs["indices"]
    if data.ndim == 1 and data.size <= 64 and indices.ndim <= 1 and is_integer(data.dtype) and \
            data.dtype.itemsize >= 2:
        return False
    flat = indices.reshape(-1)
    return np.unique(flat).size < flat.size


def _two_element_axis(case: Case) -> bool:
    axis, data = case.inputs["axis"], case.inputs["data"]
    return axis.dtype.kind in "iu" and axis.size >= 2 and data.ndim >= 1 and \
        -data.ndim <= int(axis.reshape(-1)[0]) < data.ndim


def _seu_large_non_axis_dim(case: Case) -> bool:
    data, indices, axis = case.inputs["data"], case.inputs["indices"], case.inputs["axis"]
    if indices.ndim != data.ndim or indices.shape != case.inputs["updates"].shape or axis.dtype.kind not in "iu" \
            or not axis.size or data.ndim == 0 or not -data.ndim <= int(axis.reshape(-1)[0]) < data.ndim:
        return False
    a = int(axis.reshape(-1)[0]) % data.ndim
    return any(i != a and have > limit for i, (have, limit) in enumerate(zip(indices.shape, data.shape)))


def _index_outside_int32(case: Case) -> bool:
    indices = case.inputs["indices"]
    return indices.dtype.kind in "iu" and indices.size > 0 and _outside(indices.reshape(-1).tolist(), *_INT32)


def _index_out_of_range(case: Case) -> bool:
    """An index outside the contract's range ([-d, d-1]; ScatterUpdate [0, d-1]) on a resolvable axis."""
    data, indices, axis = case.inputs["data"], case.inputs["indices"], case.inputs["axis"]
    if indices.dtype.kind not in "iu" or not indices.size or data.ndim == 0 or axis.dtype.kind not in "iu" \
            or not axis.size or not -data.ndim <= int(axis.reshape(-1)[0]) < data.ndim:
        return False
    size = data.shape[int(axis.reshape(-1)[0]) % data.ndim]
    first = -size if case.op == SEU else 0
    return int(indices.min()) < first or int(indices.max()) > size - 1


def _empty_slices_index_out_of_range(case: Case) -> bool:
    """ScatterUpdate: an out-of-range index while another dimension of data is 0 (nothing is copied)."""
    if not _index_out_of_range(case) or case.inputs["updates"].size:
        return False
    data = case.inputs["data"]
    axis = int(case.inputs["axis"].reshape(-1)[0]) % data.ndim
    return any(n == 0 for d, n in enumerate(data.shape) if d != axis)


def _lowered_gather_smaller_indices(case: Case) -> bool:
    """The lowered ScatterElementsUpdate gathers from a data-sized tensor at the indices (float min/max with
    use_init_val=1; mean and use_init_val=0 gather from tensors shaped like the box the indices reach, which
    fit them) and the indices are smaller than data on a dimension other than axis."""
    data, indices, reduction = case.inputs["data"], case.inputs["indices"], case["reduction"]
    gathers = is_float(data.dtype) and reduction in ("min", "max") and case["use_init_val"]
    if not gathers or indices.size == 0:
        return False
    axis = int(case.inputs["axis"].reshape(-1)[0]) % data.ndim
    return any(d != axis and n < size for d, (n, size) in enumerate(zip(indices.shape, data.shape)))


def _mean_sum_leaves_type(case: Case) -> bool:
    """A mean whose sum (start included) the data type cannot hold: an integer sum outside the type's
    range, or a float16/bfloat16 float32 sum that the type does not hold exactly (or overflows)."""
    dtype = _dtype(case)
    if case["reduction"] != "mean":
        return False
    if is_integer(dtype):
        info = np.iinfo(dtype)
        return any(not info.min <= sum(start + updates) <= info.max for start, updates in _seu_groups(case))
    if dtype not in (np.dtype(np.float16), BFLOAT16):
        return False
    for start, updates in _seu_groups(case):
        total = np.float32(0)
        with np.errstate(all="ignore"):
            for value in start + updates:
                total = np.float32(total + np.float32(value))
            if not math.isnan(total) and float(np.float32(total).astype(dtype)) != float(total):
                return True
    return False


def _negative_index(case: Case) -> bool:
    indices = case.inputs["indices"]
    return indices.dtype.kind == "i" and indices.size > 0 and int(indices.min()) < 0


def _nan_replaced_by_later_update(case: Case) -> bool:
    """min/max: a NaN (data or update) followed by a non-NaN update (the later value replaces the NaN)."""
    if not (is_float(_dtype(case)) and case["reduction"] in ("min", "max")):
        return False
    for start, updates in _seu_groups(case):
        sequence = start + updates
        first_nan = next((i for i, v in enumerate(sequence) if _isnan(v)), None)
        if first_nan is not None and any(not _isnan(v) for v in sequence[first_nan + 1:]):
            return True
    return False


def _init0_all_infinite(case: Case) -> bool:
    """use_init_val=0 max (min) where every update of a position is -inf (+inf)."""
    if not (is_float(_dtype(case)) and not case["use_init_val"] and case["reduction"] in ("min", "max")):
        return False
    sign = 1.0 if case["reduction"] == "min" else -1.0
    return any(all(u == sign * math.inf for u in updates) for _, updates in _seu_groups(case))


def _init0_infinite_positions(case: Case) -> list[int]:
    """use_init_val=0 min (max): the positions whose updates are all +inf (-inf)."""
    sign = 1.0 if case["reduction"] == "min" else -1.0
    return [p for p, updates in _seu_updates_by_position(case).items()
            if all(u == sign * math.inf for u in updates)]


def _half_init0_all_infinite(case: Case) -> bool:
    """float16/bfloat16 use_init_val=0 max (min) where every update of a position is -inf (+inf)."""
    return _dtype(case) in (np.dtype(np.float16), BFLOAT16) and _init0_all_infinite(case)


def _neutral_as_infinity(case: Case) -> tuple:
    """The contract's output with the all-infinite positions of a use_init_val=0 min/max set to the infinity:
    the neutral value lowest/max(float32) rounded to float16/bfloat16."""
    output = np.array(case.contract[0], copy=True)
    sign = 1.0 if case["reduction"] == "min" else -1.0
    output.reshape(-1)[_init0_infinite_positions(case)] = sign * np.inf
    return (output,)


def _float16_reduction(case: Case) -> bool:
    return _dtype(case) == np.float16 and case.inputs["axes"].size > 0


def _is_integer_data(case: Case) -> bool:
    return is_integer(_dtype(case))


def _seu_shape_mismatch(case: Case) -> bool:
    return case.inputs["indices"].shape != case.inputs["updates"].shape


# ------------------------------------------------------------------------------------------------------
# The table


@dataclass(frozen=True)
class Outcome:
    """One measured result of a runtime whose result depends on the machine (e.g. the CPU's instruction set).

    where: on what it was measured (CPU, instruction set, date, how); outputs(case): the runtime's outputs
    there, modelled exactly from the measurement (the contract's value when the runtime agrees there)."""
    where: str
    outputs: Callable[[Case], tuple]


@dataclass(frozen=True)
class Divergence:
    id: str
    backend: str
    ops: tuple[str, ...]
    kind: str
    title: str
    reason: str
    predicate: Callable[[Case], bool]
    example: Callable[[], Case]
    #: Non-empty for a result that depends on the machine: every measured outcome, each accepted. Then the
    #: entry explains a value only if it is exactly one of them (anything else stays unexplained).
    outcomes: tuple[Outcome, ...] = ()

    def applies(self, case: Case) -> bool:
        """Whether this divergence can show on `case`: the contract must accept it, except for "accepts"
        (the contract raises) and "crashes" (either)."""
        if case.op not in self.ops:
            return False
        if self.kind != "crashes" and case.valid == (self.kind == "accepts"):
            return False
        return bool(self.predicate(case))

    def outcome_of(self, case: Case, outputs) -> Outcome | None:
        """The declared outcome `outputs` are (bit for bit, NaN equal to NaN), or None."""
        got = tuple(np.asarray(x) for x in outputs)
        for outcome in self.outcomes:
            want = outcome.outputs(case)
            if len(got) == len(want) and all(_identical(w, g) for w, g in zip(want, got)):
                return outcome
        return None

    def explains(self, case: Case, outputs) -> bool:
        """Whether the entry explains a value of `outputs`: any value, or one of the declared outcomes."""
        return not self.outcomes or self.outcome_of(case, outputs) is not None


def _identical(want: np.ndarray, got: np.ndarray) -> bool:
    """Same dtype, shape and bits (any NaN equal to any NaN; -0.0 and 0.0 differ)."""
    want, got = np.asarray(want), np.asarray(got)
    if want.dtype != got.dtype or want.shape != got.shape:
        return False
    if not is_float(want.dtype):
        return bool(np.array_equal(want, got))
    both_nan = np.isnan(want.astype(np.float64)) & np.isnan(got.astype(np.float64))
    bits = np.uint16 if want.dtype.itemsize == 2 else want.dtype.str.replace("f", "u")
    return bool(np.all(both_nan | (want.view(bits) == got.view(bits))))


def _ex(op, **values):
    return lambda: Case.of(op, **values)


A = np.array
_OV = "openvino-cpu"
_ALL = (SEU, SU, L2, UNIQUE)

DIVERGENCES: tuple[Divergence, ...] = (
    # --- OpenVINO CPU plugin -------------------------------------------------------------------------
    Divergence(
        "ov-seu-int-mean-truncates", _OV, (SEU,), "value", "integer mean truncates toward 0",
        "The contract floors (OpenVINO's spec: 'rounded down'; its core reference and constant folding "
        "floor too). The CPU kernel truncates: data [0,1,1,1,-7,0,5], idx [0,0,1,1,2,3,4,4,5,5], "
        "upd [-1,-1,1,2,-4,-2,2,2,-3,-4] gives [0,1,-1,0,-1,-2,5] instead of [-1,1,-2,-1,-1,-3,5]; "
        "(-2-3)/2 gives -2 instead of -3.",
        _int_mean_truncates,
        _ex(SEU, data=A([0, -2], np.int32), indices=A([1, 1]), updates=A([-3, 0], np.int32), axis=A(0),
            reduction="mean", use_init_val=0)),
    Divergence(
        "ov-seu-mean-narrow-accumulator", _OV, (SEU,), "value",
        "integer mean accumulates in 8 bits (i8/u8) or 32 bits and wraps",
        "The contract accumulates exactly. The CPU sums i8/u8 in the 8-bit type (u8 (10+255)/2 -> 4, "
        "i8 (100+100+100)/3 -> 14), i32/u32/i64/u64 in int32 (i32 (2^31-1)*3/3 -> 715827881); i16/u16 are "
        "widened (exact). Sums wrap identically to the contract for reduction sum, which is unaffected.",
        _mean_accumulator_wraps,
        _ex(SEU, data=A([10], np.uint8), indices=A([0]), updates=A([255], np.uint8), axis=A(0),
            reduction="mean")),
    Divergence(
        "ov-seu-bfloat16-truncates", _OV, (SEU,), "value", "bf16 sum/prod/mean results are truncated",
        "The contract computes bf16 in f32 and rounds once to nearest. The CPU converts the f32 result to "
        "bf16 toward zero: 1 + 0.005859375 -> 1 (nearest: 1.0078125), 1.0859375^2 -> 1.171875 (nearest "
        "1.1796875), (1 + 0.005859375)/2 -> 0.5.",
        _bfloat16_rounding,
        _ex(SEU, data=A([1.0], BFLOAT16), indices=A([0]), updates=A([0.005859375], BFLOAT16), axis=A(0),
            reduction="sum")),
    Divergence(
        "ov-seu-minmax-nan-ignored", _OV, (SEU,), "value", "min/max ignore a NaN update",
        "The contract propagates NaN (numpy.minimum/maximum). The CPU keeps the accumulator when the "
        "comparison is false: min(1, NaN) -> 1 (a NaN already in data stays: max(NaN, 5) -> NaN). "
        "OpenVINO's core reference keeps the update instead (min(1, NaN) -> NaN, max(NaN, 5) -> 5).",
        lambda case: case["use_init_val"] and _nan_update_ignored(case),
        _ex(SEU, data=A([1.0, 2.0], np.float32), indices=A([0]), updates=A([np.nan], np.float32),
            axis=A(0), reduction="min")),
    Divergence(
        "ov-seu-minmax-nan-init0", _OV, (SEU,), "value",
        "use_init_val=0 min/max: NaN updates ignored, all-NaN gives -+FLT_MAX",
        "With use_init_val=0 a touched position starts from the neutral value (max of T for min, lowest "
        "for max) and the CPU ignores NaN updates, so a position that only receives NaN keeps the neutral "
        "value (+FLT_MAX for min, -FLT_MAX for max; f16/bf16 on an AVX2-only CPU: +inf/-inf, see "
        "ov-seu-init0-half-neutral-isa) where the contract gives NaN.",
        lambda case: not case["use_init_val"] and _nan_update_ignored(case),
        _ex(SEU, data=A([1.0, 2.0], np.float32), indices=A([0]), updates=A([np.nan], np.float32),
            axis=A(0), reduction="max", use_init_val=0)),
    Divergence(
        "ov-seu-init0-half-neutral-isa", _OV, (SEU,), "value",
        "f16/bf16 use_init_val=0 min/max of only infinities: depends on the CPU's instruction set",
        "With use_init_val=0 a touched position starts from the neutral value, lowest(T) for max and max(T) "
        "for min (the contract, OpenVINO's reduction_neutral_value), so updates that are all -inf (max) or "
        "+inf (min) leave lowest/max(T): bf16 -+3.3895e38, f16 -+65504. What the CPU plugin returns depends "
        "on the CPU: on an x86 Xeon with AVX-512/AMX it gave the contract's value (bf16 max of [-inf], "
        "conformance case gen/SEU/0010, 2026-11-22); on an AMD EPYC with AVX2 and no AVX-512 it gives the "
        "infinity itself, for f16 and bf16, min and max (2026-11-23), as if the neutral value were the f32 "
        "one rounded to the 16-bit type. Either outcome is accepted, nothing else; f32 gives -+FLT_MAX on "
        "both. (NaN updates: ov-seu-minmax-nan-init0.)",
        _half_init0_all_infinite,
        _ex(SEU, data=A([1.0, 2.0], BFLOAT16), indices=A([0, 0]), updates=A([-np.inf, -np.inf], BFLOAT16),
            axis=A(0), reduction="max", use_init_val=0),
        outcomes=(
            Outcome("the contract's lowest/max(T): x86 Xeon with AVX-512 and AMX, OpenVINO 2026.4.1 "
                    "(bf16, 2026-11-22; f16 not measured there)", lambda case: case.contract),
            Outcome("-inf (max) / +inf (min): AMD EPYC, AVX2 without AVX-512, OpenVINO 2026.4.1 (f16 and "
                    "bf16, 2026-11-23)", _neutral_as_infinity),
        )),
    Divergence(
        "ov-seu-minmax-signed-zero", _OV, (SEU,), "value", "min/max of -0.0 and 0.0 keeps the accumulator",
        "-0.0 == 0.0, so the kept zero depends on the tie rule. The contract (numpy.minimum/maximum, and "
        "OpenVINO's core reference) takes the later value: min(0.0, -0.0) -> -0.0; the CPU keeps the "
        "accumulator: -> 0.0 (measured for min and max, use_init_val 0 and 1).",
        _signed_zero_tie,
        _ex(SEU, data=A([0.0], np.float32), indices=A([0]), updates=A([-0.0], np.float32), axis=A(0),
            reduction="min")),
    Divergence(
        "ov-int64-as-int32", _OV, _ALL, "value", "i64/u64 are processed in 32 bits",
        "The CPU plugin computes i64/u64 in int32: Parameter values keep their low 32 bits, sign-extended "
        "(i64 2^40+1 -> 1, u64 2^31+5 -> 18446744071562067973, i64 2^31+5 -> -2147483643); Unique of "
        "[2^40+1, 2^40, 2^40+1] gives [0, 1]. Cases whose inputs and outputs stay in int32 are exact.",
        _wide_int_values,
        _ex(SEU, data=A([2**40, 0], np.int64), indices=A([1]), updates=A([2**40 + 1], np.int64), axis=A(0))),
    Divergence(
        "ov-uint32-as-int32", _OV, (SEU, UNIQUE, L2), "value", "u32 values >= 2^31 compared as int32",
        "Measured: SEU max of u32 2^31+5 and 2^30 gives 2^30; u32 mean of [2^31+2, 2^31, 2^31+4] gives "
        "3579139416 (the contract 2147483650); sorted Unique puts 2^31+1 before 1. none/sum/prod on u32 "
        "are bit-exact.",
        _uint32_high_values,
        _ex(SEU, data=A([2**31 + 5], np.uint32), indices=A([0]), updates=A([2**30], np.uint32), axis=A(0),
            reduction="max")),
    Divergence(
        "ov-f64-as-f32", _OV, _ALL, "value", "f64 is processed in f32",
        "The CPU plugin computes f64 in f32: 0.1 -> 0.10000000149, 1e300 and inf -> 3.4028234663852886e+38, "
        "ReduceL2 [0.1, 0.2] -> 0.22360680997371674; Unique merges 0.1 and 0.1+1e-12. Values f32 holds "
        "exactly, and whole-number arithmetic below 2^24, are exact.",
        _f64_not_exact_in_f32,
        _ex(SU, data=np.zeros(4), indices=A([0, 1, 2, 3]), updates=A([0.1, 1e300, 0.5, 1 / 3]),
            axis=A(0))),
    Divergence(
        "ov-reducel2-int-truncates", _OV, (L2,), "value", "integer ReduceL2 truncates",
        "The contract rounds half away from zero (OpenVINO's own reference test expects rounding). The CPU "
        "truncates: sqrt(13)=3.61 -> 3, sqrt(61)=7.81 -> 7, sqrt(80000)=282.8 -> 282.",
        _l2_integer_rounds_up,
        _ex(L2, data=A([[2, 3]], np.int32), axes=A([1]))),
    Divergence(
        "ov-reducel2-int-overflow", _OV, (L2,), "value", "integer ReduceL2 sum of squares overflows",
        "The contract sums squares exactly. The CPU sums i8/u8 in the 8-bit type (i8 [12,0] -> 11, "
        "u8 [200,200] -> 0; empty axes: i8 -128 -> 11) and wider types in int32 (i32 [40000,40000] -> "
        "-2147483648, u16 [40000,40000] -> 0, i64 [2^31+1] -> -2147483648).",
        _l2_overflows_cpu,
        _ex(L2, data=A([[40000, 40000]], np.int32), axes=A([1]))),
    Divergence(
        "ov-reducel2-empty-axes-no-keep", _OV, (L2,), "rejects",
        "empty axes with keep_dims=0 and rank >= 2 fail to compile",
        "Empty axes mean |x| (the contract, OpenVINO's reference and the CPU with keep_dims=1 or rank <= 1 "
        "agree). With keep_dims=0 and rank >= 2 the CPU plugin fails to compile: 'ReduceL2 node ... gets "
        "incorrect number of input/output dimensions'.",
        _l2_empty_axes_rank2_dropped,
        _ex(L2, data=A([[-3.0, 4.0]], np.float32), axes=A([], np.int64))),
    Divergence(
        "ov-reducel2-empty-byte-axes", _OV, (L2,), "rejects", "empty i8/u8 axes fail at inference",
        "An empty axes Constant of element type i8 or u8 makes the CPU plugin fail with 'ptr is Null' "
        "(shape inference); empty i16/u16/i32/u64 axes work.",
        _empty_byte_axes,
        _ex(L2, data=A([3.0, -4.0], np.float32), axes=A([], np.uint8), keep_dims=1)),
    Divergence(
        "ov-reducel2-empty-axes-square", _OV, (L2,), "value",
        "empty axes: |x| computed as sqrt(x*x) in f32 overflows and underflows",
        "Empty axes mean |x|. The CPU computes sqrt(x*x) in f32 (f32 and bf16 data): |x| above "
        "sqrt(FLT_MAX) ~ 1.8e19 gives inf (3e38, -3e38, 1e20 -> inf), |x| below ~1e-19 loses precision "
        "in the subnormal square (1e-22 -> 9.9e-23) or gives 0 (1e-30 -> 0). Matched element for element "
        "on 20000 random values per type; f16 data is exact (f64: ov-f64-as-f32).",
        _l2_empty_axes_square_inexact,
        _ex(L2, data=A([3e38, 1e-30, -2.5], np.float32), axes=A([], np.int64), keep_dims=1)),
    Divergence(
        "ov-reducel2-duplicate-axes", _OV, (L2,), "accepts", "duplicate axes are reduced once",
        "The contract rejects duplicate axes; OpenVINO accepts [1,1] and [1,-1] and reduces once "
        "([[3,4],[6,8]] -> [5,10]).",
        _l2_duplicate_axes,
        _ex(L2, data=A([[3.0, 4.0], [6.0, 8.0]], np.float32), axes=A([1, -1]))),
    Divergence(
        "ov-unique-axis-merge", _OV, (UNIQUE,), "value", "Unique with axis != 0 misses equal slices",
        "The CPU sometimes does not merge equal slices along axis != 0 (columns (1,3),(1,2),(1,2) -> 3 "
        "'unique' columns; 16 of OpenVINO's own reference cases fail), occasionally even without "
        "duplicates (4 of 400 random probes). axis 0 is correct.",
        _unique_axis_not_first,
        _ex(UNIQUE, data=A([[1, 1, 1], [3, 2, 2]], np.int32), axis=A(1))),
    Divergence(
        "ov-unique-byte-type-axis", _OV, (UNIQUE,), "value",
        "Unique of i8/u8/bool with an axis: wrong or uninitialised indices/counts",
        "With an axis, 1-byte types give wrong or uninitialised first indices and counts (garbage such as "
        "[-1921646591, 21921], changing between runs), also for 1-D data with axis 0. Without an axis "
        "they are correct.",
        _unique_byte_type_with_axis,
        _ex(UNIQUE, data=A([1, 0, 1, 1, 0], np.int8), axis=A(0), sorted=0)),
    Divergence(
        "ov-unique-nan", _OV, (UNIQUE,), "value", "Unique with NaN",
        "The contract treats all NaNs as equal and sorts them last. The CPU gives garbage when sorted "
        "([2,1,nan,1,2] -> values [1,2,nan,1,2], counts [2,2,0,2,2]) and keeps every NaN distinct when "
        "unsorted.",
        _unique_nan,
        _ex(UNIQUE, data=A([2.0, 1.0, np.nan, 1.0, 2.0], np.float32))),
    Divergence(
        "ov-unique-empty", _OV, (UNIQUE,), "value", "Unique of an empty input fails or returns stale data",
        "The contract gives empty outputs (with an axis: slices of size 0 are all equal). On a fresh "
        "compiled model the CPU raises 'Cannot get dims for non static shape' for (0,), for (0,2) without "
        "axis and for (2,0) with axis 0; on a compiled model that already ran, any empty input (also (0,3) "
        "with axis 0) returns the outputs of the previous inference or uninitialised values (f16 (0,5) after a "
        "(3,5) input with 3 unique values: outputs of shapes (3,), (3,), (15,), (3,)), which "
        "onnx_bridge.backends.openvino refuses: 'returned Unique outputs of shape'. With one inference "
        "thread it returns empty outputs (measured).",
        _unique_empty,
        _ex(UNIQUE, data=np.zeros((0, 3), np.float32), axis=A(1))),
    Divergence(
        "ov-unique-bfloat16-values", _OV, (UNIQUE,), "nondeterministic",
        "Unique of bf16: the values output is sometimes garbage",
        "On a compiled model reused with another input shape, the first values of the 'unique' output of a "
        "bf16 Unique are sometimes uninitialised (e.g. [3.14e+23, 0, 4.89e+23, 0, 2, 3, 4] for "
        "[-4,-3,-2,0,1,2,3]; 5 of 160 runs); indices and counts are right, f16 and a fresh model are fine.",
        _unique_bfloat16,
        _ex(UNIQUE, data=A([3, 3, -0.5, 3, 4.5, 2.5, 2.5], BFLOAT16))),
    Divergence(
        "ov-unique-axis-type", _OV, (UNIQUE,), "rejects", "Unique axis must be i32 or i64",
        "The contract takes any integer axis type; OpenVINO's Unique rejects an i8, u8 or u64 axis at "
        "build time.",
        _unique_axis_type,
        _ex(UNIQUE, data=A([3, 1, 3], np.int32), axis=A(0, np.int8))),
    Divergence(
        "ov-scatterupdate-scalar-indices", _OV, (SU,), "rejects", "ScatterUpdate 0-D indices rejected",
        "The contract allows 0-D indices (OpenVINO's reference too); the CPU plugin refuses them: "
        "'ScatterUpdate node ... do not support scalar input'. (ScatterElementsUpdate 0-D data is "
        "rejected by the contract as well.)",
        _scalar_indices,
        _ex(SU, data=np.zeros((3, 2), np.float32), indices=A(1), updates=A([5.0, 6.0], np.float32),
            axis=A(0))),
    Divergence(
        "ov-scatterupdate-duplicates-nondeterministic", _OV, (SU,), "nondeterministic",
        "ScatterUpdate with duplicate indices is nondeterministic",
        "The contract: the last duplicate wins. The CPU copies the updates in parallel over (batch, index), "
        "so an earlier duplicate sometimes wins: 3000 updates to one index give the last or the middle one "
        "from run to run (n=10000: 5000 or 10000), and small ones too: 57 of 5000 random f32 cases with "
        "2-39 indices on 1-7 slots (0 of 5000 with INFERENCE_NUM_THREADS=1); u8 data [6,1], indices "
        "[[1],[0],[1]], updates [[11],[9],[7]] gave [9,11] about once in 1500 runs (the conformance run hit "
        "it). Not flagged: 1-D data of <= 64 elements of 16/32/64-bit integers with indices of rank <= 1, "
        "which the plugin updates sequentially (0 of 27000 random cases).",
        _duplicate_indices_threaded,
        _ex(SU, data=np.zeros(10, np.float32), indices=np.full(3000, 3),
            updates=np.arange(1, 3001, dtype=np.float32), axis=A(0))),
    Divergence(
        "ov-axis-two-elements", _OV, (SEU,), "accepts", "a 2-element axis is accepted",
        "The contract requires a scalar or 1-element axis; OpenVINO's ScatterElementsUpdate accepts [0,1] "
        "and uses the first element.",
        _two_element_axis,
        _ex(SEU, data=np.zeros((2, 2), np.float32), indices=A([[1, 0]]), updates=A([[1.0, 2.0]], np.float32),
            axis=A([0, 1]))),
    Divergence(
        "ov-seu-large-non-axis-dim", _OV, (SEU,), "accepts",
        "indices larger than data on a non-axis dimension are accepted",
        "The contract rejects them; OpenVINO writes through the flattened offset (data(2,2), idx [[0,1,0]], "
        "upd [[1,2,3]] -> [[1,0],[3,2]]), past the end of the buffer for larger shapes. "
        "onnx_bridge.backends.openvino refuses such inputs.",
        _seu_large_non_axis_dim,
        _ex(SEU, data=np.zeros((2, 2), np.float32), indices=A([[0, 1, 0]]),
            updates=A([[1.0, 2.0, 3.0]], np.float32), axis=A(0))),
    Divergence(
        "ov-index-read-in-32-bits", _OV, (SEU, SU), "accepts", "index values are read in 32 bits",
        "Index values outside int32 are read modulo 2^32: i64 2^32 -> 0 and u64 2^32+1 -> 1 are silently "
        "valid, u32 2^32-1 -> -1 (position d-1 in ScatterElementsUpdate). The contract rejects them. "
        "onnx_bridge.backends.openvino refuses such inputs (they can also become indices below -d).",
        _index_outside_int32,
        _ex(SU, data=np.zeros(4, np.float32), indices=A([2**32]), updates=A([7.0], np.float32), axis=A(0))),
    Divergence(
        "ov-scatter-index-out-of-range", _OV, (SEU, SU), "crashes",
        "out-of-range indices crash the process or corrupt the heap",
        "ScatterElementsUpdate has no lower bound check: -5 on a dimension of 4 gives SIGSEGV, 'free(): "
        "invalid next size' or 'double free or corruption'; -100 silently returns zeros. Indices OpenVINO "
        "does report (>= d; negative for ScatterUpdate) raise, but leave the heap corrupted: with one CPU "
        "core, index 3 on size 3, then any other model, then the same op again segfaulted. The contract "
        "rejects all of them; onnx_bridge.backends.openvino refuses them before OpenVINO sees them.",
        _index_out_of_range,
        _ex(SEU, data=np.zeros(4, np.float32), indices=A([-5]), updates=A([1.0], np.float32), axis=A(0))),

    # --- onnxruntime standard ops (what lowered models run) ------------------------------------------
    Divergence(
        "ort-unique-nan", "onnxruntime", (UNIQUE,), "value", "Unique with NaN is wrong",
        "ORT's Unique orders values with '<' in a std::map, so NaN compares equal to everything: "
        "[nan,1,nan,2,1] -> Y [nan], counts [6]; [1,nan,2,nan,1,3,0.5] -> NaNs vanish. The contract merges "
        "NaNs into one value sorted last.",
        _unique_nan,
        _ex(UNIQUE, data=A([np.nan, 1.0, np.nan, 2.0, 1.0], np.float32))),
    Divergence(
        "ort-reducel2-int-truncates", "onnxruntime", (L2,), "value", "integer ReduceL2 truncates",
        "ORT's int32/int64 ReduceL2 truncates ([[2,3],[6,5],[4,7]] -> [3,7,8]); the contract rounds "
        "(sqrt(13) -> 4). ORT sums int32 squares without overflow ([50000,50000] -> 70710).",
        _l2_integer_rounds_up,
        _ex(L2, data=A([[2, 3]], np.int32), axes=A([1]))),
    Divergence(
        "ort-scatterelements-minmax-nan-replaced", "onnxruntime", (SEU,), "value",
        "ScatterElements min/max replace a NaN by a later value",
        "ORT computes acc < u ? acc : u (max likewise), so a NaN update propagates but a NaN already held "
        "is replaced by the next update: data [1,NaN], updates [NaN,5] -> [NaN,5]. The contract gives "
        "[NaN,NaN].",
        _nan_replaced_by_later_update,
        _ex(SEU, data=A([np.nan], np.float32), indices=A([0]), updates=A([5.0], np.float32), axis=A(0),
            reduction="min")),
    Divergence(
        "ort-scatternd-negative-indices", "onnxruntime", (SU,), "accepts",
        "ScatterND accepts negative indices",
        "ScatterUpdate lowers to ScatterND, which accepts negative indices (counted from the end); the "
        "contract rejects them.",
        _negative_index,
        _ex(SU, data=np.zeros(3, np.float32), indices=A([-1]), updates=A([1.0], np.float32), axis=A(0))),

    # --- ONNX reference evaluator (standard ops) ------------------------------------------------------
    Divergence(
        "ref-scatterelements-minmax-nan-ignored", "onnx-reference", (SEU,), "value",
        "ScatterElements min/max ignore a NaN update",
        "onnx.reference uses Python min/max, which keep the accumulator when the comparison is false: "
        "data [1,NaN], updates [NaN,5] -> [1,NaN]. The contract gives [NaN,NaN].",
        _nan_update_ignored,
        _ex(SEU, data=A([1.0], np.float32), indices=A([0]), updates=A([np.nan], np.float32), axis=A(0),
            reduction="min")),
    Divergence(
        "ref-reducel2-float16", "onnx-reference", (L2,), "value", "float16 ReduceL2 accumulates in float16",
        "The contract accumulates float16 in float32 or wider; onnx.reference sums in float16, so "
        "[300,300] overflows to inf (the contract 424.25) and sums round at every step.",
        _float16_reduction,
        _ex(L2, data=A([[300, 300]], np.float16), axes=A([1]))),
    Divergence(
        "ref-reducel2-int-truncates", "onnx-reference", (L2,), "value",
        "integer ReduceL2 truncates and overflows",
        "onnx.reference truncates (sqrt(8), sqrt(5), sqrt(2) -> 2, 2, 1) and sums squares in the input "
        "type (int32 [50000,50000] -> INT_MIN); the contract rounds and sums exactly.",
        lambda case: _l2_integer_rounds_up(case) or _l2_overflows_type(case),
        _ex(L2, data=A([[2, 3]], np.int32), axes=A([1]))),
    Divergence(
        "ref-unique-unsorted-nd", "onnx-reference", (UNIQUE,), "value",
        "Unique sorted=0 is broken for >= 2-D inputs",
        "onnx.reference's sorted=0 raises IndexError or returns a wrong-shaped Y for flattened >= 2-D "
        "input or axis != 0; 1-D input is correct.",
        _unique_unsorted_nd,
        _ex(UNIQUE, data=A([[3, 1], [3, 2]], np.int64), sorted=0)),
    Divergence(
        "ref-scatterelements-shape-unchecked", "onnx-reference", (SEU,), "accepts",
        "ScatterElements does not check updates' shape",
        "onnx.reference silently uses the indices' shape when updates differ; the contract rejects the "
        "mismatch.",
        _seu_shape_mismatch,
        _ex(SEU, data=np.zeros(3, np.float32), indices=A([0]), updates=A([1.0, 2.0], np.float32), axis=A(0))),

    Divergence(
        "ref-gatherelements-smaller-indices", "onnx-reference", (SEU,), "rejects",
        "GatherElements rejects indices smaller than data on a non-axis dimension",
        "ONNX lets indices be smaller than data on every dimension and onnxruntime runs that; onnx.reference's "
        "GatherElements raises 'all dimensions of index and self should be the same size' (data (3,2), "
        "indices (1,1), axis 0 or 1). The lowered ScatterElementsUpdate gathers from data at the indices "
        "for float min/max with use_init_val=1 (NaN handling); mean and use_init_val=0 gather from tensors "
        "shaped like the box the indices reach, which run.",
        _lowered_gather_smaller_indices,
        _ex(SEU, data=np.zeros((2, 2), np.float32), indices=A([[0, 0]]), updates=A([[1.0, 3.0]], np.float32),
            axis=A(1), reduction="max", use_init_val=1)),
    Divergence(
        "ref-scatterelements-minmax-signed-zero", "onnx-reference", (SEU,), "value",
        "ScatterElements min/max of -0.0 and 0.0 keeps the accumulator",
        "onnx.reference uses Python min/max, which keep the first of equal values: min(0.0, -0.0) -> 0.0, "
        "min(-0.0, 0.0) -> -0.0. The contract (numpy.minimum/maximum) takes the later value: -0.0 and 0.0.",
        _signed_zero_tie,
        _ex(SEU, data=A([0.0], np.float32), indices=A([0]), updates=A([-0.0], np.float32), axis=A(0),
            reduction="min")),

    # --- torch ----------------------------------------------------------------------------------------
    Divergence(
        "torch-scatter-negative-indices", "torch", (SEU,), "rejects", "scatter_reduce rejects negative indices",
        "torch raises 'index -1 is out of bounds'; the contract counts negative indices from the end.",
        _negative_index,
        _ex(SEU, data=np.zeros(3, np.float32), indices=A([-1]), updates=A([1.0], np.float32), axis=A(0))),
    Divergence(
        "torch-scatter-init0-infinity", "torch", (SEU,), "value",
        "include_self=False amax/amin of only -inf/+inf gives the infinity",
        "With use_init_val=0 a touched position starts from OpenVINO's neutral value, lowest/max of T "
        "(finite: -FLT_MAX for max), so updates that are all -inf give -FLT_MAX; torch's include_self=False "
        "reduces the updates alone and gives -inf.",
        _init0_all_infinite,
        _ex(SEU, data=A([1.0], np.float32), indices=A([0]), updates=A([-np.inf], np.float32), axis=A(0),
            reduction="max", use_init_val=0)),
    Divergence(
        "torch-unique-nan", "torch", (UNIQUE,), "value", "torch.unique keeps every NaN distinct",
        "torch.unique returns each NaN as its own value ([nan,1,nan,2,1] -> [1,2,nan,nan]); the contract "
        "merges them.",
        _unique_nan,
        _ex(UNIQUE, data=A([np.nan, 1.0, np.nan], np.float32))),
    Divergence(
        "torch-unique-unsorted", "torch", (UNIQUE,), "value", "torch.unique has no first-occurrence order",
        "torch.unique(sorted=False) on CPU still returns sorted output and has no first-occurrence "
        "indices output; the contract's sorted=0 is the order of first occurrence.",
        _unique_unsorted_not_ascending,
        _ex(UNIQUE, data=A([3, 1, 3], np.int64), sorted=0)),
    Divergence(
        "torch-scatter-narrow-accumulator", "torch", (SEU,), "value",
        "scatter_reduce mean keeps the sum in the data type",
        "The contract's mean sums exactly (floats in float32) and rounds once. torch stores the sum in the "
        "data type before dividing (then floors integers): integer sums wrap (int8 mean of -43,-43,-43 -> 42, "
        "int32 2^30+2^30 -> -2^30, int64 likewise), float16/bfloat16 sums are rounded to the type (float16 "
        "-40000,-40000 -> -inf, the contract -40000). This model of torch matched 5600 random mean cases "
        "bit for bit (int8 to int64, float16, bfloat16); sum, prod and float32/float64 agree.",
        _mean_sum_leaves_type,
        _ex(SEU, data=A([-43], np.int8), indices=A([0, 0]), updates=A([-43, -43], np.int8), axis=A(0),
            reduction="mean")),
    Divergence(
        "torch-seu-minmax-signed-zero", "torch", (SEU,), "value",
        "amin/amax of -0.0 and 0.0 keep the first value",
        "-0.0 == 0.0: torch keeps the first participating value (data with include_self, else the first "
        "update): min(0.0, -0.0) -> 0.0, and with include_self=False updates [-0.0, 0.0] -> -0.0. The "
        "contract (numpy.minimum/maximum) takes the later value.",
        _signed_zero_tie,
        _ex(SEU, data=A([0.0], np.float32), indices=A([0]), updates=A([-0.0], np.float32), axis=A(0),
            reduction="min")),
    Divergence(
        "torch-unique-signed-zero", "torch", (UNIQUE,), "value",
        "torch.unique keeps the -0.0 or 0.0 its sort puts first",
        "The contract keeps the first occurrence's zero. torch.unique keeps the zero its sort puts first: "
        "the first occurrence up to 16 elements, beyond that either one ([-0.0] + 16 x [0.0] -> 0.0, "
        "[0.0] + 16 x [-0.0] -> -0.0), sorted or not, with or without dim.",
        _unique_signed_zeros,
        _ex(UNIQUE, data=A([-0.0] + [0.0] * 16, np.float32))),
    Divergence(
        "torch-unique-empty-slices", "torch", (UNIQUE,), "rejects",
        "torch.unique(dim) rejects an empty dimension other than dim",
        "The contract gives one unique (empty) slice, or none when the axis is empty too; torch.unique(dim=a) "
        "raises 'There are 0 sized dimensions, and they aren't selected' when another dimension is 0 ((0,3) "
        "with dim 1, (2,0,3) with dim 0 or 2), and 'Number of zero sized dimensions is more than one' for "
        "(0,0).",
        _unique_other_dimension_empty,
        _ex(UNIQUE, data=np.zeros((0, 3), np.int64), axis=A(1))),
    Divergence(
        "torch-indexcopy-empty-unchecked", "torch", (SU,), "accepts",
        "index_copy does not check indices when data has another empty dimension",
        "With nothing to copy (a dimension of data other than the axis is 0), index_copy returns data for "
        "any index (data (0,1), axis 1, indices [1,1,5], [-5] or [10^12]); the contract rejects indices "
        "outside [0, d-1] even when nothing is written. An empty axis dimension is checked.",
        _empty_slices_index_out_of_range,
        _ex(SU, data=np.zeros((0, 1), np.float32), indices=A([1, 5]), updates=np.zeros((0, 2), np.float32),
            axis=A(1))),
    Divergence(
        "torch-norm-single-element", "torch", (L2,), "value",
        "vector_norm of one element is |x| (no overflow or underflow of x*x)",
        "When the reduced dimensions hold one element (size 1), torch.linalg.vector_norm returns |x|; the "
        "contract squares in the float type (float32 for float32/bfloat16): 3e38 and 2e19 -> inf, 1e-30 "
        "-> 0 (torch 3e38, 2e19, 1e-30), float64 1e300 -> inf. With two or more elements torch squares "
        "too ([3e38, 0] -> inf); float16 data cannot overflow float32 squares.",
        _l2_single_element_square_inexact,
        _ex(L2, data=A([[3e38], [1e-30]], np.float32), axes=A([1]))),
    Divergence(
        "torch-norm-integer", "torch", (L2,), "rejects", "no L2 norm of integer tensors",
        "torch.linalg.vector_norm rejects integer input ('Expected a floating point or complex tensor'), "
        "even with dtype=float32.",
        _is_integer_data,
        _ex(L2, data=A([[3, 4]], np.int32), axes=A([1]))),
)



def _from_units() -> tuple[Divergence, ...]:
    """The divergences the units declare (custom_ops.unit.Divergence), as entries of this table."""
    entries = []
    for unit in units():
        if not present(unit.divergences):
            continue
        ports = [port.name for port in unit.newest.inputs]
        for row in unit.divergences:
            example = dict(zip(ports, row.example.inputs))
            entries.append(Divergence(
                row.id, row.backend, (unit.op_type,), row.kind, row.title, row.reason,
                lambda case, row=row: row.predicate(case.inputs, case.attributes),
                lambda op=unit.op_type, example=example, row=row: Case(op, example, row.example.attributes)))
    return tuple(entries)


DIVERGENCES += _from_units()
BY_ID = {d.id: d for d in DIVERGENCES}
assert len(BY_ID) == len(DIVERGENCES), "divergence ids must be unique"


def matching(backend: str, case: Case) -> list[Divergence]:
    """The divergences of `backend` that apply to `case`."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    return [d for d in DIVERGENCES if d.backend == backend and d.applies(case)]


def to_markdown() -> str:
    """The table as Markdown (docs/divergences.md is generated from it)."""
    lines = ["# Known divergences from the contract", "",
             "Generated from `onnx_bridge/divergences.py` (`python -m onnx_bridge.divergences > "
             "docs/divergences.md`); do not edit by hand.", "",
             "Where another runtime differs from the contract (`DIALECT.md`), the tests assert the contract's "
             "value and report the entry that applies. Kinds: " + ", ".join(f"`{k}`" for k in KINDS) + ".", ""]
    titles = {"openvino-cpu": "OpenVINO CPU plugin (native ops)",
              "onnxruntime": "onnxruntime (standard ONNX ops, as in lowered models)",
              "onnx-reference": "ONNX reference evaluator (standard ONNX ops)", "torch": "torch"}
    for backend in BACKENDS:
        lines += [f"## {titles[backend]}", "", "| id | op | kind | divergence | reason |",
                  "|---|---|---|---|---|"]
        for d in (d for d in DIVERGENCES if d.backend == backend):
            ops = ", ".join(d.ops) if d.ops != _ALL else "all four"
            reason = d.reason
            if d.outcomes:
                reason += " **Depends on the machine; accepted outcomes, nothing else:** " + "; ".join(
                    f"({n}) {o.where}" for n, o in enumerate(d.outcomes, 1)) + "."
            lines.append(f"| `{d.id}` | {ops} | {d.kind} | {d.title} | {reason.replace('|', '/')} |")
        lines.append("")
    from .compare_explain import DEVIATIONS  # OpenVINO IR ops imported as standard ONNX
    lines += ["## OpenVINO IR ops imported as standard ONNX", "",
              "OpenVINO (CPU plugin, and its reference where marked) against the op's specification, which the "
              "import follows; declared in `onnx_bridge/compare_explain.py` `DEVIATIONS` (`onnx-bridge compare` "
              "names them).", "", "| id | op | divergence | OpenVINO's reference too | the converted model |",
              "|---|---|---|---|---|"]
    follows = {"converted": "follows the specification", "unknown": "specification leaves it open"}
    for d in DEVIATIONS:
        lines.append(f"| `{d.id}` | {d.op} | {d.title.replace('|', '/')} | {'yes' if d.reference_too else 'no'} "
                     f"| {follows.get(d.follows_spec, d.follows_spec)} |")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(to_markdown(), end="")
