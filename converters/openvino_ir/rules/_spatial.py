"""Geometry shared by the convolution and pooling rules: OpenVINO's auto_pad and rounding as ONNX pads.

OpenVINO decides the output size of a window op from auto_pad (explicit / valid / same_upper /
same_lower) and, for pooling, rounding_type (floor / ceil / ceil_torch). Where the input's spatial dims
are static, OpenVINO's own shape inference gives the output size, and the rules emit explicit ONNX pads
that produce exactly that many windows with floor rounding (the end pad grows for ceil, shrinks for a
ceil_torch window that would start in the padding). Only then can rounding never differ.
"""
from __future__ import annotations

from dataclasses import dataclass

from onnx import TensorProto

from .._registry import Unsupported

FLOATS = (TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE)


def require_type(ctx, node, allowed, what: str) -> int:
    """The element type of input 0 when ONNX's `what` takes it, else Unsupported."""
    code = ctx.elem(node, 0)
    if code not in allowed:
        name = TensorProto.DataType.Name(code).lower()
        raise Unsupported(f"element type {name}: ONNX {what} takes only "
                          + ", ".join(TensorProto.DataType.Name(c).lower() for c in allowed))
    return code


@dataclass(frozen=True)
class Window:
    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    auto_pad: str            # explicit, valid, same_upper, same_lower (lower case)
    pads_begin: list[int]    # as written (ignored by OpenVINO unless explicit)
    pads_end: list[int]


def window(attributes, kernel: list[int]) -> Window:
    rank = len(kernel)
    return Window(list(kernel), list(attributes.get("strides", [1] * rank)),
                  list(attributes.get("dilations", [1] * rank)) or [1] * rank,
                  str(attributes.get("auto_pad", "explicit")).lower() or "explicit",
                  list(attributes.get("pads_begin", [0] * rank)), list(attributes.get("pads_end", [0] * rank)))


def static_spatial(node, index: int = 0) -> list[int] | None:
    """The spatial dims (2..) of input `index` when all are static, else None."""
    shape = node.get_input_partial_shape(index)
    if shape.rank.is_dynamic:
        return None
    dims = list(shape)[2:]
    return [d.get_length() for d in dims] if all(d.is_static for d in dims) else None


def static_output_spatial(node, index: int = 0) -> list[int] | None:
    shape = node.get_output_partial_shape(index)
    if shape.rank.is_dynamic:
        return None
    dims = list(shape)[2:]
    return [d.get_length() for d in dims] if all(d.is_static for d in dims) else None


def same_pads(sizes, outputs, w: Window) -> tuple[list[int], list[int]]:
    """OpenVINO's same_upper/same_lower pads: the odd pixel goes to the end (upper) or start (lower)."""
    begin, end = [], []
    for size, out, k, s, d in zip(sizes, outputs, w.kernel, w.strides, w.dilations):
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if w.auto_pad == "same_upper" else large)
        end.append(large if w.auto_pad == "same_upper" else small)
    return begin, end


def pads_begin(w: Window, sizes=None, outputs=None) -> list[int]:
    if w.auto_pad == "explicit":
        return list(w.pads_begin)
    if w.auto_pad == "valid":
        return [0] * len(w.kernel)
    return same_pads(sizes, outputs, w)[0]


def floor_end_pads(sizes, outputs, begin, w: Window) -> list[int]:
    """End pads that make ONNX's floor rounding give exactly `outputs` windows (non-negative)."""
    ends = []
    for size, out, pb, k, s, d in zip(sizes, outputs, begin, w.kernel, w.strides, w.dilations):
        span = (k - 1) * d + 1
        end = max((out - 1) * s + span - size - pb, 0)
        if (size + pb + end - span) // s + 1 != out:
            raise Unsupported(f"cannot reproduce {out} windows over {size} pixels (kernel {k}, stride {s}, "
                              f"pads_begin {pb}) with non-negative ONNX pads")
        ends.append(end)
    return ends


def frame_taps(frames: int, out_frames: int, taps: int, stride: int, dilation: int, begin: int) -> list[list]:
    """Per output frame of a convolution over time (the 3-D convolutions written as 2-D ones), the (tap,
    input frame) pairs that read a real frame; the other taps read the time padding."""
    return [[(tap, t * stride + tap * dilation - begin) for tap in range(taps)
             if 0 <= t * stride + tap * dilation - begin < frames] for t in range(out_frames)]
