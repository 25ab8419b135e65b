"""The one output comparer: how two runtimes' outputs are compared, everywhere in the project (conformance,
`onnx-bridge compare`, benchmarks, tests).

- Integers and bools compare exactly. Floats compare NaN-aware (NaN equals NaN at the same position,
  whatever its payload) within a `Tolerance`; the default per float type is the table TOLERANCES (what
  runtimes that accumulate in another order are allowed when comparing whole models); a call overrides
  it. `EXACT` is bit equality up to NaN payloads (-0.0 equals 0.0 unless `signed_zeros`).
- A float element agrees when it is equal, or within `ulps` representable values, or |Δ| <= atol +
  rtol·|want|, or |Δ| <= scale·ε·max|want| (accumulation order of a whole model; it also forgives the
  sign of zero). Infinities agree only with the same infinity.
- `measure(want, got)` gives per-output metrics: max |Δ|, relative L2 (||Δ||/||want||), the fraction of
  elements beyond tolerance, the first one, shape/dtype mismatches. `unordered=` compares an output whose
  order is not defined (the rows of detection outputs, TopK with ties) as a multiset: "rows" (the items are
  the rows of the array flattened to 2-D) or an axis (each 1-D slice along it is a multiset).
- `compare_arrays` / `compare` answer "first difference or None" (conformance's Difference), and
  `assert_same` raises AssertionError with the same text (tests).

The bounds for float accumulation (`tolerance_ulps` / `tolerance_bound`, from the unit's `accumulation_ulps`
/ `accumulation_bound`) and the ulp distance live here too.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import ml_dtypes
import numpy as np

from custom_ops.element_types import BFLOAT16, type_name


@dataclass(frozen=True)
class Tolerance:
    """What counts as agreement for float elements (integers and bools are always exact)."""

    rtol: float = 0.0
    atol: float = 0.0
    ulps: int = 0
    scale: float = 0.0  # K: |Δ| <= K·ε·max|want| (ε of the output type)
    signed_zeros: bool = False  # -0.0 vs 0.0 is a difference (when scale is 0)

    @property
    def exact(self) -> bool:
        return not (self.rtol or self.atol or self.ulps or self.scale)

    def text(self) -> str:
        parts = [f"{k}={v:g}" for k, v in (("rtol", self.rtol), ("atol", self.atol), ("ulps", self.ulps),
                                           ("scale", self.scale)) if v]
        return ", ".join(parts) or "exact"


EXACT = Tolerance()
#: Default float tolerances for comparing runtimes that accumulate in their own order (whole models).
TOLERANCES = {
    np.dtype(np.float16): Tolerance(rtol=1e-3, atol=1e-3),
    BFLOAT16: Tolerance(rtol=1e-2, atol=1e-2),
    np.dtype(np.float32): Tolerance(rtol=1e-4, atol=1e-4),
    np.dtype(np.float64): Tolerance(rtol=1e-7, atol=1e-7),
}
#: conformance model cases: K of |Δ| <= K·ε·max|contract output| for standard float ops of whole models
MODEL_TOLERANCE = 64
_FLOAT_BITS = {np.dtype(np.float16): np.uint16, BFLOAT16: np.uint16, np.dtype(np.float32): np.uint32,
               np.dtype(np.float64): np.uint64}


def default_tolerance(dtype) -> Tolerance:
    return TOLERANCES.get(np.dtype(dtype), EXACT)


def is_float(dtype) -> bool:
    return np.dtype(dtype) in _FLOAT_BITS


# ------------------------------------------------------------------------------------------------------
# Element-wise agreement


def ulp_distance(want: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Exact number of representable values between two float arrays of one type (uint64; -0.0 and 0.0
    are 0 apart). NaNs are not handled here."""
    width = want.dtype.itemsize * 8
    unsigned = _FLOAT_BITS[want.dtype]
    sign_bit = np.uint64(1 << (width - 1))
    a = want.view(unsigned).astype(np.uint64)
    b = got.view(unsigned).astype(np.uint64)
    a_mag, b_mag = a & ~sign_bit, b & ~sign_bit
    same_sign = (a & sign_bit) == (b & sign_bit)
    # Same sign: |a - b| in magnitudes; opposite signs: the distance through zero, a + b (< 2**64).
    return np.where(same_sign, np.maximum(a_mag, b_mag) - np.minimum(a_mag, b_mag), a_mag + b_mag)


