"""PSROIPooling-1 (OpenVINO): position-sensitive ROI pooling (R-FCN).

input: [N, C, H, W]; coords: [R, 5] rows (batch_id, x1, y1, x2, y2) in image pixels, scaled by
spatial_scale. Output [R, output_dim, group_size, group_size].
mode "average": C = output_dim * group_size^2; the corners rounded (half away from zero), the box
[x1, x2 + 1) split into group_size^2 bins [floor, ceil) clipped to the map; bin (i, j) of output
channel k averages input channel (k * group_size + i) * group_size + j, summed row by row in the input
type (an empty bin gives NaN, as 0 / 0).
mode "bilinear": C = output_dim * spatial_bins_x * spatial_bins_y; the box split into
spatial_bins_y x spatial_bins_x sub-boxes, sub-box s read from input channel s * output_dim + k at the
point of its own group_size grid (bilinear, a point at or past the map end is skipped), the sub-boxes
summed and divided by their count.
Points or bins left of or above the map (negative coordinates) are refused: OpenVINO's reference
converts them to unsigned indices there (undefined behaviour).
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import (REQUIRED, Absent, Attribute, Benchmark, BenchmarkCase, Case, DialectUnit, Divergence,
                             OpenVINO, OpSpec, Port)

from ._common import maps, native, output_type

from .roi_pooling import batch_ids, feature_map_and_boxes, lerp, round_half_away

OP = "PSROIPooling"
TYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16))
MODES = ("average", "bilinear")
F32 = np.float32


def validate(data, rois, output_dim, group_size, spatial_scale, spatial_bins_x, spatial_bins_y, mode):
    data, rois = feature_map_and_boxes(OP, data, rois, TYPES)
    mode = check.choice(OP, "mode", mode, MODES)
    checked = [("output_dim", output_dim), ("group_size", group_size)]
    if mode == "bilinear":  # the spatial bins take part in bilinear mode only (OpenVINO ignores them in average)
        checked += [("spatial_bins_x", spatial_bins_x), ("spatial_bins_y", spatial_bins_y)]
    for name, value in checked:
        if int(value) < 1:
            raise OpError(OP, f"attribute '{name}'", "must be positive", value=value, allowed=">= 1")
    if not (np.isfinite(spatial_scale) and spatial_scale > 0):
        raise OpError(OP, "attribute 'spatial_scale'", "must be positive", value=spatial_scale, allowed="> 0")
    bins = int(group_size) ** 2 if mode == "average" else int(spatial_bins_x) * int(spatial_bins_y)
    if data.shape[1] != int(output_dim) * bins:
        what = "output_dim * group_size^2" if mode == "average" else "output_dim * spatial_bins_x * spatial_bins_y"
        raise OpError(OP, "input 'input'", f"channel count must equal {what}", value=data.shape[1],
                      allowed=int(output_dim) * bins)
    ids = batch_ids(OP, "coords", rois[:, 0], data.shape[0]) if rois.size else np.zeros(0, np.int64)
    return data, rois, ids, mode


def psroi_pooling(data, rois, output_dim: int, group_size: int, spatial_scale: float, spatial_bins_x: int = 1,
                  spatial_bins_y: int = 1, mode: str = "average"):
    data, rois, ids, mode = validate(data, rois, output_dim, group_size, spatial_scale, spatial_bins_x,
                                     spatial_bins_y, mode)
    scale = F32(spatial_scale)
    box = rois[:, 1:].astype(F32)                                               # static_cast<float>
    if mode == "average":
        return _average(data, box, ids, int(output_dim), int(group_size), scale)
    return _bilinear(data, box, ids, int(output_dim), int(group_size), scale, int(spatial_bins_x),
                     int(spatial_bins_y))


def _average(data, box, ids, output_dim, group, scale):
    t = data.dtype
    _, _, height, width = data.shape
    rounded = round_half_away(box).astype(F32)
    x0, y0 = rounded[:, 0] * scale, rounded[:, 1] * scale
    x1, y1 = (rounded[:, 2] + F32(1)) * scale, (rounded[:, 3] + F32(1)) * scale
    bin_w, bin_h = (x1 - x0) / F32(group), (y1 - y0) / F32(group)              # [R]
    index = np.arange(group + 1, dtype=F32)

    def edges(start, size, limit, axis):
        low = np.floor(start[:, None] + index[None, :-1] * size[:, None])
        high = np.ceil(start[:, None] + index[None, 1:] * size[:, None])
        if (low < 0).any():
            raise OpError(OP, "input 'coords'", f"a bin starts before the map ({axis} < 0)",
                          value=float(low.min()), allowed=">= 0")
        low = np.minimum(low.astype(np.int64), limit - 1)
        high = np.minimum(np.maximum(high, 0).astype(np.int64), limit)
        return low, high                                                        # [R, G]

    w0, w1 = edges(x0, bin_w, width, "x")
    h0, h1 = edges(y0, bin_h, height, "y")
    channels = np.arange(output_dim * group * group).reshape(output_dim, group, group)
    if not (box.shape[0] and height and width):                                 # no ROI, or an empty map
        total = np.zeros((box.shape[0], output_dim, group, group), t)
    else:
        total = _bin_sums(data, ids, channels, h0, h1, w0, w1)
    count = ((h1 - h0)[:, :, None] * (w1 - w0)[:, None, :])                     # [R, G, G]
    with np.errstate(divide="ignore", invalid="ignore"):
        return (total / count[:, None].astype(t)).astype(t)


def _bin_sums(data, ids, channels, h0, h1, w0, w1):
    """[R, K, G, G] sums of the bins' values in row order, as the reference adds them. Each bin is gathered into
    a window of the largest bin's size padded with zeros, after a leading zero: adding +0.0 changes no sum but
    a -0.0 one, so the sums are the reference's (-0.0 leads a bin covering the whole map, whose sum is the
    reference's from its first value: -0.0 + x = x)."""
    t = data.dtype
    _, depth, height, width = data.shape
    h0, w0 = np.maximum(h0, 0), np.maximum(w0, 0)       # a NaN corner's start (the bin reaches from the map's edge)
    rows = h0[:, :, None] + np.arange(max(int((h1 - h0).max(initial=0)), 0))                # [R, G, BH]
    cols = w0[:, :, None] + np.arange(max(int((w1 - w0).max(initial=0)), 0))                # [R, G, BW]
    # Flat indices of the window cells [BH, BW, R, G, G] (+ the channel plane); a cell outside its bin gets an index past the map,
    # which take(mode="clip") turns into the zero appended after it.
    flat = np.append(data.reshape(-1), t.type(0))
    zero = flat.size - 1
    row = np.where(rows < h1[:, :, None], np.minimum(rows, height - 1) * width, zero)
    col = np.where(cols < w1[:, :, None], np.minimum(cols, width - 1), zero)
    plane = (ids[:, None, None, None] * depth + channels[None]) * (height * width)          # [R, K, G, G]
    cells = row.transpose(2, 0, 1)[:, None, :, :, None] + col.transpose(2, 0, 1)[None, :, :, None, :]
    whole = (h0 == 0)[:, :, None] & (h1 == height)[:, :, None] & (w0 == 0)[:, None, :] & (w1 == width)[:, None, :]
    total = np.broadcast_to(np.where(whole, t.type(-0.0), t.type(0.0))[:, None], plane.shape).copy()
    for cell in cells.reshape(-1, plane.shape[0], 1, *plane.shape[2:]):   # sequential, row by row in each bin
        total += np.take(flat, plane + cell, mode="clip")
    return total


