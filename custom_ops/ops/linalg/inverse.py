"""Inverse-14 (OpenVINO): inverse of each square matrix in the last two axes.

input [..., N, N] (float) -> output of the same shape and type. The specification's reference: LU
decomposition with partial pivoting (the first row of strictly largest |value| at or below the diagonal),
then per unit column a forward substitution L y = P e and a backward substitution U x = y, every operation
in the element type, in the reference's order (the kernel repeats it, vectorised over the batch and the
columns). adjoint=1: the specification's (A^T)^-1, the same algorithm run on the transposed matrix (its
result is not bitwise the transpose of A^-1; OpenVINO CPU 2026.4 agrees). A singular matrix divides by a
zero pivot: inf/NaN as IEEE gives them, like the reference.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops._types import FLOAT_TYPES
from custom_ops.errors import OpError
from custom_ops.ops._argmax import first_max
from custom_ops.unit import (Absent, Attribute, AttributeMap, Benchmark, BenchmarkCase, Case, DialectUnit, Divergence,
                             OpenVINO, OpSpec, Port, expected_shape_of, same_as_input)

OP = "Inverse"
TYPES = FLOAT_TYPES
#: types whose np.subtract.reduce rounds every step to the type (float16 is carried in float32)
_SEQUENTIAL_REDUCE_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _lu(a: np.ndarray):
    """LU with partial pivoting of a batch [B, n, n]: (L strictly lower part, U, permutation P)."""
    batch, n = a.shape[0], a.shape[1]
    u, lower = a.copy(), np.zeros_like(a)
    perm = np.broadcast_to(np.arange(n), (batch, n)).copy()
    rows = np.arange(batch)
    for k in range(n):
        # first strictly larger |value| wins; NaN never compares larger (C++ `>`): std::max_element's rule
        pivot = first_max(np.abs(u[:, k:, k])) + k
        swap = pivot != k
        if swap.any():
            for m in (u, lower, perm):
                kept = m[rows, k].copy()
                m[rows, k] = m[rows, pivot]
                m[rows, pivot] = kept
        if k + 1 < n:
            factors = u[:, k + 1:, k] / u[:, k:k + 1, k]
            lower[:, k + 1:, k] = factors
            u[:, k + 1:, k:] = u[:, k + 1:, k:] - factors[:, :, None] * u[:, k:k + 1, k:]
    return lower, u, perm


def _subtract_in_order(first: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """((first - terms[:, 0]) - terms[:, 1]) - ..., each step rounded to the type. numpy's subtract.reduce
    folds left in float32/float64 (pairwise summation is add's only) but carries float16 (and other
    types) in float32 between steps: those are subtracted one term at a time."""
    if first.dtype in _SEQUENTIAL_REDUCE_TYPES:
        return np.subtract.reduce(np.concatenate([first[:, None], terms], axis=1), axis=1)
    for j in range(terms.shape[1]):
        first = first - terms[:, j]
    return first


def _solve(lower, u, perm):
    """Columns of the inverse: for every unit vector e_c, L y = P e_c then U x = y ([B, n, n], x in columns).
    Every element sees the reference's operations in the reference's order: the forward substitution
    subtracts from all later rows once a row is final (row i still gets j = 0 .. i-1 in turn); the backward
    one forms a row's products at once and subtracts them in ascending j."""
    n = u.shape[1]
    y = (perm[:, :, None] == np.arange(n)[None, None, :]).astype(u.dtype)    # y[b, i, c] = e_c[P[i]]
    for j in range(n - 1):
        y[:, j + 1:] = y[:, j + 1:] - lower[:, j + 1:, j, None] * y[:, j, None]
    x = np.zeros_like(y)
    for i in range(n - 1, -1, -1):
        row = _subtract_in_order(y[:, i], u[:, i, i + 1:, None] * x[:, i + 1:])
        x[:, i] = row / u[:, i, i, None]
    return x


def inverse(data, adjoint=0):
    data = check.as_array(OP, "input", data)
    check.data_type(OP, "input", data, TYPES)
    adjoint = check.flag(OP, "adjoint", adjoint)
    if data.ndim < 2 or data.shape[-1] != data.shape[-2]:
        raise OpError(OP, "input 'input'", "must have shape [..., N, N] (square matrices in the last two axes)",
                      value=data.shape)
    n = data.shape[-1]
    if data.size == 0:
        return data.copy()
    a = data.reshape(-1, n, n)
    if adjoint:
        a = a.transpose(0, 2, 1)
    with np.errstate(all="ignore"):
        lower, u, perm = _lu(a)
        out = _solve(lower, u, perm)
    return out.reshape(data.shape)


