"""Interpolate-4 and -11 as ONNX Resize (opset 18: axes, antialias).

Mode names, coordinate_transformation_mode and nearest_mode names are shared by the two specs (ONNX took
them from the same TF/PyTorch conventions). Each accepted configuration was compared with OpenVINO's CPU
plugin (tests/test_ir_rules_tensor.py); the others are refused with the reason.
"""
from __future__ import annotations

import numpy as np

from onnx import TensorProto

from .._registry import Unsupported, rule
from .._types import FLOAT_CODES

#: OpenVINO mode -> ONNX Resize mode
_MODES = {"nearest": "nearest", "linear": "linear", "linear_onnx": "linear", "cubic": "cubic"}
_COORDINATES = {"half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners"}
_NEAREST = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}

_REFUSES = (
    "antialias=true in mode linear when some resized axes grow and others shrink, or when that is not known "
    "(scales or sizes not Constants, dynamic input dims): OpenVINO's filter on the growing axes differs from ONNX "
    "Resize's (measured: up to 2.6 apart on unit-normal data)",
    "antialias=true in mode linear when downscaling data other than f32 (not measured)",
    "bilinear_pillow / bicubic_pillow on integer data, or with scales and dynamic output sizes",
    "nearest_mode simple: no ONNX equivalent",
    "a computed axes input: Resize takes axes as an attribute",
    "integer data with linear or cubic modes: how the interpolated value is rounded is not specified alike",
)


def _axes(ctx, node, index: int) -> list[int] | None:
    if node.get_input_size() <= index:
        return None
    value = ctx.const_value(node, index)
    if value is None:
        raise Unsupported("axes must be a Constant (ONNX Resize takes them as an attribute)")
    return [int(a) for a in value.reshape(-1)]


def _scaling(ctx, node, by_sizes: bool, axes, sizes_index: int, scales_index: int) -> str | None:
    """'up' when every resized axis provably grows or keeps its size (antialiasing then does nothing), 'down'
    when every one provably shrinks or keeps it, None when mixed or unknown."""
    if not by_sizes:
        scales = ctx.const_value(node, scales_index)
        if scales is None:
            return None
        ratios = [float(v) for v in scales.reshape(-1)]
    else:
        sizes = ctx.const_value(node, sizes_index)
        shape = node.get_input_partial_shape(0)
        if sizes is None or shape.rank.is_dynamic:
            return None
        rank = shape.rank.get_length()
        dims = [shape[a] for a in (range(rank) if axes is None else [a % rank for a in axes])]
        if not all(d.is_static for d in dims):
            return None
        ratios = [int(s) / max(d.get_length(), 1) for d, s in zip(dims, sizes.reshape(-1))]
    if all(r >= 1 for r in ratios):
        return "up"
    return "down" if all(r <= 1 for r in ratios) else None


def _known_length(ctx, node, index: int, name: str, axes) -> str:
    """`name` reshaped to its known length when its shape is dynamic (onnxruntime's Resize shape
    inference reads a dynamic length as 0 and refuses the model)."""
    shape = node.get_input_partial_shape(index)
    if shape.rank.is_static and shape.rank.get_length() == 1 and shape[0].is_static:
        return name
    length = len(axes) if axes is not None else ctx.rank(node, 0)
    if length is None:
        raise Unsupported("scales/sizes of dynamic length need axes or data of static rank")
    return ctx.emit("Reshape", [name, ctx.const(np.array([length], np.int64), "length")])


#: Pillow modes (Interpolate-11) -> ONNX Resize mode; Pillow's filters are ONNX's antialiased linear / cubic
#: (a = -0.5, exclude_outside) at half_pixel coordinates. OpenVINO ignores coordinate_transformation_mode,
#: antialias and cube_coeff for them (measured).
_PILLOW = {"bilinear_pillow": "linear", "bicubic_pillow": "cubic"}


