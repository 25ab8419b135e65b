"""ExperimentalDetectronDetectionOutput-6 (OpenVINO): Detectron's per-class box refinement, NMS and top-k.

rois [R, 4] (x0, y0, x1, y1), deltas [R, 4 * num_classes] (dx, dy, d log w, d log h per class, divided by
deltas_weights, log sizes capped at max_delta_log_wh), scores [R, num_classes], im_info [1, 3]. For every class
but 0 (the background) each box of positive size is refined (corners clamped at 0 only, as the reference: the
image size is not used), the boxes scoring above score_threshold go best first (ties: lower box first) through
greedy NMS (IoU with the +1 pixel, suppressed above nms_threshold), at most post_nms_count per class. The kept
detections are listed class by class; when there are more than max_detections_per_image the best ones are kept
in order of decreasing score (ties: lower box first). Outputs: boxes [max_detections_per_image, 4], classes
(i32) and scores [max_detections_per_image], zeros after the detections. Computed in f32 (the reference's
float), outputs in the input type.

class_agnostic_box_regression is carried but changes nothing (neither the reference nor the CPU plugin reads
it). The reference takes the box count R from max_detections_per_image (reading past rois when it is larger);
the kernel, like the CPU plugin, takes it from rois (measured equal for max_detections_per_image below, at and
above R).
"""
from __future__ import annotations

import numpy as np

from custom_ops.errors import OpError
from custom_ops.unit import (REQUIRED, Absent, Attribute, AttributeMap, Case, DialectUnit, Divergence, OpenVINO, OpSpec,
                             Port)

from .._libm import expf
from ._common import attribute_value, flag, native, same_type_arrays
from .experimental_detectron_generate_proposals_single_image import EXPF_LOW, expf_divergence

OP = "ExperimentalDetectronDetectionOutput"
TYPES = (np.dtype(np.float16), np.dtype(np.float32))
F32 = np.float32


def validate(rois, deltas, scores, im_info, a):
    boxes, dlt, scr, info = same_type_arrays(
        OP, (("rois", rois), ("deltas", deltas), ("scores", scores), ("im_info", im_info)), TYPES)
    classes = int(a["num_classes"])
    if classes < 1:
        raise OpError(OP, "attribute 'num_classes'", "must be positive", value=classes, allowed=">= 1")
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise OpError(OP, "input 'rois'", "must have shape [R, 4]", value=boxes.shape)
    count = boxes.shape[0]
    if dlt.shape != (count, 4 * classes):
        raise OpError(OP, "input 'deltas'", "must have shape [R, 4 * num_classes]", value=dlt.shape,
                      allowed=(count, 4 * classes))
    if scr.shape != (count, classes):
        raise OpError(OP, "input 'scores'", "must have shape [R, num_classes]", value=scr.shape,
                      allowed=(count, classes))
    if info.shape != (1, 3):
        raise OpError(OP, "input 'im_info'", "must have shape [1, 3]", value=info.shape)
    if len(a["deltas_weights"]) != 4:
        raise OpError(OP, "attribute 'deltas_weights'", "must have 4 values", value=list(a["deltas_weights"]))
    for name in ("max_detections_per_image", "post_nms_count"):
        if int(a[name]) < 1:
            raise OpError(OP, f"attribute '{name}'", "must be positive", value=a[name], allowed=">= 1")
    return boxes, dlt, scr


