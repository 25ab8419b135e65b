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

from dataclasses import dataclass

import numpy as np
from onnx import helper

from .._spatial import frame_taps
from .graph import GraphIndex, _Graph, _quantized_after


def quantized_frames_as_channels(index: GraphIndex, outputs, shapes: dict, release=None) -> int:
    """Rewrite every quantized 3-D Conv of `index`'s nodes whose data shape is in `shapes` (data input name ->
    (N or None, C, T, H, W), recorded by the Convolution rule from OpenVINO's shapes) as above. Edits the nodes
    (ONNX NodeProtos, in order) and initializers ((name, ONNX type, array) list) in place; returns the number of
    convolutions rewritten. Values in `outputs` (the graph's outputs) or read by subgraphs are kept.
    `release` (an array -> None, or None) is called with each 3-D kernel no node reads any more once its
    taps are copied out: the importer drops the memory-mapped pages of OpenVINO's constant there (the copies
    hold 1-2.3x the kernel; with its pages kept the weights were resident twice over)."""
    if not shapes:
        return 0
    nodes = index.nodes
    graph = _Graph(index, set(outputs) | index.outer_reads())
    replaced, dead = {}, set()
    for conv in [n for n in nodes if n.op_type == "Conv"]:
        match = _match(conv, graph, shapes)
        if match is not None:
            replaced[id(conv)] = _Rewrite(graph, match).nodes()
            dead.update(id(n) for n in _dead(graph, match))
            _release_kernel(graph, match, dead, release)
    if replaced:
        nodes[:] = [m for n in nodes if id(n) in replaced or id(n) not in dead for m in replaced.get(id(n), [n])]
    index.edited(bool(replaced))
    return len(replaced)


@dataclass
class _Match:
    """A quantized 3-D Conv the rewrite applies to, and the nodes around it."""
    conv: object
    dq: object  # the data's DequantizeLinear
    weights_dq: object  # the int8 weights' DequantizeLinear
    relu: object | None
    quantize: object
    shape: tuple  # the data's (N or None, C, T, H, W)
    attributes: dict  # the Conv's


def _match(conv, graph: _Graph, shapes: dict) -> _Match | None:
    """The _Match of a Conv the rewrite applies to, else None."""
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
    if out_frames < 1 or not all(frame_taps(frames, out_frames, taps, stride, dilation, pads[0])):
        return None  # an output frame reading the time padding only: the plain 3-D form
    relu = graph.readers[conv.output[0]][0]
    quantize = graph.readers[relu.output[0]][0] if relu.op_type == "Relu" else relu
    if relu.op_type != "Relu":
        relu = None
    if quantize.op_type != "QuantizeLinear" or (relu is not None and relu.output[0] in graph.keep) \
            or any(a.name == "axis" and a.i not in (1, -4) for a in quantize.attribute):
        return None  # (per channel: axis 1 of the frames too)
    return _Match(conv, dq, weights_dq, relu, quantize, tuple(shape), attributes)


