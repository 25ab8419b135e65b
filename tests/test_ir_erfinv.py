"""ErfInv-17 import against OpenVINO's reference formula (openvino/reference/erfinv.hpp: Giles' rational
approximation in double, written out here in numpy with the C library's log) on dense grids of f32 and every
f16 value, and special values; against OpenVINO's CPU plugin on the special values and within the bound of its
declared single-precision approximation. Exact: the lowering evaluates the same operations in the same order."""
from __future__ import annotations

import math

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import opset1, opset17  # noqa: E402

import onnx_bridge  # noqa: E402
from converters.openvino_ir import import_ir, to_openvino  # noqa: E402
from custom_ops._types import BFLOAT16  # noqa: E402
from tests.helpers.ir_cases import LIBM, P, assert_same, ov_run  # noqa: E402

pytestmark = pytest.mark.openvino

CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
           -0.00417768164, 0.246640727, 1.50140941)
TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
        -0.00943887047, 1.00167406, 2.83297682)
_LOG = np.frompyfunc(math.log, 1, 1)  # the C library's log, as the reference calls std::log


def reference(values: np.ndarray) -> np.ndarray:
    """openvino::reference::erfinv, element by element in double, rounded to the input's type."""
    with np.errstate(all="ignore"):
        x = values.astype(np.float64)
        t = (1.0 - x) * (1.0 + x)
        w = np.full_like(x, np.nan)
        inside = t > 0
        w[inside] = -_LOG(t[inside]).astype(np.float64)
        central, tail = np.full_like(x, CENTRAL[0]), np.full_like(x, TAIL[0])
        s, s_tail = w - 2.5, np.sqrt(w) - 3.0
        for c, d in zip(CENTRAL[1:], TAIL[1:]):
            central, tail = c + central * s, d + tail * s_tail
        y = np.where(w < 5.0, central, tail) * x
    y = np.where(x >= 1, np.where(x > 1, np.nan, np.inf), y)
    y = np.where(x <= -1, np.where(x < -1, np.nan, -np.inf), y)
    y = np.where(x == 0, 0.0, y)
    return y if values.dtype == np.float64 else y.astype(np.float32).astype(values.dtype)


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, np.nextafter(1, 2), -np.nextafter(1, 2), 1.5, -2.0, np.inf, -np.inf, np.nan,
                    np.nextafter(1, 0), -np.nextafter(1, 0), 1e-45, -1e-45, 1e-38, 1e-20, 0.5, -0.25], np.float32)


def erfinv_model(element: str) -> ov.Model:
    x = P([-1], element, "x")
    return ov.Model([opset17.erfinv(x).output(0)], [x], "erfinv")


def _run(element: str, values: np.ndarray) -> np.ndarray:
    return onnx_bridge.InferenceSession(import_ir(erfinv_model(element))).run(None, {"x": values})[0]


def _assert_bits(got, want, what):
    """Same values bit for bit (the sign of zero too); NaN == NaN."""
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    differ = (got.view(width) != want.view(width)) & ~nan
    assert not differ.any(), f"{what}: {differ.sum()} differ, e.g. x index {np.argmax(differ)}: " \
                             f"{got[differ][:3]} vs {want[differ][:3]}"


def test_f32_dense_grid_matches_reference():
    """Every 4096th f32 in [0, 1], both signs (520k values: subnormals, tiny, both polynomial branches, the
    last values below 1), and the special values."""
    grid = np.arange(0, 0x3F800000 + 1, 4096, dtype=np.uint32).view(np.float32)
    values = np.concatenate([grid, -grid, SPECIAL])
    _assert_bits(_run("f32", values), reference(values), "f32 vs the reference")


def test_every_f16_value_matches_reference():
    values = np.arange(0, 1 << 16, dtype=np.uint16).view(np.float16)  # every value: NaNs, infinities, |x| > 1 too
    _assert_bits(_run("f16", values), reference(values), "f16 vs the reference")


