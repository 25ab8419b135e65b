"""ROIAlignRotated-15 as a dialect unit (custom_ops/ops/detection/roi_align_rotated.py): kernel vs OpenVINO CPU
(f32 hint, static shapes: the plugin refuses dynamic rois) on generated cases, bit for bit; IR import ->
InferenceSession, export to IR, backend, schema and reference evaluator."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.unit import Case
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("ROIAlignRotated")
CASES = check.cases(UNIT)


def test_kernel_matches_openvino_on_many_cases():
    assert check.check_generated_cases(UNIT, seeds=range(3), static=True) >= 100


@pytest.mark.parametrize("case", [CASES[0], CASES[4], CASES[9]], ids=lambda c: c.id)
def test_import_session_export(case, tmp_path):
    check.check_import_and_session(UNIT, case, static=True)
    check.check_export(UNIT, case, tmp_path, static=True)


@pytest.mark.parametrize("case", CASES[3:5], ids=lambda c: c.id)
def test_backend_schema_reference(case):
    check.check_backend(UNIT, case, static=True)
    check.check_reference_and_schema(UNIT, case, static=True)


def test_rotation_direction_and_axis_aligned_box():
    """An unrotated box equals ROIAlign's half_pixel_for_nn sampling of the same corners; a quarter turn samples
    the transposed box, clockwise and counter-clockwise in opposite directions."""
    data = np.arange(36, dtype=np.float32).reshape(1, 1, 6, 6)
    one = np.zeros(1, np.int32)
    base = {"pooled_h": 2, "pooled_w": 2, "sampling_ratio": 2, "spatial_scale": 1.0}
    plain = check.kernel_outputs(UNIT, Case("a", (data, np.asarray([[3, 3, 4, 2, 0]], np.float32), one),
                                            dict(base, clockwise_mode=0)))[0]
    roi_align = custom_ops.unit_of("ROIAlign")
    want = check.kernel_outputs(roi_align, Case("b", (data, np.asarray([[1, 2, 5, 4]], np.float32), one),
                                                dict(base, mode="avg", aligned_mode="half_pixel_for_nn")))[0]
    np.testing.assert_array_equal(plain, want)
    turns = {}
    for clockwise in (0, 1):
        case = Case("q", (data, np.asarray([[3, 3, 4, 2, np.pi / 2]], np.float32), one),
                    dict(base, clockwise_mode=clockwise))
        check.check_kernel_against_openvino(UNIT, case, static=True)
        turns[clockwise] = check.kernel_outputs(UNIT, case)[0]
    np.testing.assert_allclose(turns[0], turns[1][:, :, ::-1, ::-1], atol=1e-5)
    assert not np.allclose(turns[0], turns[1])


def test_f64_is_computed_in_f64():
    """float64 follows the reference in float64 (positions in f32); the CPU plugin computes it in float32
    (declared): close, and equal to the kernel on the f32 copy within f32 rounding."""
    divergence = next(d for d in UNIT.divergences if d.id == "ov-roialignrotated-f64-in-f32")
    differing = 0
    for case in CASES[:6]:
        data, rois, indices = case.inputs
        wide = Case(case.id, (data.astype(np.float64), rois.astype(np.float64), indices), case.attributes)
        assert divergence.predicate({"input": wide.inputs[0]}, case.attributes)
        got, want = check.kernel_outputs(UNIT, wide)[0], check.openvino_outputs(UNIT, wide, static=True)[0]
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, check.kernel_outputs(UNIT, case)[0], rtol=1e-5, atol=1e-5)
        differing += not np.array_equal(got, want)
    assert differing


def test_negative_and_zero_extents():
    """A negative width samples the mirrored box (sampling_ratio > 0), as the reference does; a zero extent
    with sampling_ratio 0 has no samples: 0."""
    data = np.arange(2 * 36, dtype=np.float32).reshape(1, 2, 6, 6)
    one = np.zeros(1, np.int64)
    base = {"pooled_h": 2, "pooled_w": 2, "spatial_scale": 1.0, "clockwise_mode": 1}
    mirrored = Case("mirrored", (data, np.asarray([[3, 3, -4, 2, 0.5]], np.float32), one),
                    dict(base, sampling_ratio=2))
    check.check_kernel_against_openvino(UNIT, mirrored, static=True)
    empty = Case("empty", (data, np.asarray([[3, 3, 0, 2, 0.5]], np.float32), one), dict(base, sampling_ratio=0))
    check.check_kernel_against_openvino(UNIT, empty, static=True)
    np.testing.assert_array_equal(check.kernel_outputs(UNIT, empty)[0], 0)