@dataclass
class _Elements:
    """Element-wise verdict of two same-shape, same-dtype arrays (flattened to >= 1-D)."""

    differ: np.ndarray  # bool: beyond tolerance
    diff: np.ndarray | None  # float64 |Δ| (None for bools)
    ulp: np.ndarray | None  # float64 ulp distance, inf where one side is NaN (floats only)
    note: str = ""


def _elements(want: np.ndarray, got: np.ndarray, tolerance: Tolerance) -> _Elements:
    if want.dtype not in _FLOAT_BITS:
        differ = want != got
        diff = np.abs(want.astype(np.float64) - got.astype(np.float64)) if want.dtype.kind in "iu" else None
        return _Elements(differ, diff, None)
    wide_w, wide_g = want.astype(np.float64), got.astype(np.float64)
    w_nan, g_nan = np.isnan(wide_w), np.isnan(wide_g)
    both_nan, one_nan = w_nan & g_nan, w_nan != g_nan
    distance = ulp_distance(want, got)
    sign_only = (distance == 0) & (want.view(_FLOAT_BITS[want.dtype]) != got.view(_FLOAT_BITS[got.dtype])) \
        & ~both_nan
    if not tolerance.signed_zeros:
        sign_only &= False
    differ = ((distance > np.uint64(tolerance.ulps)) & ~both_nan) | one_nan | sign_only
    ulp = distance.astype(np.float64)
    ulp[one_nan] = np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(wide_w - wide_g)
        if (tolerance.rtol or tolerance.atol) and differ.any():
            differ &= ~(diff <= tolerance.atol + tolerance.rtol * np.abs(wide_w))
    if tolerance.scale and differ.any():
        magnitudes = np.abs(wide_w)
        finite = np.isfinite(magnitudes)
        bound = tolerance.scale * float(ml_dtypes.finfo(want.dtype).eps) * \
            (magnitudes[finite].max() if finite.any() else 0)
        differ &= ~(diff <= bound)  # NaN and inf gaps stay differences
        sign_only &= False
    note = ""
    if differ.any():
        if sign_only[differ].all():
            note = "differs only in the sign of zero"
        elif one_nan[differ].all():
            note = "NaN where the other has a number"
        elif tolerance.ulps:
            note = f"allowance {tolerance.ulps} ulp"
        elif tolerance.scale:
            note = f"beyond the model tolerance {tolerance.scale:g}·ε·max|contract|"
        elif not tolerance.exact:
            note = f"beyond {tolerance.text()}"
    return _Elements(differ, diff, ulp, note)


def _sorted_items(array: np.ndarray, unordered) -> np.ndarray:
    """`array` with its unordered items in a canonical order (see the module doc)."""
    if array.ndim == 0 or array.size == 0:
        return array
    if unordered == "rows":
        rows = array.reshape(array.shape[0], -1)
        keys = rows.astype(np.float64) if array.dtype == BFLOAT16 else rows
        order = np.lexsort(keys.T[::-1]) if rows.shape[1] else np.arange(rows.shape[0])
        return rows[order].reshape(array.shape)
    axis = int(unordered)
    if array.dtype == BFLOAT16:
        return np.take_along_axis(array, np.argsort(array.astype(np.float32), axis=axis, kind="stable"), axis)
    return np.sort(array, axis=axis, kind="stable")


# ------------------------------------------------------------------------------------------------------
# Metrics per output (onnx-bridge compare, benchmarks)


