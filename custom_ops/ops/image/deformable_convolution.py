"""DeformableConvolution-8 (and -1) (OpenVINO): 2-D convolution whose taps sample the input at learned offsets.

data [N, C, H, W], offsets [N, DG*2*KH*KW, OH, OW] (per deformable group DG and tap k = ky*KW + kx: the
y offset in channel 2k, the x offset in 2k+1), filters [O, C/group, KH, KW], optional mask [N, DG*KH*KW,
OH, OW] (v8; absent: 1). Input channel c belongs to deformable group c // (C/DG). Tap (ky, kx) of output
(oy, ox) samples y = oy*stride - pad_begin + ky*dilation + offset_y (likewise x) bilinearly: without
bilinear_interpolation_pad a sample is taken for y in [0, H) only, the corners clamped into the map; with
it, for trunc(y) in (-1, H) with the corners outside the map read as 0. The reference's order: per output,
sum over the group's input channels, then taps (ky, kx), of float32 interpolation * filter * mask, in the
element type (the kernel repeats this order, vectorised over N, O, OH, OW).
Output [N, O, OH, OW], OH = (H + pads - dilation*(KH-1) - 1) // stride + 1 (auto_pad same_upper/lower and
valid as in Convolution).
"""
from __future__ import annotations

from typing import NamedTuple

import ml_dtypes
import numpy as np

from custom_ops import _checks as check
from custom_ops._types import FLOAT_TYPES, is_float
from custom_ops.errors import OpError
from custom_ops.unit import (REQUIRED, Absent, Attribute, AttributeMap, Case, DialectUnit, Divergence, OpenVINO,
                             OpSpec, Port)

OP = "DeformableConvolution"
TYPES = FLOAT_TYPES
AUTO_PADS = ("explicit", "same_upper", "same_lower", "valid")
PORTS = ("data", "offsets", "filters", "mask")


