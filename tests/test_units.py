"""What every dialect unit owes, checked once for all of them: each of its bad cases (unit.bad_cases) is
refused with an OpError naming the op and the reason, by the kernel and by onnx_bridge.InferenceSession
(node named). Op-specific behaviour stays in each op's own test file."""
from __future__ import annotations

import pytest

import custom_ops
from custom_ops.unit import present
from tests.helpers import units as check

BAD_CASES = [pytest.param(unit, case, message, id=f"{unit.op_type}-{case.id}")
             for unit in custom_ops.units() if present(unit.bad_cases)
             for case, message in unit.bad_cases()]


def test_every_unit_with_cases_has_bad_cases():
    missing = [u.op_type for u in custom_ops.units() if present(u.cases) and not present(u.bad_cases)]
    assert not missing, f"units with generated cases but no bad_cases: {missing}"


@pytest.mark.parametrize("unit,case,message", BAD_CASES)
def test_bad_inputs_raise_op_error(unit, case, message):
    check.check_bad_case(unit, case, message)
