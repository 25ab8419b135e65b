"""The model zoo (tests/helpers/zoo.py): real architectures with random weights, written as OpenVINO IR,
imported, run in onnxruntime and compared with OpenVINO CPU (f32: floats rtol/atol 1e-4, integers exact);
then exported back to IR, where OpenVINO must give the same outputs again.

Marked `zoo` (12 models; 245 s on the shared 2-core machine under load, most of it tracing by
torch.jit.trace / openvino.convert_model):
    pytest -m zoo tests/test_ir_zoo.py -p no:xdist
A model refused for missing import rules fails naming every missing op; benchmarks/ir_zoo.py prints the
same survey as a table.
"""
from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("openvino")

from tests.helpers.zoo import TOLERANCE, ZOO, check  # noqa: E402

#: tracing third-party models warns a lot (TracerWarning, deprecations): not this project's concern
pytestmark = [pytest.mark.openvino, pytest.mark.zoo, pytest.mark.filterwarnings("ignore")]


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_model_converts_and_matches_openvino(name, tmp_path):
    needs = ZOO[name][1]
    if importlib.util.find_spec(needs) is None:
        pytest.skip(f"{needs} not installed (pip install onnx-bridge[zoo])")
    outcome = check(name, tmp_path)
    if not outcome.converted:
        missing = ", ".join(outcome.missing) or "-"
        pytest.fail(f"{name} does not convert; missing ops: {missing}\n{outcome.error}", pytrace=False)
    assert not outcome.error, outcome.error
    assert outcome.matches, f"{name}: onnxruntime differs from OpenVINO CPU by {outcome.max_diff} ({TOLERANCE})"
    assert outcome.round_trip, (f"{name}: OpenVINO on export_ir(import_ir(model)) differs by "
                                f"{outcome.round_trip_diff}")
