"""NonMaxSuppression-9 and -5 (OpenVINO) for the configurations standard ONNX NonMaxSuppression does not match: soft
NMS (soft_nms_sigma other than 0) and thresholds that are not constants (the IR rule
converters/openvino_ir/rules/selection.py keeps ONNX NonMaxSuppression for a constant sigma 0 and constant
iou_threshold, and imports the others as this op).

boxes [N, M, 4] (corner: any two diagonal corners (y1, x1, y2, x2); center: (x, y, w, h)), scores [N, C, M],
max_output_boxes_per_class, iou_threshold, score_threshold, soft_nms_sigma (one-element tensors), all f32.
Per image and class (OpenVINO's CPU plugin and NMS-9's reference): candidates with score > score_threshold,
at most min(max_output_boxes_per_class, M) kept.
- sigma 0: by score descending (ties: lower box index), a candidate is dropped when its IoU with a kept box
  is >= iou_threshold.
- sigma < 0: as sigma 0 (the reference's weight is exp(0) = 1 then, zero above iou_threshold; the CPU plugin
  selects so too).
- sigma > 0: a priority queue by score (ties: lower box index); the top
  candidate's score is multiplied by exp((-0.5 / sigma) * iou * iou) (f32) for each box kept since it was
  last looked at, newest first, and dropped once <= score_threshold; unchanged it is kept, changed it goes
  back into the queue. iou_threshold takes no part (the decay alone suppresses), unless
  soft_iou_suppression = 1 (NMS-5's reference and specification, set by the import for NMS-5): then a weight
  is 0 where iou > iou_threshold and a candidate whose IoU with a kept box is >= iou_threshold is dropped.
IoU in f32: areas <= 0 give 0. Results in image, class, selection order, or with sort_result_descending by
score descending (ties: image, class, box). Outputs selected_indices [K, 3] (image, class, box) of
output_type, selected_scores [K, 3] (image, class, score; f32), valid_outputs [1] = K.
"""
from __future__ import annotations

import heapq
import math

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import Absent, Attribute, AttributeMap, Case, DialectUnit, Divergence, OpenVINO, OpSpec, Port

from ._common import nms_factory, nms_inputs, selected_infer, selected_pyop_casts

OP = "NonMaxSuppression"
F = np.float32
ENCODINGS = ("corner", "center")


def _corners(boxes: np.ndarray, encoding: str) -> np.ndarray:
    """[..., 4] boxes -> (ymin, xmin, ymax, xmax) in f32, as the CPU plugin computes them."""
    if encoding == "center":
        x, y, w, h = (boxes[..., k] for k in range(4))
        half_h, half_w = h / F(2), w / F(2)
        return np.stack([y - half_h, x - half_w, y + half_h, x + half_w], -1)
    return np.stack([np.minimum(boxes[..., 0], boxes[..., 2]), np.minimum(boxes[..., 1], boxes[..., 3]),
                     np.maximum(boxes[..., 0], boxes[..., 2]), np.maximum(boxes[..., 1], boxes[..., 3])], -1)


def _iou(a: np.ndarray, b: np.ndarray) -> F:
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    if area_a <= 0 or area_b <= 0:
        return F(0)
    inter = (max(min(a[2], b[2]) - max(a[0], b[0]), F(0)) * max(min(a[3], b[3]) - max(a[1], b[1]), F(0)))
    return F(inter / (area_a + area_b - inter))


