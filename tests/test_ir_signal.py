"""Signal import rules (DFT-7, IDFT-7, RDFT-9, IRDFT-9, STFT-15, ISTFT-16 -> ONNX DFT-17 / STFT-17 / Col2Im)
against OpenVINO's CPU plugin (f32 precision), over axes (several, negative, the batch axis), signal_size
(crop, pad, -1), odd and even lengths, dynamic shapes, short windows, transpose_frames, 1-D signals; ISTFT
over center, normalized, signal_length (crop and pad), windows with zero ends and steps leaving gaps.

Tolerance (FFT, stated once): the two runtimes use different FFT algorithms, whose rounding errors spread
over all bins; the bound is ACCUMULATION's rtol relative to the output's largest magnitude.

Where OpenVINO's CPU plugin deviates from its spec, cases compare with the spec's definition (numpy.fft
rfftn / irfftn of the zero-padded or cropped input; OpenVINO does not constant-fold these ops, so its core
reference is out of reach): RDFT with a signal_size larger than the input or -1 (the CPU refuses: "Signal
size greater than input size is not supported yet"; -1 fails to compile), IRDFT whose signal_size needs
more bins than given (the CPU reads past its input: values like 1e14, or right by chance), -1 on a
static axis (fails to compile), and in the random cases any IRDFT signal_size (the CPU plugin errs on some
multi-axis crops: axes [0, 1, 2], signal_size [1, 2, 1] of a [2, 2, 2] spectrum gives 0.27 off, [2, 2, 2, 2]
of a [2, 3, 4, 5] one 9e7).
"""
from __future__ import annotations

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import opset1, opset7, opset9, opset15, opset16  # noqa: E402

import onnx_bridge  # noqa: E402
from converters.openvino_ir import import_ir, to_openvino  # noqa: E402
from onnx_bridge.errors import ConversionError  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.helpers.ir_cases import ACCUMULATION, ov_run  # noqa: E402

pytestmark = pytest.mark.openvino


def assert_fft_close(got, want, what):
    assert got.shape == want.shape, what
    np.testing.assert_allclose(got, want, rtol=0, atol=ACCUMULATION["rtol"] * max(1.0, np.abs(want).max(initial=0)),
                               err_msg=what)


def _i64(values):
    return opset1.constant(np.array(values, np.int64))


def _ids(cases):
    return [str(i) for i in range(len(cases))]


def _model(make, x, dynamic):
    p = opset1.parameter(ov.PartialShape([-1] * x.ndim if dynamic else list(x.shape)), np.float32, name="x")
    return ov.Model([make(p).output(0)], [p], "signal")


def _run(model, x):
    return onnx_bridge.InferenceSession(import_ir(model)).run(None, {"x": x})[0]


COMPLEX_CASES = [  # (axes, signal_size, input shape, dynamic)
    ([1], None, (2, 5, 6), True), ([2], None, (2, 5, 6), True), ([1, 2], None, (2, 5, 6), True),
    ([-1], None, (2, 5, 6), True), ([0, 2], None, (2, 5, 6), True), ([0], None, (7,), True),
    ([2, 1], [4, 7], (2, 5, 6), False), ([1], [8], (2, 5, 6), False), ([2], [-1], (2, 5, 6), True),
    ([0, 1, 2], [3, -1, 9], (2, 5, 6), False), ([-2, -1], None, (1, 3, 4, 5), True),
]


@pytest.mark.parametrize("inverse", [False, True], ids=["dft", "idft"])
@pytest.mark.parametrize("axes, sizes, shape, dynamic", COMPLEX_CASES, ids=_ids(COMPLEX_CASES))
def test_dft_idft_match_openvino(inverse, axes, sizes, shape, dynamic):
    x = np.random.default_rng(len(shape) + len(axes)).standard_normal(shape + (2,)).astype(np.float32)
    op = opset7.idft if inverse else opset7.dft
    model = _model(lambda p: op(p, _i64(axes), _i64(sizes)) if sizes else op(p, _i64(axes)), x, dynamic)
    assert_fft_close(_run(model, x), ov_run(model, {"x": x})[0], f"{op.__name__} {axes} {sizes}")


RDFT_CASES = [  # (axes, signal_size, input shape, dynamic, oracle)
    ([2], None, (2, 5, 6), True, "cpu"), ([1], None, (2, 5, 7), True, "cpu"), ([1, 2], None, (2, 5, 6), True, "cpu"),
    ([2, 1], None, (2, 5, 7), True, "cpu"), ([-1], None, (3, 9), True, "cpu"), ([0, 1], None, (4, 5), True, "cpu"),
    ([2, 1], [4, 3], (2, 5, 6), False, "cpu"), ([0], [1], (6,), False, "cpu"),
    ([2, 1], [4, 7], (2, 5, 6), False, "spec"), ([1], [8], (2, 5, 6), False, "spec"),
    ([2], [-1], (2, 5, 6), True, "spec"),
]


