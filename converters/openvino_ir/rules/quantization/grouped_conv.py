"""Narrow groups of a grouped integer convolution merged into wider ones (a prime group count padded with zero
groups first)."""
from __future__ import annotations

import numpy as np

from .graph import GraphIndex, NUMPY_CODES, _append, _dequantized_input, _group, _path_to_quantize, _quantized_after


#: a grouped integer convolution narrower than this many input channels per group merges neighbouring
#: groups into one of at least this width (_wider_groups). onnxruntime 1.32's QLinearConv runs each group as its
#: own im2col + GEMM, and MLAS's integer GEMM takes output columns in sixteens: regnet's groups of 8 channels
#: ran at a sixth of OpenVINO's rate. Measured (3x3, NHWC uint8, 1 thread): 208 channels in 26 groups at 14x14
#: 0.60x the time with groups of 16, 0.96x of 104, 1.44x dense; 440 in 55 at 7x7 0.66x with groups of 40;
#: 48 in 6 at 112 -> 56 0.62x with 16; groups of 16 merged further gain little (64 in 4 at 56x56: 0.93x with 32).
GROUP_WIDTH = 16
#: the most groups merged into one dense convolution where no other divisor of the group count reaches
#: GROUP_WIDTH (a prime count); more are first padded with groups of zero weights to a count that merges
#: (_padded_groups). 104 channels in 13 groups of 8 (regnet), 3x3 uint8 NHWC, 60 interleaved calls: dense 1.37x
#: (56 -> 28, stride 2) and 1.45x (28x28) the time of the 13 groups (an earlier run had measured 0.83x), padded
#: to 7 groups of 16 0.87x / 0.79x (Pad and Slice included); regnet end to end, paired: 13 groups vs dense
#: 0.94x, padded vs 13 groups 0.958x-0.983x. 2 to 4 groups still merge dense (not re-measured).
MAX_DENSE_GROUPS = 4


