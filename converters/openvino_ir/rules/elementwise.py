"""Elementwise ops: arithmetic, comparisons, logic, activations.

OpenVINO's `numpy` (and `none`) auto-broadcast is ONNX's multidirectional broadcasting; `pdpd` is not
supported.
"""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule
from .._types import FLOAT_CODES, INTEGER_CODES, UNSIGNED_CODES, numpy_type
from ._nchwc import channel_gate

_BINARY = {
    "Add": "Add", "Subtract": "Sub", "Multiply": "Mul", "Power": "Pow", "Maximum": "Max", "Minimum": "Min",
    "Equal": "Equal", "Less": "Less", "LessEqual": "LessOrEqual", "Greater": "Greater",
    "GreaterEqual": "GreaterOrEqual", "LogicalAnd": "And", "LogicalOr": "Or",
}
_UNARY = {
    "Abs": "Abs", "Acos": "Acos", "Asin": "Asin", "Atan": "Atan", "Ceiling": "Ceil", "Cos": "Cos",
    "Cosh": "Cosh", "Erf": "Erf", "Exp": "Exp", "Floor": "Floor", "Log": "Log", "Negative": "Neg",
    "Relu": "Relu", "Sigmoid": "Sigmoid", "Sign": "Sign", "Sin": "Sin", "Sinh": "Sinh", "Sqrt": "Sqrt",
    "Tan": "Tan", "Tanh": "Tanh", "LogicalNot": "Not",
}


def broadcast_inputs(ctx, node, count: int = 2) -> list[str]:
    mode = node.get_attributes().get("auto_broadcast", "numpy")
    if mode not in ("numpy", "none"):
        raise Unsupported(f"auto_broadcast={mode!r} (only numpy and none)")
    return [ctx.inp(node, i) for i in range(count)]


@rule(*_BINARY, versions=(1,),
      onnx="Add, Sub, Mul, Pow, Max, Min, Equal, Less, LessOrEqual, Greater, GreaterOrEqual, And, Or",
      notes="auto_broadcast numpy / none are ONNX broadcasting. A squeeze-excitation's Multiply of a "
            "convolution's map by its Sigmoid / HSigmoid gate (N×C×1×1) is Resize (nearest) of the gate, an "
            "equal-shape Mul and an identity depthwise Conv before the gate's activation: the same values, in "
            "forms onnxruntime keeps in its NCHWc layout (rules/_nchwc.py)",
      refuses=("auto_broadcast pdpd: not ONNX broadcasting",))
def binary(ctx, node):
    if node.get_type_name() == "Multiply" and channel_gate(ctx, node):
        return
    ctx.emit(_BINARY[node.get_type_name()], broadcast_inputs(ctx, node), [ctx.out(node)])


@rule("LogicalXor", versions=(2,),
      onnx="Xor",
      notes="LogicalXor-1 is recorded as opset2",
      refuses=("auto_broadcast pdpd",))  # LogicalXor-1 is recorded as opset2
def logical_xor(ctx, node):
    ctx.emit("Xor", broadcast_inputs(ctx, node), [ctx.out(node)])


@rule("NotEqual", versions=(1,),
      onnx="Not(Equal)",
      refuses=("auto_broadcast pdpd",))
def not_equal(ctx, node):
    ctx.emit("Not", [ctx.emit("Equal", broadcast_inputs(ctx, node))], [ctx.out(node)])


@rule("SquaredDifference", versions=(1,),
      onnx="Sub, Mul",
      refuses=("auto_broadcast pdpd",))
def squared_difference(ctx, node):
    difference = ctx.emit("Sub", broadcast_inputs(ctx, node))
    ctx.emit("Mul", [difference, difference], [ctx.out(node)])


@rule("Divide", versions=(1,),
      onnx="Div; signed integers with m_pythondiv (default true): Div, Mod and a floor correction",
      notes="floor division as the spec and OpenVINO's reference say; the CPU plugin truncates signed integers, "
            "rounds u8/u16 to nearest and multiplies f32 by the reciprocal",
      refuses=("auto_broadcast pdpd",))
