"""Proposal-4 (-1) (OpenVINO): Faster R-CNN region proposals from anchor scores and box deltas.

OpenVINO's CPU plugin crashes the process (SIGSEGV) when fewer than 8 proposals enter its NMS (measured:
min(pre_nms_topn, A * H * W) of 3 to 6), so the differential tests run it in a subprocess on cases with
at least 8. It fuses the centre update (muladd) into one rounding: with that swapped in, the kernel
equals it bit for bit on the generated cases, except where glibc's expf rounds an exp one ulp low (declared:
ov-proposal-expf-last-bit; 2 of 115 further measured cases).

Proposal-1 computes the same rois and has no probs output: it imports as this op with its first output only
(measured: the CPU plugin's Proposal-1 rois equal Proposal-4's).
"""
from __future__ import annotations

import functools

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import (REQUIRED, Absent, Attribute, Benchmark, BenchmarkCase, Case, DialectUnit, Divergence,
                             OpenVINO, OpSpec, Port)

from ._common import bool_map, flag, greedy_nms_of_pairs, maps, native, same_type_arrays, stable_argsort_head
from .experimental_detectron_generate_proposals_single_image import EXPF_LOW, expf_divergence

OP = "Proposal"
TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
F32 = np.float32
FRAMEWORKS = ("", "caffe", "tensorflow")
#: Anchor grids kept (_anchor_grid): one per (attributes, map size, image size) a process runs.
ANCHOR_GRIDS_CACHED = 8

DEFAULTS = dict(clip_before_nms=1, clip_after_nms=0, normalize=0, box_size_scale=1.0, box_coordinate_scale=1.0,
                framework="")


def anchors(base_size: int, ratios, scales, tensorflow: bool) -> np.ndarray:
    """[A, 4] anchors (x0, y0, x1, y1) in ratio-major order."""
    offset = F32(0) if tensorflow else F32(1)
    area = F32(base_size * base_size)
    centre = F32(0.5) * (F32(base_size) - offset)
    ratio = np.asarray(ratios, F32)[:, None]
    if tensorflow:
        w = np.sqrt(area / ratio)
        h = w * ratio
    else:
        w = _roundf(np.sqrt(area / ratio))
        h = _roundf(w * ratio)
    scale = np.asarray(scales, F32)[None, :]
    half_w = F32(0.5) * (w * scale - offset)                      # [R, S]
    half_h = F32(0.5) * (h * scale - offset)
    out = np.stack([centre - half_w, centre - half_h, centre + half_w, centre + half_h], -1).reshape(-1, 4)
    if tensorflow:
        out = out - F32(base_size) * F32(0.5)
    return out.astype(F32)


@functools.lru_cache(maxsize=ANCHOR_GRIDS_CACHED)
def _anchor_grid(base_size, ratios, scales, tensorflow, stride, height, width, img_w_bits, img_h_bits):
    """The anchors over the feature map: widths, heights and centres [H, W, A] (F32; tensorflow: clipped to the
    image, its F32 width and height as bits). Read-only: cached, as a model calls with the same attributes and
    map size each time."""
    offset = F32(0) if tensorflow else F32(1)
    img_w, img_h = (np.uint32(bits).view(F32) for bits in (img_w_bits, img_h_bits))
    base = anchors(base_size, ratios, scales, tensorflow)                            # [A, 4]
    rows, cols = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")    # [H, W]
    x = ((rows if tensorflow else cols) * stride).astype(F32)[..., None]            # [H, W, 1]
    y = ((cols if tensorflow else rows) * stride).astype(F32)[..., None]
    x0, y0, x1, y1 = x + base[:, 0], y + base[:, 1], x + base[:, 2], y + base[:, 3]  # [H, W, A]
    if tensorflow:
        x0, x1 = (np.maximum(F32(0), np.minimum(v, img_w)) for v in (x0, x1))
        y0, y1 = (np.maximum(F32(0), np.minimum(v, img_h)) for v in (y0, y1))
    ww, hh = x1 - x0 + offset, y1 - y0 + offset
    grid = (ww, hh, x0 + F32(0.5) * ww, y0 + F32(0.5) * hh)
    for array in grid:
        array.setflags(write=False)
    return grid


