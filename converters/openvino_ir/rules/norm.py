"""Normalisation: MVN-1/6, BatchNormInference-1/5, GroupNormalization-12, NormalizeL2-1, LRN-1.

MVN over the last axis alone becomes LayerNormalization (unit scale, over a 2-D view: _as_layer_norm); the
rest is decomposed into ONNX reductions where ONNX's own op differs (MeanVarianceNormalization has a fixed eps,
GroupNormalization-18 scales per group, LRN is across channels only). f16 data is normalised in f32 and
rounded once at the end, as OpenVINO's CPU plugin does (an f16 mean and variance would lose digits).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule
from .._types import numpy_type
from .conv import _constant, _only_reader, _take


def _begin_f32(ctx, node, index: int = 0) -> tuple[str, int]:
    """Input `index`, cast to f32 when it is f16; and the element type to cast back to."""
    code = ctx.elem(node, index)
    name = ctx.inp(node, index)
    return (ctx.emit("Cast", [name], to=TensorProto.FLOAT), code) if code == TensorProto.FLOAT16 else (name, code)


def _in_work_type(ctx, node, index: int) -> str:
    """A parameter input (scale, bias, ...) in the type the normalisation computes in."""
    name = ctx.inp(node, index)
    return ctx.emit("Cast", [name], to=TensorProto.FLOAT) if ctx.elem(node, index) == TensorProto.FLOAT16 else name


def _finish(ctx, node, value: str, code: int) -> None:
    if code == TensorProto.FLOAT16:
        value = ctx.emit("Cast", [value], to=code)
    ctx.emit("Identity", [value], [ctx.out(node)])


def _scalar(ctx, value: float, code: int, hint: str) -> str:
    work = np.float32 if code == TensorProto.FLOAT16 else numpy_type(code)
    return ctx.const(np.array(value, work), hint)


def _per_axis_reader(node, kind: str, rank: int, width: int) -> tuple | None:
    """(the reader, its [width] f32 constant) when `node`'s only reader is a `kind` (Multiply, Add) of it and a
    constant along the last axis that broadcasts it no further, else None."""
    reader = _only_reader(node, kind)
    if reader is None or reader.get_output_partial_shape(0) != node.get_output_partial_shape(0) or \
            str(reader.get_attributes().get("auto_broadcast", "numpy")).lower() != "numpy":
        return None
    other = 1 if reader.input_value(0).get_node().get_name() == node.get_name() else 0
    value = _constant(reader.input_value(other))
    if value is None or value.dtype != np.float32 or value.ndim > rank or value.size != width or \
            value.shape[-1] != width:
        return None
    return reader, value.reshape(width)


def _as_layer_norm(ctx, node, x: str, axes, normalize_variance: bool, eps: float, inside: bool,
                   code: int) -> str | None:
    """MVN over the last axis alone (eps inside the root) as LayerNormalization, else None. A Multiply by a
    per-last-axis constant that is the MVN's only reader becomes its scale (a LayerNorm's gamma; nncf's
    smooth-quant scale before a pre-LN transformer's quantized matmul), an Add of one after that its bias (beta):
    taken, as the kernel computes the same product or sum (bit for bit; with both, a fused multiply-add: one
    rounding fewer, ~1 ulp apart).

    onnxruntime runs it as one kernel where the decomposition takes seven, and its result is as close to the f64
    value (docs/performance.md). It sees a 2-D view of x: onnxruntime fuses a residual Add of two 3-D tensors
    and the LayerNormalization after it into SkipLayerNormalization, whose CPU kernel measured slower than
    the seven ops."""
    shape = node.get_input_partial_shape(0)
    if axes is None or not (normalize_variance and inside) or not shape.rank.is_static:
        return None
    rank = shape.rank.get_length()
    if rank < 2 or {int(a) % rank for a in axes} != {rank - 1} or not shape[rank - 1].is_static:
        return None
    width = shape[rank - 1].get_length()
    gamma = _per_axis_reader(node, "Multiply", rank, width) if code == TensorProto.FLOAT else None
    beta = _per_axis_reader(gamma[0] if gamma else node, "Add", rank, width) if code == TensorProto.FLOAT else None
    for taken in (gamma, beta):
        if taken is not None:
            _take(ctx, node, taken[0])
    parameters = [ctx.const(gamma[1] if gamma else np.ones(width, np.float32), "scale")]
    parameters += [ctx.const(beta[1], "bias")] if beta else []
    if rank == 2:
        return ctx.emit("LayerNormalization", [x] + parameters, axis=-1, epsilon=eps)
    rows = ctx.emit("Flatten", [x], axis=rank - 1)
    normal = ctx.emit("LayerNormalization", [rows] + parameters, axis=-1, epsilon=eps)
    dims = ctx.const(np.array(list(shape.to_shape()), np.int64), "shape") if shape.is_static else ctx.emit("Shape", [x])
    return ctx.emit("Reshape", [normal, dims])


def _mvn(ctx, x: str, axes: str, normalize_variance: bool, eps: float, inside: bool, code: int) -> str:
    centred = ctx.emit("Sub", [x, ctx.emit("ReduceMean", [x, axes], keepdims=1)])
    if not normalize_variance:
        return centred
    variance = ctx.emit("ReduceMean", [ctx.emit("Mul", [centred, centred]), axes], keepdims=1)
    epsilon = _scalar(ctx, eps, code, "eps")
    if inside:
        scale = ctx.emit("Sqrt", [ctx.emit("Add", [variance, epsilon])])
    else:
        scale = ctx.emit("Add", [ctx.emit("Sqrt", [variance]), epsilon])
    return ctx.emit("Div", [centred, scale])


@rule("MVN", versions=(2,), onnx="LayerNormalization (last axis: Flatten, Reshape), else ReduceMean, Sub, Mul, "
      "Sqrt, Add, Div",  # MVN-1 is recorded as opset2
      notes="reduction_axes, else across_channels: axes 1.. or 2..; eps added inside the square root "
            "(what OpenVINO computes; checked against its CPU plugin)")
def mvn_1(ctx, node):
    attributes = node.get_attributes()
    x, code = _begin_f32(ctx, node)
    axes = list(attributes.get("reduction_axes") or [])
    if not axes:
        rank = ctx.rank(node, 0)
        if rank is None:
            raise Unsupported("across_channels without reduction_axes needs a static rank")
        axes = list(range(1 if attributes.get("across_channels") else 2, rank))
    variance, eps = bool(attributes.get("normalize_variance", True)), float(attributes["eps"])
    result = (_as_layer_norm(ctx, node, x, axes, variance, eps, True, code)
              or _mvn(ctx, x, ctx.const(np.array(axes, np.int64), "axes"), variance, eps, True, code))
    _finish(ctx, node, result, code)


@rule("MVN", versions=(6,), onnx="LayerNormalization (last axis, eps inside: Flatten, Reshape), else ReduceMean, "
      "Sub, Mul, Sqrt, Add, Div",
      notes="axes input (may be computed), eps_mode inside_sqrt / outside_sqrt, normalize_variance")
def mvn_6(ctx, node):
    attributes = node.get_attributes()
    x, code = _begin_f32(ctx, node)
    mode = str(attributes.get("eps_mode", "inside_sqrt")).lower()
    if mode not in ("inside_sqrt", "outside_sqrt"):
        raise Unsupported(f"eps_mode={mode!r}")
    variance, eps = bool(attributes.get("normalize_variance", True)), float(attributes["eps"])
    inside = mode == "inside_sqrt"
    axes = ctx.const_value(node, 1)
    axes = None if axes is None else axes.reshape(-1)
    result = (_as_layer_norm(ctx, node, x, axes, variance, eps, inside, code)
              or _mvn(ctx, x, ctx.int64_vector(node, 1), variance, eps, inside, code))
    _finish(ctx, node, result, code)


@rule("BatchNormInference", versions=(1, 5), onnx="BatchNormalization",
      notes="version 1 takes (gamma, beta, data, mean, variance), version 5 (data, gamma, beta, mean, "
            "variance); channel axis 1")
def batch_norm(ctx, node):
    order = (2, 0, 1, 3, 4) if node.get_type_info().version_id == "opset1" else (0, 1, 2, 3, 4)
    data, code = _begin_f32(ctx, node, order[0])
    inputs = [data] + [_in_work_type(ctx, node, i) for i in order[1:]]
    result = ctx.emit("BatchNormalization", inputs, epsilon=float(node.get_attributes()["epsilon"]))
    _finish(ctx, node, result, code)


@rule("GroupNormalization", versions=(12,), onnx="Reshape, ReduceMean, Sub, Mul, Sqrt, Div, Unsqueeze, Add",
      notes="per-channel scale and bias (ONNX GroupNormalization-18 scales per group, so it is not used)",
      refuses=("a dynamic input rank",))
def group_normalization(ctx, node):
    attributes = node.get_attributes()
    rank = ctx.rank(node, 0)
    if rank is None:
        raise Unsupported("needs a static input rank")
    x, code = _begin_f32(ctx, node)
    groups = int(attributes["num_groups"])
    grouped = ctx.emit("Reshape", [x, ctx.const(np.array([0, groups, -1], np.int64), "grouped")])
    normal = _mvn(ctx, grouped, ctx.const(np.array([2], np.int64), "axes"), True, float(attributes["epsilon"]),
                  True, code)
    normal = ctx.emit("Reshape", [normal, ctx.emit("Shape", [x])])
    spread = ctx.const(np.arange(1, rank - 1, dtype=np.int64), "spatial_axes")
    scale = ctx.emit("Unsqueeze", [_in_work_type(ctx, node, 1), spread]) if rank > 2 else _in_work_type(ctx, node, 1)
    bias = ctx.emit("Unsqueeze", [_in_work_type(ctx, node, 2), spread]) if rank > 2 else _in_work_type(ctx, node, 2)
    _finish(ctx, node, ctx.emit("Add", [ctx.emit("Mul", [normal, scale]), bias]), code)


@rule("NormalizeL2", versions=(1,), onnx="ReduceSumSquare, Add/Max, Sqrt, Div",
      notes="x / sqrt(sum(x^2) + eps) (eps_mode add) or x / sqrt(max(sum(x^2), eps)) (max)",
      refuses=("empty or computed axes: with empty axes OpenVINO (CPU and reference) outputs 1 everywhere",))
def normalize_l2(ctx, node):
    attributes = node.get_attributes()
    x, code = _begin_f32(ctx, node)
    mode = str(attributes.get("eps_mode", "add")).lower()
    axes = ctx.const_value(node, 1)
    if axes is None or axes.size == 0:
        raise Unsupported("axes must be a non-empty Constant (with empty axes OpenVINO outputs 1 everywhere)")
    squares = ctx.emit("ReduceSumSquare", [x, ctx.int64_vector(node, 1)], keepdims=1)
    epsilon = _scalar(ctx, float(attributes["eps"]), code, "eps")
    if mode == "add":
        total = ctx.emit("Add", [squares, epsilon])
    elif mode == "max":
        total = ctx.emit("Max", [squares, epsilon])
    else:
        raise Unsupported(f"eps_mode={mode!r}")
    _finish(ctx, node, ctx.emit("Div", [x, ctx.emit("Sqrt", [total])]), code)


@rule("LRN", versions=(1,), onnx="Mul, Unsqueeze, AveragePool, Squeeze, Add, Pow, Div",
      notes="x / (bias + alpha/size^n * sum of squares)^beta, the window running (size-1)//2 either side "
            "(an even size loses a pixel; ONNX LRN's window is asymmetric then, and channel-only): an "
            "AveragePool of x^2 over the axes (channel made spatial by an Unsqueeze)",
      refuses=("axes not a Constant", "a dynamic input rank", "axes other than [1] or all spatial axes: "
               "OpenVINO's CPU plugin runs no others and its reference has no evaluate, so nothing checks them"))
def lrn(ctx, node):
    attributes = node.get_attributes()
    rank = ctx.rank(node, 0)
    axes = ctx.const_value(node, 1)
    if rank is None or axes is None:
        raise Unsupported("needs a static rank and Constant axes")
    axes = sorted({int(a) + rank if a < 0 else int(a) for a in axes.reshape(-1)})
    if axes != [1] and axes != list(range(2, rank)):
        raise Unsupported(f"axes {axes}: only [1] or all spatial axes, the ones OpenVINO's CPU plugin runs "
                          "(no OpenVINO implementation to check others against)")
    x, code = _begin_f32(ctx, node)
    size = int(attributes["size"])
    # x^2 as [N, 1, C, ...]: every axis from 1 on becomes a spatial axis of the pool
    squares = ctx.emit("Unsqueeze", [ctx.emit("Mul", [x, x]), ctx.const(np.array([1], np.int64), "one")])
    # OpenVINO's window runs (size-1)//2 either side (an even size loses one), the divisor stays size^n
    half = (size - 1) // 2
    kernel = [2 * half + 1 if axis in axes else 1 for axis in range(1, rank)]
    pads = [half if axis in axes else 0 for axis in range(1, rank)]
    mean = ctx.emit("AveragePool", [squares], kernel_shape=kernel, pads=pads + pads, count_include_pad=1)
    mean = ctx.emit("Squeeze", [mean, ctx.const(np.array([1], np.int64), "one")])
    if 2 * half + 1 != size:  # the pool divided by (size-1)^n, not size^n
        ratio = ((2 * half + 1) / size) ** len(axes)
        mean = ctx.emit("Mul", [mean, _scalar(ctx, ratio, code, "ratio")])
    # alpha/size^n * sum == alpha * the window mean
    scaled = ctx.emit("Mul", [mean, _scalar(ctx, float(attributes["alpha"]), code, "alpha")])
    base = ctx.emit("Add", [scaled, _scalar(ctx, float(attributes["bias"]), code, "bias")])
    denominator = ctx.emit("Pow", [base, _scalar(ctx, float(attributes["beta"]), code, "beta")])
    _finish(ctx, node, ctx.emit("Div", [x, denominator]), code)
