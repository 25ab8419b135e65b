"""A strided integer stem convolution of few channels run at stride 1 after SpaceToDepth (onnxruntime's direct
integer kernel)."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .graph import GraphIndex, _quantized_after, _static_shape


#: onnxruntime's direct integer convolution (MLAS ConvSym) takes input channels in groups of this many; with
#: other counts QLinearConv falls back to im2col + GEMM
CHANNEL_GROUP = 4
#: a strided integer convolution of at most this many input channels (an image model's stem) is rewritten by
#: _space_to_depth when stride² · channels fills whole groups (measured, onnxruntime 1.32, 7x7/2 from 224x224
#: to 64 channels: 0.64x the time on 1 channel, 0.77x on 3; 0.79x for 3x3/2 on 3 channels; 1.10x on 4 channels
#: and 1.20x for 7x7/3 on 3 channels, 27 after the rewrite, which are left as they are)
SPACE_TO_DEPTH_CHANNELS = 3


def _space_to_depth(index: GraphIndex, keep: set, shapes: dict) -> None:
    """DequantizeLinear(x, s_x, z) -> Conv(DequantizeLinear(int8 w, s_w, 0), bias, stride b) -> QuantizeLinear,
    x a 2-D image of few channels (SPACE_TO_DEPTH_CHANNELS) and static shape (a graph input, possibly after a
    mean and scale: _static_shape), becomes SpaceToDepth(b) -> DequantizeLinear -> Conv(stride 1, kernel
    ceil((k + shift) / b), the weights rearranged alike, zeros where the kernel grew, padded in whole blocks):
    the same products and integer sums in another order (the zero weights added multiply dequantized
    integers, finite, so add exact zeros). Where the image or the padding after is not whole blocks, a
    Pad(x, z) first (z dequantizes to 0, as the convolution's own padding; a negative end crops rows no output
    reads) and no shift. onnxruntime's QLinearConv runs b*b*C input channels at stride 1 on its direct kernel,
    C of them at stride b through im2col (CHANNEL_GROUP, SPACE_TO_DEPTH_CHANNELS)."""
    from onnx import helper

    nodes, initializers = index.nodes, index.initializers
    convs = [n for n in nodes if n.op_type == "Conv"]
    if not convs:
        return
    values, producer, readers = index.lookups()
    for conv in convs:
        found = _space_to_depth_parameters(conv, values, producer, readers, keep, shapes)
        if found is None:
            continue
        dq, weights_dq, block, kernel, shift, begin, end, padded = found
        index.edited(rewired=(weights_dq, dq))  # (this loop keeps reading its snapshot)
        q = values[weights_dq.input[0]]
        out_channels, channels = q.shape[:2]
        grown = np.zeros((out_channels, channels) + tuple(block * k for k in kernel), np.int8)
        grown[:, :, shift[0]:shift[0] + q.shape[2], shift[1]:shift[1] + q.shape[3]] = q
        rearranged = grown.reshape(out_channels, channels, kernel[0], block, kernel[1], block) \
            .transpose(0, 3, 5, 1, 2, 4).reshape(out_channels, block * block * channels, *kernel)
        stem = conv.name or conv.output[0]
        weights = f"{stem}/space_to_depth_weights"
        initializers.append((weights, TensorProto.INT8, rearranged))
        weights_dq.input[0] = weights
        moved, data = f"{stem}/space_to_depth", dq.input[0]
        added = [helper.make_node("SpaceToDepth", [data], [moved], name=moved, blocksize=block)]
        if padded:
            pads = (f"{stem}/space_to_depth_pads", np.array([0, 0, *begin, 0, 0, *end], np.int64))
            initializers.append((pads[0], TensorProto.INT64, pads[1]))
            added.insert(0, helper.make_node("Pad", [data, pads[0], dq.input[2]], [f"{moved}_padded"],
                                             name=f"{moved}_padded"))
            added[1].input[0] = f"{moved}_padded"
        index = nodes.index(dq)
        nodes[index:index] = added
        dq.input[0] = moved
        attributes = [a for a in conv.attribute if a.name not in ("strides", "pads", "kernel_shape", "auto_pad")]
        if not padded:
            attributes.append(helper.make_attribute("pads", [*begin, *end]))
        del conv.attribute[:]
        conv.attribute.extend(attributes + [helper.make_attribute("kernel_shape", list(kernel))])


def _space_to_depth_parameters(conv, values, producer, readers, keep, shapes):
    """(DequantizeLinear of the data, of the weights, block, new kernel, shift of the weights in it, pads
    before, pads after, whether they are a Pad's (else the Conv's, in blocks)) of a Conv _space_to_depth
    rewrites, else None."""
    from onnx import helper

    attributes = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    dq, weights_dq = producer.get(conv.input[0]), producer.get(conv.input[1])
    if dq is None or dq.op_type != "DequantizeLinear" or len(dq.input) != 3 or weights_dq is None \
            or weights_dq.op_type != "DequantizeLinear" or len(readers.get(dq.output[0], [])) != 1 \
            or len(readers.get(weights_dq.output[0], [])) != 1 or dq.output[0] in keep \
            or weights_dq.output[0] in keep:
        return None
    data, scale, zero = (values.get(name) for name in dq.input)
    q = values.get(weights_dq.input[0])
    weight_zero = values.get(weights_dq.input[2]) if len(weights_dq.input) > 2 else np.zeros(1, np.int8)
    source = producer.get(dq.input[0])
    shape = _static_shape(source.input[0], producer, values, shapes) \
        if source is not None and source.op_type == "QuantizeLinear" else None
    strides = list(attributes.get("strides", [1, 1]))
    if data is not None or scale is None or scale.size != 1 or zero is None or zero.dtype != np.uint8 \
            or q is None or q.dtype != np.int8 or q.ndim != 4 or weight_zero is None or np.any(weight_zero != 0) \
            or shape is None or len(shape) != 4 or not 1 <= shape[1] <= SPACE_TO_DEPTH_CHANNELS \
            or q.shape[1] != shape[1] or attributes.get("group", 1) != 1 \
            or attributes.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") \
            or any(v != 1 for v in attributes.get("dilations", [1, 1])) \
            or len(strides) != 2 or strides[0] != strides[1] or strides[0] < 2 \
            or strides[0] * strides[0] * shape[1] % CHANNEL_GROUP \
            or not _quantized_after(conv, readers, values) or (len(conv.input) > 2 and conv.input[2] not in values):
        return None
    block = strides[0]
    pads = list(attributes.get("pads", [0, 0, 0, 0]))
    sizes, ks = shape[2:], q.shape[2:]
    outs = [(sizes[a] + pads[a] + pads[a + 2] - ks[a]) // block + 1 for a in (0, 1)]
    if min(outs) < 1:
        return None
    # the convolution pads the blocks itself: the kernel shifted by `shift` zeros so the padding before is
    # whole blocks, the image whole blocks, no padding after missing
    shift = [-pads[a] % block for a in (0, 1)]
    kernel = [-(-(ks[a] + shift[a]) // block) for a in (0, 1)]
    begin = [(pads[a] + shift[a]) // block for a in (0, 1)]
    end = [outs[a] - 1 + kernel[a] - sizes[a] // block - begin[a] for a in (0, 1)]
    if all(sizes[a] % block == 0 and end[a] >= 0 for a in (0, 1)):
        return dq, weights_dq, block, kernel, shift, begin, end, False
    # else a Pad first, to whole blocks (a negative end crops rows no output reads)
    kernel = [-(-k // block) for k in ks]
    end = [block * (outs[a] - 1 + kernel[a]) - sizes[a] - pads[a] for a in (0, 1)]
    return dq, weights_dq, block, kernel, [0, 0], pads[:2], end, True
