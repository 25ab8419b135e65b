"""ExperimentalDetectronPriorGridGenerator-6 (custom_ops/ops/detection/
experimental_detectron_prior_grid_generator.py): kernel vs OpenVINO CPU (f32 hint) on generated cases, IR
import -> InferenceSession, export, backend, schema and reference evaluator, refused inputs (h/w other than
0 or the feature map's size: the CPU plugin corrupts the heap there, so it is never run on them)."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.errors import OpError
from custom_ops.unit import Case
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("ExperimentalDetectronPriorGridGenerator")
CASES = check.cases(UNIT)


def test_kernel_matches_openvino_on_many_cases():
    assert check.check_generated_cases(UNIT, seeds=range(5)) >= 90


@pytest.mark.parametrize("case", CASES[:4], ids=lambda c: c.id)
def test_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path)


def test_known_grid():
    """Map 3 x 5 over a 30 x 40 image: steps 8 and 10, cell centres at (x + 0.5) * 8, (y + 0.5) * 10."""
    priors = np.array([[-8, -8, 8, 8], [-4, -16, 4, 16]], np.float32)
    case = Case("known", (priors, np.zeros((1, 2, 3, 5), np.float32), np.zeros((1, 3, 30, 40), np.float32)), {})
    out = check.kernel_outputs(UNIT, case)[0]
    assert out.shape == (30, 4)
    np.testing.assert_array_equal(out[:3], [[-4, -3, 12, 13], [0, -11, 8, 21], [4, -3, 20, 13]])
    np.testing.assert_array_equal(out[-1], [-4 + 36, -16 + 25, 4 + 36, 16 + 25])


def test_backend_refuses_a_grid_other_than_the_map_before_running():
    from onnx_bridge.backends import openvino as backend
    z = np.zeros
    with pytest.raises(OpError, match="attribute 'h'"):
        backend.run(UNIT.op_type, [z((2, 4), np.float32), z((1, 1, 2, 2), np.float32), z((1, 3, 8, 8), np.float32)],
                    {"h": 4, "w": 4})
