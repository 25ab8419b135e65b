"""Activations with parameters: PRelu, Selu, HardSigmoid (the parameterless ones are in elementwise.py)."""
from __future__ import annotations

import numpy as np

from .._registry import Unsupported, rule
from .._types import numpy_type


def _constant_scalar(ctx, node, index: int) -> float | None:
    value = ctx.const_value(node, index)
    return float(value.reshape(-1)[0]) if value is not None and value.size == 1 else None


@rule("PRelu", versions=(1,), onnx="PRelu (slope reshaped to [C, 1, ...])",
      notes="OpenVINO applies a 1-D slope of length C = dim 1 along the channel axis (ONNX would broadcast "
            "it along the last axis): such a slope is reshaped to [C, 1, ...]; other slopes broadcast as numpy",
      refuses=("a 1-D slope longer than 1 whose match with a dynamic channel dim cannot be decided",))
def prelu(ctx, node):
    x, slope = ctx.inp(node, 0), ctx.inp(node, 1)
    data, slope_shape = node.get_input_partial_shape(0), node.get_input_partial_shape(1)
    if data.rank.is_dynamic or slope_shape.rank.is_dynamic:
        raise Unsupported("needs static ranks of data and slope")
    rank = data.rank.get_length()
    if slope_shape.rank.get_length() == 1 and rank >= 3:
        length, channels = slope_shape[0], data[1]
        if length.is_static and length.get_length() == 1:
            pass  # broadcasts the same either way
        elif length.is_static and channels.is_static:
            if length.get_length() == channels.get_length():
                slope = ctx.emit("Unsqueeze", [slope, ctx.const(np.arange(1, rank - 1, dtype=np.int64), "axes")])
        else:
            raise Unsupported("a 1-D slope against a dynamic channel dim (channel-wise or numpy broadcast?)")
    ctx.emit("PRelu", [x, slope], [ctx.out(node)])


@rule("Selu", versions=(1,), onnx="Selu, or Exp, Sub, Mul, Where",
      notes="Constant scalar alpha and lambda become Selu's attributes; otherwise "
            "lambda * (x > 0 ? x : alpha * (exp(x) - 1))")
def selu(ctx, node):
    alpha, scale = _constant_scalar(ctx, node, 1), _constant_scalar(ctx, node, 2)
    x = ctx.inp(node, 0)
    if alpha is not None and scale is not None:
        ctx.emit("Selu", [x], [ctx.out(node)], alpha=alpha, gamma=scale)
        return
    one = ctx.const(np.array(1, _dtype(ctx, node)), "one")
    negative = ctx.emit("Mul", [ctx.inp(node, 1), ctx.emit("Sub", [ctx.emit("Exp", [x]), one])])
    zero = ctx.const(np.array(0, _dtype(ctx, node)), "zero")
    chosen = ctx.emit("Where", [ctx.emit("Greater", [x, zero]), x, negative])
    ctx.emit("Mul", [ctx.inp(node, 2), chosen], [ctx.out(node)])


@rule("HardSigmoid", versions=(1,), onnx="HardSigmoid, or Mul, Add, Clip",
      notes="Constant scalar alpha and beta become attributes; otherwise max(0, min(1, alpha x + beta))")
def hard_sigmoid(ctx, node):
    alpha, beta = _constant_scalar(ctx, node, 1), _constant_scalar(ctx, node, 2)
    x = ctx.inp(node, 0)
    if alpha is not None and beta is not None:
        ctx.emit("HardSigmoid", [x], [ctx.out(node)], alpha=alpha, beta=beta)
        return
    linear = ctx.emit("Add", [ctx.emit("Mul", [x, ctx.inp(node, 1)]), ctx.inp(node, 2)])
    dtype = _dtype(ctx, node)
    ctx.emit("Clip", [linear, ctx.const(np.array(0, dtype), "zero"), ctx.const(np.array(1, dtype), "one")],
             [ctx.out(node)])



def _dtype(ctx, node) -> np.dtype:
    return numpy_type(ctx.elem(node, 0))