def divide(ctx, node):
    a, b = broadcast_inputs(ctx, node)
    code = ctx.out_elem(node)
    floor = node.get_attributes().get("m_pythondiv", True)
    if code not in INTEGER_CODES or code in UNSIGNED_CODES or not floor:
        ctx.emit("Div", [a, b], [ctx.out(node)])
        return
    # m_pythondiv (default true): signed integer division rounds toward -inf (OpenVINO's reference and
    # constant folding; its CPU plugin truncates, a divergence). ONNX Div truncates: step down by one
    # where the remainder is non-zero and its sign differs from the divisor's.
    quotient = ctx.emit("Div", [a, b])
    remainder = ctx.emit("Mod", [a, b], fmod=1)
    zero = ctx.const(np.zeros((), numpy_type(code)), "zero")
    nonzero = ctx.emit("Not", [ctx.emit("Equal", [remainder, zero])])
    signs_differ = ctx.emit("Xor", [ctx.emit("Less", [remainder, zero]), ctx.emit("Less", [b, zero])])
    step = ctx.emit("Cast", [ctx.emit("And", [nonzero, signs_differ])], to=code)
    ctx.emit("Sub", [quotient, step], [ctx.out(node)])


@rule("Mod", versions=(1,),
      onnx="Mod fmod=1",
      notes="remainder has the dividend's sign",
      refuses=("auto_broadcast pdpd",))
def mod(ctx, node):  # truncated remainder: the sign of the dividend (C fmod)
    ctx.emit("Mod", broadcast_inputs(ctx, node), [ctx.out(node)], fmod=1)


@rule("FloorMod", versions=(1,),
      onnx="Mod fmod=0 (integers); Mod fmod=1 + sign correction (floats)",
      notes="remainder has the divisor's sign",
      refuses=("auto_broadcast pdpd",))
def floor_mod(ctx, node):  # remainder with the sign of the divisor (Python %)
    a, b = broadcast_inputs(ctx, node)
    code = ctx.out_elem(node)
    if code not in FLOAT_CODES:
        ctx.emit("Mod", [a, b], [ctx.out(node)], fmod=0)
        return
    # ONNX Mod on floats needs fmod=1 (truncated); add the divisor where the signs differ.
    remainder = ctx.emit("Mod", [a, b], fmod=1)
    zero = ctx.const(np.zeros((), numpy_type(code)), "zero")
    nonzero = ctx.emit("Not", [ctx.emit("Equal", [remainder, zero])])
    signs_differ = ctx.emit("Xor", [ctx.emit("Less", [remainder, zero]), ctx.emit("Less", [b, zero])])
    adjust = ctx.emit("And", [nonzero, signs_differ])
    ctx.emit("Where", [adjust, ctx.emit("Add", [remainder, b]), remainder], [ctx.out(node)])


@rule("Select", versions=(1,),
      onnx="Where",
      refuses=("auto_broadcast pdpd",))
def select(ctx, node):
    ctx.emit("Where", broadcast_inputs(ctx, node, 3), [ctx.out(node)])


@rule(*_UNARY, versions=(1,),
      onnx="Abs, Acos, Asin, Atan, Ceil, Cos, Cosh, Erf, Exp, Floor, Log, Neg, Relu, Sigmoid, Sign, Sin, Sinh, "
           "Sqrt, Tan, Tanh, Not",
      notes="transcendental functions: a few ulp apart between runtimes; Floor and Ceiling of integers "
            "are the integers themselves (Identity: ONNX Floor/Ceil take floats only)")
def unary(ctx, node):
    op_type = _UNARY[node.get_type_name()]
    if op_type in ("Floor", "Ceil") and ctx.out_elem(node) not in FLOAT_CODES:
        op_type = "Identity"  # torch's floor_divide on int64 comes out as Divide + Floor
    ctx.emit(op_type, [ctx.inp(node, 0)], [ctx.out(node)])


