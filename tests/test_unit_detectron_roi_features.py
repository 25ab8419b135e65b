"""ExperimentalDetectronROIFeatureExtractor-6
(custom_ops/ops/detection/experimental_detectron_roi_feature_extractor.py): kernel vs OpenVINO CPU (f32 hint)
bit for bit on generated cases (1-4 pyramid levels), IR import -> InferenceSession, export, backend, schema and
reference evaluator, and the level rule on chosen boxes."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.ops.detection.experimental_detectron_roi_feature_extractor import LEVELS, levels_of
from custom_ops.unit import Case
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("ExperimentalDetectronROIFeatureExtractor")
CASES = check.cases(UNIT)


def test_kernel_matches_openvino_on_many_cases():
    count = used = 0
    for seed in range(3):
        for case in check.cases(UNIT, seed):
            check.check_kernel_against_openvino(UNIT, case)
            count += 1
            used += len([x for x in case.inputs[1:] if x is not None])
    assert count >= 60 and used > 2 * count   # several levels per case on average


@pytest.mark.parametrize("case", [c for c in CASES if sum(x is not None for x in c.inputs) > 2][:2]
                         + [check.first_of_type(UNIT, np.float16)], ids=lambda c: c.id)
def test_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path)


def test_levels_and_empty_boxes():
    """224-pixel boxes go to level 2, 112 to 1, 448 to 3, clamped to the levels given; area <= 0: no level."""
    rois = np.array([[0, 0, 224, 224], [0, 0, 112, 112], [0, 0, 448, 448], [0, 0, 2, 2], [5, 5, 5, 9]],
                    np.float32)
    np.testing.assert_array_equal(levels_of(rois, 4), [2, 1, 3, 0, 4])
    np.testing.assert_array_equal(levels_of(rois, 2), [1, 1, 1, 0, 2])
    maps = [np.random.default_rng(level).normal(size=(1, 2, 16 >> level, 16 >> level)).astype(np.float32)
            for level in range(3)]
    case = Case("levels", (rois, *maps) + (None,) * (LEVELS - 3),
                {"output_size": 2, "sampling_ratio": 0, "pyramid_scales": [4, 8, 16], "aligned": 1})
    check.check_kernel_against_openvino(UNIT, case)
    features, boxes = check.kernel_outputs(UNIT, case)
    assert not features[4].any() and features[:4].any()
    np.testing.assert_array_equal(boxes, rois)


def test_more_levels_than_ports_refused_at_import():
    import openvino as ov
    from openvino import opset1
    from openvino.utils.node_factory import NodeFactory

    from converters.openvino_ir import import_ir
    from custom_ops.errors import ConversionError
    parameters = [opset1.parameter(ov.PartialShape([-1, 4]), ov.Type.f32)] + [
        opset1.parameter(ov.PartialShape([1, 2, -1, -1]), ov.Type.f32) for _ in range(LEVELS + 1)]
    node = NodeFactory("opset6").create(UNIT.op_type, [p.output(0) for p in parameters],
                                        {"output_size": 2, "sampling_ratio": 2, "aligned": False,
                                         "pyramid_scales": [2 ** k for k in range(LEVELS + 1)]})
    with pytest.raises(ConversionError, match=f"{LEVELS + 2} inputs: the dialect op"):
        import_ir(ov.Model(node.outputs(), parameters))
