"""Convolutions: Convolution, GroupConvolution, ConvolutionBackpropData, GroupConvolutionBackpropData.

Pads: OpenVINO's shape inference writes the pads it chose for auto_pad same_upper/same_lower (and
valid: zeros) back into the node's pads_begin/pads_end; the rules read them from there, so ONNX gets
explicit pads that are OpenVINO's own. Where the input's spatial dims are dynamic (the pads depend on
them), same_* maps to ONNX's SAME_UPPER/SAME_LOWER, whose formula is OpenVINO's.
"""
from __future__ import annotations

import numpy as np

from .._registry import Unsupported, rule
from .._types import constant_array
from ._spatial import FLOATS, frame_taps, require_type, static_output_spatial, static_spatial
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


@rule("Convolution", versions=(1,), onnx="Conv (3-D: 2-D Convs per frame and tap, added)",
      notes=_FORWARD_NOTES + "; a 3-D convolution of a static number of frames runs as 2-D Convs, one per "
            "output frame and temporal kernel tap reading a real frame (taps that would read the time padding "
            "are left out), added tap by tap, the output frames concatenated in time (onnxruntime's 2-D "
            "convolutions are faster than its 3-D ones and no zeros are multiplied: docs/performance.md); a 3-D "
            "convolution reading another's output reads its frames; one over space only (a 1 x k x k kernel) on one "
            "clip runs its frames as one batch, one Conv, where that pays (large weights); a constant "
            "per-channel bias Add that is the "
            "convolution's only reader, then a residual Add of another 3-D convolution's output, then a Relu "
            "(each the only reader of the one before) go into the 2-D convolutions, where onnxruntime fuses "
            "them; the sum's order differs (float accumulation). INT8 (qdq): a quantized 3-D convolution runs "
            "as 2-D integer convolutions per output frame, its time taps stacked into channels (the same integer "
            "sums as the 3-D QLinearConv: docs/openvino_ir.md, INT8)",
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
    """A 3-D convolution as 2-D convolutions over frames (a static number of frames): each output frame is
    the sum over the kernel's temporal taps that read a real frame (at the clip's ends the others would read
    the time padding: left out, nothing multiplies zeros) of that frame convolved with the weights' slice of
    the tap, added tap by tap (onnxruntime fuses each Add into the next convolution's accumulation); each
    input frame is sliced once (onnxruntime reorders it once for all the convolutions reading it), the output
    frames concatenated in time; frames another 3-D convolution computed are read as they are. A convolution
    over space only (one tap, frame t for frame t) of one clip convolves all frames as one batch instead.
    Returns False (nothing emitted) where it does not apply."""
    data, weights, out = (node.get_input_partial_shape(0), node.get_input_partial_shape(1),
                          node.get_output_partial_shape(0))
    if len(data) != 5 or "pads" not in attributes or not weights.is_static or data[2].is_dynamic or \
            out[2].is_dynamic:
        return False
    if node.input_value(0).get_node().get_type_name() == "FakeQuantize":
        # a quantized convolution: 2-D integer ones per output frame where its QDQ form allows (quantization/conv3d.py)
        ctx.shared.clip_shapes[ctx.inp(node, 0)] = tuple(d.get_length() if d.is_static else None for d in data)
        return False
    frames, out_frames = data[2].get_length(), out[2].get_length()
    outputs, taps = weights[0].get_length(), weights[2].get_length()
    stride, dilation, begin = attributes["strides"][0], attributes["dilations"][0], attributes["pads"][0]
    reads = frame_taps(frames, out_frames, taps, stride, dilation, begin)
    if not all(reads):
        return False  # output frames reading padding only (zeros): the plain 3-D Conv
    bias, residual, relu = _taken_readers(ctx, node, outputs)
    conv2d = {"strides": attributes["strides"][1:], "dilations": attributes["dilations"][1:],
              "pads": attributes["pads"][1:3] + attributes["pads"][4:6]}
    clip, kernels = _Clip(ctx, ctx.inp(node, 0), frames), {}
    if data[0].is_static and data[0].get_length() == 1 and out_frames > 1 and \
            all(read == [(reads[0][0][0], t)] for t, read in enumerate(reads)) and \
            (not isinstance(ctx.shared.frames.get(ctx.inp(node, 0)), list) or _batch_pays(data, weights)):
        # over space only (one tap, frame t for frame t): the clip's frames as one batch, one Conv
        total = _conv_taps(ctx, node, kernels, [(reads[0][0][0], clip.batch())], conv2d, bias,
                           None if residual is None else _Clip(ctx, residual, out_frames).batch(), relu)
        ctx.emit("Transpose", [ctx.emit("Unsqueeze", [total, ctx.const(np.array([0], np.int64), "axis")])],
                 [ctx.out(node)], perm=[0, 2, 1, 3, 4])
        ctx.shared.frames[ctx.out(node)] = total
        return True
    shortcut = None if residual is None else _Clip(ctx, residual, out_frames)
    frames_out = [_conv_taps(ctx, node, kernels, [(tap, clip.frame(frame)) for tap, frame in read], conv2d, bias,
                             None if shortcut is None else shortcut.frame(t), relu) for t, read in enumerate(reads)]
    pieces = [ctx.emit("Unsqueeze", [total, ctx.const(np.array([1], np.int64), "axis")]) for total in frames_out]
    joined = pieces[0] if len(pieces) == 1 else ctx.emit("Concat", pieces, axis=1)
    ctx.emit("Transpose", [joined], [ctx.out(node)], perm=[0, 2, 1, 3, 4])
    ctx.shared.frames[ctx.out(node)] = frames_out  # a 3-D convolution reading this reads them (the same values)
    return True


def _batch_pays(data, weights) -> bool:
    """Whether batching frames given one by one pays: onnxruntime then moves the clip about three times
    (out of its blocked layout, concatenated, back), where a Conv per frame reads the weights once more per
    frame (large weights on small frames: deep layers)."""
    if not data.is_static:
        return False
    frames, clip = data[2].get_length(), int(np.prod([d.get_length() for d in data]))
    return (frames - 1) * int(np.prod([d.get_length() for d in weights])) > 3 * clip


def _conv_taps(ctx, node, kernels: dict, reads, conv2d, bias, residual, relu) -> str:
    """The sum over (tap, 4-D input) of 2-D Convs with the weights' slice of the tap, added one by one
    (onnxruntime: each Add the next convolution's sum input), bias and residual added to the first
    (onnxruntime: its bias and sum input), then the Relu (fused into the last)."""
    total = None
    for tap, value in reads:
        if tap not in kernels:  # the weights' slice of the tap
            kernels[tap] = ctx.emit("Gather", [ctx.inp(node, 1), ctx.const(np.array(tap, np.int64), "tap")], axis=2)
        partial = ctx.emit("Conv", [value, kernels[tap]], **conv2d)
        if total is None and bias is not None:
            partial = ctx.emit("Add", [partial, bias])
        if total is None and residual is not None:
            partial = ctx.emit("Add", [partial, residual])
        total = partial if total is None else ctx.emit("Add", [total, partial])
    return ctx.emit("Relu", [total]) if relu else total


class _Clip:
    """The frames of a 5-D value [N, C, T, H, W] as 4-D values, each made once: those a 3-D convolution
    converted before gave (its frames, or for a clip of one, all frames as one batch), else sliced."""

    def __init__(self, ctx, name: str, frames: int):
        self.ctx, self.name, self.frames = ctx, name, frames
        given = ctx.shared.frames.get(name)
        self.given = given if isinstance(given, str) else None  # [T, C, H, W]: the frames as the batch
        self.each = dict(enumerate(given)) if isinstance(given, list) else {}
        self.moved = None

    def frame(self, index: int) -> str:
        ctx = self.ctx
        if index not in self.each:
            axis = ctx.const(np.array([0 if self.given else 1], np.int64), "axis")
            if self.given and self.frames == 1:
                self.each[index] = self.given
            elif self.given:
                self.each[index] = ctx.emit("Slice", [self.given, ctx.const(np.array([index], np.int64), "start"),
                                                      ctx.const(np.array([index + 1], np.int64), "end"), axis])
            else:
                self.moved = self.moved or ctx.emit("Transpose", [self.name], perm=[0, 2, 1, 3, 4])  # N, T, C, H, W
                one = self.moved if self.frames == 1 else ctx.emit(
                    "Slice", [self.moved, ctx.const(np.array([index], np.int64), "start"),
                              ctx.const(np.array([index + 1], np.int64), "end"), axis])
                self.each[index] = ctx.emit("Squeeze", [one, axis])
        return self.each[index]

    def batch(self) -> str:
        """A clip of one: its frames as the batch, [T, C, H, W]."""
        ctx = self.ctx
        if self.given:
            return self.given
        if self.each and len(self.each) == self.frames:
            return ctx.emit("Concat", [self.each[f] for f in range(self.frames)], axis=0)
        moved = ctx.emit("Transpose", [self.name], perm=[0, 2, 1, 3, 4])
        return ctx.emit("Squeeze", [moved, ctx.const(np.array([0], np.int64), "axis")])


def _taken_readers(ctx, node, outputs: int) -> tuple:
    """The per-channel bias Add a convolution's only reader is (as openvino.convert_model writes conv + batch
    norm), then a residual Add of a value whose frames a 3-D convolution converted before gave (ResNet blocks),
    then a Relu, each the only reader of the one before, taken into the 2-D convolutions, where onnxruntime
    fuses them into its convolution kernels: (bias as [O, 1, 1] or None, the residual (a 5-D value whose
    frames are known) or None, whether a Relu follows). A taken node's output is the convolution's (the walk
    passes it through)."""
    add = _only_reader(node, "Add")
    if add is None or add.input_value(0).get_node().get_name() != node.get_name():
        return None, None, False
    value = _constant(add.input_value(1))
    if value is None or value.shape != (1, outputs, 1, 1, 1) or value.dtype != np.float32 or \
            str(add.get_attributes().get("auto_broadcast", "numpy")).lower() != "numpy":
        return None, None, False
    _take(ctx, node, add)
    bias = ctx.const(value.reshape(outputs, 1, 1), "bias")
    last, residual = add, None
    shortcut = _only_reader(add, "Add")
    if shortcut is not None:
        other = 1 if shortcut.input_value(0).get_node().get_name() == add.get_name() else 0
        value = ctx.inp(shortcut, other)
        if value in ctx.shared.frames and \
                shortcut.get_input_partial_shape(other) == node.get_output_partial_shape(0):
            _take(ctx, node, shortcut)  # frames a 3-D convolution converted before this one gave
            last, residual = shortcut, value
    relu = _only_reader(last, "Relu")
    if relu is not None:
        _take(ctx, node, relu)
    return bias, residual, relu is not None


def _take(ctx, node, reader) -> None:
    """`reader`'s output is `node`'s (computed by its rule)."""
    ctx.bind(reader.output(0), ctx.out(node))
    ctx.shared.passthrough.add(reader.get_name())


def _constant(output) -> np.ndarray | None:
    """The value of a Constant, or of a Convert of one (f16 weights as save_model compresses them; exact in
    numpy), else None (a value computed later in the walk cannot be read before it)."""
    producer = output.get_node()
    if producer.get_type_name() == "Convert" and producer.input_value(0).get_node().get_type_name() == "Constant":
        source = constant_array(producer.input_value(0).get_node())
        return source.astype(np.float32) if source.dtype in (np.float16, np.float32) and \
            producer.get_output_element_type(0).get_type_name() == "f32" else None
    return constant_array(producer) if producer.get_type_name() == "Constant" else None


def _only_reader(node, kind: str):
    """The node reading `node`'s output when it is the only reader, of type `kind` and not a Result's input."""
    readers = list(node.output(0).get_target_inputs())
    if len(readers) != 1 or readers[0].get_node().get_type_name() != kind:
        return None
    reader = readers[0].get_node()
    if any(t.get_node().get_type_name() == "Result" for t in reader.output(0).get_target_inputs()):
        return None  # a model output keeps its own name
    return reader


@rule("GroupConvolution", versions=(1,), onnx="Conv (group), weights reshaped",
      notes="weights [G, O/G, I/G, k...] reshaped to ONNX's [O, I/G, k...]; " + _FORWARD_NOTES + "; in the QDQ "
            "form (int8='qdq'), an integer convolution of fewer than 16 input channels per group merges "
            "neighbouring groups (block-diagonal int8 weights: the same integer sums; FakeQuantize's "
            "_wider_groups)",
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