def inside(point, limit):
    """Whether a sampling point is read (the reference: below the map size; OpenVINO's CPU plugin: at most
    size - 1, a declared divergence)."""
    return point < F32(limit)


def sample_points(start, end, bins, group, limit):
    """[R, bins, group] sampling coordinates along one axis, float32 in the reference's order (OpenVINO's
    CPU plugin uses an algebraically equal formula: a declared divergence of the last bits)."""
    size = (end - start) / F32(bins)                                            # [R]
    begin = start[:, None] + np.arange(bins, dtype=F32)[None, :] * size[:, None]  # [R, bins]
    if group > 1:
        step = size * F32(limit - 1) / F32(group - 1)
        return np.arange(group, dtype=F32)[None, None, :] * step[:, None, None] + (begin * F32(limit - 1))[:, :, None]
    mid = (begin + begin + size[:, None]) * F32(limit - 1) / F32(2)
    return np.broadcast_to(mid[:, :, None], (*mid.shape, group))


def _bilinear(data, box, ids, output_dim, group, scale, bins_x, bins_y):
    t = data.dtype
    _, _, height, width = data.shape
    x0, y0, x1, y1 = (box[:, k] * scale for k in range(4))
    px = sample_points(x0, x1, bins_x, group, width)                          # [R, SX, G]
    py = sample_points(y0, y1, bins_y, group, height)                         # [R, SY, G]
    if (px < 0).any() or (py < 0).any():
        raise OpError(OP, "input 'coords'", "a sampling point lies before the map (negative coordinate)",
                      value=float(min(px.min(), py.min())), allowed=">= 0")
    x = px[:, None, :, None, :]                                                 # [R, SY, SX, G(h), G(w)]
    y = py[:, :, None, :, None]
    x, y = np.broadcast_arrays(x, y)
    used = inside(x, width) & inside(y, height)
    left = np.where(used, np.floor(x), 0).astype(np.int64)
    top = np.where(used, np.floor(y), 0).astype(np.int64)
    right = np.minimum(np.where(used, np.ceil(x), 0).astype(np.int64), width - 1)
    bottom = np.minimum(np.where(used, np.ceil(y), 0).astype(np.int64), height - 1)
    sub = np.arange(bins_y * bins_x).reshape(1, bins_y, bins_x)
    channel = sub * output_dim + np.arange(output_dim)[:, None, None]          # [K, SY, SX]
    n = ids[:, None, None, None, None, None]
    ch = channel[None, :, :, :, None, None]                                     # gathers [R, K, SY, SX, G, G]

    def at(yy, xx):
        return data[n, ch, yy[:, None], xx[:, None]]

    dx = (x - left.astype(F32)).astype(t)[:, None]
    dy = (y - top.astype(F32)).astype(t)[:, None]
    upper = lerp(at(top, left), at(top, right), dx)
    lower = lerp(at(bottom, left), at(bottom, right), dx)
    value = np.where(used[:, None], lerp(upper, lower, dy), t.type(0))         # [R, K, SY, SX, G, G]
    flat = value.reshape(*value.shape[:2], bins_y * bins_x, group, group)
    total = np.cumsum(flat, axis=2, dtype=t)[:, :, -1]                          # sequential, in sub-box order
    return (total / t.type(bins_x * bins_y)).astype(t)