@pytest.mark.parametrize("axes, sizes, shape, dynamic, oracle", RDFT_CASES, ids=_ids(RDFT_CASES))
def test_rdft_matches_openvino(axes, sizes, shape, dynamic, oracle):
    x = np.random.default_rng(len(shape) * 7 + len(axes)).standard_normal(shape).astype(np.float32)
    model = _model(lambda p: opset9.rdft(p, _i64(axes), _i64(sizes)) if sizes else opset9.rdft(p, _i64(axes)),
                   x, dynamic)
    got = _run(model, x)
    if oracle == "cpu":
        want = ov_run(model, {"x": x})[0]
    else:
        lengths = [x.shape[a] if s == -1 else s for a, s in zip(axes, sizes)]
        spectrum = np.fft.rfftn(x.astype(np.float64), s=lengths, axes=axes)
        want = np.stack([spectrum.real, spectrum.imag], -1).astype(np.float32)
    assert_fft_close(got, want, f"rdft {axes} {sizes}")


IRDFT_CASES = [  # (axes, signal_size, input shape, dynamic, oracle)
    ([2], None, (2, 5, 6), True, "cpu"), ([1, 2], None, (2, 5, 6), True, "cpu"), ([2], [7], (2, 5, 6), False, "cpu"),
    ([2], [10], (2, 5, 6), False, "cpu"), ([2], [11], (2, 5, 6), True, "cpu"),
    ([2, 1], [5, 9], (2, 5, 6), False, "cpu"),
    ([1], None, (2, 5, 6), False, "cpu"), ([-1], None, (2, 5, 6), True, "cpu"), ([2], [3], (2, 5, 6), False, "cpu"),
    ([1, 2], [4, 4], (2, 5, 6), False, "cpu"), ([0], None, (2,), True, "cpu"), ([0], [1], (4,), False, "cpu"),
    ([0], [2], (4,), True, "cpu"), ([2], [13], (2, 5, 6), False, "spec"), ([2], [16], (2, 5, 6), True, "spec"),
    ([0, 1], [-1, 5], (3, 4), False, "spec"), ([1, 0], [7, 3], (3, 4), True, "spec"),
]


def _spectrum(x):
    return x[..., 0].astype(np.float64) + 1j * x[..., 1]


@pytest.mark.parametrize("axes, sizes, shape, dynamic, oracle", IRDFT_CASES, ids=_ids(IRDFT_CASES))
def test_irdft_matches_openvino(axes, sizes, shape, dynamic, oracle):
    # random spectra: non-Hermitian, with imaginary parts at bin 0 and N/2 that both ignore
    x = np.random.default_rng(len(shape) * 5 + len(axes)).standard_normal(shape + (2,)).astype(np.float32)
    model = _model(lambda p: opset9.irdft(p, _i64(axes), _i64(sizes)) if sizes else opset9.irdft(p, _i64(axes)),
                   x, dynamic)
    if oracle == "cpu":
        want = ov_run(model, {"x": x})[0]
    else:
        lengths = [2 * (x.shape[a] - 1) if k == len(axes) - 1 and s == -1 else x.shape[a] if s == -1 else s
                   for k, (a, s) in enumerate(zip(axes, sizes))]
        want = np.fft.irfftn(_spectrum(x), s=lengths, axes=axes).astype(np.float32)
    assert_fft_close(_run(model, x), want, f"irdft {axes} {sizes}")


def test_irdft_padding_follows_spec():
    """IRDFT with a signal_size needing more bins than its input has: the spec zero-pads the bins. The CPU
    plugin reads past its input instead (its result depends on what memory held: measured 1e14 errors in
    one process, the spec's values in another), so the import is compared with the spec only."""
    x = np.random.default_rng(1).standard_normal((6, 2)).astype(np.float32)
    model = _model(lambda p: opset9.irdft(p, _i64([0]), _i64([14])), x, False)
    spec = np.fft.irfft(_spectrum(x), n=14)
    assert_fft_close(_run(model, x), spec.astype(np.float32), "irdft padded")


