"""Recurrent import rules (LSTM/GRU/RNN sequences and cells -> ONNX LSTM/GRU/RNN) against OpenVINO's CPU
plugin (f32 precision), over direction x activations x clip x linear_before_reset x sequence lengths x
dynamic batch/time, and constant or computed weights.

Tolerance: ACCUMULATION (the runtimes sum the gate dot products in different orders and approximate
sigmoid/tanh differently).

Sequence lengths shorter than T: OpenVINO's spec (and its CPU plugin on static shapes, or with clip or
non-default activations) writes zeros past a length and takes Ho/Co at the last valid step, as ONNX does.
The CPU plugin's default path on dynamic shapes ignores seq_lengths (it runs all T steps); those cases are
compared with the same model compiled with static shapes (the spec's behaviour), and
test_cpu_dynamic_short_lengths_deviation pins the deviation.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import opset1, opset3, opset4, opset5  # noqa: E402

import onnx_bridge  # noqa: E402
from converters.openvino_ir import import_ir, to_openvino  # noqa: E402
from onnx_bridge.errors import ConversionError  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.helpers.ir_cases import ACCUMULATION, ov_run  # noqa: E402

pytestmark = pytest.mark.openvino
B, T, IN, H = 3, 4, 2, 3
GATES = {"lstm": 4, "gru": 3, "rnn": 1}


def _param(name, shape, static, element=np.float32):
    return opset1.parameter(ov.PartialShape(shape if static else [-1] * len(shape)), element, name=name)


def sequence_model(kind, direction, lengths, *, static, activations=None, clip=0.0, lbr=False,
                   computed_weights=False, compressed=False, seed=0, sizes=(T, IN, H)):
    """(OpenVINO model, feeds) of one XSequence-5 with tiny sizes (T, IN, H; B = len(lengths)); weights drawn
    from `seed`."""
    rng = np.random.default_rng(seed)
    B, T, IN, H = len(lengths), *sizes  # noqa: N806 (this model's sizes)
    d, g = (2 if direction == "bidirectional" else 1), GATES[kind]
    arrays = {"x": rng.standard_normal((B, T, IN)), "h": rng.standard_normal((B, d, H)),
              "c": rng.standard_normal((B, d, H)), "w": rng.standard_normal((d, g * H, IN)),
              "r": rng.standard_normal((d, g * H, H)), "b": rng.standard_normal((d, (g + lbr) * H))}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    arrays["sl"] = np.array(lengths, np.int64)
    if kind != "lstm":
        del arrays["c"]
    weights = ("w", "r", "b")
    if compressed:  # f16 Constants decompressed by Convert, as compress_to_fp16 writes them
        arrays.update({k: arrays[k].astype(np.float16).astype(np.float32) for k in weights})
    nodes = {k: (_param(k, v.shape, static or k in weights, v.dtype) if computed_weights or k not in weights
                 else opset1.convert(opset1.constant(v.astype(np.float16)), "f32") if compressed
                 else opset1.constant(v)) for k, v in arrays.items()}
    if kind == "lstm":
        node = opset5.lstm_sequence(nodes["x"], nodes["h"], nodes["c"], nodes["sl"], nodes["w"], nodes["r"],
                                    nodes["b"], H, direction, activations=activations, clip=clip)
    elif kind == "gru":
        node = opset5.gru_sequence(nodes["x"], nodes["h"], nodes["sl"], nodes["w"], nodes["r"], nodes["b"], H,
                                   direction, activations=activations, clip=clip, linear_before_reset=lbr)
    else:
        node = opset5.rnn_sequence(nodes["x"], nodes["h"], nodes["sl"], nodes["w"], nodes["r"], nodes["b"], H,
                                   direction, activations=activations, clip=clip)
    parameters = [n for n in nodes.values() if n.get_type_name() == "Parameter"]
    feeds = {k: arrays[k] for k in nodes if nodes[k].get_type_name() == "Parameter"}
    return ov.Model(list(node.outputs()), parameters, "seq"), feeds


ACTIVATIONS = {"lstm": ["tanh", "relu", "sigmoid"], "gru": ["relu", "sigmoid"], "rnn": ["relu"]}


def sequence_cases():
    cases = []
    for kind, direction, variant, lengths in itertools.product(
            ("lstm", "gru", "rnn"), ("forward", "reverse", "bidirectional"), ("default", "acts-clip"),
            ((4, 4, 4), (2, 4, 1))):
        options = {} if variant == "default" else {"activations": ACTIVATIONS[kind], "clip": 0.75}
        cases.append((f"{kind}-{direction}-{variant}-len{''.join(map(str, lengths))}", kind, direction, lengths,
                      options))
    for direction, lengths in itertools.product(("forward", "bidirectional"), ((4, 4, 4), (3, 1, 4))):
        cases.append((f"gru-lbr-{direction}-len{''.join(map(str, lengths))}", "gru", direction, lengths,
                      {"lbr": True}))
    cases += [("lstm-computed-weights", "lstm", "bidirectional", (4, 2, 3), {"computed_weights": True}),
              ("gru-lbr-computed-weights", "gru", "reverse", (4, 2, 3), {"computed_weights": True, "lbr": True}),
              ("rnn-computed-weights", "rnn", "forward", (4, 4, 4), {"computed_weights": True}),
              ("lstm-f16-weights", "lstm", "bidirectional", (4, 2, 3), {"compressed": True}),
              ("gru-lbr-f16-weights", "gru", "forward", (4, 4, 4), {"compressed": True, "lbr": True}),
              ("lstm-zero-length", "lstm", "bidirectional", (0, 4, 1), {}),
              ("gru-lbr-clip", "gru", "bidirectional", (2, 4, 1), {"lbr": True, "clip": 0.5})]
    return cases


@pytest.mark.parametrize("case_id, kind, direction, lengths, options", sequence_cases(),
                         ids=[c[0] for c in sequence_cases()])
def test_sequence_matches_openvino(case_id, kind, direction, lengths, options):
    dynamic, feeds = sequence_model(kind, direction, lengths, static=False, **options)
    imported = import_ir(dynamic)
    if options.get("compressed"):  # the gates reordered at import, in f16, then one Cast
        assert "Split" not in {n.op_type for n in imported.graph.node}
    got = onnx_bridge.InferenceSession(imported).run(None, feeds)
    full = min(lengths) == T
    # Short lengths: OpenVINO's static-shape compile (the spec's semantics, see the module doc).
    oracle = dynamic if full else sequence_model(kind, direction, lengths, static=True, **options)[0]
    want = ov_run(oracle, feeds)
    for index, (a, b) in enumerate(zip(got, want)):
        assert a.shape == b.shape, f"{case_id} output {index}"
        np.testing.assert_allclose(a, b, **ACCUMULATION, err_msg=f"{case_id} output {index}")
    if not full:  # zeros past each length
        for batch, length in enumerate(lengths):
            assert not got[0][batch, :, length:].any()


@st.composite
def random_sequences(draw):
    kind = draw(st.sampled_from(sorted(GATES)))
    steps, inputs, hidden = draw(st.integers(1, 5)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    lengths = tuple(draw(st.lists(st.integers(1, steps), min_size=1, max_size=3)))
    options = {"clip": draw(st.sampled_from([0.0, 0.3, 2.0])), "seed": draw(st.integers(0, 2**16))}
    if kind == "gru":
        options["lbr"] = draw(st.booleans())
    if draw(st.booleans()):
        count = {"lstm": 3, "gru": 2, "rnn": 1}[kind]  # f, g, h / f, g / f
        options["activations"] = draw(st.lists(st.sampled_from(["sigmoid", "tanh", "relu"]), min_size=count,
                                               max_size=count))
    direction = draw(st.sampled_from(["forward", "reverse", "bidirectional"]))
    return kind, direction, lengths, (steps, inputs, hidden), options


@settings(max_examples=20, derandomize=True, deadline=None)
@given(random_sequences())
def test_random_sequences_match_openvino(case):
    """Random sizes, lengths, clip, activations and directions on static shapes (where the CPU plugin
    follows the spec for every length)."""
    kind, direction, lengths, sizes, options = case
    model, feeds = sequence_model(kind, direction, lengths, static=True, sizes=sizes, **options)
    got = onnx_bridge.InferenceSession(import_ir(model)).run(None, feeds)
    for index, (a, b) in enumerate(zip(got, ov_run(model, feeds))):
        np.testing.assert_allclose(a, b, **ACCUMULATION, err_msg=f"{case} output {index}")


def test_cpu_dynamic_short_lengths_deviation():
    """The CPU plugin's default LSTM path on dynamic shapes (measured on x86 AVX2, OpenVINO 2026.4) runs
    every step whatever seq_lengths says: its outputs are those of full lengths. Accepted outcomes: that, or
    the spec's (the static-shape compile, which the import matches); nothing else."""
    lengths = (2, 4, 1)
    model, feeds = sequence_model("lstm", "forward", lengths, static=False)
    cpu = ov_run(model, feeds)
    spec = ov_run(sequence_model("lstm", "forward", lengths, static=True)[0], feeds)
    every_step = ov_run(model, {**feeds, "sl": np.full(len(lengths), T, np.int64)})

    def close(a, b):
        return all(np.allclose(x, y, **ACCUMULATION) for x, y in zip(a, b))
    assert close(cpu, spec) or close(cpu, every_step)
    got = onnx_bridge.InferenceSession(import_ir(model)).run(None, feeds)
    assert close(got, spec) and not close(got, every_step)


