"""The differential check of the units whose OpenVINO exp is glibc's expf (not correctly rounded): a case the
unit's expf divergence claims is compared with the C expf swapped into the kernel, so everything but the
declared last-bit difference is still checked bit for bit."""
from __future__ import annotations

import numpy as np

from custom_ops.ops import _libm
from tests.helpers import units as check


#: the ids of the rows of a libm function not correctly rounded on OpenVINO's side end so
LIBM_SUFFIXES = ("-expf-last-bit", "-libm-last-bits")


def claimed(unit, case) -> bool:
    inputs = {port.name: value for port, value in zip(unit.newest.inputs, case.inputs)}
    attributes = unit.newest.attribute_values(case.attributes)
    rows = unit.divergences if isinstance(unit.divergences, tuple) else ()
    return any(d.predicate(inputs, attributes) for d in rows if d.id.endswith(LIBM_SUFFIXES))


def check_example(unit, row_id, static: bool = False) -> None:
    """The row's example: claimed, the kernel differs from OpenVINO CPU, and equals it bit for bit with the
    C library's functions in the kernel (the divergence is exactly the libm rounding)."""
    row = next(d for d in unit.divergences if d.id == row_id)
    assert claimed(unit, row.example)
    want = check.openvino_outputs(unit, row.example, static=static)
    assert any(not np.array_equal(a, b) for a, b in zip(check.kernel_outputs(unit, row.example), want))
    with _libm.c_libm():
        check.assert_same(check.kernel_outputs(unit, row.example), want, row_id)


def check_with_c_libm(unit, case, static: bool = False) -> bool:
    """Kernel == OpenVINO CPU bit for bit; a case a libm divergence claims with the C library's functions in
    the kernel (custom_ops.ops._libm.c_libm). Returns whether the case was claimed."""
    if claimed(unit, case):
        with _libm.c_libm():
            check.check_kernel_against_openvino(unit, case, static=static)
        return True
    check.check_kernel_against_openvino(unit, case, static=static)
    return False
