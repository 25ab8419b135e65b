"""ROIAlign-9 (OpenVINO) for the configurations standard ONNX RoiAlign does not match: mode max, aligned_mode
half_pixel and half_pixel_for_nn (the IR rule converters/openvino_ir/rules/selection.py keeps ONNX RoiAlign
for mode avg with asymmetric alignment and imports the others as this op; ROIAlign-3 is asymmetric).

input [N, C, H, W], rois [R, 4] (x1, y1, x2, y2) of T, batch_indices [R] (i32/i64, in [0, N - 1]). Per ROI
(OpenVINO's reference, arithmetic in T): corners (c + offset_src) * spatial_scale + offset_dst with offsets
(0, 0) asymmetric, (0, -0.5) half_pixel_for_nn, (0.5, -0.5) half_pixel; asymmetric extents at least 1; bins
of extent / pooled; per bin sampling_ratio (0: ceil(bin extent)) samples per axis at bin start + distance *
(i + 0.5); a sample outside [-1, W] x [-1, H] is 0, else clamped to the map and bilinearly interpolated.
avg: the sum of sample / count in sample order; max: the largest sample, starting from +0.0 (a -0.0 sample
never replaces it: the reference takes a sample only when larger). A bin without samples (extent 0 with
sampling_ratio 0) is 0.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops.unit import (REQUIRED, Absent, Attribute, AttributeMap, Benchmark, BenchmarkCase, Case, DialectUnit,
                             Divergence, OpenVINO, OpSpec, Port)

from ._common import (INDEX_TYPES, FLOATS, clamp_sample, image_boxes, output_type, pooled_output_shapes,
                      roi_align_attributes, roi_align_inputs)

OP = "ROIAlign"
MODES = ("avg", "max")
ALIGNED = {"asymmetric": (0.0, 0.0), "half_pixel_for_nn": (0.0, -0.5), "half_pixel": (0.5, -0.5)}


def _axis(T, start, bin_size, pooled: int, count: int, size: int):
    """Per bin and sample of one axis: low and high indices, low and high weights (0 outside)."""
    bins = np.arange(pooled, dtype=T)[:, None]
    samples = (np.arange(count, dtype=T) + T(0.5))[None, :]
    position = start + bins * bin_size + (bin_size / T(count)) * samples         # [pooled, count]
    outside = (position < T(-1)) | (position > T(size))
    low, high, position = clamp_sample(position, size)
    frac = position - low.astype(T)
    return low, high, T(1) - frac, frac, outside


def roi_align(data, rois, batch_indices, pooled_h, pooled_w, sampling_ratio, spatial_scale, mode="avg",
              aligned_mode="asymmetric"):
    data, rois, indices = roi_align_inputs(OP, data, rois, batch_indices, FLOATS, 4, "[R, 4]")
    roi_align_attributes(OP, rois, pooled_h, pooled_w, sampling_ratio)
    mode = check.choice(OP, "mode", mode, MODES)
    offset_src, offset_dst = ALIGNED[check.choice(OP, "aligned_mode", aligned_mode, tuple(ALIGNED))]
    out = np.zeros((rois.shape[0], data.shape[1], int(pooled_h), int(pooled_w)), data.dtype)
    for r, samples in enumerate(_samples(data, rois, indices, pooled_h, pooled_w, sampling_ratio, spatial_scale,
                                         offset_src, offset_dst)):
        divisor = None
        for value, count in samples:
            if mode == "max":
                out[r] = np.where(value > out[r], value, out[r])     # from +0.0: -0.0 never replaces it
            else:
                divisor = divisor or data.dtype.type(count)
                out[r] = out[r] + value / divisor
    return out


def _samples(data, rois, indices, pooled_h, pooled_w, sampling_ratio, spatial_scale, offset_src, offset_dst):
    """Per ROI, an iterator of (the samples [C, PH, PW] of one sample index in every bin, samples per bin)
    in the reference's sample order (empty: the bins have no samples)."""
    T = data.dtype.type
    _, _, height, width = data.shape
    ph, pw, ratio = int(pooled_h), int(pooled_w), int(sampling_ratio)
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
            yield iter(())                                    # no samples: the bins stay 0
            continue
        ys = _axis(T, y1, bin_h, ph, count_y, height)
        xs = _axis(T, x1, bin_w, pw, count_x, width)
        yield _roi_samples(T, data[int(indices[r])], ys, xs, count_y, count_x)