def cell_model(kind, version, *, activations=None, clip=0.0, lbr=False, computed_weights=False, seed=0):
    rng = np.random.default_rng(seed)
    g = GATES[kind]
    arrays = {"x": rng.standard_normal((B, IN)), "h": rng.standard_normal((B, H)), "c": rng.standard_normal((B, H)),
              "w": rng.standard_normal((g * H, IN)), "r": rng.standard_normal((g * H, H)),
              "b": rng.standard_normal(((g + lbr) * H,))}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    if kind != "lstm":
        del arrays["c"]
    nodes = {k: (_param(k, v.shape, k in "wrb") if computed_weights or k not in "wrb" else opset1.constant(v))
             for k, v in arrays.items()}
    options = {"activations": activations, "clip": clip}
    if kind == "lstm":
        builder = {1: opset1, 4: opset4}[version].lstm_cell
        node = builder(nodes["x"], nodes["h"], nodes["c"], nodes["w"], nodes["r"], nodes["b"], H, **options)
    elif kind == "gru":
        node = opset3.gru_cell(nodes["x"], nodes["h"], nodes["w"], nodes["r"], nodes["b"], H,
                               linear_before_reset=lbr, **options)
    else:
        node = opset3.rnn_cell(nodes["x"], nodes["h"], nodes["w"], nodes["r"], nodes["b"], H,
                               activations or ["tanh"], [], [], clip)
    parameters = [n for n in nodes.values() if n.get_type_name() == "Parameter"]
    feeds = {k: arrays[k] for k in nodes if nodes[k].get_type_name() == "Parameter"}
    return ov.Model(list(node.outputs()), parameters, "cell"), feeds


