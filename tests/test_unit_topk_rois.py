"""ExperimentalDetectronTopKROIs-6 (custom_ops/ops/detection/experimental_detectron_topk_rois.py): kernel vs
OpenVINO CPU (f32 hint) on generated cases (ties included), IR import -> InferenceSession, export, backend,
schema and reference evaluator, refused inputs, and the CPU plugin's declared divergences."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.unit import Case
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("ExperimentalDetectronTopKROIs")
CASES = check.cases(UNIT)


def test_kernel_matches_openvino_on_many_cases():
    assert check.check_generated_cases(UNIT, seeds=range(5)) >= 90


@pytest.mark.parametrize("case", CASES[:4], ids=lambda c: c.id)
def test_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path)


def test_ties_in_box_order_and_rows_past_n_zero():
    """16 tied boxes: OpenVINO agrees (std::sort is an insertion sort there); more: the declared divergence.
    max_rois past N: zero rows (the CPU plugin leaves them uninitialised)."""
    rois = np.arange(16 * 4, dtype=np.float32).reshape(16, 4)
    probs = (np.arange(16) % 3 / 4).astype(np.float32)
    case = Case("ties16", (rois, probs), {"max_rois": 16})
    check.check_kernel_against_openvino(UNIT, case)
    got = check.kernel_outputs(UNIT, case)[0]
    np.testing.assert_array_equal(got[:, 0] // 4, [2, 5, 8, 11, 14, 1, 4, 7, 10, 13, 0, 3, 6, 9, 12, 15])
    past = check.kernel_outputs(UNIT, Case("past_n", (rois[:2], probs[:2]), {"max_rois": 5}))[0]
    np.testing.assert_array_equal(past, [rois[1], rois[0], [0] * 4, [0] * 4, [0] * 4])
    reasons = " ".join(d.reason for d in UNIT.divergences)
    assert "more than 16 boxes" in reasons and "uninitialised" in reasons
