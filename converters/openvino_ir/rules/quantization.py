"""INT8 and compressed models: FakeQuantize-1, and weight decompression subgraphs.

FakeQuantize-1 follows OpenVINO's reference (src/core/reference/.../fake_quantize.hpp), operation for
operation in the data's precision:

    x <= min(il, ih)  -> ol
    x >  max(il, ih)  -> oh
    otherwise         -> nearbyint((x - il) / (ih - il) * (levels - 1)) / (levels - 1) * (oh - ol) + ol

nearbyint rounds half to even, as ONNX Round does. QuantizeLinear/DequantizeLinear are not used: they
compute x / scale + zero_point (another rounding path), so they are not provably identical.

Compressed weights (nncf.compress_weights, OpenVINO's compress_to_fp16): Constant(u8/i8/u4/i4) -> Convert(f16)
-> [Subtract(Convert(zero point))] -> Multiply(f16 scale) -> [Reshape] -> Convert(f32). OpenVINO's plugins
decompress such constant subgraphs in f32 (measured: the CPU plugin's result is bit-identical to computing the
chain in f32, and differs by up to 1 f16 ulp of each weight from computing it in f16 as the types say). So
when a Convert f16 -> f32 reads a subgraph made of Constants only, that subgraph is emitted again in f32
(the f16 nodes become dead and are pruned). u4/i4 constants are carried unpacked as uint8/int8 (exact).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule
from .._types import constant_array, numpy_type


@rule("FakeQuantize", versions=(1,), onnx="Sub, Div, Mul, Round, Add, Min, Max, LessOrEqual, Greater, Where",
      notes="OpenVINO's reference formula operation for operation (round half to even); per-tensor and "
            "per-channel limits broadcast numpy-style",
      refuses=("auto_broadcast pdpd: not ONNX broadcasting",))
def fake_quantize(ctx, node):
    attributes = node.get_attributes()
    mode = str(attributes.get("auto_broadcast", "numpy")).lower()
    if mode not in ("numpy", "none"):
        raise Unsupported(f"auto_broadcast={mode!r} (only numpy and none)")
    levels = int(attributes["levels"])
    if levels < 2:
        raise Unsupported(f"levels={levels} (needs at least 2)")
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


def _emit_f32(ctx, output) -> str:
    """Re-emit a constant decompression subgraph computing in f32 (see the module doc)."""
    node = output.get_node()
    kind = node.get_type_name()
    if kind == "Constant":
        value = constant_array(node)
        if value.dtype == np.float16:
            return ctx.const(value.astype(np.float32), "f32")
        return ctx.value(output)  # an integer constant, already an initializer (u4/i4 unpacked)
    inputs = [_emit_f32(ctx, node.input_value(i)) if i == 0 or kind in ("Subtract", "Multiply")
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
    ctx.emit("Identity", [_emit_f32(ctx, node.input_value(0))], [ctx.out(node)])
    return True