def _ious(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """_iou(box, other) for each of `others` [K, 4], elementwise in f32 (the same roundings)."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    inter = (np.maximum(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), F(0))
             * np.maximum(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), F(0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area + areas - inter)
    return np.where((area <= 0) | (areas <= 0), F(0), iou).astype(F)


def _hard(boxes, scores, limit, iou_t, score_t) -> list:
    candidates = np.flatnonzero(scores > score_t)
    order = candidates[np.lexsort((candidates, -scores[candidates].astype(np.float64)))]
    kept = []
    for i in order:
        if len(kept) >= limit:
            break
        if not kept or not (_ious(boxes[i], boxes[kept]) >= iou_t).any():
            kept.append(int(i))
    return [(i, scores[i]) for i in kept]


def _soft(boxes, scores, limit, score_t, scale, iou_t=None) -> list:
    # heap entries: (-score, box index, suppress_begin_index); the top is the highest score, lowest index
    queue = [(-float(scores[i]), int(i), 0) for i in np.flatnonzero(scores > score_t)]
    heapq.heapify(queue)
    kept = []                                                   # (box index, score)
    while queue and len(kept) < limit:
        neg, i, begin = heapq.heappop(queue)
        score = original = F(-neg)
        suppressed = False
        ious = _ious(boxes[i], boxes[[k for k, _ in kept[begin:]]]) if len(kept) > begin else ()
        for iou in ious[::-1]:                                           # newest kept box first
            weight = F(math.exp(float(scale * iou * iou)))              # std::exp on f32, correctly rounded
            score = F(score * (weight if iou_t is None or iou <= iou_t else F(0)))
            if iou_t is not None and iou >= iou_t:                       # NMS-5: hard suppression
                suppressed = True
                break
            if score <= score_t:
                suppressed = True
                break
        if suppressed:
            continue
        if score == original:
            kept.append((i, score))
        else:
            heapq.heappush(queue, (-float(score), i, len(kept)))
    return kept


def non_max_suppression(boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold, soft_nms_sigma,
                        box_encoding="corner", sort_result_descending=1, output_type="i64", soft_iou_suppression=0):
    boxes, scores, scalars = nms_inputs(OP, boxes, scores, 4, (
        ("max_output_boxes_per_class", max_output_boxes_per_class, "iu"), ("iou_threshold", iou_threshold, "f"),
        ("score_threshold", score_threshold, "f"), ("soft_nms_sigma", soft_nms_sigma, "f")))
    encoding = check.choice(OP, "box_encoding", box_encoding, ENCODINGS)
    output_type = check.choice(OP, "output_type", output_type, ("i64", "i32"))
    descending = check.flag(OP, "sort_result_descending", sort_result_descending)
    by_iou = check.flag(OP, "soft_iou_suppression", soft_iou_suppression)
    limit = min(max(int(scalars["max_output_boxes_per_class"]), 0), boxes.shape[1])
    iou_t, score_t, sigma = (F(scalars[k]) for k in ("iou_threshold", "score_threshold", "soft_nms_sigma"))
    if not np.isfinite(boxes).all():
        raise OpError(OP, "input 'boxes'", "must be finite", value="inf/nan")
    if np.isnan(scores).any() or np.isnan([iou_t, score_t, sigma]).any():
        raise OpError(OP, "input 'scores'/thresholds", "must not be NaN (the selection order is undefined)",
                      value="nan")
    scale = F(-0.5) / sigma if sigma > 0 else F(0)
    corners = _corners(boxes, encoding)
    kept_all = []
    for n in range(boxes.shape[0]):
        for c in range(scores.shape[1]):
            if sigma <= 0:
                kept = _hard(corners[n], scores[n, c], limit, iou_t, score_t)
            else:
                kept = _soft(corners[n], scores[n, c], limit, score_t, scale, iou_t if by_iou else None)
            kept_all += [(n, c, i, s) for i, s in kept]
    if descending and kept_all:
        n_, c_, i_, s_ = (np.array(v) for v in zip(*kept_all))
        kept_all = [kept_all[k] for k in np.lexsort((i_, c_, n_, -s_.astype(np.float64)))]
    itype = np.int64 if output_type == "i64" else np.int32
    indices = np.array([[n, c, i] for n, c, i, _ in kept_all], itype).reshape(-1, 3)
    selected = np.array([[n, c, s] for n, c, _, s in kept_all], np.float32).reshape(-1, 3)
    return indices, selected, np.array([len(kept_all)], itype)


def _kernel_v9(boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold, soft_nms_sigma, *,
               box_encoding, sort_result_descending, output_type, soft_iou_suppression):
    return non_max_suppression(boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold,
                               soft_nms_sigma, box_encoding, sort_result_descending, output_type, soft_iou_suppression)


def cases(rng: np.random.Generator) -> list:
    """Overlapping boxes (corner in any diagonal order, center), distinct scores, soft sigma (and some 0),
    every attribute; thresholds where decayed scores drop out."""
    out = []
    for index in range(24):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        batch, classes, count = int(r.integers(1, 3)), int(r.integers(1, 3)), int(r.integers(1, 9))
        corner = r.uniform(0, 6, (batch, count, 2))
        size = r.uniform(0.5, 4, (batch, count, 2))
        encoding = ENCODINGS[index % 2]
        if encoding == "corner":
            boxes = np.concatenate([corner, corner + size], -1)
            if index % 4 == 2:
                boxes = boxes[..., [2, 3, 0, 1]]                       # the other diagonal order
        else:
            boxes = np.concatenate([corner, size], -1)
        scores = (r.permutation(batch * classes * count).reshape(batch, classes, count) + 1) / (batch * classes * count)
        sigma = [0.5, 0.1, 2.0, 0.0, 0.3, -1.0][index % 6]
        inputs = (boxes.astype(np.float32), scores.astype(np.float32),
                  np.array(int(r.choice([1, 3, 10])), (np.int64, np.int32)[index % 2]),
                  np.array(float(r.choice([0.3, 0.5, 1.0])), np.float32),
                  np.array(float(r.choice([0.0, 0.2, 0.45])), np.float32), np.array(sigma, np.float32))
        out.append(Case(f"nms_soft_{encoding}_{index}", inputs, {"box_encoding": encoding,
                                                               "sort_result_descending": int(index % 3 != 1),
                                                               "output_type": ("i64", "i32")[index % 4 // 2],
                                                               "soft_iou_suppression": int(index % 5 == 3)}))
    return out


def bad_cases() -> list:
    f32 = lambda *shape: np.zeros(shape, np.float32)  # noqa: E731
    k, t = np.array(2, np.int64), np.array(0.5, np.float32)
    return [
        (Case("boxes_shape", (f32(1, 3, 5), f32(1, 2, 3), k, t, t, t), {}), "[N, M, 4]"),
        (Case("scores_shape", (f32(1, 3, 4), f32(1, 2, 4), k, t, t, t), {}), "[N, C, M]"),
        (Case("float_count", (f32(1, 3, 4), f32(1, 2, 3), t, t, t, t), {}), "max_output_boxes_per_class"),
        (Case("two_sigmas", (f32(1, 3, 4), f32(1, 2, 3), k, t, t, np.array([0.5, 0.5], np.float32)), {}),
         "soft_nms_sigma"),
        (Case("nan_score", (f32(1, 3, 4), f32(1, 2, 3) * np.nan, k, t, t, t), {}), "NaN"),
    ]


def _overlaps(inputs: dict, attributes: dict, at_least: float) -> bool:
    """Two candidates (score > score_threshold) of one image and class have an IoU > 0 / >= at_least."""
    score_t = F(np.asarray(inputs["score_threshold"]).reshape(-1)[0])
    corners = _corners(np.asarray(inputs["boxes"], F), attributes["box_encoding"])
    scores = np.asarray(inputs["scores"], F)
    for n in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            alive = np.flatnonzero(scores[n, c] > score_t)
            for k, i in enumerate(alive):
                for j in alive[k + 1:]:
                    iou = _iou(corners[n, i], corners[n, j])
                    if (iou >= at_least) if at_least > 0 else (iou > 0):
                        return True
    return False


def _soft_iou_suppressed(inputs: dict, attributes: dict) -> bool:
    """NMS-5 soft NMS where some candidate's IoU with another reaches iou_threshold."""
    sigma = float(np.asarray(inputs["soft_nms_sigma"]).reshape(-1)[0])
    if not (sigma > 0 and attributes["soft_iou_suppression"]):
        return False
    return _overlaps(inputs, attributes, float(np.asarray(inputs["iou_threshold"], F).reshape(-1)[0]) or -1.0)


def _decays(inputs: dict, attributes: dict) -> bool:
    """Soft NMS where some decay weight is not 1: two candidates of one image and class overlap."""
    sigma = float(np.asarray(inputs["soft_nms_sigma"]).reshape(-1)[0])
    return sigma > 0 and _overlaps(inputs, attributes, 0.0)


def _example(**attributes) -> Case:
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 0.3, 1, 1.3], [0, 0.2, 1, 1.2], [0, 0.5, 1, 1.5]]], F)
    scores = np.array([[[0.9, 0.8, 0.7, 0.6, 0.5]]], F)
    return Case("example", (boxes, scores, np.array(5, np.int64), np.array(0.5, F), np.array(0.0, F),
                            np.array(0.3, F)), {"box_encoding": "corner", "sort_result_descending": 1,
                                                "output_type": "i64", **attributes})


