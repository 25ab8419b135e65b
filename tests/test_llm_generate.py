"""Greedy generation of a converted tiny LLaMA (f32 and INT4) in onnxruntime and onnxruntime-genai equals
OpenVINO's tokens; `onnx-bridge convert --genai` writes the genai_config.json."""
from __future__ import annotations

import json
import logging

import pytest

ov = pytest.importorskip("openvino")
pytest.importorskip("transformers")

import onnx_bridge  # noqa: E402
from converters.model_io import save_model  # noqa: E402
from onnx_bridge.cli import main as cli  # noqa: E402
from onnx_bridge.llm import genai_config, greedy, openvino_greedy, write_genai_config  # noqa: E402
from tests.helpers import llm  # noqa: E402

pytestmark = [pytest.mark.openvino, pytest.mark.torch]
PROMPT, NEW_TOKENS = [1, 5, 17, 42], 32


@pytest.fixture(scope="module", params=["f32", "int4"])
def converted(request, tmp_path_factory):
    """(stateful IR path, converted ONNX model path) of a tiny LLaMA laid out as optimum-intel writes it."""
    model = llm.stateless()
    if request.param == "int4":
        logging.getLogger("nncf").setLevel(logging.ERROR)
        model = llm.compressed(model, "INT4_ASYM", 32)
    directory = tmp_path_factory.mktemp(request.param)
    xml = llm.write_ir(llm.make_stateful(model), directory / "ir")
    onnx_path = directory / "onnx" / "model.onnx"
    assert cli(["convert", str(xml), "-o", str(onnx_path), "--genai"]) == 0
    return xml, onnx_path


def test_greedy_tokens_equal_openvino(converted):
    xml, onnx_path = converted
    expected = openvino_greedy(ov.Core().read_model(str(xml)), PROMPT, NEW_TOKENS)
    session = onnx_bridge.InferenceSession(str(onnx_path))
    assert greedy(session, PROMPT, NEW_TOKENS) == expected
    assert len(set(expected)) > 3  # not a degenerate repetition


def test_genai_config_from_config_json(converted):
    _, onnx_path = converted
    config = json.loads((onnx_path.parent / "genai_config.json").read_text())
    decoder = config["model"]["decoder"]
    assert (config["model"]["type"], config["model"]["vocab_size"], config["model"]["context_length"],
            config["model"]["eos_token_id"]) == ("llama", llm.VOCAB, 256, 2)
    assert (decoder["filename"], decoder["head_size"], decoder["num_hidden_layers"],
            decoder["num_key_value_heads"]) == ("model.onnx", llm.HEAD_DIM, llm.LAYERS, llm.KV_HEADS)
    assert config["search"]["max_length"] == 256 and config["search"]["past_present_share_buffer"] is False


def test_genai_config_without_config_json_names_what_is_missing(converted, tmp_path):
    import onnx
    _, onnx_path = converted
    model = onnx.load(str(onnx_path))
    with pytest.raises(onnx_bridge.ConversionError, match="model_type, context_length, eos_token_id"):
        genai_config(model, config_dir=tmp_path)
    # the shapes give the rest
    config = genai_config(model, model_type="llama", context_length=64, eos_token_id=2)
    assert config["model"]["vocab_size"] == llm.VOCAB and config["model"]["decoder"]["head_size"] == llm.HEAD_DIM
    target = write_genai_config(model, tmp_path / "m.onnx", model_type="llama", context_length=64, eos_token_id=2)
    assert json.loads(target.read_text()) == genai_config(model, "m.onnx", model_type="llama", context_length=64,
                                                          eos_token_id=2)


def test_onnxruntime_genai_generates_openvinos_tokens(converted):
    og = pytest.importorskip("onnxruntime_genai")
    xml, onnx_path = converted
    expected = openvino_greedy(ov.Core().read_model(str(xml)), PROMPT, NEW_TOKENS)
    model = og.Model(str(onnx_path.parent))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(PROMPT) + NEW_TOKENS, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens([PROMPT])
    while not generator.is_done():
        generator.generate_next_token()
    assert [int(t) for t in generator.get_sequence(0)][len(PROMPT):] == expected


def test_genai_flag_needs_an_ir_decoder(converted, tmp_path, capsys):
    _, onnx_path = converted
    assert cli(["convert", str(onnx_path), "-o", str(tmp_path / "x.onnx"), "--genai"]) != 0
    assert "--genai converts an OpenVINO IR LLM" in capsys.readouterr().err
    assert not (tmp_path / "x.onnx").exists() and not (tmp_path / "genai_config.json").exists()


def test_genai_flag_on_an_ir_that_is_no_decoder(tmp_path, capsys):
    from tests.test_llm_state import _counter_model
    ov.save_model(_counter_model(1.0, 6), str(tmp_path / "counter.xml"))
    assert cli(["convert", str(tmp_path / "counter.xml"), "-o", str(tmp_path / "out" / "m.onnx"), "--genai"]) != 0
    assert "not a plain decoder with a KV cache" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
