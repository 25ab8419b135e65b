"""BinaryConvolution-1 (mode xnor-popcount) as a standard Conv of +-1 values.

2 * popcount(xnor(input bits, weight bits)) - bits is the convolution of the bits read as -1 (0) / +1 (1):
the u1 weights are unpacked to +-1 floats at import, the input is binarized as the CPU plugin does (x > 0 -> +1,
else -1; the spec defines inputs 0 and 1 only, where this is its "0 is -1, 1 is 1"), the padding holds
pad_value itself (as the CPU plugin computes it) and a Conv sums the products: exact, every product and partial
sum is a small integer.

u1 bit order: element i of a u1 tensor is bit 7 - i % 8 of byte i // 8 (OpenVINO's u1 element type, its
Constant.get_vector and the reference implementation of this op). OpenVINO's CPU plugin reads the weight bits
the other way round within each byte (bit i % 8), and reads past the weights when C_in is not a multiple of 8
(results vary from run to run): observed on 2026.4, the spec's order is kept.
"""
from __future__ import annotations

import numpy as np

from .._registry import Unsupported, rule
from .._types import numpy_type
from ._spatial import FLOATS, require_type
from .conv import _forward_pads

U1 = "u1"


def u1_bits(constant) -> np.ndarray:
    """A u1 Constant's values (0/1, uint8) in its shape; element i is bit 7 - i % 8 of byte i // 8."""
    shape = tuple(constant.get_output_shape(0))
    raw = np.asarray(constant.get_data()).view(np.uint8).reshape(-1)
    return np.unpackbits(raw, count=int(np.prod(shape, dtype=np.int64))).reshape(shape)


@rule("BinaryConvolution", versions=(1,), onnx="Where(Greater(x, 0), 1, -1) + Pad(pad_value) + Conv",
      notes="mode xnor-popcount; u1 weights unpacked to +-1 at import (bit 7 - i % 8 of byte i // 8 is element i, "
            "OpenVINO's u1 order); input binarized x > 0 -> +1 else -1 (the spec's 0 -> -1, 1 -> 1); the pad "
            "area holds pad_value (as the CPU plugin computes it); exact (integer sums). OpenVINO's CPU plugin "
            "reads the weight bits least significant first and past the weights when C_in % 8 != 0 (observed on "
            "2026.4)",
      refuses=("weights that are not a u1 Constant: the bits are unpacked at import",
               "auto_pad same_* with dynamic spatial dims: the pad area holds pad_value, not ONNX's zeros",
               "element types other than f16/f32/f64: ONNX Conv"))
def binary_convolution(ctx, node):
    attributes = node.get_attributes()
    mode = str(attributes.get("mode", "")).lower()
    if mode != "xnor-popcount":
        raise Unsupported(f"mode={mode!r} (only xnor-popcount is defined)")
    code = require_type(ctx, node, FLOATS, "Conv")
    weights = node.input_value(1).get_node()
    if weights.get_type_name() != "Constant" or weights.get_output_element_type(0).get_type_name() != U1:
        raise Unsupported("the weights must be a u1 Constant (their bits are unpacked at import)")
    pads = _forward_pads(node, attributes)
    if "auto_pad" in pads:
        raise Unsupported(f"auto_pad {pads['auto_pad'].lower()} with dynamic spatial dims (the pad area holds "
                          "pad_value, ONNX's SAME_* pads zeros)")
    dtype = numpy_type(code)
    kernel = ctx.const(u1_bits(weights).astype(dtype) * 2 - 1, "weights")
    x = ctx.inp(node, 0)
    signs = ctx.emit("Where", [ctx.emit("Greater", [x, ctx.const(np.array(0, dtype), "zero")]),
                               ctx.const(np.array(1, dtype), "plus"), ctx.const(np.array(-1, dtype), "minus")])
    spatial = pads.pop("pads")
    if any(spatial):
        rank = len(spatial) // 2
        widths = np.array([0, 0] + spatial[:rank] + [0, 0] + spatial[rank:], np.int64)
        signs = ctx.emit("Pad", [signs, ctx.const(widths, "pads"),
                                 ctx.const(np.array(float(attributes["pad_value"]), dtype), "pad_value")])
    ctx.emit("Conv", [signs, kernel], [ctx.out(node)], pads=[0] * len(spatial), **pads)