# Unit -------------------------------------------------------------------------------------------------

def _kernel_v1(data, rois, output_dim, group_size, spatial_scale, spatial_bins_x, spatial_bins_y, mode):
    return (psroi_pooling(data, rois, output_dim, group_size, spatial_scale, spatial_bins_x, spatial_bins_y,
                          mode),)


def cases(rng: np.random.Generator) -> list:
    """Average mode with boxes inside the map; bilinear on dyadic values and normalised corners (every
    intermediate exact, so OpenVINO's CPU formula and the reference's agree)."""
    out = []
    for index in range(30):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        mode = MODES[index % 2]
        k, n, rois = int(r.integers(1, 3)), int(r.integers(1, 3)), int(r.integers(1, 4))
        scale = float(r.choice([1.0, 0.5, 0.25]))
        if mode == "average":
            group, bins_x, bins_y = int(r.integers(1, 4)), 1, 1
            h, w = int(r.integers(1, 8)), int(r.integers(1, 8))
            data = r.normal(size=(n, k * group * group, h, w))
            corners = r.uniform(0, 1, (rois, 4)) * (np.array([w, h, w, h]) / scale - 1.01)
        else:
            group, bins_x, bins_y = int(r.choice([1, 2, 3, 5])), int(r.choice([1, 2, 4])), int(r.choice([1, 2, 4]))
            h, w = int(r.choice([2, 3, 5, 9])), int(r.choice([2, 3, 5, 9]))
            data = np.round(r.normal(size=(n, k * bins_x * bins_y, h, w)) * 4) / 4
            corners = r.integers(0, 17, (rois, 4)) / 16 / scale
        corners = np.concatenate([np.minimum(corners[:, :2], corners[:, 2:]),
                                  np.maximum(corners[:, :2], corners[:, 2:])], axis=1)
        boxes = np.concatenate([r.integers(0, n, (rois, 1)), corners], axis=1)
        out.append(Case(f"psroi_pooling_{mode}_{index}", (data.astype(np.float32), boxes.astype(np.float32)),
                        {"output_dim": k, "group_size": group, "spatial_scale": scale, "spatial_bins_x": bins_x,
                         "spatial_bins_y": bins_y, "mode": mode}))
    return out


