"""FakeQuantize-1, the import rule: OpenVINO's reference formula (int8="exact") or QuantizeLinear ->
DequantizeLinear (int8="qdq", the default).

FakeQuantize-1 follows OpenVINO's reference (src/core/reference/.../fake_quantize.hpp), operation for
operation in the data's precision:

    x <= min(il, ih)  -> ol
    x >  max(il, ih)  -> oh
    otherwise         -> nearbyint((x - il) / (ih - il) * (levels - 1)) / (levels - 1) * (oh - ol) + ol

nearbyint rounds half to even, as ONNX Round does (the exact form, `int8="exact"`).

The default form (`int8="qdq"`) is QuantizeLinear -> DequantizeLinear wherever the limits map onto a scale and
zero point: input range == output range, input_high > input_low, the limits varying along one axis at most
(per-tensor or per-channel), levels <= 256 and the zero point -input_low / scale an integer in [0, 255]
(within ZERO_POINT_TOLERANCE). Activations become uint8 (zero point Z; Clip to the limits first when
levels < 256), constant weights an int8 initializer holding the integer levels computed with the reference
formula + DequantizeLinear, so onnxruntime's QDQ fusions run integer convolutions and matmuls;
dequantized_weights() (pipeline.py) puts nncf's own int8 weights and Conv biases into the shapes those fusions take
(moves the per-channel input scales of depthwise convolutions into their weights, runs a Concat / Split /
MaxPool of same-scale quantized data, and the reshapes after it, on the uint8 values, writes a 1x1
convolution whose output is not quantized, with its bias, as a channels-last com.microsoft
MatMulIntegerToFloat, a classifier head as a 3-D MatMul onnxruntime runs on integers, a strided stem
convolution of few channels on SpaceToDepth, and merges narrow groups of a grouped convolution, a prime
group count padded with zero groups first; nncf's smooth-quant Multiply after attention goes into the value
projection's weight scales); a quantized spatial mean of quantized data (squeeze-excitation)
is written GlobalAveragePool, which onnxruntime runs as QLinearGlobalAveragePool.
Both round half to even, but QuantizeLinear rounds x / scale + Z, the reference (x - il) / (ih - il) *
(levels - 1): on values within a few ulps of a rounding tie the two land one level apart (OpenVINO's CPU
plugin, with its own precomputed scale and shift, does the same; docs/performance.md measures it). A
FakeQuantize that does not map keeps the exact form, its reason in the conversion report's notes.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ..._registry import Unsupported, rule
from ..._types import constant_array, numpy_type


@rule("FakeQuantize", versions=(1,),
      onnx="QuantizeLinear, DequantizeLinear (default, where the limits map onto a scale and zero point; "
           "constant weights: int8 initializer + DequantizeLinear; a 1x1 convolution or patch embedding with "
           "a float output: com.microsoft MatMulIntegerToFloat); else Sub, Div, Mul, Round, Add, Min, Max, "
           "LessOrEqual, Greater, Where",
      notes="QDQ (int8='qdq', default): a level apart from the reference on near-ties of the rounding, as "
            "OpenVINO's CPU plugin; a FakeQuantize that does not map (levels > 256, output range != input "
            "range, zero point not an integer in [0, 255], limits varying along two axes, per-channel limits on "
            "activations, f16 data) keeps the "
            "exact form, the reason in the report's notes. int8='exact': OpenVINO's reference formula "
            "operation for operation (round half to even); limits broadcast numpy-style",
      refuses=("auto_broadcast pdpd: not ONNX broadcasting",))
def fake_quantize(ctx, node):
    attributes = node.get_attributes()
    mode = str(attributes.get("auto_broadcast", "numpy")).lower()
    if mode not in ("numpy", "none"):
        raise Unsupported(f"auto_broadcast={mode!r} (only numpy and none)")
    levels = int(attributes["levels"])
    if levels < 2:
        raise Unsupported(f"levels={levels} (needs at least 2)")
    if ctx.shared.int8 == "qdq":
        reason = _qdq(ctx, node, levels)
        if reason is None:
            return
        ctx.shared.notes.append(f"FakeQuantize {node.get_friendly_name()!r} kept in the exact form: {reason}")
    code = ctx.elem(node, 0)
    dtype = numpy_type(code)
    x, in_low, in_high, out_low, out_high = (ctx.inp(node, i) for i in range(5))
    steps = ctx.const(np.array(levels - 1, dtype), "levels_minus_one")
    scaled = ctx.emit("Mul", [ctx.emit("Div", [ctx.emit("Sub", [x, in_low]),
                                               ctx.emit("Sub", [in_high, in_low])]), steps])
    value = ctx.emit("Add", [ctx.emit("Mul", [ctx.emit("Div", [ctx.emit("Round", [scaled]), steps]),
                                              ctx.emit("Sub", [out_high, out_low])]), out_low])
    below = ctx.emit("LessOrEqual", [x, ctx.emit("Min", [in_low, in_high])])
    above = ctx.emit("Greater", [x, ctx.emit("Max", [in_low, in_high])])
    upper = ctx.emit("Where", [above, out_high, value])
    ctx.emit("Where", [below, out_low, upper], [ctx.out(node)])


#: |Z - round(Z)| allowed for the zero point Z = -input_low / scale (float32 limits written from an integer
#: zero point carry a few ulps of error; the grid moves by at most this fraction of a level)
ZERO_POINT_TOLERANCE = 1e-3


def _constant_input(node) -> np.ndarray | None:
    """Input 0 of `node` as float32 when it is a Constant (or a Convert of one: f16-compressed weights)."""
    producer = node.input_value(0).get_node()
    if producer.get_type_name() == "Convert" and producer.input_value(0).get_node().get_type_name() == "Constant":
        producer = producer.input_value(0).get_node()
        if not producer.get_output_element_type(0).is_real():
            return None
    if producer.get_type_name() != "Constant":
        return None
    return constant_array(producer).astype(np.float32)


def _qdq_parameters(ctx, node, levels: int):
    """(scale, zero point Z, axis or None, per-axis limits (il, ih)) of a FakeQuantize that maps onto QDQ, or
    the reason (str) it does not."""
    if ctx.elem(node, 0) != TensorProto.FLOAT:
        return "data is not float32 (QuantizeLinear of opset 18 takes float32)"
    if levels > 256:
        return f"levels={levels} do not fit 8 bits"
    rank = ctx.rank(node, 0)
    limits = [ctx.const_value(node, i) for i in range(1, 5)]
    if rank is None or any(v is None for v in limits):
        return "limits are not constants" if rank is not None else "data of dynamic rank"
    if any(v.ndim > rank for v in limits):
        return "limits of higher rank than the data"
    if all(v.size == 1 for v in limits):  # per tensor (most activations)
        return _per_tensor_qdq_parameters(*(np.float32(v.reshape(-1)[0]) for v in limits), levels)
    il, ih, ol, oh = (v.astype(np.float32).reshape((1,) * (rank - v.ndim) + v.shape) for v in limits)
    il, ih, ol, oh = np.broadcast_arrays(il, ih, ol, oh)
    if not (np.array_equal(il, ol) and np.array_equal(ih, oh)):
        return "output range differs from input range"
    if not np.all(ih > il):
        return "input_high <= input_low somewhere"
    varying = [d for d in range(rank) if il.shape[d] > 1]
    if len(varying) > 1:
        return f"limits vary along {len(varying)} axes (QDQ takes one)"
    axis = varying[0] if varying else None
    il, ih = il.reshape(-1), ih.reshape(-1)
    if axis is None:
        il, ih = il[:1], ih[:1]
    scale, zero, rounded = _grid(il, ih, levels)
    if np.any(np.abs(zero - rounded) > ZERO_POINT_TOLERANCE):
        worst = zero[np.argmax(np.abs(zero - rounded))]
        return f"zero point -input_low / scale = {worst:.4g} is not an integer"
    if np.any(rounded < 0) or np.any(rounded > 255):
        worst = rounded[np.argmax(np.maximum(-rounded, rounded - 255))]
        return f"zero point {worst:.0f} outside [0, 255] (the range does not hold 0)"
    return scale, rounded.astype(np.int64), axis, il, ih


def _grid(il, ih, levels: int):
    """(scale, zero point Z = -il / scale, Z rounded) of the levels between il and ih (float32 arrays or
    scalars: float32 arithmetic either way)."""
    scale = (ih - il) / np.float32(levels - 1)
    zero = -il / scale
    return scale, zero, np.round(zero)


def _per_tensor_qdq_parameters(il, ih, ol, oh, levels: int):
    """_qdq_parameters of one float32 value per limit: the same checks and float32 arithmetic on scalars (one
    numpy call on a 1-element array costs more than the rest of the FakeQuantize's conversion), the results
    as 1-element arrays; axis None."""
    if not (il == ol and ih == oh):
        return "output range differs from input range"
    if not ih > il:
        return "input_high <= input_low somewhere"
    scale, zero, rounded = _grid(il, ih, levels)
    if abs(zero - rounded) > ZERO_POINT_TOLERANCE:
        return f"zero point -input_low / scale = {zero:.4g} is not an integer"
    if rounded < 0 or rounded > 255:
        return f"zero point {rounded:.0f} outside [0, 255] (the range does not hold 0)"
    return np.array([scale]), np.array([rounded]).astype(np.int64), None, np.array([il]), np.array([ih])


def _qdq(ctx, node, levels: int) -> str | None:
    """Emit the QDQ form of FakeQuantize `node` and return None, or return why it does not map."""
    found = _qdq_parameters(ctx, node, levels)
    if isinstance(found, str):
        return found
    scale, zero, axis, il, ih = found
    per_axis = {} if axis is None else {"axis": axis}
    scale_name = ctx.const(scale if axis is not None else scale.reshape(()), "scale")
    weights = _constant_input(node)
    if weights is not None:
        # the integer levels k in [0, levels - 1] by the reference formula (numpy: round half to even)
        shape = [1] * weights.ndim
        if axis is not None:
            shape[axis] = -1
        low, high = il.reshape(shape), ih.reshape(shape)
        k = np.round((weights - low) / (high - low) * np.float32(levels - 1))
        k = np.where(weights <= low, 0, np.where(weights > high, levels - 1, k))
        z = zero.reshape(shape)
        # int8 with zero point 0 when the levels fit (symmetric weights), else zero point Z - 128
        # (value = (k - Z) * scale = (q - zero point) * scale)
        if np.all(levels - 1 - zero <= 127) and np.all(zero <= 128):
            q, point = k - z, np.zeros_like(zero)
        else:
            q, point = k - 128, zero - 128
        point = point.astype(np.int8)
        ctx.emit("DequantizeLinear", [ctx.const(q.astype(np.int8), "int8_weights"), scale_name,
                                      ctx.const(point if axis is not None else point.reshape(()), "zero_point")],
                 [ctx.out(node)], **per_axis)
        return None
    if levels < 256 and axis is not None:
        return f"levels={levels} with per-channel activation limits (Clip takes one range)"
    x = ctx.inp(node, 0)
    if levels < 256:  # QuantizeLinear clamps to [0, 255] only: clamp to the limits first
        x = ctx.emit("Clip", [x, ctx.const(il.reshape(()), "low"), ctx.const(ih.reshape(()), "high")])
    point = ctx.const(zero.astype(np.uint8) if axis is not None else zero.astype(np.uint8).reshape(()), "zero_point")
    if axis is None:
        _spatial_mean_as_global_pool(ctx, node)
    quantized = ctx.emit("QuantizeLinear", [x, scale_name, point], **per_axis)
    ctx.emit("DequantizeLinear", [quantized, scale_name, point], [ctx.out(node)], **per_axis)
    return None


def _spatial_mean_as_global_pool(ctx, node) -> None:
    """A FakeQuantize (per tensor) of ReduceMean(x, axes {2, 3}, keep_dims) of a 4-D x that is itself
    quantized per tensor (a squeeze-excitation block's average pool): the ReduceMean already emitted becomes
    GlobalAveragePool, the same mean, which onnxruntime fuses with the DequantizeLinear before it and the
    QuantizeLinear after it into QLinearGlobalAveragePool (integer sums; DequantizeLinear -> ReduceMean ->
    QuantizeLinear stays three float ops on the whole tensor)."""
    mean = node.input_value(0).get_node()
    if mean.get_type_name() != "ReduceMean" or ctx.rank(mean, 0) != 4 \
            or not mean.get_attributes().get("keep_dims", False) or len(node.input_value(0).get_target_inputs()) != 1:
        return
    axes = ctx.const_value(mean, 1)
    if axes is None or sorted(int(a) % 4 for a in axes.reshape(-1)) != [2, 3]:
        return
    name = ctx.value(mean.output(0))
    index = next((i for i in range(len(ctx.nodes) - 1, -1, -1) if name in ctx.nodes[i].output), None)
    if index is None or ctx.nodes[index].op_type != "ReduceMean":
        return
    data = ctx.nodes[index].input[0]
    dq = next((n for n in reversed(ctx.nodes[:index]) if data in n.output), None)
    if dq is None or dq.op_type != "DequantizeLinear" or any(a.name == "axis" for a in dq.attribute):
        return
    from onnx import helper

    ctx.nodes[index] = helper.make_node("GlobalAveragePool", [data], [name], name=ctx.nodes[index].name)