def _resize(ctx, node, attributes: dict, sizes_index: int, scales_index: int, axes_index: int) -> None:
    mode = str(attributes["mode"]).lower()
    if mode in _PILLOW:
        if ctx.elem(node, 0) not in FLOAT_CODES:
            raise Unsupported(f"mode={mode!r} on integer data (rounding of interpolated values differs)")
        attributes = dict(attributes, coordinate_transformation_mode="half_pixel", cube_coeff=-0.5)
        axes = _axes(ctx, node, axes_index)
        if str(attributes["shape_calculation_mode"]).lower() == "scales":
            # Pillow's filter scale is output / input size, which ONNX Resize uses only when given sizes
            shape = node.get_output_partial_shape(0)
            rank = shape.rank.get_length() if shape.rank.is_static else None
            resized = range(rank) if axes is None and rank is not None else [a % rank for a in axes or []]
            if rank is None or any(shape[a].is_dynamic for a in resized):
                raise Unsupported(f"mode={mode!r} with scales needs static output sizes (Pillow scales by "
                                  "output / input size)")
            sizes = ctx.const(np.array([shape[a].get_length() for a in resized], np.int64), "sizes")
            data = _padded(ctx, node, attributes)
            ctx.emit("Resize", [data, "", "", sizes], [ctx.out(node)], mode=_PILLOW[mode], antialias=1,
                     exclude_outside=1, cubic_coeff_a=-0.5, coordinate_transformation_mode="half_pixel",
                     **(dict(axes=list(resized)) if axes is not None else {}))
            return
        _emit_resize(ctx, node, attributes, sizes_index, scales_index, axes,
                     dict(mode=_PILLOW[mode], antialias=1, exclude_outside=1))
        return
    if mode not in _MODES:
        raise Unsupported(f"mode={mode!r} has no exactly equivalent ONNX Resize mode")
    coordinates = str(attributes["coordinate_transformation_mode"]).lower()
    if coordinates not in _COORDINATES:
        raise Unsupported(f"coordinate_transformation_mode={coordinates!r}")
    nearest = str(attributes["nearest_mode"]).lower()
    if mode == "nearest" and nearest not in _NEAREST:
        raise Unsupported(f"nearest_mode={nearest!r} has no ONNX equivalent")
    if mode != "nearest" and ctx.elem(node, 0) not in FLOAT_CODES:
        raise Unsupported(f"mode={mode!r} on integer data (rounding of interpolated values differs)")
    axes = _axes(ctx, node, axes_index)
    by_sizes = str(attributes["shape_calculation_mode"]).lower() == "sizes"
    options = dict(mode=_MODES[mode], exclude_outside=0)
    # OpenVINO antialiases in mode linear only (its reference; linear_onnx and cubic ignore the flag), and only
    # where an axis shrinks; its CPU plugin ignores the flag in every mode (observed on 2026.4)
    if attributes.get("antialias", False) and mode == "linear":
        scaling = _scaling(ctx, node, by_sizes, axes, sizes_index, scales_index)
        if scaling is None:
            raise Unsupported("antialias=true in mode linear with axes that grow and others that shrink (or "
                              "computed scales/sizes, dynamic dims): OpenVINO's filter differs from ONNX Resize's")
        if scaling == "down":
            if ctx.elem(node, 0) != TensorProto.FLOAT:
                raise Unsupported("antialias=true in mode linear when downscaling data other than f32 (not measured)")
            options = dict(mode="linear", antialias=1, exclude_outside=1)  # ONNX's filter is OpenVINO's there
    _emit_resize(ctx, node, attributes, sizes_index, scales_index, axes, options)


def _padded(ctx, node, attributes: dict) -> str:
    """Input 0 with pads_begin/pads_end of zeros (a Pad), or as it is."""
    data = ctx.inp(node, 0)
    begin = [int(p) for p in attributes.get("pads_begin", [])]
    end = [int(p) for p in attributes.get("pads_end", [])]
    if any(begin) or any(end):
        rank = ctx.rank(node, 0)
        if rank is None:
            raise Unsupported("pads need data of static rank")
        begin, end = (begin + [0] * rank)[:rank], (end + [0] * rank)[:rank]
        if min(begin + end) < 0:
            raise Unsupported("negative pads")
        data = ctx.emit("Pad", [data, ctx.const(np.array(begin + end, np.int64), "pads")], mode="constant")
    return data


def _emit_resize(ctx, node, attributes: dict, sizes_index: int, scales_index: int, axes, options: dict) -> None:
    """Pad (pads_begin/end) + Resize with OpenVINO's coordinates, nearest mode and cubic coefficient."""
    by_sizes = str(attributes["shape_calculation_mode"]).lower() == "sizes"
    data = _padded(ctx, node, attributes)
    extra = dict(axes=axes) if axes is not None else {}
    if by_sizes:
        inputs = [data, "", "", _known_length(ctx, node, sizes_index, ctx.int64_vector(node, sizes_index), axes)]
    else:
        scales = ctx.inp(node, scales_index)
        if ctx.elem(node, scales_index) != TensorProto.FLOAT:  # Resize takes f32 scales
            scales = ctx.emit("Cast", [scales], to=TensorProto.FLOAT)
        inputs = [data, "", _known_length(ctx, node, scales_index, scales, axes)]
    ctx.emit("Resize", inputs, [ctx.out(node)],
             coordinate_transformation_mode=str(attributes["coordinate_transformation_mode"]).lower(),
             nearest_mode=str(attributes["nearest_mode"]).lower(),
             cubic_coeff_a=float(attributes.get("cube_coeff", -0.75)), **options, **extra)


_NOTES = ("modes nearest, linear and linear_onnx -> linear (the same without antialiasing), cubic "
          "(cubic_coeff_a = cube_coeff); coordinate_transformation_mode and nearest_mode (round_prefer_floor/ceil, "
          "floor, ceil) by name; antialias: OpenVINO's reference filters in mode linear only (linear_onnx and cubic ignore "
          "it), when every resized axis shrinks or keeps its size as ONNX Resize linear with antialias and "
          "exclude_outside (sums in another order), a no-op when every axis grows; OpenVINO's CPU plugin ignores "
          "antialias in every mode (observed on 2026.4: the reference is kept); shape_calculation_mode "
          "sizes -> sizes, scales -> scales; pads_begin/end -> a zero Pad before; axes -> the axes attribute. "
          "Interpolate-11 bilinear_pillow / bicubic_pillow: Resize linear / cubic (a = -0.5) with antialias and "
          "exclude_outside at half_pixel (Pillow's filters; OpenVINO ignores the other attributes for them)")


