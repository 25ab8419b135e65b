"""Stateful LLaMA with nncf-compressed weights (INT4 sym/asym groups 32/64/128, INT8 sym/asym per channel):
the weights stay compressed (MatMulNBits, DequantizeLinear; no f32 copy) and every step of prefill + decode
equals OpenVINO's stateful InferRequest computing in f32 without dynamic quantization."""
from __future__ import annotations

import logging

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
pytest.importorskip("transformers")
pytest.importorskip("nncf")

import onnx_bridge  # noqa: E402
from converters.model_io import save_model  # noqa: E402
from converters.openvino_ir import to_openvino  # noqa: E402
from converters.openvino_ir._importer import import_model  # noqa: E402
from tests.helpers import llm  # noqa: E402
from tests.test_llm_state import ACCUMULATION, CONFIG, _steps  # noqa: E402

pytestmark = [pytest.mark.openvino, pytest.mark.torch]


# (INT4_SYM 32/64 and INT8_SYM per channel on a small MatMul: tests/test_ir_quantization.py)
@pytest.mark.parametrize("kind,mode,group", [("llama", "INT4_ASYM", 32), ("llama", "INT4_SYM", 128),
                                             ("llama", "INT8_ASYM", -1), ("qwen2_tied", "INT4_ASYM", 64)])
def test_compressed_decoder_steps_equal_openvino(kind, mode, group, tmp_path):
    logging.getLogger("nncf").setLevel(logging.ERROR)
    model = llm.make_stateful(llm.compressed(llm.stateless(kind), mode, group))
    onnx_model = import_model(model)
    ops = [n.op_type for n in onnx_model.graph.node]
    # q k v o gate up down, lm_head: 4-bit as MatMulNBits, 8-bit as a Cast/Sub/Mul chain onnxruntime folds
    assert ops.count("MatMulNBits") == (7 * llm.LAYERS + 1 if mode.startswith("INT4") else 0)
    bits = {a.i for n in onnx_model.graph.node if n.op_type == "MatMulNBits" for a in n.attribute if a.name == "bits"}
    assert bits == ({4} if mode.startswith("INT4") else set())
    # the embedding: GatherBlockQuantized (4-bit, on the packed data), DequantizeLinear (8-bit)
    assert ops.count("GatherBlockQuantized") == (1 if mode.startswith("INT4") else 0)
    assert ops.count("DequantizeLinear") == (0 if mode.startswith("INT4") else 1)
    assert onnx_model.opset_import[0].version == 18
    if kind.endswith("_tied"):  # the embedding reads lm_head's packed weight (written once)
        producers = {o: n.op_type for n in onnx_model.graph.node for o in n.output}
        gather = next(n for n in onnx_model.graph.node if n.op_type == "GatherBlockQuantized")
        assert producers.get(gather.input[0]) == "Reshape"
    if group == 128:
        assert 128 in {a.i for n in onnx_model.graph.node for a in n.attribute if a.name == "block_size"}
    # Weights stay compressed: the initializers hold at most 1.3x the IR's .bin (f16 scales become f32);
    # the whole file's size is dominated by the graph at this tiny size (docs/performance.md: large models).
    ov.save_model(model, str(tmp_path / "m.xml"), compress_to_fp16=False)
    save_model(onnx_model, tmp_path / "m.onnx")
    data = sum(len(t.raw_data) for t in onnx_model.graph.initializer)
    assert data <= 1.3 * (tmp_path / "m.bin").stat().st_size

    request = ov.Core().compile_model(model, "CPU", CONFIG).create_infer_request()
    session = onnx_bridge.InferenceSession(onnx_model)
    for step, feed in enumerate(_steps([7, 8, 9, 10, 11], 3)):
        expected = request.infer(dict(feed, beam_idx=np.zeros(1, np.int32)))["logits"]
        np.testing.assert_allclose(session.run(["logits"], feed)[0], expected, **ACCUMULATION)
        if step == 0 and kind == "llama":  # and back: OpenVINO reads MatMulNBits / GatherBlockQuantized
            empty = {n: np.zeros((1, llm.KV_HEADS, 0, llm.HEAD_DIM), np.float32) for n in llm.kv_names("past_key_values")}
            back = ov.Core().compile_model(to_openvino(onnx_model), "CPU", CONFIG)(dict(feed, **empty))["logits"]
            np.testing.assert_allclose(back, expected, **ACCUMULATION)


def test_accuracy_level_is_opt_in():
    from onnx import TensorProto, helper

    from onnx_bridge.llm import set_accuracy_level
    node = helper.make_node("MatMulNBits", ["x", "b", "s"], ["y"], domain="com.microsoft", K=16, N=1, bits=4,
                            block_size=16, accuracy_level=0)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])])
    model = set_accuracy_level(helper.make_model(graph), 4)
    assert {a.name: a.i for a in model.graph.node[0].attribute}["accuracy_level"] == 4
    with pytest.raises(ValueError, match="0..4"):
        set_accuracy_level(model, 7)
