"""ROIPooling-2 (OpenVINO): pool each region of interest of a feature map into pooled_h x pooled_w bins.

input: [N, C, H, W]; coords: [R, 5] rows (batch_id, x1, y1, x2, y2). Output [R, C, pooled_h, pooled_w].
method "max": the corners scaled by spatial_scale and rounded half away from zero; the ROI (at least
1 x 1) split into bins [floor(i * size / pooled), ceil((i + 1) * size / pooled)) clipped to the map;
an empty bin is 0. method "bilinear": corners are normalised [0, 1]; bin centres spread evenly from
the first to the last corner (the last exactly at the end), interpolated between the 4 neighbours;
a centre outside the map is 0. Arithmetic in the input type, in the reference's order.
batch_id is truncated to an integer and must be in [0, N - 1] (OpenVINO's CPU plugin source ends the ROI
list at a batch id of -1; not measured: its backend runs need static shapes).
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import (REQUIRED, Absent, Attribute, Benchmark, BenchmarkCase, Case, DialectUnit, Divergence,
                             OpenVINO, OpSpec, Port)

from ._common import image_boxes, maps, native, output_type, pooled_output_shapes

OP = "ROIPooling"
TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
METHODS = ("max", "bilinear")


def round_half_away(x: np.ndarray) -> np.ndarray:
    """std::round: halves away from zero (numpy rounds them to even)."""
    wide = x.astype(np.float64)
    return np.trunc(wide + np.copysign(0.5, wide))


def feature_map_and_boxes(op: str, data, rois, types) -> tuple[np.ndarray, np.ndarray]:
    """The checked inputs of the ROI pooling ops: a feature map [N, C, H, W] of one of `types` and boxes
    [R, 5] (batch index, corners) of the same element type."""
    data, rois = check.as_array(op, "input", data), check.as_array(op, "coords", rois)
    check.data_type(op, "input", data, types)
    if rois.dtype != data.dtype:
        raise OpError(op, "input 'coords'", "element type must equal input's", value=str(rois.dtype),
                      allowed=str(data.dtype))
    if data.ndim != 4:
        raise OpError(op, "input 'input'", "must have rank 4 [N, C, H, W]", value=data.shape)
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise OpError(op, "input 'coords'", "must have shape [R, 5]", value=rois.shape)
    return data, rois


def batch_ids(op: str, name: str, values: np.ndarray, batches: int) -> np.ndarray:
    """ROI batch indices: truncated to integers, in [0, batches - 1]."""
    with np.errstate(invalid="ignore"):
        ids = np.trunc(values.astype(np.float64))
    bad = ~((ids >= 0) & (ids < batches))
    if bad.any():
        raise OpError(op, f"input '{name}'", "ROI batch index out of range", value=float(values[bad][0]),
                      allowed=f"[0, {batches - 1}]")
    return ids.astype(np.int64)


def validate(data, rois, pooled_h, pooled_w, spatial_scale, method):
    data, rois = feature_map_and_boxes(OP, data, rois, TYPES)
    method = check.choice(OP, "method", method, METHODS)
    if int(pooled_h) < 1 or int(pooled_w) < 1:
        raise OpError(OP, "attribute 'pooled_h'/'pooled_w'", "must be positive", value=(pooled_h, pooled_w),
                      allowed=">= 1")
    if not np.isfinite(spatial_scale) or spatial_scale <= 0:
        raise OpError(OP, "attribute 'spatial_scale'", "must be positive", value=spatial_scale, allowed="> 0")
    ids = batch_ids(OP, "coords", rois[:, 0], data.shape[0]) if rois.size else np.zeros(0, np.int64)
    return data, rois, ids, method


def roi_pooling(data, rois, pooled_h: int, pooled_w: int, spatial_scale: float = 1.0, method: str = "max"):
    data, rois, ids, method = validate(data, rois, pooled_h, pooled_w, spatial_scale, method)
    pooled_h, pooled_w = int(pooled_h), int(pooled_w)
    if method == "max":
        return _max(data, rois, ids, pooled_h, pooled_w, spatial_scale)
    return _bilinear(data, rois, ids, pooled_h, pooled_w)


def _bins(start, size, pooled, limit, t):
    """[R, pooled] bin starts and ends of ROIs starting at `start` [R] with `size` [R] cells."""
    step = size.astype(t) / t.type(pooled)                                  # [R]
    index = np.arange(pooled + 1, dtype=t)
    edges = index[None, :] * step[:, None]
    low = np.floor(edges[:, :-1]).astype(np.int64) + start[:, None]
    high = np.ceil(edges[:, 1:]).astype(np.int64) + start[:, None]
    # (np.minimum / np.maximum: np.clip's Python wrapper costs more than the clipping of these small arrays)
    return np.minimum(np.maximum(low, 0), limit), np.minimum(np.maximum(high, 0), limit)


def _max(data, rois, ids, pooled_h, pooled_w, spatial_scale):
    t = data.dtype
    _, channels, height, width = data.shape
    wide = np.promote_types(t, np.float32)                 # T * float, as C++ promotes it
    corners = round_half_away(rois[:, 1:].astype(wide) * np.float32(spatial_scale)).astype(np.int64)
    x0, y0, x1, y1 = corners.T
    h0, h1 = _bins(y0, np.maximum(y1 - y0 + 1, 1), pooled_h, height, t)       # [R, PH]
    w0, w1 = _bins(x0, np.maximum(x1 - x0 + 1, 1), pooled_w, width, t)       # [R, PW]
    lowest = np.finfo(t).min                            # the reference's start value (so -inf bins give it)
    count = rois.shape[0]
    if not (count and channels and height and width):
        return np.zeros((count, channels, pooled_h, pooled_w), t)
    # Max of each bin from a 2-D sparse table: entry (a, b) holds the maxima of 2^a x 2^b blocks, a bin is
    # the max of four overlapping blocks of the largest such size (max is exact; only which of equal zeros or
    # of several NaNs comes out depends on the order, so ROIs with a zero bin beside a -0.0 in the map, or a
    # NaN bin, are redone bin by bin, columns then rows). The reference starts from the lowest value (a -inf
    # bin gives it).
    empty = (h1 <= h0)[:, :, None] | (w1 <= w0)[:, None, :]                                # [R, PH, PW]
    rows, row_level = _windows(h0, h1, height)
    cols, col_level = _windows(w0, w1, width)
    table = _block_maxima(data.transpose(2, 3, 0, 1), int(row_level.max()),
                          int(col_level.max()))                                             # [A, B, H, W, N, C]
    flat = table.reshape(-1, channels)
    base = ((row_level[:, :, None] * table.shape[1] + col_level[:, None, :]) * height * width * data.shape[0]
            + ids[:, None, None])
    out = np.empty((count, channels, pooled_h, pooled_w), t)
    blocks = [(y, x) for y in rows for x in cols]
    running = None
    for step, (y, x) in enumerate(blocks):
        index = base + (y[:, :, None] * width + x[:, None, :]) * data.shape[0]
        block = np.take(flat, index, axis=0)                                                 # [R, PH, PW, C]
        # the last maximum writes the output's layout (a transposed view) instead of a copy after it
        target = out.transpose(0, 2, 3, 1) if step == len(blocks) - 1 else running
        running = block if running is None else np.maximum(running, block, out=target)
    # a bin's max is below the lowest value only with -inf in the map, NaN only with NaN in it (both checked on
    # the map, smaller than the output)
    if (data < lowest).any():
        np.maximum(out, lowest, out=out)
    if empty.any():
        out.transpose(0, 2, 3, 1)[empty] = 0
    signed_zero = ((data == 0) & np.signbit(data)).any()
    if signed_zero or np.isnan(data).any():
        redo = np.isnan(out) | (out == 0) if signed_zero else np.isnan(out)
        for r in np.flatnonzero((redo & ~empty[:, None]).any(axis=(1, 2, 3))):
            out[r] = _max_in_order(data[ids[r]], h0[r], h1[r], w0[r], w1[r], lowest)
    return out


def _windows(start, end, limit):
    """The two overlapping power-of-two windows covering [start, end) ([R, B] each) and their level."""
    length = np.maximum(end - start, 1)
    level = np.floor(np.log2(length)).astype(np.int64)                  # exact for small integers
    last = np.minimum(start + length - (1 << level), limit - 1)        # empty windows: any cell
    return (np.minimum(start, limit - 1), last), level


def _block_maxima(values, row_levels, col_levels):
    """[row_levels + 1, col_levels + 1, H, W, ...]: entry (a, b, y, x) the max of values[y:y + 2^a, x:x + 2^b]
    (as far as the map reaches). `values` may be a view (a transposed map): entry (0, 0) is its one copy."""
    table = np.empty((row_levels + 1, col_levels + 1, *values.shape), values.dtype)
    table[0, 0] = values
    for b in range(1, col_levels + 1):
        last, half = table[0, b - 1], 1 << (b - 1)
        np.maximum(last[:, :-half], last[:, half:], out=table[0, b, :, :-half])
        table[0, b, :, -half:] = last[:, -half:]
    for a in range(1, row_levels + 1):
        last, half = table[a - 1], 1 << (a - 1)
        np.maximum(last[:, :-half], last[:, half:], out=table[a, :, :-half])
        table[a, :, -half:] = last[:, -half:]
    return table


def _max_in_order(data, h0, h1, w0, w1, lowest):
    """[C, PH, PW] bins of one ROI over data [C, H, W]: max over columns, then rows."""
    t = data.dtype
    channels, height, _ = data.shape
    out = np.zeros((channels, h0.shape[0], w0.shape[0]), t)
    columns = data.transpose(2, 0, 1)                                                      # [W, C, H]
    across = np.full((height, w0.shape[0], channels), lowest, t)                           # [H, PW, C]
    for j in np.flatnonzero(w1 > w0):
        across[:, j] = np.maximum(columns[w0[j]:w1[j]].max(axis=0), lowest).T
    for i in np.flatnonzero(h1 > h0):
        out[:, i] = across[h0[i]:h1[i]].max(axis=0).T
    out[:, :, w1 <= w0] = 0                                                                # empty bins
    return out


def lerp(a, b, weight):
    """a + (b - a) * weight, rounded after the product as the reference does (OpenVINO's CPU plugin fuses
    the multiply-add: a declared divergence of the last bit)."""
    return a + (b - a) * weight


def _bilinear(data, rois, ids, pooled_h, pooled_w):
    t = data.dtype
    _, channels, height, width = data.shape
    x0, y0, x1, y1 = (rois[:, k] for k in range(1, 5))

    def centres(start, end, pooled, size):
        if pooled == 1:             # the sum in T, the rest in double (the reference's 0.5 is a double)
            mid = 0.5 * (start + end).astype(np.float64) * (size - 1)
            return mid.astype(t)[:, None]
        scale = ((end - start) * t.type(size - 1)) / t.type(pooled - 1)
        index = np.arange(pooled, dtype=t)
        inner = index[None, :] * scale[:, None] + (start * t.type(size - 1))[:, None]
        inner[:, -1] = t.type(size - 1) * end
        return inner

    ys = centres(y0, y1, pooled_h, height)                                    # [R, PH]
    xs = centres(x0, x1, pooled_w, width)                                     # [R, PW]
    y = ys[:, :, None]
    x = xs[:, None, :]
    inside = (y >= 0) & (y <= t.type(height - 1)) & (x >= 0) & (x <= t.type(width - 1))  # [R, PH, PW]
    with np.errstate(invalid="ignore"):
        top = np.where(inside, np.floor(y), 0).astype(np.int64)
        left = np.where(inside, np.floor(x), 0).astype(np.int64)
        bottom = np.minimum(np.where(inside, np.ceil(y), 0).astype(np.int64), height - 1)
        right = np.minimum(np.where(inside, np.ceil(x), 0).astype(np.int64), width - 1)
    top, left, bottom, right = np.broadcast_arrays(top, left, bottom, right)
    n = ids[:, None, None, None]
    c = np.arange(channels)[None, :, None, None]

    def at(yy, xx):
        return data[n, c, yy[:, None], xx[:, None]]                           # [R, C, PH, PW]

    tl, tr, bl, br = at(top, left), at(top, right), at(bottom, left), at(bottom, right)
    dx = (x - left.astype(t))[:, None]
    dy = (y - top.astype(t))[:, None]
    upper, lower = lerp(tl, tr, dx), lerp(bl, br, dx)
    value = lerp(upper, lower, dy)
    return np.where(inside[:, None], value, t.type(0)).astype(t)


# Unit -------------------------------------------------------------------------------------------------

def _kernel_v2(data, rois, pooled_h, pooled_w, spatial_scale, method):
    return (roi_pooling(data, rois, pooled_h, pooled_w, spatial_scale, method),)


def cases(rng: np.random.Generator) -> list:
    """Max pooling over random maps and boxes (partly outside the map, half-integer corners); bilinear
    on dyadic values (every intermediate exact), so that fused and unfused multiply-adds agree."""
    out = []
    for index in range(40):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        method = METHODS[index % 2]
        n, c, rois = int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 5))
        scale = float(r.choice([1.0, 0.5, 0.25, 0.0625]))
        if method == "max":
            h, w = int(r.integers(1, 9)), int(r.integers(1, 9))
            ph, pw = int(r.integers(1, 4)), int(r.integers(1, 4))
            data = r.normal(size=(n, c, h, w))
            corners = r.uniform(-4, max(h, w) / scale + 4, (rois, 4))
            if index % 4 == 0:
                corners = np.round(corners * 2) / 2
        else:
            h, w = int(r.choice([2, 3, 5, 9])), int(r.choice([2, 3, 5, 9]))
            ph, pw = int(r.choice([1, 2, 3, 5])), int(r.choice([1, 2, 3, 5]))
            data = np.round(r.normal(size=(n, c, h, w)) * 4) / 4
            corners = r.integers(-2, 19, (rois, 4)) / 16
        low, high = np.minimum(corners[:, :2], corners[:, 2:]), np.maximum(corners[:, :2], corners[:, 2:])
        if index % 5:
            corners = np.concatenate([low, high], axis=1)
        boxes = np.concatenate([r.integers(0, n, (rois, 1)), corners], axis=1)
        dtype = np.float32
        out.append(Case(f"roi_pooling_{method}_{index}", (data.astype(dtype), boxes.astype(dtype)),
                        {"pooled_h": ph, "pooled_w": pw, "spatial_scale": scale, "method": method}))
    return out


def bad_cases() -> list:
    f32 = lambda v: np.array(v, np.float32)  # noqa: E731
    data = f32(np.zeros((1, 1, 4, 4)))
    box = f32([[0, 0, 0, 2, 2]])
    a = {"pooled_h": 2, "pooled_w": 2, "spatial_scale": 1.0}
    return [
        (Case("batch_out_of_range", (data, f32([[1, 0, 0, 2, 2]])), a), "batch index"),
        (Case("negative_batch", (data, f32([[-1, 0, 0, 2, 2]])), a), "batch index"),
        (Case("rank_3", (data[0], box), a), "rank 4"),
        (Case("four_columns", (data, box[:, :4]), a), "[R, 5]"),
        (Case("mixed_types", (data, box.astype(np.float64)), a), "element type"),
        (Case("zero_bins", (data, box), {**a, "pooled_h": 0}), "positive"),
        (Case("integer_map", (data.astype(np.int32), box.astype(np.int32)), a), "element type"),
    ]


_F32 = lambda v: np.asarray(v, np.float32)  # noqa: E731
DIVERGENCES = (
    Divergence("ov-roipooling-bilinear-fma", "openvino-cpu", "value", "bilinear interpolation fused",
               "The CPU plugin interpolates with a fused multiply-add (vfmadd); the reference rounds the product "
               "first: last-bit differences on non-dyadic values (tests: equal bit for bit once fused).",
               lambda inputs, attributes: attributes["method"] == "bilinear",
               Case("example", (_F32(np.arange(16).reshape(1, 1, 4, 4) / 3), _F32([[0, 0.1, 0.2, 0.7, 0.9]])),
                    {"pooled_h": 2, "pooled_w": 2, "spatial_scale": 1.0, "method": "bilinear"})),
)


def benchmark_cases(mode: str) -> list:
    """Fast R-CNN head: max pooling 7x7 of rois (image coordinates, scale 1/16) over a C x 38 x 50 map."""
    channels, rois = {"full": (64, 100), "quick": (64, 100), "tiny": (2, 3)}[mode]

    def inputs(rng):
        corners = image_boxes(rng, rois)
        return {"input": rng.standard_normal((1, channels, 38, 50)).astype(np.float32),
                "coords": np.concatenate([np.zeros((rois, 1)), corners], axis=1).astype(np.float32)}
    return [BenchmarkCase(f"roi-pooling-{rois}", f"max 7x7: {rois} rois over 1x{channels}x38x50", inputs,
                          {"pooled_h": 7, "pooled_w": 7, "spatial_scale": 0.0625, "method": "max"})]


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 2, (Port("input", "T"), Port("coords", "T")), (Port("output", "T"),),
                  (Attribute("pooled_h", "int", REQUIRED), Attribute("pooled_w", "int", REQUIRED),
                   Attribute("spatial_scale", "float", REQUIRED), Attribute("method", "string", "max", METHODS)),
                  {"T": TYPES}, _kernel_v2, doc="Max or bilinear pooling of regions of interest into fixed bins.",
                  infer=output_type(None, [None, None, None, None])),),
    openvino=OpenVINO(
        "ROIPooling", versions=(2,), factory=native("opset2", "ROIPooling"),
        attributes=maps("int", "pooled_h", "pooled_w") + maps("float", "spatial_scale") + maps("lower", "method"),
        output_shapes=pooled_output_shapes("coords")),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("ONNX MaxRoiPool rounds and bins like max mode but has no bilinear mode and no batch-id "
                    "check; not written"),
    raising=Absent("standard MaxRoiPool is not raised"),
    torch=Absent("torchvision.ops.roi_pool is not exported through the dialect"),
    divergences=DIVERGENCES,
    benchmark=Benchmark(benchmark_cases),
)
