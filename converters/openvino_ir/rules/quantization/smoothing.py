"""nncf's smooth-quant Multiply after attention folded into the value projection's weight scales and bias."""
from __future__ import annotations

import numpy as np

from .graph import GraphIndex, _Graph, _NodeEdits


#: nncf's smooth-quant Multiply after attention, folded into the value projection's weight scales (and bias)
FOLD_SMOOTHING_INTO_VALUES = True


def _channel_layout(graph: _Graph, value: str, channels: int):
    """Follow `value`, the [..., C] output of the value projection, through the head split (Reshape ->
    Transpose), the probabilities @ V MatMul (V as its right input) and the head merge (Transpose -> Reshape)
    to a Mul: that Mul when channel c of its input is channel c of `value` (each step seen from its constant
    shape or perm), else None. Layout: the axes (counted from the end) holding the channel, major first."""
    from onnx import helper

    layout, rank = [(-1, channels)], None
    node = _live_only_reader(graph, value)
    while node is not None and node.op_type in ("Reshape", "Transpose", "MatMul"):
        if node.op_type == "MatMul":  # columns of V kept, its rows summed over, batch axes aligned from the end
            if node.input[1] != value or any(axis == -2 for axis, _ in layout):
                return None
        elif node.op_type == "Transpose":
            perm = list(helper.get_attribute_value(node.attribute[0]))
            if rank is None or len(perm) != rank:
                return None
            layout = [(perm.index(rank + axis) - rank, size) for axis, size in layout]
        else:
            if _attribute_is(node, "allowzero", 1):
                return None
            layout, rank = _reshaped_layout(layout, rank, graph.values.get(node.input[1]))
            if layout is None:
                return None
        value = node.output[0]
        node = _live_only_reader(graph, value)
    if node is None or node.op_type != "Mul" or node.input[0] != value or layout != [(-1, channels)]:
        return None
    smoothing = graph.values.get(node.input[1])
    if smoothing is None or rank is None or smoothing.ndim > rank:
        return None
    return node


def _live_only_reader(graph: _Graph, value: str):
    """graph.only_reader(value), a reader whose outputs nothing reads not counted: a node a rule left behind
    (the IR's head Transpose of V when rules/attention.py takes V before it), dropped by the import later."""
    readers = [n for n in graph.readers.get(value, [])
               if any(o in graph.keep or graph.readers.get(o) for o in n.output)]
    return readers[0] if len(readers) == 1 and value not in graph.keep else None


def _reshaped_layout(layout: list, rank, shape):
    """(layout, rank) after a Reshape to the constant `shape`: the channel axes must be trailing, in order, and
    end as trailing axes of the same total size; or the Reshape keeps every axis from the first channel axis on
    (0 or the channel axis's size; e.g. rules/attention.py's [1, L, heads, D] -> [L, 1, heads, D]).
    (None, None) when that cannot be seen from `shape`."""
    if shape is None:
        return None, None
    shape = [int(d) for d in shape.reshape(-1)]
    axes = [axis for axis, _ in layout]
    first = None if rank is None else rank + min(axes)
    if rank == len(shape) and all(d == 0 or any(d == size and rank + axis == i for axis, size in layout)
                                  for i, d in enumerate(shape[first:], first)):
        return layout, rank  # from the first channel axis on, every axis copied or the channel axis it holds:
        # the same trailing sizes, so (row-major order kept) each value keeps its place in them
    if axes != list(range(-len(axes), 0)):
        return None, None
    total = int(np.prod([size for _, size in layout]))
    tail = []
    for d in reversed(shape):
        if d <= 0:
            break
        tail.insert(0, d)
        if int(np.prod(tail)) == total:
            return [(i - len(tail), size) for i, size in enumerate(tail)], len(shape)
    if shape[-1] == -1 and rank is not None and all(d == 0 for d in shape[:-1]) \
            and len(shape) == rank - len(axes) + 1:
        return [(-1, total)], len(shape)  # leading axes copied, the channel axes merged into the inferred one
    return None, None


