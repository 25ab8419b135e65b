"""A real optimum-intel export (OVModelForCausalLM, export=True: stateful, beam_idx; f32 and nncf INT4 via
OVWeightQuantizationConfig) converts with --genai and generates OpenVINO's greedy tokens in onnxruntime.

optimum-intel pins transformers < 5.6, beside the project's 5.x: it runs in its own venv, `make test-optimum`
(the other LLM tests build the same stateful form with OpenVINO's apply_make_stateful_transformation)."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("optimum.intel")
ov = pytest.importorskip("openvino")

import onnx_bridge  # noqa: E402
from onnx_bridge.cli import main as cli  # noqa: E402
from onnx_bridge.llm import greedy, openvino_greedy  # noqa: E402
from tests.helpers import llm  # noqa: E402
from tests.test_llm_generate import NEW_TOKENS, PROMPT  # noqa: E402

pytestmark = [pytest.mark.openvino, pytest.mark.torch]


@pytest.mark.parametrize("bits", [None, 4])
def test_optimum_intel_export_converts_and_generates(bits, tmp_path):
    from tests.helpers.zoo import import_torchvision
    import_torchvision()
    import torch
    import transformers
    from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig

    torch.manual_seed(0)
    transformers.LlamaForCausalLM(llm.config("llama")).save_pretrained(tmp_path / "hf")
    quantization = OVWeightQuantizationConfig(bits=4, group_size=32, ratio=1.0) if bits else None
    exported = OVModelForCausalLM.from_pretrained(tmp_path / "hf", export=True, compile=False,
                                                  quantization_config=quantization)
    exported.save_pretrained(tmp_path / "ov")
    xml = tmp_path / "ov" / "openvino_model.xml"
    nodes = ov.Core().read_model(str(xml)).get_ordered_ops()
    assert {"ReadValue", "Assign"} <= {op.get_type_name() for op in nodes}
    types = {op.get_output_element_type(0).get_type_name() for op in nodes if op.get_type_name() == "Constant"}
    assert ("u4" in types) == bool(bits)
    assert cli(["convert", str(xml), "-o", str(tmp_path / "onnx" / "model.onnx"), "--genai"]) == 0
    config = json.loads((tmp_path / "onnx" / "genai_config.json").read_text())
    assert config["model"]["type"] == "llama"
    expected = openvino_greedy(ov.Core().read_model(str(xml)), PROMPT, NEW_TOKENS)
    session = onnx_bridge.InferenceSession(str(tmp_path / "onnx" / "model.onnx"))
    assert greedy(session, PROMPT, NEW_TOKENS) == expected