def _roundf(x):
    return np.trunc(x + np.copysign(F32(0.5), x)).astype(F32) if x.dtype == F32 else np.round(x)


def validate(class_probs, bbox_deltas, image_shape, a):
    probs, deltas, image = same_type_arrays(
        OP, (("class_probs", class_probs), ("bbox_deltas", bbox_deltas), ("image_shape", image_shape)), TYPES)
    if probs.ndim != 4 or probs.shape[1] % 2:
        raise OpError(OP, "input 'class_probs'", "must have shape [N, 2A, H, W]", value=probs.shape)
    n, two_a, h, w = probs.shape
    if deltas.shape != (n, 2 * two_a, h, w):
        raise OpError(OP, "input 'bbox_deltas'", "must have shape [N, 4A, H, W]", value=deltas.shape,
                      allowed=(n, 2 * two_a, h, w))
    if image.shape not in ((3,), (4,)):
        raise OpError(OP, "input 'image_shape'", "must be 1-D with 3 or 4 elements", value=image.shape,
                      allowed="[3] or [4]")
    a = {**DEFAULTS, **a}
    for name in ("base_size", "pre_nms_topn", "post_nms_topn", "feat_stride"):
        if int(a[name]) < 1:
            raise OpError(OP, f"attribute '{name}'", "must be positive", value=a[name], allowed=">= 1")
    if len(a["ratio"]) * len(a["scale"]) != two_a // 2:
        raise OpError(OP, "attribute 'ratio'/'scale'", "len(ratio) * len(scale) must be the anchor count A",
                      value=(len(a["ratio"]), len(a["scale"])), allowed=f"A = {two_a // 2}")
    if any(not r > 0 for r in a["ratio"]):
        raise OpError(OP, "attribute 'ratio'", "values must be positive", value=list(a["ratio"]), allowed="> 0")
    a["framework"] = check.choice(OP, "framework", a["framework"], FRAMEWORKS)
    return probs, deltas, image, a


def proposal(class_probs, bbox_deltas, image_shape, **attributes):
    probs, deltas, image, a = validate(class_probs, bbox_deltas, image_shape, attributes)
    t = probs.dtype
    n, two_a, height, width = probs.shape
    count = two_a // 2
    tensorflow = a["framework"] == "tensorflow"
    offset = F32(0) if tensorflow else F32(1)
    img_h, img_w, scale_h = (image[k] for k in range(3))
    scale_w = image[3] if image.shape[0] == 4 else scale_h
    min_h = F32(t.type(F32(a["min_size"]) * scale_h))
    min_w = F32(t.type(F32(a["min_size"]) * scale_w))
    img_h, img_w = F32(img_h), F32(img_w)
    # the image clips tensorflow's anchors only; keyed by its bits (-0.0 and NaN are keys of their own)
    clip = tuple(int(v.view(np.uint32)) for v in (img_w, img_h)) if tensorflow else (0, 0)
    ww, hh, ctr_x, ctr_y = _anchor_grid(int(a["base_size"]), tuple(a["ratio"]), tuple(a["scale"]), tensorflow,
                                        int(a["feat_stride"]), height, width, *clip)
    post = int(a["post_nms_topn"])
    rois = np.zeros((n, post, 5), t)
    scores_out = np.zeros((n, post), t)
    for b in range(n):
        d = deltas[b].reshape(count, 4, height, width).transpose(2, 3, 0, 1)       # [H, W, A, 4]
        score = probs[b, count:].transpose(1, 2, 0)                                 # [H, W, A]
        dx = d[..., 0] / t.type(F32(a["box_coordinate_scale"]))
        dy = d[..., 1] / t.type(F32(a["box_coordinate_scale"]))
        dw = d[..., 2] / t.type(F32(a["box_size_scale"]))
        dh = d[..., 3] / t.type(F32(a["box_size_scale"]))
        pred_x = muladd(dx, ww.astype(t), ctr_x.astype(t))
        pred_y = muladd(dy, hh.astype(t), ctr_y.astype(t))
        pred_w = (_exp(dw) * ww).astype(t)
        pred_h = (_exp(dh) * hh).astype(t)
        bx0 = (pred_x - F32(0.5) * pred_w).astype(F32)
        by0 = (pred_y - F32(0.5) * pred_h).astype(F32)
        bx1 = (pred_x + F32(0.5) * pred_w).astype(F32)
        by1 = (pred_y + F32(0.5) * pred_h).astype(F32)
        if a["clip_before_nms"]:
            bx0, bx1 = (np.maximum(F32(0), np.minimum(v, img_w - offset)) for v in (bx0, bx1))
            by0, by1 = (np.maximum(F32(0), np.minimum(v, img_h - offset)) for v in (by0, by1))
        big = (min_w <= bx1 - bx0 + offset) & (min_h <= by1 - by0 + offset)
        boxes = np.stack([bx0, by0, bx1, by1], -1).reshape(-1, 4).astype(t)
        kept_score = (big.astype(t) * score).reshape(-1)
        order = stable_argsort_head(-kept_score.astype(np.float64), int(a["pre_nms_topn"]))
        kept = _nms(boxes[order], float(F32(a["nms_thresh"])), post, t.type(offset))
        chosen = order[kept]
        out = boxes[chosen]
        if a["clip_after_nms"]:
            out = np.stack([np.maximum(t.type(0), np.minimum(out[:, k], t.type(img_w if k % 2 == 0 else img_h)))
                            for k in range(4)], -1)
        if a["normalize"]:
            out = out / np.array([img_w, img_h, img_w, img_h]).astype(t)
        rois[b, :len(chosen), 0] = b
        rois[b, :len(chosen), 1:] = out
        scores_out[b, :len(chosen)] = kept_score[chosen]
        if len(chosen) < post:
            rois[b, len(chosen), 0] = -1
    return rois.reshape(n * post, 5), scores_out.reshape(n * post)