def test_computed_signal_size():
    """signal_size computed in the graph (as torch.fft writes it: from ShapeOf), -1 included."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 6)).astype(np.float32)
    sizes = {"rdft": ([2, 1], np.array([4, -1], np.int64)), "irdft": ([1, 2], np.array([3, 7], np.int64)),
             "dft": ([1], np.array([8], np.int64))}
    for name, (axes, size) in sizes.items():
        data = opset1.parameter([-1, -1, -1] if name == "rdft" else [-1, -1, -1, 2], np.float32, name="x")
        given = opset1.parameter([len(axes)], np.int64, name="s")
        op = {"rdft": opset9.rdft, "irdft": opset9.irdft, "dft": opset7.dft}[name]
        model = ov.Model([op(data, _i64(axes), given).output(0)], [data, given], name)
        feed = x if name == "rdft" else rng.standard_normal((2, 5, 6, 2)).astype(np.float32)
        got = onnx_bridge.InferenceSession(import_ir(model)).run(None, {"x": feed, "s": size})[0]
        if name == "dft":  # the CPU pads DFT correctly
            want = ov_run(model, {"x": feed, "s": size})[0]
        elif name == "rdft":
            spectrum = np.fft.rfftn(feed.astype(np.float64), s=[4, 5], axes=axes)
            want = np.stack([spectrum.real, spectrum.imag], -1).astype(np.float32)
        else:
            want = np.fft.irfftn(_spectrum(feed), s=[3, 7], axes=axes).astype(np.float32)
        assert_fft_close(got, want, f"{name} computed signal_size")


@st.composite
def random_transforms(draw):
    op = draw(st.sampled_from(["dft", "idft", "rdft", "irdft"]))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    if op == "irdft":  # at least 2 bins on every axis (1 bin gives an empty default signal)
        shape = tuple(max(d, 2) for d in shape)
    axes = draw(st.permutations(range(len(shape))).map(lambda p: list(p)))[:draw(st.integers(1, len(shape)))]
    negative = draw(st.booleans())
    sizes = None
    if draw(st.booleans()):  # crops (and IRDFT's last-axis lengths) only: what the CPU plugin computes right
        sizes = [draw(st.integers(1, shape[a])) for a in axes]
        if op == "irdft":
            sizes[-1] = draw(st.integers(1, 2 * (shape[axes[-1]] - 1)))
    return op, shape, [a - len(shape) if negative else a for a in axes], sizes, draw(st.integers(0, 2**16))


@settings(max_examples=30, derandomize=True, deadline=None)
@given(random_transforms())
def test_random_transforms_match_openvino(case):
    op, shape, axes, sizes, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape if op == "rdft" else shape + (2,)).astype(np.float32)
    build = {"dft": opset7.dft, "idft": opset7.idft, "rdft": opset9.rdft, "irdft": opset9.irdft}[op]
    model = _model(lambda p: build(p, _i64(axes), _i64(sizes)) if sizes else build(p, _i64(axes)), x, sizes is None)
    if op == "irdft" and sizes:  # the spec: the CPU plugin errs on some multi-axis crops (module doc)
        want = np.fft.irfftn(_spectrum(x), s=sizes, axes=axes).astype(np.float32)
    else:
        want = ov_run(model, {"x": x})[0]
    assert_fft_close(_run(model, x), want, str(case))


STFT_CASES = [  # (window length, frame_size, frame_step, transpose_frames, signal shape)
    (8, 8, 4, False, (2, 40)), (8, 8, 3, True, (2, 40)), (5, 8, 2, False, (1, 33)), (6, 9, 4, True, (3, 30)),
    (9, 9, 9, False, (2, 40)), (8, 8, 4, False, (40,)), (7, 10, 3, True, (41,)), (16, 16, 16, False, (2, 16)),
]


@pytest.mark.parametrize("window, frame, step, transpose, shape", STFT_CASES, ids=_ids(STFT_CASES))
def test_stft_matches_openvino(window, frame, step, transpose, shape):
    rng = np.random.default_rng(window * 100 + frame)
    x = rng.standard_normal(shape).astype(np.float32)
    w = opset1.constant((rng.random(window) + 0.1).astype(np.float32))
    model = _model(lambda p: opset15.stft(p, w, _i64(frame), _i64(step), transpose), x, True)
    assert_fft_close(_run(model, x), ov_run(model, {"x": x})[0], "stft")


def test_stft_window_input():
    """A window given as an input (its length static) is padded by a Pad node."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 30)).astype(np.float32), rng.random(5).astype(np.float32)
    signal = opset1.parameter([-1, -1], np.float32, name="x")
    window = opset1.parameter([5], np.float32, name="w")
    model = ov.Model([opset15.stft(signal, window, _i64(8), _i64(3), False).output(0)], [signal, window], "stft")
    got = onnx_bridge.InferenceSession(import_ir(model)).run(None, {"x": x, "w": w})[0]
    assert_fft_close(got, ov_run(model, {"x": x, "w": w})[0], "stft window input")


