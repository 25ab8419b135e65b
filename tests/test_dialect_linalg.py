"""The Inverse-14 unit (custom_ops/ops/linalg/inverse.py) vs OpenVINO CPU: generated batched cases (ties
between pivots, singular matrices with inf/NaN, adjoint) bit for bit in float32, IR import ->
InferenceSession, export to IR, backend, schema and reference evaluator, refused inputs."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.ops.linalg import inverse
from custom_ops.unit import Case
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("Inverse")


def _same(got, want, what):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), what
        np.testing.assert_array_equal(a, b, err_msg=what)       # NaN == NaN (singular matrices)


def test_kernel_matches_openvino_bit_for_bit():
    count = singular = 0
    for seed in range(3):
        for case in check.cases(UNIT, seed):
            got = check.kernel_outputs(UNIT, case)
            _same(got, check.openvino_outputs(UNIT, case), case.id)
            count += 1
            singular += not np.isfinite(got[0]).all()
    assert count == 72 and singular >= 6


@pytest.mark.parametrize("case", check.cases(UNIT)[:4], ids=lambda c: c.id)
def test_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path)


def test_adjoint_is_the_inverse_of_the_transpose():
    """adjoint=1 runs the LU on A^T (the specification's (A^T)^-1), not a transpose of A^-1 and not the
    adjugate (A^-1 * det A) of older reference sources."""
    a = np.array([[0.0, 1.0], [2.0, 3.0]], np.float32)
    (adj,) = check.kernel_outputs(UNIT, Case("adj", (a,), {"adjoint": 1}))
    np.testing.assert_array_equal(adj, [[-1.5, 1.0], [0.5, 0.0]])


def test_pivot_is_the_first_largest_and_float16_steps_round():
    """Partial pivoting takes the first row of largest |value|; float16 rounds every step (the reference),
    unlike float32 steps rounded once."""
    a = np.array([[1.0, 2.0], [-1.0, 5.0]], np.float32)      # |1| == |-1|: no swap
    (inv,) = check.kernel_outputs(UNIT, Case("tie", (a,), {}))
    np.testing.assert_allclose(inv @ a, np.eye(2), atol=1e-6)
    h = np.array([[3, 1, 0], [-2, -2, -4], [-4, -4, -3]], np.float16)
    (got,) = check.kernel_outputs(UNIT, Case("f16", (h,), {}))
    assert got.dtype == np.float16 and got[0, 1] == np.float16(-0.150146484375)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_backward_substitution_rounds_every_subtraction_in_order(dtype):
    """A row of the backward substitution subtracts its products one by one, each rounded to the type (the
    reference): 1 - e - e with e half the spacing below 1 stays 1 (ties to even); subtracting 2e at once,
    or carrying float16 in float32 (numpy's float16 subtract.reduce), would give 1 - 2e."""
    e = (1 - np.nextafter(dtype(1), dtype(0))) / 2
    row = inverse._subtract_in_order(np.ones((1, 1), dtype), np.full((1, 2, 1), e, dtype))
    assert row.dtype == dtype and row[0, 0] == 1
