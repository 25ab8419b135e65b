"""Tiny decoder LLMs in the forms OpenVINO ships them, built locally (random weights, no download).

`stateful(kind)` converts a tiny transformers LLaMA or Qwen2 ("qwen2_tied": embedding and lm_head tied; 2 layers,
hidden 64) with explicit past/present
(`ov.convert_model`), then makes it stateful the way optimum-intel's exporter does (optimum/exporters/openvino/
stateful.py): a `beam_idx` input reorders each past (Gather axis 0), OpenVINO's own
`apply_make_stateful_transformation` turns past/present pairs into ReadValue-6/Assign-6 variables, and each
ReadValue gets an initializer subgraph (zeros [batch, kv_heads, 0, head_dim]). optimum-intel itself pins
transformers < 5.6 (and pulls torchvision), so it cannot live in the project's venv.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

LAYERS, HIDDEN, HEADS, KV_HEADS, VOCAB, INTERMEDIATE = 2, 64, 4, 2, 128, 128
HEAD_DIM = HIDDEN // HEADS


def config(kind: str = "llama"):
    from tests.helpers.zoo import import_torchvision
    import_torchvision()  # transformers imports torchvision when present
    import transformers

    cls = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config}[kind.split("_")[0]]
    return cls(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=INTERMEDIATE, num_hidden_layers=LAYERS,
               num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=256,
               bos_token_id=1, eos_token_id=2, tie_word_embeddings=kind.endswith("_tied"))


def kv_names(prefix: str) -> list[str]:
    return [f"{prefix}.{i}.{kv}" for i in range(LAYERS) for kv in ("key", "value")]


def _cache_dir(kind: str) -> Path:
    """Where the built IR is kept between runs: keyed by this file's text and the versions that shape it
    (building imports torch and transformers and traces the model: ~10-30 s on a loaded machine)."""
    import hashlib
    import os
    from importlib.metadata import version

    key = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    versions = "-".join(version(p) for p in ("openvino", "transformers", "torch"))
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "onnx-bridge-tests"
    return root / f"llm-{kind}-{key}-{versions}"


@lru_cache(maxsize=None)
def _stateless(kind: str):
    """(openvino.Model with explicit past/present, HF config.json dict), built once and cached on disk."""
    import openvino as ov

    cache = _cache_dir(kind)
    if (cache / "config.json").is_file():
        return ov.Core().read_model(str(cache / "openvino_model.xml")), json.loads((cache / "config.json").read_text())
    model, cfg = _build(kind)
    staging = cache.with_name(cache.name + f".tmp{__import__('os').getpid()}")
    staging.mkdir(parents=True, exist_ok=True)
    ov.save_model(model, str(staging / "openvino_model.xml"), compress_to_fp16=False)
    (staging / "config.json").write_text(cfg.to_json_string())
    try:
        staging.rename(cache)
    except OSError:  # another process cached it first
        pass
    return model, json.loads(cfg.to_json_string())


def _build(kind: str):
    import openvino as ov
    import torch
    import transformers
    from transformers.cache_utils import DynamicCache

    cfg = config(kind)
    torch.manual_seed(0)
    net = {"llama": transformers.LlamaForCausalLM, "qwen2": transformers.Qwen2ForCausalLM}[kind.split("_")[0]](cfg)
    net.eval()

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, input_ids, attention_mask, position_ids, *past):
            cache = DynamicCache(config=cfg)
            for i, layer in enumerate(cache.layers):
                layer.lazy_initialization(past[2 * i], past[2 * i + 1])
                layer.keys, layer.values = past[2 * i], past[2 * i + 1]
            out = self.net(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                           past_key_values=cache, use_cache=True)
            return (out.logits,) + tuple(t for layer in out.past_key_values.layers for t in (layer.keys, layer.values))

    batch, seq, past_len = 1, 3, 2
    example = (torch.randint(0, VOCAB, (batch, seq)), torch.ones(batch, seq + past_len, dtype=torch.int64),
               torch.arange(past_len, past_len + seq)[None]) + \
        tuple(torch.randn(batch, KV_HEADS, past_len, HEAD_DIM) for _ in range(2 * LAYERS))
    shapes = [[-1, -1]] * 3 + [[-1, KV_HEADS, -1, HEAD_DIM]] * (2 * LAYERS)
    with torch.no_grad():
        model = ov.convert_model(Decoder(), example_input=example, input=[ov.PartialShape(s) for s in shapes])
    for port, name in zip(model.inputs, ["input_ids", "attention_mask", "position_ids"] + kv_names("past_key_values")):
        port.get_tensor().set_names({name})
    for port, name in zip(model.outputs, ["logits"] + kv_names("present")):
        port.get_tensor().set_names({name})
    return model, cfg


def stateless(kind: str = "llama"):
    return _stateless(kind)[0].clone()


def make_stateful(model):
    """optimum-intel's patch_stateful on an explicit past/present model (in place): beam_idx, then
    apply_make_stateful_transformation, then the ReadValue initializers."""
    import openvino as ov
    import openvino.opset13 as ops
    from openvino._offline_transformations import apply_make_stateful_transformation

    batch = model.input("input_ids").get_partial_shape()[0]
    beam_idx = ops.parameter(ov.PartialShape([batch]), ov.Type.i32, name="beam_idx")
    beam_idx.output(0).get_tensor().set_names({"beam_idx"})
    model.add_parameters([beam_idx])
    for name in kv_names("past_key_values"):
        port = model.input(name)
        consumers = port.get_target_inputs()
        gather = ops.gather(port, beam_idx, ops.constant(0))
        for consumer in consumers:
            consumer.replace_source_output(gather.output(0))
    model.validate_nodes_and_infer_types()
    apply_make_stateful_transformation(model, dict(zip(kv_names("past_key_values"), kv_names("present"))))
    ids = model.input("input_ids")
    batch_size = ops.gather(ops.shape_of(ids, output_type="i64"), ops.constant([0]), ops.constant(0))
    for op in model.get_ops():
        if op.get_type_name() == "ReadValue":
            dims = [dim.min_length for dim in op.get_output_partial_shape(0)]
            dims = [batch_size if i == 0 else ops.constant(np.array([d], np.int64)) for i, d in enumerate(dims)]
            op.set_arguments([ops.broadcast(ops.constant(0.0, dtype=op.get_output_element_type(0)),
                                            ops.concat(dims, axis=0))])
    model.validate_nodes_and_infer_types()
    return model


def stateful(kind: str = "llama"):
    return make_stateful(stateless(kind))


def write_ir(model, directory, kind: str = "llama", name: str = "openvino_model.xml") -> Path:
    """Save `model` as optimum-intel lays it out: openvino_model.xml/.bin with config.json and
    generation_config.json beside it."""
    import openvino as ov

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    xml = directory / name
    ov.save_model(model, str(xml), compress_to_fp16=False)
    (directory / "config.json").write_text(json.dumps(_stateless(kind)[1]))
    (directory / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": 1, "eos_token_id": 2, "do_sample": False}))
    return xml


def compressed(model, mode: str, group_size: int = -1):
    """nncf.compress_weights(model, mode=INT4_ASYM/INT4_SYM/INT8_ASYM/INT8_SYM, group_size) on a copy."""
    import nncf

    kwargs = {"mode": getattr(nncf.CompressWeightsMode, mode)}
    if mode.startswith("INT4"):  # a group larger than a layer's K: the largest that fits (down_proj has 128)
        kwargs.update(group_size=group_size, ratio=1.0, all_layers=True,
                      advanced_parameters=nncf.AdvancedCompressionParameters(
                          group_size_fallback_mode=nncf.GroupSizeFallbackMode.ADJUST))
    return nncf.compress_weights(model.clone(), **kwargs)
