"""ROIAlign-9 as a dialect unit (custom_ops/ops/detection/roi_align.py), used by the IR rule
(converters/openvino_ir/rules/selection.py) for mode max and aligned_mode half_pixel / half_pixel_for_nn,
where standard ONNX RoiAlign is not exact; mode avg with asymmetric alignment stays ONNX RoiAlign.
Kernel vs OpenVINO CPU (f32 hint, static shapes: the plugin refuses dynamic rois) on generated cases."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.config import DOMAIN
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("ROIAlign")
CASES = check.cases(UNIT)


def test_kernel_matches_openvino_on_many_cases():
    assert check.check_generated_cases(UNIT, seeds=range(5), static=True) >= 100


@pytest.mark.parametrize("case", [c for c in CASES if c.attributes["mode"] == "max"
                                  or c.attributes["aligned_mode"] != "asymmetric"][:4], ids=lambda c: c.id)
def test_rule_imports_the_unit_where_onnx_is_not_exact(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path, static=True, backend=False)


def test_avg_asymmetric_stays_standard_roi_align():
    from converters.openvino_ir import import_ir
    case = next(c for c in CASES if c.attributes["mode"] == "avg" and c.attributes["aligned_mode"] == "asymmetric")
    imported = import_ir(check.openvino_model(UNIT, case, static=True))
    assert [(n.domain, n.op_type) for n in imported.graph.node if n.op_type in ("RoiAlign", "ROIAlign")] == \
        [("", "RoiAlign")]
    assert not [n for n in imported.graph.node if n.domain == DOMAIN]


def test_max_starts_from_zero_and_empty_bins_are_zero():
    """OpenVINO's max pooling starts from 0 (all-negative bins give 0); a zero-extent box with
    sampling_ratio 0 in half_pixel has no samples: 0 (the CPU plugin: NaN, declared)."""
    from custom_ops.unit import Case
    data = -np.ones((1, 1, 4, 4), np.float32)
    rois = np.asarray([[0, 0, 2, 2]], np.float32)
    base = {"pooled_h": 2, "pooled_w": 2, "spatial_scale": 1.0}
    case = Case("negative", (data, rois, np.asarray([0], np.int32)), dict(base, sampling_ratio=2, mode="max"))
    check.check_kernel_against_openvino(UNIT, case, static=True)
    np.testing.assert_array_equal(check.kernel_outputs(UNIT, case)[0], 0)
    empty = Case("empty", (data, np.asarray([[1, 1, 1, 1]], np.float32), np.asarray([0], np.int32)),
                 dict(base, sampling_ratio=0, mode="avg", aligned_mode="half_pixel"))
    np.testing.assert_array_equal(check.kernel_outputs(UNIT, empty)[0], 0)
    assert any("NaN" in d.reason for d in UNIT.divergences)


def test_negative_zero_row_claims_exactly_the_sign_differences():
    """ov-roialign-max-negative-zero: the CPU plugin returns -0.0 in a max bin whose samples include -0.0 and
    none is positive, where the reference keeps its start +0.0; the row's predicate claims exactly the
    generated cases where the plugin differs so (and the plugin agrees elsewhere, the sign of zero included)."""
    from custom_ops.ops.detection.roi_align import _negative_zero_max
    claimed = 0
    for seed in range(3):
        for case in check.cases(UNIT, seed):
            if case.attributes["mode"] != "max":
                continue
            want, got = check.kernel_outputs(UNIT, case)[0], check.openvino_outputs(UNIT, case, static=True)[0]
            np.testing.assert_array_equal(got, want)            # equal up to the sign of zero
            sign_differs = bool((np.signbit(got) != np.signbit(want)).any())
            assert not sign_differs or not np.signbit(want[np.signbit(got) != np.signbit(want)]).any()
            inputs = dict(zip(("input", "rois", "batch_indices"), case.inputs))
            assert _negative_zero_max(inputs, case.attributes) == sign_differs, case.id
            claimed += sign_differs
    assert claimed >= 2
