"""ExperimentalDetectronDetectionOutput-6 (custom_ops/ops/detection/experimental_detectron_detection_output.py):
kernel vs OpenVINO CPU (f32 hint) bit for bit on generated cases, IR import -> InferenceSession, export,
backend, schema and reference evaluator, and the listing order (class by class, by score past the limit)."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.unit import Case
from tests.helpers import expf, units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("ExperimentalDetectronDetectionOutput")
CASES = check.cases(UNIT)


def test_kernel_matches_openvino_on_many_cases():
    count = detected = 0
    for seed in range(4):
        for case in check.cases(UNIT, seed):
            expf.check_with_c_libm(UNIT, case)
            count += 1
            detected += int((check.kernel_outputs(UNIT, case)[1] > 0).sum())
    assert count >= 80 and detected > count


@pytest.mark.parametrize("case", CASES[:2] + [check.first_of_type(UNIT, np.float16)], ids=lambda c: c.id)
def test_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path)


def test_class_major_listing_and_limit():
    """Two far apart boxes, 3 classes: four detections listed class by class (not by score); with a limit of
    3 the three best by score."""
    rois = np.array([[0, 0, 10, 10], [50, 50, 60, 60]], np.float32)
    deltas = np.zeros((2, 12), np.float32)
    scores = np.array([[0.1, 0.2, 0.9], [0.1, 0.8, 0.3]], np.float32)
    a = {"score_threshold": 0.05, "nms_threshold": 0.5, "max_delta_log_wh": 4.0, "num_classes": 3,
         "post_nms_count": 5, "max_detections_per_image": 4, "deltas_weights": [1.0, 1.0, 1.0, 1.0]}
    info = np.array([[64, 64, 1]], np.float32)
    case = Case("listing", (rois, deltas, scores, info), a)
    check.check_kernel_against_openvino(UNIT, case)
    _, classes, got = check.kernel_outputs(UNIT, case)
    np.testing.assert_array_equal(classes, [1, 1, 2, 2])
    np.testing.assert_array_equal(got, np.array([0.8, 0.2, 0.9, 0.3], np.float32))
    limited = Case("limited", case.inputs, {**a, "max_detections_per_image": 3})
    check.check_kernel_against_openvino(UNIT, limited)
    np.testing.assert_array_equal(check.kernel_outputs(UNIT, limited)[2], np.array([0.9, 0.8, 0.3], np.float32))
