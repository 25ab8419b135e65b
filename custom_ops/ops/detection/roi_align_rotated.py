"""ROIAlignRotated-15 (OpenVINO): average ROI align over rotated boxes.

input [N, C, H, W], rois [R, 5] (center_x, center_y, width, height, angle in radians) of T, batch_indices
[R] (i32/i64, in [0, N - 1]). Per ROI (OpenVINO's reference, which its CPU plugin runs): center * spatial_scale
- 0.5, width and height * spatial_scale (not clamped), angle negated when clockwise_mode; cos and sin rounded to
f32. The box [-w/2, w/2] x [-h/2, h/2] split into pooled_h x pooled_w bins, per bin sampling_ratio (0:
ceil(bin extent)) samples per axis at bin start + distance * (i + 0.5); each sample (x, y) rotated into the
image: (y cos - x sin + cy, y sin + x cos + cx), computed and rounded in f32. A sample outside
[-1, W] x [-1, H] is 0, else clamped to the map and bilinearly interpolated (w1 p1 + w2 p2 + w3 p3 + w4 p4).
The bin value is the sum of sample / count in sample order; a bin without samples is 0.
"""
from __future__ import annotations

import numpy as np

from custom_ops.errors import OpError
from custom_ops.unit import REQUIRED, Absent, Attribute, AttributeMap, Case, DialectUnit, Divergence, OpenVINO, OpSpec, Port

from ._common import (INDEX_TYPES, clamp_sample, flag, output_type, pooled_output_shapes, roi_align_attributes,
                      roi_align_inputs)

OP = "ROIAlignRotated"
TYPES = (np.dtype(np.float32), np.dtype(np.float64))
F32 = np.float32


def _validate(data, rois, batch_indices, pooled_h, pooled_w, sampling_ratio):
    data, rois, indices = roi_align_inputs(OP, data, rois, batch_indices, TYPES, 5, "[R, 5] (cx, cy, w, h, angle)")
    roi_align_attributes(OP, rois, pooled_h, pooled_w, sampling_ratio)
    if rois.shape[0] and 0 in data.shape[2:]:
        raise OpError(OP, "input 'input'", "an empty feature map has nothing to sample", value=data.shape,
                      allowed="H, W >= 1")
    return data, rois, indices.astype(np.int64)


def _geometry(rois, spatial_scale, clockwise, T):
    """Per ROI as the reference computes it: centre (cx, cy), box start (x1, y1), extent (w, h), cos, sin."""
    scale = T(F32(spatial_scale))
    cx, cy = rois[:, 0] * scale - T(0.5), rois[:, 1] * scale - T(0.5)
    width, height = rois[:, 2] * scale, rois[:, 3] * scale
    angle = -rois[:, 4] if clockwise else rois[:, 4]
    cos = np.cos(angle.astype(np.float64)).astype(F32)      # std::cos in double, kept as float
    sin = np.sin(angle.astype(np.float64)).astype(F32)
    return cx, cy, -width / T(2), -height / T(2), width, height, cos, sin