def _roi_samples(T, fmap, ys, xs, count_y, count_x):
    for sy in range(count_y):
        yl, yh, wy_l, wy_h, y_out = (a[:, sy] for a in ys)
        for sx in range(count_x):
            xl, xh, wx_l, wx_h, x_out = (a[:, sx] for a in xs)
            outside = y_out[:, None] | x_out[None, :]
            w = [np.where(outside, T(0), a[:, None] * b[None, :])
                 for a, b in ((wy_l, wx_l), (wy_l, wx_h), (wy_h, wx_l), (wy_h, wx_h))]
            yl_, yh_ = np.where(outside, 0, yl[:, None]), np.where(outside, 0, yh[:, None])
            xl_, xh_ = np.where(outside, 0, xl[None, :]), np.where(outside, 0, xh[None, :])
            yield (w[0] * fmap[:, yl_, xl_] + w[1] * fmap[:, yl_, xh_] + w[2] * fmap[:, yh_, xl_]
                   + w[3] * fmap[:, yh_, xh_]), count_y * count_x


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


# Divergences of OpenVINO's CPU plugin (2026.4, measured) ------------------------------------------------

_OV = "openvino-cpu"


def _geometry(inputs, attributes, T):
    """Per ROI, as the kernel computes it in T: (start_y, start_x, bin_h, bin_w, count_y, count_x)."""
    offset_src, offset_dst = ALIGNED[attributes["aligned_mode"]]
    rois = np.asarray(inputs["rois"]).astype(T)
    corners = (rois + T(offset_src)) * T(attributes["spatial_scale"]) + T(offset_dst)
    out = []
    for x1, y1, x2, y2 in corners:
        extent_w, extent_h = x2 - x1, y2 - y1
        if offset_src == 0 and offset_dst == 0:
            extent_w, extent_h = max(extent_w, T(1)), max(extent_h, T(1))
        bin_w, bin_h = extent_w / T(attributes["pooled_w"]), extent_h / T(attributes["pooled_h"])
        ratio = int(attributes["sampling_ratio"])
        out.append((y1, x1, bin_h, bin_w, ratio or int(np.ceil(bin_h)), ratio or int(np.ceil(bin_w))))
    return out


def _counts(inputs, attributes) -> list:
    """Samples per bin (count_y * count_x) of each ROI, as the kernel counts them."""
    T = np.asarray(inputs["input"]).dtype.type
    return [cy * cx if cy > 0 and cx > 0 else 0 for *_, cy, cx in _geometry(inputs, attributes, T)]


def _avg_count_not_power_of_two(inputs, attributes) -> bool:
    return attributes["mode"] == "avg" and any(c > 0 and c & (c - 1) for c in _counts(inputs, attributes))


def _inexact_positions(inputs, attributes) -> bool:
    """Some corner, bin size or sample position differs computed in T and exactly (float64)."""
    T = np.asarray(inputs["input"]).dtype.type
    in_t, exact = _geometry(inputs, attributes, T), _geometry(inputs, attributes, np.float64)
    for (start_y, start_x, bin_h, bin_w, count_y, count_x), wide in zip(in_t, exact):
        if count_y <= 0 or count_x <= 0:
            continue
        if [float(v) for v in (start_y, start_x, bin_h, bin_w)] != [float(v) for v in wide[:4]]:
            return True
        for start, size, pooled, count in ((start_y, bin_h, attributes["pooled_h"], count_y),
                                           (start_x, bin_w, attributes["pooled_w"], count_x)):
            bins = np.arange(int(pooled))[:, None]
            samples = np.arange(count)[None, :] + 0.5
            position = start + bins.astype(T) * size + (size / T(count)) * samples.astype(T)
            wanted = np.float64(start) + bins * np.float64(size) + np.float64(size) / count * samples
            if not np.array_equal(position.astype(np.float64), wanted):
                return True
    return False


def _empty_bin(inputs, attributes) -> bool:
    return 0 in _counts(inputs, attributes)


