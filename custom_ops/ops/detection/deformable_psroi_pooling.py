"""DeformablePSROIPooling-1 (OpenVINO): position-sensitive ROI pooling with per-part learned offsets
(Deformable R-FCN), mode bilinear_deformable.

input [N, C, H, W] with C >= output_dim * group_size^2; coords [R, 5] rows (batch_id, x1, y1, x2, y2);
optional offsets [R, 2 * K, part_size, part_size] (x and y offset of each of K class groups, output_dim a
multiple of K). Output [R, output_dim, group_size, group_size]. OpenVINO's reference, geometry in f32: corners
rounded half away from zero, start = x1 * spatial_scale - 0.5, end = (x2 + 1) * spatial_scale - 0.5, extent at
least 0.1, bins of extent / group_size. Bin (c, i, j) reads input channel (c * group_size + i) * group_size + j;
its start moves by offset * trans_std * extent (the offset of part (i * part_size / group_size, j * part_size /
group_size) of class group c / (output_dim / K)). The bin's spatial_bins_y x spatial_bins_x sub-bin corners
(start + k * bin / spatial_bins) outside [-0.5, size - 0.5] are skipped, the others clamped to the map and
interpolated (a + (b - a) * d per axis, in T), summed in order and averaged; a bin without sub-bins, and a ROI
with a negative batch id, is 0.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import REQUIRED, Absent, Attribute, AttributeMap, Case, DialectUnit, Divergence, OpenVINO, OpSpec, Port

from ._common import maps, native, output_type
from .roi_pooling import feature_map_and_boxes, round_half_away

OP = "DeformablePSROIPooling"
TYPES = (np.dtype(np.float32), np.dtype(np.float64))
MODES = ("bilinear_deformable",)
F32 = np.float32


def _validate(data, rois, offsets, output_dim, group_size, spatial_bins_x, spatial_bins_y, part_size, mode):
    data, rois = feature_map_and_boxes(OP, data, rois, TYPES)
    check.choice(OP, "mode", mode, MODES)
    for name, value in (("output_dim", output_dim), ("group_size", group_size), ("spatial_bins_x", spatial_bins_x),
                        ("spatial_bins_y", spatial_bins_y), ("part_size", part_size)):
        if int(value) < 1:
            raise OpError(OP, f"attribute '{name}'", "must be positive", value=int(value), allowed=">= 1")
    want = int(output_dim) * int(group_size) ** 2
    if data.shape[1] < want:      # more channels: the first output_dim * group_size^2 are read
        raise OpError(OP, "input 'input'", "channel count must be at least output_dim * group_size^2",
                      value=data.shape[1], allowed=f">= {want}")
    if not np.isfinite(rois).all():
        raise OpError(OP, "input 'coords'", "must be finite", value="inf/nan")
    with np.errstate(invalid="ignore"):
        ids = np.trunc(rois[:, 0].astype(np.float64))
    if (ids >= data.shape[0]).any():
        raise OpError(OP, "input 'coords'", "ROI batch index out of range", value=float(rois[ids >= data.shape[0], 0][0]),
                      allowed=f"[0, {data.shape[0] - 1}] (negative: the ROI is skipped)")
    if offsets is not None:
        offsets = check.as_array(OP, "offsets", offsets)
        if offsets.dtype != data.dtype:
            raise OpError(OP, "input 'offsets'", "element type must equal input's", value=str(offsets.dtype),
                          allowed=str(data.dtype))
        part = int(part_size)
        if (offsets.ndim != 4 or offsets.shape[0] != rois.shape[0] or offsets.shape[1] < 2 or offsets.shape[1] % 2
                or offsets.shape[2:] != (part, part)):
            raise OpError(OP, "input 'offsets'", "must have shape [R, 2 * K, part_size, part_size]",
                          value=offsets.shape, allowed=f"[{rois.shape[0]}, 2 * K, {part}, {part}]")
        if int(output_dim) % (offsets.shape[1] // 2):
            raise OpError(OP, "input 'offsets'", "class groups K (dim 1 / 2) must divide output_dim",
                          value=offsets.shape[1] // 2, allowed=f"a divisor of {int(output_dim)}")
        if not np.isfinite(offsets).all():
            raise OpError(OP, "input 'offsets'", "must be finite", value="inf/nan")
    return data, rois, offsets, ids.astype(np.int64)


def deformable_psroi_pooling(data, rois, offsets=None, output_dim=1, spatial_scale=1.0, group_size=1,
                             mode="bilinear_deformable", spatial_bins_x=1, spatial_bins_y=1, trans_std=1.0,
                             part_size=1):
    data, rois, offsets, ids = _validate(data, rois, offsets, output_dim, group_size, spatial_bins_x,
                                         spatial_bins_y, part_size, mode)
    T = data.dtype.type
    _, _, height, width = data.shape
    k, g, part = int(output_dim), int(group_size), int(part_size)
    bins_x, bins_y = int(spatial_bins_x), int(spatial_bins_y)
    count = rois.shape[0]
    out = np.zeros((count, k, g, g), data.dtype)
    if not count:
        return out
    scale = F32(spatial_scale)
    corners = round_half_away(rois[:, 1:]).astype(F32)                                   # [R, 4] in f32
    x1, y1 = corners[:, 0] * scale - F32(0.5), corners[:, 1] * scale - F32(0.5)
    x2, y2 = (corners[:, 2] + F32(1)) * scale - F32(0.5), (corners[:, 3] + F32(1)) * scale - F32(0.5)
    roi_w, roi_h = np.maximum(x2 - x1, F32(0.1)), np.maximum(y2 - y1, F32(0.1))          # [R]
    bin_w, bin_h = roi_w / F32(g), roi_h / F32(g)
    cells = np.arange(g, dtype=F32)
    # bin starts [R, 1, g (i), g (j)] ...
    start_x = (x1[:, None] + cells[None, :] * bin_w[:, None])[:, None, None, :]
    start_y = (y1[:, None] + cells[None, :] * bin_h[:, None])[:, None, :, None]
    if offsets is not None:                              # ... moved per class group and part: [R, k, g, g]
        groups = offsets.shape[1] // 2
        group_of = np.arange(k) // (k // groups)                                         # [k]
        part_of = np.arange(g) * part // g                                               # [g]
        moved = offsets * T(F32(trans_std))                                              # in T
        dx = moved[:, 2 * group_of][:, :, part_of][:, :, :, part_of].astype(F32)
        dy = moved[:, 2 * group_of + 1][:, :, part_of][:, :, :, part_of].astype(F32)
        start_x = start_x + dx * roi_w[:, None, None, None]
        start_y = start_y + dy * roi_h[:, None, None, None]
    start_x, start_y = np.broadcast_arrays(start_x, start_y)                             # [R, k, g, g]
    sub_w, sub_h = bin_w / F32(bins_x), bin_h / F32(bins_y)
    channel = (np.arange(k)[:, None, None] * g + np.arange(g)[None, :, None]) * g + np.arange(g)[None, None, :]
    fmap = data[np.maximum(ids, 0)]                                                      # [R, C, H, W]
    r_index = np.arange(count)[:, None, None, None]
    total = np.zeros((count, k, g, g), data.dtype)
    used = np.zeros((count, k, g, g), np.int64)
    for sy in range(bins_y):
        for sx in range(bins_x):
            px = start_x + F32(sx) * sub_w[:, None, None, None]
            py = start_y + F32(sy) * sub_h[:, None, None, None]
            inside = ((px >= -0.5) & (px <= width - 0.5) & (py >= -0.5) & (py <= height - 0.5))
            px = np.clip(px, F32(0), F32(width - 1))
            py = np.clip(py, F32(0), F32(height - 1))
            left, right = np.floor(px).astype(np.int64), np.ceil(px).astype(np.int64)
            top, bottom = np.floor(py).astype(np.int64), np.ceil(py).astype(np.int64)
            ddx = np.abs(px - left.astype(F32)).astype(T)
            ddy = np.abs(py - top.astype(F32)).astype(T)
            tl, tr = fmap[r_index, channel, top, left], fmap[r_index, channel, top, right]
            bl, br = fmap[r_index, channel, bottom, left], fmap[r_index, channel, bottom, right]
            upper, lower = tl + (tr - tl) * ddx, bl + (br - bl) * ddx
            value = upper + (lower - upper) * ddy
            total = np.where(inside, total + value, total)
            used += inside
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(used > 0, total / used.astype(T), T(0)).astype(data.dtype)
    out[ids < 0] = 0                                     # a negative batch id: the ROI is skipped
    return out


def _kernel_v1(input, coords, offsets=None, *, output_dim, spatial_scale, group_size, mode,  # noqa: A002
               spatial_bins_x, spatial_bins_y, trans_std, part_size):
    return (deformable_psroi_pooling(input, coords, offsets, output_dim, spatial_scale, group_size, mode,
                                     spatial_bins_x, spatial_bins_y, trans_std, part_size),)


def cases(rng: np.random.Generator) -> list:
    """Dyadic maps, corners, offsets and trans_std (every intermediate exact, so the CPU plugin's weight form
    agrees bit for bit), boxes partly outside the map, with and without offsets, every attribute."""
    out = []
    for index in range(30):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        n, k, g = int(r.integers(1, 3)), int(r.choice([1, 2, 4])), int(r.choice([1, 2, 4]))
        h, w = int(r.choice([2, 3, 5, 8])), int(r.choice([2, 3, 5, 8]))
        bins_x, bins_y = int(r.choice([1, 2, 4])), int(r.choice([1, 2, 4]))
        scale = float(r.choice([1.0, 0.5, 0.25]))
        count = int(r.integers(1, 4))
        data = (np.round(r.normal(size=(n, k * g * g, h, w)) * 8) / 8).astype(np.float32)
        corners = r.integers(-2, int(max(h, w) / scale) + 2, (count, 4)).astype(np.float64)
        corners = np.concatenate([np.minimum(corners[:, :2], corners[:, 2:]),
                                  np.maximum(corners[:, :2], corners[:, 2:])], axis=1)
        rois = np.concatenate([r.integers(0, n, (count, 1)), corners], axis=1).astype(np.float32)
        attributes = {"output_dim": k, "spatial_scale": scale, "group_size": g, "spatial_bins_x": bins_x,
                      "spatial_bins_y": bins_y, "mode": "bilinear_deformable"}
        offsets = None
        if index % 3:
            part = int(r.integers(1, 4))
            groups = int(r.choice([d for d in (1, 2, 4) if k % d == 0]))
            offsets = (r.integers(-8, 9, (count, 2 * groups, part, part)) / 16).astype(np.float32)
            attributes.update(trans_std=float(r.choice([1.0, 0.5, 0.125])), part_size=part)
        out.append(Case(f"deformable_psroi_pooling_{'offsets' if offsets is not None else 'plain'}_{index}",
                        (data, rois, offsets), attributes))
    return out


def bad_cases() -> list:
    f32 = lambda v: np.array(v, np.float32)  # noqa: E731
    data = f32(np.zeros((1, 8, 4, 4)))
    box = f32([[0, 0, 0, 2, 2]])
    a = {"output_dim": 2, "spatial_scale": 1.0, "group_size": 2}
    return [
        (Case("batch_out_of_range", (data, f32([[1, 0, 0, 2, 2]]), None), a), "batch index"),
        (Case("wrong_channels", (data[:, :7], box, None), a), "channel count"),
        (Case("four_columns", (data, box[:, :4], None), a), "[R, 5]"),
        (Case("nan_box", (data, box * np.nan, None), a), "finite"),
        (Case("offsets_shape", (data, box, f32(np.zeros((1, 2, 2, 2)))), a), "part_size"),
        (Case("offsets_groups", (data, box, f32(np.zeros((1, 6, 1, 1)))), a), "divide output_dim"),
        (Case("zero_bins", (data, box, None), dict(a, spatial_bins_x=0)), "spatial_bins_x"),
        (Case("unknown_mode", (data, box, None), dict(a, mode="average")), "mode"),
    ]


def _output_shapes(inputs: dict, attributes: dict) -> list:
    g = attributes["group_size"]
    return [(np.shape(inputs["coords"])[0], attributes["output_dim"], g, g)]


def _refuse(inputs: dict, attributes: dict) -> None:
    """The CPU plugin indexes the map with a batch id below -1 (it stops at -1): refused before it runs."""
    ids = np.trunc(np.asarray(inputs["coords"], np.float64)[:, 0]) if np.size(inputs["coords"]) else np.zeros(0)
    if (ids < -1).any():
        raise OpError(OP, "input 'coords'", "a batch id below -1 would be read out of bounds by OpenVINO's CPU plugin",
                      value=float(ids[ids < -1][0]), allowed=">= -1")


def _rounded(inputs: dict, attributes: dict) -> bool:
    """Some interpolation result is rounded in T: the kernel in f64 differs from the kernel in T."""
    values = [None if v is None else np.asarray(v) for v in (inputs["input"], inputs["coords"], inputs.get("offsets"))]
    a = {k: v for k, v in attributes.items()}
    narrow = deformable_psroi_pooling(*values, **a)
    wide = deformable_psroi_pooling(*[None if v is None else v.astype(np.float64) for v in values], **a)
    return not np.array_equal(narrow.astype(np.float64), wide)


def _after_minus_one(inputs: dict, attributes: dict) -> bool:
    ids = np.trunc(np.asarray(inputs["coords"], np.float64)[:, 0])
    stop = np.flatnonzero(ids == -1)
    return bool(stop.size and (ids[stop[0]:] >= 0).any())


def _example(rois, data=None, **attributes) -> Case:
    data = np.arange(32, dtype=np.float32).reshape(1, 8, 2, 2) / 3 if data is None else data
    return Case("example", (data, np.asarray(rois, np.float32), None),
                {"output_dim": 2, "spatial_scale": 1.0, "group_size": 2, "spatial_bins_x": 2, **attributes})


DIVERGENCES = (
    Divergence("ov-deformablepsroi-weights", "openvino-cpu", "value", "bilinear weights in another form",
               "The CPU plugin interpolates as (1 - dx)(1 - dy) v11 + (1 - dx) dy v12 + dx (1 - dy) v21 + dx dy v22 "
               "in f32; the reference as a + (b - a) d per axis in T: last-bit differences where an interpolation "
               "is rounded (dyadic inputs agree bit for bit).",
               _rounded, _example([[0, 0, 0, 0.5, 1.5]], spatial_bins_y=2)),
    Divergence("ov-deformablepsroi-stops-at-minus-one", "openvino-cpu", "value", "ROIs after a batch id of -1 are 0",
               "The CPU plugin ends the ROI list at the first batch id -1 (every later ROI is 0); the reference skips "
               "just the ROIs with a negative batch id.",
               _after_minus_one, _example([[-1, 0, 0, 1, 1], [0, 0, 0, 1, 1]], data=np.ones((1, 8, 2, 2), np.float32))),
    Divergence("ov-deformablepsroi-f64-in-f32", "openvino-cpu", "value", "float64 computed in float32",
               "The reference interpolates and averages float64 in float64 (the geometry in f32); the CPU plugin "
               "computes float64 inputs in float32 and widens the result.",
               lambda inputs, attributes: np.asarray(inputs["input"]).dtype == np.float64,
               Case("example", (np.arange(32, dtype=np.float64).reshape(1, 8, 2, 2) / 3,
                                np.asarray([[0, 0, 0, 1, 1]], np.float64), None),
                    {"output_dim": 2, "spatial_scale": 1.0, "group_size": 2, "spatial_bins_x": 2})),
)


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 1, (Port("input", "T"), Port("coords", "T"), Port("offsets", "T", optional=True)),
                  (Port("output", "T"),),
                  (Attribute("output_dim", "int", REQUIRED), Attribute("spatial_scale", "float", REQUIRED),
                   Attribute("group_size", "int", 1), Attribute("mode", "string", "bilinear_deformable", MODES),
                   Attribute("spatial_bins_x", "int", 1), Attribute("spatial_bins_y", "int", 1),
                   Attribute("trans_std", "float", 1.0), Attribute("part_size", "int", 1)),
                  {"T": TYPES}, _kernel_v1,
                  doc="Deformable position-sensitive ROI pooling (bilinear_deformable), optional offsets.",
                  infer=output_type(None, [None, None, None, None])),),
    openvino=OpenVINO(
        "DeformablePSROIPooling", versions=(1,), factory=native("opset1", "DeformablePSROIPooling"),
        attributes=maps("int", "output_dim", "group_size", "spatial_bins_x", "spatial_bins_y", "part_size")
        + maps("float", "spatial_scale", "trans_std") + (AttributeMap("mode", "lower"),),
        output_shapes=_output_shapes, refuse=_refuse),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("per-bin channel selection with learned offsets has no standard ONNX op; not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torchvision has no deformable PS-ROI pooling"),
    divergences=DIVERGENCES,
    benchmark=Absent("not benchmarked"),
)