def muladd(a, b, c):
    """a * b + c, the product rounded first (the reference)."""
    return a * b + c


def _exp(x):
    """std::exp of the type (correctly rounded)."""
    with np.errstate(over="ignore"):
        return np.exp(x.astype(np.float64)).astype(x.dtype) if x.dtype != np.float64 else np.exp(x)


def _nms(boxes, threshold, limit, offset):
    """Greedy NMS over boxes sorted best first: indices kept, at most `limit` (an IoU needs an x overlap +
    offset: greedy_nms_of_pairs)."""
    x0, y0, x1, y1 = (np.ascontiguousarray(boxes[:, k]) for k in range(4))
    zero = boxes.dtype.type(0)

    def suppresses(i, j):                   # i, j: position arrays, elementwise (broadcast)
        ax0, ay0, ax1, ay1 = (v.take(i) for v in (x0, y0, x1, y1))
        bx0, by0, bx1, by1 = (v.take(j) for v in (x0, y0, x1, y1))
        overlap = (ax0 <= bx1) & (ay0 <= by1) & (bx0 <= ax1) & (by0 <= ay1)
        iw = np.maximum(zero, np.minimum(ax1, bx1) - np.maximum(ax0, bx0) + offset)
        ih = np.maximum(zero, np.minimum(ay1, by1) - np.maximum(ay0, by0) + offset)
        area = iw * ih
        a_area = (ax1 - ax0 + offset) * (ay1 - ay0 + offset)
        b_area = (bx1 - bx0 + offset) * (by1 - by0 + offset)
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = np.where(overlap, (area / (a_area + b_area - area)).astype(F32), F32(0))
        return threshold < iou

    return greedy_nms_of_pairs(boxes, float(offset), threshold, suppresses, limit)


def _infer(ctx) -> None:
    from onnx import helper
    code = ctx.get_input_type(0).tensor_type.elem_type
    ctx.set_output_type(0, helper.make_tensor_type_proto(code, [None, 5]))
    if ctx.get_num_outputs() > 1:   # Proposal-1 (imported) has rois only
        ctx.set_output_type(1, helper.make_tensor_type_proto(code, [None]))


# Unit -------------------------------------------------------------------------------------------------