def _negative_zero_max(inputs, attributes) -> bool:
    """Mode max with a bin whose samples include -0.0 (a sample outside the map, weight 0 times a negative
    corner, or a weighted sum of such) and none positive: the reference keeps its start +0.0."""
    if attributes["mode"] != "max":
        return False
    data, rois = np.asarray(inputs["input"]), np.asarray(inputs["rois"])
    for samples in _samples(data, rois, np.asarray(inputs["batch_indices"]), attributes["pooled_h"],
                            attributes["pooled_w"], attributes["sampling_ratio"], attributes["spatial_scale"],
                            *ALIGNED[attributes["aligned_mode"]]):
        positive = negative_zero = None
        for value, _ in samples:
            found = (value == 0) & np.signbit(value)
            positive = value > 0 if positive is None else positive | (value > 0)
            negative_zero = found if negative_zero is None else negative_zero | found
        if positive is not None and (negative_zero & ~positive).any():
            return True
    return False


def _example(rois, **attributes) -> Case:
    data = (np.arange(2 * 2 * 6 * 6).reshape(2, 2, 6, 6) % 7 - 3).astype(np.float32)
    base = {"pooled_h": 2, "pooled_w": 2, "sampling_ratio": 0, "spatial_scale": 1.0, "mode": "avg"}
    return Case("example", (data, np.asarray(rois, np.float32), np.zeros(len(rois), np.int32)),
                {**base, **attributes})


DIVERGENCES = (
    Divergence("ov-roialign-avg-sum-order", _OV, "value", "avg: sums of a non-power-of-two count",
               "Mode avg with a sample count per bin that is not a power of two: last-bit differences from the "
               "CPU plugin's summation order (the contract: sample / count added in sample order).",
               _avg_count_not_power_of_two, _example([[0, 0, 6, 6]], sampling_ratio=3)),
    Divergence("ov-roialign-inexact-sample-positions", _OV, "value", "inexact sample positions",
               "Sample positions that are not exact in T (bin / count inexact, e.g. sampling_ratio 0 with 3 "
               "samples): last-bit differences of the interpolation from the CPU plugin's arithmetic order.",
               _inexact_positions, _example([[0.0, 0.0, 5.0, 5.0]], sampling_ratio=3, mode="max")),
    Divergence("ov-roialign-empty-bin-nan", _OV, "value", "a bin without samples is NaN",
               "A bin without samples (zero extent with sampling_ratio 0, half_pixel modes): the CPU plugin "
               "returns NaN (0 / 0); the contract gives 0.",
               _empty_bin, _example([[1, 1, 1, 1]], aligned_mode="half_pixel")),
    Divergence("ov-roialign-max-negative-zero", _OV, "value", "max: -0.0 where the reference keeps +0.0",
               "Mode max, a bin whose samples include -0.0 (e.g. outside the map: weight 0 times a negative "
               "value) and none is positive: the CPU plugin returns -0.0; the reference starts from +0.0 and "
               "takes a sample only when it is larger, so the contract gives +0.0.",
               _negative_zero_max, _example([[-4, -4, -2, -2]], mode="max", sampling_ratio=2)),
)


def benchmark_cases(mode: str) -> list:
    """Mask R-CNN style: average 7x7 bins, 2 samples per bin side, rois in image coordinates (scale 1/16)."""
    channels, rois = {"full": (64, 100), "quick": (64, 100), "tiny": (2, 3)}[mode]

    def inputs(rng):
        corners = image_boxes(rng, rois)
        return {"input": rng.standard_normal((1, channels, 38, 50)).astype(np.float32),
                "rois": corners.astype(np.float32), "batch_indices": np.zeros(rois, np.int32)}
    return [BenchmarkCase(f"roi-align-{rois}", f"avg 7x7, sampling 2: {rois} rois over 1x{channels}x38x50", inputs,
                          {"pooled_h": 7, "pooled_w": 7, "sampling_ratio": 2, "spatial_scale": 0.0625, "mode": "avg",
                           "aligned_mode": "asymmetric"})]


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
        output_shapes=pooled_output_shapes("rois")),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("ONNX RoiAlign is the lowering where exact (the IR rule picks it); not for these modes"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("no torch adapter"),
    divergences=DIVERGENCES,
    benchmark=Benchmark(benchmark_cases),
)