@rule("Asinh", "Acosh", "Atanh", versions=(4,),
      onnx="Asinh, Acosh, Atanh",
      notes="the v3 ops, recorded as opset4")  # the v3 ops, recorded as opset4
def unary_v3(ctx, node):
    ctx.emit(node.get_type_name(), [ctx.inp(node, 0)], [ctx.out(node)])


@rule("SoftPlus", versions=(4,), onnx="Softplus",
      notes="onnxruntime is exact where OpenVINO's CPU plugin returns -1.9e-6 for x <= -18 (its reference: ~0)")
def softplus(ctx, node):
    ctx.emit("Softplus", [ctx.inp(node, 0)], [ctx.out(node)])


@rule("SoftSign", versions=(9,), onnx="Softsign")
def softsign(ctx, node):
    ctx.emit("Softsign", [ctx.inp(node, 0)], [ctx.out(node)])


@rule("HSwish", versions=(4,), onnx="HardSwish")
def hswish(ctx, node):
    ctx.emit("HardSwish", [ctx.inp(node, 0)], [ctx.out(node)])


@rule("HSigmoid", versions=(5,), onnx="HardSigmoid (alpha 1/6, beta 0.5)")
def hsigmoid(ctx, node):  # min(max(x + 3, 0), 6) / 6
    ctx.emit("HardSigmoid", [ctx.inp(node, 0)], [ctx.out(node)], alpha=1.0 / 6.0, beta=0.5)


@rule("Mish", versions=(4,), onnx="Mish")
def mish(ctx, node):
    ctx.emit("Mish", [ctx.inp(node, 0)], [ctx.out(node)])


@rule("Swish", versions=(4,), onnx="Neg, Mul, Exp, Add or Sub, Div; Sigmoid, Mul (QDQ form, quantized)",
      notes="x / (1 + exp(-beta x)), beta optional (1). Where x is a float convolution (+ constant bias) read by "
            "the Swish only, and the Swish is no model output (a zero there would come out -0), that convolution computes y = -x with negated weights and bias (exactly: IEEE "
            "rounding is symmetric; onnxruntime folds the negated constants, so no Neg runs) and the Swish is "
            "y / (-1 - exp(beta y)), the same roundings; a Swish read only by a convolution with constant "
            "weights gives it -swish = y / (1 + exp(beta y)) and negated weights (onnxruntime's Add is faster "
            "than its Sub of -1). onnxruntime's Sigmoid is off by ~5e-8 absolute for large negative inputs, "
            "which x * Sigmoid(beta x) would scale to 1e-6 at x = -20; in the QDQ form (int8='qdq') a Swish read "
            "only by FakeQuantizes is x * Sigmoid(beta x) (onnxruntime's QuickGelu), ~1e-4 of a level off")
def swish(ctx, node):
    if _quantized_swish(ctx, node):
        return
    folded = None if _is_an_output(node) else _negated_convolution(ctx, node)
    negated = folded or ctx.emit("Neg", [ctx.inp(node, 0)])
    scaled = negated if node.get_input_size() < 2 else ctx.emit("Mul", [negated, ctx.inp(node, 1)])
    exp = ctx.emit("Exp", [scaled])
    dtype = numpy_type(ctx.elem(node, 0))
    if folded is None:  # x / (1 + exp(-beta x))
        ctx.emit("Div", [ctx.inp(node, 0), ctx.emit("Add", [ctx.const(np.array(1, dtype), "one"), exp])],
                 [ctx.out(node)])
    else:  # the same as y / -(1 + exp(beta y))
        ctx.emit("Div", [negated, ctx.emit("Sub", [ctx.const(np.array(-1, dtype), "minus_one"), exp])],
                 [ctx.out(node)])