def refine(boxes, deltas, weights, max_delta_log_wh):
    """Refined boxes [K, R, 4] and their +1 pixel areas [K, R] per class (rows of class 0 and of boxes of no
    positive size stay 0)."""
    count, classes = boxes.shape[0], deltas.shape[1] // 4
    x0, y0, x1, y1 = (boxes[:, k, None] for k in range(4))                       # [R, 1]
    one, half = F32(1), F32(0.5)
    ww, hh = x1 - x0 + one, y1 - y0 + one
    ctr_x, ctr_y = x0 + half * ww, y0 + half * hh
    d = deltas.reshape(count, classes, 4) / np.asarray(weights, F32)
    pred_x = muladd(d[..., 0], ww, ctr_x)
    pred_y = muladd(d[..., 1], hh, ctr_y)
    cap = F32(max_delta_log_wh)
    pred_w = expf(np.minimum(d[..., 2], cap)) * ww
    pred_h = expf(np.minimum(d[..., 3], cap)) * hh
    nx0, ny0 = np.maximum(F32(0), pred_x - half * pred_w), np.maximum(F32(0), pred_y - half * pred_h)
    nx1, ny1 = np.maximum(F32(0), pred_x + half * pred_w - one), np.maximum(F32(0), pred_y + half * pred_h - one)
    refined = np.stack([nx0, ny0, nx1, ny1], -1)                                 # [R, K, 4]
    areas = (nx1 - nx0 + one) * (ny1 - ny0 + one)
    valid = ((x1 - x0 > 0) & (y1 - y0 > 0)) & (np.arange(classes) > 0)          # [R, K]
    refined = np.where(valid[..., None], refined, F32(0))
    return refined.transpose(1, 0, 2), np.where(valid, areas, F32(0)).T, valid.T


def muladd(a, b, c):
    """a * b + c, the product rounded first (the reference)."""
    return a * b + c