def roi_align_rotated(data, rois, batch_indices, pooled_h, pooled_w, sampling_ratio, spatial_scale,
                      clockwise_mode=0):
    data, rois, indices = _validate(data, rois, batch_indices, pooled_h, pooled_w, sampling_ratio)
    T = data.dtype.type
    _, channels, height, width = data.shape
    ph, pw, ratio = int(pooled_h), int(pooled_w), int(sampling_ratio)
    out = np.zeros((rois.shape[0], channels, ph, pw), data.dtype)
    geometry = _geometry(rois, spatial_scale, bool(clockwise_mode), T)
    for r in range(rois.shape[0]):
        cx, cy, x1, y1, extent_w, extent_h, cos, sin = (g[r] for g in geometry)
        bin_w, bin_h = extent_w / T(pw), extent_h / T(ph)
        count_x = ratio or int(np.ceil(bin_w))
        count_y = ratio or int(np.ceil(bin_h))
        if count_x < 0 or count_y < 0:
            raise OpError(OP, "input 'rois'", "a negative width or height with sampling_ratio 0 gives a negative "
                          "sample count", value=(float(rois[r, 2]), float(rois[r, 3])), allowed=">= 0")
        if count_x == 0 or count_y == 0:
            continue                                              # no samples: the bins stay 0
        # pre-rotation sample positions: y [ph, count_y], x [pw, count_x]
        py = (y1 + np.arange(ph, dtype=T)[:, None] * bin_h
              + (bin_h / T(count_y)) * (np.arange(count_y, dtype=T) + T(0.5))[None, :])
        px = (x1 + np.arange(pw, dtype=T)[:, None] * bin_w
              + (bin_w / T(count_x)) * (np.arange(count_x, dtype=T) + T(0.5))[None, :])
        py = py[:, None, :, None]                                 # [ph, 1, count_y, 1]
        px = px[None, :, None, :]                                 # [1, pw, 1, count_x]
        c, s = T(cos), T(sin)
        sample_y = (py * c - px * s + cy).astype(F32).astype(T)   # [ph, pw, count_y, count_x]
        sample_x = (py * s + px * c + cx).astype(F32).astype(T)
        outside = (sample_x < -1) | (sample_x > width) | (sample_y < -1) | (sample_y > height)
        yl, yh, sample_y = clamp_sample(sample_y, height)
        xl, xh, sample_x = clamp_sample(sample_x, width)
        ly, lx = sample_y - yl.astype(T), sample_x - xl.astype(T)
        hy, hx = T(1) - ly, T(1) - lx
        weights = [np.where(outside, T(0), a * b) for a, b in ((hy, hx), (hy, lx), (ly, hx), (ly, lx))]
        yl, yh, xl, xh = (np.where(outside, 0, a) for a in (yl, yh, xl, xh))
        fmap = data[indices[r]]                                   # [C, H, W]
        value = (weights[0] * fmap[:, yl, xl] + weights[1] * fmap[:, yl, xh] + weights[2] * fmap[:, yh, xl]
                 + weights[3] * fmap[:, yh, xh])                  # [C, ph, pw, count_y, count_x]
        value = value.reshape(channels, ph, pw, count_y * count_x)
        count = np.uint64(count_x) * np.uint64(count_y)
        acc = np.zeros((channels, ph, pw), data.dtype)
        for k in range(value.shape[-1]):                          # the reference's sample order
            acc = acc + value[..., k] / T(count)
        out[r] = acc
    return out


def _kernel_v15(input, rois, batch_indices, *, pooled_h, pooled_w, sampling_ratio, spatial_scale,  # noqa: A002
                clockwise_mode):
    return (roi_align_rotated(input, rois, batch_indices, pooled_h, pooled_w, sampling_ratio, spatial_scale,
                              clockwise_mode),)


ANGLES = (0.0, np.pi / 2, -np.pi / 4, np.pi / 6, 1.0, -2.5, np.pi)