class _Rewrite:
    """The nodes replacing one matched Conv, in order (nodes()), and the constants they read (added once)."""

    def __init__(self, graph: _Graph, match: _Match):
        self.graph, self.match, self.added = graph, match, []
        self.q = graph.values[match.weights_dq.input[0]]
        self.outputs, self.channels, self.taps = self.q.shape[:3]
        self.frames, self.height, self.width = match.shape[2:]
        attributes = match.attributes
        self.stride, self.dilation = attributes.get("strides", [1] * 3), attributes.get("dilations", [1] * 3)
        pads = self.pads = attributes.get("pads", [0] * 6)
        self.out_frames = (self.frames + pads[0] + pads[3] - self.dilation[0] * (self.taps - 1) - 1) \
            // self.stride[0] + 1
        self.conv2d = dict(strides=list(self.stride[1:]), dilations=list(self.dilation[1:]),
                           pads=[pads[1], pads[2], pads[4], pads[5]])
        self.size = [(d + pads[a] + pads[a + 3] - self.dilation[a] * (k - 1) - 1) // self.stride[a] + 1
                     for a, d, k in ((1, self.height, self.q.shape[3]), (2, self.width, self.q.shape[4]))]
        self.stem = match.conv.name or match.conv.output[0]

    def nodes(self) -> list:
        if self.taps == 1 and self.stride[0] == 1 and self.pads[0] == self.pads[3] == 0 and self.frames > 1:
            self._frames_as_batch()
        else:
            self._convolution_per_frame()
        return self.added

    def const(self, name: str, array: np.ndarray) -> str:
        return name if name in self.graph.values else self.graph.add(name, array)

    def node(self, op: str, inputs: list, output: str, name: str | None = None, **kwargs) -> str:
        self.added.append(helper.make_node(op, inputs, [output], name=name or output, **kwargs))
        return output

    def _convolve(self, value: str, kernel: str, prefix: str) -> str:
        """DequantizeLinear -> 2-D Conv [-> Relu] -> QuantizeLinear of the uint8 NCHW `value`."""
        match = self.match
        value = self.node("DequantizeLinear", [value, *match.dq.input[1:]], f"{prefix}/data")
        value = self.node("Conv", [value, kernel, *match.conv.input[2:]], f"{prefix}/conv", **self.conv2d)
        if match.relu is not None:
            value = self.node("Relu", [value], f"{prefix}/relu")
        quantized = {a.name: helper.get_attribute_value(a) for a in match.quantize.attribute if a.name != "axis"}
        return self.node("QuantizeLinear", [value, *match.quantize.input[1:]], f"{prefix}/quantized", **quantized)

    def _frames_as_batch(self) -> None:
        """Over space only, frame t for frame t: the frames as the batch of one convolution."""
        stem, node, const = self.stem, self.node, self.const
        value = node("Transpose", [self.match.dq.input[0]], f"{stem}/frames/batch",
                     perm=[0, 2, 3, 4, 1])  # N, T, H, W, C
        value = node("Reshape", [value, const(f"{stem}/frames/shape_batch", np.array(
            [-1, self.height, self.width, self.channels], np.int64))], f"{stem}/frames/folded")
        value = node("Transpose", [value], f"{stem}/frames/nchw", perm=[0, 3, 1, 2])
        kernel = const(f"{stem}/taps_0_1", self.q.reshape(self.outputs, self.channels, *self.q.shape[3:]))
        kernel = node("DequantizeLinear", [kernel, *self.match.weights_dq.input[1:]], f"{kernel}/dequantized",
                      axis=0)
        value = self._convolve(value, kernel, f"{stem}/frames")
        value = node("Transpose", [value], f"{stem}/frames/nhwc", perm=[0, 2, 3, 1])
        value = node("Reshape", [value, const(f"{stem}/frames/shape_unfolded", np.array(
            [-1, self.frames, *self.size, self.outputs], np.int64))], f"{stem}/frames/unfolded")
        node("Transpose", [value], self.match.quantize.output[0], f"{stem}/frames/back", perm=[0, 4, 1, 2, 3])

    def _convolution_per_frame(self) -> None:
        """One 2-D convolution per output frame over the time taps it reaches, stacked into channels."""
        stem, node, const, q = self.stem, self.node, self.const, self.q
        stride, dilation, start = self.stride[0], self.dilation[0], self.pads[0]
        weights, pieces = {}, []
        axis = const(f"{stem}/frames/axis", np.array([3], np.int64))
        clip = node("Transpose", [self.match.dq.input[0]], f"{stem}/frames/clip", perm=[0, 3, 4, 2, 1])  # N, H, W, T, C
        for t, pairs in enumerate(frame_taps(self.frames, self.out_frames, self.taps, stride, dilation, start)):
            read, first, last = [tap for tap, _ in pairs], pairs[0][1], pairs[-1][1]
            key = (read[0], len(read))
            if key not in weights:  # the taps' weights, channel c of tap j at j * C + c
                sliced = q[:, :, read[0]:read[-1] + 1].transpose(0, 2, 1, 3, 4) \
                    .reshape(self.outputs, len(read) * self.channels, *q.shape[3:])
                name = const(f"{stem}/taps_{read[0]}_{len(read)}", sliced)
                weights[key] = node("DequantizeLinear", [name, *self.match.weights_dq.input[1:]],
                                    f"{name}/dequantized", axis=0)
            frame = f"{stem}/frame_{t}"
            value = clip if len(read) == self.frames else node(  # (every frame: the clip as it is)
                "Slice", [clip, const(f"{stem}/frames/start_{first}", np.array([first], np.int64)),
                          const(f"{stem}/frames/end_{last + 1}", np.array([last + 1], np.int64)), axis,
                          const(f"{stem}/frames/step_{dilation}", np.array([dilation], np.int64))],
                f"{frame}/taps")
            value = node("Reshape", [value, const(f"{stem}/frames/shape_{len(read)}", np.array(
                [0, self.height, self.width, len(read) * self.channels], np.int64))], f"{frame}/stacked")
            value = node("Transpose", [value], f"{frame}/stacked_nchw", perm=[0, 3, 1, 2])
            value = self._convolve(value, weights[key], frame)
            pieces.append(node("Transpose", [value], f"{frame}/nhwc", perm=[0, 2, 3, 1]))
        # the frames side by side in channels, then apart: [N, H, W, T * O] -> [N, H, W, T, O]
        joined = node("Concat", pieces, f"{stem}/frames/joined", axis=3) if len(pieces) > 1 else pieces[0]
        joined = node("Reshape", [joined, const(f"{stem}/frames/shape_out", np.array(
            [0, *self.size, self.out_frames, self.outputs], np.int64))], f"{stem}/frames/apart")
        node("Transpose", [joined], self.match.quantize.output[0], f"{stem}/frames/back",
             perm=[0, 4, 3, 1, 2])  # N, O, T, H, W


def _dead(graph: _Graph, match: _Match) -> list:
    """The nodes the rewrite replaces (the data's DequantizeLinear where the convolution alone read it)."""
    dq = match.dq
    dead = [n for n in (match.weights_dq, match.conv, match.relu, match.quantize) if n is not None]
    if len(graph.readers.get(dq.output[0], [])) == 1 and dq.output[0] not in graph.keep:
        dead.append(dq)
    return dead


def _release_kernel(graph: _Graph, match: _Match, dead: set, release) -> None:
    """`release` the matched convolution's 3-D int8 kernel when every node reading it is replaced."""
    name = match.weights_dq.input[0]
    if release is not None and name not in graph.keep \
            and all(id(n) in dead for n in graph.readers.get(name, [])):
        release(graph.values[name])
