"""ROIAlign-9 (OpenVINO) for the configurations standard ONNX RoiAlign does not match: mode max, aligned_mode
half_pixel and half_pixel_for_nn (the IR rule converters/openvino_ir/rules/selection.py keeps ONNX RoiAlign
for mode avg with asymmetric alignment and imports the others as this op; ROIAlign-3 is asymmetric).

input [N, C, H, W], rois [R, 4] (x1, y1, x2, y2) of T, batch_indices [R] (i32/i64, in [0, N - 1]). Per ROI
(OpenVINO's reference, arithmetic in T): corners (c + offset_src) * spatial_scale + offset_dst with offsets
(0, 0) asymmetric, (0, -0.5) half_pixel_for_nn, (0.5, -0.5) half_pixel; asymmetric extents at least 1; bins
of extent / pooled; per bin sampling_ratio (0: ceil(bin extent)) samples per axis at bin start + distance *
(i + 0.5); a sample outside [-1, W] x [-1, H] is 0, else clamped to the map and bilinearly interpolated.
avg: the sum of sample / count in sample order; max: the largest sample, starting from 0. A bin without
samples (extent 0 with sampling_ratio 0) is 0.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import REQUIRED, Absent, Attribute, AttributeMap, Case, DialectUnit, OpenVINO, OpSpec, Port

from ._common import FLOATS, output_type

OP = "ROIAlign"
MODES = ("avg", "max")
ALIGNED = {"asymmetric": (0.0, 0.0), "half_pixel_for_nn": (0.0, -0.5), "half_pixel": (0.5, -0.5)}
INDEX_TYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _axis(T, start, bin_size, pooled: int, count: int, size: int):
    """Per bin and sample of one axis: low and high indices, low and high weights (0 outside)."""
    bins = np.arange(pooled, dtype=T)[:, None]
    samples = (np.arange(count, dtype=T) + T(0.5))[None, :]
    position = start + bins * bin_size + (bin_size / T(count)) * samples         # [pooled, count]
    outside = (position < T(-1)) | (position > T(size))
    position = np.maximum(position, T(0))
    low = np.floor(position).astype(np.int64)
    last = low >= size - 1
    low = np.where(last, size - 1, low)
    position = np.where(last, low.astype(T), position)
    high = np.where(last, low, low + 1)
    frac = position - low.astype(T)
    return low, high, T(1) - frac, frac, outside


def roi_align(data, rois, batch_indices, pooled_h, pooled_w, sampling_ratio, spatial_scale, mode="avg",
              aligned_mode="asymmetric"):
    data = check.as_array(OP, "input", data)
    rois = check.as_array(OP, "rois", rois)
    indices = check.as_array(OP, "batch_indices", batch_indices)
    check.data_type(OP, "input", data, FLOATS)
    check.data_type(OP, "batch_indices", indices, INDEX_TYPES)
    if rois.dtype != data.dtype:
        raise OpError(OP, "input 'rois'", "element type must equal input's", value=str(rois.dtype),
                      allowed=str(data.dtype))
    if data.ndim != 4:
        raise OpError(OP, "input 'input'", "must have rank 4 [N, C, H, W]", value=data.shape)
    if rois.ndim != 2 or rois.shape[1] != 4:
        raise OpError(OP, "input 'rois'", "must have shape [R, 4]", value=rois.shape)
    if indices.shape != rois.shape[:1]:
        raise OpError(OP, "input 'batch_indices'", "must be 1-D of size R", value=indices.shape,
                      allowed=rois.shape[:1])
    if indices.size and (indices.min() < 0 or indices.max() >= data.shape[0]):
        bad = indices[(indices < 0) | (indices >= data.shape[0])][0]
        raise OpError(OP, "input 'batch_indices'", "out of range", value=int(bad), allowed=f"[0, {data.shape[0] - 1}]")
    for name, value in (("pooled_h", pooled_h), ("pooled_w", pooled_w)):
        if int(value) < 1:
            raise OpError(OP, f"attribute '{name}'", "must be positive", value=int(value), allowed=">= 1")
    if int(sampling_ratio) < 0:
        raise OpError(OP, "attribute 'sampling_ratio'", "must not be negative", value=int(sampling_ratio))
    if not np.isfinite(rois).all():
        raise OpError(OP, "input 'rois'", "must be finite", value="inf/nan")
    mode = check.choice(OP, "mode", mode, MODES)
    offset_src, offset_dst = ALIGNED[check.choice(OP, "aligned_mode", aligned_mode, tuple(ALIGNED))]
    T = data.dtype.type
    _, channels, height, width = data.shape
    ph, pw, ratio = int(pooled_h), int(pooled_w), int(sampling_ratio)
    out = np.zeros((rois.shape[0], channels, ph, pw), data.dtype)
    corners = (rois + T(offset_src)) * T(spatial_scale) + T(offset_dst)
    for r in range(rois.shape[0]):
        x1, y1, x2, y2 = corners[r]
        extent_w, extent_h = x2 - x1, y2 - y1
        if offset_src == 0 and offset_dst == 0:
            extent_w, extent_h = max(extent_w, T(1)), max(extent_h, T(1))
        bin_w, bin_h = extent_w / T(pw), extent_h / T(ph)
        count_x = ratio or int(np.ceil(bin_w))
        count_y = ratio or int(np.ceil(bin_h))
        if count_x <= 0 or count_y <= 0:
            continue                                          # no samples: the bins stay 0
        ys = _axis(T, y1, bin_h, ph, count_y, height)
        xs = _axis(T, x1, bin_w, pw, count_x, width)
        fmap = data[int(indices[r])]
        acc = np.zeros((channels, ph, pw), data.dtype)
        divisor = T(count_x * count_y)
        for sy in range(count_y):
            yl, yh, wy_l, wy_h, y_out = (a[:, sy] for a in ys)
            for sx in range(count_x):
                xl, xh, wx_l, wx_h, x_out = (a[:, sx] for a in xs)
                outside = y_out[:, None] | x_out[None, :]
                w = [np.where(outside, T(0), a[:, None] * b[None, :])
                     for a, b in ((wy_l, wx_l), (wy_l, wx_h), (wy_h, wx_l), (wy_h, wx_h))]
                yl_, yh_ = np.where(outside, 0, yl[:, None]), np.where(outside, 0, yh[:, None])
                xl_, xh_ = np.where(outside, 0, xl[None, :]), np.where(outside, 0, xh[None, :])
                value = (w[0] * fmap[:, yl_, xl_] + w[1] * fmap[:, yl_, xh_] + w[2] * fmap[:, yh_, xl_]
                         + w[3] * fmap[:, yh_, xh_])
                if mode == "max":
                    acc = np.where(value > acc, value, acc)
                else:
                    acc = acc + value / divisor
        out[r] = acc
    return out


def _kernel_v9(input, rois, batch_indices, *, pooled_h, pooled_w, sampling_ratio, spatial_scale, mode,  # noqa: A002
               aligned_mode):
    return (roi_align(input, rois, batch_indices, pooled_h, pooled_w, sampling_ratio, spatial_scale, mode,
                      aligned_mode),)


def cases(rng: np.random.Generator) -> list:
    """Integer maps, boxes on a 1/4 grid (partly outside the map), power-of-two pooled sizes and sample
    counts: every intermediate is exact, so summation order cannot matter (see divergences)."""
    out = []
    for index in range(24):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        n, c, h, w = 2, 2, int(r.integers(2, 7)), int(r.integers(2, 7))
        data = r.integers(-8, 9, (n, c, h, w)).astype(np.float32)
        rois = (r.integers(-4, 4 * max(h, w) + 4, (3, 4)) / 4).astype(np.float32)
        rois[:, 2:] = np.maximum(rois[:, 2:], rois[:, :2] + 0.25)
        indices = r.integers(0, n, 3).astype(INDEX_TYPES[index % 2])
        attributes = {"pooled_h": [1, 2, 4][index % 3], "pooled_w": [2, 1, 4][index // 3 % 3],
                      "sampling_ratio": [1, 2, 4][index % 3], "spatial_scale": [1.0, 0.5, 0.25][index // 2 % 3],
                      "mode": MODES[index % 2], "aligned_mode": tuple(ALIGNED)[index // 2 % 3]}
        if index % 6 == 5:                        # adaptive on a whole-cell box: 1 sample per bin
            rois = np.asarray([[0, 0, 2, 2], [1, 0, 3, 2], [0, 1, 2, 3]], np.float32) / attributes["spatial_scale"]
            attributes.update(sampling_ratio=0, aligned_mode="asymmetric", pooled_h=2, pooled_w=2)
        out.append(Case(f"roi_align_{attributes['mode']}_{attributes['aligned_mode']}_{index}",
                        (data, rois, indices), attributes))
    return out


def bad_cases() -> list:
    data = np.zeros((1, 1, 4, 4), np.float32)
    rois = np.asarray([[0, 0, 2, 2]], np.float32)
    attributes = {"pooled_h": 2, "pooled_w": 2, "sampling_ratio": 1, "spatial_scale": 1.0, "mode": "max"}
    return [
        (Case("batch_out_of_range", (data, rois, np.asarray([1], np.int32)), attributes), "out of range"),
        (Case("rois_shape", (data, rois[:, :3], np.asarray([0], np.int32)), attributes), "[R, 4]"),
        (Case("indices_size", (data, rois, np.asarray([0, 0], np.int32)), attributes), "size R"),
        (Case("nan_roi", (data, rois * np.nan, np.asarray([0], np.int32)), attributes), "finite"),
        (Case("pooled_zero", (data, rois, np.asarray([0], np.int32)), dict(attributes, pooled_h=0)), "pooled_h"),
    ]


def _factory(ov, inputs, a):
    from openvino import opset9
    return opset9.roi_align(inputs[0], inputs[1], inputs[2], a["pooled_h"], a["pooled_w"], a["sampling_ratio"],
                            a["spatial_scale"], a["mode"], a["aligned_mode"])


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 9, (Port("input", "T"), Port("rois", "T"), Port("batch_indices", "I")),
                  (Port("output", "T"),),
                  (Attribute("pooled_h", "int", REQUIRED), Attribute("pooled_w", "int", REQUIRED),
                   Attribute("sampling_ratio", "int", REQUIRED), Attribute("spatial_scale", "float", REQUIRED),
                   Attribute("mode", "string", REQUIRED, MODES),
                   Attribute("aligned_mode", "string", "asymmetric", tuple(ALIGNED))),
                  {"T": FLOATS, "I": INDEX_TYPES}, _kernel_v9,
                  doc="Bilinear region-of-interest pooling (avg or max) with OpenVINO's alignment modes.",
                  infer=output_type(None, [None, None, None, None])),),
    openvino=OpenVINO(
        "ROIAlign", versions=(3, 9), factory=_factory, import_rule=False,
        attributes=(AttributeMap("pooled_h", "int"), AttributeMap("pooled_w", "int"),
                    AttributeMap("sampling_ratio", "int"), AttributeMap("spatial_scale", "float"),
                    AttributeMap("mode", "lower"), AttributeMap("aligned_mode", "lower")),
        output_shapes=lambda i, a: [(np.shape(i["rois"])[0], np.shape(i["input"])[1], a["pooled_h"],
                                     a["pooled_w"])]),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("ONNX RoiAlign is the lowering where exact (the IR rule picks it); not for these modes"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("no torch adapter"),
    divergences=(
        ("openvino-cpu", "avg with a sample count that is not a power of two: last-bit differences (the CPU "
                         "plugin's summation order; the contract: sample / count added in sample order)"),
        ("openvino-cpu", "sample positions that are not exact in T (bin / count inexact, e.g. sampling_ratio 0 "
                         "with 3 samples): last-bit differences of the interpolation (the CPU's arithmetic order)"),
        ("openvino-cpu", "a bin without samples (zero extent, sampling_ratio 0, half_pixel modes): NaN "
                         "(0 / 0); the contract: 0"),
    ),
    benchmark=Absent("not benchmarked"),
)