@dataclass
class OutputMetrics:
    """How `got` compares with `want` for one output."""

    name: str
    status: str  # "agree", "values", "shape", "dtype", "missing"
    dtype: str = ""
    shape: tuple = ()
    got_dtype: str = ""
    got_shape: tuple = ()
    max_abs: float = 0.0  # over finite pairs
    max_rel: float = 0.0  # max |Δ| / max(|want|, |got|) over finite pairs
    rel_l2: float = 0.0  # ||Δ||2 / ||want||2 over finite pairs (|Δ| when want is all zeros)
    beyond: float = 0.0  # fraction of elements beyond tolerance
    count: int = 0  # elements beyond tolerance
    total: int = 0
    first: tuple | None = None  # index of the first element beyond tolerance
    want_value: str = ""
    got_value: str = ""
    tolerance: str = ""
    unordered: str = ""  # "rows" / "axis N" when compared as a multiset
    note: str = ""

    @property
    def agree(self) -> bool:
        return self.status == "agree"

    def summary(self) -> str:
        if self.status == "missing":
            return f"{self.name}: missing"
        if self.status in ("shape", "dtype"):
            return (f"{self.name}: {self.status} {self.got_dtype}{list(self.got_shape)}, expected "
                    f"{self.dtype}{list(self.shape)}")
        text = (f"{self.name}: max |Δ| {_fmt(self.max_abs)}, rel L2 {_fmt(self.rel_l2)}, "
                f"{self.count}/{self.total} beyond {self.tolerance}")
        if self.first is not None:
            text += f" (first at {list(self.first)}: got {self.got_value}, expected {self.want_value})"
        if self.unordered:
            text += f"; compared order-insensitively ({self.unordered})"
        return text + (f" — {self.note}" if self.note else "")

    def to_json(self) -> dict:
        data = asdict(self)
        for key in ("shape", "got_shape", "first"):
            data[key] = None if data[key] is None else list(data[key])
        for key in ("max_abs", "max_rel", "rel_l2"):
            data[key] = data[key] if math.isfinite(data[key]) else str(data[key])
        data["agree"] = self.agree
        return data


def measure(want, got, name: str = "output", tolerance: Tolerance | None = None,
            unordered=None) -> OutputMetrics:
    """Metrics of one output; tolerance None: TOLERANCES by the output's type (integers exact)."""
    want, got = np.asarray(want), np.asarray(got)
    metrics = OutputMetrics(name, "agree", type_name(want.dtype), tuple(want.shape), type_name(got.dtype),
                            tuple(got.shape), total=int(want.size))
    tolerance = default_tolerance(want.dtype) if tolerance is None else tolerance
    metrics.tolerance = tolerance.text() if is_float(want.dtype) else "exact"
    if got.dtype != want.dtype:
        metrics.status = "dtype"
        return metrics
    if got.shape != want.shape:
        metrics.status = "shape"
        return metrics
    if unordered is not None:
        want, got = _sorted_items(want, unordered), _sorted_items(got, unordered)
        metrics.unordered = "rows" if unordered == "rows" else f"axis {unordered}"
    if want.size == 0:
        return metrics
    shape = want.shape
    want, got = want.reshape(shape or (1,)), got.reshape(shape or (1,))
    elements = _elements(want, got, tolerance)
    if elements.diff is not None:
        with np.errstate(invalid="ignore", over="ignore"):
            wide_w, wide_g = want.astype(np.float64), got.astype(np.float64)
            finite = np.isfinite(wide_w) & np.isfinite(wide_g)
            if finite.any():
                delta = np.abs(wide_w[finite] - wide_g[finite])
                metrics.max_abs = float(delta.max())
                scale = np.maximum(np.maximum(np.abs(wide_w[finite]), np.abs(wide_g[finite])),
                                   np.finfo(np.float64).tiny)
                metrics.max_rel = float((delta / scale).max())
                norm = float(np.linalg.norm(wide_w[finite]))
                metrics.rel_l2 = float(np.linalg.norm(delta)) / (norm if norm else 1.0)
    count = int(elements.differ.sum())
    if count:
        metrics.status = "values"
        metrics.count, metrics.beyond = count, count / want.size
        first = tuple(int(i) for i in np.argwhere(elements.differ)[0])
        metrics.first = first if shape else ()
        metrics.want_value, metrics.got_value = scalar_text(want[first]), scalar_text(got[first])
        metrics.note = elements.note
    return metrics


# ------------------------------------------------------------------------------------------------------
# First difference (conformance) and assertions (tests)


