"""Decoder LLMs converted from OpenVINO IR: onnxruntime-genai's genai_config.json, and greedy generation.

A stateful OpenVINO LLM (optimum-intel's export) imports as the plain decoder onnxruntime-genai reads: inputs
input_ids, attention_mask, [position_ids,] past_key_values.N.key/value; outputs logits, present.N.key/value
(converters/openvino_ir/rules/state.py). genai_config() writes the rest of what onnxruntime-genai needs, from
the config.json / generation_config.json optimum-intel writes beside openvino_model.xml where present, else
from the model's shapes; what neither gives (and no override does) is an error naming it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx

from .errors import ConversionError

GENAI_CONFIG = "genai_config.json"
_PAST = re.compile(r"past_key_values\.(\d+)\.(key|value)")


def _dims(value) -> list:
    return [d.dim_value if d.HasField("dim_value") else None for d in value.type.tensor_type.shape.dim]


def _read_json(directory, name) -> dict:
    path = Path(directory) / name if directory is not None else None
    return json.loads(path.read_text()) if path is not None and path.is_file() else {}


def genai_config(model: onnx.ModelProto, filename: str = "model.onnx", config_dir=None, **overrides) -> dict:
    """genai_config.json (as a dict) for `model` written as `filename`.

    config_dir: the directory of the source openvino_model.xml (its config.json and generation_config.json
    are read); overrides: model_type, vocab_size, context_length, eos_token_id, bos_token_id, pad_token_id,
    num_attention_heads, hidden_size (each wins over what is found)."""
    config = _read_json(config_dir, "config.json")
    generation = _read_json(config_dir, "generation_config.json")
    inputs = {v.name: v for v in model.graph.input}
    outputs = {v.name: v for v in model.graph.output}
    layers = sorted({int(m.group(1)) for m in map(_PAST.fullmatch, inputs) if m})
    if "input_ids" not in inputs or "logits" not in outputs or not layers:
        raise ConversionError("--genai: the model is not a plain decoder with a KV cache (needs inputs "
                              "input_ids and past_key_values.N.key/value, outputs logits and present.N.key/value; "
                              f"has inputs {', '.join(inputs)})")
    past = _dims(inputs["past_key_values.0.key"])
    found = {
        "model_type": config.get("model_type"),
        "vocab_size": config.get("vocab_size") or (_dims(outputs["logits"]) or [None])[-1],
        "context_length": config.get("max_position_embeddings") or config.get("n_positions"),
        "eos_token_id": generation.get("eos_token_id", config.get("eos_token_id")),
        "bos_token_id": generation.get("bos_token_id", config.get("bos_token_id")),
        "pad_token_id": generation.get("pad_token_id", config.get("pad_token_id")),
        "num_hidden_layers": config.get("num_hidden_layers") or len(layers),
        "num_key_value_heads": config.get("num_key_value_heads") or (past[1] if len(past) == 4 else None),
        "head_size": config.get("head_dim") or (past[3] if len(past) == 4 else None),
        "num_attention_heads": config.get("num_attention_heads"),
        "hidden_size": config.get("hidden_size"),
    }
    found.update({k: v for k, v in overrides.items() if v is not None})
    if found["head_size"] is None and found["hidden_size"] and found["num_attention_heads"]:
        found["head_size"] = found["hidden_size"] // found["num_attention_heads"]
    required = ("model_type", "vocab_size", "context_length", "eos_token_id", "num_key_value_heads", "head_size")
    missing = [key for key in required if found[key] is None]
    if missing:
        where = f"{Path(config_dir) / 'config.json'}" if config_dir is not None else "no config.json given"
        raise ConversionError(f"--genai: cannot tell {', '.join(missing)} from the model's shapes or {where}; "
                              f"put the Hugging Face config.json / generation_config.json beside the .xml "
                              f"(optimum-intel writes them) or pass them to onnx_bridge.llm.write_genai_config")
    eos = found["eos_token_id"]
    names = {"input_ids": "input_ids", "past_key_names": "past_key_values.%d.key",
             "past_value_names": "past_key_values.%d.value"}
    for optional in ("attention_mask", "position_ids"):
        if optional in inputs:
            names[optional] = optional
    decoder = {"session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
               "filename": filename, "head_size": int(found["head_size"]),
               "hidden_size": int(found["hidden_size"] or found["head_size"] * (found["num_attention_heads"] or 1)),
               "inputs": names,
               "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                           "present_value_names": "present.%d.value"},
               "num_attention_heads": int(found["num_attention_heads"] or found["num_key_value_heads"]),
               "num_hidden_layers": int(found["num_hidden_layers"]),
               "num_key_value_heads": int(found["num_key_value_heads"])}
    model_section = {"type": found["model_type"], "vocab_size": int(found["vocab_size"]),
                     "context_length": int(found["context_length"]), "eos_token_id": eos,
                     "pad_token_id": found["pad_token_id"] if found["pad_token_id"] is not None else
                     (eos[0] if isinstance(eos, list) else eos),
                     "decoder": decoder}
    if found["bos_token_id"] is not None:
        model_section["bos_token_id"] = found["bos_token_id"]
    # past_present_share_buffer false: the present grows by Concat (no fixed-size cache buffer)
    search = {"do_sample": False, "num_beams": 1, "num_return_sequences": 1, "max_length": int(found["context_length"]),
              "min_length": 0, "past_present_share_buffer": False, "early_stopping": True, "top_k": 1,
              "top_p": 1.0, "temperature": 1.0, "repetition_penalty": 1.0, "length_penalty": 1.0,
              "no_repeat_ngram_size": 0, "diversity_penalty": 0.0}
    return {"model": model_section, "search": search}


def write_genai_config(model: onnx.ModelProto, onnx_path, config_dir=None, **overrides) -> Path:
    """Write genai_config.json beside `onnx_path` (the Python equivalent of `convert --genai`)."""
    onnx_path = Path(onnx_path)
    config = genai_config(model, onnx_path.name, config_dir, **overrides)
    target = onnx_path.parent / GENAI_CONFIG
    target.write_text(json.dumps(config, indent=2) + "\n")
    return target


def greedy(session, prompt, max_new_tokens: int, eos_token_id=None) -> list[int]:
    """Greedy generation with a stateful onnx_bridge.InferenceSession (batch 1): the prompt's tokens, then
    up to max_new_tokens tokens, each the argmax of the last logits; stops after an eos_token_id."""
    session.reset_state()
    names = {i.name for i in session.get_inputs()}
    tokens, new = [int(t) for t in prompt], [int(t) for t in prompt]
    stop = set(np.atleast_1d(eos_token_id).tolist()) if eos_token_id is not None else set()
    for _ in range(max_new_tokens):
        start = len(tokens) - len(new)
        feed = {"input_ids": np.array([new], np.int64)}
        if "attention_mask" in names:
            feed["attention_mask"] = np.ones((1, len(tokens)), np.int64)
        if "position_ids" in names:
            feed["position_ids"] = np.arange(start, len(tokens), dtype=np.int64)[None]
        logits = session.run(["logits"], feed)[0]
        token = int(np.argmax(logits[0, -1]))
        tokens.append(token)
        new = [token]
        if token in stop:
            break
    return tokens[len(prompt):]


#: OpenVINO CPU computing what the converted model computes: f32 everywhere, KV cache f32, no dynamic
#: quantization of activations (its defaults approximate: docs/llm.md)
OPENVINO_EXACT = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}


def openvino_greedy(model, prompt, max_new_tokens: int) -> list[int]:
    """The same greedy generation run by OpenVINO CPU on the stateful IR (path or openvino.Model) with
    OPENVINO_EXACT: the tokens the converted model must reproduce."""
    import openvino as ov
    model = str(model) if isinstance(model, Path) else model
    request = ov.Core().compile_model(model, "CPU", OPENVINO_EXACT).create_infer_request()
    tokens, new = [int(t) for t in prompt], [int(t) for t in prompt]
    for _ in range(max_new_tokens):
        start = len(tokens) - len(new)
        logits = request.infer({"input_ids": np.array([new]), "attention_mask": np.ones((1, len(tokens)), np.int64),
                                "position_ids": np.arange(start, len(tokens))[None],
                                "beam_idx": np.zeros(1, np.int32)})["logits"]
        new = [int(np.argmax(logits[0, -1]))]
        tokens += new
    return tokens[len(prompt):]


def set_accuracy_level(model: onnx.ModelProto, level: int) -> onnx.ModelProto:
    """Set the accuracy_level of every MatMulNBits of `model` (in place; returns it). The import writes 0:
    weights dequantized exactly in f32, activations untouched (OpenVINO's result at 1e-5). 4 is an opt-in
    speed mode: onnxruntime quantizes the activations to int8 per block (an approximation, as OpenVINO's
    CPU plugin does by default with DYNAMIC_QUANTIZATION_GROUP_SIZE); docs/performance.md measures both."""
    if level not in (0, 1, 2, 3, 4):
        raise ValueError(f"accuracy_level must be 0..4, not {level}")
    for node in model.graph.node:
        if node.op_type == "MatMulNBits":
            for attribute in node.attribute:
                if attribute.name == "accuracy_level":
                    attribute.i = level
    return model
