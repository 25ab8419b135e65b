"""Colour conversions: NV12toRGB/BGR-8, I420toRGB/BGR-8 (YUV 4:2:0 -> interleaved RGB/BGR, NHWC).

OpenVINO's formula, in f32 and in this order (checked bit for bit against its CPU plugin):
    c = Y - 16, d = U - 128, e = V - 128
    R = 1.164 c + 1.596 e,  G = 1.164 c - 0.391 d - 0.813 e,  B = 1.164 c + 2.018 d
clamped to [0, 255]; u8 output rounds half to even (ONNX Round): on exact .5 values OpenVINO's CPU plugin does
so (measured over every Y with 256 U/V pairs: half away from zero would differ on 236 pixels, half to even on
none).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule


def _c(ctx, value, hint, dtype=np.int64):
    return ctx.const(np.array(value, dtype), hint)


def _dims(node, index: int) -> tuple[int, int]:
    """Static (rows, cols) of input `index` ([N, rows, cols, channels])."""
    shape = node.get_input_partial_shape(index)
    if shape.rank.is_dynamic or shape.rank.get_length() != 4 or shape[1].is_dynamic or shape[2].is_dynamic:
        raise Unsupported(f"input {index} needs static height and width")
    return shape[1].get_length(), shape[2].get_length()


def _slice(ctx, data, start, stop, axis):
    return ctx.emit("Slice", [data, _c(ctx, [start], "start"), _c(ctx, [stop], "stop"), _c(ctx, [axis], "axis")])


def _upsample(ctx, plane: str, height: int, width: int) -> str:
    """[N, H/2, W/2] -> [N, H, W], every chroma sample covering 2x2 pixels."""
    spread = ctx.emit("Unsqueeze", [plane, _c(ctx, [2, 4], "axes")])
    spread = ctx.emit("Expand", [spread, _c(ctx, [1, 1, 2, 1, 2], "twice")])
    return ctx.emit("Reshape", [spread, _c(ctx, [-1, height, width], "full")])


def _planes(ctx, node, chroma: str) -> tuple[str, str, str, int, int]:
    """(Y, U, V) as [N, H, W] f32 and (H, W) from the inputs of NV12 (chroma 'uv') or I420 ('u,v')."""
    code = ctx.elem(node, 0)
    if code not in (TensorProto.UINT8, TensorProto.FLOAT):
        raise Unsupported(f"element type {TensorProto.DataType.Name(code)} (u8 and f32)")
    squeeze = _c(ctx, [3], "channel")
    rows, width = _dims(node, 0)
    if node.get_input_size() == 1:  # one plane: Y rows, then the chroma rows
        height = rows * 2 // 3
        data = ctx.inp(node, 0)
        y = ctx.emit("Squeeze", [_slice(ctx, data, 0, height, 1), squeeze])
        rest = ctx.emit("Reshape", [_slice(ctx, data, height, rows, 1), _c(ctx, [0, -1], "flat")])
        if chroma == "uv":
            pairs = ctx.emit("Reshape", [rest, _c(ctx, [-1, height // 2, width // 2, 2], "pairs")])
            u, v = (ctx.emit("Squeeze", [_slice(ctx, pairs, k, k + 1, 3), squeeze]) for k in (0, 1))
        else:
            quarter = height * width // 4
            u, v = (ctx.emit("Reshape", [_slice(ctx, rest, k * quarter, (k + 1) * quarter, 1),
                                          _c(ctx, [-1, height // 2, width // 2], "plane")]) for k in (0, 1))
    else:
        height = rows
        y = ctx.emit("Squeeze", [ctx.inp(node, 0), squeeze])
        if chroma == "uv":
            pairs = ctx.inp(node, 1)
            u, v = (ctx.emit("Squeeze", [_slice(ctx, pairs, k, k + 1, 3), squeeze]) for k in (0, 1))
        else:
            u, v = (ctx.emit("Squeeze", [ctx.inp(node, k), squeeze]) for k in (1, 2))
    f32 = lambda name: name if code == TensorProto.FLOAT else ctx.emit("Cast", [name], to=TensorProto.FLOAT)  # noqa
    return f32(y), _upsample(ctx, f32(u), height, width), _upsample(ctx, f32(v), height, width), height, width


def _convert(ctx, node, chroma: str, order: str):
    y, u, v, _, _ = _planes(ctx, node, chroma)
    f = lambda value, hint: _c(ctx, value, hint, np.float32)  # noqa: E731
    c = ctx.emit("Sub", [y, f(16, "sixteen")])
    d = ctx.emit("Sub", [u, f(128, "half")])
    e = ctx.emit("Sub", [v, f(128, "half")])
    luma = ctx.emit("Mul", [f(1.164, "k_y"), c])
    red = ctx.emit("Add", [luma, ctx.emit("Mul", [f(1.596, "k_rv"), e])])
    green = ctx.emit("Sub", [ctx.emit("Sub", [luma, ctx.emit("Mul", [f(0.391, "k_gu"), d])]),
                             ctx.emit("Mul", [f(0.813, "k_gv"), e])])
    blue = ctx.emit("Add", [luma, ctx.emit("Mul", [f(2.018, "k_bu"), d])])
    channels = {"R": red, "G": green, "B": blue}
    axis = _c(ctx, [3], "channel")
    rgb = ctx.emit("Concat", [ctx.emit("Unsqueeze", [channels[k], axis]) for k in order], axis=3)
    clipped = ctx.emit("Clip", [rgb, f(0, "zero"), f(255, "max")])
    if ctx.out_elem(node) == TensorProto.FLOAT:
        ctx.emit("Identity", [clipped], [ctx.out(node)])
        return
    ctx.emit("Cast", [ctx.emit("Round", [clipped])], [ctx.out(node)], to=TensorProto.UINT8)


_NOTES = ("one plane ([N, 3H/2, W, 1]) or separate planes; chroma upsampled 2x2 (nearest); OpenVINO's "
          "coefficients, f32 arithmetic order, clamping and u8 rounding (module doc)")
_REFUSES = ("element types other than u8 and f32", "dynamic height or width")


@rule("NV12toRGB", versions=(8,), onnx="Slice/Reshape + Expand (chroma 2x2) + Mul/Add/Sub + Clip (+ Round, Cast)",
      notes=_NOTES, refuses=_REFUSES)
def nv12_to_rgb(ctx, node):
    _convert(ctx, node, "uv", "RGB")


@rule("NV12toBGR", versions=(8,), onnx="as NV12toRGB, channels reversed", notes=_NOTES, refuses=_REFUSES)
def nv12_to_bgr(ctx, node):
    _convert(ctx, node, "uv", "BGR")


@rule("I420toRGB", versions=(8,), onnx="as NV12toRGB (U and V planes apart)", notes=_NOTES, refuses=_REFUSES)
def i420_to_rgb(ctx, node):
    _convert(ctx, node, "u,v", "RGB")


@rule("I420toBGR", versions=(8,), onnx="as I420toRGB, channels reversed", notes=_NOTES, refuses=_REFUSES)
def i420_to_bgr(ctx, node):
    _convert(ctx, node, "u,v", "BGR")