def _quantized_swish(ctx, node) -> bool:
    """In the QDQ form (int8='qdq'), a Swish read only by FakeQuantizes (nncf quantizes efficientnet's Swishes)
    is written x * Sigmoid(beta x), which onnxruntime runs as one QuickGelu kernel instead of four passes: at
    most ~1e-5 relative (2.3e-6 absolute below -5) from the exact form, 1e-4 of a level of any 8-bit grid, so
    it moves a value a level only on near-ties of the rounding, as QuantizeLinear itself does (the QDQ form's
    yardstick: docs/performance.md). The exact form keeps the exact Swish."""
    if ctx.shared.int8 != "qdq":
        return False
    readers = node.output(0).get_target_inputs()
    if not readers or any(r.get_node().get_type_name() != "FakeQuantize" or r.get_index() != 0 for r in readers):
        return False
    scaled = ctx.inp(node, 0) if node.get_input_size() < 2 else ctx.emit("Mul", [ctx.inp(node, 0), ctx.inp(node, 1)])
    ctx.emit("Mul", [ctx.inp(node, 0), ctx.emit("Sigmoid", [scaled])], [ctx.out(node)])
    return True


def _is_an_output(node) -> bool:
    """Whether a Result reads the Swish. The convolution fold computes -x as a sum of negated products, and a
    sum that cancels to exactly 0 is +0 either way, so swish(+0) comes out -0: equal values, but a model output
    compared bit for bit (conformance) would see the sign of zero differ. Inside the graph it stays a zero."""
    return any(r.get_node().get_type_name() == "Result" for r in node.output(0).get_target_inputs())


_CONVOLUTIONS = ("Convolution", "GroupConvolution")


def _constant(output) -> bool:
    """Whether an OpenVINO output is a Constant, through f16 decompression (Convert) and Reshapes to constant
    shapes (group weights): no FakeQuantize or int8 weight chain (Multiply by scales) on the way."""
    node = output.get_node()
    while node.get_type_name() in ("Convert", "Reshape"):
        if node.get_type_name() == "Reshape" and node.input_value(1).get_node().get_type_name() != "Constant":
            return False
        node = node.input_value(0).get_node()
    return node.get_type_name() == "Constant"


def _negated_convolution(ctx, node) -> str | None:
    """-x for Swish's input x = Convolution/GroupConvolution(data, constant weights) [+ constant bias], each read
    once: the ONNX Conv (already emitted) gets Neg(weights) and its bias Add Neg(bias), both folded by
    onnxruntime, and fresh output names (the OpenVINO names keep meaning +x: compare's name map leaves them out).
    None, with nothing changed, where the pattern does not hold (e.g. quantized convolutions)."""
    x = node.input_value(0)
    bias = None
    producer = x.get_node()
    if producer.get_type_name() == "Add":
        readers = [i for i in (0, 1) if producer.input_value(i).get_node().get_type_name() in _CONVOLUTIONS]
        if not readers or not _constant(producer.input_value(1 - readers[0])):
            return None
        convolution_out, bias = producer.input_value(readers[0]), 1 - readers[0]
    elif producer.get_type_name() in _CONVOLUTIONS:
        convolution_out = x
    else:
        return None
    convolution = convolution_out.get_node()
    if (len(x.get_target_inputs()) != 1 or len(convolution_out.get_target_inputs()) != 1
            or not _constant(convolution.input_value(1))
            or convolution.input_value(0).get_node().get_type_name() == "FakeQuantize"):
        return None
    names = {ctx.value(convolution_out): "Conv"} | ({ctx.value(x): "Add"} if bias is not None else {})
    found = {}
    for index in range(len(ctx.nodes) - 1, max(len(ctx.nodes) - 64, 0) - 1, -1):  # emitted just before
        onnx_node = ctx.nodes[index]
        if onnx_node.output and names.get(onnx_node.output[0]) == onnx_node.op_type:
            found[onnx_node.op_type] = index
            if len(found) == len(names):  # (one node computes each name: the rest of the window cannot match)
                break
    if len(found) != len(names) or "" in ctx.nodes[found["Conv"]].input[1:] or (
            bias is not None and ctx.nodes[found["Add"]].input[1 - bias] != ctx.value(convolution_out)):
        return None
    negated = None
    if bias is not None:  # the Add first: inserting before the Conv moves it
        add = ctx.nodes[found["Add"]]
        _insert_before(ctx, found["Add"], "Neg", bias)
        add.output[0] = negated = ctx.temp("negated")
    conv = ctx.nodes[found["Conv"]]
    conv.output[0] = ctx.temp("negated_convolution")
    if bias is not None:
        add.input[1 - bias] = conv.output[0]
    for moved, port in enumerate(range(1, len(conv.input))):  # weights and the Conv's own bias
        _insert_before(ctx, found["Conv"] + moved, "Neg", port)
    return negated or conv.output[0]