@rule("Interpolate", versions=(4,), onnx="Resize (+ Pad)", notes=_NOTES, refuses=_REFUSES)
def interpolate_4(ctx, node):  # inputs: data, sizes, scales[, axes]
    _resize(ctx, node, node.get_attributes(), 1, 2, 3)


@rule("Interpolate", versions=(11,), onnx="Resize (+ Pad)", notes=_NOTES, refuses=_REFUSES)
def interpolate_11(ctx, node):  # inputs: data, scales_or_sizes[, axes]
    _resize(ctx, node, node.get_attributes(), 1, 1, 2)


def _v1_scaling(ctx, node, axes: list[int]) -> str | None:
    """'up' / 'down' when every resized axis grows (or keeps) / shrinks, from a constant output_shape and
    static input dims; None when unknown or mixed."""
    sizes = ctx.const_value(node, 1)
    shape = node.get_input_partial_shape(0)
    if sizes is None or shape.rank.is_dynamic or any(shape[a].is_dynamic for a in axes):
        return None
    pairs = [(int(s), shape[a].get_length()) for s, a in zip(sizes.reshape(-1), axes)]
    if all(out >= size for out, size in pairs):
        return "up"
    if all(out < size for out, size in pairs):
        return "down"
    return None


@rule("Interpolate", versions=(1,), onnx="Resize (+ Pad)",
      notes="as OpenVINO runs it (ConvertInterpolate1ToInterpolate4): sizes from output_shape; align_corners "
            "or else asymmetric coordinates, except linear without pads on other than the NCHW axes {2, 3}, "
            "which is half_pixel; nearest is nearest_mode simple: floor when every axis upscales, ceil "
            "when every axis downscales; antialias ignored where OpenVINO ignores it (linear on data of rank < 5, "
            "which is linear_onnx, and cubic: measured on its reference and CPU plugin)",
      refuses=("mode area: no ONNX equivalent", "linear on data of rank > 5",
               "nearest with mixed or unknown up/downscaling (mode simple depends on it)",
               "antialias with linear on 5-D data (Interpolate-4 mode linear) when not provably upscaling: not "
               "measured"))
def interpolate_1(ctx, node):
    attributes = node.get_attributes()
    mode = str(attributes["mode"]).lower()
    rank = ctx.rank(node, 0)
    if rank is None:
        raise Unsupported("data needs a static rank")
    axes = sorted(int(a) % rank for a in attributes["axes"])
    pads_begin = [int(p) for p in attributes.get("pads_begin", [])]
    pads_end = [int(p) for p in attributes.get("pads_end", [])]
    no_pads = not any(pads_begin) and not any(pads_end)
    if mode == "linear":
        if rank > 5:
            raise Unsupported("linear on data of rank > 5 (OpenVINO does not convert it)")
        v4_mode = "linear_onnx" if rank < 5 else "linear"
    elif mode in ("nearest", "cubic", "linear_onnx"):
        v4_mode = mode
    else:
        raise Unsupported(f"mode={mode!r} has no ONNX Resize equivalent")
    if v4_mode != "nearest" and ctx.elem(node, 0) not in FLOAT_CODES:
        raise Unsupported(f"mode={mode!r} on integer data (rounding of interpolated values differs)")
    if attributes.get("align_corners", False):
        coordinates = "align_corners"
    elif v4_mode in ("linear", "linear_onnx") and no_pads and not (rank == 4 and axes == [2, 3]):
        coordinates = "half_pixel"
    else:
        coordinates = "asymmetric"
    nearest = "floor"
    scaling = _v1_scaling(ctx, node, axes)
    if v4_mode == "nearest":
        if scaling is None:
            raise Unsupported("nearest needs a constant output_shape that upscales every axis or downscales "
                              "every axis (OpenVINO's nearest_mode simple depends on it)")
        nearest = "floor" if scaling == "up" else "ceil"
    antialias = bool(attributes.get("antialias", False)) and v4_mode == "linear"  # the others ignore it
    if antialias and scaling != "up":
        raise Unsupported("antialias=true with linear on 5-D data when not provably upscaling (not measured)")
    data = ctx.inp(node, 0)
    if not no_pads:
        begin, end = (pads_begin + [0] * rank)[:rank], (pads_end + [0] * rank)[:rank]
        data = ctx.emit("Pad", [data, ctx.const(np.array(begin + end, np.int64), "pads")], mode="constant")
    sizes = _known_length(ctx, node, 1, ctx.int64_vector(node, 1), axes)
    ctx.emit("Resize", [data, "", "", sizes], [ctx.out(node)], mode=_MODES[v4_mode],
             coordinate_transformation_mode=coordinates, nearest_mode=nearest, cubic_coeff_a=-0.75,
             exclude_outside=0, axes=axes)
