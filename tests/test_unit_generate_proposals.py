"""GenerateProposals-9 (custom_ops/ops/detection/generate_proposals.py): kernel vs OpenVINO CPU (f32 hint) bit
for bit on generated batched cases (normalized both ways, i32 and i64 counts), IR import -> InferenceSession
(the i32 count through the PyOp's Cast), export, backend, schema and reference evaluator."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from tests.helpers import expf, units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("GenerateProposals")
CASES = check.cases(UNIT)


def test_kernel_matches_openvino_on_many_cases():
    count = kept = 0
    for seed in range(3):
        for case in check.cases(UNIT, seed):
            expf.check_with_c_libm(UNIT, case)
            count += 1
            kept += int(check.kernel_outputs(UNIT, case)[2].sum())
    assert count >= 50 and kept > 2 * count


@pytest.mark.parametrize("case", [next(c for c in CASES if c.attributes["roi_num_type"] == kind
                                       and c.inputs[0].shape[0] > 1) for kind in ("i32", "i64")]
                         + [check.first_of_type(UNIT, np.float16)], ids=lambda c: c.id)
def test_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path)


def test_small_boxes_left_out_not_zeroed():
    """A box below min_size (scaled by the image scale) takes no part in the NMS: it is neither output nor
    suppresses anything (ExperimentalDetectronGenerateProposalsSingleImage zeroes its score instead)."""
    anchors = np.array([[0, 0, 3, 3], [0, 0, 9, 9], [20, 20, 29, 29]], np.float32).reshape(1, 3, 1, 4)
    scores = np.array([0.9, 0.8, 0.7], np.float32).reshape(1, 1, 1, 3)
    info = np.array([[40, 40, 2.0]], np.float32)
    from custom_ops.unit import Case
    case = Case("small", (info, anchors, np.zeros((1, 4, 1, 3), np.float32), scores),
                {"min_size": 3.0, "nms_threshold": 0.1, "pre_nms_count": 3, "post_nms_count": 3, "normalized": 0})
    check.check_kernel_against_openvino(UNIT, case)
    rois, got, counts = check.kernel_outputs(UNIT, case)
    np.testing.assert_array_equal(got, np.array([0.8, 0.7], np.float32))
    np.testing.assert_array_equal(counts, [2])
