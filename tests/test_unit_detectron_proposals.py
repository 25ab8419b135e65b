"""ExperimentalDetectronGenerateProposalsSingleImage-6
(custom_ops/ops/detection/experimental_detectron_generate_proposals_single_image.py): kernel vs OpenVINO CPU
(f32 hint) bit for bit on generated cases, IR import -> InferenceSession, export, backend, schema and reference
evaluator, and the greedy NMS keeping a suppressed box suppressed."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.ops.detection.experimental_detectron_generate_proposals_single_image import nms
from custom_ops.unit import Case
from tests.helpers import expf, units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("ExperimentalDetectronGenerateProposalsSingleImage")
CASES = check.cases(UNIT)


def test_kernel_matches_openvino_on_many_cases():
    count = 0
    for seed in range(4):
        for case in check.cases(UNIT, seed):
            expf.check_with_c_libm(UNIT, case)
            count += 1
    assert count >= 60


@pytest.mark.parametrize("case", CASES[:2] + [check.first_of_type(UNIT, np.float16)], ids=lambda c: c.id)
def test_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path)


def test_suppressed_box_stays_suppressed():
    """Box 1 overlaps box 0 (suppressed), box 2 overlaps neither: kept 0 and 2. OpenVINO's reference loop
    would revive box 1 when box 2 is kept; the CPU plugin and the kernel do not."""
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30]], np.float32)
    np.testing.assert_array_equal(nms(boxes, 0.5, 10), [0, 2])
    anchors = np.array([[0, 0, 9, 9], [1, 1, 10, 10], [20, 20, 29, 29]], np.float32)
    case = Case("revive", (np.array([40, 40, 1], np.float32), anchors, np.zeros((4, 1, 3), np.float32),
                           np.array([[[0.9, 0.8, 0.7]]], np.float32)),
                {"min_size": 0.0, "nms_threshold": 0.5, "pre_nms_count": 3, "post_nms_count": 3})
    check.check_kernel_against_openvino(UNIT, case)
    np.testing.assert_array_equal(check.kernel_outputs(UNIT, case)[1], np.array([0.9, 0.7, 0], np.float32))


def test_expf_divergence_is_the_only_difference_on_its_example():
    """The declared expf divergence: OpenVINO differs from the kernel on its example, and equals the kernel
    with the C expf swapped in."""
    entry = next(d for d in UNIT.divergences if d.id.endswith("-expf-last-bit"))
    assert expf.claimed(UNIT, entry.example)
    got, want = check.kernel_outputs(UNIT, entry.example), check.openvino_outputs(UNIT, entry.example)
    assert not np.array_equal(got[0], want[0])
    assert expf.check_with_c_libm(UNIT, entry.example)
