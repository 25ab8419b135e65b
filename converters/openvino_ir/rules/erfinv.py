"""ErfInv-17 as standard ONNX arithmetic in double precision: Giles' approximation as OpenVINO's reference writes it.

The reference (openvino/reference/erfinv.hpp) converts the input to double, evaluates Giles' rational
approximation ("Approximating the erfinv function", GPU Computing Gems Jade, 2011) in double (two Horner
polynomials of degree 8, in w = -log((1 - x)(1 + x)) or sqrt(w)), multiplies by x and converts the result
back to the input's type; 0 -> +0, +-1 -> +-inf, |x| > 1 -> NaN. The same operations in the same order in
double (no fused multiply-add) give the same result up to Log's last bit in double, which the rounding to
f32/f16/bf16 did not show on any value tested (every f16 and bf16, every 256th f32); f64 results differ in
the last bits (onnxruntime's double Log is not the C library's). f16/bf16 results round through f32 in both (ov::float16
and onnxruntime's Cast convert from float).

One coefficient differs from the reference: the reference's tail polynomial (w >= 5, |x| >= 0.99662536) has
-0.00943887047 where Giles' paper has +0.00943887047, up to 5.3e-3 (relative) from the inverse error function
there. The specification defines the op as the inverse error function, so the import takes the paper's sign:
within 2.5 ulp of the true erfinv in f32 everywhere (2.23 measured), bit-exact with the reference for
|x| < 0.99662536. OpenVINO's reference and CPU plugin keep the flipped sign (declared deviation
ov-erfinv-tail-coefficient in onnx_bridge.compare_explain.DEVIATIONS).

OpenVINO's CPU plugin computes ErfInv with its own single-precision JIT code (observed on 2026.4: within 1.1e-4
relative of the reference on normal results, 7.7e-4 on subnormal ones; -0 for -0, NaN for +-inf): the reference
is kept.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule
from .._types import FLOAT_CODES

#: Giles' coefficients, highest degree first: in s = w - 2.5 where w < 5, else in s = sqrt(w) - 3 (TAIL as in
#: the paper: OpenVINO's reference has -0.00943887047 for the degree-2 coefficient)
CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
           -0.00417768164, 0.246640727, 1.50140941)
TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
        0.00943887047, 1.00167406, 2.83297682)


def _horner(ctx, coefficients, s: str) -> str:
    r = ctx.const(np.array(coefficients[0], np.float64), "c")
    for c in coefficients[1:]:
        r = ctx.emit("Add", [ctx.const(np.array(c, np.float64), "c"), ctx.emit("Mul", [r, s])])
    return r


@rule("ErfInv", versions=(17,), onnx="Cast to double, Log, Sqrt, Horner Mul/Add, Where, Cast back",
      notes="Giles' rational approximation in double as OpenVINO's reference evaluates it (0 -> +0, +-1 -> "
            "+-inf, |x| > 1 -> NaN), same operations and order: bit-exact with the reference in f32/f16/bf16 for "
            "|x| < 0.99662536 (f64: last bits, onnxruntime's double Log is not the C library's). For |x| >= "
            "0.99662536 the tail polynomial takes the paper's +0.00943887047 where OpenVINO's reference and CPU "
            "plugin have -0.00943887047 (up to 5.3e-3 relative from the true erfinv; declared deviation "
            "ov-erfinv-tail-coefficient): the import is the inverse error function the specification defines, "
            "within 2.5 ulp in f32 (2.23 measured), 0.5002 ulp in f16/bf16. OpenVINO's CPU plugin computes in "
            "single precision (within 1.1e-4 relative of the reference, 7.7e-4 on subnormal results, observed "
            "on 2026.4): the reference is kept",
      refuses=("non-float element types (the op takes floats only)",))
def erfinv(ctx, node):
    code = ctx.elem(node, 0)
    if code not in FLOAT_CODES:
        raise Unsupported(f"element type {TensorProto.DataType.Name(code).lower()} (floats only)")
    x = ctx.inp(node, 0)
    if code != TensorProto.DOUBLE:
        x = ctx.emit("Cast", [x], to=TensorProto.DOUBLE)

    def scalar(value, hint):
        return ctx.const(np.array(value, np.float64), hint)

    one = scalar(1.0, "one")
    w = ctx.emit("Neg", [ctx.emit("Log", [ctx.emit("Mul", [ctx.emit("Sub", [one, x]), ctx.emit("Add", [one, x])])])])
    central = _horner(ctx, CENTRAL, ctx.emit("Sub", [w, scalar(2.5, "two_and_a_half")]))
    tail = _horner(ctx, TAIL, ctx.emit("Sub", [ctx.emit("Sqrt", [w]), scalar(3.0, "three")]))
    y = ctx.emit("Mul", [ctx.emit("Where", [ctx.emit("Less", [w, scalar(5.0, "five")]), central, tail]), x])
    # special values, as the reference returns them before the approximation
    y = ctx.emit("Where", [ctx.emit("Equal", [x, scalar(0.0, "zero")]), scalar(0.0, "zero"), y])
    above = ctx.emit("Where", [ctx.emit("Greater", [x, one]), scalar(np.nan, "nan"), scalar(np.inf, "inf")])
    y = ctx.emit("Where", [ctx.emit("GreaterOrEqual", [x, one]), above, y])
    minus_one = scalar(-1.0, "minus_one")
    below = ctx.emit("Where", [ctx.emit("Less", [x, minus_one]), scalar(np.nan, "nan"), scalar(-np.inf, "minus_inf")])
    y = ctx.emit("Where", [ctx.emit("LessOrEqual", [x, minus_one]), below, y])
    if code == TensorProto.DOUBLE:
        ctx.emit("Identity", [y], [ctx.out(node)])
    else:
        ctx.emit("Cast", [y], [ctx.out(node)], to=code)