def _value_projection(graph: _Graph, matmul):
    """(DequantizeLinear of the weights, bias Add or None, projection output) of a MatMul by int8 weights
    [K, C] dequantized per column or per tensor, optionally followed by the Add of a constant [C] bias."""
    weights = graph.producer.get(matmul.input[1])
    if weights is None or weights.op_type != "DequantizeLinear" or len(weights.input) < 3 \
            or graph.only_reader(weights.output[0]) is not matmul \
            or weights.input[0] not in graph.values or graph.values[weights.input[0]].ndim != 2:
        return None
    channels = graph.values[weights.input[0]].shape[1]
    scale = graph.values.get(weights.input[1])
    if scale is None or scale.size not in (1, channels) or (scale.size > 1 and not _attribute_is(weights, "axis", 1)):
        return None
    output, add = matmul.output[0], graph.only_reader(matmul.output[0])
    if add is not None and add.op_type == "Add":
        bias = graph.values.get(add.input[1] if add.input[0] == output else add.input[0])
        if bias is not None and bias.size == channels and bias.shape[-1:] == (channels,):
            return weights, add, add.output[0]
    return weights, None, output


def _attribute_is(node, name: str, value) -> bool:
    return any(a.name == name and a.i == value for a in node.attribute)


def _smoothing_into_value_weights(index: GraphIndex, keep: set) -> None:
    """nncf's smooth-quant Multiply by a positive per-channel constant s after attention (the head merge of
    probabilities @ V, before the output projection's per-tensor quantizer) moves into the value projection:
    scaling a column of V scales the same channel of probabilities @ V, so the Mul goes and the weights'
    scale (and bias) of that channel are multiplied by s. The same products, one rounding apart (the scale
    times s rounded once): the QDQ form only. It cannot move forward into the output projection, whose input
    quantizer is per tensor (s would make it per channel on activations)."""
    if not FOLD_SMOOTHING_INTO_VALUES:
        return
    nodes = index.nodes
    graph, edits = _Graph(index, keep), _NodeEdits()
    for matmul in [n for n in nodes if n.op_type == "MatMul"]:
        found = _value_projection(graph, matmul)
        if found is None:
            continue
        weights, add, output = found
        channels = graph.values[weights.input[0]].shape[1]
        mul = _channel_layout(graph, output, channels)
        smoothing = None if mul is None else graph.values.get(mul.input[1])
        if smoothing is None or smoothing.size != channels or smoothing.shape[-1] != channels \
                or not np.all(np.isfinite(smoothing) & (smoothing > 0)):
            continue
        s = smoothing.astype(np.float32).reshape(channels)
        stem = mul.name or mul.output[0]
        scale = np.broadcast_to(graph.values[weights.input[1]].reshape(-1), (channels,)) * s
        zero = np.broadcast_to(graph.values[weights.input[2]].reshape(-1), (channels,))
        weights.input[1] = graph.add(f"{stem}/value_scale", scale.astype(np.float32))
        weights.input[2] = graph.add(f"{stem}/value_zero_point", np.ascontiguousarray(zero))
        if not _attribute_is(weights, "axis", 1):  # a per-tensor scale becomes per column
            from onnx import helper

            del weights.attribute[:]
            weights.attribute.append(helper.make_attribute("axis", 1))
        if add is not None:
            side = 1 if add.input[0] == matmul.output[0] else 0
            bias = graph.values[add.input[side]]
            add.input[side] = graph.add(f"{stem}/value_bias", (bias * s.reshape(bias.shape)).astype(np.float32))
        merge = graph.producer[mul.input[0]]
        merge.output[0] = mul.output[0]  # the head merge writes the Mul's output
        edits.remove(mul)
        edits.rewire(weights, merge, *([add] if add is not None else []))
    edits.made_in(index)
