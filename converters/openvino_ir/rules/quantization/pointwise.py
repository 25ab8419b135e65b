"""A 1x1 convolution whose output is not quantized as a channels-last com.microsoft MatMulIntegerToFloat (the
activations and QuantizeLinear after it moved along), and a patch embedding rewritten into one (SpaceToDepth)."""
from __future__ import annotations

import numpy as np

from .compressed_weights import MICROSOFT
from .graph import GraphIndex, _Graph, _NodeEdits, _Weights, _quantized_after, _static_shape, _weight_chain


def _pointwise_as_matmul(graph: _Graph, weights: _Weights, edits: _NodeEdits) -> bool:
    """Conv 1x1 (stride 1, no padding, group 1) of a quantized input with nncf's int8 weights, its output not
    quantized (a HSwish or SE block follows: mobilenet_v3) -> Transpose to channels last, MatMulIntegerToFloat
    (int8 weights [C, O], the bias Add that follows the Conv taken in), then the elementwise activations,
    per-channel arithmetic and the QuantizeLinear that follow, then Transpose back. The same sums (exact
    integer accumulation, one multiplication by the scales, the bias added in float; the float Conv rounded
    each product), and no float convolution between integer kernels (and the layout transposes around it).
    The node list's edits go to `edits` (the Conv's replacement, the nodes removed). Returns False (nothing
    changed) where the Conv is not such a convolution."""
    found = _pointwise_parameters(graph, weights)
    if found is None:
        return False
    scales, axis, bias = found
    conv, channels = weights.reader, weights.q.shape[0]
    chain = _channels_last_chain(graph, conv, channels)
    if bias is None and chain and chain[0].op_type == "Add":  # the bias as a separate Add: into the kernel
        other = chain[0].input[1] if chain[0].input[0] == conv.output[0] else chain[0].input[0]
        if graph.values[other].size == channels:
            bias, add = graph.values[other], chain.pop(0)
            edits.remove(add)
            conv.output[0] = add.output[0]
    if FOLD_CLIP_DIV_INTO_SCALES:
        scales, axis, bias = _clip_div_into_scales(graph, chain, scales, axis, bias, channels, edits)
    stem = conv.name or conv.output[0]
    replacement, product = _pointwise_matmul(graph, weights, scales, axis, bias, stem, bool(chain))
    last = chain[-1] if chain else conv
    result, last_nhwc = last.output[0], f"{stem}/channels_last"
    renamed = {conv.output[0]: product}  # each value of the chain and its channels-last name
    for node in chain:  # rewired in place, channels last
        node.input[:] = [renamed[name] if name in renamed else _channels_last_constant(graph, name, channels)
                         if node.op_type in _PER_CHANNEL_ARITHMETIC else name for name in node.input]
        before = node.output[0]
        renamed[before] = last_nhwc if node is last else f"{before}/channels_last"
        node.output[0] = renamed[before]
    edits.rewire(*chain)
    from onnx import helper

    back = helper.make_node("Transpose", [last_nhwc], [result], name=f"{stem}/channels_first", perm=[0, 3, 1, 2])
    if chain:
        edits.replace(conv, replacement)
        edits.replace(last, [last, back])
    else:
        edits.replace(conv, replacement + [back])
    return True


def _pointwise_parameters(graph: _Graph, weights: _Weights):
    """(scales, axis, bias or None) of a Conv _pointwise_as_matmul rewrites, else None."""
    from onnx import helper

    conv, q = weights.reader, weights.q
    attributes = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    if conv.op_type != "Conv" or q.ndim != 4 or q.shape[2:] != (1, 1) or q.dtype != np.int8 or q.shape[0] == 1 \
            or attributes.get("group", 1) != 1 or any(v != 1 for v in attributes.get("strides", [])) \
            or any(v != 0 for v in attributes.get("pads", [])) \
            or attributes.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID") or conv.output[0] in graph.keep:
        return None  # (one output channel: a [1, 1, 1, 1] constant after it would be ambiguous)
    data = graph.producer.get(conv.input[0])
    if data is None or data.op_type != "DequantizeLinear":
        return None  # (across a MaxPool onnxruntime's fusion of the MatMul is not established)
    found = weights.per_axis()
    if found is None or found[2] not in (None, 0) or np.any(found[1] != 0):
        return None
    bias = graph.values.get(conv.input[2]) if len(conv.input) > 2 else None
    if len(conv.input) > 2 and (bias is None or bias.size != q.shape[0]):
        return None
    return found[0], found[2], bias


