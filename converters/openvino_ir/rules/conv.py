"""Convolutions: Convolution, GroupConvolution, ConvolutionBackpropData, GroupConvolutionBackpropData.

Pads: OpenVINO's shape inference writes the pads it chose for auto_pad same_upper/same_lower (and
valid: zeros) back into the node's pads_begin/pads_end; the rules read them from there, so ONNX gets
explicit pads that are OpenVINO's own. Where the input's spatial dims are dynamic (the pads depend on
them), same_* maps to ONNX's SAME_UPPER/SAME_LOWER, whose formula is OpenVINO's.
"""
from __future__ import annotations

import numpy as np

from .._registry import Unsupported, rule
from ._spatial import static_output_spatial, static_spatial


def _forward_pads(node, attributes) -> dict:
    """ONNX Conv attributes for OpenVINO's strides, dilations and padding."""
    auto_pad = str(attributes.get("auto_pad", "explicit")).lower()
    onnx = {"strides": list(attributes["strides"]), "dilations": list(attributes["dilations"])}
    if auto_pad in ("same_upper", "same_lower") and static_spatial(node) is None:
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
    # [-1] + dims 2.. of the weights, computed (they may be dynamic)
    tail = ctx.emit("Slice", [ctx.emit("Shape", [ctx.inp(node, index)]), ctx.const(np.array([2], np.int64), "two"),
                              ctx.const(np.array([np.iinfo(np.int64).max], np.int64), "end")])
    target = ctx.emit("Concat", [ctx.const(np.array([-1], np.int64), "minus_one"), tail], axis=0)
    return ctx.emit("Reshape", [ctx.inp(node, index), target]), groups


_FORWARD_NOTES = ("pads from OpenVINO's shape inference (auto_pad resolved); dynamic spatial dims with "
                  "same_upper/same_lower use ONNX's identical SAME_* formula")


@rule("Convolution", versions=(1,), onnx="Conv", notes=_FORWARD_NOTES)
def convolution(ctx, node):
    ctx.emit("Conv", [ctx.inp(node, 0), ctx.inp(node, 1)], [ctx.out(node)],
             **_forward_pads(node, node.get_attributes()))


@rule("GroupConvolution", versions=(1,), onnx="Conv (group), weights reshaped",
      notes="weights [G, O/G, I/G, k...] reshaped to ONNX's [O, I/G, k...]; " + _FORWARD_NOTES,
      refuses=("weights whose group dim is dynamic: ONNX's group is an attribute",))
def group_convolution(ctx, node):
    weights, groups = _group_weights(ctx, node, 1)
    ctx.emit("Conv", [ctx.inp(node, 0), weights], [ctx.out(node)], group=groups,
             **_forward_pads(node, node.get_attributes()))


def _backprop(ctx, node, weights: str, groups: int):
    attributes = node.get_attributes()
    strides, dilations = list(attributes["strides"]), list(attributes["dilations"])
    rank = len(strides)
    output_padding = list(attributes.get("output_padding") or [0] * rank)
    begin, end = list(attributes["pads_begin"]), list(attributes["pads_end"])
    auto_pad = str(attributes.get("auto_pad", "explicit")).lower()
    if auto_pad == "valid":
        begin, end = [0] * rank, [0] * rank
    explicit_size = node.get_input_size() < 3 and auto_pad in ("explicit", "valid")
    if not explicit_size:
        # output_shape given, or same_*: take OpenVINO's output size and its begin pads, and let the
        # end pad (or, where it would be negative, output_padding) make up the difference.
        sizes, outputs = static_spatial(node), static_output_spatial(node)
        kernel = [d.get_length() if d.is_static else None for d in list(node.get_input_partial_shape(1))[2:]]
        if sizes is None or outputs is None or None in kernel:
            raise Unsupported("output_shape or auto_pad same_* needs static spatial dims of data, weights "
                              "and output")
        end, output_padding = [], list(output_padding)
        for i, (size, out, k, s, d, pb) in enumerate(zip(sizes, outputs, kernel, strides, dilations, begin)):
            pe = s * (size - 1) + (k - 1) * d + 1 + output_padding[i] - pb - out
            if pe < 0:
                output_padding[i] -= pe
                pe = 0
            end.append(pe)
        if any(p >= max(s, d) for p, s, d in zip(output_padding, strides, dilations)):
            raise Unsupported(f"output size {outputs} needs output_padding {output_padding}, which ONNX "
                              "limits to below max(stride, dilation)")
    ctx.emit("ConvTranspose", [ctx.inp(node, 0), weights], [ctx.out(node)], strides=strides,
             dilations=dilations, pads=begin + end, output_padding=output_padding, group=groups)


_BACKPROP_REFUSES = ("output_shape input or auto_pad same_* with dynamic spatial dims: the pads depend "
                     "on them", "an output size that needs output_padding >= max(stride, dilation)")


@rule("ConvolutionBackpropData", versions=(1,), onnx="ConvTranspose",
      notes="weights [C_in, C_out, k...] are ConvTranspose's layout; with output_shape or same_*, "
            "OpenVINO's inferred output size and begin pads become explicit ONNX pads + output_padding",
      refuses=_BACKPROP_REFUSES)
def convolution_backprop_data(ctx, node):
    _backprop(ctx, node, ctx.inp(node, 1), 1)


@rule("GroupConvolutionBackpropData", versions=(1,), onnx="ConvTranspose (group), weights reshaped",
      notes="weights [G, C_in/G, C_out/G, k...] reshaped to ONNX's [C_in, C_out/G, k...]; padding as "
            "ConvolutionBackpropData",
      refuses=_BACKPROP_REFUSES + ("weights whose group dim is dynamic",))
def group_convolution_backprop_data(ctx, node):
    weights, groups = _group_weights(ctx, node, 1)
    _backprop(ctx, node, weights, groups)


# DeformableConvolution-1/8 has no rule: ONNX DeformConv exists from opset 19 only (the import targets
# opset 18), so it stays in the "unsupported op" list (docs/openvino_ir.md says why).
