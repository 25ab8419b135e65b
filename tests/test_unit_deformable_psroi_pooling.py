"""DeformablePSROIPooling-1 as a dialect unit (custom_ops/ops/detection/deformable_psroi_pooling.py): kernel vs
OpenVINO CPU (f32 hint, static shapes) bit for bit on generated dyadic cases with and without offsets; where
an interpolation rounds, the CPU plugin's other weight form differs only where the declared divergence says;
IR import -> InferenceSession, export to IR, schema and reference evaluator."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.errors import OpError
from custom_ops.unit import Case
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("DeformablePSROIPooling")
CASES = check.cases(UNIT)
DIVERGENCE = {d.id: d for d in UNIT.divergences}


def _by_port(case):
    return dict(zip([p.name for p in UNIT.newest.inputs], case.inputs))


def test_kernel_matches_openvino_on_many_cases():
    count = offsets = 0
    for seed in range(3):
        for case in check.cases(UNIT, seed):
            check.check_kernel_against_openvino(UNIT, case, static=True)
            count += 1
            offsets += case.inputs[2] is not None
    assert count >= 90 and offsets >= 30


def test_cpu_differences_are_the_declared_ones():
    """Non-dyadic maps and degenerate boxes (extent 0.1): the CPU plugin differs from the reference only where
    ov-deformablepsroi-weights applies, and then in the last bits."""
    divergence, differing = DIVERGENCE["ov-deformablepsroi-weights"], 0
    for case in CASES[:12]:
        data, rois, offsets = case.inputs
        rois = rois.copy()
        rois[0, 3:] = rois[0, 1:3] - 1
        case = Case(case.id, (data / np.float32(3), rois, offsets), case.attributes)
        got, want = check.kernel_outputs(UNIT, case)[0], check.openvino_outputs(UNIT, case, static=True)[0]
        if not np.array_equal(got, want):
            differing += 1
            assert divergence.predicate(_by_port(case), UNIT.newest.attribute_values(case.attributes)), case.id
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert differing


@pytest.mark.parametrize("case", [CASES[0], CASES[1]], ids=lambda c: c.id)
def test_import_session_export(case, tmp_path):
    check.check_import_and_session(UNIT, case, static=True)
    check.check_export(UNIT, case, tmp_path, static=True)


@pytest.mark.parametrize("case", [CASES[2], CASES[3]], ids=lambda c: c.id)
def test_schema_reference(case):
    """(onnx_bridge.backends.openvino compiles for dynamic shapes, which the CPU plugin has no
    implementation of for this op, as for PSROIPooling.)"""
    check.check_reference_and_schema(UNIT, case, static=True)


def test_negative_batch_id_skips_the_roi():
    """The reference skips a ROI with a negative batch id (0); the CPU plugin stops the whole list at -1
    (declared), and a batch id below -1 is refused before OpenVINO runs (it would read out of bounds)."""
    example = DIVERGENCE["ov-deformablepsroi-stops-at-minus-one"].example
    got = check.kernel_outputs(UNIT, example)[0]
    np.testing.assert_array_equal(got[0], 0)
    assert (got[1] != 0).any()
    assert not (check.openvino_outputs(UNIT, example, static=True)[0] != 0).any()
    data, rois, _ = example.inputs
    with pytest.raises(OpError, match="below -1"):
        UNIT.openvino.refuse({"input": data, "coords": rois - np.asarray([[1, 0, 0, 0, 0]], np.float32),
                              "offsets": None}, example.attributes)


def test_f64_is_computed_in_f64():
    """float64 interpolates in float64 (the geometry in f32, as the reference); the CPU plugin computes it in
    float32 (declared)."""
    divergence = DIVERGENCE["ov-deformablepsroi-f64-in-f32"]
    differing = 0
    for case in CASES[:6]:
        data, rois, offsets = case.inputs
        wide = Case(case.id, (data.astype(np.float64) / 3, rois.astype(np.float64),
                              None if offsets is None else offsets.astype(np.float64)), case.attributes)
        assert divergence.predicate(_by_port(wide), UNIT.newest.attribute_values(case.attributes))
        got, want = check.kernel_outputs(UNIT, wide)[0], check.openvino_outputs(UNIT, wide, static=True)[0]
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        differing += not np.array_equal(got, want)
    assert differing