DIVERGENCES = (
    Divergence("ov-nms-soft-decay-jit", "openvino-cpu", "value", "soft NMS decayed scores differ in the last bits",
               "Soft NMS (soft_nms_sigma > 0) with overlapping candidates: the CPU plugin's JIT kernel computes "
               "exp(iou * iou * scale) with an approximate exp and multiplies the weights of up to 8-16 kept boxes "
               "together before the score; the reference multiplies the score by each correctly rounded "
               "exp(scale * iou * iou) in turn, newest kept box first. Decayed selected_scores differ in the last "
               "bits, and so can the order or selection of candidates whose decayed scores (almost) tie or sit at "
               "score_threshold.",
               _decays, _example()),
    Divergence("ov-nms5-soft-no-iou-suppression", "openvino-cpu", "value", "NMS-5 soft NMS ignores iou_threshold",
               "NMS-5 with soft_nms_sigma > 0 (soft_iou_suppression 1): its specification and reference zero the "
               "weight above iou_threshold and drop a candidate at IoU >= iou_threshold; the CPU plugin runs NMS-5 "
               "as NMS-9 (decay only), so it keeps such candidates with decayed scores.",
               _soft_iou_suppressed, _example(soft_iou_suppression=1)),
)


def _factory(ov, inputs, attributes):
    """NMS-5 for soft_iou_suppression 1, else NMS-9."""
    attributes = dict(attributes)
    opset = "opset5" if attributes.pop("soft_iou_suppression", False) else "opset9"
    return nms_factory(opset, "NonMaxSuppression")(ov, inputs, attributes)