def cases(rng: np.random.Generator) -> list:
    """Caffe and TensorFlow frameworks, clipping and normalising variants; distinct random scores (equal
    scores are ordered by std::partial_sort in the reference: unspecified)."""
    out = []
    for index in range(24):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        # at least 3 anchors: OpenVINO's CPU plugin crashes (SIGSEGV) with 1 or 2 anchors
        ratios = [[0.5, 1.0, 2.0], [0.5, 1.0, 2.0, 3.0], [0.5, 2.0]][index % 3]
        scales = [[4.0, 8.0], [2.0], [8.0, 16.0, 32.0]][index % 3]
        count = len(ratios) * len(scales)
        n, h, w = int(r.integers(1, 3)), int(r.integers(1, 5)), int(r.integers(2, 5))
        stride = int(r.choice([4, 8, 16]))
        a = {"base_size": int(r.choice([8, 16])), "pre_nms_topn": int(r.choice([6, 20, 100])),
             "post_nms_topn": int(r.choice([3, 8, 30])), "nms_thresh": float(r.choice([0.3, 0.5, 0.7])),
             "feat_stride": stride, "min_size": int(r.choice([1, 2, 4])), "ratio": ratios, "scale": scales,
             "clip_before_nms": int(index % 4 != 1), "clip_after_nms": int(index % 3 == 2),
             "normalize": int(index % 5 == 4), "framework": ["", "tensorflow"][index % 2]}
        a["pre_nms_topn"] = max(a["pre_nms_topn"], a["post_nms_topn"], 8)   # the CPU plugin crashes below 8
        if index % 6 == 5:
            a["box_size_scale"], a["box_coordinate_scale"] = 2.0, 4.0
        probs = r.random((n, 2 * count, h, w))
        deltas = r.normal(0, 0.3, (n, 4 * count, h, w))
        size_h, size_w = h * stride + 48, w * stride + 40
        if a["framework"] == "tensorflow":      # square: the CPU plugin clips y by the width there
            size_h = size_w
        if a["normalize"]:                      # powers of two: the CPU plugin multiplies by 1 / size
            size_h = size_w = 128
        image = np.array([size_h, size_w, float(r.choice([1.0, 0.5]))] + ([1.5] if index % 4 == 3 else []))
        case = Case(f"proposal_{index}", tuple(x.astype(np.float32) for x in (probs, deltas, image)), a)
        rois, scores = proposal(*case.inputs, **a)
        kept = scores[rois[:, 0] != -1]
        if len(np.unique(kept)) == len(kept) and (kept > 0).all():   # no tie: its order is unspecified
            out.append(case)
    return out


def bad_cases() -> list:
    f32 = lambda v: np.asarray(v, np.float32)  # noqa: E731
    probs, deltas, image = f32(np.zeros((1, 4, 2, 2))), f32(np.zeros((1, 8, 2, 2))), f32([32, 32, 1])
    a = {"base_size": 16, "pre_nms_topn": 10, "post_nms_topn": 5, "nms_thresh": 0.7, "feat_stride": 16,
         "min_size": 4, "ratio": [0.5, 2.0], "scale": [8.0]}
    return [
        (Case("odd_channels", (probs[:, :3], deltas, image), a), "[N, 2A, H, W]"),
        (Case("delta_shape", (probs, deltas[:, :4], image), a), "bbox_deltas"),
        (Case("image_2", (probs, deltas, image[:2]), a), "image_shape"),
        (Case("anchor_count", (probs, deltas, image), {**a, "scale": [8.0, 16.0]}), "anchor count"),
        (Case("framework", (probs, deltas, image), {**a, "framework": "mxnet"}), "framework"),
        (Case("zero_post", (probs, deltas, image), {**a, "post_nms_topn": 0}), "post_nms_topn"),
    ]


def _output_shapes(inputs: dict, attributes: dict) -> list:
    rows = np.shape(inputs["class_probs"])[0] * attributes["post_nms_topn"]
    return [(rows, 5), (rows,)]