def bad_cases() -> list:
    f32 = lambda v: np.array(v, np.float32)  # noqa: E731
    data = f32(np.zeros((1, 8, 4, 4)))
    a = {"output_dim": 2, "group_size": 2, "spatial_scale": 1.0}
    return [
        (Case("batch_out_of_range", (data, f32([[2, 0, 0, 2, 2]])), a), "batch index"),
        (Case("wrong_channels", (data[:, :7], f32([[0, 0, 0, 2, 2]])), a), "channel count"),
        (Case("negative_corner", (data, f32([[0, -3, 0, 2, 2]])), a), "before the map"),
        (Case("bilinear_negative", (data, f32([[0, -0.5, 0, 0.5, 0.5]])),
              {**a, "mode": "bilinear", "spatial_bins_x": 2, "spatial_bins_y": 2}), "before the map"),
        (Case("unknown_mode", (data, f32([[0, 0, 0, 2, 2]])), {**a, "mode": "max"}), "mode"),
    ]


def _output_shapes(inputs: dict, attributes: dict) -> list:
    g = attributes["group_size"]
    return [(np.shape(inputs["coords"])[0], attributes["output_dim"], g, g)]


def _past_the_map(inputs, attributes) -> bool:
    data, rois = np.asarray(inputs["input"]), np.asarray(inputs["coords"])
    if attributes["mode"] != "average" or not rois.size:
        return False
    start = round_half_away(rois[:, 1:3].astype(F32)) * F32(attributes["spatial_scale"])
    return bool(((start[:, 0] >= data.shape[3]) | (start[:, 1] >= data.shape[2])).any())


def _bilinear_may_differ(inputs, attributes) -> bool:
    """Bilinear mode where the CPU plugin can differ: float16/float64 data; a sampling point rounded in f32 or in
    (size - 1, size); an interpolation rounded in f32 (the kernel on f32 data differs from it on the data in f64)."""
    data, rois = np.asarray(inputs["input"]), np.asarray(inputs["coords"])
    if attributes["mode"] != "bilinear" or not rois.size:
        return False
    if data.dtype != np.float32:
        return True
    box, scale = rois[:, 1:].astype(F32), F32(attributes["spatial_scale"])
    group = int(attributes["group_size"])
    for a, b, bins, limit in ((0, 2, attributes["spatial_bins_x"], data.shape[3]),
                              (1, 3, attributes["spatial_bins_y"], data.shape[2])):
        points = sample_points(box[:, a] * scale, box[:, b] * scale, int(bins), group, limit)
        exact = sample_points(box[:, a].astype(np.float64) * float(scale), box[:, b].astype(np.float64) * float(scale),
                              int(bins), group, limit)
        if not np.array_equal(points, exact) or ((points > limit - 1) & (points < limit)).any():
            return True
    names = ("output_dim", "group_size", "spatial_scale", "spatial_bins_x", "spatial_bins_y", "mode")
    kept = {name: attributes[name] for name in names}
    try:
        narrow = psroi_pooling(data, rois, **kept)
    except OpError:
        return False
    return not np.array_equal(narrow.astype(np.float64), psroi_pooling(data.astype(np.float64),
                                                                       rois.astype(np.float64), **kept))


