"""Graph boundary and type conversion: Parameter, Constant, Result, Convert, ConvertLike."""
from __future__ import annotations

from .._registry import Unsupported, rule
from .._types import BITS, Unpacked, carried_type, constant_array, value_info
from .quantization import decompressed_in_f32


@rule("Parameter", versions=(1,),
      onnx="graph input",
      notes="dynamic dims become symbols <input>_<axis>")
def parameter(ctx, node):
    name = ctx.out(node)
    # Dynamic dims become symbols named <input>_<axis>: OpenVINO IR does not record which are equal.
    ctx.inputs[node.get_name()] = value_info(name, ctx.out_elem(node), node.get_output_partial_shape(0),
                                              dim_prefix=name)


@rule("Constant", versions=(1,),
      onnx="initializer",
      notes="raw bytes, bit-exact (bf16 too); u4/i4 unpacked to uint8/int8",
      refuses=("u4/i4 read by anything but Convert: the 4-bit range is not carried",
               "u1 read by anything but BinaryConvolution's weights (which it unpacks itself)"))
def constant(ctx, node):
    type_name = ctx.out_type(node)
    if type_name == BITS:
        # bits: BinaryConvolution unpacks its u1 weights itself; nothing else reads them
        readers = {(target.get_node().get_type_name(), target.get_index())
                   for target in node.output(0).get_target_inputs()}
        if readers - {("BinaryConvolution", 1)}:
            raise Unsupported("a u1 constant read by " + ", ".join(sorted(
                f"{name} input {index}" for name, index in readers - {("BinaryConvolution", 1)}))
                + " (only BinaryConvolution's weights)")
        return
    carried = carried_type(type_name)
    if carried is not None:
        # u4/i4 are carried unpacked in uint8/int8: exact for a Convert, not for arithmetic in 4 bits
        readers = {target.get_node().get_type_name() for target in node.output(0).get_target_inputs()}
        if readers - {"Convert"}:
            raise Unsupported(f"a {type_name} constant read by "
                              f"{', '.join(sorted(readers - {'Convert'}))} (only Convert)")
        ctx.initializers.append((ctx.out(node), carried, Unpacked(node)))  # unpacked if a node reads it
        return
    ctx.const(constant_array(node, type_name), name=ctx.out(node))


@rule("Result", versions=(1,),
      onnx="graph output",
      notes="an Identity when it repeats a value already output, a graph input or a constant")
def result(ctx, node):
    ctx.outputs[node.get_name()] = ctx.inp(node, 0)


@rule("Convert", versions=(1,),
      onnx="Cast; DequantizeLinear for weight decompression",
      notes="float -> integer truncates in both; out-of-range values: the CPU plugin saturates, ONNX Cast is "
            "undefined; constant weight decompression (f16 -> f32) computed in f32, as one DequantizeLinear "
            "where it is (W - zero point) * scale (blocked or 4-bit: opset 21)")
def convert(ctx, node):
    # Float -> integer truncates toward zero in both; out-of-range values saturate in OpenVINO's CPU
    # plugin but are undefined in ONNX Cast (see docs/openvino_ir.md).
    if decompressed_in_f32(ctx, node):  # compressed weights: see rules/quantization/compressed_weights.py
        return
    ctx.emit("Cast", [ctx.inp(node, 0)], [ctx.out(node)], to=ctx.out_elem(node))


@rule("ConvertLike", versions=(1,),
      onnx="CastLike",
      notes="as Convert")
def convert_like(ctx, node):
    ctx.emit("CastLike", [ctx.inp(node, 0), ctx.inp(node, 1)], [ctx.out(node)])
