"""Convolutions: Convolution, GroupConvolution, ConvolutionBackpropData, GroupConvolutionBackpropData.

Pads: OpenVINO's shape inference writes the pads it chose for auto_pad same_upper/same_lower (and
valid: zeros) back into the node's pads_begin/pads_end; the rules read them from there, so ONNX gets
explicit pads that are OpenVINO's own. Where the input's spatial dims are dynamic (the pads depend on
them), same_* maps to ONNX's SAME_UPPER/SAME_LOWER, whose formula is OpenVINO's.
"""
from __future__ import annotations

import numpy as np

from .._registry import Unsupported, rule
from ._spatial import FLOATS, require_type, static_output_spatial, static_spatial
from .elementwise import negated_swish_input


def _forward_pads(node, attributes) -> dict:
    """ONNX Conv attributes for OpenVINO's strides, dilations and padding."""
    auto_pad = str(attributes.get("auto_pad", "explicit")).lower()
    onnx = {"strides": list(attributes["strides"]), "dilations": list(attributes["dilations"])}
    if auto_pad in ("same_upper", "same_lower") and static_spatial(node) is None:
        if any(d != 1 for d in onnx["dilations"]):
            raise Unsupported(f"auto_pad {auto_pad} with dilations and dynamic spatial dims (onnxruntime "
                              "has no SAME_* padding with dilations)")
        onnx["auto_pad"] = auto_pad.upper()
    elif auto_pad == "valid":
        onnx["pads"] = [0] * (2 * len(onnx["strides"]))
    else:
        onnx["pads"] = list(attributes["pads_begin"]) + list(attributes["pads_end"])
    return onnx


def _group_weights(ctx, node, index: int) -> tuple[str, int]:
    """OpenVINO group weights [G, O/G, I/G, k...] (or [G, C_in/G, C_out/G, k...] for backprop) as
    ONNX's [G*O/G, I/G, k...]; returns the name and G."""
    shape = node.get_input_partial_shape(index)
    if shape.rank.is_dynamic or shape[0].is_dynamic:
        raise Unsupported("the group count (dim 0 of the weights) must be static")
    groups = shape[0].get_length()
    value = ctx.const_value(node, index)
    if value is not None:
        return ctx.const(value.reshape((-1,) + value.shape[2:]), "weights"), groups
    if shape.is_static:  # a constant target (lets the QDQ form move it into int8 weights)
        target = ctx.const(np.array([-1] + [d.get_length() for d in shape][2:], np.int64), "shape")
        return ctx.emit("Reshape", [ctx.inp(node, index), target]), groups
    # [-1] + dims 2.. of the weights, computed (they may be dynamic)
    tail = ctx.emit("Slice", [ctx.emit("Shape", [ctx.inp(node, index)]), ctx.const(np.array([2], np.int64), "two"),
                              ctx.const(np.array([np.iinfo(np.int64).max], np.int64), "end")])
    target = ctx.emit("Concat", [ctx.const(np.array([-1], np.int64), "minus_one"), tail], axis=0)
    return ctx.emit("Reshape", [ctx.inp(node, index), target]), groups


_FORWARD_NOTES = ("pads from OpenVINO's shape inference (auto_pad resolved); dynamic spatial dims with "
                  "same_upper/same_lower use ONNX's identical SAME_* formula; after a Swish it alone reads, with "
                  "constant weights (not the 3-D form): -swish and negated weights (the same products; see Swish)")
_FORWARD_REFUSES = ("integer data: ONNX Conv is float only",
                    "auto_pad same_* with dilations and dynamic spatial dims: onnxruntime has no SAME_* "
                    "padding with dilations",)


@rule("Convolution", versions=(1,), onnx="Conv (3-D with static shapes: 2-D Convs over frames, summed)",
      notes=_FORWARD_NOTES + "; a 3-D convolution of static shapes runs as one 2-D Conv per temporal kernel tap "
            "over all frames at once, summed (onnxruntime's 2-D convolutions are about 1.6x faster than its "
            "3-D ones: docs/performance.md); the sum's order differs (float accumulation)",
      refuses=_FORWARD_REFUSES)
