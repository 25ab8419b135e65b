"""A model zoo built at run time with random weights (no downloads), written as OpenVINO IR the way users do
(openvino.convert_model + openvino.save_model, f16-compressed weights), for the IR importer's tests
(tests/test_ir_zoo.py) and its coverage table (benchmarks/ir_zoo.py).

    ZOO: name -> builder() -> (openvino.Model, feeds)
    build_ir(name, directory) -> (xml path, feeds)
    check(name, directory) -> Outcome: converted? / matches OpenVINO? / max abs diff / missing ops / the way back

Models are sized small (tiny configs, small inputs) so the whole zoo converts in well under a minute.
torchvision is imported through onnx_bridge.torchvision_compat.import_torchvision (its C extension does not
load beside the CPU build of torch 2.13).
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from onnx_bridge.comparison import measure, tolerance_of
from onnx_bridge.torchvision_compat import import_torchvision

#: float comparisons with OpenVINO CPU (f32 precision hint; no dynamic int8 quantization of activations, which
#: the CPU plugin applies to compressed weights by default on some CPUs: an approximation, docs/llm.md)
TOLERANCE = dict(rtol=1e-4, atol=1e-4)
_TOLERANCE = tolerance_of(**TOLERANCE)
CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}
RNG_SEED = 0


def import_transformers():
    """`import transformers` after import_torchvision(): transformers imports torchvision when it is installed,
    and that import fails beside torch 2.13 CPU unless the schemas are defined first (whichever test a
    worker runs first)."""
    import_torchvision()
    import transformers
    return transformers


def _torch_model(module, example, names):
    """openvino.Model of a torch module traced on `example` (a tuple of tensors), inputs named `names`."""
    import openvino as ov
    import torch

    module.eval()
    with torch.no_grad():  # traced here without convert_model's trace check (re-runs the model: seconds)
        traced = torch.jit.trace(module, example, check_trace=False, strict=False)
        model = ov.convert_model(traced, example_input=example)
    for port, name in zip(model.inputs, names):
        port.get_tensor().set_names({name})
    feeds = {name: t.numpy() for name, t in zip(names, example)}
    return model, feeds


def _seeded():
    import torch

    torch.manual_seed(RNG_SEED)
    return np.random.default_rng(RNG_SEED)


def resnet18():
    torchvision = import_torchvision()
    import torch

    _seeded()
    return _torch_model(torchvision.models.resnet18(weights=None), (torch.randn(1, 3, 64, 64),), ["image"])


def mobilenet_v3_small():
    torchvision = import_torchvision()
    import torch

    _seeded()
    return _torch_model(torchvision.models.mobilenet_v3_small(weights=None), (torch.randn(1, 3, 64, 64),),
                        ["image"])


def lraspp_mobilenet_v3():
    torchvision = import_torchvision()
    import torch

    _seeded()
    net = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                     num_classes=4)

    class Logits(torch.nn.Module):  # the dict output as a tensor
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x)["out"]

    return _torch_model(Logits(), (torch.randn(1, 3, 64, 64),), ["image"])


def _token_inputs(vocab: int, length: int = 8):
    import torch

    ids = torch.randint(0, vocab, (1, length))
    mask = torch.ones(1, length, dtype=torch.int64)
    mask[0, -2:] = 0
    return ids, mask


def bert_tiny():
    import torch

    transformers = import_transformers()
    BertConfig, BertModel = transformers.BertConfig, transformers.BertModel

    _seeded()
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32)
    net = BertModel(config)

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, input_ids, attention_mask):
            return self.net(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return _torch_model(Encoder(), _token_inputs(100), ["input_ids", "attention_mask"])


def gpt2_tiny():
    transformers = import_transformers()
    GPT2Config, GPT2LMHeadModel = transformers.GPT2Config, transformers.GPT2LMHeadModel

    _seeded()
    config = GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=32, use_cache=False)
    return _decoder(GPT2LMHeadModel(config))


def llama_tiny():
    transformers = import_transformers()
    LlamaConfig, LlamaForCausalLM = transformers.LlamaConfig, transformers.LlamaForCausalLM

    _seeded()
    config = LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32,
                         use_cache=False)
    return _decoder(LlamaForCausalLM(config))



def _decoder(net):
    """A causal LM as an IR taking (input_ids, attention_mask) and returning the logits."""
    import torch

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, input_ids, attention_mask):
            return self.net(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits

    return _torch_model(Decoder(), _token_inputs(100), ["input_ids", "attention_mask"])


def _graph():
    """A fixed graph of 6 nodes (ring plus two chords), edge_index int64 [2, 12]."""
    import torch

    src = [0, 1, 2, 3, 4, 5, 0, 2, 1, 2, 3, 4]
    dst = [1, 2, 3, 4, 5, 0, 3, 5, 0, 1, 2, 3]
    return torch.randn(6, 8), torch.tensor([src, dst], dtype=torch.int64)


def pyg_gcn():
    import torch
    from torch_geometric.nn import GCNConv

    _seeded()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = GCNConv(8, 4)

        def forward(self, x, edge_index):
            return self.conv(x, edge_index)

    return _torch_model(Net(), _graph(), ["x", "edge_index"])


def pyg_sage():
    import torch
    from torch_geometric.nn import SAGEConv

    _seeded()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = SAGEConv(8, 4, aggr="max")

        def forward(self, x, edge_index):
            return self.conv(x, edge_index)

    return _torch_model(Net(), _graph(), ["x", "edge_index"])


def nncf_int8_cnn():
    """A small CNN quantized by nncf.quantize (FakeQuantize on activations and weights)."""
    import nncf
    import torch

    rng = _seeded()
    logging.getLogger("nncf").setLevel(logging.ERROR)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3),
                              torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                              torch.nn.Linear(8, 4))
    model, feeds = _torch_model(net, (torch.randn(1, 3, 16, 16),), ["image"])
    samples = [rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(8)]
    # overflow_fix on every layer (nncf's default: the first only): without VNNI (AVX2) the CPU plugin's int8
    # convolution sums u8 x i8 pairs in saturating int16 (pmaddubsw), so 8-bit weights overflow and its
    # result leaves the FakeQuantize semantics (measured: 0.1 off in 63 of 1568 values of the second
    # convolution, while OpenVINO's reference agrees with the import); 7-bit weights cannot overflow.
    from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters, OverflowFix
    quantized = nncf.quantize(model, nncf.Dataset(samples), subset_size=8,
                              advanced_parameters=AdvancedQuantizationParameters(overflow_fix=OverflowFix.ENABLE))
    return quantized, feeds


def nncf_int4_weights():
    """An MLP with weights compressed by nncf.compress_weights (u4 groups, u8 zero points, f16 scales)."""
    import nncf
    import torch

    _seeded()
    logging.getLogger("nncf").setLevel(logging.ERROR)
    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 16))
    model, feeds = _torch_model(net, (torch.randn(2, 64),), ["x"])
    return nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT4_ASYM, group_size=32, ratio=1.0,
                                 all_layers=True), feeds


def torch_script_if_loop():
    """Data-dependent Python control flow kept by torch.jit.script: convert_model writes If and Loop."""
    import openvino as ov
    import torch

    _seeded()

    class Net(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                y = torch.sigmoid(x) * 2
            else:
                y = x - 1
            for i in range(int(x.shape[0])):
                y = y * 0.5 + i
            return y

    example = torch.randn(3, 4)
    model = ov.convert_model(torch.jit.script(Net()), example_input=(example,))
    model.inputs[0].get_tensor().set_names({"x"})
    return model, {"x": example.numpy()}


def if_loop():
    """If on a data-dependent condition and a Loop with a data-dependent exit, built with openvino's opset API
    (torch.export-based conversion specialises data-dependent Python control flow away)."""
    import openvino as ov
    import openvino.opset13 as op

    rng = _seeded()
    x = op.parameter([2, 3], ov.Type.f32, name="x")
    condition = op.greater(op.reduce_sum(x, op.constant(np.int64([0, 1]))), op.constant(np.float32(0)))
    branch = op.if_op(condition.output(0))
    then_x, else_x = op.parameter([2, 3], ov.Type.f32), op.parameter([2, 3], ov.Type.f32)
    then_body = ov.Model([op.result(op.multiply(op.sigmoid(then_x), op.constant(np.float32(2))))], [then_x])
    else_body = ov.Model([op.result(op.subtract(else_x, op.constant(np.float32(1))))], [else_x])
    branch.set_then_body(then_body)
    branch.set_else_body(else_body)
    branch.set_input(x.output(0), then_x, else_x)
    chosen = branch.set_output(then_body.get_results()[0], else_body.get_results()[0])

    loop = op.loop(op.constant(np.int64(10)), op.constant(True))
    body_i, body_x = op.parameter([], ov.Type.i64), op.parameter([2, 3], ov.Type.f32)
    step = op.add(op.multiply(body_x, op.constant(np.float32(1.5))), op.convert(body_i, "f32"))
    keep_going = op.less(op.reduce_max(step, op.constant(np.int64([0, 1]))), op.constant(np.float32(20)))
    next_x, go = op.result(step), op.result(keep_going)
    trace = op.result(op.unsqueeze(op.reduce_sum(step, op.constant(np.int64([1]))), op.constant(np.int64([0]))))
    loop.set_function(ov.Model([next_x, go, trace], [body_i, body_x]))
    loop.set_special_body_ports([0, 1])
    loop.set_merged_input(body_x, chosen, next_x.output(0))
    outputs = [loop.get_iter_value(next_x.output(0), -1), loop.get_concatenated_slices(trace.output(0), 0, 1, 1,
                                                                                          -1, 0)]
    feeds = {"x": rng.standard_normal((2, 3)).astype(np.float32)}
    return ov.Model(outputs, [x], "if_loop"), feeds


def _torchvision(factory: str, shape=(1, 3, 64, 64), input_name="image", **kwargs):
    """Builder of a torchvision model `factory` ("video.r3d_18", "swin_t", ...) with random weights."""
    def build():
        torchvision = import_torchvision()
        import torch

        _seeded()
        namespace, _, name = factory.rpartition(".")
        module = torchvision.models if not namespace else getattr(torchvision.models, namespace)
        return _torch_model(getattr(module, name)(weights=None, **kwargs), (torch.randn(*shape),), [input_name])
    return build


def _segmentation(factory: str):
    def build():
        torchvision = import_torchvision()
        import torch

        _seeded()
        net = getattr(torchvision.models.segmentation, factory)(weights=None, weights_backbone=None, num_classes=3)
        return _torch_model(_Field(net, "out"), (torch.randn(1, 3, 64, 64),), ["image"])
    return build


def _transformers(config: str, model: str, inputs: str = "tokens", **settings):
    """Builder of a transformers model from a tiny local config; its last_hidden_state is the output."""
    def build():
        import torch

        transformers = import_transformers()
        _seeded()
        net = getattr(transformers, model)(getattr(transformers, config)(**settings))
        if inputs == "tokens":
            return _torch_model(_Field(net, "last_hidden_state", tokens=True), _token_inputs(100),
                                ["input_ids", "attention_mask"])
        example = (torch.randn(1, 3, 32, 32),) if inputs == "pixels" else (torch.randn(1, 400),)
        return _torch_model(_Field(net, "last_hidden_state"), example, [inputs])
    return build


def _Field(net, field: str, tokens: bool = False):
    """`net` as a module returning one field of its (dict-like) output."""
    import torch

    class Field(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, *args):
            if tokens:
                return self.net(input_ids=args[0], attention_mask=args[1])[field]
            return self.net(*args)[field]

    return Field()


#: name -> builder() -> (openvino.Model, feeds); the module each needs (skipped when missing)
ZOO: dict[str, tuple[Callable, str]] = {
    "resnet18": (resnet18, "torchvision"),
    "mobilenet_v3_small": (mobilenet_v3_small, "torchvision"),
    "lraspp_mobilenet_v3_large": (lraspp_mobilenet_v3, "torchvision"),
    "bert_tiny": (bert_tiny, "transformers"),
    "gpt2_tiny": (gpt2_tiny, "transformers"),
    "llama_tiny": (llama_tiny, "transformers"),
    "pyg_gcnconv": (pyg_gcn, "torch_geometric"),
    "pyg_sageconv_max": (pyg_sage, "torch_geometric"),
    "nncf_int8_cnn": (nncf_int8_cnn, "nncf"),
    "nncf_int4_weights": (nncf_int4_weights, "nncf"),
    "torch_script_if_loop": (torch_script_if_loop, "torch"),
    "if_loop": (if_loop, "openvino"),
    # more architectures users convert (tiny sizes, random weights)
    "googlenet": (_torchvision("googlenet", aux_logits=False, init_weights=True), "torchvision"),
    "shufflenet_v2_x0_5": (_torchvision("shufflenet_v2_x0_5"), "torchvision"),
    "swin_t": (_torchvision("swin_t"), "torchvision"),
    "r3d_18_video": (_torchvision("video.r3d_18", (1, 3, 4, 32, 32), "clip"), "torchvision"),
    "deeplabv3_mobilenet_v3": (_segmentation("deeplabv3_mobilenet_v3_large"), "torchvision"),
    "distilbert_tiny": (_transformers("DistilBertConfig", "DistilBertModel", vocab_size=100, dim=32, n_layers=2,
                                      n_heads=2, hidden_dim=64, max_position_embeddings=32), "transformers"),
    "bart_tiny": (_transformers("BartConfig", "BartModel", vocab_size=100, d_model=32, encoder_layers=1,
                                decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                                encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=32,
                                use_cache=False), "transformers"),
    "t5_encoder_tiny": (_transformers("T5Config", "T5EncoderModel", vocab_size=100, d_model=32, d_kv=16, d_ff=64,
                                      num_layers=2, num_heads=2), "transformers"),
    "vit_tiny": (_transformers("ViTConfig", "ViTModel", "pixels", hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=2, intermediate_size=64, image_size=32, patch_size=8),
                 "transformers"),
    "wav2vec2_tiny": (_transformers("Wav2Vec2Config", "Wav2Vec2Model", "audio", hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=64, conv_dim=(16, 16),
                                    conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                    num_conv_pos_embedding_groups=2), "transformers"),
}


def build_ir(name: str, directory) -> tuple[Path, dict]:
    """Write zoo model `name` as IR (f16-compressed weights, save_model's default) into `directory`."""
    import openvino as ov

    model, feeds = ZOO[name][0]()
    xml = Path(directory) / f"{name}.xml"
    ov.save_model(model, str(xml))
    return xml, feeds


def run_openvino(model_or_path, feeds) -> list[np.ndarray]:
    import openvino as ov

    core = ov.Core()
    model = core.read_model(str(model_or_path)) if isinstance(model_or_path, (str, Path)) else model_or_path
    compiled = core.compile_model(model, "CPU", CONFIG)
    result = compiled(dict(feeds))
    return [np.asarray(result[o]) for o in compiled.outputs]


def missing_ops(message: str) -> list[str]:
    """The 'Name-version (xN)' items of an import error's unsupported-op line."""
    match = re.search(r"node\(s\)\): (.*)", message)
    return match.group(1).split(", ") if match else []


def max_difference(got: list, want: list) -> float:
    metrics = [measure(w, g, tolerance=_TOLERANCE) for g, w in zip(got, want)]
    if any(m.status in ("shape", "dtype") for m in metrics):
        return float("inf")
    return max((m.max_abs for m in metrics), default=0.0)


def same(got: list, want: list) -> bool:
    """Float outputs within TOLERANCE, integer and bool outputs exact."""
    return len(got) == len(want) and all(measure(w, g, tolerance=_TOLERANCE).agree for g, w in zip(got, want))


@dataclass
class Outcome:
    name: str
    converted: bool = False
    matches: bool | None = None       # onnxruntime on the import vs OpenVINO CPU on the IR
    max_diff: float | None = None
    round_trip: bool | None = None    # OpenVINO on export_ir(import) vs OpenVINO on the IR
    round_trip_diff: float | None = None
    missing: list = field(default_factory=list)
    error: str = ""
    seconds: dict = field(default_factory=dict)


def check(name: str, directory, *, way_back: bool = True) -> Outcome:
    """Build, import, run and compare one zoo model (see Outcome)."""
    from converters.openvino_ir import export_ir, import_ir
    from custom_ops.errors import ConversionError
    from onnx_bridge import InferenceSession

    outcome = Outcome(name)
    start = time.perf_counter()
    xml, feeds = build_ir(name, directory)
    outcome.seconds["build"] = time.perf_counter() - start
    want = run_openvino(xml, feeds)
    start = time.perf_counter()
    try:
        onnx_model = import_ir(xml)
    except ConversionError as error:
        outcome.error, outcome.missing = str(error), missing_ops(str(error))
        return outcome
    outcome.seconds["import"] = time.perf_counter() - start
    outcome.converted = True
    try:
        got = InferenceSession(onnx_model.SerializeToString()).run(None, feeds)
    except Exception as error:  # noqa: BLE001 (reported, not raised: this is a survey)
        outcome.error = f"onnxruntime: {type(error).__name__}: {error}"
        return outcome
    outcome.matches, outcome.max_diff = same(got, want), max_difference(got, want)
    if way_back:
        try:
            back = Path(directory) / f"{name}.back.xml"
            export_ir(onnx_model, back)
            again = run_openvino(back, feeds)
            outcome.round_trip, outcome.round_trip_diff = same(again, want), max_difference(again, want)
        except Exception as error:  # noqa: BLE001
            outcome.round_trip, outcome.error = False, f"export_ir: {type(error).__name__}: {error}"
    return outcome