def negated_swish_input(ctx, node) -> str | None:
    """For a convolution `node` whose data is a Swish read by it only, and whose weights are constant: the
    already emitted Swish rewritten to give -swish (y / (1 + exp(beta y)): the Add onnxruntime runs faster than
    the Sub of -1), under a fresh name, for the convolution to read with negated weights (the same products,
    bit for bit). None, with nothing changed, otherwise."""
    data = node.input_value(0)
    swish = data.get_node()
    if (swish.get_type_name() != "Swish" or len(data.get_target_inputs()) != 1
            or not _constant(node.input_value(1))):
        return None
    divide = _emitted(ctx, ctx.value(data), ("Div",), 16)
    denominator = None if divide is None else _emitted(ctx, divide.input[1], ("Add", "Sub"), 24)
    if denominator is None:
        return None
    if denominator.op_type == "Sub":  # y / (-1 - e), y = -x from the convolution: y / (1 + e)
        denominator.op_type = "Add"
        denominator.input[0] = ctx.const(np.array(1, numpy_type(ctx.elem(swish, 0))), "one")
    else:  # x / (1 + e): the numerator becomes y = Neg(x)
        negation = next((n for n in reversed(ctx.nodes[-24:]) if n.op_type == "Neg" and n.input[0] == divide.input[0]),
                        None)
        if negation is None:
            return None
        divide.input[0] = negation.output[0]
    divide.output[0] = ctx.temp("negated_swish")
    return divide.output[0]


def _emitted(ctx, name: str, op_types, span: int):
    """The ONNX node among the last `span` emitted that computes `name`, if its op_type is in `op_types`."""
    node = next((n for n in reversed(ctx.nodes[-span:]) if n.output and n.output[0] == name), None)
    return node if node is not None and node.op_type in op_types else None


def _insert_before(ctx, index: int, op_type: str, port: int) -> None:
    """Replace input `port` of emitted ONNX node `index` by op_type(it), the new node placed before it."""
    reader = ctx.nodes[index]
    reader.input[port] = ctx.emit(op_type, [reader.input[port]])
    ctx.nodes.insert(index, ctx.nodes.pop())


@rule("Elu", versions=(1,), onnx="Elu")
def elu(ctx, node):
    ctx.emit("Elu", [ctx.inp(node, 0)], [ctx.out(node)], alpha=float(node.get_attributes()["alpha"]))


@rule("Gelu", versions=(2, 7), onnx="Div, Erf or Pow, Tanh, Mul, Add",
      notes="approximation_mode erf (Gelu-2's only mode) or tanh, decomposed (ONNX Gelu is opset 20); the forms "
            "onnxruntime fuses into one Gelu (erf) or FastGelu (tanh) kernel")