def _pads(size, kernel, stride, dilation, begin, end, auto_pad):
    if auto_pad == "valid":
        return 0, 0
    if auto_pad in ("same_upper", "same_lower"):
        total = max((-(-size // stride) - 1) * stride + dilation * (kernel - 1) + 1 - size, 0)
        small = total // 2
        return (small, total - small) if auto_pad == "same_upper" else (total - small, small)
    return begin, end


def _pair(name, value):
    value = [int(v) for v in value]
    if len(value) != 2:
        raise OpError(OP, f"attribute '{name}'", "must have 2 values (2-D convolution)", value=value)
    return value


def _bilinear(plane, y, x, pad):
    """Bilinear samples of plane [N, Cd, H, W] at y, x [N, K, OH, OW] (float32) -> [N, Cd, K, OH, OW]."""
    height, width = plane.shape[2], plane.shape[3]
    floor_y, floor_x = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    if pad:
        y1, x1 = floor_y, floor_x
        y2, x2 = y1 + 1, x1 + 1
    else:
        y1, x1 = np.maximum(floor_y, 0), np.maximum(floor_x, 0)
        y2 = np.minimum(np.ceil(y).astype(np.int64), height - 1)
        x2 = np.minimum(np.ceil(x).astype(np.int64), width - 1)
    dist_x = x - x1.astype(np.float32)
    dist_y = y - y1.astype(np.float32)
    batch = np.arange(plane.shape[0])[:, None, None, None]

    def corner(yy, xx):
        inside = (yy >= 0) & (yy < height) & (xx >= 0) & (xx < width)
        values = plane[batch[..., None], :, np.clip(yy, 0, height - 1)[..., None],
                       np.clip(xx, 0, width - 1)[..., None]][..., 0, :]          # [N, K, OH, OW, Cd]
        values = np.moveaxis(values, -1, 1).astype(np.float32)
        return np.where(inside[:, None], values, np.float32(0))

    one = np.float32(1)
    wx0, wy0 = (one - dist_x)[:, None], (one - dist_y)[:, None]
    wx1, wy1 = dist_x[:, None], dist_y[:, None]
    return (wx0 * wy0 * corner(y1, x1) + wx0 * wy1 * corner(y2, x1)
            + wx1 * wy0 * corner(y1, x2) + wx1 * wy1 * corner(y2, x2))


class _Window(NamedTuple):
    """The sampling window: strides, dilations, (begin, end) pads per spatial axis, output size."""
    strides: list
    dilations: list
    py: tuple
    px: tuple
    out_h: int
    out_w: int


def deformable_convolution(data, offsets, filters, mask=None, *, strides, pads_begin, pads_end, dilations,
                           auto_pad="explicit", group=1, deformable_group=1, bilinear_interpolation_pad=0):
    data, offsets, filters, mask = _inputs(data, offsets, filters, mask)
    dtype = data.dtype
    auto_pad = check.choice(OP, "auto_pad", auto_pad, AUTO_PADS)
    strides, dilations = _pair("strides", strides), _pair("dilations", dilations)
    pads_begin, pads_end = _pair("pads_begin", pads_begin), _pair("pads_end", pads_end)
    if min(strides) < 1 or min(dilations) < 1:
        raise OpError(OP, "attribute 'strides'" if min(strides) < 1 else "attribute 'dilations'",
                      "values must be >= 1", value=strides if min(strides) < 1 else dilations)
    if auto_pad == "explicit" and min(pads_begin + pads_end) < 0:
        raise OpError(OP, "attribute 'pads_begin'", "pads must be >= 0", value=pads_begin + pads_end)
    pad = check.flag(OP, "bilinear_interpolation_pad", bilinear_interpolation_pad)
    batch, channels, height, width = data.shape
    out_channels, group_channels, kh, kw = filters.shape
    group, deformable_group = int(group), int(deformable_group)
    if group < 1 or channels % group or out_channels % group or group_channels * group != channels:
        raise OpError(OP, "input 'filters'", f"must have shape [O, C/group, KH, KW] with C and O divisible by "
                      f"group {group}", value=filters.shape, allowed=f"C = {channels}")
    if deformable_group < 1 or channels % deformable_group:
        raise OpError(OP, "attribute 'deformable_group'", f"must divide the input channels {channels}",
                      value=deformable_group)
    window = _window(data, filters, strides, dilations, pads_begin, pads_end, auto_pad)
    out_h, out_w = window.out_h, window.out_w
    taps = kh * kw
    want = (batch, deformable_group * 2 * taps, out_h, out_w)
    if offsets.shape != want:
        raise OpError(OP, "input 'offsets'", "must have shape [N, deformable_group*2*KH*KW, OH, OW]",
                      value=offsets.shape, allowed=want)
    if mask is not None and mask.shape != (batch, deformable_group * taps, out_h, out_w):
        raise OpError(OP, "input 'mask'", "must have shape [N, deformable_group*KH*KW, OH, OW]",
                      value=mask.shape, allowed=(batch, deformable_group * taps, out_h, out_w))
    if batch == 0 or out_channels == 0 or channels == 0:
        return np.zeros((batch, out_channels, out_h, out_w), dtype)

    offsets = offsets.reshape(batch, deformable_group, taps, 2, out_h, out_w)
    mask = (np.ones((batch, deformable_group, taps, out_h, out_w), dtype) if mask is None
            else mask.reshape(batch, deformable_group, taps, out_h, out_w))
    samples, taken = _samples(data, offsets, window, kw, pad)
    return _accumulate(samples, taken, mask, filters, group)


def _inputs(data, offsets, filters, mask):
    """The four inputs as checked arrays of one float type and rank 4 (mask: None when absent)."""
    arrays = [check.as_array(OP, name, value) for name, value in zip(PORTS, (data, offsets, filters, mask))
              if value is not None]
    for name, array in zip(PORTS, arrays):
        check.data_type(OP, name, array, TYPES)
        if array.dtype != arrays[0].dtype:
            raise OpError(OP, f"input '{name}'", "element type must equal data's", value=str(array.dtype),
                          allowed=str(arrays[0].dtype))
        if array.ndim != 4:
            raise OpError(OP, f"input '{name}'", "must have rank 4", value=array.shape)
    return (*arrays[:3], arrays[3] if len(arrays) == 4 else None)


def _window(data, filters, strides, dilations, pads_begin, pads_end, auto_pad) -> _Window:
    """The pads auto_pad gives and the output size; refused when the dilated kernel exceeds the input."""
    height, width = data.shape[2:]
    kh, kw = filters.shape[2:]
    py = _pads(height, kh, strides[0], dilations[0], pads_begin[0], pads_end[0], auto_pad)
    px = _pads(width, kw, strides[1], dilations[1], pads_begin[1], pads_end[1], auto_pad)
    out_h = (height + py[0] + py[1] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    out_w = (width + px[0] + px[1] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    if out_h < 1 or out_w < 1 or kh < 1 or kw < 1:
        raise OpError(OP, "input 'filters'", "the dilated kernel is larger than the padded input",
                      value=filters.shape, allowed=f"data {data.shape}")
    return _Window(strides, dilations, py, px, out_h, out_w)


def _samples(data, offsets, window: _Window, kw: int, pad: bool):
    """(samples [N, C, K, OH, OW], taken [N, DG, K, OH, OW]): each channel's bilinear sample at each tap's
    offset position, in the element type, and whether the reference takes that sample at all."""
    dtype = data.dtype
    batch, channels, height, width = data.shape
    deformable_group, taps = offsets.shape[1:3]
    strides, dilations, out_h, out_w = window.strides, window.dilations, window.out_h, window.out_w
    ky, kx = np.divmod(np.arange(taps), kw)
    base_y = (np.arange(out_h) * strides[0] - window.py[0])[None, :, None] + (ky * dilations[0])[:, None, None]
    base_x = (np.arange(out_w) * strides[1] - window.px[0])[None, None, :] + (kx * dilations[1])[:, None, None]
    per_dg = channels // deformable_group
    samples = np.zeros((batch, channels, taps, out_h, out_w), dtype)
    taken_dg = np.zeros((batch, deformable_group, taps, out_h, out_w), bool)
    with np.errstate(all="ignore"):
        for d in range(deformable_group):
            y = (base_y + offsets[:, d, :, 0]).astype(dtype)                 # int + T, rounded to T
            x = (base_x + offsets[:, d, :, 1]).astype(dtype)
            if pad:
                taken = (np.trunc(y) > -1) & (np.trunc(y) < height) & (np.trunc(x) > -1) & (np.trunc(x) < width)
            else:
                taken = (y >= 0) & (y < height) & (x >= 0) & (x < width)
            y32 = np.where(taken, y, 0).astype(np.float32)
            x32 = np.where(taken, x, 0).astype(np.float32)
            values = _bilinear(data[:, d * per_dg:(d + 1) * per_dg], y32, x32, pad).astype(dtype)
            samples[:, d * per_dg:(d + 1) * per_dg] = values
            taken_dg[:, d] = taken
    return samples, taken_dg


def _accumulate(samples, taken_dg, mask, filters, group: int):
    """The reference's sum over the group's channels, then taps, of sample * filter * mask, in T (a sample
    not taken adds nothing) -> [N, O, OH, OW]."""
    batch, channels, taps, out_h, out_w = samples.shape
    out_channels, group_channels, _, kw = filters.shape
    per_dg = channels // taken_dg.shape[1]
    out_per_group = out_channels // group
    out = np.zeros((batch, out_channels, out_h, out_w), samples.dtype)
    dg_of = np.arange(channels) // per_dg
    with np.errstate(all="ignore"):
        for g in range(group):
            o = slice(g * out_per_group, (g + 1) * out_per_group)
            acc = np.zeros((batch, out_per_group, out_h, out_w), samples.dtype)
            for fc in range(group_channels):
                c = g * group_channels + fc
                for k in range(taps):
                    value = samples[:, c, k][:, None]                        # [N, 1, OH, OW]
                    term = value * filters[o, fc, k // kw, k % kw][None, :, None, None] \
                        * mask[:, dg_of[c], k][:, None]
                    acc = np.where(taken_dg[:, dg_of[c], k][:, None], acc + term, acc)   # skipped: nothing
            out[:, o] = acc
    return out


#: Roundings per term besides the sum's: the float32 bilinear sample (corner weights, 4 products, 3 sums),
#: its conversion to T, and the products by filter and mask.
_TERM_ROUNDINGS = 12


def _accumulation_bound(inputs: dict, attributes: dict) -> float:
    """|Δ| allowed between two runtimes' outputs, which sum the n = C/group * KH*KW terms of an output in
    their own order: each computes it within (n + r)·u·S of the exact value (n sums and r roundings per
    term, u = ε/2 of T), S bounding the terms' absolute sum: a bilinear sample is a convex combination of
    data (|v| <= max|data|), so S <= max|data| · max_o Σ|filters[o]| · max|mask|. Twice that bounds the gap."""
    data, filters = np.asarray(inputs["data"]), np.asarray(inputs["filters"])
    if data.size == 0 or filters.size == 0 or not is_float(data.dtype):
        return 0.0
    mask = inputs.get("mask")
    with np.errstate(all="ignore"):
        terms = float(np.abs(data.astype(np.float64)).max()) \
            * float(np.abs(filters.astype(np.float64)).reshape(filters.shape[0], -1).sum(axis=1).max()) \
            * (float(np.abs(np.asarray(mask, np.float64)).max(initial=0)) if mask is not None else 1.0)
    count = filters.shape[1] * filters.shape[2] * filters.shape[3]
    eps = float(ml_dtypes.finfo(data.dtype).eps)
    return (count + _TERM_ROUNDINGS) * eps * terms     # 2 · (n + r) · ε/2 · S


def _kernel_v8(data, offsets, filters, mask=None, *, strides, pads_begin, pads_end, dilations, auto_pad, group,
               deformable_group, bilinear_interpolation_pad):
    return (deformable_convolution(data, offsets, filters, mask, strides=strides, pads_begin=pads_begin,
                                   pads_end=pads_end, dilations=dilations, auto_pad=auto_pad, group=group,
                                   deformable_group=deformable_group,
                                   bilinear_interpolation_pad=bilinear_interpolation_pad),)


def _attributes(r, index, kh, kw):
    a = {"strides": [int(r.integers(1, 3)), int(r.integers(1, 3))],
         "dilations": [int(r.integers(1, 3)), 1],
         "pads_begin": [int(r.integers(0, 2)), int(r.integers(0, 2))],
         "pads_end": [int(r.integers(0, 2)), int(r.integers(0, 2))]}
    if index % 7 == 3:
        a["auto_pad"] = ["same_upper", "same_lower", "valid"][index % 3]
    return a


def _case(r, index, v8):
    group = [1, 2][index % 2]
    deformable_group = [1, 2][(index // 2) % 2]
    channels = 2 * int(r.integers(1, 3))
    out_channels = group * int(r.integers(1, 3))
    kh, kw = int(r.integers(1, 4)), int(r.integers(1, 3))
    height, width = int(r.integers(3, 7)), int(r.integers(3, 7))
    a = _attributes(r, index, kh, kw)
    a.update(group=group, deformable_group=deformable_group)
    if v8:
        a["bilinear_interpolation_pad"] = int(index % 3 == 1)
    data = r.normal(size=(int(r.integers(1, 3)), channels, height, width)).astype(np.float32)
    filters = r.normal(size=(out_channels, channels // group, kh, kw)).astype(np.float32)
    py = _pads(height, kh, a["strides"][0], a["dilations"][0], a["pads_begin"][0], a["pads_end"][0],
               a.get("auto_pad", "explicit"))
    px = _pads(width, kw, a["strides"][1], a["dilations"][1], a["pads_begin"][1], a["pads_end"][1],
               a.get("auto_pad", "explicit"))
    out_h = (height + sum(py) - a["dilations"][0] * (kh - 1) - 1) // a["strides"][0] + 1
    out_w = (width + sum(px) - a["dilations"][1] * (kw - 1) - 1) // a["strides"][1] + 1
    if out_h < 1 or out_w < 1:
        return None
    scale = [0.7, 2.0, 0.0][index % 3]                  # small, reaching outside the map, integral
    offsets = (r.normal(size=(data.shape[0], deformable_group * 2 * kh * kw, out_h, out_w)) * scale)
    exact = index % 5 == 4      # small integers and halves: every order of summation gives the same sum
    if exact:
        offsets = (r.normal(size=offsets.shape) * 2).round() + 0.5 * r.integers(0, 2, offsets.shape)
        data, filters = data.round(), filters.round()
    inputs = (data, offsets.astype(np.float32), filters)
    if v8 and index % 4 != 3:
        mask = r.uniform(0, 1, size=(data.shape[0], deformable_group * kh * kw, out_h, out_w))
        if exact:
            mask = r.integers(0, 3, mask.shape) * 0.5
        inputs += (mask.astype(np.float32),)
    elif v8:
        inputs += (None,)
    return Case(f"deformable_conv{'' if v8 else '_v1'}_{index}{'_exact' if exact else ''}", inputs, a)


def cases(rng: np.random.Generator) -> list:
    out = []
    for index in range(24):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        case = _case(r, index, v8=True)
        if case is not None:
            out.append(case)
    return out


def cases_v1(rng: np.random.Generator) -> list:
    """Cases of DeformableConvolution-1 (no mask, no bilinear_interpolation_pad)."""
    out = []
    for index in range(8):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        case = _case(r, index, v8=False)
        if case is not None:
            out.append(case)
    return out


def bad_cases() -> list:
    f32 = lambda *shape: np.zeros(shape, np.float32)  # noqa: E731
    a = {"strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1]}
    return [
        (Case("offsets_channels", (f32(1, 2, 4, 4), f32(1, 4, 3, 3), f32(1, 2, 2, 2), None), a), "offsets"),
        (Case("mask_shape", (f32(1, 2, 4, 4), f32(1, 8, 3, 3), f32(1, 2, 2, 2), f32(1, 4, 2, 2)), a), "mask"),
        (Case("group", (f32(1, 3, 4, 4), f32(1, 8, 3, 3), f32(2, 2, 2, 2), None), {**a, "group": 2}),
         "filters"),
        (Case("kernel_too_big", (f32(1, 2, 2, 2), f32(1, 18, 1, 1), f32(1, 2, 3, 3), None), a), "larger"),
        (Case("mixed_types", (f32(1, 2, 4, 4), np.zeros((1, 8, 3, 3)), f32(1, 2, 2, 2), None), a),
         "element type"),
        (Case("rank_3", (f32(2, 4, 4), f32(1, 8, 3, 3), f32(1, 2, 2, 2), None), a), "rank 4"),
        (Case("zero_stride", (f32(1, 2, 4, 4), f32(1, 8, 3, 3), f32(1, 2, 2, 2), None), {**a, "strides": [0, 1]}),
         "strides"),
        (Case("deformable_group", (f32(1, 2, 4, 4), f32(1, 24, 3, 3), f32(1, 2, 2, 2), None),
              {**a, "deformable_group": 3}), "deformable_group"),
    ]


def _infer(ctx) -> None:
    from onnx import helper
    known = ctx.get_input_type(0)
    if known is not None:
        ctx.set_output_type(0, helper.make_tensor_type_proto(known.tensor_type.elem_type, [None] * 4))


def _output_shapes(inputs: dict, attributes: dict) -> list:
    data, offsets, filters = (np.shape(inputs[name]) for name in PORTS[:3])
    return [(data[0], filters[0], offsets[2], offsets[3])]


def _factory(ov, inputs, a):
    mask = inputs[3] if len(inputs) > 3 else None
    return ov.opset8.deformable_convolution(
        *inputs[:3], mask=mask, strides=a["strides"], pads_begin=a["pads_begin"], pads_end=a["pads_end"],
        dilations=a["dilations"], auto_pad=a["auto_pad"], group=a["group"], deformable_group=a["deformable_group"],
        bilinear_interpolation_pad=a["bilinear_interpolation_pad"])


# Divergences of OpenVINO's CPU plugin (2026.4, f32 precision hint, measured) ---------------------------

_OV = "openvino-cpu"


def _dtype_is(dtype):
    return lambda inputs, attributes: np.asarray(inputs["data"]).dtype == dtype


def _example(dtype) -> Case:
    return Case("example", ((np.arange(9).reshape(1, 1, 3, 3) / 7).astype(dtype), np.full((1, 8, 2, 2), 0.3, dtype),
                            np.full((1, 1, 2, 2), 1.1, dtype), None),
                {"strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1]})


DIVERGENCES = (
    Divergence("ov-deformconv-f16-in-f32", _OV, "value", "float16 summed in float32",
               "The reference rounds the sampling position and the running sum to float16; the CPU plugin (f32 "
               "precision hint) computes in float32 and rounds once: the example's second output is 2.54296875 "
               "by the reference's steps, 2.544921875 on the CPU (19 of 23 generated cases differ, up to 0.7% "
               "of the output's magnitude).",
               _dtype_is(np.float16), _example(np.float16)),
    Divergence("ov-deformconv-f64-in-f32", _OV, "value", "float64 computed in float32",
               "The reference sums float64 in float64 (the bilinear weights in float32); the CPU plugin "
               "computes float64 in float32 (example: 2.011428599059582 vs 2.0114285945892334).",
               _dtype_is(np.float64), _example(np.float64)),
)

_ATTRIBUTES = (Attribute("strides", "ints", REQUIRED), Attribute("pads_begin", "ints", REQUIRED),
               Attribute("pads_end", "ints", REQUIRED), Attribute("dilations", "ints", REQUIRED),
               Attribute("auto_pad", "string", "explicit", AUTO_PADS), Attribute("group", "int", 1),
               Attribute("deformable_group", "int", 1))
_MAPS = (AttributeMap("strides", "ints"), AttributeMap("pads_begin", "ints"), AttributeMap("pads_end", "ints"),
         AttributeMap("dilations", "ints"), AttributeMap("auto_pad", "lower"), AttributeMap("group", "int"),
         AttributeMap("deformable_group", "int"), AttributeMap("bilinear_interpolation_pad", "bool"))
_PORTS = (Port("data", "T"), Port("offsets", "T"), Port("filters", "T"))

UNIT = DialectUnit(
    op_type=OP, family="image",
    specs=(OpSpec(OP, 8, _PORTS + (Port("mask", "T", optional=True),), (Port("output", "T"),),
                  _ATTRIBUTES + (Attribute("bilinear_interpolation_pad", "int", 0, (0, 1)),), {"T": TYPES},
                  _kernel_v8, doc="Deformable 2-D convolution with an optional modulation mask (DCNv2).",
                  infer=_infer),),
    openvino=OpenVINO("DeformableConvolution", versions=(1, 8), factory=_factory, attributes=_MAPS,
                      output_shapes=_output_shapes,
                      notes="DeformableConvolution-1 is version 8 without mask (1) and bilinear_interpolation_pad 0"),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("data-dependent bilinear sampling per tap: expressible as GatherND + arithmetic + Conv, "
                    "but not in the reference's summation order; not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torchvision.ops.deform_conv2d does not load beside CPU torch here"),
    divergences=DIVERGENCES,
    accumulation_bound=_accumulation_bound,
    benchmark=Absent("not benchmarked yet"),
)
