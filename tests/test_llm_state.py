"""Stateful OpenVINO LLMs (ReadValue-6/Assign-6 KV cache, beam_idx) imported as the stateless model of
OpenVINO's own stateful_to_stateless_transformation, and run statefully by onnx_bridge.InferenceSession;
every step compared with OpenVINO's stateful InferRequest."""
from __future__ import annotations

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
pytest.importorskip("transformers")
import openvino.opset13 as op  # noqa: E402
from openvino.op.util import Variable, VariableInfo  # noqa: E402

import onnx_bridge  # noqa: E402
from converters.openvino_ir._importer import import_model  # noqa: E402
from tests.helpers import llm  # noqa: E402

pytestmark = [pytest.mark.openvino, pytest.mark.torch]
#: OpenVINO CPU computing in f32 throughout: no f16/u8 KV cache, no dynamic quantization of activations
CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}
#: MatMul / Softmax: the two runtimes accumulate in different orders
ACCUMULATION = dict(rtol=1e-5, atol=1e-5)


def _steps(prompt, count, batch=1):
    """Feeds of a prefill of `prompt` then `count` one-token steps (tokens fixed in advance)."""
    rng = np.random.default_rng(len(prompt) * 7 + count)
    tokens = [np.tile(np.array([prompt]), (batch, 1))] + [rng.integers(3, llm.VOCAB, (batch, 1)) for _ in range(count)]
    position = 0
    for ids in tokens:
        n = ids.shape[1]
        yield {"input_ids": ids.astype(np.int64), "attention_mask": np.ones((batch, position + n), np.int64),
               "position_ids": np.tile(np.arange(position, position + n), (batch, 1))}
        position += n


def _openvino(model):
    return ov.Core().compile_model(model, "CPU", CONFIG).create_infer_request()


def _io(model):
    inputs = [(v.name, v.type.tensor_type.elem_type, [d.dim_value or None for d in v.type.tensor_type.shape.dim])
              for v in model.graph.input]
    outputs = [v.name for v in model.graph.output]
    return inputs, outputs


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_inputs_outputs_are_openvinos_stateless_ones(kind):
    from openvino._offline_transformations import stateful_to_stateless_transformation

    stateful = llm.stateful(kind)
    reference = stateful.clone()
    stateful_to_stateless_transformation(reference)
    inputs, outputs = _io(import_model(stateful))
    from converters.openvino_ir._types import onnx_type
    expected = [(p.get_any_name(), onnx_type(p.get_element_type()),
                 [d.get_length() if d.is_static else None for d in p.get_partial_shape()]) for p in reference.inputs]
    assert inputs == expected
    assert outputs == [o.get_any_name() for o in reference.outputs]
    assert "beam_idx" not in [name for name, _, _ in inputs]


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_stateless_steps_equal_openvino_stateful(kind):
    stateful = llm.stateful(kind)
    request = _openvino(stateful)
    session = onnx_bridge.InferenceSession(import_model(stateful), stateful=False)
    past = {name: np.zeros((1, llm.KV_HEADS, 0, llm.HEAD_DIM), np.float32) for name in llm.kv_names("past_key_values")}
    for feed in _steps([5, 17, 9, 60], 3):
        expected = request.infer(dict(feed, beam_idx=np.zeros(1, np.int32)))["logits"]
        logits, *presents = session.run(None, dict(feed, **past))
        np.testing.assert_allclose(logits, expected, **ACCUMULATION)
        past = dict(zip(llm.kv_names("past_key_values"), presents))
    assert presents[0].shape == (1, llm.KV_HEADS, 7, llm.HEAD_DIM)


def test_session_carries_the_state_like_an_infer_request():
    stateful = llm.stateful("llama")
    request = _openvino(stateful)
    session = onnx_bridge.InferenceSession(import_model(stateful))
    beams = np.array([1, 0], np.int32)  # a reorder every step, as beam search does
    for round_ in range(2):  # reset_state starts over, as InferRequest.reset_state
        for feed in _steps([3, 4, 5], 3, batch=2):
            expected = request.infer(dict(feed, beam_idx=beams))["logits"]
            (logits,) = session.run(["logits"], dict(feed, beam_idx=beams))
            np.testing.assert_allclose(logits, expected, **ACCUMULATION)
        request.reset_state()
        session.reset_state()
    # An explicit past overrides the state: an empty one gives the first step again.
    first = next(_steps([3, 4, 5], 0, batch=2))
    empty = {name: np.zeros((2, llm.KV_HEADS, 0, llm.HEAD_DIM), np.float32)
             for name in llm.kv_names("past_key_values")}
    again = session.run(["logits"], dict(first, **empty))[0]
    request.reset_state()
    np.testing.assert_allclose(again, request.infer(dict(first, beam_idx=beams))["logits"], **ACCUMULATION)


def _counter_model(initial, version):
    """y = 2 (state + x); state <- state + x; the variable starts from an initializer computing `initial`
    from x (ReadValue-6 or -3), no beam_idx."""
    x = op.parameter([2, 3], ov.Type.f32, name="x")
    x.output(0).get_tensor().set_names({"x"})
    init = op.add(op.multiply(x, op.constant(np.float32(0))), op.constant(np.float32(initial or 0)))
    if version == 6:
        info = VariableInfo()
        info.data_shape, info.data_type, info.variable_id = ov.PartialShape([2, 3]), ov.Type.f32, "counter"
        variable = Variable(info)
        state = op.read_value(init, variable) if initial is not None else op.read_value(variable)  # zeros
    else:
        import openvino.opset3 as op3
        state = op3.read_value(init, "counter")
    total = op.add(state, x)
    result = op.result(op.multiply(total, op.constant(np.float32(2))))
    result.output(0).get_tensor().set_names({"y"})
    assign = op.assign(total, variable) if version == 6 else op3.assign(total, "counter")
    assert assign.get_type_info().version_id == f"opset{version}"
    return ov.Model([result], [assign], [x], "counter")


@pytest.mark.parametrize("version,initial", [(3, 1.5), (6, 1.5), (6, None)])
def test_non_empty_initializer_and_restored_names(version, initial):
    model = _counter_model(initial, version)
    onnx_model = import_model(model)
    assert _io(onnx_model)[1] == ["y", "output_restored.counter"]
    assert [v.name for v in onnx_model.graph.input] == ["x", "input_restored.counter"]
    request = _openvino(model)
    session = onnx_bridge.InferenceSession(onnx_model)
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.standard_normal((2, 3)).astype(np.float32)
        np.testing.assert_array_equal(session.run(["y"], {"x": x})[0], request.infer({"x": x})["y"])


def test_stateful_flag_on_a_model_without_variables():
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    with pytest.raises(onnx_bridge.ModelError, match="no variables"):
        onnx_bridge.InferenceSession(model, stateful=True)
    with pytest.raises(onnx_bridge.ModelError, match="not stateful"):
        onnx_bridge.InferenceSession(model).reset_state()


def test_paged_attention_model_is_refused_with_the_alternative():
    from openvino._offline_transformations import paged_attention_transformation

    model = llm.stateful("llama")
    paged_attention_transformation(model)
    with pytest.raises(onnx_bridge.ConversionError, match=r"PagedAttentionExtension is OpenVINO GenAI's "
                                                          r"continuous-batching.*Convert the model as exported"):
        import_model(model)