def _kernel_v14(input, adjoint):
    return (inverse(input, adjoint),)


def cases(rng: np.random.Generator) -> list:
    out = []
    for index in range(24):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        n = int(r.integers(1, 6))
        batch = [(), (2,), (2, 3), (1,)][index % 4]
        data = r.normal(size=batch + (n, n))
        if index % 3 == 0:
            data = data.round()                                # ties between pivots: the first wins
        if index % 6 == 5 and n > 1:
            data[..., 1, :] = data[..., 0, :] * 2.0            # singular: a zero pivot, inf/NaN as IEEE
        out.append(Case(f"inverse_{index}", (data.astype(np.float32),), {"adjoint": int(index % 2)}))
    return out


def bad_cases() -> list:
    return [
        (Case("not_square", (np.zeros((2, 3), np.float32),), {}), "[..., N, N]"),
        (Case("rank_1", (np.zeros((3,), np.float32),), {}), "[..., N, N]"),
        (Case("integer", (np.eye(2, dtype=np.int32),), {}), "element type"),
        (Case("bad_adjoint", (np.eye(2, dtype=np.float32),), {"adjoint": 2}), "adjoint"),
    ]


# Divergences of OpenVINO's CPU plugin (2026.4, f32 precision hint, measured) ---------------------------

_OV = "openvino-cpu"


def _dtype_is(dtype):
    return lambda inputs, attributes: np.asarray(inputs["input"]).dtype == dtype


DIVERGENCES = (
    Divergence("ov-inverse-f16-in-f32", _OV, "value", "float16 computed in float32",
               "The reference computes every LU and substitution step in the element type; the CPU plugin "
               "(f32 precision hint) computes float16 in float32 and rounds the result once: "
               "[[3,1,0],[-2,-2,-4],[-4,-4,-3]] gives -0.150146484375 at [0,1] in float16 steps, "
               "-0.1500244140625 on the CPU. Measured on 48 generated cases: 18 equal; all 48 equal float32 "
               "steps rounded to float16.",
               _dtype_is(np.float16),
               Case("example", (np.array([[3, 1, 0], [-2, -2, -4], [-4, -4, -3]], np.float16),), {})),
    Divergence("ov-inverse-f64-in-f32", _OV, "value", "float64 computed in float32",
               "The CPU plugin has no float64 Inverse: it computes in float32 ([[0.1,0.2],[0.3,0.7]] gives "
               "70.00003052 for 70); on singular matrices it returns finite values where float32 steps give "
               "inf. The kernel computes in float64.",
               _dtype_is(np.float64), Case("example", (np.array([[0.1, 0.2], [0.3, 0.7]]),), {})),
)


def benchmark_cases(mode: str) -> list:
    """Diagonally dominant (well conditioned) float32 matrices."""
    batch, n = {"full": (64, 32), "quick": (64, 32), "tiny": (2, 3)}[mode]

    def inputs(rng):
        return {"input": (rng.standard_normal((batch, n, n)) + n * np.eye(n)).astype(np.float32)}
    return [BenchmarkCase(f"inverse-{batch}x{n}", f"{batch} matrices {n}x{n} float32", inputs, {"adjoint": 0})]


UNIT = DialectUnit(
    op_type=OP, family="linalg",
    specs=(OpSpec(OP, 14, (Port("input", "T"),), (Port("output", "T"),),
                  (Attribute("adjoint", "int", 0, (0, 1)),), {"T": TYPES}, _kernel_v14,
                  doc="Inverse (or adjugate with adjoint=1) of square matrices, LU with partial pivoting.",
                  infer=same_as_input(0)),),
    openvino=OpenVINO("Inverse", versions=(14,),
                      factory=lambda ov, inputs, a: ov.opset14.inverse(inputs[0], a["adjoint"]),
                      attributes=(AttributeMap("adjoint", "bool"),),
                      output_shapes=expected_shape_of("input")),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("standard ONNX has no matrix inverse (no LU, no triangular solve); not expressible exactly"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torch.linalg.inv uses LAPACK's blocked LU: another order of operations"),
    divergences=DIVERGENCES,
    benchmark=Benchmark(benchmark_cases),
)