def test_every_bf16_value_matches_reference():
    """bf16 inside the model (onnxruntime's Python API cannot feed it): f32 -> Convert -> ErfInv -> Convert."""
    values = np.arange(0, 1 << 16, dtype=np.uint16).view(BFLOAT16)
    x = P([-1], "f32", "x")
    inner = opset17.erfinv(opset1.convert(x, "bf16"))
    model = ov.Model([opset1.convert(inner, "f32").output(0)], [x], "erfinv_bf16")
    got = onnx_bridge.InferenceSession(import_ir(model)).run(None, {"x": values.astype(np.float32)})[0]
    _assert_bits(got.astype(BFLOAT16), reference(values), "bf16 vs the reference")


def test_f64_matches_reference_to_the_last_bits():
    """In f64 no rounding hides the log: onnxruntime's double Log is not the C library's (last bits)."""
    r = np.random.default_rng(17)
    values = np.concatenate([r.uniform(-1, 1, 20000), r.uniform(-1, 1, 2000) ** 15, 1 - r.uniform(0, 1e-12, 2000),
                             SPECIAL.astype(np.float64)])
    got, want = _run("f64", values), reference(values)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    np.testing.assert_array_max_ulp(got[finite], want[finite], maxulp=4)


def test_openvino_cpu_special_values_and_declared_bound():
    """OpenVINO's CPU plugin agrees on 0, +-1, |x| > 1 and NaN; elsewhere it runs its own single-precision
    code (declared in the rule's notes): within 1.1e-4 relative of the reference on normal results (1.04e-4
    measured on every 64th f32 in [0, 1]; 7.7e-4 on subnormal ones)."""
    want = reference(SPECIAL)
    cpu = ov_run(erfinv_model("f32"), {"x": SPECIAL})[0]
    agree = np.isin(SPECIAL, [0.0, 1.0, -1.0, 1.5, -2.0]) | np.isnan(SPECIAL)
    assert_same([cpu[agree]], [want[agree]], {}, "CPU vs the reference (special values)")
    grid = np.linspace(-1, 1, 20001, dtype=np.float32)[1:-1]
    cpu, ours = ov_run(erfinv_model("f32"), {"x": grid})[0], _run("f32", grid)
    inside = ours != 0
    assert np.max(np.abs(cpu[inside] / ours[inside] - 1)) < 1.1e-4


def test_back_to_openvino():
    """OpenVINO reads the lowering back; its CPU plugin computes the double-precision graph in f32 (with its own
    log), so the results agree to the last bits of f32 only."""
    values = np.concatenate([np.linspace(-0.999, 0.999, 2001, dtype=np.float32), SPECIAL[:11]])
    back = to_openvino(import_ir(erfinv_model("f32")))
    assert_same(ov_run(back, {"x": values}), [reference(values)], LIBM, "back in OpenVINO")


def test_integer_input_cannot_reach_the_import():
    """OpenVINO's ErfInv takes floats only; the rule's refusal of other types is never reached from a valid model."""
    with pytest.raises(Exception, match="floating-point"):
        opset17.erfinv(P([2], "i32", "x"))


def test_tail_is_openvinos_not_the_papers():
    """For |x| >= 0.99662536 (w >= 5) OpenVINO's tail polynomial has one coefficient's sign flipped against Giles'
    paper: the import follows OpenVINO (its CPU plugin too, within 1.1e-4), 5.3e-3 from the true erfinv at most."""
    x = np.array([0.9966, 0.99662536, 0.999, 0.99999], np.float32)
    got, cpu = _run("f32", x), ov_run(erfinv_model("f32"), {"x": x})[0]
    true = np.array([2.0711491, 2.0727961, 2.3267563, 3.1232058], np.float32)  # erfinv of the f32 inputs
    assert np.abs(got[0] / true[0] - 1) < 1e-6 and np.abs(got[1] / true[1] - 1) > 5e-3
    assert np.max(np.abs(cpu / got - 1)) < 1.1e-4
