"""Depthwise convolutions with per-channel quantized inputs: the input scales moved into the weights, float
weights where the input stays per channel, and (off) a ReLU6 + Div folded into the previous Conv's scales."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .graph import GraphIndex, NUMPY_CODES, _WEIGHTED, _NodeEdits, _group


def _depthwise_per_tensor(index: GraphIndex, keep: set) -> None:
    """A depthwise Conv (group = input channels) reading QuantizeLinear -> DequantizeLinear with per-channel
    scales s_c and one zero point z (nncf quantizes depthwise inputs so), whose weights are nncf's
    Reshape(Mul(int8 chain, scale)), becomes Div(x, s_c) -> QuantizeLinear(1, z) -> DequantizeLinear(1, z) and
    weights scaled by s_c: the same integer levels (QuantizeLinear computes x / s_c first), the convolution's
    sums one float rounding of each weight apart; onnxruntime then fuses an integer depthwise convolution
    (a per-channel input zero point it cannot run, and float, it surrounds with layout transposes)."""
    from onnx import helper

    nodes, initializers = index.nodes, index.initializers
    convs = [n for n in nodes if n.op_type == "Conv" and _group(n) >= 2]
    if not convs:
        return
    values, producer, readers = index.lookups()

    def single(name, op_type):
        """The one reader of `name` when it is an `op_type`, else None."""
        found = readers.get(name, [])
        return found[0] if len(found) == 1 and found[0].op_type == op_type and name not in keep else None

    edits = _NodeEdits()
    for conv in convs:
        group = _group(conv)
        dq, reshape = producer.get(conv.input[0]), producer.get(conv.input[1])
        if group < 2 or dq is None or dq.op_type != "DequantizeLinear" or len(dq.input) < 3 \
                or single(dq.output[0], "Conv") is not conv or reshape is None or reshape.op_type != "Reshape":
            continue
        q = producer.get(dq.input[0])
        scale, zero = values.get(dq.input[1]), values.get(dq.input[2])
        if q is None or q.op_type != "QuantizeLinear" or list(q.input[1:]) != list(dq.input[1:]) \
                or single(q.output[0], "DequantizeLinear") is not dq or scale is None or zero is None \
                or scale.ndim != 1 or scale.size != group or np.any(zero != zero.reshape(-1)[0]) \
                or any(a.name == "axis" and a.i != 1 for a in list(q.attribute) + list(dq.attribute)):
            continue
        mul = producer.get(reshape.input[0])
        if mul is None or mul.op_type != "Mul" or single(mul.output[0], "Reshape") is not reshape \
                or single(reshape.output[0], "Conv") is not conv:
            continue
        side = next((i for i in (0, 1) if values.get(mul.input[i]) is not None
                     and values[mul.input[i]].dtype == np.float32), None)
        cast = producer.get(mul.input[1 - side]) if side is not None else None
        if cast is None or cast.op_type not in ("Cast", "Sub"):
            continue
        weight_scale = values[mul.input[side]]
        # the group axis leads nncf's [groups, out/groups, 1, kh, kw] weight and its scale
        if weight_scale.ndim < 2 or weight_scale.shape[0] not in (1, group):
            continue
        stem = conv.name or conv.output[0]
        folded = weight_scale * scale.reshape((group,) + (1,) * (weight_scale.ndim - 1))
        names = [f"{stem}/input_scale", f"{stem}/unit_scale", f"{stem}/zero_point", f"{stem}/folded_scale"]
        for name, array in zip(names, (scale.reshape(1, group, 1, 1).astype(np.float32), np.float32(1.0),
                                       zero.reshape(-1)[:1].reshape(()), folded.astype(np.float32))):
            initializers.append((name, NUMPY_CODES[np.asarray(array).dtype], np.asarray(array)))
        divided = f"{stem}/per_channel_scaled"
        edits.replace(q, [helper.make_node("Div", [q.input[0], names[0]], [divided], name=divided), q])
        for node, data in ((q, divided), (dq, dq.input[0])):
            node.input[:] = [data, names[1], names[2]]
            kept = [a for a in node.attribute if a.name != "axis"]
            del node.attribute[:]
            node.attribute.extend(kept)
        mul.input[side] = names[3]
        edits.rewire(q, dq, mul)
    edits.made_in(index)


#: _redundant_clip_scale_into_conv on (measured on mobilenet_v2-int8, loaded machine: 0.51x the time, 0.99x
#: OpenVINO CPU's, but 1.65e-1 from the f64 semantics against 1.52e-1 without it and OpenVINO's 1.45e-1 —
#: 17 more integer convolutions, each with QLinearConv's rounded int32 bias): off, as the INT8 form may not
#: move further from the semantics than OpenVINO's int8 execution (docs/performance.md, INT8 fix 5)
FOLD_REDUNDANT_CLIP = False


def _redundant_clip_scale_into_conv(index: GraphIndex, keep: set) -> None:
    """Conv (nncf's weights Mul(int8 chain, per-channel scale)) [-> bias Add] -> Clip(lo, hi) -> Div(s_c) ->
    QuantizeLinear(S, z) (mobilenet_v2: a ReLU6 before the next depthwise convolution's per-channel input
    scale, as _depthwise_per_tensor writes it), where the Clip changes no quantized level — QuantizeLinear
    maps lo / s_c to level 0 and hi / s_c to level 255 in every channel, so values beyond the Clip saturate
    there anyway — becomes Conv with weight scales s_w / s_c and bias b / s_c -> QuantizeLinear: the same levels
    (each scale rounded once more, as the depthwise folding), and onnxruntime runs one QLinearConv instead of
    an integer MatMul, Clip, Div and QuantizeLinear on float data."""
    if not FOLD_REDUNDANT_CLIP:
        return
    nodes, initializers = index.nodes, index.initializers
    values, producer, readers = index.lookups()

    def after(node, op_type):
        found = readers.get(node.output[0], [])
        return found[0] if len(found) == 1 and found[0].op_type == op_type and node.output[0] not in keep else None

    edits = _NodeEdits()
    for div in [n for n in nodes if n.op_type == "Div"]:
        clip, channels = producer.get(div.input[0]), values.get(div.input[1])
        quantize = after(div, "QuantizeLinear")
        if clip is None or clip.op_type != "Clip" or after(clip, "Div") is not div or quantize is None \
                or channels is None or channels.ndim != 4 or channels.dtype != np.float32 \
                or len(clip.input) != 3 or any(i not in values for i in clip.input[1:]) \
                or any(i not in values for i in quantize.input[1:3]) or len(quantize.input) < 3:
            continue
        scale, zero = values[quantize.input[1]], values[quantize.input[2]]
        if scale.size != 1 or zero.size != 1 or zero.dtype != np.uint8 or not np.all(channels > 0):
            continue
        low, high = (np.float32(values[i]) for i in clip.input[1:])
        step, point = np.float32(scale.reshape(-1)[0]), int(zero.reshape(-1)[0])
        if np.any(np.round(low / channels / step) + point > 0) or np.any(np.round(high / channels / step) + point < 255):
            continue  # the Clip changes some level
        bias = producer.get(clip.input[0])
        conv = producer.get(bias.input[0]) if bias is not None and bias.op_type == "Add" else bias
        if bias is conv:
            bias = None
        if conv is None or conv.op_type != "Conv" or len(conv.input) != 2 \
                or (after(conv, "Add") if bias is not None else after(conv, "Clip")) is not (bias or clip) \
                or (bias is not None and after(bias, "Clip") is not clip):
            continue
        count = channels.size
        if channels.shape != (1, count, 1, 1):
            continue
        mul = producer.get(conv.input[1])
        if mul is None or mul.op_type != "Mul" or len(readers.get(mul.output[0], [])) != 1:
            continue
        side = next((i for i in (0, 1) if values.get(mul.input[i]) is not None
                     and values[mul.input[i]].dtype == np.float32), None)
        if side is None or values[mul.input[side]].ndim != 4 or values[mul.input[side]].shape[0] not in (1, count) \
                or any(d != 1 for d in values[mul.input[side]].shape[1:]):
            continue
        constant = None
        if bias is not None:
            other = 1 if bias.input[0] == conv.output[0] else 0
            constant = values.get(bias.input[other])
            if constant is None or constant.dtype != np.float32 or constant.size != count \
                    or constant.shape not in ((count,), (1, count, 1, 1)):
                continue
        stem = conv.name or conv.output[0]
        folded = (values[mul.input[side]] / channels.reshape(count, 1, 1, 1)).astype(np.float32)
        initializers.append((f"{stem}/scale_by_input_scale", TensorProto.FLOAT, folded))
        mul.input[side] = f"{stem}/scale_by_input_scale"
        if bias is not None:
            scaled = (constant.reshape(1, count, 1, 1) / channels).astype(np.float32)
            initializers.append((f"{stem}/bias_by_input_scale", TensorProto.FLOAT, scaled))
            bias.input[other] = f"{stem}/bias_by_input_scale"
        quantize.input[0] = clip.input[0]
        edits.remove(clip, div)
        edits.rewire(mul, quantize, *([bias] if bias is not None else []))
    edits.made_in(index)


def _float_weights_for_per_channel_inputs(index: GraphIndex) -> None:
    """A Conv/MatMul reading a per-channel DequantizeLinear (nncf quantizes depthwise inputs per channel)
    gets float weights, computed as DequantizeLinear does: given DequantizeLinear weights too, onnxruntime
    fuses a QLinearConv that fails at run time (its input zero point must be one value)."""
    nodes, initializers = index.nodes, index.initializers
    values, producer, _ = index.lookups()
    if not any(n.op_type == "DequantizeLinear" and values.get(n.input[1], np.ones(1)).size != 1 for n in nodes):
        return
    for node in nodes:
        port = _WEIGHTED.get(node.op_type)
        if port is None or len(node.input) <= port:
            continue
        data, weights = producer.get(node.input[0]), producer.get(node.input[port])
        if data is None or data.op_type != "DequantizeLinear" or values.get(data.input[1], np.ones(1)).size == 1:
            continue
        if weights is None or weights.op_type != "DequantizeLinear" or not all(
                name in values for name in weights.input):
            continue
        q, scale = values[weights.input[0]], values[weights.input[1]]
        zero = values[weights.input[2]] if len(weights.input) > 2 else np.zeros_like(scale, q.dtype)
        shape = [1] * q.ndim
        axis = next((a.i for a in weights.attribute if a.name == "axis"), 1)
        if scale.size > 1:
            shape[axis] = -1
        real = ((q.astype(np.int32) - zero.astype(np.int32).reshape(shape)).astype(np.float32)
                * scale.reshape(shape))
        name = f"{weights.name or node.input[port]}/float"
        initializers.append((name, TensorProto.FLOAT, real))
        node.input[port] = name
        index.edited(rewired=(node,))  # (this loop keeps reading its snapshot)