CELLS = [("lstm4", "lstm", 4, {}), ("lstm4-acts-clip", "lstm", 4, {"activations": ACTIVATIONS["lstm"], "clip": 0.6}),
         ("lstm1", "lstm", 1, {}), ("lstm4-computed", "lstm", 4, {"computed_weights": True}),
         ("gru", "gru", 3, {}), ("gru-lbr", "gru", 3, {"lbr": True}),
         ("gru-lbr-computed-acts", "gru", 3, {"lbr": True, "computed_weights": True,
                                              "activations": ACTIVATIONS["gru"], "clip": 0.9}),
         ("rnn", "rnn", 1, {}), ("rnn-relu-clip", "rnn", 1, {"activations": ["relu"], "clip": 1.2})]


@pytest.mark.parametrize("case_id, kind, version, options", CELLS, ids=[c[0] for c in CELLS])
def test_cell_matches_openvino(case_id, kind, version, options):
    model, feeds = cell_model(kind, version, **options)
    got = onnx_bridge.InferenceSession(import_ir(model)).run(None, feeds)
    want = ov_run(model, feeds)
    assert len(got) == len(want)
    for index, (a, b) in enumerate(zip(got, want)):
        assert a.shape == b.shape, f"{case_id} output {index}"
        np.testing.assert_allclose(a, b, **ACCUMULATION, err_msg=f"{case_id} output {index}")


