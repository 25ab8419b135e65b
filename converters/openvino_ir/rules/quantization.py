"""INT8 and compressed models: FakeQuantize-1, and weight decompression subgraphs.

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
dequantized_weights() below puts nncf's own int8 weights and Conv biases into the shapes those fusions take
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

Compressed weights (nncf.compress_weights, OpenVINO's compress_to_fp16): Constant(u8/i8/u4/i4) -> Convert(f16)
-> [Subtract(Convert(zero point))] -> Multiply(f16 scale) -> [Reshape] -> Convert(f32). OpenVINO's plugins
decompress such constant subgraphs in f32 (measured: the CPU plugin's result is bit-identical to computing the
chain in f32, and differs by up to 1 f16 ulp of each weight from computing it in f16 as the types say). So
when a Convert f16 -> f32 reads a subgraph made of Constants only, that subgraph is emitted again in f32
(the f16 nodes become dead and are pruned). u4/i4 constants are carried unpacked as uint8/int8 (exact).

Weights stay compressed: a Multiply(Convert(W) [- Convert(ZP)], scale) of Constants (W, ZP u8/i8/u4/i4 of one
type, scale f16/f32) becomes one DequantizeLinear computing (W - ZP) * scale in f32 (ZP and scale read exactly,
one rounding: the value the CPU plugin computes). Scale broadcast over every axis of W: per tensor; over all
but one axis: per axis (opset 13); over exactly one axis: blocked along it (nncf's group-wise [N, K/g, g] weight
with [N, K/g, 1] scales: axis 2, block_size g). Blocked quantization and the 4-bit types need DequantizeLinear-21,
so such a model imports default-domain opset 21 (MIN_OPSET_4BIT); u4/i4 are then written as ONNX UINT4/INT4,
OpenVINO's packed bytes as they are (both put element 2k in the low nibble of byte k).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ...model_io import word_transposable
from .._registry import Unsupported, rule
from .._types import Nibbles, constant_array, numpy_type

#: DequantizeLinear-21: block_size and INT4/UINT4
MIN_OPSET_4BIT = 21
#: Ops whose meaning changes between opsets 18 and 21 (the others only gain types, or attributes whose
#: default is the old behaviour): a model holding one cannot move to opset 21 for 4-bit weights.
CHANGED_BY_OPSET_21 = {"DFT": "DFT-20 takes axis as an input", "GridSample": "GridSample-20 renames modes",
                       "GroupNormalization": "GroupNormalization-21 scales per channel"}


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


# -- weight decompression ---------------------------------------------------------------------------------
_DECOMPRESSION_OPS = {"Constant", "Convert", "Subtract", "Multiply", "Reshape", "Transpose", "Unsqueeze"}


def _constant_only(output, depth: int = 0) -> tuple[bool, bool]:
    """(is a subgraph of Constants through _DECOMPRESSION_OPS, contains an integer -> float Convert)."""
    node = output.get_node()
    if depth > 12 or node.get_type_name() not in _DECOMPRESSION_OPS:
        return False, False
    if node.get_type_name() == "Constant":
        return True, False
    integer_convert = (node.get_type_name() == "Convert"
                       and not node.get_input_element_type(0).is_real())
    for index in range(node.get_input_size()):
        ok, found = _constant_only(node.input_value(index), depth + 1)
        if not ok:
            return False, False
        integer_convert = integer_convert or found
    return True, integer_convert


def _integer_constant(output):
    """The Constant under Convert(Constant integer), else None."""
    node = output.get_node()
    if node.get_type_name() != "Convert":
        return None
    constant = node.input_value(0).get_node()
    if constant.get_type_name() != "Constant" or constant.get_element_type().is_real():
        return None
    return constant


_QUANTIZED = {"u8": TensorProto.UINT8, "i8": TensorProto.INT8, "u4": TensorProto.UINT4, "i4": TensorProto.INT4}


def _dequantize(ctx, multiply, eight_bit: bool = True) -> str | None:
    """DequantizeLinear for Multiply(Convert(W) [- Convert(ZP)], scale) of Constants, or None when the
    subgraph is not of that form (the module doc)."""
    for data_index in (0, 1):
        data, scale_node = multiply.input_value(data_index).get_node(), multiply.input_value(1 - data_index).get_node()
        if scale_node.get_type_name() != "Constant" or not scale_node.get_element_type().is_real():
            continue
        zero_point = None
        if data.get_type_name() == "Subtract":
            weight, zero_point = (_integer_constant(data.input_value(i)) for i in (0, 1))
            if zero_point is None or zero_point.get_element_type() != (weight and weight.get_element_type()):
                continue
        else:
            weight = _integer_constant(multiply.input_value(data_index))
        if weight is None or weight.get_element_type().get_type_name() not in _QUANTIZED:
            continue
        if not eight_bit and weight.get_element_type().get_type_name() in ("u8", "i8"):
            return None
        return _emit_dequantize(ctx, weight, zero_point, constant_array(scale_node))
    return None


def _emit_dequantize(ctx, weight, zero_point, scale: np.ndarray) -> str | None:
    shape = tuple(weight.get_output_shape(0))
    if scale.ndim > len(shape):
        return None
    scale = scale.reshape((1,) * (len(shape) - scale.ndim) + scale.shape).astype(np.float32)
    if any(s not in (1, w) for s, w in zip(scale.shape, shape)):
        return None
    kept = [d for d, (s, w) in enumerate(zip(scale.shape, shape)) if s == w and w != 1]
    spread = [d for d, (s, w) in enumerate(zip(scale.shape, shape)) if s == 1 and w != 1]
    if not spread:
        return None  # a scale per element: not a quantization
    attributes = {}
    if not kept:
        scale_shape = ()
    elif len(kept) == 1:
        scale_shape, attributes["axis"] = (shape[kept[0]],), kept[0]
    elif len(spread) == 1:
        scale_shape = scale.shape
        attributes.update(axis=spread[0], block_size=shape[spread[0]])
    else:
        return None
    type_name = weight.get_element_type().get_type_name()
    code = _QUANTIZED[type_name]
    four_bit = type_name in ("u4", "i4")
    inputs = [_quantized_const(ctx, weight, code), ctx.const(scale.reshape(scale_shape), "scale")]
    if zero_point is not None:
        point = np.broadcast_to(constant_array(zero_point), scale.shape).reshape(scale_shape)
        inputs.append(_quantized_const(ctx, point, code) if four_bit else ctx.const(np.ascontiguousarray(point),
                                                                                   "zero_point"))
    dequantized = ctx.emit("DequantizeLinear", inputs, **attributes)
    if four_bit or "block_size" in attributes:
        ctx.shared.opset_of[dequantized] = MIN_OPSET_4BIT
    return dequantized


def _quantized_const(ctx, source, code: int) -> str:
    """An initializer of `source` (a u8/i8 Constant, a u4/i4 Constant kept packed, or unpacked 4-bit values)."""
    name = ctx.temp("weight")
    if isinstance(source, np.ndarray):
        ctx.initializers.append((name, code, Nibbles.pack(source)))
    elif code in (TensorProto.UINT4, TensorProto.INT4):
        ctx.initializers.append((name, code, Nibbles(np.asarray(source.get_data()).view(np.uint8).reshape(-1),
                                                     tuple(source.get_output_shape(0)))))
    else:
        return ctx.const(constant_array(source), "weight", name=name)
    return name


def _emit_f32(ctx, output, eight_bit: bool = True) -> str:
    """Re-emit a constant decompression subgraph computing in f32 (see the module doc), as DequantizeLinear
    where it has that form (8-bit weights only when `eight_bit`)."""
    node = output.get_node()
    kind = node.get_type_name()
    if kind == "Multiply":
        dequantized = _dequantize(ctx, node, eight_bit)
        if dequantized is not None:
            return dequantized
    if kind == "Constant":
        value = constant_array(node)
        if value.dtype == np.float16:
            return ctx.const(value.astype(np.float32), "f32")
        return ctx.value(output)  # an integer constant, already an initializer (u4/i4 unpacked)
    inputs = [_emit_f32(ctx, node.input_value(i), eight_bit) if i == 0 or kind in ("Subtract", "Multiply")
              else None for i in range(node.get_input_size())]
    if kind == "Convert":
        return ctx.emit("Cast", [inputs[0]], to=TensorProto.FLOAT)
    if kind in ("Subtract", "Multiply"):
        if str(node.get_attributes().get("auto_broadcast", "numpy")).lower() not in ("numpy", "none"):
            raise Unsupported("decompression with auto_broadcast pdpd")
        return ctx.emit("Sub" if kind == "Subtract" else "Mul", inputs)
    second = ctx.const(constant_array(node.input_value(1).get_node()).astype(np.int64), "i64")
    if kind == "Reshape":
        special_zero = bool(node.get_attributes().get("special_zero", False))
        return ctx.emit("Reshape", [inputs[0], second], allowzero=0 if special_zero else 1)
    if kind == "Transpose":
        perm = [int(v) for v in constant_array(node.input_value(1).get_node()).reshape(-1)]
        return ctx.emit("Transpose", [inputs[0]], perm=perm)
    return ctx.emit("Unsqueeze", [inputs[0], ctx.emit("Reshape", [second, ctx.const(np.array([-1], np.int64),
                                                                                         "flat")])])


def decompressed_in_f32(ctx, node) -> bool:
    """For Convert f16 -> f32: emit a constant decompression subgraph in f32 and return True, else False."""
    if (node.get_input_element_type(0).get_type_name(), node.get_output_element_type(0).get_type_name()) \
            != ("f16", "f32"):
        return False
    ok, integer_convert = _constant_only(node.input_value(0))
    if not (ok and integer_convert):
        return False
    # An 8-bit weight read by a MatMul stays a Cast/Sub/Mul chain: onnxruntime folds it into an f32 weight at
    # load (exact, f32 speed), while DequantizeLinear + MatMul is fused into a MatMulNBits that quantizes the
    # activations (its default accuracy level 4) and 8-bit MatMulNBits at level 0 is 20-60x slower than f32.
    to_matmul = any(t.get_node().get_type_name() == "MatMul" for t in node.output(0).get_target_inputs())
    ctx.emit("Identity", [_emit_f32(ctx, node.input_value(0), not to_matmul)], [ctx.out(node)])
    return True


# -- MatMul with compressed weights -> com.microsoft MatMulNBits -----------------------------------------
#: MatMulNBits block sizes (a power of 2, at least 16); a per-channel scale is repeated over blocks of the
#: largest that divides K
_BLOCKS = (256, 128, 64, 32, 16)
MICROSOFT = "com.microsoft"


def _compressed_weight(output):
    """(weight Constant, zero point Constant or None, scale [N, blocks] f32, block size) when `output` is
    Convert(f16 -> f32)([Reshape to [N, K]] Multiply(Convert(W) [- Convert(ZP)], scale)) with W [N, K]
    and one scale per row, or W [N, K/g, g] and scale [N, K/g, 1]; else None."""
    convert = output.get_node()
    if convert.get_type_name() != "Convert" or not _constant_only(output)[1]:
        return None
    node = convert.input_value(0).get_node()
    if node.get_type_name() == "Reshape":
        node = node.input_value(0).get_node()
    if node.get_type_name() != "Multiply" or not output.get_partial_shape().is_static:
        return None
    n, k = (int(d) for d in output.get_shape()) if len(output.get_shape()) == 2 else (0, 0)
    for data_index in (0, 1):
        data, scale_node = node.input_value(data_index).get_node(), node.input_value(1 - data_index).get_node()
        if scale_node.get_type_name() != "Constant":
            continue
        zero_point = None
        if data.get_type_name() == "Subtract":
            weight, zero_point = (_integer_constant(data.input_value(i)) for i in (0, 1))
            if zero_point is None or weight is None or zero_point.get_element_type() != weight.get_element_type():
                continue
        else:
            weight = _integer_constant(node.input_value(data_index))
        if weight is None or weight.get_element_type().get_type_name() not in _QUANTIZED or not n:
            continue
        shape = tuple(weight.get_output_shape(0))
        scale = constant_array(scale_node).astype(np.float32)
        if shape == (n, k) and scale.shape in ((n, 1), (n,)):
            block = next((b for b in _BLOCKS if k % b == 0), None)
            if block is None:
                return None
            return weight, zero_point, np.repeat(scale.reshape(n, 1), k // block, axis=1), block
        if len(shape) == 3 and shape[0] == n and shape[1] * shape[2] == k and scale.shape == shape[:2] + (1,) \
                and shape[2] in _BLOCKS:
            return weight, zero_point, scale.reshape(n, shape[1]), shape[2]
    return None


def _nbits_arrays(found) -> tuple[list[np.ndarray], dict] | None:
    """([B uint8 [N, blocks, block/2], scales f32 [N * blocks], zero points uint8 [N * ceil(blocks/2)]], shape
    facts) of a 4-bit compressed weight (_compressed_weight); None for 8-bit weights."""
    weight, zero_point, scale, block = found
    type_name = weight.get_element_type().get_type_name()
    if type_name not in ("u4", "i4"):  # 8-bit MatMulNBits at accuracy level 0 is a slow path (decompressed_in_f32)
        return None
    n, blocks = scale.shape
    facts = {"n": n, "k": blocks * block, "blocks": blocks, "block": block}
    shift = 8 if type_name == "i4" else 0  # signed: stored unsigned, + 8 (the default zero point is 8)
    if not shift:  # u4: OpenVINO's bytes are B as they are (row-major, low nibble first)
        packed = np.asarray(weight.get_data()).view(np.uint8).reshape(n, blocks, block // 2)
    else:
        values = (constant_array(weight).astype(np.int16) + shift).astype(np.uint8)
        packed = Nibbles.pack(values).packed.reshape(n, blocks, block // 2)
    arrays = [packed, scale.reshape(-1)]
    if zero_point is not None:  # [N, ceil(blocks / 2)]: each row packed on its own, low nibble first
        points = (np.broadcast_to(constant_array(zero_point).reshape(n, -1), (n, blocks)).astype(np.int16)
                  + shift).astype(np.uint8)
        points = np.concatenate([points, np.zeros((n, blocks % 2), np.uint8)], axis=1)
        arrays.append(np.ascontiguousarray(points[:, 0::2] | (points[:, 1::2] << 4)).reshape(-1))
    return arrays, facts


def _nbits_inputs(ctx, found) -> tuple[list[str], dict] | None:
    """Initializers of _nbits_arrays, written once per weight (a tied embedding reuses lm_head's)."""
    key = found[0].get_name()
    if key not in ctx.shared.packed:
        computed = _nbits_arrays(found)
        if computed is None:
            return None
        arrays, facts = computed
        names = [ctx.const(a, hint) for a, hint in zip(arrays, ("weight_nbits", "scales", "zero_points"))]
        ctx.shared.packed[key] = (names, facts)
    return ctx.shared.packed[key]


def matmul_nbits(ctx, node) -> bool:
    """MatMul(x f32, decompressed 4-bit weight, transpose_b) as one MatMulNBits (accuracy_level 0: the weight
    is dequantized exactly, in f32, and no activation is quantized) and True; else False."""
    attributes = node.get_attributes()
    if attributes.get("transpose_a") or not attributes.get("transpose_b") \
            or node.get_input_element_type(0).get_type_name() != "f32":
        return False
    found = _compressed_weight(node.input_value(1))
    packed = _nbits_inputs(ctx, found) if found is not None else None
    if packed is None:
        return False
    inputs, facts = packed
    ctx.emit("MatMulNBits", [ctx.inp(node, 0)] + inputs, [ctx.out(node)], domain=MICROSOFT, K=facts["k"],
             N=facts["n"], bits=4, block_size=facts["block"], accuracy_level=0)
    return True


def gather_block_quantized(ctx, node, axis: int) -> bool:
    """Gather(decompressed 4-bit weight [N, K], indices, axis 0) (an embedding) as one GatherBlockQuantized
    on the same packed data as MatMulNBits (exact dequantization of the gathered rows) and True; else False."""
    found = _compressed_weight(node.input_value(0)) if axis == 0 else None
    computed = _nbits_arrays(found) if found is not None else None
    if computed is None:
        return False
    arrays, facts = computed
    n, blocks = facts["n"], facts["blocks"]
    shapes = ([n, facts["k"] // 2], [n, blocks], [n, (blocks + 1) // 2])
    if any(t.get_node().get_type_name() == "MatMul" for t in node.input_value(0).get_target_inputs()):
        # tied to a MatMul (lm_head): Reshapes of MatMulNBits' inputs, the weight is written once
        names, _ = _nbits_inputs(ctx, found)
        inputs = [ctx.emit("Reshape", [name, ctx.const(np.array(shape, np.int64), "shape")])
                  for name, shape in zip(names, shapes)]
    else:  # constants (OpenVINO's ONNX reader wants GatherBlockQuantized's data constant)
        inputs = [ctx.const(a.reshape(shape), "packed") for a, shape in zip(arrays, shapes)]
    ctx.emit("GatherBlockQuantized", [inputs[0], ctx.int64_or_int32(node, 1)] + inputs[1:], [ctx.out(node)],
             domain=MICROSOFT, gather_axis=0, quantize_axis=1, block_size=facts["block"], bits=4)
    return True


# -- QDQ form: dequantized weights -----------------------------------------------------------------------
#: ONNX ops whose weight input onnxruntime's QDQ fusions take from a DequantizeLinear
_WEIGHTED = {"Conv": 1, "ConvTranspose": 1, "MatMul": 1, "Gemm": 1}


def _per_axis(full: np.ndarray) -> tuple[np.ndarray, int | None] | None:
    """(values, axis) when `full` varies along one axis at most (axis None: one value), else None.

    `full` is typically a scale broadcast to the weight's shape (np.broadcast_to, then transposed or
    reshaped): an axis of stride 0 repeats one value, so only the others are compared, on the array
    without the repeats (the scale's own size, no full-size temporary)."""
    repeated = [d for d in range(full.ndim) if full.strides[d] == 0 or full.shape[d] <= 1]
    small = full[tuple(slice(0, 1) if d in repeated else slice(None) for d in range(full.ndim))]
    if small.dtype.kind == "f" and np.isnan(small).any():  # NaN != NaN: every axis compared as it is
        repeated, small = [d for d in range(full.ndim) if full.shape[d] <= 1], full
    varying = [d for d in range(full.ndim) if d not in repeated
               and not np.all(small == small.take([0], axis=d))]
    if len(varying) > 1:
        return None
    if not varying:
        return small.reshape(-1)[:1], None
    index = [0] * full.ndim
    index[varying[0]] = slice(None)
    return full[tuple(index)], varying[0]


#: reductions whose output rank _rank derives (axes as a constant input, keepdims 0)
_REDUCE = ("ReduceMean", "ReduceMax")


def _rank(name: str, producer: dict, values: dict) -> int | None:
    """Rank of ONNX value `name` when the nodes before it tell (a Reshape to a shape of known length), else
    None."""
    for _ in range(8):
        node = producer.get(name)
        if node is None:
            return None
        if node.op_type == "Reshape":
            return _length(node.input[1], producer, values)
        if node.op_type in ("Conv", "MaxPool") and any(a.name == "strides" for a in node.attribute):
            return 2 + len(next(a.ints for a in node.attribute if a.name == "strides"))
        if node.op_type in _REDUCE and len(node.input) > 1 and node.input[1] in values \
                and any(a.name == "keepdims" and a.i == 0 for a in node.attribute):
            rank = _rank(node.input[0], producer, values)  # a global pool written as a mean: [N, C]
            return None if rank is None else rank - int(values[node.input[1]].size)
        if node.op_type not in ("QuantizeLinear", "DequantizeLinear", "Relu", "Clip"):
            return None
        name = node.input[0]
    return None


def _length(name: str, producer: dict, values: dict) -> int | None:
    """Number of elements of a 1-D shape tensor made of constants, Gathers at constant indices and their
    Concat (a flatten's computed shape [batch, -1]), else None."""
    if name in values:
        return int(values[name].size)
    node = producer.get(name)
    if node is not None and node.op_type == "Gather" and node.input[1] in values:
        return int(values[node.input[1]].size)
    if node is not None and node.op_type == "Concat":
        lengths = [_length(i, producer, values) for i in node.input]
        return None if None in lengths else sum(lengths)
    return None


def _quantized_after(conv, readers: dict, values: dict) -> bool:
    """Whether `conv`'s output reaches a QuantizeLinear through at most a bias Add and then Relu / Clip (ReLU6)
    nodes, each the only reader of the one before: the path onnxruntime's WeightBiasQuantization and QDQ Conv
    fusion take (QLinearConv once the bias is in the Conv; a Relu or a Clip the quantized range lies within is
    absorbed by the QuantizeLinear). Float weights on such a path onnxruntime re-quantizes per tensor."""
    return _path_to_quantize(conv, readers, values) is not None


def _path_to_quantize(conv, readers: dict, values: dict) -> list | None:
    """The nodes of _quantized_after's path from `conv` to its QuantizeLinear (the last of them), else None."""
    path, name = [], conv.output[0]
    while True:
        found = readers.get(name, [])
        if len(found) != 1:
            return None
        node = found[0]
        path.append(node)
        if node.op_type == "QuantizeLinear":
            return path
        bias = len(path) == 1 and node.op_type == "Add" and any(i in values for i in node.input)
        if not bias and node.op_type not in ("Relu", "Clip"):
            return None
        if node.op_type == "Clip" and any(i and i not in values for i in node.input[1:]):
            return None
        name = node.output[0]


#: ops onnxruntime's QDQ propagation moves a DequantizeLinear across (they only select or move values, so the
#: integer data gives the same result): a Conv after DequantizeLinear -> MaxPool reads quantized data too
_DATA_MOVEMENT = ("MaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze")


def _dequantized_input(name: str, producer: dict):
    """The DequantizeLinear whose output reaches `name` through data movement only (_DATA_MOVEMENT), or None."""
    node = producer.get(name)
    while node is not None and node.op_type in _DATA_MOVEMENT and len(node.output) == 1:
        node = producer.get(node.input[0])
    return node if node is not None and node.op_type == "DequantizeLinear" else None


def _outer_reads(nodes: list) -> set:
    """Names read by the subgraphs (If branches, Loop bodies) of `nodes`: values the rewrites must keep."""
    found = set()
    pending = [a for n in nodes for a in n.attribute]
    while pending:
        attribute = pending.pop()
        for graph in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
            for node in graph.node:
                found.update(node.input)
                pending.extend(node.attribute)
    return found


def _index(nodes: list, initializers: list) -> tuple[dict, dict, dict]:
    """The graph's constants by name, the node producing each value and the nodes reading it."""
    values = {name: array for name, _, array in initializers}
    # (a slice of a repeated field is one list made in protobuf's C code, where iterating the field makes a
    # call per name; with get / append rather than setdefault: 0.6x this function's time)
    producer = {out: n for n in nodes for out in n.output[:]}
    readers: dict[str, list] = {}
    for n in nodes:
        for name in n.input[:]:
            found = readers.get(name)
            if found is None:
                readers[name] = [n]
            else:
                found.append(n)
    return values, producer, readers


class GraphIndex:
    """_index's lookups over ONNX `nodes` and `initializers` ((name, ONNX type, array) list), shared by the
    qdq passes of one import: reading the protobuf fields is the cost (2-4 ms per CNN), so they are built
    on first use and rebuilt only after a pass that edited the graph says so (edited()). A pass reads one
    snapshot throughout and calls edited() when done."""

    def __init__(self, nodes: list, initializers: list):
        self.nodes, self.initializers, self._lookups = nodes, initializers, None
        self._outer_reads = None

    def outer_reads(self) -> set:
        """_outer_reads of the nodes, found once: the passes neither edit subgraphs nor add nodes with one
        (scanning every attribute of every node is 1-3 ms of a CNN's import)."""
        if self._outer_reads is None:
            self._outer_reads = _outer_reads(self.nodes)
        return self._outer_reads

    def lookups(self) -> tuple[dict, dict, dict]:
        """(constants by name, producer of each value, readers of each value), current as of the last edit."""
        if self._lookups is None:
            self._lookups = _index(self.nodes, self.initializers)
        return self._lookups

    def edited(self, changed: bool = True) -> None:
        """The graph changed (when `changed`): the next lookups() rebuilds."""
        if changed:
            self._lookups = None


class _Graph:
    """Lookups over a GraphIndex's nodes and initializers that the rewrites share, with the values to keep."""

    def __init__(self, index: GraphIndex, keep: set, release=None):
        self.nodes, self.initializers, self.keep, self.release = index.nodes, index.initializers, keep, release
        self.index = index
        self.values, self.producer, self.readers = index.lookups()

    def only_reader(self, name: str):
        found = self.readers.get(name, [])
        return found[0] if len(found) == 1 and name not in self.keep else None

    def integer_constant(self, name: str):
        cast = self.producer.get(name)
        if cast is None or cast.op_type != "Cast" or cast.attribute[0].i != TensorProto.FLOAT:
            return None
        array = self.values.get(cast.input[0])
        return array if array is not None and array.dtype in (np.int8, np.uint8) else None

    def add(self, name: str, array: np.ndarray) -> str:
        """_append, the array also one of the lookups' values; where it is a contiguous copy of a constant (a new
        layout), the constant's memory-mapped pages are released (the rewritten model no longer reads them). A
        MatMul's large int8 weights read transposed stay a view (model_io writes them block by block)."""
        if not word_transposable(array):
            source, array = array, np.ascontiguousarray(array)
            if self.release is not None and array is not source and source.size == array.size:
                while isinstance(source.base, np.ndarray):  # the constant's own array (e.g. under a transpose)
                    source = source.base
                if source.size == array.size:
                    self.release(source)
        self.values[name] = array
        return _append(self.initializers, name, array)


class _Weights:
    """nncf's decompression chain Cast(q) [- Cast(zero point)] * scale [-> Transpose/Reshape] of a weight:
    the integer values, scale and zero point in the weight's final shape, and the nodes of the chain."""

    def __init__(self, mul, q, scale, zero, tail, reader, value):
        self.mul, self.q, self.scale, self.zero, self.tail, self.reader, self.value = \
            mul, q, scale, zero, tail, reader, value

    def per_axis(self):
        """((scales, zero points, axis or None) when both vary along one axis at most, else None."""
        scale_axis, zero_axis = _per_axis(np.asarray(self.scale)), _per_axis(np.asarray(self.zero))
        if scale_axis is None or zero_axis is None:
            return None
        (scales, axis), (zeros, z_axis) = scale_axis, zero_axis
        if z_axis is not None and z_axis != axis:
            return None
        if axis is not None and zeros.size == 1:
            zeros = np.broadcast_to(zeros, scales.shape)
        if axis is None:
            scales, zeros = scales.reshape(()), zeros.reshape(())
        return scales, zeros, axis


def _weight_chain(graph: _Graph, mul) -> _Weights | None:
    """The decompression chain ending in `mul` and read as the weight of a Conv/MatMul/Gemm, else None."""
    from onnx import helper

    for side in (0, 1):
        scale = graph.values.get(mul.input[1 - side])
        source = graph.producer.get(mul.input[side])
        if scale is None or scale.dtype != np.float32 or source is None:
            continue
        zero = None
        if source.op_type == "Sub":
            q = graph.integer_constant(source.input[0])
            zero = graph.integer_constant(source.input[1])
            if zero is None or q is None or zero.dtype != q.dtype:
                continue
        else:
            q = graph.integer_constant(mul.input[side])
        if q is None or scale.ndim > q.ndim:
            continue
        try:
            full_scale = np.broadcast_to(scale, q.shape)
            full_zero = np.broadcast_to(zero if zero is not None else np.zeros((), q.dtype), q.shape)
        except ValueError:
            continue
        # follow Transpose / constant-shape Reshape to the weight input of a Conv/MatMul/Gemm
        value, tail, q_full = mul.output[0], [], np.asarray(q)
        reader = graph.only_reader(value)
        while reader is not None and reader.op_type in ("Transpose", "Reshape"):
            if reader.op_type == "Transpose":
                perm = list(helper.get_attribute_value(reader.attribute[0]))
                q_full, full_scale, full_zero = (a.transpose(perm) for a in (q_full, full_scale, full_zero))
            else:
                shape = graph.values.get(reader.input[1])
                if shape is None or any(a.name == "allowzero" and a.i for a in reader.attribute) \
                        or 0 in shape.tolist():
                    break
                q_full, full_scale, full_zero = (a.reshape(shape) for a in (q_full, full_scale, full_zero))
            tail.append(reader)
            value, reader = reader.output[0], graph.only_reader(reader.output[0])
        if reader is None or value not in reader.input \
                or _WEIGHTED.get(reader.op_type) != list(reader.input).index(value):
            continue
        return _Weights(mul, q_full, full_scale, full_zero, tail, reader, value)
    return None


def dequantized_weights(index: GraphIndex, outputs=(), inputs=(), release=None) -> int:
    """In a model with QuantizeLinear (activations quantized), rewrite nncf's weight decompression
    Cast(int8/uint8 constant) [-> Sub(zero point)] -> Mul(float32 scale) [-> Transpose/Reshape to a constant
    shape], read by a Conv/MatMul/Gemm weight, into DequantizeLinear(int8 initializer, scale, zero point, axis):
    the same values (DequantizeLinear computes (q - zero point) * scale as the chain does), in the form
    onnxruntime's QDQ fusions run as integer kernels (left as float, onnxruntime folds the chain and
    re-quantizes the weights per tensor itself: less precise). A 1x1 convolution whose output is not quantized
    becomes a MatMul over channels (_pointwise_as_matmul), a patch embedding one after SpaceToDepth
    (_patches_as_pointwise). Edits `index`'s nodes (ONNX NodeProtos, in order) and initializers
    ((name, ONNX type, array) list) in place; returns how many weights were rewritten.
    Values in `outputs` (the graph's outputs) or read by subgraphs are kept; `inputs` (the graph's input
    ValueInfoProtos) give the static shapes _space_to_depth needs. `release` (an array -> None, or None) is
    called with each weight copied into a new layout (a MatMul's transposed weights): the importer drops
    the memory-mapped pages of OpenVINO's constant there, which the rewritten model no longer reads."""
    nodes = index.nodes
    if not any(n.op_type == "QuantizeLinear" for n in nodes):
        return 0
    keep, shapes = set(outputs) | index.outer_reads(), _static_shapes(inputs)
    _patches_as_pointwise(index, keep, shapes)
    _depthwise_per_tensor(index, keep)
    if FOLD_REDUNDANT_CLIP:
        _redundant_clip_scale_into_conv(index, keep)
    _float_weights_for_per_channel_inputs(index)
    _integer_data_movement(index, keep)
    graph = _Graph(index, keep, release)
    rewritten, dead, replaced = 0, set(), {}
    for mul in [n for n in nodes if n.op_type == "Mul"]:
        weights = _weight_chain(graph, mul)
        if weights is not None and _classifier_as_integer_matmul(graph, weights):
            dead.update(id(n) for n in weights.tail)
            rewritten += 1
            continue
        if weights is None or not (_integer_input(graph, weights.reader)
                                   or _flattened_input_without_bias(graph, weights.reader)):
            continue  # weights of a float (or per-channel quantized) input stay float: folded by onnxruntime
        reader = weights.reader
        if reader.op_type in ("Conv", "ConvTranspose") and not _quantized_after(reader, graph.readers, graph.values):
            # onnxruntime fuses DQ -> Conv -> Q only; a Conv not followed by a QuantizeLinear would
            # dequantize its weights on every run: left to onnxruntime's constant folding (exact f32), unless
            # it is a 1x1 convolution, which runs as an integer MatMul with a float output
            if _pointwise_as_matmul(graph, weights):
                dead.update(id(n) for n in [mul] + weights.tail)
                rewritten += 1
            continue
        if reader.op_type == "MatMul" and _rank(reader.input[0], graph.producer, graph.values) == 2 \
                and any(n.op_type == "Add" for n in graph.readers.get(reader.output[0], [])):
            # onnxruntime makes a float Gemm of a 2-D MatMul + Add before its QDQ fusions, and would
            # then dequantize the weights on every run: left to its constant folding (exact f32)
            continue
        found = weights.per_axis()
        if found is None:
            continue
        scales, zeros, axis = found
        stem = mul.name or weights.value
        names = [graph.add(f"{stem}/int8_weights", weights.q), graph.add(f"{stem}/scale", scales),
                 graph.add(f"{stem}/zero_point", zeros)]
        replaced[id(mul)] = _dequantize_node(names, weights.value, f"{stem}/DequantizeLinear", axis)
        dead.update(id(n) for n in weights.tail)
        rewritten += 1
    nodes[:] = [replaced.get(id(n), n) for n in nodes if id(n) not in dead]
    index.edited(rewritten > 0)
    _smoothing_into_value_weights(index, keep)
    _conv_bias(index, keep)
    _dequantized_classifiers_as_3d(_Graph(index, keep))
    _space_to_depth(index, keep, shapes)
    _wider_groups(index, keep)
    return rewritten


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
    graph, dead = _Graph(index, keep), set()
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
        graph.producer[mul.input[0]].output[0] = mul.output[0]  # the head merge writes the Mul's output
        dead.add(id(mul))
    nodes[:] = [n for n in nodes if id(n) not in dead]
    index.edited(bool(dead))


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

    ours, after = set(), {}  # the DequantizeLinear nodes written here, by the id of the node they follow
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
        placed = after[id(node)] = []
        for port, name in enumerate(node.output):
            if not name:
                continue
            node.output[port] = f"{name}/quantized"
            placed.append(helper.make_node("DequantizeLinear", [node.output[port], dq.input[1], dq.input[2]],
                                           [name], name=f"{name}/DequantizeLinear"))
            producer[name] = placed[-1]
            ours.add(id(placed[-1]))
    if after:  # each node's DequantizeLinear nodes right after it (one pass: no list.index / insert per node)
        nodes[:] = [m for n in nodes for m in ((n, *after[id(n)]) if id(n) in after else (n,))]
    index.edited(bool(ours))


def _classifier_as_integer_matmul(graph: _Graph, weights: _Weights) -> bool:
    """A 2-D MatMul of quantized data (also across a flatten) by nncf's int8 weights + a bias Add (a
    classifier head) -> Unsqueeze to 3-D, MatMul by DequantizeLinear(int8 weights), Add of the bias as
    [1, 1, N], Squeeze back. Left 2-D, onnxruntime fuses MatMul + Add into a float Gemm before its QDQ
    fusions (dequantizing the weights on every call, or, given float weights, reading 4x the bytes); in 3-D
    it runs MatMulIntegerToFloat: exact integer sums times the scales, then the bias in float. Returns False
    (nothing changed) where the MatMul is not such a head."""
    from onnx import helper

    matmul, q = weights.reader, weights.q
    if matmul.op_type != "MatMul" or q.ndim != 2 or q.dtype != np.int8 or matmul.output[0] in graph.keep \
            or _rank(matmul.input[0], graph.producer, graph.values) != 2:
        return False
    data = _dequantized_input(matmul.input[0], graph.producer)
    add = graph.only_reader(matmul.output[0])
    if data is None or graph.values.get(data.input[1], np.ones(2)).size != 1 or add is None \
            or add.op_type != "Add":
        return False
    other = add.input[1] if add.input[0] == matmul.output[0] else add.input[0]
    bias = graph.values.get(other)
    if bias is None or bias.dtype != np.float32 or bias.shape not in ((q.shape[1],), (1, q.shape[1])):
        return False
    found = weights.per_axis()
    if found is None or found[2] not in (None, 1):
        return False
    scales, zeros, axis = found
    stem = weights.mul.name or weights.value
    names = [graph.add(f"{stem}/int8_weights", q), graph.add(f"{stem}/scale", scales),
             graph.add(f"{stem}/zero_point", zeros), graph.add(f"{stem}/outer_axis", np.array([0], np.int64))]
    graph.nodes[graph.nodes.index(weights.mul)] = _dequantize_node(names[:3], weights.value,
                                                                   f"{stem}/DequantizeLinear", axis)
    lifted, result = f"{stem}/input_3d", add.output[0]
    graph.nodes.insert(graph.nodes.index(matmul), helper.make_node(
        "Unsqueeze", [matmul.input[0], names[3]], [lifted], name=lifted))
    matmul.input[0] = lifted
    add.input[:] = [matmul.output[0], graph.add(f"{stem}/bias_3d", bias.reshape(1, 1, -1))]
    add.output[0] = f"{stem}/output_3d"
    graph.nodes.insert(graph.nodes.index(add) + 1, helper.make_node(
        "Squeeze", [add.output[0], names[3]], [result], name=f"{stem}/output_2d"))
    return True


def _dequantized_classifiers_as_3d(graph: _Graph) -> None:
    """A 2-D MatMul of quantized data by a DequantizeLinear of an int8 initializer [K, N] (weights nncf
    FakeQuantized rather than compressed: the FakeQuantize rule wrote them so) + a bias Add -> the same 3-D form
    as _classifier_as_integer_matmul (Unsqueeze, MatMul, Add of the bias as [1, 1, N], Squeeze): left 2-D,
    onnxruntime makes a float Gemm of it and dequantizes the weights on every call (shufflenet's classifier
    after its global mean: 29% of the model's time)."""
    from onnx import helper

    for matmul in [n for n in graph.nodes if n.op_type == "MatMul"]:
        weights = graph.producer.get(matmul.input[1])
        if weights is None or weights.op_type != "DequantizeLinear" or matmul.output[0] in graph.keep \
                or graph.values.get(weights.input[0], np.zeros((0,))).ndim != 2 \
                or graph.values[weights.input[0]].dtype != np.int8 \
                or _rank(matmul.input[0], graph.producer, graph.values) != 2:
            continue
        columns = graph.values[weights.input[0]].shape[1]
        data = _dequantized_input(matmul.input[0], graph.producer)
        add = graph.only_reader(matmul.output[0])
        if data is None or graph.values.get(data.input[1], np.ones(2)).size != 1 or add is None \
                or add.op_type != "Add" or any(a.name == "axis" and a.i not in (1, -1) for a in weights.attribute):
            continue
        other = add.input[1] if add.input[0] == matmul.output[0] else add.input[0]
        bias = graph.values.get(other)
        if bias is None or bias.dtype != np.float32 or bias.shape not in ((columns,), (1, columns)):
            continue
        stem = matmul.name or matmul.output[0]
        outer, lifted, result = graph.add(f"{stem}/outer_axis", np.array([0], np.int64)), f"{stem}/input_3d", \
            add.output[0]
        graph.nodes.insert(graph.nodes.index(matmul), helper.make_node(
            "Unsqueeze", [matmul.input[0], outer], [lifted], name=lifted))
        matmul.input[0] = lifted
        add.input[:] = [matmul.output[0], graph.add(f"{stem}/bias_3d", bias.reshape(1, 1, -1))]
        add.output[0] = f"{stem}/output_3d"
        graph.nodes.insert(graph.nodes.index(add) + 1, helper.make_node(
            "Squeeze", [add.output[0], outer], [result], name=f"{stem}/output_2d"))
        graph.index.edited()  # (this loop keeps reading its snapshot)


def _dequantize_node(inputs: list, output: str, name: str, axis):
    from onnx import helper

    return helper.make_node("DequantizeLinear", inputs, [output], name=name,
                            **({} if axis is None else {"axis": int(axis)}))


def _integer_input(graph: _Graph, reader) -> bool:
    """Whether the data input of `reader` is a per-tensor DequantizeLinear (a Conv's possibly across data
    movement; a MatMul's directly: after a Reshape of unknown rank it may be the 2-D MatMul + bias Add that
    onnxruntime turns into a float Gemm, which would dequantize the weights on every call)."""
    if reader.op_type in ("Conv", "ConvTranspose"):
        data = _dequantized_input(reader.input[0], graph.producer)
    else:
        data = graph.producer.get(reader.input[0])
    return data is not None and data.op_type == "DequantizeLinear" \
        and graph.values.get(data.input[1], np.ones(2)).size == 1


def _flattened_input_without_bias(graph: _Graph, reader) -> bool:
    """Whether `reader` is a MatMul whose data input is a per-tensor DequantizeLinear moved by a Reshape
    (a classifier after a computed flatten) and whose output no Add reads: onnxruntime moves the
    DequantizeLinear across the Reshape and fuses MatMulIntegerToFloat (with a bias Add it would make a float
    Gemm first: _classifier_as_integer_matmul handles that form)."""
    if reader.op_type != "MatMul" or any(n.op_type == "Add" for n in graph.readers.get(reader.output[0], [])):
        return False
    data = _dequantized_input(reader.input[0], graph.producer)
    return data is not None and graph.values.get(data.input[1], np.ones(2)).size == 1


#: ops that may follow a 1x1 convolution in channels-last layout unchanged (elementwise, no attribute that
#: names an axis), and arithmetic with a per-channel constant (bias Add, the depthwise input scale's Div),
#: whose constant is reshaped to [1, 1, 1, C]
_CHANNELS_LAST_OK = ("Relu", "HardSwish", "HardSigmoid", "Sigmoid", "Clip", "QuantizeLinear")
_PER_CHANNEL_ARITHMETIC = ("Add", "Mul", "Div")


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


def _clip_div_into_scales(graph: _Graph, chain: list, scales, axis, bias, channels: int):
    """`chain` (the nodes after a 1x1 Conv _pointwise_as_matmul rewrites) Clip(lo, hi) -> Div(s_c) ->
    QuantizeLinear(S, z), where the Clip changes no level (lo / s_c maps to level 0 or below, hi / s_c to
    255 or above, in every channel: values beyond it saturate there anyway; mobilenet_v2's ReLU6 before the
    next depthwise input's per-channel scale, as _depthwise_per_tensor writes it): the Clip and the Div leave
    `chain` and the graph, and the weight scales become s_w / s_c and the bias b / s_c — the same levels but
    where a value is within a rounding of a level boundary (each scale rounded once more, as the depthwise
    fold), the bias still added in float by the kernel. Returns (scales, axis, bias), changed or not."""
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
    for node in (clip, div):
        graph.nodes.remove(node)
    chain[:] = [quantize]
    return scales, 0, bias


def _pointwise_as_matmul(graph: _Graph, weights: _Weights) -> bool:
    """Conv 1x1 (stride 1, no padding, group 1) of a quantized input with nncf's int8 weights, its output not
    quantized (a HSwish or SE block follows: mobilenet_v3) -> Transpose to channels last, MatMulIntegerToFloat
    (int8 weights [C, O], the bias Add that follows the Conv taken in), then the elementwise activations,
    per-channel arithmetic and the QuantizeLinear that follow, then Transpose back. The same sums (exact
    integer accumulation, one multiplication by the scales, the bias added in float; the float Conv rounded
    each product), and no float convolution between integer kernels (and the layout transposes around it).
    Returns False (nothing changed) where the Conv is not such a convolution."""
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
            graph.nodes.remove(add)
            conv.output[0] = add.output[0]
    if FOLD_CLIP_DIV_INTO_SCALES:
        scales, axis, bias = _clip_div_into_scales(graph, chain, scales, axis, bias, channels)
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
    from onnx import helper

    index = graph.nodes.index(conv)
    graph.nodes[index:index + 1] = replacement
    graph.nodes.insert(graph.nodes.index(last) + 1 if chain else index + len(replacement), helper.make_node(
        "Transpose", [last_nhwc], [result], name=f"{stem}/channels_first", perm=[0, 3, 1, 2]))
    return True



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
        index.edited()


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


def _group(conv) -> int:
    return next((a.i for a in conv.attribute if a.name == "group"), 1)


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

    before = {}  # id(QuantizeLinear) -> the Div inserted before it
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
        before[id(q)] = helper.make_node("Div", [q.input[0], names[0]], [divided], name=divided)
        for node, data in ((q, divided), (dq, dq.input[0])):
            node.input[:] = [data, names[1], names[2]]
            kept = [a for a in node.attribute if a.name != "axis"]
            del node.attribute[:]
            node.attribute.extend(kept)
        mul.input[side] = names[3]
    if before:
        nodes[:] = [m for n in nodes for m in ((before[id(n)], n) if id(n) in before else (n,))]
    index.edited(bool(before))


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
    nodes, initializers = index.nodes, index.initializers
    values, producer, readers = index.lookups()

    def after(node, op_type):
        found = readers.get(node.output[0], [])
        return found[0] if len(found) == 1 and found[0].op_type == op_type and node.output[0] not in keep else None

    dead = set()
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
        dead.update((id(clip), id(div)))
    nodes[:] = [n for n in nodes if id(n) not in dead]
    index.edited(bool(dead))


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
        index.edited()  # (this loop keeps reading its snapshot)


def _conv_bias(index: GraphIndex, keep: set) -> None:
    """Conv(DequantizeLinear x, DequantizeLinear w) -> Add(per-channel constant) becomes one Conv with that
    bias (as OpenVINO's Convolution + Add is written): onnxruntime's QDQ fusion wants DQ -> Conv -> Q, and
    fuses a float bias of a quantized Conv itself."""
    nodes, initializers = index.nodes, index.initializers
    if not any(n.op_type == "Conv" and len(n.input) == 2 for n in nodes):
        return
    values, producer, readers = index.lookups()
    dead = set()
    for conv in nodes:
        if conv.op_type != "Conv" or len(conv.input) != 2 or len(readers.get(conv.output[0], [])) != 1 \
                or conv.output[0] in keep:
            continue
        dq = [_dequantized_input(conv.input[0], producer), producer.get(conv.input[1])]
        if any(n is None or n.op_type != "DequantizeLinear" for n in dq):
            continue
        weights = values.get(dq[1].input[0])
        add = readers[conv.output[0]][0]
        if weights is None or add.op_type != "Add":
            continue
        other = add.input[1] if add.input[0] == conv.output[0] else add.input[0]
        bias = values.get(other)
        channels, rank = weights.shape[0], weights.ndim
        if bias is None or bias.dtype != np.float32 or bias.ndim > rank or other == conv.output[0]:
            continue
        shape = (1,) * (rank - bias.ndim) + bias.shape
        if any(d != 1 for i, d in enumerate(shape) if i != 1) or shape[1] not in (1, channels):
            continue
        name = f"{conv.name or conv.output[0]}/bias"
        initializers.append((name, TensorProto.FLOAT, np.ascontiguousarray(
            np.broadcast_to(bias.reshape(-1), (channels,)))))
        conv.input.append(name)
        conv.output[0] = add.output[0]
        dead.add(id(add))
    nodes[:] = [n for n in nodes if id(n) not in dead]
    index.edited(bool(dead))


#: onnxruntime's direct integer convolution (MLAS ConvSym) takes input channels in groups of this many; with
#: other counts QLinearConv falls back to im2col + GEMM
CHANNEL_GROUP = 4
#: a strided integer convolution of at most this many input channels (an image model's stem) is rewritten by
#: _space_to_depth when stride² · channels fills whole groups (measured, onnxruntime 1.32, 7x7/2 from 224x224
#: to 64 channels: 0.64x the time on 1 channel, 0.77x on 3; 0.79x for 3x3/2 on 3 channels; 1.10x on 4 channels
#: and 1.20x for 7x7/3 on 3 channels, 27 after the rewrite, which are left as they are)
SPACE_TO_DEPTH_CHANNELS = 3


def _static_shapes(inputs) -> dict:
    """{name: shape} of the ValueInfoProtos in `inputs` whose dimensions are all known."""
    shapes = {}
    for value in inputs:
        dims = value.type.tensor_type.shape.dim if value.type.tensor_type.HasField("shape") else None
        if dims is not None and all(d.HasField("dim_value") for d in dims):
            shapes[value.name] = tuple(d.dim_value for d in dims)
    return shapes


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
        index.edited()  # (this loop keeps reading its snapshot)
        dq, weights_dq, block, kernel, shift, begin, end, padded = found
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
        if merged == groups > MAX_DENSE_GROUPS:  # (one dense convolution: `groups` times the products)
            padded = _padded_groups(nodes, initializers, conv, weights_dq, (q, scale, zero, groups),
                                    (values, producer, readers))
            if padded is None:
                continue
            q, zero, groups, merged = padded
        index.edited()  # (this loop keeps reading its snapshot)
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
    groups, merged) padded, or None where the form does not fit (measured: MAX_DENSE_GROUPS)."""
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
    return q, zero, groups + extra, need


def _append(initializers: list, name: str, array: np.ndarray) -> str:
    """Add `array` as initializer `name` (the passes' (name, ONNX type, array) list), C-contiguous but for a
    MatMul's large int8 weights read transposed (model_io writes those block by block); returns the name."""
    layout = array if word_transposable(array) else np.ascontiguousarray(array)
    initializers.append((name, NUMPY_CODES[array.dtype], layout))
    return name


def _static_shape(name: str, producer: dict, values: dict, shapes: dict, depth: int = 0):
    """The shape of `name` when it is a graph input of static shape in `shapes`, or reaches one through
    arithmetic with constants that do not broadcast it further (a mean / scale preprocessing), else None."""
    if name in shapes:
        return tuple(shapes[name])
    node = producer.get(name)
    if depth > 8 or node is None or node.op_type not in ("Sub", "Add", "Mul", "Div") or len(node.input) != 2:
        return None
    data = [i for i in node.input if i not in values]
    if len(data) != 1:
        return None
    shape = _static_shape(data[0], producer, values, shapes, depth + 1)
    constant = values[node.input[1] if node.input[0] == data[0] else node.input[0]]
    try:
        return shape if shape is not None and np.broadcast_shapes(shape, constant.shape) == shape else None
    except ValueError:
        return None


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


NUMPY_CODES = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8,
               np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
