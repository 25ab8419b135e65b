"""Concat / Split / MaxPool (and the reshapes after them) of same-scale quantized data run on the uint8 values."""
from __future__ import annotations

from .graph import GraphIndex, _NodeEdits


#: data movement run on the quantized values by _integer_data_movement: each output value is one of the input
#: values (or their maximum), so it commutes with a per-tensor DequantizeLinear (an increasing map). The
#: single-input reshapes only continue a chain a Concat / Split / MaxPool started (onnxruntime's own QDQ
#: propagation crosses them; transformers' attention reshapes stay as the FakeQuantize rule wrote them)
_INTEGER_MOVEMENT = ("Concat", "Split", "MaxPool")
_INTEGER_RESHAPES = ("Reshape", "Transpose", "Squeeze", "Unsqueeze")


def _integer_data_movement(index: GraphIndex, keep: set) -> None:
    """Concat / Split / MaxPool / Reshape / Transpose / Squeeze / Unsqueeze whose data inputs are all
    per-tensor DequantizeLinear outputs with the same scale and zero point (nncf unifies the scales of a
    Concat's inputs) run on the quantized values, a DequantizeLinear after each output: the same values, and
    the convolutions after an inception Concat or a channel shuffle (Concat -> Reshape -> Transpose -> Reshape
    -> Split) read a DequantizeLinear, which onnxruntime fuses into integer kernels (its own QDQ propagation
    crosses single-input ops only)."""
    from onnx import helper

    nodes = index.nodes
    if not any(n.op_type in _INTEGER_MOVEMENT for n in nodes):
        return  # (the reshapes only continue a chain one of these started)
    values, producer, _ = index.lookups()

    def parameters(dq):
        if dq is None or dq.op_type != "DequantizeLinear" or len(dq.input) < 3 \
                or any(a.name in ("axis", "block_size") for a in dq.attribute):
            return None
        scale, zero = values.get(dq.input[1]), values.get(dq.input[2])
        if scale is None or zero is None or scale.size != 1 or zero.size != 1 or not scale.reshape(-1)[0] > 0:
            return None
        return float(scale.reshape(-1)[0]), int(zero.reshape(-1)[0]), zero.dtype

    ours, edits = set(), _NodeEdits()  # (the DequantizeLinear nodes written here)
    for node in list(nodes):
        if any(o in keep for o in node.output) or not (
                node.op_type in _INTEGER_MOVEMENT
                or node.op_type in _INTEGER_RESHAPES and id(producer.get(node.input[0])) in ours):
            continue
        if node.op_type == "MaxPool" and (len(node.output) != 1 or any(
                a.name == "kernel_shape" and len(a.ints) != 2 for a in node.attribute)):
            continue  # (onnxruntime's 8-bit MaxPool is 2-D, without indices)
        data = list(node.input) if node.op_type == "Concat" else node.input[:1]
        sources = [producer.get(name) for name in data]
        found = [parameters(dq) for dq in sources]
        if not found or None in found or len(set(found)) != 1:
            continue
        dq = sources[0]
        for port, name in enumerate(node.input):
            if name in data:
                node.input[port] = producer[name].input[0]
        placed = []
        for port, name in enumerate(node.output):
            if not name:
                continue
            node.output[port] = f"{name}/quantized"
            placed.append(helper.make_node("DequantizeLinear", [node.output[port], dq.input[1], dq.input[2]],
                                           [name], name=f"{name}/DequantizeLinear"))
            producer[name] = placed[-1]
            ours.add(id(placed[-1]))
        edits.replace(node, [node] + placed)  # (its DequantizeLinear nodes right after it)
        edits.rewire(node)
    edits.made_in(index)