def test_activation_parameters_are_ignored():
    """OpenVINO's sigmoid, tanh and relu ignore activations_alpha/beta (measured: same outputs with and
    without); the import drops them."""
    x = opset1.parameter([B, T, IN], np.float32, name="x")
    h = opset1.parameter([B, 1, H], np.float32, name="h")
    rng = np.random.default_rng(1)
    w, r, b = (opset1.constant(rng.standard_normal(s).astype(np.float32)) for s in ([1, H, IN], [1, H, H], [1, H]))
    lengths = opset1.constant(np.array([T] * B, np.int32))
    feeds = {"x": rng.standard_normal((B, T, IN)).astype(np.float32),
             "h": rng.standard_normal((B, 1, H)).astype(np.float32)}
    outputs = []
    for alpha, beta in (([], []), ([0.5], [0.1])):
        node = opset5.rnn_sequence(x, h, lengths, w, r, b, H, "forward", activations=["relu"],
                                   activations_alpha=alpha, activations_beta=beta)
        model = ov.Model([node.output(0)], [x, h], "alpha")
        got = onnx_bridge.InferenceSession(import_ir(model)).run(None, feeds)[0]
        np.testing.assert_allclose(got, ov_run(model, feeds)[0], **ACCUMULATION)
        outputs.append(got)
    np.testing.assert_array_equal(*outputs)


def test_refuses_f16_data():
    x = opset1.parameter([B, T, IN], np.float16, name="x")
    h = opset1.parameter([B, 1, H], np.float16, name="h")
    w, r, b = (opset1.constant(np.zeros(s, np.float16)) for s in ([1, H, IN], [1, H, H], [1, H]))
    node = opset5.rnn_sequence(x, h, opset1.constant(np.array([T] * B, np.int32)), w, r, b, H, "forward")
    with pytest.raises(ConversionError, match="data other than f32"):
        import_ir(ov.Model([node.output(0)], [x, h], "f16"))


@pytest.mark.parametrize("old, new", [('weights_format="fico"', 'weights_format="icof"'),
                                      ('input_forget="false"', 'input_forget="true"')])
def test_lstm_cell_1_legacy_attributes_refused(tmp_path, old, new):
    """LSTMCell-1 weights_format / input_forget (only an IR can carry them): the CPU plugin ignores them."""
    model, _ = cell_model("lstm", 1)
    ov.save_model(model, str(tmp_path / "cell.xml"), compress_to_fp16=False)
    xml = tmp_path / "cell.xml"
    assert old in xml.read_text()
    xml.write_text(xml.read_text().replace(old, new))
    with pytest.raises(ConversionError, match="CPU plugin ignores"):
        import_ir(xml)


def test_lstm_cell_1_peepholes():
    """LSTMCell-1's 7th input (peepholes): zeros are imported (the result is OpenVINO's), others refused
    (the CPU plugin ignores them)."""
    from openvino._pyopenvino import NodeFactory
    rng = np.random.default_rng(2)
    x, h, c = (opset1.parameter([B, n], np.float32, name=k) for k, n in (("x", IN), ("h", H), ("c", H)))
    feeds = {k: rng.standard_normal((B, n)).astype(np.float32) for k, n in (("x", IN), ("h", H), ("c", H))}
    weights = [rng.standard_normal(s).astype(np.float32) for s in ((4 * H, IN), (4 * H, H), (4 * H,))]
    attributes = {"hidden_size": H, "activations": ["sigmoid", "tanh", "tanh"], "activations_alpha": [],
                  "activations_beta": [], "clip": 0.0, "input_forget": False, "weights_format": "fico"}
    for peepholes in (np.zeros(3 * H, np.float32), np.ones(3 * H, np.float32)):
        inputs = [x.output(0), h.output(0), c.output(0)] + [opset1.constant(v).output(0)
                                                             for v in weights + [peepholes]]
        node = NodeFactory("opset1").create("LSTMCell", inputs, attributes)
        model = ov.Model(list(node.outputs()), [x, h, c], "peepholes")
        if peepholes.any():
            with pytest.raises(ConversionError, match="CPU plugin ignores"):
                import_ir(model)
        else:
            got = onnx_bridge.InferenceSession(import_ir(model)).run(None, feeds)
            for a, b in zip(got, ov_run(model, feeds)):
                np.testing.assert_allclose(a, b, **ACCUMULATION)


