"""MulticlassNms-9 (and -8) (OpenVINO): per-class NMS of boxes shared among classes, then per-image and
optional cross-batch sorting.

boxes [N, M, 4] (x1, y1, x2, y2 as given), scores [N, C, M] (float); or (version 9) roisnum [N] with
boxes per class [C, sum(M), 4] and scores [C, sum(M)], image n taking the next roisnum[n] rows (none when
<= 0). Per image and class (but
background_class): the boxes with score >= score_threshold, the first nms_top_k by score (ties: lower box
index first), then greedy hard NMS in that order: a candidate is dropped when its IoU (float32, +1 on
the sides when not normalized; 0 for an empty box) with a kept box, checked newest first, is >=
iou_threshold; after a kept box the threshold becomes threshold * nms_eta while it is > 0.5 (nms_eta < 1).
As in the reference, a candidate whose score equals score_threshold stops checking after the newest kept
box. Per image: the kept boxes by score descending (ties: class, then box index), the first keep_top_k;
sort_result_type "classid" reorders them by class then score (per image, or across the batch with
sort_result_across_batch, where "score" sorts by score, image, class, box). Outputs: selected_outputs
[K, 6] (class, score, x1, y1, x2, y2; boxes' type), selected_indices [K, 1] (image * M + box; with
roisnum (row of the box) * C + class) and valid_outputs [N] (kept per image), both of output_type.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops._types import FLOAT_TYPES
from custom_ops.errors import OpError
from custom_ops.unit import (Absent, Attribute, AttributeMap, Benchmark, BenchmarkCase, Case, DialectUnit, Divergence,
                             OpenVINO, OpSpec, Port)

from ._common import greedy_by_edges, greedy_nms, index_pyop_casts, nms_case_inputs, nms_factory, nms_infer, swept_candidates

OP = "MulticlassNms"
TYPES = FLOAT_TYPES[:3]          # float16, bfloat16, float32: OpenVINO refuses float64 boxes and scores
SORTS = ("classid", "score", "none")
OUTPUT_TYPES = ("i64", "i32")


def _iou(box, kept, normalized):
    """float32 IoU of boxes [..., 4] with kept boxes [..., 4] (broadcast), the reference's operations."""
    norm = np.float32(0 if normalized else 1)
    area_i = (box[..., 3] - box[..., 1] + norm) * (box[..., 2] - box[..., 0] + norm)
    area_j = (kept[..., 3] - kept[..., 1] + norm) * (kept[..., 2] - kept[..., 0] + norm)
    inter = (np.maximum(np.minimum(box[..., 3], kept[..., 3]) - np.maximum(box[..., 1], kept[..., 1]) + norm,
                        np.float32(0))
             * np.maximum(np.minimum(box[..., 2], kept[..., 2]) - np.maximum(box[..., 0], kept[..., 0]) + norm,
                          np.float32(0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area_i + area_j - inter)
    return np.where((area_i <= 0) | (area_j <= 0), np.float32(0), iou)


def _class_order(scores, a):
    """The candidates of one class: boxes with score >= score_threshold by score descending (ties: lower box
    index first), the first nms_top_k."""
    candidates = np.flatnonzero(scores >= np.float32(a["score_threshold"]))
    order = candidates[np.lexsort((candidates, -scores[candidates].astype(np.float64)))]
    return order[:a["nms_top_k"]] if a["nms_top_k"] > -1 else order


def _nms_class(boxes, scores, order, a, pairs=None):
    """Kept box indices of one class (candidates `order`), in selection order; `pairs`: the image's pairs of
    boxes whose IoU reaches the threshold (_suppressing_pairs), when known."""
    threshold = np.float32(a["iou_threshold"])
    eta, score_threshold = np.float32(a["nms_eta"]), np.float32(a["score_threshold"])
    if not (eta < 1 and threshold > 0.5) and (scores[order] > score_threshold).all():
        # a fixed threshold and no candidate at the score threshold: plain greedy NMS, vectorised
        if pairs is not None:
            return order[_greedy_by_pairs(order, pairs, len(boxes))].tolist()
        box = boxes[order]
        return order[greedy_nms(order.size, lambda k, c: _iou(box[c][None], box[k][:, None], a["normalized"])
                                >= threshold)].tolist()
    kept: list[int] = []
    for index in order:
        if kept:
            ious = _iou(boxes[index], boxes[kept[::-1]], a["normalized"])          # newest kept first
            if scores[index] <= score_threshold:
                ious = ious[:1]                 # the reference stops after the first comparison
            if (ious >= threshold).any():
                continue
        if eta < 1 and threshold > 0.5:
            threshold = np.float32(threshold * eta)
        kept.append(int(index))
    return kept


def _greedy_by_pairs(order, pairs, count):
    """Greedy NMS of the candidates `order` (box indices) given every suppressing pair of boxes (first, second;
    IoU symmetric): the positions kept (greedy_by_edges)."""
    position = np.full(count, -1, np.int64)
    position[order] = np.arange(order.size)
    first, second = position[pairs[0]], position[pairs[1]]
    both = (first >= 0) & (second >= 0)
    return greedy_by_edges(order.size, np.minimum(first[both], second[both]), np.maximum(first[both], second[both]))


def _suppressing_pairs(boxes, first, second, a):
    """Of the swept pairs (first, second: positions in `boxes`), those whose IoU (_iou) is >= the iou_threshold
    (> 0, so only boxes overlapping on y too: that test first)."""
    norm = np.float32(0 if a["normalized"] else 1)
    overlap_y = np.minimum(boxes[first, 3], boxes[second, 3]) - np.maximum(boxes[first, 1], boxes[second, 1]) \
        + norm > 0
    first, second = first[overlap_y], second[overlap_y]
    hit = _iou(boxes[first], boxes[second], a["normalized"]) >= np.float32(a["iou_threshold"])
    return first[hit], second[hit]


def _image_pairs(boxes, orders, a):
    """The suppressing pairs among the candidates of all classes of one image (shared boxes), in the image's box
    indices, or None where the per-class blocks are used: a threshold that changes (nms_eta) or is not
    positive, a non-finite candidate, or more swept pairs than the classes' candidate pairs."""
    threshold = np.float32(a["iou_threshold"])
    if not threshold > 0 or (np.float32(a["nms_eta"]) < 1 and threshold > 0.5) or not orders:
        return None
    found = swept_candidates(boxes, orders, 0.0 if a["normalized"] else 1.0,
                             sum(o.size * (o.size - 1) // 2 for o in orders))
    if found is None:
        return None
    union, chosen, first, second = found
    first, second = _suppressing_pairs(chosen, first, second, a)
    return union[first], union[second]


def _check_inputs(boxes, scores, roisnum):
    """(shared, number of images) after checking the two layouts: boxes [N, M, 4] with scores [N, C, M],
    or (version 9) boxes [C, sum(M), 4] with scores [C, sum(M)] and roisnum [N]."""
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        raise OpError(OP, "input 'boxes'", "must have shape [N, M, 4] (or [C, sum(M), 4] with roisnum)",
                      value=boxes.shape)
    if roisnum is None:
        if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
            raise OpError(OP, "input 'scores'", "must have shape [N, C, M] (N and M of boxes)", value=scores.shape,
                          allowed=f"[{boxes.shape[0]}, C, {boxes.shape[1]}]")
        return True, boxes.shape[0]
    roisnum = check.as_array(OP, "roisnum", roisnum)
    check.data_type(OP, "roisnum", roisnum, (np.dtype(np.int32), np.dtype(np.int64)))
    if scores.ndim != 2 or scores.shape != boxes.shape[:2]:
        raise OpError(OP, "input 'scores'", "with roisnum must have shape [C, sum(M)] (of boxes)",
                      value=scores.shape, allowed=list(boxes.shape[:2]))
    if roisnum.ndim != 1 or int(np.maximum(roisnum, 0).sum()) > boxes.shape[1]:
        raise OpError(OP, "input 'roisnum'", "must be [N] with its positive counts summing to at most the boxes",
                      value=roisnum.tolist(), allowed=f"sum <= {boxes.shape[1]}")
    return False, roisnum.shape[0]


def multiclass_nms(boxes, scores, roisnum=None, *, sort_result_type="none", sort_result_across_batch=0,
                   output_type="i64", iou_threshold=0.0, score_threshold=0.0, nms_top_k=-1, keep_top_k=-1,
                   background_class=-1, nms_eta=1.0, normalized=1):
    boxes, scores = check.as_array(OP, "boxes", boxes), check.as_array(OP, "scores", scores)
    check.data_type(OP, "boxes", boxes, TYPES)
    if scores.dtype != boxes.dtype:
        raise OpError(OP, "input 'scores'", "element type must equal boxes'", value=str(scores.dtype),
                      allowed=str(boxes.dtype))
    shared, batch = _check_inputs(boxes, scores, roisnum)
    sort = check.choice(OP, "sort_result_type", sort_result_type, SORTS)
    output_type = check.choice(OP, "output_type", output_type, OUTPUT_TYPES)
    across = check.flag(OP, "sort_result_across_batch", sort_result_across_batch)
    a = {"score_threshold": float(score_threshold), "iou_threshold": float(iou_threshold),
         "nms_top_k": int(nms_top_k), "nms_eta": float(nms_eta),
         "normalized": check.flag(OP, "normalized", normalized)}
    if not 0.0 <= a["nms_eta"] <= 1.0:
        raise OpError(OP, "attribute 'nms_eta'", "must be in [0, 1]", value=nms_eta)
    for name, value in (("nms_top_k", nms_top_k), ("keep_top_k", keep_top_k), ("background_class", background_class)):
        if int(value) < -1:
            raise OpError(OP, f"attribute '{name}'", "must be >= -1", value=value)
    b32, s32 = boxes.astype(np.float32), scores.astype(np.float32)
    classes = scores.shape[1] if shared else scores.shape[0]
    counts = None if shared else np.asarray(roisnum).astype(np.int64)
    starts = None if shared else np.concatenate([[0], np.cumsum(np.maximum(counts, 0))])
    rows = []                                  # (image, class, flat index, score, box) per kept box
    valid = np.zeros(batch, np.int64)
    with np.errstate(all="ignore"):
        for image in range(batch):
            if not shared and counts[image] <= 0:
                continue
            window = slice(None) if shared else slice(starts[image], starts[image] + counts[image])
            taken = [c for c in range(classes) if c != int(background_class)]
            class_boxes = {c: b32[image] if shared else b32[c, window] for c in taken}
            class_scores = {c: s32[image, c] if shared else s32[c, window] for c in taken}
            orders = {c: _class_order(class_scores[c], a) for c in taken}
            pairs = _image_pairs(b32[image], list(orders.values()), a) if shared else None
            ids = {c: np.asarray(_nms_class(class_boxes[c], class_scores[c], orders[c], a, pairs), np.int64)
                   for c in taken}
            if not any(i.size for i in ids.values()):
                continue
            cls = np.concatenate([np.full(ids[c].size, c, np.int64) for c in taken])
            idx = np.concatenate([ids[c] for c in taken])
            sc = np.concatenate([class_scores[c][ids[c]] for c in taken])
            kept_boxes = np.concatenate([class_boxes[c][ids[c]] for c in taken])
            flat = image * boxes.shape[1] + idx if shared else (starts[image] + idx) * classes + cls
            order = np.lexsort((idx, cls, -sc.astype(np.float64)))
            if int(keep_top_k) > -1:
                order = order[:int(keep_top_k)]
            if not across and sort == "classid":
                order = order[np.lexsort((idx[order], -sc[order].astype(np.float64), cls[order]))]
            valid[image] = len(order)
            rows += [(image, int(cls[o]), int(idx[o]), sc[o], flat[o], kept_boxes[o]) for o in order]
    if across and rows:
        image, cls, idx, sc = (np.array([r[n] for r in rows]) for n in range(4))
        negative = -sc.astype(np.float64)
        order = (np.lexsort((idx, cls, image, negative)) if sort == "score" else
                 np.lexsort((idx, negative, image, cls)) if sort == "classid" else np.arange(len(rows)))
        rows = [rows[o] for o in order]
    itype = np.int64 if output_type == "i64" else np.int32
    selected = np.array([[c, s, *box] for _, c, _, s, _, box in rows], np.float32).reshape(-1, 6)
    indices = np.array([[flat] for *_, flat, _ in rows], itype).reshape(-1, 1)
    return selected.astype(boxes.dtype), indices, valid.astype(itype)


def _kernel_v9(boxes, scores, roisnum=None, **attributes):
    return multiclass_nms(boxes, scores, roisnum, **attributes)


def cases(rng: np.random.Generator) -> list:
    out = []
    for index in range(24):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        boxes, scores = nms_case_inputs(r, empty=index % 6 == 5)           # empty boxes: IoU 0, all kept
        batch, classes = scores.shape[:2]
        a = {"iou_threshold": float(r.choice([0.3, 0.5, 0.7])), "score_threshold": float(r.choice([0.0, 0.2])),
             "nms_top_k": int(r.choice([-1, 3])), "keep_top_k": int(r.choice([-1, 4])),
             "background_class": int(r.choice([-1, 0])), "nms_eta": float(r.choice([1.0, 0.8])),
             "normalized": index % 2, "sort_result_type": SORTS[index % 3],
             "sort_result_across_batch": int(r.integers(2)), "output_type": OUTPUT_TYPES[index % 4 // 2]}
        inputs = (boxes.astype(np.float32), scores.astype(np.float32))
        if index % 4 == 3:       # version 9's layout: boxes per class, images by roisnum (one may be empty)
            counts = r.integers(0 if batch > 1 else 1, 4, batch)
            counts[0] = max(counts[0], 1)        # no boxes at all: a declared CPU divergence
            total = int(counts.sum())
            corner = r.uniform(0, 10, (classes, total, 2))
            per_class = np.concatenate([corner, corner + r.uniform(0.5, 6, (classes, total, 2))], -1)
            inputs = (per_class.astype(np.float32),
                      (r.permutation(classes * total).reshape(classes, total) / max(classes * total, 1)).astype(np.float32),
                      counts.astype((np.int32, np.int64)[index % 8 // 4]))
        out.append(Case(f"multiclass_nms_{index}", inputs, a))
    return out


def bad_cases() -> list:
    f32 = lambda *shape: np.zeros(shape, np.float32)  # noqa: E731
    return [
        (Case("boxes_shape", (f32(1, 3, 5), f32(1, 2, 3)), {}), "[N, M, 4]"),
        (Case("scores_shape", (f32(1, 3, 4), f32(1, 2, 4)), {}), "[N, C, M]"),
        (Case("roisnum_sum", (f32(2, 3, 4), f32(2, 3), np.array([2, 2], np.int32)), {}), "roisnum"),
        (Case("roisnum_scores", (f32(2, 3, 4), f32(2, 3, 1), np.array([1, 2], np.int32)), {}), "scores"),
        (Case("mixed_types", (f32(1, 3, 4), np.zeros((1, 2, 3))), {}), "element type"),
        (Case("eta", (f32(1, 3, 4), f32(1, 2, 3)), {"nms_eta": 1.5}), "nms_eta"),
        (Case("top_k", (f32(1, 3, 4), f32(1, 2, 3)), {"keep_top_k": -2}), "keep_top_k"),
    ]


def _infer(ctx) -> None:
    nms_infer(ctx, boxes_like_input=True)


def _output_shapes(inputs: dict, attributes: dict) -> list:
    """valid_outputs has one count per image: N of scores [N, C, M], or of roisnum [N] (version 9)."""
    roisnum = inputs.get("roisnum")
    return [None, None, (np.shape(inputs["scores"])[0] if roisnum is None else np.size(roisnum),)]


def _no_boxes_with_roisnum(inputs, attributes) -> bool:
    return inputs.get("roisnum") is not None and np.shape(inputs["boxes"])[1:2] == (0,)


DIVERGENCES = (
    Divergence("ov-multiclassnms-roisnum-no-boxes", "openvino-cpu", "value", "no boxes: valid_outputs empty",
               "With roisnum and no boxes at all (boxes [C, 0, 4], roisnum [0, 0]) the contract gives "
               "valid_outputs [0, 0] (one per image); the CPU plugin returns valid_outputs of shape [0].",
               _no_boxes_with_roisnum,
               Case("example", (np.zeros((2, 0, 4), np.float32), np.zeros((2, 0), np.float32),
                                np.zeros(2, np.int32)), {})),
)


def _box_inputs(count: int, classes: int):
    """count random boxes in a 100 x 100 image, distinct scores over `classes` classes (one image)."""
    def inputs(rng):
        corner = rng.uniform(0, 90, (1, count, 2))
        boxes = np.concatenate([corner, corner + rng.uniform(2, 20, (1, count, 2))], -1).astype(np.float32)
        scores = (rng.permutation(classes * count).reshape(1, classes, count) / (classes * count)).astype(np.float32)
        return {"boxes": boxes, "scores": scores}
    return inputs


def benchmark_cases(mode: str) -> list:
    count, classes = {"full": (1000, 20), "quick": (1000, 20), "tiny": (16, 2)}[mode]
    return [BenchmarkCase(f"multiclass-nms-{count}", f"{count} boxes, {classes} classes, nms_top_k 200, keep 100",
                          _box_inputs(count, classes),
                          {"iou_threshold": 0.5, "score_threshold": 0.05, "nms_top_k": 200, "keep_top_k": 100,
                           "background_class": -1, "normalized": 0})]


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 9, (Port("boxes", "T"), Port("scores", "T"), Port("roisnum", "I", optional=True)),
                  (Port("selected_outputs", "T"), Port("selected_indices", "O"), Port("valid_outputs", "O")),
                  (Attribute("sort_result_type", "string", "none", SORTS),
                   Attribute("sort_result_across_batch", "int", 0, (0, 1)),
                   Attribute("output_type", "string", "i64", OUTPUT_TYPES),
                   Attribute("iou_threshold", "float", 0.0), Attribute("score_threshold", "float", 0.0),
                   Attribute("nms_top_k", "int", -1), Attribute("keep_top_k", "int", -1),
                   Attribute("background_class", "int", -1), Attribute("nms_eta", "float", 1.0),
                   Attribute("normalized", "int", 1, (0, 1))),
                  {"T": TYPES, "I": (np.dtype(np.int32), np.dtype(np.int64)),
                   "O": (np.dtype(np.int64), np.dtype(np.int32))},
                  _kernel_v9, doc="Per-class NMS over shared boxes, sorted per image or across the batch.",
                  infer=_infer),),
    openvino=OpenVINO(
        "MulticlassNms", versions=(8, 9), factory=nms_factory("opset9", OP),
        attributes=(AttributeMap("sort_result_type", "lower"), AttributeMap("sort_result_across_batch", "bool"),
                    AttributeMap("output_type", "lower"), AttributeMap("iou_threshold", "float"),
                    AttributeMap("score_threshold", "float"), AttributeMap("nms_top_k", "int"),
                    AttributeMap("keep_top_k", "int"), AttributeMap("background_class", "int"),
                    AttributeMap("nms_eta", "float"), AttributeMap("normalized", "bool")),
        output_shapes=_output_shapes,
        notes="MulticlassNms-8 is version 9 without roisnum"),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("ONNX NonMaxSuppression has no nms_eta, keep_top_k, nor these sort orders and outputs"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torchvision's nms does not load beside CPU torch here"),
    divergences=DIVERGENCES,
    pyop_outputs=lambda inputs: (inputs[0], np.dtype(np.int64), np.dtype(np.int64)),
    pyop_casts=index_pyop_casts,
    open_order="boxes of equal scores may come in any order",
    benchmark=Benchmark(benchmark_cases),
)