def convolution(ctx, node):
    require_type(ctx, node, FLOATS, "Conv")
    attributes = _forward_pads(node, node.get_attributes())
    if _frames_as_2d(ctx, node, attributes):
        return
    ctx.emit("Conv", _data_and_weights(ctx, node, ctx.inp(node, 1)), [ctx.out(node)], **attributes)


def _data_and_weights(ctx, node, weights: str) -> list[str]:
    """The Conv's data and weights: after a Swish read by this convolution only, -swish and the weights negated
    (the same products; the Swish saves an op, onnxruntime folds the Neg)."""
    negated = negated_swish_input(ctx, node)
    return [ctx.inp(node, 0), weights] if negated is None else [negated, ctx.emit("Neg", [weights])]


def _frames_as_2d(ctx, node, attributes) -> bool:
    """A 3-D convolution of static shapes as 2-D convolutions: for each temporal tap t of the kernel, the frames
    it reads (strided, dilated, after padding the time axis) folded into the batch, convolved with the
    weights' slice t; the taps summed, those reading padding only left out (onnxruntime's 3-D Conv multiplies
    them). Returns False (nothing emitted) where it does not apply."""
    data, weights, out = (node.get_input_partial_shape(0), node.get_input_partial_shape(1),
                          node.get_output_partial_shape(0))
    if not (data.is_static and weights.is_static and out.is_static and len(data) == 5) or "pads" not in attributes:
        return False
    if node.input_value(0).get_node().get_type_name() == "FakeQuantize":
        return False  # a quantized convolution: kept whole for onnxruntime's QDQ fusion
    n, c, frames = (d.get_length() for d in list(data)[:3])
    outputs, taps = weights[0].get_length(), weights[2].get_length()
    out_frames, height, width = (d.get_length() for d in list(out)[2:])
    stride, dilation = attributes["strides"][0], attributes["dilations"][0]
    pads = attributes["pads"]
    x = ctx.inp(node, 0)
    if pads[0] or pads[3]:
        x = ctx.emit("Pad", [x, ctx.const(np.array([0, 0, pads[0], 0, 0, 0, 0, pads[3], 0, 0], np.int64),
                                          "pads")])
    x = ctx.emit("Transpose", [x], perm=[0, 2, 1, 3, 4])  # N, T, C, H, W
    flat = ctx.const(np.array([n * out_frames, c] + [d.get_length() for d in list(data)[3:]], np.int64),
                     "frames_in_batch")
    conv2d = {"strides": attributes["strides"][1:], "dilations": attributes["dilations"][1:],
              "pads": pads[1:3] + pads[4:6]}
    one = ctx.const(np.array([1], np.int64), "axis")
    partial = []
    for tap in range(taps):
        start = tap * dilation
        if all(not 0 <= start + t * stride - pads[0] < frames for t in range(out_frames)):
            continue  # a tap that reads padding only adds zeros (deep layers of video models: 1 frame left)
        frames_read = ctx.emit("Slice", [x, ctx.const(np.array([start], np.int64), "start"),
                                         ctx.const(np.array([start + (out_frames - 1) * stride + 1], np.int64), "end"),
                                         one, ctx.const(np.array([stride], np.int64), "step")])
        kernel = ctx.emit("Gather", [ctx.inp(node, 1), ctx.const(np.array(tap, np.int64), "tap")], axis=2)
        partial.append(ctx.emit("Conv", [ctx.emit("Reshape", [frames_read, flat]), kernel], **conv2d))
    total = partial[0] if len(partial) == 1 else ctx.emit("Sum", partial)
    shaped = ctx.emit("Reshape", [total, ctx.const(np.array([n, out_frames, outputs, height, width], np.int64),
                                                   "frames_out")])
    ctx.emit("Transpose", [shaped], [ctx.out(node)], perm=[0, 2, 1, 3, 4])
    return True


@rule("GroupConvolution", versions=(1,), onnx="Conv (group), weights reshaped",
      notes="weights [G, O/G, I/G, k...] reshaped to ONNX's [O, I/G, k...]; " + _FORWARD_NOTES,
      refuses=_FORWARD_REFUSES + ("weights whose group dim is dynamic: ONNX's group is an attribute",))