@dataclass
class Difference:
    """How a backend's result differs from the contract's (first difference, with magnitudes)."""

    kind: str  # "values", "shape", "dtype", "outputs", "accepted" (ran where the contract rejects)
    output: str = ""
    index: tuple | None = None
    want: str = ""
    got: str = ""
    count: int = 0  # differing elements
    total: int = 0
    max_abs: float | None = None
    max_ulp: float | None = None
    note: str = ""

    def summary(self) -> str:
        where = f"{self.output}" + (f"[{', '.join(map(str, self.index))}]" if self.index else "")
        if self.kind == "accepted":
            return f"returned a result where the contract rejects the input ({self.want})"
        if self.kind == "outputs":
            return f"{self.got} outputs, contract has {self.want}"
        if self.kind in ("shape", "dtype"):
            return f"{where}: {self.kind} {self.got}, contract {self.want}"
        text = f"{where}: got {self.got}, contract {self.want}; {self.count} of {self.total} differ"
        if self.max_abs is not None and math.isfinite(self.max_abs):
            text += f", max |Δ| {_fmt(self.max_abs)}"
        if self.max_ulp is not None and math.isfinite(self.max_ulp):
            text += f" ({_fmt(self.max_ulp)} ulp)"
        return text + (f" — {self.note}" if self.note else "")

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def scalar_text(value) -> str:
    """A scalar as users read it: -0.0 and nan spelled out, bfloat16/float16 shown in float32."""
    if isinstance(value, (np.bool_, bool)):
        return str(bool(value))
    if isinstance(value, (str, bytes)):   # an element of a string tensor
        return repr(value)
    if isinstance(value, np.generic) and value.dtype.kind in "iu":
        return str(int(value))
    number = float(np.float64(np.float32(value)) if np.asarray(value).dtype in (BFLOAT16, np.float16)
                   else value)
    if math.isnan(number):
        return "nan"
    if number == 0:
        return "-0.0" if math.copysign(1, number) < 0 else "0.0"
    text = repr(number) if np.asarray(value).dtype == np.float64 else f"{number:.9g}"
    return text if any(c in text for c in ".en") else text + ".0"  # 3.0, not 3: it is a float


def tolerance_ulps(case) -> int:
    """ulps allowed on a dialect case's first output: its unit's `accumulation_ulps` (float work every
    runtime accumulates in its own order), else 0."""
    from custom_ops import unit_of
    unit = unit_of(case.op)
    if unit is None or unit.accumulation_ulps is None:
        return 0
    inputs = {name: value for name, value in case.inputs.items() if value is not None}
    return int(unit.accumulation_ulps(inputs, case.attributes))


def tolerance_bound(case) -> float:
    """|Δ| allowed on a dialect case's first output: its unit's `accumulation_bound` (float sums every
    runtime orders its own way, whose terms may cancel), else 0."""
    from custom_ops import unit_of
    unit = unit_of(case.op)
    if unit is None or unit.accumulation_bound is None:
        return 0.0
    inputs = {name: value for name, value in case.inputs.items() if value is not None}
    return float(unit.accumulation_bound(inputs, case.attributes))


def compare_arrays(want: np.ndarray, got: np.ndarray, name: str, ulps: int = 0, scale: float = 0, *,
                   atol: float = 0, tolerance: Tolerance | None = None, unordered=None) -> Difference | None:
    """None when `got` agrees with `want`; else the first difference. Default: the conformance rule (exact,
    the sign of zero counts) with `ulps` / `scale` / `atol` allowances; `tolerance` replaces it."""
    want, got = np.asarray(want), np.asarray(got)
    tolerance = tolerance or Tolerance(ulps=ulps, scale=scale, atol=atol, signed_zeros=True)
    if got.dtype != want.dtype:
        return Difference("dtype", name, want=type_name(want.dtype), got=type_name(got.dtype))
    if got.shape != want.shape:
        return Difference("shape", name, want=str(list(want.shape)), got=str(list(got.shape)))
    if unordered is not None:
        want, got = _sorted_items(want, unordered), _sorted_items(got, unordered)
    if want.size == 0:
        return None
    scalar = want.ndim == 0
    want, got = want.reshape(want.shape or (1,)), got.reshape(got.shape or (1,))
    elements = _elements(want, got, tolerance)
    if not elements.differ.any():
        return None
    difference = _difference(want, got, name, elements)
    if scalar:
        difference.index = None
    return difference


