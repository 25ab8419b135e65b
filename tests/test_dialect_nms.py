"""The NMS units (custom_ops/ops/detection): MulticlassNms-9 (-8; thresholds, nms_top_k, keep_top_k,
background class, adaptive eta, normalized or not, every sort order, i32/i64 outputs, empty boxes, the
roisnum layout), MatrixNms-8 (linear and gaussian decay) and NMSRotated-13 vs OpenVINO CPU on generated
cases, bit for bit but for the declared divergences; IR import -> InferenceSession, export to IR, backend,
schema and reference evaluator, refused inputs."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.unit import Case
from tests.helpers import expf
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("MulticlassNms")


def test_kernel_matches_openvino_on_generated_cases():
    assert check.check_generated_cases(UNIT, seeds=range(3)) == 72


@pytest.mark.parametrize("case", check.cases(UNIT)[:4], ids=lambda c: c.id)
def test_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path)


def test_iou_equal_to_the_threshold_suppresses():
    """A candidate whose IoU with a kept box equals iou_threshold is dropped (>=, the reference)."""
    boxes = np.array([[[0, 0, 2, 1], [1, 0, 3, 1]]], np.float32)        # IoU 1/3
    scores = np.array([[[0.9, 0.8]]], np.float32)
    out, indices, valid = check.kernel_outputs(UNIT, Case("eq", (boxes, scores), {"iou_threshold": 1 / 3}))
    assert valid.tolist() == [1] and indices.ravel().tolist() == [0]


MATRIX = custom_ops.unit_of("MatrixNms")


def test_matrix_nms_matches_openvino_on_generated_cases():
    """Bit for bit, except the decayed scores of linear decay: 1 ulp apart where the CPU computes in float32
    what the reference computes in double (the declared ov-matrixnms-linear-decay-f32); a gaussian case the
    declared ov-matrixnms-expf-last-bit claims is compared with the C expf in the kernel."""
    count = exact = claimed = 0
    for seed in range(3):
        for case in check.cases(MATRIX, seed):
            got, want = check.kernel_outputs(MATRIX, case), check.openvino_outputs(MATRIX, case)
            if case.attributes["decay_function"] == "linear":
                for g, w in zip(got[1:], want[1:]):
                    assert g.dtype == w.dtype
                    np.testing.assert_array_equal(g, w)
                np.testing.assert_array_equal(np.delete(got[0], 1, 1), np.delete(want[0], 1, 1))
                np.testing.assert_array_max_ulp(got[0][:, 1], want[0][:, 1], maxulp=1)
            else:
                claimed += expf.check_with_c_libm(MATRIX, case)
                exact += 1
            count += 1
    assert count >= 60 and exact >= 30 and claimed <= 2


def test_matrix_nms_expf_divergence_is_the_c_expf():
    expf.check_example(MATRIX, "ov-matrixnms-expf-last-bit")


@pytest.mark.parametrize("case", [c for c in check.cases(MATRIX) if c.attributes["decay_function"] == "gaussian"][:3],
                         ids=lambda c: c.id)
def test_matrix_nms_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(MATRIX, case, tmp_path)


@pytest.mark.parametrize("case,message", MATRIX.bad_cases(), ids=lambda c: getattr(c, "id", ""))
def test_matrix_nms_bad_inputs_raise_op_error(case, message):
    check.check_bad_case(MATRIX, case, message)


def test_matrix_nms_nothing_selected_is_empty():
    out, indices, valid = check.kernel_outputs(MATRIX, Case("none", (np.zeros((2, 2, 4), np.float32),
                                                                     np.zeros((2, 1, 2), np.float32)), {}))
    assert out.shape == (0, 6) and indices.shape == (0, 1) and valid.tolist() == [0, 0]


ROTATED = custom_ops.unit_of("NMSRotated")


def test_nms_rotated_matches_openvino_on_generated_cases():
    assert check.check_generated_cases(ROTATED, seeds=range(3)) == 60


@pytest.mark.parametrize("case", check.cases(ROTATED)[:3], ids=lambda c: c.id)
def test_nms_rotated_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(ROTATED, case, tmp_path)


@pytest.mark.parametrize("case,message", ROTATED.bad_cases(), ids=lambda c: getattr(c, "id", ""))
def test_nms_rotated_bad_inputs_raise_op_error(case, message):
    check.check_bad_case(ROTATED, case, message)


def test_rotated_iou_of_a_square_turned_45_degrees():
    """A unit square and itself turned by 45 degrees overlap in a regular octagon: 2 (sqrt 2 - 1)."""
    from custom_ops.ops.detection.nms_rotated import _intersection
    inter = _intersection(np.array([0, 0, 1, 1, 0], np.float32), np.array([0, 0, 1, 1, np.pi / 4], np.float32))
    np.testing.assert_allclose(inter, 2 * (np.sqrt(2) - 1), rtol=1e-6)