def _wider_groups(index: GraphIndex, keep: set) -> None:
    """DequantizeLinear(x) -> Conv(DequantizeLinear(int8 w, s_w, z_w), group g) -> QuantizeLinear with fewer
    than GROUP_WIDTH input channels per group (not depthwise) becomes the same Conv with m neighbouring groups
    merged into one (g / m groups, m the smallest divisor of g reaching the width; a prime g above
    MAX_DENSE_GROUPS first padded with groups of zero weights: _padded_groups): the weights block-diagonal,
    each output channel's weights where its own group's inputs are and its zero point elsewhere, which
    dequantizes to 0. The same integer products plus exact zeros: onnxruntime's QLinearConv gives the same
    bits, in fewer, wider GEMMs (GROUP_WIDTH)."""
    from onnx import helper

    nodes, initializers = index.nodes, index.initializers
    convs = [n for n in nodes if n.op_type == "Conv" and _group(n) != 1]
    if not convs:
        return
    values, producer, readers = index.lookups()
    for conv in convs:
        attributes = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
        groups = attributes.get("group", 1)
        weights_dq = producer.get(conv.input[1])
        if groups == 1 or weights_dq is None or weights_dq.op_type != "DequantizeLinear" \
                or _dequantized_input(conv.input[0], producer) is None \
                or len(readers.get(weights_dq.output[0], [])) != 1 or weights_dq.output[0] in keep \
                or not _quantized_after(conv, readers, values):
            continue
        q = values.get(weights_dq.input[0])
        scale = values.get(weights_dq.input[1])
        zero = values.get(weights_dq.input[2]) if len(weights_dq.input) > 2 else np.zeros((), np.int8)
        axis = next((a.i for a in weights_dq.attribute if a.name == "axis"), 1)
        if q is None or q.dtype not in (np.int8, np.uint8) or q.ndim < 3 or zero is None or scale is None \
                or q.shape[0] % groups or not 1 < q.shape[1] < GROUP_WIDTH \
                or any(v.size > 1 and (axis % q.ndim != 0 or v.shape != (q.shape[0],)) for v in (zero, scale)):
            continue
        merged = next(m for m in range(2, groups + 1) if groups % m == 0 and (m * q.shape[1] >= GROUP_WIDTH
                                                                             or m == groups))
        rewired = [weights_dq]
        if merged == groups > MAX_DENSE_GROUPS:  # (one dense convolution: `groups` times the products)
            padded = _padded_groups(nodes, initializers, conv, weights_dq, (q, scale, zero, groups),
                                    (values, producer, readers))
            if padded is None:
                continue
            q, zero, groups, merged, quantize = padded
            rewired += [conv, quantize]
        index.edited(rewired=rewired)  # (this loop keeps reading its snapshot)
        width, out_width, kernel = q.shape[1], q.shape[0] // groups, q.shape[2:]
        # [merged groups, m, outputs per group, m, inputs per group, kernel...]: group r of a merged one
        # reads input block r
        blocks = q.reshape((groups // merged, merged, out_width, 1, width) + kernel)
        zeros = np.broadcast_to(zero.reshape(-1), (q.shape[0],)).astype(q.dtype)
        wide = np.empty((groups // merged, merged, out_width, merged, width) + kernel, q.dtype)
        wide[...] = zeros.reshape((groups // merged, merged, out_width) + (1,) * (2 + len(kernel)))
        for block in range(merged):
            wide[:, block, :, block] = blocks[:, block, :, 0]
        wide = wide.reshape((q.shape[0], merged * width) + kernel)
        stem = conv.name or conv.output[0]
        name = f"{stem}/wider_groups_weights"
        initializers.append((name, NUMPY_CODES[q.dtype], wide))
        weights_dq.input[0] = name
        kept = [a for a in conv.attribute if a.name != "group"]
        del conv.attribute[:]
        conv.attribute.extend(kept + [helper.make_attribute("group", groups // merged)])


def _padded_groups(nodes: list, initializers: list, conv, weights_dq, found: tuple, lookups: tuple):
    """A grouped convolution of a prime group count (regnet's 13 groups of 8) given extra groups of zero
    weights, so that a divisor of the new count merges groups to GROUP_WIDTH: its uint8 input padded with
    zero-point channels (dequantized: 0) by a Pad, its per-channel scales, zero points and bias padded, and
    the padded output channels (bias 0, so 0, quantized to the zero point) sliced off after the
    QuantizeLinear that follows (through Relu / Clip only): the same integer products plus exact zeros.
    `found` is _wider_groups' (q, scale, zero point, groups), `lookups` GraphIndex.lookups(). Returns (q, zero,
    groups, merged) padded and the QuantizeLinear whose output it renamed, or None where the form does not fit
    (measured: MAX_DENSE_GROUPS)."""
    from onnx import helper

    (q, scale, zero, groups), (values, producer, readers) = found, lookups
    dq = producer.get(conv.input[0])
    width, out_width = q.shape[1], q.shape[0] // groups
    need = -(-GROUP_WIDTH // width)
    extra = next(k for k in range(1, need + 1) if (groups + k) % need == 0)
    chain = _path_to_quantize(conv, readers, values)  # (_wider_groups checked that there is one)
    bias = values.get(conv.input[2]) if len(conv.input) > 2 and conv.input[2] else None
    if dq is None or dq.op_type != "DequantizeLinear" or len(dq.input) < 3 or dq.input[2] not in values \
            or any(n.op_type == "Add" for n in chain) or q.ndim != 4 or any(a.name == "axis" for a in dq.attribute) \
            or (bias is None and len(conv.input) > 2 and conv.input[2]):
        return None
    stem = conv.name or conv.output[0]
    channels = q.shape[0] + extra * out_width

    def grown(array, fill):
        return np.concatenate([array, np.full((channels - array.shape[0],) + array.shape[1:], fill, array.dtype)])

    q = grown(q, 0)
    if zero.size > 1:
        zero = grown(zero.reshape(-1), 0)
        weights_dq.input[2] = _append(initializers, f"{stem}/padded_zero_point", zero)
    if scale.size > 1:
        weights_dq.input[1] = _append(initializers, f"{stem}/padded_scale", grown(scale.reshape(-1), 1))
    if bias is not None:
        conv.input[2] = _append(initializers, f"{stem}/padded_bias", grown(bias.reshape(-1), 0))
    pads = _append(initializers, f"{stem}/channel_pads", np.array([0, 0, 0, 0, 0, extra * width, 0, 0], np.int64))
    pad = helper.make_node("Pad", [dq.input[0], pads, dq.input[2]], [f"{stem}/padded_input"], name=f"{stem}/pad")
    padded_dq = helper.make_node("DequantizeLinear", [pad.output[0]] + list(dq.input[1:]), [f"{stem}/padded"],
                                 name=f"{stem}/padded_dq")
    conv.input[0] = padded_dq.output[0]
    nodes[nodes.index(conv):nodes.index(conv)] = [pad, padded_dq]
    quantize = chain[-1]
    result = quantize.output[0]
    quantize.output[0] = f"{result}/padded"
    limits = [_append(initializers, f"{stem}/slice_{k}", np.array([v], np.int64))
              for k, v in (("start", 0), ("end", channels - extra * out_width), ("axis", 1))]
    nodes.insert(nodes.index(quantize) + 1, helper.make_node("Slice", [quantize.output[0]] + limits, [result],
                                                             name=f"{stem}/unpad"))
    return q, zero, groups + extra, need, quantize
