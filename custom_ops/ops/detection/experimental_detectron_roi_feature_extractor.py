"""ExperimentalDetectronROIFeatureExtractor-6 (OpenVINO): Detectron's FPN ROIAlign over several pyramid levels.

rois [R, 4] (x0, y0, x1, y1 in image pixels), then one feature map [1, C, H_i, W_i] per pyramid level (up to
LEVELS; OpenVINO takes any count, the import refuses more). Each box goes to level floor(2 + log2(sqrt(area) /
224 + 1e-6)) clamped to the levels (a box of area <= 0 to none: zero features), and is pooled there by Caffe2's
ROIAlign (spatial scale 1 / pyramid_scales[level], `aligned` shifts by half a pixel, sampling_ratio 0: an
adaptive grid of ceil(size / output_size) per bin, samples outside [-1, size] count as 0). Outputs: features
[R, C, output_size, output_size] in box order and the boxes unchanged. Computed in f32 (the reference's float)
in the reference's order of operations, outputs in the input type.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import REQUIRED, Absent, Attribute, AttributeMap, Case, DialectUnit, OpenVINO, OpSpec, Port

from ._common import flag, native

OP = "ExperimentalDetectronROIFeatureExtractor"
TYPES = (np.dtype(np.float16), np.dtype(np.float32))
F32 = np.float32
#: feature map ports (pyramid levels) of the dialect op: the first required, the others optional
LEVELS = 6
FEATURE_PORTS = tuple(f"features_{level}" for level in range(LEVELS))
#: bilinear samples (boxes x bins x grid points x channels) above which the kernel refuses: with
#: sampling_ratio 0 the grid grows with the box, and a huge box would take hours
MAX_SAMPLES = 1 << 26


def validate(rois, features, attributes):
    rois = check.as_array(OP, "rois", rois)
    check.data_type(OP, "rois", rois, TYPES)
    if rois.ndim != 2 or rois.shape[1] != 4:
        raise OpError(OP, "input 'rois'", "must have shape [R, 4]", value=rois.shape)
    given = [(name, value) for name, value in zip(FEATURE_PORTS, features) if value is not None]
    if [name for name, _ in given] != list(FEATURE_PORTS[:len(given)]):
        raise OpError(OP, "inputs", "feature maps must be given without gaps from features_0",
                      value=[name for name, _ in given])
    maps = [check.as_array(OP, name, value) for name, value in given]
    for (name, _), array in zip(given, maps):
        if array.dtype != rois.dtype:
            raise OpError(OP, f"input '{name}'", "element type must equal rois'", value=str(array.dtype),
                          allowed=str(rois.dtype))
        if array.ndim != 4 or array.shape[0] != 1 or array.shape[1] != maps[0].shape[1]:
            raise OpError(OP, f"input '{name}'", "must have shape [1, C, H, W] (C of features_0)",
                          value=array.shape)
    scales = list(attributes["pyramid_scales"])
    if len(scales) != len(maps):
        raise OpError(OP, "attribute 'pyramid_scales'", "must have one scale per feature map",
                      value=scales, allowed=f"{len(maps)} values")
    if any(s < 1 for s in scales):
        raise OpError(OP, "attribute 'pyramid_scales'", "values must be positive", value=scales, allowed=">= 1")
    if int(attributes["output_size"]) < 1:
        raise OpError(OP, "attribute 'output_size'", "must be positive", value=attributes["output_size"],
                      allowed=">= 1")
    if int(attributes["sampling_ratio"]) < 0:
        raise OpError(OP, "attribute 'sampling_ratio'", "must not be negative", value=attributes["sampling_ratio"],
                      allowed=">= 0")
    return rois, maps


def levels_of(rois: np.ndarray, count: int) -> np.ndarray:
    """The pyramid level of each box; `count` (no level) for a box of area <= 0."""
    x0, y0, x1, y1 = (rois[:, k] for k in range(4))
    area = (x1 - x0) * (y1 - y0)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.sqrt(np.maximum(area, F32(0))) / F32(224)
        level = np.floor(np.log2((scaled + F32(1e-6)).astype(np.float64)).astype(F32) + F32(2))
    level = np.clip(np.nan_to_num(level, nan=0, posinf=count - 1, neginf=0), 0, count - 1).astype(np.int64)
    return np.where(area > 0, level, count)


def roi_align(data: np.ndarray, rois: np.ndarray, scale, pooled: int, sampling_ratio: int, aligned: bool):
    """Caffe2 ROIAlign of boxes [R, 4] on one map [C, H, W] (f32): [R, C, pooled, pooled]."""
    channels, height, width = data.shape
    offset = F32(0.5) if aligned else F32(0)
    start_w, start_h = rois[:, 0] * scale - offset, rois[:, 1] * scale - offset
    end_w, end_h = rois[:, 2] * scale - offset, rois[:, 3] * scale - offset
    roi_w = np.maximum(end_w - start_w, F32(1))
    roi_h = np.maximum(end_h - start_h, F32(1))
    bin_h, bin_w = roi_h / F32(pooled), roi_w / F32(pooled)
    if sampling_ratio > 0:
        grid_h = grid_w = np.full(len(rois), sampling_ratio, np.int64)
    else:
        grid_h, grid_w = np.ceil(roi_h / F32(pooled)).astype(np.int64), np.ceil(roi_w / F32(pooled)).astype(np.int64)
    samples = int((grid_h * grid_w).sum()) * pooled * pooled * channels
    if samples > MAX_SAMPLES:
        raise OpError(OP, "input 'rois'", "the boxes need too many bilinear samples (sampling_ratio 0 grows the "
                      "grid with the box size)", value=samples, allowed=f"<= {MAX_SAMPLES}")
    count = (grid_h * grid_w).astype(F32)
    cells = np.arange(pooled, dtype=F32)
    out = np.zeros((len(rois), channels, pooled, pooled), F32)
    flat = data.reshape(channels, -1)
    for iy in range(int(grid_h.max(initial=0))):
        y = _sample(start_h, bin_h, grid_h, cells, iy)                         # [R, pooled]
        y_ok, y_low, y_high, ly = _corners(y, height)
        for ix in range(int(grid_w.max(initial=0))):
            x = _sample(start_w, bin_w, grid_w, cells, ix)
            x_ok, x_low, x_high, lx = _corners(x, width)
            hy, hx = F32(1) - ly, F32(1) - lx
            w1 = hy[:, :, None] * hx[:, None, :]                               # [R, ph, pw]
            w2 = hy[:, :, None] * lx[:, None, :]
            w3 = ly[:, :, None] * hx[:, None, :]
            w4 = ly[:, :, None] * lx[:, None, :]
            pos = lambda yy, xx: yy[:, :, None] * width + xx[:, None, :]       # noqa: E731
            value = (w1[:, None] * flat[:, pos(y_low, x_low)].transpose(1, 0, 2, 3)
                     + w2[:, None] * flat[:, pos(y_low, x_high)].transpose(1, 0, 2, 3)
                     + w3[:, None] * flat[:, pos(y_high, x_low)].transpose(1, 0, 2, 3)
                     + w4[:, None] * flat[:, pos(y_high, x_high)].transpose(1, 0, 2, 3))
            inside = y_ok[:, :, None] & x_ok[:, None, :] & ((iy < grid_h) & (ix < grid_w))[:, None, None]
            out += np.where(inside[:, None], value, F32(0))
    return out / count[:, None, None, None]


def _sample(start, size, grid, cells, index: int):
    """Sample coordinate `index` of every bin: start + cell * size + (index + 0.5) * size / grid, [R, pooled]."""
    g = np.maximum(grid, 1).astype(F32)[:, None]
    return (start[:, None] + cells[None, :] * size[:, None]) + (F32(index) + F32(0.5)) * size[:, None] / g


def _corners(v, size: int):
    """(inside [-1, size], low index, high index, fraction) of sample coordinates (the reference's clamping)."""
    ok = (v >= F32(-1)) & (v <= F32(size))
    v = np.maximum(v, F32(0))
    low = np.where(ok, v, 0).astype(np.int64)
    edge = low >= size - 1
    low = np.where(edge, size - 1, low)
    high = np.where(edge, size - 1, low + 1)
    v = np.where(edge, low.astype(F32), v)
    return ok, low, high, (v - low.astype(F32)).astype(F32)


def extract(rois, *features, output_size, sampling_ratio, pyramid_scales, aligned):
    rois, maps = validate(rois, features, locals())
    boxes = rois.astype(F32)
    level = levels_of(boxes, len(maps))
    pooled = int(output_size)
    out = np.zeros((len(boxes), maps[0].shape[1], pooled, pooled), F32)
    for index, feature in enumerate(maps):
        chosen = np.flatnonzero(level == index)
        if chosen.size:
            scale = F32(1) / F32(pyramid_scales[index])
            out[chosen] = roi_align(feature[0].astype(F32), boxes[chosen], scale, pooled, int(sampling_ratio),
                                    bool(aligned))
    return out.astype(rois.dtype), rois.copy()


def _infer(ctx) -> None:
    from onnx import helper
    code = ctx.get_input_type(0).tensor_type.elem_type
    ctx.set_output_type(0, helper.make_tensor_type_proto(code, [None, None, None, None]))
    ctx.set_output_type(1, helper.make_tensor_type_proto(code, [None, 4]))


# Cases ------------------------------------------------------------------------------------------------

def cases(rng: np.random.Generator) -> list:
    """1-4 levels (scales 4, 8, 16, 32, maps of image / scale), boxes of every size (some degenerate or
    outside the image), output_size 1-3, sampling_ratio 0-2, aligned both ways."""
    out = []
    for index in range(20):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        levels = int(r.integers(1, 5))
        scales = [4, 8, 16, 32][:levels]
        image = int(r.choice([64, 128, 256]))
        channels = int(r.integers(1, 4))
        maps = [r.normal(0, 1, (1, channels, max(1, image // s), max(1, image // s))) for s in scales]
        count = int(r.integers(1, 7))
        corner = r.uniform(-16, image, (count, 2))
        size = np.exp(r.uniform(0, np.log(image * 1.5), (count, 2)))
        boxes = np.concatenate([corner, corner + size], 1)
        if index % 5 == 4:
            boxes[0, 2] = boxes[0, 0]                     # zero area: no level, zero features
        dtype = np.float16 if index % 7 == 6 else np.float32
        a = {"output_size": int(r.integers(1, 4)), "sampling_ratio": int(r.integers(0, 3)),
             "pyramid_scales": scales, "aligned": int(index % 2)}
        out.append(Case(f"roi_features_{np.dtype(dtype).name}_{index}",
                        tuple(x.astype(dtype) for x in [boxes] + maps) + (None,) * (LEVELS - levels), a))
    return out


def bad_cases() -> list:
    f32 = lambda v: np.asarray(v, np.float32)  # noqa: E731
    rois = f32([[0, 0, 8, 8], [4, 4, 30, 20]])
    level = f32(np.zeros((1, 2, 4, 4)))
    a = {"output_size": 2, "sampling_ratio": 2, "pyramid_scales": [4]}
    return [
        (Case("rois_shape", (rois[:, :3], level), a), "[R, 4]"),
        (Case("batch_2", (rois, f32(np.zeros((2, 2, 4, 4)))), a), "[1, C, H, W]"),
        (Case("channels", (rois, level, f32(np.zeros((1, 3, 2, 2)))), {**a, "pyramid_scales": [4, 8]}),
         "[1, C, H, W]"),
        (Case("scale_count", (rois, level), {**a, "pyramid_scales": [4, 8]}), "one scale per feature map"),
        (Case("map_type", (rois, level.astype(np.float16)), a), "element type"),
        (Case("output_size", (rois, level), {**a, "output_size": 0}), "output_size"),
        (Case("huge_box", (rois * 1e6, level), {**a, "sampling_ratio": 0}), "too many bilinear samples"),
    ]


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 6, (Port("rois", "T"),) + tuple(Port(name, "T", optional=level > 0)
                                                      for level, name in enumerate(FEATURE_PORTS)),
                  (Port("output_features", "T"), Port("output_rois", "T")),
                  (Attribute("output_size", "int", REQUIRED), Attribute("sampling_ratio", "int", REQUIRED),
                   Attribute("pyramid_scales", "ints", REQUIRED), flag("aligned", 0)),
                  {"T": TYPES}, extract, doc="FPN ROIAlign: each box pooled on its pyramid level.",
                  infer=_infer),),
    openvino=OpenVINO(
        OP, versions=(6,), factory=native("opset6", OP),
        attributes=(AttributeMap("output_size", "int"), AttributeMap("sampling_ratio", "int"),
                    AttributeMap("pyramid_scales", "ints"), AttributeMap("aligned", "bool")),
        refuses=(f"more than {LEVELS} feature maps (the dialect op has {LEVELS} feature ports)",),
        output_shapes=lambda i, a: [(np.shape(i["rois"])[0], np.shape(i["features_0"])[1], int(a["output_size"]),
                                     int(a["output_size"])), (np.shape(i["rois"])[0], 4)]),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("per-box level choice plus Caffe2 ROIAlign sums in the reference's order; onnx RoiAlign "
                    "averages differently (no out-of-map samples rule, no order guarantee); not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torchvision's MultiScaleRoIAlign uses other level rules; not adapted"),
    divergences=Absent("no divergence of OpenVINO's CPU plugin found on the generated cases"),
    benchmark=Absent("not benchmarked"),
)