#: ops that may follow a 1x1 convolution in channels-last layout unchanged (elementwise, no attribute that
#: names an axis), and arithmetic with a per-channel constant (bias Add, the depthwise input scale's Div),
#: whose constant is reshaped to [1, 1, 1, C]
_CHANNELS_LAST_OK = ("Relu", "HardSwish", "HardSigmoid", "Sigmoid", "Clip", "QuantizeLinear")
_PER_CHANNEL_ARITHMETIC = ("Add", "Mul", "Div")


def _swish_after(graph: _Graph, value: str) -> list | None:
    """The nodes of value * Sigmoid([beta *] value) (the QDQ form's Swish: rules/elementwise.py, beta a scalar
    constant) when they are all that read `value`, else None: elementwise, so they run channels last too."""
    readers = graph.readers.get(value, [])
    if len(readers) != 2 or value in graph.keep:
        return None
    for first, product in (readers, readers[::-1]):
        nodes, sigmoid = [first], first
        if first.op_type == "Mul":  # the beta scaling
            other = first.input[1] if first.input[0] == value else first.input[0]
            if graph.values.get(other, np.ones(2)).size != 1:
                continue
            sigmoid = graph.only_reader(first.output[0])
            nodes.append(sigmoid)
        if sigmoid is not None and sigmoid.op_type == "Sigmoid" and product.op_type == "Mul" \
                and graph.only_reader(sigmoid.output[0]) is product \
                and sorted(product.input) == sorted([value, sigmoid.output[0]]):
            return nodes + [product]
    return None


def _channels_last_chain(graph: _Graph, conv, channels: int) -> list:
    """The nodes after `conv` that can run channels last too: per-channel arithmetic, elementwise activations
    (a Swish as Sigmoid and Mul: _swish_after), up to one per-tensor QuantizeLinear, each the only reader of
    the one before."""
    chain, value = [], conv.output[0]
    while True:
        swish = _swish_after(graph, value)
        if swish is not None:
            chain.extend(swish)
            value = swish[-1].output[0]
            continue
        after = graph.only_reader(value)
        if after is None or len(after.output) != 1:
            return chain
        if after.op_type in _PER_CHANNEL_ARITHMETIC:
            other = after.input[1] if after.input[0] == value else after.input[0]
            constant = graph.values.get(other)
            if constant is None or constant.dtype != np.float32 or constant.ndim > 4 or other == value \
                    or (after.op_type == "Div" and after.input[0] != value) \
                    or not _channel_vector_shape(constant.shape, channels):
                return chain
        elif after.op_type not in _CHANNELS_LAST_OK or any(a.name == "axis" for a in after.attribute) \
                or (after.op_type == "QuantizeLinear" and graph.values.get(after.input[1], np.ones(2)).size != 1) \
                or any(i not in graph.values for i in after.input[1:]):
            return chain
        chain.append(after)
        value = after.output[0]
        if after.op_type == "QuantizeLinear":
            return chain


def _channel_vector_shape(shape: tuple, channels: int) -> bool:
    """Whether a constant of `shape` broadcasts against [N, C, H, W] along the channels only."""
    full = (1,) * (4 - len(shape)) + tuple(shape)
    return full[0] == full[2] == full[3] == 1 and full[1] in (1, channels)


def _channels_last_constant(graph: _Graph, name: str, channels: int) -> str:
    """A per-channel constant ([C, 1, 1], [1, C, 1, 1]) as the [1, 1, 1, C] a channels-last tensor broadcasts
    (4-D: onnxruntime fuses a MatMul + Add with a 1-D bias into a float Gemm before its QDQ fusions)."""
    array = graph.values[name]
    if array.size != channels or channels == 1:
        return name
    return graph.add(f"{name}/channels_last", array.reshape(1, 1, 1, -1))


#: _clip_div_into_scales on: the per-channel Div after a 1x1 expansion's ReLU6 (mobilenet_v2) folded into
#: MatMulIntegerToFloat's weight scales and float bias (docs/performance.md, INT8 fix 6)
FOLD_CLIP_DIV_INTO_SCALES = True


