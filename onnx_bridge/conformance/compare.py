"""Comparing a backend's outputs with the contract's: exact, except where accumulation order may differ.

Integers and bools compare bit for bit. Floats compare exactly too (NaN equals NaN whatever its payload;
-0.0 and 0.0 differ, and the difference says so), with one exception: ReduceL2 of floats, whose sum of
squares every runtime accumulates in its own order (pairwise, blocked, vectorised). There the allowance is
the error bound of that sum: n terms of relative error u each, halved by the square root, plus the final
roundings — `tolerance_ulps()`.

Whole models (model cases) also run standard float ops (MatMul, Softmax, ...) that every runtime
accumulates in its own order: their float outputs may differ by |Δ| <= K·ε·max|contract output| (K =
MODEL_TOLERANCE unless the caller says otherwise; 0 makes them exact). Integer outputs stay exact.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from custom_ops._types import BFLOAT16, compute_dtype, type_name

MODEL_TOLERANCE = 64
_FLOAT_BITS = {np.dtype(np.float16): np.uint16, BFLOAT16: np.uint16, np.dtype(np.float32): np.uint32,
               np.dtype(np.float64): np.uint64}


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


def tolerance_ulps(case) -> int:
    """ulps allowed on the case's first output (0 except ReduceL2 of floats; see module doc)."""
    if case.op != "ReduceL2" or case.data is None or case.data.dtype.kind not in "fV" \
            or case.data.dtype not in _FLOAT_BITS:
        return 0
    data, axes = case.data, np.asarray(case.inputs.get("axes", np.zeros(0))).reshape(-1)
    if not axes.size:
        return 0  # |x|: no arithmetic
    count = math.prod(data.shape[int(a) % data.ndim] for a in axes) if data.ndim else 1
    unit = float(ml_dtypes.finfo(compute_dtype(data.dtype)).eps) / 2
    out_eps = float(ml_dtypes.finfo(data.dtype).eps)
    return 2 + math.ceil(max(count - 1, 0) * unit / out_eps)


def compare(want: tuple, got: tuple, names: tuple[str, ...], ulps: int = 0, scale: float = 0) -> Difference | None:
    """None when `got` equals `want`. ulps: allowance on the first output; scale: K of the model tolerance
    (every float output). Both apply to floats only."""
    if len(got) != len(want):
        return Difference("outputs", want=str(len(want)), got=str(len(got)))
    for index, (w, g) in enumerate(zip(want, got)):
        name = names[index] if index < len(names) else f"output {index}"
        difference = compare_arrays(np.asarray(w), np.asarray(g), name, ulps if index == 0 else 0, scale)
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


def compare_arrays(want: np.ndarray, got: np.ndarray, name: str, ulps: int = 0,
                   scale: float = 0) -> Difference | None:
    if got.dtype != want.dtype:
        return Difference("dtype", name, want=type_name(want.dtype), got=type_name(got.dtype))
    if got.shape != want.shape:
        return Difference("shape", name, want=str(list(want.shape)), got=str(list(got.shape)))
    if want.size == 0:
        return None
    scalar = want.ndim == 0
    want, got = want.reshape(want.shape or (1,)), got.reshape(got.shape or (1,))
    if want.dtype in _FLOAT_BITS:
        difference = _compare_floats(want, got, name, ulps, scale)
    else:
        differ = want != got
        diff = np.abs(want.astype(np.float64) - got.astype(np.float64)) if want.dtype.kind in "iu" else None
        difference = _difference(want, got, name, differ, diff, None) if differ.any() else None
    if difference and scalar:
        difference.index = None
    return difference


def _compare_floats(want, got, name, ulps, scale=0):
    w_nan, g_nan = np.isnan(want.astype(np.float64)), np.isnan(got.astype(np.float64))
    distance = ulp_distance(want, got)
    both_nan, one_nan = w_nan & g_nan, w_nan != g_nan
    sign_only = (distance == 0) & (want.view(_FLOAT_BITS[want.dtype]) != got.view(_FLOAT_BITS[got.dtype])) \
        & ~both_nan
    differ = ((distance > np.uint64(ulps)) & ~both_nan) | one_nan | sign_only
    ulp = distance.astype(np.float64)
    ulp[one_nan] = np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(want.astype(np.float64) - got.astype(np.float64))
    if scale and differ.any():
        magnitudes = np.abs(want.astype(np.float64))
        finite = np.isfinite(magnitudes)
        bound = scale * float(ml_dtypes.finfo(want.dtype).eps) * (magnitudes[finite].max() if finite.any() else 0)
        differ &= ~(diff <= bound)  # NaN and inf gaps stay differences
        sign_only &= False
    if not differ.any():
        return None
    note = ""
    if sign_only[differ].all():
        note = "differs only in the sign of zero"
    elif (w_nan != g_nan)[differ].all():
        note = "NaN where the other has a number"
    elif ulps:
        note = f"allowance {ulps} ulp"
    elif scale:
        note = f"beyond the model tolerance {scale:g}·ε·max|contract|"
    return _difference(want, got, name, differ, diff, ulp, note)


def _difference(want, got, name, differ, diff, ulp, note=""):
    first = tuple(int(i) for i in np.argwhere(differ)[0])
    finite = diff[differ] if diff is not None else None
    max_abs = max_ulp = None
    if finite is not None and np.isfinite(finite).any():
        max_abs = float(np.nanmax(np.where(np.isfinite(finite), finite, np.nan)))
    if ulp is not None and np.isfinite(ulp[differ]).any():
        max_ulp = float(ulp[differ][np.isfinite(ulp[differ])].max())
    return Difference("values", name, index=first, want=scalar_text(want[first]), got=scalar_text(got[first]),
                      count=int(differ.sum()), total=int(want.size), max_abs=max_abs, max_ulp=max_ulp,
                      note=note)
