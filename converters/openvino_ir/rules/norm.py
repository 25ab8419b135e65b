"""Normalisation: MVN-1/6, BatchNormInference-1/5, GroupNormalization-12, NormalizeL2-1, LRN-1.

Decomposed into ONNX reductions where ONNX's own op differs (MeanVarianceNormalization has a fixed eps,
GroupNormalization-18 scales per group, LRN is across channels only). f16 data is normalised in f32 and
rounded once at the end, as OpenVINO's CPU plugin does (an f16 mean and variance would lose digits).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule
from .._types import numpy_type


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


def _layer_norm(ctx, node, x: str, axes: list, eps: float, code: int) -> str | None:
    """MVN with eps inside the square root over the trailing axes k.. of a static size: ONNX
    LayerNormalization (the same formula; unit scale, no bias) of the 2-D view [rows, normalised size], put
    back into x's shape; None for other axes or a dynamic size. The 2-D view keeps onnxruntime from fusing a
    residual Add before it into SkipLayerNormalization, whose CPU kernel measured 2-2.8x slower than the
    decomposition; the plain LayerNormalization kernel ~20% faster than it (docs/performance.md)."""
    shape = node.get_input_partial_shape(0)
    if shape.rank.is_dynamic or code not in (TensorProto.FLOAT, TensorProto.FLOAT16):  # (f16: computed in f32)
        return None
    rank = shape.rank.get_length()
    axes = sorted(int(a) + rank if a < 0 else int(a) for a in axes)
    if not axes or axes != list(range(axes[0], rank)) or any(shape[a].is_dynamic for a in axes):
        return None
    size = int(np.prod([shape[a].get_length() for a in axes]))
    rows = ctx.emit("Flatten", [x], axis=axes[0])
    normal = ctx.emit("LayerNormalization", [rows, ctx.const(np.ones(size, np.float32), "unit_scale")],
                      axis=-1, epsilon=eps)
    return ctx.emit("Reshape", [normal, ctx.emit("Shape", [x])])


@rule("MVN", versions=(2,), onnx="ReduceMean, Sub, Mul, Sqrt, Add, Div",  # MVN-1 is recorded as opset2
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
    normalize_variance, eps = bool(attributes.get("normalize_variance", True)), float(attributes["eps"])
    result = _layer_norm(ctx, node, x, axes, eps, code) if normalize_variance else None
    if result is None:
        result = _mvn(ctx, x, ctx.const(np.array(axes, np.int64), "axes"), normalize_variance, eps, True, code)
    _finish(ctx, node, result, code)


@rule("MVN", versions=(6,), onnx="ReduceMean, Sub, Mul, Sqrt, Add, Div",
      notes="axes input (may be computed), eps_mode inside_sqrt / outside_sqrt, normalize_variance")
def mvn_6(ctx, node):
    attributes = node.get_attributes()
    x, code = _begin_f32(ctx, node)
    mode = str(attributes.get("eps_mode", "inside_sqrt")).lower()
    if mode not in ("inside_sqrt", "outside_sqrt"):
        raise Unsupported(f"eps_mode={mode!r}")
    normalize_variance, eps = bool(attributes.get("normalize_variance", True)), float(attributes["eps"])
    axes = ctx.const_value(node, 1)
    result = None
    if normalize_variance and mode == "inside_sqrt" and axes is not None:
        result = _layer_norm(ctx, node, x, axes.reshape(-1).tolist(), eps, code)
    if result is None:
        result = _mvn(ctx, x, ctx.int64_vector(node, 1), normalize_variance, eps, mode == "inside_sqrt", code)
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
