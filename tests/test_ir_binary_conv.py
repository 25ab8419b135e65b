"""BinaryConvolution-1 import (u1 weights -> +-1 Conv) against OpenVINO's CPU plugin (f32 precision) over
strides, pads, dilations, pad_value and auto_pad, and against the spec's formula (2 * popcount(xnor) - bits)
where the CPU plugin is not usable. Exact: every product and sum is a small integer.

OpenVINO's CPU plugin reads u1 weight bits least significant first within each byte (element i of a u1
tensor is bit 7 - i % 8 by OpenVINO's element type and reference), and past the weights when C_in is not a
multiple of 8: the CPU's model gets the same weights with the bits of each byte reversed, C_in % 8 == 0."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import opset1  # noqa: E402

import onnx_bridge  # noqa: E402
from converters.openvino_ir import import_ir, to_openvino  # noqa: E402
from onnx_bridge.errors import ConversionError  # noqa: E402
from tests.helpers.ir_cases import P, assert_same, ov_run  # noqa: E402

pytestmark = pytest.mark.openvino


def u1(bits: np.ndarray, lsb_first: bool = False):
    """A u1 Constant of 0/1 `bits` (packed most significant bit first, or as the CPU plugin reads them)."""
    tensor = ov.Tensor(ov.Type.u1, ov.Shape(list(bits.shape)))
    tensor.data[:] = np.packbits(bits.reshape(-1), bitorder="little" if lsb_first else "big")
    return ov.op.Constant(tensor)


def model(shape, bits, attributes, lsb_first=False, static=True, dtype="f32"):
    x = P(list(shape) if static else [-1, shape[1], -1, -1], dtype, "x")
    node = opset1.binary_convolution(x, u1(bits, lsb_first), *attributes)
    return ov.Model([node.output(0)], [x], "binary_conv")


def spec(x, bits, strides, begin, end, dilations, pad_value):
    """The spec's xnor-popcount on 0/1 data: sum over the window of +1 where the bits agree, -1 where not;
    the pad area holds pad_value (the import's reading: a real value, binarized with the data)."""
    signs = np.where(x > 0, 1.0, -1.0)
    padded = np.pad(signs, ((0, 0), (0, 0), (begin[0], end[0]), (begin[1], end[1])), constant_values=pad_value)
    w = bits.astype(np.float64) * 2 - 1
    n, c, h, wd = padded.shape
    o, _, kh, kw = bits.shape
    out_h = (h - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    out_w = (wd - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    out = np.zeros((n, o, out_h, out_w))
    for i, j in itertools.product(range(kh), range(kw)):
        window = padded[:, :, i * dilations[0]::strides[0], j * dilations[1]::strides[1]][:, :, :out_h, :out_w]
        out += np.einsum("nchw,oc->nohw", window, w[:, :, i, j])
    return out.astype(np.float32)


def rng(tag: str):
    return np.random.default_rng(sum(map(ord, tag)) * 7919 + len(tag))


GEOMETRY = [  # kernel, strides, pads_begin, pads_end, dilations, auto_pad
    ((3, 3), (1, 1), (1, 1), (1, 1), (1, 1), "explicit"),
    ((3, 2), (2, 1), (2, 0), (1, 2), (1, 2), "explicit"),
    ((1, 1), (1, 2), (0, 0), (0, 0), (1, 1), "explicit"),
    ((2, 3), (2, 2), (0, 0), (0, 0), (2, 1), "valid"),
    ((3, 3), (2, 1), (0, 0), (0, 0), (1, 1), "same_upper"),
    ((2, 2), (1, 2), (0, 0), (0, 0), (2, 2), "same_lower"),
]
CASES = [(g, c_in, pad_value, data) for g, (c_in, pad_value, data) in
         zip(GEOMETRY * 2, [(8, -1.0, "01"), (16, 1.0, "real"), (8, 0.0, "real"), (16, 0.5, "01"), (8, 1.0, "01"),
                            (8, -1.0, "real"), (16, 0.0, "01"), (8, 1.0, "real"), (8, -1.0, "01"), (16, 1.0, "01"),
                            (8, 0.0, "01"), (16, -1.0, "real")])]


def _case(geometry, c_in, pad_value, data):
    kernel, strides, begin, end, dilations, auto_pad = geometry
    tag = f"{kernel}-{strides}-{begin}-{end}-{dilations}-{auto_pad}-{c_in}-{pad_value}-{data}"
    r = rng(tag)
    x = r.standard_normal((2, c_in, 6, 7)).astype(np.float32)
    if data == "01":
        x = (x > 0).astype(np.float32)
    else:
        x[0, 0, 0, :3] = 0.0  # zeros binarize to -1
    bits = r.integers(0, 2, (3, c_in) + kernel).astype(np.uint8)
    attributes = (list(strides), list(begin), list(end), list(dilations), "xnor-popcount", pad_value, auto_pad)
    return tag, x, bits, attributes


@pytest.mark.parametrize("geometry, c_in, pad_value, data", CASES, ids=[_case(*c)[0] for c in CASES])
def test_import_matches_openvino(geometry, c_in, pad_value, data):
    tag, x, bits, attributes = _case(geometry, c_in, pad_value, data)
    want = ov_run(model(x.shape, bits, attributes, lsb_first=True), {"x": x})
    for static in (True, False) if attributes[-1] == "explicit" else (True,):
        imported = import_ir(model(x.shape, bits, attributes, static=static))
        got = onnx_bridge.InferenceSession(imported).run(None, {"x": x})
        assert_same(got, want, {}, f"onnxruntime vs OpenVINO ({'static' if static else 'dynamic'} shapes)")
    back = to_openvino(import_ir(model(x.shape, bits, attributes)))
    assert_same(ov_run(back, {"x": x}), want, {}, "back in OpenVINO")


@pytest.mark.parametrize("c_in, kernel", [(1, (3, 3)), (3, (2, 3)), (5, (1, 1))])
def test_spec_formula_any_channel_count(c_in, kernel):
    """C_in % 8 != 0 (the CPU plugin reads past the weights): the spec's formula, f32 and f16."""
    r = rng(f"spec-{c_in}-{kernel}")
    x = (r.standard_normal((1, c_in, 5, 6)) > 0).astype(np.float32)
    bits = r.integers(0, 2, (4, c_in) + kernel).astype(np.uint8)
    attributes = ([1, 2], [1, 0], [2, 1], [1, 1], "xnor-popcount", 1.0, "explicit")
    want = spec(x, bits, [1, 2], [1, 0], [2, 1], [1, 1], 1.0)
    for dtype in (np.float32, np.float16):
        imported = import_ir(model(x.shape, bits, attributes, dtype=np.dtype(dtype).name.replace("float", "f")))
        got = onnx_bridge.InferenceSession(imported).run(None, {"x": x.astype(dtype)})
        assert_same(got, [want.astype(dtype)], {}, f"import vs the spec ({np.dtype(dtype).name})")


def test_refusals_say_why():
    bits = np.ones((2, 8, 1, 1), np.uint8)
    attributes = ([1, 1], [0, 0], [0, 0], [1, 1], "xnor-popcount", 0.0, "same_upper")
    with pytest.raises(ConversionError, match="auto_pad same_upper with dynamic spatial dims"):
        import_ir(model((1, 8, 4, 4), np.ones((2, 8, 3, 3), np.uint8), attributes, static=False))
    weights = u1(bits)  # also read by another op
    x = P([1, 8, 4, 4], "f32", "x")
    node = opset1.binary_convolution(x, weights, [1, 1], [0, 0], [0, 0], [1, 1], "xnor-popcount", 0.0)
    other = opset1.convert(weights, "f32")
    with pytest.raises(ConversionError, match="u1 constant read by Convert input 0"):
        import_ir(ov.Model([node.output(0), other.output(0)], [x], "shared_bits"))
    w = P([2, 8, 1, 1], "u1", "w")  # weights computed at run time: the bits cannot be unpacked at import
    node = opset1.binary_convolution(x, w, [1, 1], [0, 0], [0, 0], [1, 1], "xnor-popcount", 0.0)
    with pytest.raises(ConversionError, match="the weights must be a u1 Constant"):
        import_ir(ov.Model([node.output(0)], [x, w], "computed_bits"))
    with pytest.raises(ConversionError, match="takes only"):
        import_ir(model((1, 8, 4, 4), bits, attributes[:-1] + ("explicit",), dtype="i32"))


def test_u1_weights_survive_an_ir_file(tmp_path):
    """Saved as IR (.xml/.bin) and read back, the u1 bytes keep their order: the import from the file equals the
    spec's formula."""
    r = rng("ir-file")
    x = (r.standard_normal((1, 3, 5, 5)) > 0).astype(np.float32)
    bits = r.integers(0, 2, (2, 3, 3, 3)).astype(np.uint8)
    attributes = ([1, 1], [1, 1], [1, 1], [1, 1], "xnor-popcount", -1.0, "explicit")
    xml = tmp_path / "binary_conv.xml"
    ov.save_model(model(x.shape, bits, attributes), str(xml))
    got = onnx_bridge.InferenceSession(import_ir(ov.Core().read_model(str(xml)))).run(None, {"x": x})
    assert_same(got, [spec(x, bits, [1, 1], [1, 1], [1, 1], [1, 1], -1.0)], {}, "import from the IR file")