DIVERGENCES = (
    Divergence("ov-psroipooling-bin-past-map", "openvino-cpu", "value", "average bin past the map is 0",
               "A bin starting past the feature map is empty (0) on the CPU plugin; the reference clamps its "
               "start to the last row/column and averages that.",
               _past_the_map, Case("example", (np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4),
                                               np.array([[0, 6, 0, 7, 0]], np.float32)),
                                   {"output_dim": 1, "group_size": 1, "spatial_scale": 1.0})),
    Divergence("ov-psroipooling-bilinear-points", "openvino-cpu", "value", "bilinear sampling points differ",
               "The CPU plugin computes the sampling points by an algebraically equal formula and interpolates in "
               "another rounding (last-bit differences where a point or an interpolation rounds in float32; "
               "float16 and float64 data differ too) and skips points in (size - 1, size), which the reference "
               "reads clamped; float32 cases where none of these happens agree bit for bit.",
               _bilinear_may_differ,
               Case("example", (np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4) / 3,
                                np.array([[0, 0.5, 0.25, 1.25, 0.75]], np.float32)),
                    {"output_dim": 1, "group_size": 2, "spatial_scale": 1.0, "spatial_bins_x": 2,
                     "mode": "bilinear"})),
)


def benchmark_cases(mode: str) -> list:
    """R-FCN head: average position-sensitive pooling, group 7, of rois inside a 24 x 24 map (scale 1/16)."""
    dim, group, rois = {"full": (8, 7, 50), "quick": (8, 7, 50), "tiny": (2, 2, 3)}[mode]

    def inputs(rng):
        corners = rng.uniform(0, 1, (rois, 4)) * (np.array([24, 24, 24, 24]) / 0.0625 - 1.01)
        corners = np.concatenate([np.minimum(corners[:, :2], corners[:, 2:]),
                                  np.maximum(corners[:, :2], corners[:, 2:])], axis=1)
        return {"input": rng.standard_normal((1, dim * group * group, 24, 24)).astype(np.float32),
                "coords": np.concatenate([np.zeros((rois, 1)), corners], axis=1).astype(np.float32)}
    return [BenchmarkCase(f"psroi-pooling-{rois}", f"average, output_dim {dim}, group {group}: {rois} rois", inputs,
                          {"output_dim": dim, "group_size": group, "spatial_scale": 0.0625, "mode": "average"})]


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 1, (Port("input", "T"), Port("coords", "T")), (Port("output", "T"),),
                  (Attribute("output_dim", "int", REQUIRED), Attribute("group_size", "int", 1),
                   Attribute("spatial_scale", "float", REQUIRED), Attribute("spatial_bins_x", "int", 1),
                   Attribute("spatial_bins_y", "int", 1), Attribute("mode", "string", "average", MODES)),
                  {"T": TYPES}, _kernel_v1, doc="Position-sensitive ROI pooling (R-FCN), average or bilinear.",
                  infer=output_type(None, [None, None, None, None])),),
    openvino=OpenVINO(
        "PSROIPooling", versions=(1,), factory=native("opset1", "PSROIPooling"),
        attributes=maps("int", "output_dim", "group_size", "spatial_bins_x", "spatial_bins_y")
        + maps("float", "spatial_scale") + maps("lower", "mode"),
        output_shapes=_output_shapes),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("position-sensitive channel selection per bin has no standard ONNX op; not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torchvision.ops.ps_roi_pool is not exported through the dialect"),
    divergences=DIVERGENCES,
    benchmark=Benchmark(benchmark_cases),
)