def gelu(ctx, node):
    mode = node.get_attributes().get("approximation_mode", "ERF").lower()
    x = ctx.inp(node, 0)
    dtype = numpy_type(ctx.elem(node, 0))
    half = ctx.const(np.array(0.5, dtype), "half")
    one = ctx.const(np.array(1.0, dtype), "one")
    if mode == "erf":  # 0.5 x (1 + erf(x / sqrt 2)); divided, the form onnxruntime fuses into its Gelu kernel
        inner = ctx.emit("Erf", [ctx.emit("Div", [x, ctx.const(np.array(math.sqrt(2), dtype), "sqrt2")])])
    elif mode == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        # the cube as Pow(x, 3) (onnxruntime computes it as x·x·x): the form it fuses into FastGelu
        cube = ctx.emit("Pow", [x, ctx.const(np.array(3.0, dtype), "three")])
        poly = ctx.emit("Add", [x, ctx.emit("Mul", [cube, ctx.const(np.array(0.044715, dtype), "c")])])
        inner = ctx.emit("Tanh", [ctx.emit("Mul", [poly, ctx.const(np.array(math.sqrt(2 / math.pi), dtype),
                                                                   "c")])])
    else:
        raise Unsupported(f"approximation_mode={mode!r}")
    ctx.emit("Mul", [ctx.emit("Mul", [x, half]), ctx.emit("Add", [one, inner])], [ctx.out(node)])


@rule("Clamp", versions=(1,), onnx="Clip",
      notes="for integer data the float bounds are rounded inward (ceil(min), floor(max)), as OpenVINO does")
def clamp(ctx, node):
    attributes = node.get_attributes()
    code = ctx.elem(node, 0)
    low, high = float(attributes["min"]), float(attributes["max"])
    if code in INTEGER_CODES:  # OpenVINO rounds the float bounds inward for integer data
        info = np.iinfo(numpy_type(code))
        low, high = max(math.ceil(low), info.min), min(math.floor(high), info.max)
    dtype = numpy_type(code)
    ctx.emit("Clip", [ctx.inp(node, 0), ctx.const(np.array(low, dtype), "min"),
                      ctx.const(np.array(high, dtype), "max")], [ctx.out(node)])


@rule("Round", versions=(5,),
      onnx="Round (half_to_even); Sign * Floor(|x| + 0.5) (half_away_from_zero)",
      notes="integers pass through")
def round_(ctx, node):
    mode = node.get_attributes().get("mode", "half_to_even")
    x = ctx.inp(node, 0)
    if ctx.elem(node, 0) not in FLOAT_CODES:
        ctx.emit("Identity", [x], [ctx.out(node)])
    elif mode == "half_to_even":
        ctx.emit("Round", [x], [ctx.out(node)])
    elif mode == "half_away_from_zero":  # sign(x) * floor(|x| + 0.5)
        half = ctx.const(np.array(0.5, numpy_type(ctx.elem(node, 0))), "half")
        magnitude = ctx.emit("Floor", [ctx.emit("Add", [ctx.emit("Abs", [x]), half])])
        ctx.emit("Mul", [ctx.emit("Sign", [x]), magnitude], [ctx.out(node)])
    else:
        raise Unsupported(f"mode={mode!r}")


@rule("BitwiseAnd", "BitwiseOr", "BitwiseXor", versions=(13,),
      onnx="BitwiseAnd/Or/Xor; And/Or/Xor on bool",
      refuses=("auto_broadcast pdpd",))
def bitwise(ctx, node):
    ops = {"BitwiseAnd": ("BitwiseAnd", "And"), "BitwiseOr": ("BitwiseOr", "Or"),
           "BitwiseXor": ("BitwiseXor", "Xor")}[node.get_type_name()]
    op = ops[1] if ctx.out_elem(node) == TensorProto.BOOL else ops[0]
    ctx.emit(op, broadcast_inputs(ctx, node), [ctx.out(node)])


@rule("BitwiseNot", versions=(13,),
      onnx="BitwiseNot; Not on bool")
def bitwise_not(ctx, node):
    op = "Not" if ctx.out_elem(node) == TensorProto.BOOL else "BitwiseNot"
    ctx.emit(op, [ctx.inp(node, 0)], [ctx.out(node)])