def _log_size_deltas(inputs, attributes) -> np.ndarray:
    """The arguments of exp: d log w, d log h of every class divided by their weights, capped."""
    deltas = np.asarray(inputs["deltas"], F32)
    parts = deltas.reshape(deltas.shape[0], deltas.shape[1] // 4, 4)[..., 2:] / np.asarray(attributes["deltas_weights"], F32)[2:]
    return np.minimum(parts, F32(attributes["max_delta_log_wh"]))


def overlaps(boxes, areas, i: int, kept: np.ndarray) -> np.ndarray:
    """The reference's Jaccard overlap (+1 pixel, precomputed areas) of box i with the boxes `kept`."""
    a, b = boxes[i], boxes[kept]
    covered = ~((b[:, 0] > a[2]) | (b[:, 2] < a[0]) | (b[:, 1] > a[3]) | (b[:, 3] < a[1]))
    width = np.minimum(a[2], b[:, 2]) - np.maximum(a[0], b[:, 0]) + F32(1)
    height = np.minimum(a[3], b[:, 3]) - np.maximum(a[1], b[:, 1]) + F32(1)
    inter = width * height
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (areas[i] + areas[kept] - inter)
    return np.where(covered & (width > 0) & (height > 0), iou, F32(0))


def class_nms(scores, boxes, areas, score_threshold, nms_threshold, limit: int) -> np.ndarray:
    """Greedy NMS of one class: box indices kept, best first, at most `limit`."""
    candidates = np.flatnonzero(scores > F32(score_threshold))
    order = candidates[np.argsort(-scores[candidates].astype(np.float64), kind="stable")]
    kept = []
    for i in order:
        if not kept or not (overlaps(boxes, areas, i, np.asarray(kept)) > F32(nms_threshold)).any():
            kept.append(i)
    return np.asarray(kept[:limit], np.int64)


def detection_output(rois, deltas, scores, im_info, *, score_threshold, nms_threshold, max_delta_log_wh,
                     num_classes, post_nms_count, max_detections_per_image, class_agnostic_box_regression,
                     deltas_weights):
    boxes, dlt, scr = validate(rois, deltas, scores, im_info, locals())
    refined, areas, valid = refine(boxes.astype(F32), dlt.astype(F32), deltas_weights, max_delta_log_wh)
    class_scores = np.where(valid, scr.astype(F32).T, F32(0))                       # [K, R]
    found = [(c, class_nms(class_scores[c], refined[c], areas[c], score_threshold, nms_threshold,
                           int(post_nms_count))) for c in range(1, int(num_classes))]
    classes = np.concatenate([np.full(k.size, c, np.int64) for c, k in found] + [np.zeros(0, np.int64)])
    index = np.concatenate([k for _, k in found] + [np.zeros(0, np.int64)])
    score = class_scores[classes, index]
    limit = int(max_detections_per_image)
    if score.size > limit:   # the best, ties by box index (then class: the reference leaves it open)
        chosen = np.lexsort((classes, index, -score.astype(np.float64)))[:limit]
        classes, index, score = classes[chosen], index[chosen], score[chosen]
    dtype = boxes.dtype
    out_boxes = np.zeros((limit, 4), dtype)
    out_classes = np.zeros(limit, np.int32)
    out_scores = np.zeros(limit, dtype)
    out_boxes[:score.size] = refined[classes, index]
    out_classes[:score.size] = classes
    out_scores[:score.size] = score
    return out_boxes, out_classes, out_scores


def _infer(ctx) -> None:
    from onnx import TensorProto, helper
    code = ctx.get_input_type(0).tensor_type.elem_type
    rows = attribute_value(ctx, "max_detections_per_image")
    ctx.set_output_type(0, helper.make_tensor_type_proto(code, [rows, 4]))
    ctx.set_output_type(1, helper.make_tensor_type_proto(TensorProto.INT32, [rows]))
    ctx.set_output_type(2, helper.make_tensor_type_proto(code, [rows]))


# Cases ------------------------------------------------------------------------------------------------

def make_inputs(r: np.random.Generator, count: int, classes: int, dtype=np.float32):
    corner = r.uniform(0, 48, (count, 2))
    boxes = np.concatenate([corner, corner + r.uniform(1, 32, (count, 2))], 1)
    deltas = r.normal(0, 0.5, (count, 4 * classes))
    scores = (r.permutation(count * classes).reshape(count, classes) + 1) / (count * classes + 1)
    return tuple(x.astype(dtype) for x in (boxes, deltas, scores, np.array([[96, 96, 1.0]])))


def cases(rng: np.random.Generator) -> list:
    """2-4 classes, 1-8 boxes (some of no size, some past a small image), thresholds, per-class and per-image
    limits (below, at and above the box count) varied; distinct
    scores (the reference orders equal scores of one box in two classes arbitrarily)."""
    out = []
    for index in range(20):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        count, classes = int(r.integers(1, 9)), int(r.integers(2, 5))
        dtype = np.float16 if index % 7 == 6 else np.float32
        rois, deltas, scores, info = make_inputs(r, count, classes, dtype)
        if index % 4 == 3:
            rois[0, 2] = rois[0, 0]                      # no width: not refined, never detected
        a = {"score_threshold": float(r.choice([0.0, 0.05, 0.3])), "nms_threshold": float(r.choice([0.3, 0.5, 0.7])),
             "max_delta_log_wh": float(r.choice([0.5, 4.135166645050049])), "num_classes": classes,
             "post_nms_count": int(r.integers(1, count + 2)),
             "max_detections_per_image": int(r.integers(1, count + 3)),
             "class_agnostic_box_regression": int(index % 3 == 2),
             "deltas_weights": [[10.0, 10.0, 5.0, 5.0], [1.0, 2.0, 1.0, 0.5]][index % 2]}
        if index % 5 == 1:
            info[0, :2] = 24                            # boxes past the image: the corners are not clipped
        out.append(Case(f"detections_{np.dtype(dtype).name}_{index}", (rois, deltas, scores, info), a))
    return out


def _example() -> Case:
    return Case("example", make_inputs(np.random.default_rng(0), 3, 2),
                {"score_threshold": 0.05, "nms_threshold": 0.5, "max_delta_log_wh": 4.0, "num_classes": 2,
                 "post_nms_count": 3, "max_detections_per_image": 3, "deltas_weights": [10.0, 10.0, 5.0, 5.0]})


def bad_cases() -> list:
    (rois, deltas, scores, info), a = _example().inputs, _example().attributes
    return [
        (Case("rois_shape", (rois[:, :3], deltas, scores, info), a), "[R, 4]"),
        (Case("deltas_shape", (rois, deltas[:, :4], scores, info), a), "[R, 4 * num_classes]"),
        (Case("scores_shape", (rois, deltas, scores[:2], info), a), "[R, num_classes]"),
        (Case("im_info_shape", (rois, deltas, scores, info[0]), a), "im_info"),
        (Case("weights", (rois, deltas, scores, info), {**a, "deltas_weights": [1.0, 1.0]}), "deltas_weights"),
        (Case("scores_type", (rois, deltas, scores.astype(np.float16), info), a), "element type"),
    ]


_EXAMPLE = _example()
DIVERGENCES = (
    expf_divergence("eddetectionoutput",
                    (np.array([[3, 0, 13, 8]], F32), np.array([[0, 0, 0, 0, 0.03864474, 0, EXPF_LOW, 0]], F32),
                     np.array([[0.1, 0.9]], F32), np.array([[24, 32, 1]], F32)),
                    {**_EXAMPLE.attributes, "deltas_weights": [1.0, 1.0, 1.0, 1.0], "max_detections_per_image": 1},
                    _log_size_deltas),
    Divergence("ov-eddetectionoutput-no-rois-uninitialised", "openvino-cpu", "nondeterministic",
               "no rois: outputs uninitialised",
               "With R = 0 boxes the CPU plugin leaves the outputs uninitialised (whatever the buffer held); the "
               "contract writes max_detections_per_image zero rows.",
               lambda inputs, attributes: np.shape(inputs["rois"])[0] == 0,
               Case("example", tuple(x[:0] for x in _EXAMPLE.inputs[:3]) + _EXAMPLE.inputs[3:], _EXAMPLE.attributes)),
)


UNIT = DialectUnit(
    op_type=OP, family="detection",
    open_order="detections of equal scores may come in any order",
    specs=(OpSpec(OP, 6, (Port("rois", "T"), Port("deltas", "T"), Port("scores", "T"), Port("im_info", "T")),
                  (Port("boxes", "T"), Port("classes", "I"), Port("boxes_scores", "T")),
                  (Attribute("score_threshold", "float", REQUIRED), Attribute("nms_threshold", "float", REQUIRED),
                   Attribute("max_delta_log_wh", "float", REQUIRED), Attribute("num_classes", "int", REQUIRED),
                   Attribute("post_nms_count", "int", REQUIRED), Attribute("max_detections_per_image", "int", REQUIRED),
                   flag("class_agnostic_box_regression", 0), Attribute("deltas_weights", "floats", REQUIRED)),
                  {"T": TYPES, "I": (np.dtype(np.int32),)}, detection_output,
                  doc="Detectron detection output: per-class refinement and NMS, top detections.", infer=_infer),),
    openvino=OpenVINO(
        OP, versions=(6,), factory=native("opset6", OP),
        attributes=(AttributeMap("score_threshold", "float"), AttributeMap("nms_threshold", "float"),
                    AttributeMap("max_delta_log_wh", "float"), AttributeMap("num_classes", "int"),
                    AttributeMap("post_nms_count", "int"), AttributeMap("max_detections_per_image", "int"),
                    AttributeMap("class_agnostic_box_regression", "bool"), AttributeMap("deltas_weights", "floats")),
        output_shapes=lambda i, a: [(int(a["max_detections_per_image"]), 4), (int(a["max_detections_per_image"]),),
                                    (int(a["max_detections_per_image"]),)]),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("per-class greedy NMS with the +1 pixel IoU and class-major listing has no standard ONNX "
                    "equivalent; not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torch has no such op"),
    divergences=DIVERGENCES,
    benchmark=Absent("not benchmarked"),
)