def _torch_model(torch, name):
    """(module, example input): nn.LSTM / nn.GRU (2 layers, bidirectional, batch_first) or a small conv +
    BiLSTM CRNN head."""
    class Recurrent(torch.nn.Module):
        def __init__(self, cell):
            super().__init__()
            self.rnn = cell(5, 6, num_layers=2, bidirectional=True, batch_first=True)

        def forward(self, x):
            return self.rnn(x)[0]

    class CRNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(),
                                            torch.nn.MaxPool2d((4, 1)))
            self.rnn = torch.nn.LSTM(8, 5, bidirectional=True, batch_first=True)
            self.head = torch.nn.Linear(10, 7)

        def forward(self, image):  # [B, 1, 8, W] -> [B, W, 7]
            features = self.conv(image).flatten(1, 2).transpose(1, 2)  # [B, W, 8]
            return self.head(self.rnn(features)[0]).log_softmax(-1)

    torch.manual_seed(0)
    return {"lstm": lambda: (Recurrent(torch.nn.LSTM), torch.randn(2, 7, 5)),
            "gru": lambda: (Recurrent(torch.nn.GRU), torch.randn(3, 4, 5)),
            "crnn": lambda: (CRNN(), torch.randn(2, 1, 8, 9))}[name]()


@pytest.mark.torch
@pytest.mark.slow  # imports torch and runs the PyTorch frontend
@pytest.mark.parametrize("name", ["lstm", "gru", "crnn"])
def test_torch_models_convert_whole(name):
    """A torch recurrent model through openvino.convert_model: the import equals OpenVINO CPU and torch eager."""
    torch = pytest.importorskip("torch")
    module, x = _torch_model(torch, name)
    module.eval()
    with torch.no_grad():
        eager = module(x).numpy()
        model = ov.convert_model(module, example_input=x)
    assert {"LSTMSequence", "GRUSequence"} & {op.get_type_name() for op in model.get_ops()}
    feeds = {model.inputs[0].get_any_name(): x.numpy()}
    got = onnx_bridge.InferenceSession(import_ir(model)).run(None, feeds)
    np.testing.assert_allclose(got[0], ov_run(model, feeds)[0], **ACCUMULATION, err_msg=name)
    np.testing.assert_allclose(got[0], eager, rtol=1e-4, atol=1e-5, err_msg=name + " vs torch")


ROUND_TRIP = [("lstm", "bidirectional", {}), ("gru", "reverse", {"lbr": True}), ("rnn", "forward", {}),
              ("lstm", "forward", {"computed_weights": True})]


@pytest.mark.parametrize("kind, direction, options", ROUND_TRIP, ids=[f"{k}-{d}" for k, d, _ in ROUND_TRIP])
def test_way_back_to_openvino(kind, direction, options):
    """The imported ONNX read back by OpenVINO's ONNX reader (to_openvino / export_ir) gives OpenVINO's
    result; short lengths on static shapes, which the CPU plugin honours."""
    for lengths, static in (((4, 4, 4), False), ((2, 4, 1), True)):
        model, feeds = sequence_model(kind, direction, lengths, static=static, **options)
        back = to_openvino(import_ir(model))
        for a, b in zip(ov_run(back, feeds), ov_run(model, feeds)):
            np.testing.assert_allclose(a, b, **ACCUMULATION, err_msg=f"{kind} {direction} {lengths}")
    model, feeds = cell_model(kind, 4 if kind == "lstm" else 3, **options)
    for a, b in zip(ov_run(to_openvino(import_ir(model)), feeds), ov_run(model, feeds)):
        np.testing.assert_allclose(a, b, **ACCUMULATION, err_msg=f"{kind} cell")
