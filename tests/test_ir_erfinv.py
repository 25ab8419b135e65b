"""ErfInv-17 import: the inverse error function the specification defines, by Giles' rational approximation as
OpenVINO's reference (openvino/reference/erfinv.hpp) evaluates it in double, with the paper's sign of one tail
coefficient where the reference has it flipped. Against the true erfinv (float64 Newton on erf/erfc, checked
against mpmath) on a dense f32 grid, every f32 of the tail and every f16/bf16 value; bit for bit against the
formula written out here in numpy with the C library's log (OpenVINO's coefficients: equal exactly for
|x| < 0.99662536); against OpenVINO's CPU plugin within the bound of its single-precision code outside the tail
and by the declared deviation inside it."""
from __future__ import annotations

import math

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import opset1, opset17  # noqa: E402

import onnx_bridge  # noqa: E402
from converters.openvino_ir import import_ir, to_openvino  # noqa: E402
from custom_ops._types import BFLOAT16  # noqa: E402
from onnx_bridge import compare_explain  # noqa: E402
from tests.helpers.ir_cases import LIBM, P, assert_same, ov_run  # noqa: E402

pytestmark = pytest.mark.openvino

CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
           -0.00417768164, 0.246640727, 1.50140941)
#: the tail polynomial as in Giles' paper (the import) and as in OpenVINO's reference and CPU plugin
TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
        0.00943887047, 1.00167406, 2.83297682)
OPENVINO_TAIL = TAIL[:6] + (-0.00943887047,) + TAIL[7:]
TAIL_FROM = np.float32(0.99662536)  # the smallest f32 with w = -log((1 - x)(1 + x)) >= 5
_LOG = np.frompyfunc(math.log, 1, 1)  # the C library's log, as the reference calls std::log
_ERF, _ERFC = np.frompyfunc(math.erf, 1, 1), np.frompyfunc(math.erfc, 1, 1)


def reference(values: np.ndarray, tail=TAIL) -> np.ndarray:
    """openvino::reference::erfinv with `tail`'s coefficients, element by element in double, rounded to the
    input's type (reference(x, OPENVINO_TAIL) is OpenVINO's)."""
    with np.errstate(all="ignore"):
        x = values.astype(np.float64)
        t = (1.0 - x) * (1.0 + x)
        w = np.full_like(x, np.nan)
        inside = t > 0
        w[inside] = -_LOG(t[inside]).astype(np.float64)
        central, tail_poly = np.full_like(x, CENTRAL[0]), np.full_like(x, tail[0])
        s, s_tail = w - 2.5, np.sqrt(w) - 3.0
        for c, d in zip(CENTRAL[1:], tail[1:]):
            central, tail_poly = c + central * s, d + tail_poly * s_tail
        y = np.where(w < 5.0, central, tail_poly) * x
    y = np.where(x >= 1, np.where(x > 1, np.nan, np.inf), y)
    y = np.where(x <= -1, np.where(x < -1, np.nan, -np.inf), y)
    y = np.where(x == 0, 0.0, y)
    return y if values.dtype == np.float64 else y.astype(np.float32).astype(values.dtype)


def true_erfinv(values: np.ndarray) -> np.ndarray:
    """erfinv in float64 to about 1 ulp of double, for 0 < |x| < 1: Newton from the approximation, on erf for
    |x| < 0.5 and on erfc above (1 - |x| is exact for f32/f16/bf16 values)."""
    x = np.abs(values.astype(np.float64))
    y, small = reference(x), x < 0.5
    for _ in range(3):  # y stays finite: 0 < x < 1
        f = np.where(small, _ERF(y).astype(np.float64) - x, (1 - x) - _ERFC(y).astype(np.float64))
        y = y - f / (2 / math.sqrt(math.pi) * np.exp(-y * y))
    return np.copysign(y, values.astype(np.float64))


def ulps(got: np.ndarray, true: np.ndarray) -> np.ndarray:
    """|got - true| in units of the last place of got's type at true."""
    return np.abs(got.astype(np.float64) - true) / np.spacing(np.abs(true).astype(got.dtype)).astype(np.float64)


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


def _f32_grid() -> np.ndarray:
    """Every 4096th f32 in [0, 1] (subnormals, tiny, both polynomial branches) and every f32 from 0.9966 to 1."""
    return np.concatenate([np.arange(0, 0x3F800000 + 1, 4096, dtype=np.uint32).view(np.float32),
                           np.arange(np.float32(0.9966).view(np.uint32), 0x3F800000, dtype=np.uint32).view(np.float32)])


