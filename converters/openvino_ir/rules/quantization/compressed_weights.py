"""Compressed weights: decompression subgraphs computed in f32 or as DequantizeLinear (io.py's Convert rule), a
MatMul by 4-bit weights as com.microsoft MatMulNBits (nn.py), a 4-bit embedding Gather as GatherBlockQuantized
(tensor.py).

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

from ..._registry import Unsupported
from ..._types import Nibbles, constant_array


#: DequantizeLinear-21: block_size and INT4/UINT4
MIN_OPSET_4BIT = 21
#: Ops whose meaning changes between opsets 18 and 21 (the others only gain types, or attributes whose
#: default is the old behaviour): a model holding one cannot move to opset 21 for 4-bit weights.
CHANGED_BY_OPSET_21 = {"DFT": "DFT-20 takes axis as an input", "GridSample": "GridSample-20 renames modes",
                       "GroupNormalization": "GroupNormalization-21 scales per channel"}


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
    if ctx.out_type(node) != "f32" or node.get_input_element_type(0).get_type_name() != "f16":
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