def _clip_div_into_scales(graph: _Graph, chain: list, scales, axis, bias, channels: int, edits: _NodeEdits):
    """`chain` (the nodes after a 1x1 Conv _pointwise_as_matmul rewrites) Clip(lo, hi) -> Div(s_c) ->
    QuantizeLinear(S, z), where the Clip changes no level (lo / s_c maps to level 0 or below, hi / s_c to
    255 or above, in every channel: values beyond it saturate there anyway; mobilenet_v2's ReLU6 before the
    next depthwise input's per-channel scale, as _depthwise_per_tensor writes it): the Clip and the Div leave
    `chain` and the graph (removed through `edits`), and the weight scales become s_w / s_c and the bias
    b / s_c — the same levels but where a value is within a rounding of a level boundary (each scale rounded
    once more, as the depthwise fold), the bias still added in float by the kernel. Returns (scales, axis,
    bias), changed or not."""
    if [n.op_type for n in chain] != ["Clip", "Div", "QuantizeLinear"]:
        return scales, axis, bias
    clip, div, quantize = chain
    divisor = graph.values.get(div.input[1]) if div.input[0] == clip.output[0] else None
    limits = [graph.values.get(name) for name in list(clip.input[1:3]) + list(quantize.input[1:3])]
    if divisor is None or divisor.size != channels or divisor.dtype != np.float32 or len(clip.input) != 3 \
            or len(quantize.input) != 3 or any(v is None or v.size != 1 for v in limits) \
            or limits[3].dtype != np.uint8 or not np.all(divisor > 0):
        return scales, axis, bias
    low, high, step = (np.float32(v.reshape(-1)[0]) for v in limits[:3])
    point, per_channel = int(limits[3].reshape(-1)[0]), divisor.reshape(-1)
    if np.any(np.round(low / per_channel / step) + point > 0) \
            or np.any(np.round(high / per_channel / step) + point < 255):
        return scales, axis, bias  # the Clip changes some level
    scales = (np.broadcast_to(np.asarray(scales, np.float32).reshape(-1), (channels,)) / per_channel).astype(np.float32)
    if bias is not None:
        bias = (np.asarray(bias, np.float32).reshape(-1) / per_channel).astype(np.float32)
    quantize.input[0] = clip.input[0]
    edits.remove(clip, div)
    chain[:] = [quantize]
    return scales, 0, bias


def _pointwise_matmul(graph: _Graph, weights: _Weights, scales, axis, bias, stem: str, chained: bool):
    """The nodes replacing the Conv and their output: Transpose of its uint8 input to channels last, then one
    com.microsoft MatMulIntegerToFloat with nncf's int8 weights [C, O] and the bias: exact integer sums times
    s_x * s_w, plus the bias, in one kernel (onnxruntime fuses DequantizeLinear -> MatMul into the same kernel
    but leaves the bias a separate Add over the whole output: 5% of mobilenet_v3_small-int8's time)."""
    from onnx import helper

    conv, q = weights.reader, weights.q
    data = graph.producer[conv.input[0]]  # a per-tensor DequantizeLinear (_pointwise_parameters)
    last_nhwc = f"{stem}/channels_last"
    channels_last = helper.make_node("Transpose", [data.input[0]], [f"{stem}/input_channels_last"],
                                     name=f"{stem}/input_channels_last", perm=[0, 2, 3, 1])
    point = data.input[2] if len(data.input) > 2 else ""
    inputs = [channels_last.output[0], graph.add(f"{stem}/int8_weights", q.reshape(q.shape[0], -1).T),
              data.input[1], graph.add(f"{stem}/scale", np.asarray(scales, np.float32).reshape(-1)
                                       if axis is not None else np.asarray(scales, np.float32).reshape(())),
              point, ""]
    if bias is not None:
        inputs.append(graph.add(f"{stem}/bias", np.asarray(bias, np.float32).reshape(-1)))
    while inputs[-1] == "":
        inputs.pop()
    product = f"{stem}/matmul" if chained else last_nhwc
    return [channels_last, helper.make_node("MatMulIntegerToFloat", inputs, [product], name=f"{stem}/MatMul",
                                            domain=MICROSOFT)], product


