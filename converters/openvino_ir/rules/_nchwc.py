"""Forms of the squeeze-excitation (SE) block that onnxruntime's NCHWc layout keeps.

onnxruntime's CPU optimizer (ORT_ENABLE_ALL) runs convolutions in channel blocks (NCHWc: 8 channels on AVX2,
16 on AVX-512) and keeps the blocked layout through the ops it has blocked kernels for: Conv (with a fused
Relu / Clip / Sigmoid / HardSigmoid / HardSwish ...), pools, GlobalAveragePool, Resize (nearest, integer
scales), Concat, and Add / Mul of equal shapes. Anything else gets a ReorderOutput before it and a ReorderInput
after it. An SE block, `x · gate(conv(conv(mean(x))))`, had both: ReduceMean over H, W (none blocked) and the
broadcasting Mul of the N×C×H×W map by the N×C×1×1 gate (not blocked), so each SE paid two layout reorders of
its full map. Written instead (all exact: the same values, NaN and inf included):
- ReduceMean over H, W (keep_dims) as GlobalAveragePool: the same mean up to summation order;
- the gate Resized (nearest) to the map's H×W, then a Mul of equal shapes: a copy of each gate value, the same
  products;
- an identity 1×1 depthwise Conv (weights 1, no bias: 1 · v = v, inf and NaN kept) before the gate's
  Sigmoid / HardSigmoid: the SE's second 1×1 convolution reads its hidden width (e.g. regnet's 12, 26, 52),
  which onnxruntime keeps blocked only in multiples of the block; the identity convolution (C channels,
  a multiple of 8 in the models measured) takes the gate into the blocked layout with the activation fused
  and costs ~1 µs on the 1×1 map.
Only where the map is a convolution's output (+ bias, + an activation onnxruntime fuses into it), as in the SE
blocks: after efficientnet's exact Swish, which onnxruntime runs in NCHW, the same forms measured 2% slower
(docs/performance.md).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

#: activations onnxruntime fuses into a (blocked) convolution
_FUSED_ACTIVATIONS = frozenset({"Relu", "Clamp", "HSwish", "HSigmoid", "Sigmoid", "Tanh"})
#: the ONNX activations of an SE gate (Sigmoid; HSigmoid is imported as HardSigmoid)
_GATES = ("Sigmoid", "HardSigmoid")


def _static_dims(partial_shape) -> list[int | None] | None:
    """The dims of a rank-4 shape (None for a dynamic one), None for any other rank."""
    if not partial_shape.rank.is_static or partial_shape.rank.get_length() != 4:
        return None
    return [d.get_length() if d.is_static else None for d in partial_shape]


def _blocked_f32(ctx, node, port: int) -> bool:
    """Input `port` is an f32 convolution's map [+ constant bias] [-> an activation onnxruntime fuses]: data
    onnxruntime computes in its blocked layout. Narrow on purpose: after an Add of two maps (a residual) it
    depends on both, and the forms pay only inside the blocked layout."""
    if ctx.elem(node, port) != TensorProto.FLOAT:
        return False
    producer = node.input_value(port).get_node()
    if producer.get_type_name() in _FUSED_ACTIVATIONS:
        producer = producer.input_value(0).get_node()
    if producer.get_type_name() == "Add":
        kinds = [_decompressed(producer.input_value(i).get_node()).get_type_name() for i in (0, 1)]
        if "Constant" not in kinds:
            return False
        producer = producer.input_value(1 - kinds.index("Constant")).get_node()
    return producer.get_type_name() in ("Convolution", "GroupConvolution")


def _decompressed(node):
    """A Convert's input (f16-compressed constants are Constant -> Convert), else the node itself."""
    return node.input_value(0).get_node() if node.get_type_name() == "Convert" else node


def global_average(ctx, node) -> bool:
    """ReduceMean over H and W (keep_dims) of a blocked f32 map as GlobalAveragePool; False, with nothing
    emitted, otherwise."""
    axes = ctx.const_value(node, 1)
    dims = _static_dims(node.get_input_partial_shape(0))
    if (axes is None or dims is None or not node.get_attributes().get("keep_dims", False)
            or sorted(int(a) % 4 for a in axes.reshape(-1)) != [2, 3] or not _blocked_f32(ctx, node, 0)):
        return False
    ctx.emit("GlobalAveragePool", [ctx.inp(node, 0)], [ctx.out(node)])
    return True


def channel_gate(ctx, node) -> bool:
    """Multiply of a blocked f32 map N×C×H×W (C, H, W static) by an SE gate N×C×1×1 computed by an emitted
    Sigmoid / HardSigmoid: the gate through an identity depthwise Conv and a nearest Resize to H×W, then a Mul
    of equal shapes (module docstring). False, with nothing emitted, where the pattern does not hold."""
    if node.get_attributes().get("auto_broadcast", "numpy") != "numpy":
        return False
    shapes = [_static_dims(node.get_input_partial_shape(i)) for i in (0, 1)]
    if None in shapes:
        return False
    for gate_port in (0, 1):
        gate, data = shapes[gate_port], shapes[1 - gate_port]
        channels, height, width = data[1:]
        if (None in (channels, height, width) or height * width == 1 or gate[1:] != [channels, 1, 1]
                or gate[0] != data[0] or not _blocked_f32(ctx, node, 1 - gate_port)):
            continue
        activation = _emitted_gate(ctx, ctx.inp(node, gate_port))
        if activation is None:
            continue
        _identity_before(ctx, activation, channels)
        scales = ctx.const(np.array([1, 1, height, width], np.float32), "gate_scales")
        spread = ctx.emit("Resize", [ctx.inp(node, gate_port), "", scales], mode="nearest",
                          coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        ctx.emit("Mul", [spread, ctx.inp(node, 1 - gate_port)], [ctx.out(node)])
        return True
    return False


def _emitted_gate(ctx, name: str, span: int = 16):
    """The ONNX Sigmoid / HardSigmoid among the last `span` emitted nodes that computes `name`, else None."""
    found = next((n for n in reversed(ctx.nodes[-span:]) if n.output and n.output[0] == name), None)
    return found if found is not None and found.op_type in _GATES and not found.domain else None


def _identity_before(ctx, activation, channels: int) -> None:
    """The activation reads its input through a 1×1 depthwise Conv with weights 1 (no bias), placed before it."""
    weights = ctx.const(np.ones((channels, 1, 1, 1), np.float32), "identity_weights")
    activation.input[0] = ctx.emit("Conv", [activation.input[0], weights], group=channels)
    conv = ctx.nodes.pop()
    # (by identity from the end, where the activation is: list.index compares messages from the start)
    ctx.nodes.insert(next(i for i in range(len(ctx.nodes) - 1, -1, -1) if ctx.nodes[i] is activation), conv)