ISTFT_CASES = [  # (data shape, window length, frame_size, step, center, normalized, signal_length, zero-ended window)
    ((2, 9, 11, 2), 16, 16, 4, True, False, None, False), ((2, 9, 11, 2), 16, 16, 4, False, False, None, False),
    ((2, 9, 11, 2), 12, 16, 4, True, True, None, False), ((9, 11, 2), 16, 16, 5, True, False, 50, False),
    ((2, 9, 11, 2), 16, 16, 4, True, False, 70, False), ((2, 8, 11, 2), 15, 15, 4, True, False, None, False),
    ((2, 8, 11, 2), 15, 15, 4, False, True, 30, False), ((2, 9, 11, 2), 16, 16, 4, False, False, None, True),
    ((1, 9, 5, 2), 16, 16, 20, False, False, None, False), ((3, 5, 3, 2), 7, 8, 2, True, False, None, True),
]


@pytest.mark.parametrize("shape, window, frame, step, center, normalized, length, zero_ends", ISTFT_CASES,
                         ids=_ids(ISTFT_CASES))
def test_istft_matches_openvino(shape, window, frame, step, center, normalized, length, zero_ends):
    rng = np.random.default_rng(sum(shape) + window)
    x = rng.standard_normal(shape).astype(np.float32)  # not an STFT's output: frames overlap inconsistently
    w = opset1.constant((np.hanning(window) + (0 if zero_ends else 0.1)).astype(np.float32))
    extra = [] if length is None else [_i64(length)]
    model = _model(lambda p: opset16.istft(p, w, _i64(frame), _i64(step), center, normalized, *extra), x, True)
    assert_fft_close(_run(model, x), ov_run(model, {"x": x})[0], "istft")


@st.composite
def random_frames(draw):
    frame = draw(st.integers(2, 12))
    window = draw(st.integers(1, frame))
    step = draw(st.integers(1, frame + 2))
    batch = draw(st.sampled_from([None, 1, 3]))
    options = {"center": draw(st.booleans()), "normalized": draw(st.booleans()), "transpose": draw(st.booleans()),
               "length": draw(st.sampled_from([None, 1, 17, 40])), "frames": draw(st.integers(1, 6))}
    return frame, window, step, batch, options, draw(st.integers(0, 2**16))