def group_convolution(ctx, node):
    require_type(ctx, node, FLOATS, "Conv")
    weights, groups = _group_weights(ctx, node, 1)
    ctx.emit("Conv", _data_and_weights(ctx, node, weights), [ctx.out(node)], group=groups,
             **_forward_pads(node, node.get_attributes()))


def _backprop(ctx, node, weights: str, groups: int, kernel_from: int):
    """ConvTranspose for (Group)ConvolutionBackpropData; the kernel dims of the weights start at
    `kernel_from`."""
    require_type(ctx, node, FLOATS, "ConvTranspose")
    attributes = node.get_attributes()
    strides, dilations = list(attributes["strides"]), list(attributes["dilations"])
    rank = len(strides)
    output_padding = list(attributes.get("output_padding") or [0] * rank)
    begin, end = list(attributes["pads_begin"]), list(attributes["pads_end"])
    auto_pad = str(attributes.get("auto_pad", "explicit")).lower()
    if auto_pad == "valid":
        begin, end = [0] * rank, [0] * rank
    grow = None  # zeros appended at the end when OpenVINO's output is larger than ONNX's can be
    if node.get_input_size() > 2 or auto_pad in ("same_upper", "same_lower"):
        # output_shape given, or same_*: take OpenVINO's output size and begin pads; the end pad makes up
        # the difference. An output larger than the transposed convolution reaches (with no end pad)
        # holds zeros there: emitted as a Pad.
        sizes, outputs = static_spatial(node), static_output_spatial(node)
        weight_dims = list(node.get_input_partial_shape(1))[kernel_from:]
        kernel = [d.get_length() if d.is_static else None for d in weight_dims]
        if sizes is None or outputs is None or None in kernel:
            raise Unsupported("output_shape or auto_pad same_* needs static spatial dims of data, weights "
                              "and output")
        end, grow, padding = [], [], []
        for size, out, k, s, d, pb, op in zip(sizes, outputs, kernel, strides, dilations, begin, output_padding):
            reach = s * (size - 1) + (k - 1) * d + 1 - pb  # ONNX's size with no end pad, no output_padding
            fits = reach + op >= out
            end.append(reach + op - out if fits else 0)
            grow.append(0 if fits else out - reach)
            padding.append(op if fits else 0)
        output_padding = padding
    result = ctx.emit("ConvTranspose", [ctx.inp(node, 0), weights], None if grow and any(grow) else [ctx.out(node)],
                      strides=strides, dilations=dilations, pads=begin + end, output_padding=output_padding,
                      group=groups)
    if grow and any(grow):
        pads = ctx.const(np.array([0] * (rank + 2) + [0, 0] + grow, np.int64), "grow")
        ctx.emit("Pad", [result, pads], [ctx.out(node)])


_BACKPROP_REFUSES = ("integer data: ONNX ConvTranspose is float only",
                     "output_shape input or auto_pad same_* with dynamic spatial dims: the pads depend "
                     "on them",)


@rule("ConvolutionBackpropData", versions=(1,), onnx="ConvTranspose",
      notes="weights [C_in, C_out, k...] are ConvTranspose's layout; with output_shape or same_*, "
            "OpenVINO's inferred output size and begin pads become explicit ONNX end pads, or a zero Pad "
            "where the output reaches past the transposed convolution",
      refuses=_BACKPROP_REFUSES)
def convolution_backprop_data(ctx, node):
    _backprop(ctx, node, ctx.inp(node, 1), 1, kernel_from=2)


@rule("GroupConvolutionBackpropData", versions=(1,), onnx="ConvTranspose (group), weights reshaped",
      notes="weights [G, C_in/G, C_out/G, k...] reshaped to ONNX's [C_in, C_out/G, k...]; padding as "
            "ConvolutionBackpropData",
      refuses=_BACKPROP_REFUSES + ("weights whose group dim is dynamic",))
def group_convolution_backprop_data(ctx, node):
    weights, groups = _group_weights(ctx, node, 1)
    _backprop(ctx, node, weights, groups, kernel_from=3)


# DeformableConvolution-1/8 has no rule: ONNX DeformConv exists from opset 19 only (the import targets
# opset 18), so it stays in the "unsupported op" list (docs/openvino_ir.md says why).
