"""A quantized 3-D convolution (QDQ form) as 2-D integer convolutions, one per output frame, its time taps
stacked into channels.

DequantizeLinear(x) -> Conv(3-D, DequantizeLinear(int8 w), bias) [-> Relu] -> QuantizeLinear: onnxruntime fuses
it into a 3-D QLinearConv, which runs about twice as slow as 2-D ones doing the same integer work (r3d_18:
docs/performance.md). Output frame t reads the input frames its time taps reach: with the clip moved to
[N, H, W, T, C] (uint8) those frames are a Slice (step: the time dilation) that reshapes to [N, H, W, k*C],
and a 2-D QLinearConv with the weights alike ([O, C, k, kh, kw] -> [O, k*C, kh, kw], tap-major) computes the
same integer sum of products and the same requantization as the 3-D one. Taps that would read the time
padding are left out (in the 3-D form they multiply the zero point's padding, adding 0). The quantized output
frames are joined side by side in channels, reshaped apart in time and moved back to [N, O, T, H, W];
onnxruntime, which runs its integer convolutions channels last, cancels the moves between such convolutions.
A convolution over space only (a 1 x kh x kw kernel, frame t for frame t) runs the frames as the batch of one
2-D convolution instead (mc3_18: 0.94x the time of a convolution per frame, r2plus1d_18 0.98x).
"""
from __future__ import annotations

import numpy as np
from onnx import helper

from .quantization import _Graph, _outer_reads, _quantized_after


def quantized_frames_as_channels(nodes: list, initializers: list, outputs, shapes: dict) -> int:
    """Rewrite every quantized 3-D Conv of `nodes` whose data shape is in `shapes` (data input name -> (N or
    None, C, T, H, W), recorded by the Convolution rule from OpenVINO's shapes) as above. Edits `nodes` (ONNX
    NodeProtos, in order) and `initializers` ((name, ONNX type, array) list) in place; returns the number of
    convolutions rewritten. Values in `outputs` (the graph's outputs) or read by subgraphs are kept."""
    if not shapes:
        return 0
    graph = _Graph(nodes, initializers, set(outputs) | _outer_reads(nodes))
    replaced, dead = {}, set()
    for conv in [n for n in nodes if n.op_type == "Conv"]:
        found = _parameters(conv, graph, shapes)
        if found is not None:
            added, removed = _frames(conv, graph, *found)
            replaced[id(conv)] = added
            dead.update(id(n) for n in removed)
    if replaced:
        nodes[:] = [m for n in nodes if id(n) in replaced or id(n) not in dead for m in replaced.get(id(n), [n])]
    return len(replaced)


def _parameters(conv, graph: _Graph, shapes: dict):
    """(data DequantizeLinear, weights DequantizeLinear, Relu or None, QuantizeLinear, data shape, attributes)
    of a Conv the rewrite applies to, else None."""
    shape = shapes.get(conv.input[0])
    attributes = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    dq, weights_dq = graph.producer.get(conv.input[0]), graph.producer.get(conv.input[1])
    if shape is None or dq is None or dq.op_type != "DequantizeLinear" or weights_dq is None \
            or weights_dq.op_type != "DequantizeLinear" or len(graph.readers.get(weights_dq.output[0], [])) != 1 \
            or weights_dq.output[0] in graph.keep or attributes.get("group", 1) != 1 \
            or attributes.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") \
            or (len(conv.input) > 2 and conv.input[2] not in graph.values) or conv.output[0] in graph.keep:
        return None
    q = graph.values.get(weights_dq.input[0])
    scale = graph.values.get(dq.input[1])
    zero = graph.values.get(dq.input[2]) if len(dq.input) > 2 else None
    if q is None or q.ndim != 5 or q.dtype != np.int8 or scale is None or scale.size != 1 or zero is None \
            or len(shape) != 5 or any(d is None for d in shape[1:]) or q.shape[1] != shape[1] \
            or any(a.name == "axis" and a.i not in (0, -5) for a in weights_dq.attribute) \
            or not _quantized_after(conv, graph.readers, graph.values):
        return None
    stride, dilation = attributes.get("strides", [1] * 3)[0], attributes.get("dilations", [1] * 3)[0]
    pads, frames, taps = attributes.get("pads", [0] * 6), shape[2], q.shape[2]
    out_frames = (frames + pads[0] + pads[3] - dilation * (taps - 1) - 1) // stride + 1
    if out_frames < 1 or not all(any(0 <= t * stride + tap * dilation - pads[0] < frames for tap in range(taps))
                                 for t in range(out_frames)):
        return None  # an output frame reading the time padding only: the plain 3-D form
    relu = graph.readers[conv.output[0]][0]
    quantize = graph.readers[relu.output[0]][0] if relu.op_type == "Relu" else relu
    if relu.op_type != "Relu":
        relu = None
    if quantize.op_type != "QuantizeLinear" or (relu is not None and relu.output[0] in graph.keep) \
            or any(a.name == "axis" and a.i not in (1, -4) for a in quantize.attribute):
        return None  # (per channel: axis 1 of the frames too)
    return dq, weights_dq, relu, quantize, tuple(shape), attributes


