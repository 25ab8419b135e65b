"""NonMaxSuppression-9 as a dialect unit (custom_ops/ops/detection/non_max_suppression.py) for soft NMS and
computed thresholds, where standard ONNX NonMaxSuppression is not exact (the IR rule
converters/openvino_ir/rules/selection.py keeps ONNX for a constant sigma 0 and constant iou_threshold).
Kernel vs OpenVINO CPU (f32 hint) on generated cases: bit for bit where no score decays; where one does, the
CPU plugin's JIT decay differs only as the declared divergence says (same selection here, last-bit scores)."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.config import DOMAIN
from custom_ops.unit import Case
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("NonMaxSuppression")
CASES = check.cases(UNIT)
DIVERGENCE = {d.id: d for d in UNIT.divergences}


def _applies(case, divergence="ov-nms-soft-decay-jit") -> bool:
    return DIVERGENCE[divergence].predicate(dict(zip([p.name for p in UNIT.newest.inputs], case.inputs)),
                                            UNIT.newest.attribute_values(case.attributes))


def test_kernel_matches_openvino_on_many_cases():
    exact = declared = nms5 = 0
    for seed in range(3):
        for case in check.cases(UNIT, seed):
            if _applies(case, "ov-nms5-soft-no-iou-suppression"):
                nms5 += 1                  # the CPU plugin runs NMS-5 as NMS-9: test_nms5_soft_suppresses_by_iou
                continue
            got, want = check.kernel_outputs(UNIT, case), check.openvino_outputs(UNIT, case)
            if _applies(case):
                declared += 1
                check.assert_same([got[0], got[2]], [want[0], want[2]], case.id)     # same boxes, same order
                np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=0, err_msg=case.id)
            else:
                exact += 1
                check.assert_same(got, want, case.id)
    assert exact >= 30 and declared >= 15 and nms5 >= 1


@pytest.mark.parametrize("case", [c for c in CASES if not _applies(c)][:3], ids=lambda c: c.id)
def test_rule_imports_the_unit(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path)


def test_constant_sigma_zero_stays_standard():
    from converters.openvino_ir import import_ir
    case = next(c for c in CASES if float(c.inputs[5]) == 0)
    import openvino as ov
    from openvino import opset1, opset9
    b = opset1.parameter(list(case.inputs[0].shape), ov.Type.f32, name="boxes")
    s = opset1.parameter(list(case.inputs[1].shape), ov.Type.f32, name="scores")
    node = opset9.non_max_suppression(b, s, *[ov.op.Constant(np.asarray(v)) for v in case.inputs[2:]])
    imported = import_ir(ov.Model(node.outputs(), [b, s], "nms"))
    assert [n.op_type for n in imported.graph.node if n.op_type == "NonMaxSuppression"] == ["NonMaxSuppression"]
    assert not [n for n in imported.graph.node if n.domain == DOMAIN]


def test_soft_decay_keeps_overlapping_boxes_with_lower_scores():
    """Soft NMS keeps a box a hard NMS at the same iou_threshold drops, with its score decayed by
    exp(-iou^2 / (2 sigma)) (exact on a dyadic IoU of 1/2 here)."""
    boxes = np.array([[[0, 0, 1, 3], [0, 1, 1, 4]]], np.float32)              # IoU 2/4 = 0.5
    scores = np.array([[[0.9, 0.8]]], np.float32)
    base = (boxes, scores, np.array(2, np.int64), np.array(0.4, np.float32), np.array(0.0, np.float32))
    a = {"box_encoding": "corner", "sort_result_descending": 1, "output_type": "i64", "soft_iou_suppression": 0}
    soft = Case("soft", base + (np.array(0.5, np.float32),), a)
    hard = Case("hard", base + (np.array(0.0, np.float32),), a)
    indices, selected, valid = check.kernel_outputs(UNIT, soft)
    assert indices[:, 2].tolist() == [0, 1] and valid.tolist() == [2]
    assert selected[1, 2] == np.float32(np.float32(0.8) * np.float32(np.exp(np.float32(-1.0) * np.float32(0.25))))
    assert check.kernel_outputs(UNIT, hard)[0][:, 2].tolist() == [0]
    for case in (soft, hard):
        got, want = check.kernel_outputs(UNIT, case), check.openvino_outputs(UNIT, case)
        check.assert_same([got[0], got[2]], [want[0], want[2]], case.id)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=0)


def test_nms5_soft_suppresses_by_iou(tmp_path):
    """NMS-5 (its specification and reference): in soft mode a candidate whose IoU with a kept box reaches
    iou_threshold is dropped; NMS-9 decays it. The import marks NMS-5 (soft_iou_suppression 1) and the export
    writes NMS-5 back; the CPU plugin runs NMS-5 as NMS-9 (declared)."""
    from converters.openvino_ir import export_ir, import_ir
    boxes = np.array([[[0, 0, 1, 3], [0, 1, 1, 4], [0, 5, 1, 6]]], np.float32)   # IoU(0, 1) = 0.5
    scores = np.array([[[0.9, 0.8, 0.7]]], np.float32)
    inputs = (boxes, scores, np.array(3, np.int64), np.array(0.5, np.float32), np.array(0.0, np.float32),
              np.array(0.5, np.float32))
    a = {"box_encoding": "corner", "sort_result_descending": 1, "output_type": "i64"}
    nms5 = Case("nms5", inputs, dict(a, soft_iou_suppression=1))
    nms9 = Case("nms9", inputs, dict(a, soft_iou_suppression=0))
    assert check.kernel_outputs(UNIT, nms5)[0][:, 2].tolist() == [0, 2]
    assert check.kernel_outputs(UNIT, nms9)[0][:, 2].tolist() == [0, 2, 1]
    assert _applies(nms5, "ov-nms5-soft-no-iou-suppression") and not _applies(nms9, "ov-nms5-soft-no-iou-suppression")
    assert check.openvino_outputs(UNIT, nms5)[0][:, 2].tolist() == [0, 2, 1]
    imported = import_ir(check.openvino_model(UNIT, nms5))
    node = next(n for n in imported.graph.node if n.domain == DOMAIN)
    assert {x.name: x.i for x in node.attribute}["soft_iou_suppression"] == 1
    import openvino as ov
    xml = export_ir(check.dialect_model(UNIT, nms5), tmp_path / "nms5.xml")
    versions = {op.get_type_info().version_id for op in ov.Core().read_model(str(xml)).get_ordered_ops()
                if op.get_type_name() == "NonMaxSuppression"}
    assert versions == {"opset5"}