def cases(rng: np.random.Generator) -> list:
    """Integer and normal maps; centres and extents on a 1/4 grid (partly outside the map, zero extents); angles exact
    (0, pi/2, pi) and not; every attribute value."""
    out = []
    for index in range(36):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        n, c, h, w = int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 7)), int(r.integers(1, 7))
        data = r.integers(-8, 9, (n, c, h, w)).astype(np.float32)
        if index % 3 == 2:
            data = r.normal(size=(n, c, h, w)).astype(np.float32)
        count = int(r.integers(1, 4))
        scale = [1.0, 0.5, 0.25, 2.0][index % 4]
        centres = r.integers(-4, 4 * max(h, w) + 4, (count, 2)) / 4 / scale
        extents = r.integers(0, 4 * max(h, w) + 1, (count, 2)) / 4 / scale
        angles = np.asarray([ANGLES[(index + k) % len(ANGLES)] for k in range(count)])
        if index % 5 == 4:
            angles = r.uniform(-4, 4, count)
        rois = np.concatenate([centres, extents, angles[:, None]], axis=1).astype(np.float32)
        attributes = {"pooled_h": [1, 2, 3][index % 3], "pooled_w": [2, 1, 3][index // 3 % 3],
                      "sampling_ratio": [0, 1, 2, 3][index // 2 % 4], "spatial_scale": scale,
                      "clockwise_mode": index % 2}
        indices = r.integers(0, n, count).astype(INDEX_TYPES[index // 4 % 2])
        out.append(Case(f"roi_align_rotated_{index}", (data, rois, indices), attributes))
    return out


def bad_cases() -> list:
    data = np.zeros((1, 1, 4, 4), np.float32)
    rois = np.asarray([[2, 2, 2, 2, 0.5]], np.float32)
    one = np.asarray([0], np.int32)
    a = {"pooled_h": 2, "pooled_w": 2, "sampling_ratio": 0, "spatial_scale": 1.0, "clockwise_mode": 0}
    return [
        (Case("batch_out_of_range", (data, rois, np.asarray([1], np.int32)), a), "out of range"),
        (Case("rois_shape", (data, rois[:, :4], one), a), "[R, 5]"),
        (Case("indices_size", (data, rois, np.asarray([0, 0], np.int32)), a), "size R"),
        (Case("nan_roi", (data, rois * np.nan, one), a), "finite"),
        (Case("pooled_zero", (data, rois, one), dict(a, pooled_w=0)), "pooled_w"),
        (Case("negative_ratio", (data, rois, one), dict(a, sampling_ratio=-1)), "sampling_ratio"),
        (Case("negative_width", (data, np.asarray([[2, 2, -3, 2, 0]], np.float32), one), a), "negative width"),
        (Case("mixed_types", (data, rois.astype(np.float64), one), a), "element type"),
        (Case("empty_map", (data[:, :, :0], rois, one), a), "empty feature map"),
    ]


def _f64_example() -> Case:
    data = (np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4) / 3)
    return Case("example", (data, np.asarray([[2, 2, 2, 2, 0.5]], np.float64), np.zeros(1, np.int32)),
                {"pooled_h": 2, "pooled_w": 2, "sampling_ratio": 2, "spatial_scale": 1.0, "clockwise_mode": 0})


DIVERGENCES = (
    Divergence("ov-roialignrotated-f64-in-f32", "openvino-cpu", "value", "float64 computed in float32",
               "The reference computes float64 in float64 (sample positions rounded to f32); the CPU plugin "
               "computes float64 inputs in float32 and widens the result.",
               lambda inputs, attributes: np.asarray(inputs["input"]).dtype == np.float64, _f64_example()),
)


def _factory(ov, inputs, a):
    from openvino import opset15
    return opset15.roi_align_rotated(inputs[0], inputs[1], inputs[2], a["pooled_h"], a["pooled_w"],
                                     a["sampling_ratio"], a["spatial_scale"], a["clockwise_mode"])


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 15, (Port("input", "T"), Port("rois", "T"), Port("batch_indices", "I")),
                  (Port("output", "T"),),
                  (Attribute("pooled_h", "int", REQUIRED), Attribute("pooled_w", "int", REQUIRED),
                   Attribute("sampling_ratio", "int", REQUIRED), Attribute("spatial_scale", "float", REQUIRED),
                   flag("clockwise_mode", 0)),
                  {"T": TYPES, "I": INDEX_TYPES}, _kernel_v15,
                  doc="Average ROI align over rotated boxes (cx, cy, w, h, angle).",
                  infer=output_type(None, [None, None, None, None])),),
    openvino=OpenVINO(
        "ROIAlignRotated", versions=(15,), factory=_factory,
        attributes=(AttributeMap("pooled_h", "int"), AttributeMap("pooled_w", "int"),
                    AttributeMap("sampling_ratio", "int"), AttributeMap("spatial_scale", "float"),
                    AttributeMap("clockwise_mode", "bool")),
        notes="the CPU plugin runs OpenVINO's reference: equal bit for bit in f32",
        output_shapes=pooled_output_shapes("rois")),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("no standard ONNX op samples rotated boxes; not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("no torch adapter (detectron2's ROIAlignRotated is not exported through the dialect)"),
    divergences=DIVERGENCES,
    benchmark=Absent("not benchmarked"),
)