@settings(max_examples=25, derandomize=True, deadline=None)
@given(random_frames())
def test_random_stft_istft_match_openvino(case):
    """STFT of a random signal and ISTFT of a random spectrum (sizes, windows, steps, transpose_frames,
    center, normalized, signal_length drawn)."""
    frame, window, step, batch, options, seed = case
    rng = np.random.default_rng(seed)
    w = opset1.constant((rng.random(window) + 0.05).astype(np.float32))
    signal = rng.standard_normal(((batch,) if batch else ()) + (frame + step * (options["frames"] - 1),))
    x = signal.astype(np.float32)
    stft = _model(lambda p: opset15.stft(p, w, _i64(frame), _i64(step), options["transpose"]), x, True)
    assert_fft_close(_run(stft, x), ov_run(stft, {"x": x})[0], f"stft {case}")
    spectrum = rng.standard_normal(((batch,) if batch else ()) + (frame // 2 + 1, options["frames"], 2))
    spectrum = spectrum.astype(np.float32)
    extra = [] if options["length"] is None else [_i64(options["length"])]
    istft = _model(lambda p: opset16.istft(p, w, _i64(frame), _i64(step), options["center"], options["normalized"],
                                           *extra), spectrum, True)
    assert_fft_close(_run(istft, spectrum), ov_run(istft, {"x": spectrum})[0], f"istft {case}")


def test_refusals_say_why():
    def refused(outputs, parameters, reason):
        with pytest.raises(ConversionError, match="unsupported configuration") as error:
            import_ir(ov.Model([outputs.output(0)], parameters, "refused"))
        assert reason in str(error.value)

    x = opset1.parameter([2, 4, 2], np.float32, name="x")
    axes = opset1.parameter([1], np.int64, name="axes")
    refused(opset7.dft(x, axes), [x, axes], "axes must be a Constant")
    refused(opset7.dft(opset1.convert(x, "f16"), _i64([0])), [x], "data other than f32")
    window = opset1.parameter([-1], np.float32, name="w")
    signal = opset1.parameter([2, 16], np.float32, name="s")
    refused(opset15.stft(signal, window, _i64(8), _i64(4), False), [signal, window], "window length static")
    spectrum = opset1.parameter([2, 5, 4, 2], np.float32, name="spectrum")
    step = opset1.parameter([], np.int64, name="step")
    window = opset1.constant(np.ones(8, np.float32))
    refused(opset16.istft(spectrum, window, _i64(8), step, False, False), [spectrum, step],
            "frame_step must be a Constant")


ROUND_TRIP = [  # (name, builder, input shape, static): OpenVINO's ONNX reader takes STFT on static shapes only
    ("dft", lambda p: opset7.dft(p, _i64([1, 2])), (2, 5, 6, 2), False),
    ("idft-size", lambda p: opset7.idft(p, _i64([1]), _i64([8])), (2, 5, 6, 2), True),
    ("rdft", lambda p: opset9.rdft(p, _i64([1, 2])), (2, 5, 7), False),
    ("rdft-size", lambda p: opset9.rdft(p, _i64([0]), _i64([4])), (6, 3), True),
    ("irdft", lambda p: opset9.irdft(p, _i64([1, 2])), (2, 5, 6, 2), False),
    ("irdft-size", lambda p: opset9.irdft(p, _i64([2]), _i64([7])), (2, 5, 6, 2), True),
    ("stft", lambda p: opset15.stft(p, opset1.constant(np.hanning(6).astype(np.float32) + 0.1), _i64(8), _i64(3),
                                    True), (2, 40), True),
    ("istft", lambda p: opset16.istft(p, opset1.constant(np.hanning(16).astype(np.float32)), _i64(16), _i64(4),
                                      True, False), (2, 9, 11, 2), False),
]


@pytest.mark.parametrize("name, make, shape, static", ROUND_TRIP, ids=[r[0] for r in ROUND_TRIP])
def test_way_back_to_openvino(name, make, shape, static):
    """The imported ONNX read back by OpenVINO's ONNX reader (to_openvino / export_ir) gives OpenVINO's result."""
    x = np.random.default_rng(len(name)).standard_normal(shape).astype(np.float32)
    model = _model(make, x, not static)
    back = to_openvino(import_ir(model))
    assert_fft_close(ov_run(back, {"x": x})[0], ov_run(model, {"x": x})[0], name)


@pytest.mark.torch
@pytest.mark.slow  # imports torch and runs the PyTorch frontend
@pytest.mark.parametrize("name", ["spectrogram", "filter", "resynthesis"])
def test_torch_audio_front_end_converts_whole(name):
    """A log-power spectrogram with a mel-like projection (torch.stft, center padding), an rfft/irfft
    filter (torch.fft) and an STFT -> gain -> ISTFT resynthesis through openvino.convert_model: the import
    equals OpenVINO CPU and torch eager."""
    torch = pytest.importorskip("torch")

    class Spectrogram(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("window", torch.hann_window(32))
            self.mel = torch.nn.Parameter(torch.rand(17, 6))

        def forward(self, audio):  # [B, L] -> [B, frames, 6]
            spectrum = torch.stft(audio, 32, 8, window=self.window, return_complex=True)
            return torch.log(spectrum.abs().pow(2).transpose(1, 2) @ self.mel + 1e-3)

    class Resynthesis(torch.nn.Module):  # STFT, a spectral gain, ISTFT back to the input's length
        def forward(self, audio):
            window = torch.hann_window(32)
            spectrum = torch.stft(audio, 32, 8, window=window, return_complex=True)
            return torch.istft(spectrum * torch.linspace(0.2, 1.0, 17)[:, None], 32, 8, window=window,
                               length=audio.shape[-1])

    class Filter(torch.nn.Module):
        def forward(self, audio):
            spectrum = torch.fft.rfft(audio)
            gain = torch.linspace(1.0, 0.0, spectrum.shape[-1])
            return torch.fft.irfft(spectrum * gain, n=audio.shape[-1])

    torch.manual_seed(0)
    module, x = {"spectrogram": lambda: (Spectrogram(), torch.randn(2, 200)),
                 "filter": lambda: (Filter(), torch.randn(3, 50)),
                 "resynthesis": lambda: (Resynthesis(), torch.randn(2, 150))}[name]()
    with torch.no_grad():
        eager = module(x).numpy()
        model = ov.convert_model(module.eval(), example_input=x)
    assert {"STFT", "RDFT", "IRDFT", "ISTFT"} & {op.get_type_name() for op in model.get_ops()}
    feeds = {model.inputs[0].get_any_name(): x.numpy()}
    got = onnx_bridge.InferenceSession(import_ir(model)).run(None, feeds)[0]
    assert_fft_close(got, ov_run(model, feeds)[0], name)
    assert_fft_close(got, eager, name + " vs torch")
