"""The differential check of the units whose OpenVINO exp is glibc's expf (not correctly rounded): a case the
unit's expf divergence claims is compared with the C expf swapped into the kernel, so everything but the
declared last-bit difference is still checked bit for bit."""
from __future__ import annotations

import contextlib

import numpy as np

from custom_ops.ops import _libm
from custom_ops.ops.detection import experimental_detectron_detection_output as _detection_output
from custom_ops.ops.detection import experimental_detectron_generate_proposals_single_image as _proposals
from tests.helpers import units as check

_MODULES = (_proposals, _detection_output)   # GenerateProposals refines with the single-image module's exp


@contextlib.contextmanager
def c_expf():
    """The kernels' exp replaced by the C library's expf (what OpenVINO's std::exp of float calls)."""
    saved = [module._exp for module in _MODULES]
    for module in _MODULES:
        module._exp = _libm.c_expf
    try:
        yield
    finally:
        for module, exp in zip(_MODULES, saved):
            module._exp = exp


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


def check_kernel_against_openvino(unit, case) -> bool:
    """Kernel == OpenVINO CPU bit for bit; a case the expf divergence claims with the C expf in the kernel.
    Returns whether the case was claimed."""
    if claimed(unit, case) and _libm.LIBM_EXPF is not None:
        with c_expf():
            check.check_kernel_against_openvino(unit, case)
        return True
    check.check_kernel_against_openvino(unit, case)
    return False