def test_f32_dense_grid_matches_reference():
    """The f32 grid, both signs (640k values), and the special values."""
    grid = _f32_grid()
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
    measured on every 64th f32 in [0, 1]; 7.7e-4 on subnormal ones); for |x| >= 0.99662536 of OpenVINO's
    formula (the declared deviation ov-erfinv-tail-coefficient)."""
    want = reference(SPECIAL)
    cpu = ov_run(erfinv_model("f32"), {"x": SPECIAL})[0]
    agree = np.isin(SPECIAL, [0.0, 1.0, -1.0, 1.5, -2.0]) | np.isnan(SPECIAL)
    assert_same([cpu[agree]], [want[agree]], {}, "CPU vs the reference (special values)")
    grid = np.linspace(-1, 1, 20001, dtype=np.float32)[1:-1]
    cpu, ours = ov_run(erfinv_model("f32"), {"x": grid})[0], _run("f32", grid)
    tail = np.abs(grid) >= TAIL_FROM
    assert tail.sum() == 66
    want = np.where(tail, reference(grid, OPENVINO_TAIL), ours)
    inside = ours != 0
    assert np.max(np.abs(cpu[inside] / want[inside] - 1)) < 1.1e-4


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


def test_oracle_is_the_true_erfinv():
    mpmath = pytest.importorskip("mpmath")
    x = np.concatenate([np.random.default_rng(5).uniform(-1, 1, 200), 1 - np.logspace(-7.2, -0.5, 100),
                        np.logspace(-44, -1, 100)]).astype(np.float32)
    want = np.array([float(mpmath.erfinv(float(v))) for v in x])
    assert np.max(np.abs(true_erfinv(x) / want - 1)) < 1e-15


def test_f32_within_the_formulas_accuracy_of_the_true_erfinv():
    """Giles' approximation is within 1.7e-7 relative in double; rounded to f32 that is 2.23 ulp at most
    (measured on every 16th f32 in (0, 1); 1.67 ulp on every f32 of the tail): bound 2.5 ulp."""
    grid = _f32_grid()
    grid = grid[(grid > 0) & (grid < 1)]
    got = _run("f32", np.concatenate([grid, -grid]))
    assert np.array_equal(got[len(grid):], -got[:len(grid)])
    error = ulps(got[:len(grid)], true_erfinv(grid))
    assert error.max() < 2.5, f"{error.max():.3f} ulp at x = {grid[np.argmax(error)]!r}"
    assert error[grid >= TAIL_FROM].max() < 2.0


@pytest.mark.parametrize("dtype", [np.float16, BFLOAT16], ids=["f16", "bf16"])
def test_every_f16_and_bf16_result_is_correctly_rounded(dtype):
    """0.5002 ulp at most: the approximation's error only shows on results almost halfway between two values."""
    values = np.arange(0, 1 << 16, dtype=np.uint16).view(dtype)
    with np.errstate(invalid="ignore"):
        wide = values.astype(np.float64)
    values = values[(np.abs(wide) < 1) & (wide != 0)]
    got = reference(values)  # the import, bit for bit (test_every_f16/bf16_value_matches_reference)
    error = ulps(got, true_erfinv(values))
    assert error.max() < 0.5002, f"{error.max():.5f} ulp at x = {values[np.argmax(error)]!r}"


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BFLOAT16], ids=["f32", "f16", "bf16"])
def test_differs_from_openvinos_formula_exactly_in_the_declared_tail(dtype):
    """Bit-exact with OpenVINO's coefficients for |x| < 0.99662536; different on almost every value above
    (the two tail polynomials agree near sqrt(w) = 3, where the flipped coefficient's term vanishes). No bf16
    value lies in the tail: bf16 results equal OpenVINO's formula everywhere."""
    if dtype == np.float32:
        values = _f32_grid()
    else:
        values = np.arange(0, 1 << 16, dtype=np.uint16).view(dtype)
    values = np.concatenate([values, -values])
    with np.errstate(invalid="ignore"):
        ours, openvino = reference(values).astype(np.float64), reference(values, OPENVINO_TAIL).astype(np.float64)
        size = np.abs(values.astype(np.float64))
    differ = (ours != openvino) & ~(np.isnan(ours) & np.isnan(openvino))
    tail = (size >= TAIL_FROM) & (size < 1)
    assert not (differ & ~tail).any(), values[differ & ~tail][:5]
    assert differ[tail].mean() > 0.95 if dtype != BFLOAT16 else not tail.any()  # bf16: 0.99609375, then 1
    if dtype == np.float32:
        assert TAIL_FROM in values[differ] and np.nextafter(TAIL_FROM, np.float32(0)) in values


def test_openvino_cpu_follows_its_formula_in_the_tail_and_the_deviation_is_declared():
    """OpenVINO's CPU plugin has the flipped coefficient too (within its 1.1e-4 of OpenVINO's formula there);
    the import is 5.2e-3 from it at 0.9967; compare_explain's table names the deviation for tail inputs only."""
    x = np.array([0.9967, -0.99662536, 0.999, 0.99999, 0.99999994], np.float32)
    got, cpu = _run("f32", x), ov_run(erfinv_model("f32"), {"x": x})[0]
    assert np.max(np.abs(cpu / reference(x, OPENVINO_TAIL) - 1)) < 1.1e-4
    assert np.max(ulps(got, true_erfinv(x))) < 2.0
    assert abs(got[0] / cpu[0] - 1) > 5e-3
    node = erfinv_model("f32").get_ordered_ops()[1]
    assert [d.id for d in compare_explain.matching(node, [x[:1]])] == ["ov-erfinv-tail-coefficient"]
    below = np.array([0.5, np.nextafter(TAIL_FROM, np.float32(0)), 1.0, -1.5, np.nan], np.float32)
    assert compare_explain.matching(node, [below]) == []


def test_compare_names_the_tail_deviation(monkeypatch):
    """`onnx-bridge compare` explains the difference by the deviation (the converted model follows the
    specification), also if OpenVINO's reference implementation (Node.evaluate) computes the op, as it
    does with the flipped coefficient."""
    x = np.array([0.9967, 0.998, -0.999, 0.9999], np.float32)
    report = onnx_bridge.compare(erfinv_model("f32"), inputs={"x": x})
    assert report.verdict == "explained", report.text()
    assert [e.id for e in report.explanations] == ["ov-erfinv-tail-coefficient"]
    assert report.explanations[0].follows_spec == "converted"
    monkeypatch.setattr(compare_explain, "_reference", lambda op, inputs, port, shape: reference(inputs[0],
                                                                                                 OPENVINO_TAIL))
    report = onnx_bridge.compare(erfinv_model("f32"), inputs={"x": x})
    assert report.verdict == "explained", report.text()
    assert [e.id for e in report.explanations] == ["ov-erfinv-tail-coefficient"]
    assert "both deviate from the specification" in report.localisation.reference