def _patches_as_pointwise(index: GraphIndex, keep: set, shapes: dict) -> None:
    """A patch embedding (ViT): Conv of kernel b x b at stride b, no padding, over a per-tensor
    DequantizeLinear of an image of static shape in whole blocks, nncf's int8 weights Cast -> Mul(scale), its
    output not quantized -> SpaceToDepth(b) of the quantized image (ONNX's DCR order, channel (i b + j) C + c)
    -> DequantizeLinear -> the 1x1 Conv with the int8 weights rearranged alike, which _pointwise_as_matmul then
    runs as MatMulIntegerToFloat: the same products, summed exactly in integers (the float Conv rounded them;
    onnxruntime has no integer kernel for a Conv with a float output)."""
    from onnx import helper

    nodes = index.nodes
    convs = [n for n in nodes if n.op_type == "Conv" and _strided_like_kernel(n)]
    if not convs:
        return
    graph = _Graph(index, keep)
    for conv in convs:
        attributes = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
        mul, dq = graph.producer.get(conv.input[1]), graph.producer.get(conv.input[0])
        strides = list(attributes.get("strides", []))
        kernel = list(attributes.get("kernel_shape", strides))  # (else the weights' shape: checked below)
        if mul is None or mul.op_type != "Mul" or dq is None or dq.op_type != "DequantizeLinear" \
                or len(kernel) != 2 or kernel[0] != kernel[1] or kernel[0] < 2 or strides != kernel \
                or attributes.get("group", 1) != 1 or any(v != 1 for v in attributes.get("dilations", [])) \
                or any(v != 0 for v in attributes.get("pads", [])) \
                or attributes.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID") \
                or graph.only_reader(dq.output[0]) is not conv or conv.output[0] in keep \
                or _quantized_after(conv, graph.readers, graph.values):
            continue
        weights = _weight_chain(graph, mul)
        source = graph.producer.get(dq.input[0])
        shape = _static_shape(source.input[0], graph.producer, graph.values, shapes) \
            if source is not None and source.op_type == "QuantizeLinear" else None
        block = kernel[0]
        if weights is None or weights.reader is not conv or weights.tail or weights.zero.any() \
                or weights.q.dtype != np.int8 or weights.q.shape[2:] != (block, block) \
                or graph.values.get(dq.input[1], np.ones(2)).size != 1 or shape is None or len(shape) != 4 \
                or shape[2] % block or shape[3] % block:
            continue
        cast = graph.producer[mul.input[0] if mul.input[0] in graph.producer else mul.input[1]]
        if cast.op_type != "Cast" or graph.only_reader(cast.output[0]) is not mul \
                or graph.only_reader(mul.output[0]) is not conv:
            continue
        stem = conv.name or conv.output[0]
        q = graph.values[cast.input[0]]
        out_channels = q.shape[0]
        cast.input[0] = graph.add(f"{stem}/patch_weights", q.transpose(0, 2, 3, 1).reshape(out_channels, -1, 1, 1))
        moved = f"{stem}/space_to_depth"
        nodes.insert(nodes.index(dq), helper.make_node("SpaceToDepth", [dq.input[0]], [moved], name=moved,
                                                       blocksize=block))
        dq.input[0] = moved
        kept = [a for a in conv.attribute if a.name not in ("strides", "kernel_shape", "pads", "auto_pad")]
        del conv.attribute[:]
        conv.attribute.extend(kept + [helper.make_attribute("kernel_shape", [1, 1])])
        index.edited(rewired=(cast, dq))


def _strided_like_kernel(conv) -> bool:
    """Whether a Conv's attributes are a patch embedding's (_patches_as_pointwise checks the rest): a square
    kernel of 2 or more at its own stride, one group, no dilation, no padding."""
    from onnx import helper

    attributes = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    strides = list(attributes.get("strides", []))
    kernel = list(attributes.get("kernel_shape", strides))
    return len(kernel) == 2 and kernel[0] == kernel[1] and kernel[0] >= 2 and strides == kernel \
        and attributes.get("group", 1) == 1 and all(v == 1 for v in attributes.get("dilations", [])) \
        and all(v == 0 for v in attributes.get("pads", [])) \
        and attributes.get("auto_pad", b"NOTSET") in (b"NOTSET", b"VALID")