def _frames(conv, graph: _Graph, dq, weights_dq, relu, quantize, shape, attributes):
    """(nodes to insert in place of the Conv, nodes to remove)."""
    q = graph.values[weights_dq.input[0]]
    outputs, channels, taps = q.shape[:3]
    frames, height, width = shape[2:]
    stride, dilation = attributes.get("strides", [1] * 3), attributes.get("dilations", [1] * 3)
    pads = attributes.get("pads", [0] * 6)
    out_frames = (frames + pads[0] + pads[3] - dilation[0] * (taps - 1) - 1) // stride[0] + 1
    conv2d = dict(strides=list(stride[1:]), dilations=list(dilation[1:]), pads=[pads[1], pads[2], pads[4], pads[5]])
    stem = conv.name or conv.output[0]
    weights, pieces = {}, []

    def const(name: str, array: np.ndarray) -> str:
        return name if name in graph.values else graph.add(name, array)

    def node(op: str, inputs: list, output: str, name: str | None = None, **kwargs) -> str:
        added.append(helper.make_node(op, inputs, [output], name=name or output, **kwargs))
        return output

    added: list = []
    size = [(d + pads[a] + pads[a + 3] - dilation[a] * (k - 1) - 1) // stride[a] + 1
            for a, d, k in ((1, height, q.shape[3]), (2, width, q.shape[4]))]
    quantized = {a.name: helper.get_attribute_value(a) for a in quantize.attribute if a.name != "axis"}
    if taps == 1 and stride[0] == 1 and pads[0] == pads[3] == 0 and frames > 1:
        # over space only, frame t for frame t: the frames as the batch, one convolution
        value = node("Transpose", [dq.input[0]], f"{stem}/frames/batch", perm=[0, 2, 3, 4, 1])  # N, T, H, W, C
        value = node("Reshape", [value, const(f"{stem}/frames/shape_batch", np.array(
            [-1, height, width, channels], np.int64))], f"{stem}/frames/folded")
        value = node("Transpose", [value], f"{stem}/frames/nchw", perm=[0, 3, 1, 2])
        value = node("DequantizeLinear", [value, *dq.input[1:]], f"{stem}/frames/data")
        kernel = const(f"{stem}/taps_0_1", q.reshape(outputs, channels, *q.shape[3:]))
        kernel = node("DequantizeLinear", [kernel, *weights_dq.input[1:]], f"{kernel}/dequantized", axis=0)
        value = node("Conv", [value, kernel, *conv.input[2:]], f"{stem}/frames/conv", **conv2d)
        if relu is not None:
            value = node("Relu", [value], f"{stem}/frames/relu")
        value = node("QuantizeLinear", [value, *quantize.input[1:]], f"{stem}/frames/quantized", **quantized)
        value = node("Transpose", [value], f"{stem}/frames/nhwc", perm=[0, 2, 3, 1])
        value = node("Reshape", [value, const(f"{stem}/frames/shape_unfolded", np.array(
            [-1, frames, *size, outputs], np.int64))], f"{stem}/frames/unfolded")
        node("Transpose", [value], quantize.output[0], f"{stem}/frames/back", perm=[0, 4, 1, 2, 3])
        return added, _dead(graph, dq, weights_dq, conv, relu, quantize)
    axis = const(f"{stem}/frames/axis", np.array([3], np.int64))
    clip = node("Transpose", [dq.input[0]], f"{stem}/frames/clip", perm=[0, 3, 4, 2, 1])  # N, H, W, T, C
    for t in range(out_frames):
        read = [tap for tap in range(taps) if 0 <= t * stride[0] + tap * dilation[0] - pads[0] < frames]
        first = t * stride[0] + read[0] * dilation[0] - pads[0]
        last = t * stride[0] + read[-1] * dilation[0] - pads[0]
        key = (read[0], len(read))
        if key not in weights:  # the taps' weights, channel c of tap j at j * C + c
            sliced = q[:, :, read[0]:read[-1] + 1].transpose(0, 2, 1, 3, 4) \
                .reshape(outputs, len(read) * channels, *q.shape[3:])
            name = const(f"{stem}/taps_{read[0]}_{len(read)}", sliced)
            weights[key] = node("DequantizeLinear", [name, *weights_dq.input[1:]], f"{name}/dequantized", axis=0)
        frame = f"{stem}/frame_{t}"
        value = clip if len(read) == frames else node(  # (every frame: the clip as it is)
            "Slice", [clip, const(f"{stem}/frames/start_{first}", np.array([first], np.int64)),
                      const(f"{stem}/frames/end_{last + 1}", np.array([last + 1], np.int64)), axis,
                      const(f"{stem}/frames/step_{dilation[0]}", np.array([dilation[0]], np.int64))],
            f"{frame}/taps")
        value = node("Reshape", [value, const(f"{stem}/frames/shape_{len(read)}", np.array(
            [0, height, width, len(read) * channels], np.int64))], f"{frame}/stacked")
        value = node("Transpose", [value], f"{frame}/stacked_nchw", perm=[0, 3, 1, 2])
        value = node("DequantizeLinear", [value, *dq.input[1:]], f"{frame}/data")
        value = node("Conv", [value, weights[key], *conv.input[2:]], f"{frame}/conv", **conv2d)
        if relu is not None:
            value = node("Relu", [value], f"{frame}/relu")
        value = node("QuantizeLinear", [value, *quantize.input[1:]], f"{frame}/quantized", **quantized)
        pieces.append(node("Transpose", [value], f"{frame}/nhwc", perm=[0, 2, 3, 1]))
    # the frames side by side in channels, then apart: [N, H, W, T * O] -> [N, H, W, T, O]
    joined = node("Concat", pieces, f"{stem}/frames/joined", axis=3) if len(pieces) > 1 else pieces[0]
    joined = node("Reshape", [joined, const(f"{stem}/frames/shape_out", np.array(
        [0, *size, out_frames, outputs], np.int64))], f"{stem}/frames/apart")
    node("Transpose", [joined], quantize.output[0], f"{stem}/frames/back", perm=[0, 4, 3, 1, 2])  # N, O, T, H, W
    return added, _dead(graph, dq, weights_dq, conv, relu, quantize)


def _dead(graph: _Graph, dq, weights_dq, conv, relu, quantize) -> list:
    """The nodes the rewrite replaces (the data's DequantizeLinear where the convolution alone read it)."""
    dead = [n for n in (weights_dq, conv, relu, quantize) if n is not None]
    if len(graph.readers.get(dq.output[0], [])) == 1 and dq.output[0] not in graph.keep:
        dead.append(dq)
    return dead