def _refuse(inputs: dict, attributes: dict) -> None:
    """OpenVINO's CPU plugin crashes the process below 8 proposals: refused before it runs."""
    if _proposals(inputs, {**DEFAULTS, **attributes}) < 8:
        raise OpError(OP, "inputs", "fewer than 8 proposals crash OpenVINO's CPU plugin: refused before OpenVINO",
                      value=_proposals(inputs, {**DEFAULTS, **attributes}), allowed=">= 8")


def _proposals(inputs, attributes) -> int:
    shape = np.shape(inputs["class_probs"])
    return min(attributes["pre_nms_topn"], shape[1] // 2 * shape[2] * shape[3])


_EXAMPLE = Case("example", (np.random.default_rng(0).random((1, 2, 2, 2)).astype(np.float32),
                            np.zeros((1, 4, 2, 2), np.float32), np.array([64, 64, 1], np.float32)),
                {"base_size": 16, "pre_nms_topn": 10, "post_nms_topn": 4, "nms_thresh": 0.7, "feat_stride": 16,
                 "min_size": 1, "ratio": [1.0], "scale": [1.0]})
def _runs(image=(64, 64, 1), **attributes) -> Case:
    """3 anchors on a 2 x 2 map (12 proposals: the CPU plugin runs), small deltas, 16 output rows (4 past the last)."""
    probs = np.concatenate([np.zeros((1, 3, 2, 2)), (np.arange(12).reshape(1, 3, 2, 2) + 1) / 16], 1)
    deltas = np.random.default_rng(2).uniform(-0.3, 0.3, (1, 12, 2, 2))
    return Case("example", tuple(x.astype(F32) for x in (probs, deltas, np.array(image))),
                {"base_size": 16, "pre_nms_topn": 12, "post_nms_topn": 16, "nms_thresh": 0.99, "feat_stride": 16,
                 "min_size": 1, "ratio": [0.5, 1.0, 2.0], "scale": [1.0], **attributes})


def _log_size_deltas(inputs, attributes) -> np.ndarray:
    """The arguments of exp: d log w, d log h over box_size_scale (in f32, as the CPU plugin computes)."""
    d = np.asarray(inputs["bbox_deltas"], F32)
    return d.reshape(d.shape[0], d.shape[1] // 4, 4, *d.shape[2:])[:, :, 2:] / F32(attributes["box_size_scale"])


def _expf_example() -> tuple:
    """3 anchors on a 2 x 2 map (12 proposals: the CPU plugin runs), every d log w EXPF_LOW."""
    probs = np.concatenate([np.zeros((1, 3, 2, 2)), (np.arange(12).reshape(1, 3, 2, 2) + 1) / 16], 1)
    deltas = np.zeros((1, 3, 4, 2, 2))
    deltas[:, :, 0] = np.array([0.03771907, -0.03963146, 0.1921268, 0.03147003, -0.16070081, 0.10847852, 0.3912,
                                0.28412428, -0.21112058, -0.37962645, -0.18698233, 0.01239779]).reshape(3, 2, 2)
    deltas[:, :, 2] = EXPF_LOW
    return tuple(x.astype(F32) for x in (probs, deltas.reshape(1, 12, 2, 2), np.array([64, 64, 1])))


DIVERGENCES = (
    expf_divergence("proposal", _expf_example(),
                    {"base_size": 16, "pre_nms_topn": 12, "post_nms_topn": 12, "nms_thresh": 0.99, "feat_stride": 16,
                     "min_size": 1, "ratio": [0.5, 1.0, 2.0], "scale": [1.0]}, _log_size_deltas),
    # kind "rejects": the table's "crashes" is for inputs the contract refuses; these are valid
    Divergence("ov-proposal-few-proposals-crash", "openvino-cpu", "rejects", "fewer than 8 proposals crash",
               "The CPU plugin crashes the process (SIGSEGV) when fewer than 8 proposals enter its NMS "
               "(measured with 3 to 6); the reference and the dialect run.",
               lambda inputs, attributes: _proposals(inputs, attributes) < 8, _EXAMPLE),
    Divergence("ov-proposal-fused-centre", "openvino-cpu", "value", "centre update fused",
               "The CPU plugin computes dx * width + centre with one rounding (FMA); the reference rounds the "
               "product first: last-bit differences in 13 of 23 measured cases.",
               lambda inputs, attributes: True, _runs()),
    Divergence("ov-proposal-tensorflow-clip", "openvino-cpu", "value", "tensorflow: x/y clip swapped",
               "framework tensorflow: the CPU plugin clips y by the image width and x by the height; the "
               "reference clips x by the width.",
               lambda inputs, attributes: attributes["framework"] == "tensorflow",
               _runs((20, 64, 1), framework="tensorflow")),
    Divergence("ov-proposal-normalize", "openvino-cpu", "value", "normalize multiplies by 1 / size",
               "normalize 1: the CPU plugin multiplies by 1 / size (last-bit differences); the reference divides.",
               lambda inputs, attributes: bool(attributes["normalize"]),
               _runs(normalize=1)),
    Divergence("ov-proposal-probs-tail", "openvino-cpu", "nondeterministic", "probs after the last roi uninitialised",
               "The CPU plugin leaves the probs after the -1 terminated rows uninitialised; the reference writes "
               "zeros.", lambda inputs, attributes: True, _runs()),
)


def benchmark_cases(mode: str) -> list:
    """A Faster R-CNN RPN head over an hw x hw feature map, 3 anchors; the rois (the probs' tail after the
    last roi is uninitialised on the CPU plugin)."""
    hw = {"full": 38, "quick": 38, "tiny": 4}[mode]

    def inputs(rng):
        return {"class_probs": rng.random((1, 6, hw, hw)).astype(np.float32),
                "bbox_deltas": (rng.standard_normal((1, 12, hw, hw)) * 0.1).astype(np.float32),
                "image_shape": np.array([hw * 16, hw * 16, 1], np.float32)}
    return [BenchmarkCase(f"proposal-{hw}", f"{hw}x{hw}, 3 anchors, pre 600 post 100", inputs,
                          {"base_size": 16, "pre_nms_topn": 600, "post_nms_topn": 100, "nms_thresh": 0.7,
                           "feat_stride": 16, "min_size": 4, "ratio": [0.5, 1.0, 2.0], "scale": [8.0]},
                          constants=("image_shape",), outputs=(0,))]


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 4, (Port("class_probs", "T"), Port("bbox_deltas", "T"), Port("image_shape", "T")),
                  (Port("rois", "T"), Port("probs", "T")),
                  (Attribute("base_size", "int", REQUIRED), Attribute("pre_nms_topn", "int", REQUIRED),
                   Attribute("post_nms_topn", "int", REQUIRED), Attribute("nms_thresh", "float", REQUIRED),
                   Attribute("feat_stride", "int", REQUIRED), Attribute("min_size", "int", REQUIRED),
                   Attribute("ratio", "floats", REQUIRED), Attribute("scale", "floats", REQUIRED),
                   flag("clip_before_nms", 1), flag("clip_after_nms", 0), flag("normalize", 0),
                   Attribute("box_size_scale", "float", 1.0), Attribute("box_coordinate_scale", "float", 1.0),
                   Attribute("framework", "string", "", FRAMEWORKS)),
                  {"T": TYPES}, proposal, doc="Faster R-CNN region proposals: anchors, deltas, NMS.",
                  infer=_infer),),
    openvino=OpenVINO(
        "Proposal", versions=(1, 4), factory=native("opset4", "Proposal"), refuse=_refuse,
        attributes=maps("int", "base_size", "pre_nms_topn", "post_nms_topn", "feat_stride", "min_size")
        + maps("float", "nms_thresh", "box_size_scale", "box_coordinate_scale") + maps("floats", "ratio", "scale")
        + bool_map("clip_before_nms", "clip_after_nms", "normalize") + maps("lower", "framework"),
        output_shapes=_output_shapes),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("anchor decoding is standard arithmetic but the NMS (+1 pixel areas, top-n per image, "
                    "-1 terminated rows) has no exact standard equivalent; not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torchvision's RPN is not exported through the dialect"),
    divergences=DIVERGENCES,
    open_order="proposals of equal scores may come in any order",
    benchmark=Benchmark(benchmark_cases),
)