_INDEX = (np.dtype(np.int32), np.dtype(np.int64))
UNIT = DialectUnit(
    op_type=OP, family="detection",
    open_order="boxes of equal scores may come in any order (standard and soft NonMaxSuppression alike)",
    specs=(OpSpec(OP, 9, (Port("boxes", "T"), Port("scores", "T"), Port("max_output_boxes_per_class", "I"),
                          Port("iou_threshold", "T"), Port("score_threshold", "T"), Port("soft_nms_sigma", "T")),
                  (Port("selected_indices", "O"), Port("selected_scores", "T"), Port("valid_outputs", "O")),
                  (Attribute("box_encoding", "string", "corner", ENCODINGS),
                   Attribute("sort_result_descending", "int", 1, (0, 1)),
                   Attribute("output_type", "string", "i64", ("i64", "i32")),
                   Attribute("soft_iou_suppression", "int", 0, (0, 1))),
                  {"T": (np.dtype(np.float32),), "I": _INDEX, "O": (np.dtype(np.int64), np.dtype(np.int32))},
                  _kernel_v9, doc="NMS per image and class, hard or soft (gaussian score decay).",
                  infer=selected_infer),),
    openvino=OpenVINO(
        "NonMaxSuppression", versions=(5, 9), factory=_factory, import_rule=False,
        attributes=(AttributeMap("box_encoding", "lower"), AttributeMap("sort_result_descending", "bool"),
                    AttributeMap("output_type", "lower"), AttributeMap("soft_iou_suppression", "bool")),
        notes="soft_iou_suppression is no OpenVINO attribute: 1 stands for NMS-5 (the import sets it, the export "
              "writes NMS-5)",
        output_shapes=lambda i, a: [None, None, (1,)]),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("ONNX NonMaxSuppression is the lowering where exact (the IR rule picks it); it has no soft NMS"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("no torch adapter"),
    divergences=DIVERGENCES,
    pyop_outputs=lambda inputs: (np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.int64)),
    pyop_casts=selected_pyop_casts,
    benchmark=Absent("not benchmarked"),
)