def _difference(want, got, name, elements: _Elements) -> Difference:
    differ, diff, ulp = elements.differ, elements.diff, elements.ulp
    first = tuple(int(i) for i in np.argwhere(differ)[0])
    finite = diff[differ] if diff is not None else None
    max_abs = max_ulp = None
    if finite is not None and np.isfinite(finite).any():
        max_abs = float(np.nanmax(np.where(np.isfinite(finite), finite, np.nan)))
    if ulp is not None and np.isfinite(ulp[differ]).any():
        max_ulp = float(ulp[differ][np.isfinite(ulp[differ])].max())
    return Difference("values", name, index=first, want=scalar_text(want[first]), got=scalar_text(got[first]),
                      count=int(differ.sum()), total=int(want.size), max_abs=max_abs, max_ulp=max_ulp,
                      note=elements.note)


def compare(want: tuple, got: tuple, names: tuple[str, ...], ulps: int = 0, scale: float = 0, *,
            atol: float = 0, tolerance: Tolerance | None = None) -> Difference | None:
    """None when every output of `got` agrees with `want`. ulps, atol: allowances on the first output;
    scale: K of the model tolerance (every float output). All apply to floats only."""
    if len(got) != len(want):
        return Difference("outputs", want=str(len(want)), got=str(len(got)))
    for index, (w, g) in enumerate(zip(want, got)):
        name = names[index] if index < len(names) else f"output {index}"
        difference = compare_arrays(np.asarray(w), np.asarray(g), name, ulps if index == 0 else 0, scale,
                                    atol=atol if index == 0 else 0, tolerance=tolerance)
        if difference:
            return difference
    return None


def largest_gap(want: tuple, got: tuple) -> tuple[float, float]:
    """(max |Δ|, max ulps) over the float outputs of two results already found equal within tolerance."""
    gap = ulp = 0.0
    for w, g in zip(want, got):
        w, g = np.asarray(w), np.asarray(g)
        if w.dtype in _FLOAT_BITS and w.size and w.shape == g.shape and w.dtype == g.dtype:
            finite = np.isfinite(w.astype(np.float64)) & np.isfinite(g.astype(np.float64))
            if finite.any():
                gap = max(gap, float(np.abs(w.astype(np.float64) - g.astype(np.float64))[finite].max()))
                ulp = max(ulp, float(ulp_distance(w[finite], g[finite]).max()))
    return gap, ulp


def tolerance_of(rtol: float = 0.0, atol: float = 0.0, **more) -> Tolerance:
    """A Tolerance from numpy-style keywords ({} gives EXACT)."""
    return replace(EXACT, rtol=rtol, atol=atol, **more)


def assert_same(got, want, tolerance: Tolerance | dict | None = EXACT, what: str = "") -> None:
    """AssertionError naming the output and its first difference unless every output of `got` agrees with
    `want` (same count, dtype, shape; integers and bools exact; floats within `tolerance`, NaN == NaN,
    -0.0 == 0.0 unless tolerance.signed_zeros). A dict is numpy-style rtol/atol. None: TOLERANCES."""
    if isinstance(tolerance, dict):
        tolerance = tolerance_of(**tolerance)
    got, want = list(got), list(want)
    assert len(got) == len(want), f"{what}: {len(got)} outputs, expected {len(want)}"
    for index, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        label = f"{what} output {index}".strip()
        assert g.dtype == w.dtype, f"{label}: dtype {g.dtype} != {w.dtype}"
        assert g.shape == w.shape, f"{label}: shape {g.shape} != {w.shape}"
        rule = default_tolerance(w.dtype) if tolerance is None else tolerance
        difference = compare_arrays(w, g, label, tolerance=rule)
        assert difference is None, difference.summary() + f" (tolerance {rule.text()})"
