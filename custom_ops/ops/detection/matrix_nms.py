"""MatrixNms-8 (OpenVINO): per-class Matrix NMS (SOLOv2's soft suppression by decayed scores) of boxes
shared among classes.

boxes [N, M, 4] (x1, y1, x2, y2), scores [N, C, M] (float32). Per image and class (but background_class):
the boxes with score > score_threshold, the first nms_top_k by score (ties: lower box index first);
IoU (float32; 0 for boxes apart or an empty box; +1 on the sides when not normalized) of each candidate i
with every higher-scored j, iou_max[j] the largest IoU of j with those above it; decay of i = min over
j < i of linear (1 - iou) / (1 - iou_max[j] + 1e-10) (in double, as the reference) or gaussian
exp((iou_max[j]^2 - iou^2) * gaussian_sigma) (float32 argument, exp correctly rounded: glibc's expf on the
CPU plugin is not, a declared divergence); the decayed score decay * score is kept when >
post_threshold (the first candidate keeps its score). Per image: by decayed score descending (ties:
class, box), the first keep_top_k. Across the batch (sort_result_across_batch) "score" sorts by score,
image, class, box and "classid" by class, image, score, box. Outputs as MulticlassNms: selected_outputs
[K, 6] (class, score, x1, y1, x2, y2), selected_indices [K, 1] (image * M + box), valid_outputs [N].
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import (Absent, Attribute, AttributeMap, Benchmark, BenchmarkCase, Case, DialectUnit, Divergence,
                             OpenVINO, OpSpec, Port)

from .._libm import changes_with_c_libm, expf
from ._common import index_pyop_casts, nms_case_inputs, nms_factory, nms_infer, swept_candidates

OP = "MatrixNms"
TYPES = (np.dtype(np.float32),)
SORTS = ("classid", "score", "none")
OUTPUT_TYPES = ("i64", "i32")
DECAYS = ("linear", "gaussian")


def _area(b, normalized):
    w, h = b[..., 2] - b[..., 0], b[..., 3] - b[..., 1]
    area = w * h if normalized else (w + np.float32(1)) * (h + np.float32(1))
    return np.where((b[..., 2] < b[..., 0]) | (b[..., 3] < b[..., 1]), np.float32(0), area)


def _apart(one, two):
    """Whether boxes one and two ([..., 4], broadcast) are apart (their IoU is 0), the reference's test."""
    return (two[..., 0] > one[..., 2]) | (two[..., 2] < one[..., 0]) | (two[..., 1] > one[..., 3]) | \
        (two[..., 3] < one[..., 1])


def _pair_iou(one, two, area1, area2, normalized):
    """float32 IoU of boxes one and two ([..., 4], broadcast; areas area1, area2) not apart, the reference's
    operations (box1 = one; the same bits either way round but the sign of a zero)."""
    norm = np.float32(0 if normalized else 1)
    inter = ((np.minimum(one[..., 2], two[..., 2]) - np.maximum(one[..., 0], two[..., 0]) + norm)
             * (np.minimum(one[..., 3], two[..., 3]) - np.maximum(one[..., 1], two[..., 1]) + norm))
    return inter / (area1 + area2 - inter)


def _iou_matrix(b, normalized):
    """float32 IoU [K, K] of boxes b [K, 4] (the reference's operations, box1 = row)."""
    one, two = b[:, None, :], b[None, :, :]
    area = _area(b, normalized)
    return np.where(_apart(one, two), np.float32(0), _pair_iou(one, two, area[:, None], area[None, :], normalized))


def _class_order(scores, a):
    """The candidates of one class: boxes with score > score_threshold by score descending (ties: lower box
    index first), the first nms_top_k."""
    candidates = np.flatnonzero(scores > np.float32(a["score_threshold"]))
    order = candidates[np.lexsort((candidates, -scores[candidates].astype(np.float64)))]
    return order[:a["nms_top_k"]] if a["nms_top_k"] > -1 else order


def _decay(iou, iou_max, a):
    """The decay of a candidate by a higher-scored box: IoU iou between them, iou_max the higher one's."""
    if a["decay_function"] == "gaussian":
        return expf((iou_max * iou_max - iou * iou) * np.float32(a["gaussian_sigma"]))     # correctly rounded
    return ((1.0 - iou.astype(np.float64))
            / (1.0 - iou_max.astype(np.float64) + float(np.float32(1e-10)))).astype(np.float32)


def _kept(order, min_decay, scores, a):
    """(kept box indices, decayed scores) of a class's candidates `order` given each one's least decay."""
    decayed = (min_decay * scores[order]).astype(np.float32)
    decayed[0] = scores[order[0]]
    keep = decayed > np.float32(a["post_threshold"])
    return order[keep], decayed[keep]


def _nms_class(boxes, scores, order, a):
    """(kept box indices, decayed scores) of one class (candidates `order`), in the reference's order."""
    if not order.size:
        return order, np.zeros(0, np.float32)
    iou = _iou_matrix(boxes[order], a["normalized"])
    below = np.tril(np.ones((order.size, order.size), bool), -1)               # j < i
    iou_max = np.where(below, iou, np.float32(0)).max(axis=1)                   # iou_max[0] = 0
    decay = _decay(iou, iou_max[None, :], a)
    min_decay = np.minimum(np.where(below, decay, np.float32(1)).min(axis=1), np.float32(1))
    return _kept(order, min_decay, scores, a)


def _overlapping(boxes, orders, a):
    """The pairs (first, second) of the classes' candidate boxes that are not apart, with their IoU where it is
    not 0, or None where the dense matrices are less work (the x sweep finds more pairs than half the classes'
    matrices) or a candidate is not finite."""
    # apart on x unless x1 <= the other's x2: no rounding
    found = swept_candidates(boxes, orders, 0.0, sum(o.size * o.size for o in orders) // 2)
    if found is None:
        return None
    union, chosen, first, second = found
    close = ~((chosen[second, 1] > chosen[first, 3]) | (chosen[second, 3] < chosen[first, 1]))  # not apart on y
    first, second = first[close], second[close]
    close = ~_apart(chosen[first], chosen[second])
    first, second = first[close], second[close]
    area = _area(chosen, a["normalized"])
    iou = _pair_iou(chosen[first], chosen[second], area[first], area[second], a["normalized"])
    nonzero = iou != 0
    return union[first[nonzero]], union[second[nonzero]], iou[nonzero]


def _sparse_classes(boxes, scores, orders, a) -> dict:
    """{class: _nms_class's result} of the classes (orders: {class: candidates}, all non-empty) whose result
    the non-zero IoUs give alone, all classes at once: a pair of IoU 0 decays a candidate by 1 / (1 - iou_max
    + 1e-10) (linear) or exp(iou_max^2 sigma) (gaussian), never below 1 (the decay's cap) while iou_max is in
    [0, 1] (checked per class; a NaN fails) and sigma >= 0. {} where _overlapping gives None."""
    sigma = np.float32(a["gaussian_sigma"])
    if a["decay_function"] == "gaussian" and not (np.isfinite(sigma) and sigma >= 0):
        return {}
    classes = list(orders)
    pairs = _overlapping(boxes, [orders[c] for c in classes], a)
    if pairs is None:
        return {}
    first, second, iou = pairs
    width = max(orders[c].size for c in classes)
    position = np.full((len(classes), len(boxes)), -1, np.int64)
    for row, c in enumerate(classes):
        position[row, orders[c]] = np.arange(orders[c].size)
    in_class, pair = np.nonzero((position[:, first] >= 0) & (position[:, second] >= 0))
    at_first, at_second = position[in_class, first[pair]], position[in_class, second[pair]]
    lower, higher = np.maximum(at_first, at_second), np.minimum(at_first, at_second)    # candidate, decayer
    iou = iou[pair]
    iou_max = np.zeros(len(classes) * width, np.float32)
    np.maximum.at(iou_max, in_class * width + lower, iou)
    iou_max = iou_max.reshape(len(classes), width)
    least = np.ones(len(classes) * width, np.float32)
    np.minimum.at(least, in_class * width + lower, _decay(iou, iou_max[in_class, higher], a))
    least = least.reshape(len(classes), width)
    capped = ((iou_max >= 0) & (iou_max <= 1)).all(axis=1)
    return {c: _kept(orders[c], least[row, :orders[c].size], scores[c], a)
            for row, c in enumerate(classes) if capped[row]}


def _image_classes(boxes, scores, classes, a) -> dict:
    """{class: (kept box indices, decayed scores)} of one image's classes."""
    orders = {c: _class_order(scores[c], a) for c in classes}
    done = _sparse_classes(boxes, scores, {c: o for c, o in orders.items() if o.size}, a) \
        if any(o.size for o in orders.values()) else {}
    return {c: done[c] if c in done else _nms_class(boxes, scores[c], orders[c], a) for c in classes}


def matrix_nms(boxes, scores, *, sort_result_type="none", sort_result_across_batch=0, output_type="i64",
               score_threshold=0.0, nms_top_k=-1, keep_top_k=-1, background_class=-1, decay_function="linear",
               gaussian_sigma=2.0, post_threshold=0.0, normalized=1):
    boxes, scores = check.as_array(OP, "boxes", boxes), check.as_array(OP, "scores", scores)
    check.data_type(OP, "boxes", boxes, TYPES)
    check.data_type(OP, "scores", scores, TYPES)
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        raise OpError(OP, "input 'boxes'", "must have shape [N, M, 4]", value=boxes.shape)
    if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise OpError(OP, "input 'scores'", "must have shape [N, C, M] (N and M of boxes)", value=scores.shape,
                      allowed=f"[{boxes.shape[0]}, C, {boxes.shape[1]}]")
    sort = check.choice(OP, "sort_result_type", sort_result_type, SORTS)
    output_type = check.choice(OP, "output_type", output_type, OUTPUT_TYPES)
    across = check.flag(OP, "sort_result_across_batch", sort_result_across_batch)
    for name, value in (("nms_top_k", nms_top_k), ("keep_top_k", keep_top_k), ("background_class", background_class)):
        if int(value) < -1:
            raise OpError(OP, f"attribute '{name}'", "must be >= -1", value=value)
    a = {"score_threshold": float(score_threshold), "nms_top_k": int(nms_top_k),
         "decay_function": check.choice(OP, "decay_function", decay_function, DECAYS),
         "gaussian_sigma": float(gaussian_sigma), "post_threshold": float(post_threshold),
         "normalized": check.flag(OP, "normalized", normalized)}
    batch, classes, count = scores.shape
    rows = []                                               # (image, class, box, decayed score)
    valid = np.zeros(batch, np.int64)
    with np.errstate(all="ignore"):
        for image in range(batch):
            taken = [c for c in range(classes) if c != int(background_class)]
            results = _image_classes(boxes[image], scores[image], taken, a)
            cls = np.concatenate([np.full(results[c][0].size, c, np.int64) for c in taken] or [np.zeros(0, np.int64)])
            if not cls.size:
                continue
            idx = np.concatenate([results[c][0] for c in taken]).astype(np.int64)
            sc = np.concatenate([results[c][1] for c in taken]).astype(np.float32)
            order = np.lexsort((idx, cls, -sc.astype(np.float64)))
            if int(keep_top_k) > -1:
                order = order[:int(keep_top_k)]
            valid[image] = len(order)
            rows += [(image, int(cls[o]), int(idx[o]), sc[o]) for o in order]
    if across and rows:
        image, cls, idx, sc = (np.array(v) for v in zip(*rows))
        negative = -sc.astype(np.float64)
        order = (np.lexsort((idx, cls, image, negative)) if sort == "score" else
                 np.lexsort((idx, negative, image, cls)) if sort == "classid" else np.arange(len(rows)))
        rows = [rows[o] for o in order]
    itype = np.int64 if output_type == "i64" else np.int32
    selected = np.array([[c, s, *boxes[n, i]] for n, c, i, s in rows], np.float32).reshape(-1, 6)
    indices = np.array([[n * count + i] for n, _, i, _ in rows], itype).reshape(-1, 1)
    return selected, indices, valid.astype(itype)


def cases(rng: np.random.Generator) -> list:
    out = []
    for index in range(32):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        boxes, scores = nms_case_inputs(r, empty=index % 8 == 7)           # empty boxes: area 0
        a = {"score_threshold": float(r.choice([0.0, 0.2])), "post_threshold": float(r.choice([0.0, 0.1, 0.3])),
             "nms_top_k": int(r.choice([-1, 3])), "keep_top_k": int(r.choice([-1, 4])),
             "background_class": int(r.choice([-1, 0])), "decay_function": DECAYS[index % 2],
             "gaussian_sigma": float(r.choice([2.0, 0.5])), "normalized": index // 2 % 2,
             "sort_result_type": SORTS[index % 3], "sort_result_across_batch": int(r.integers(2)),
             "output_type": OUTPUT_TYPES[index % 4 // 2]}
        case = Case(f"matrix_nms_{index}", (boxes.astype(np.float32), scores.astype(np.float32)), a)
        if matrix_nms(*case.inputs, **a)[0].shape[0]:    # nothing selected: the CPU plugin raises (declared)
            out.append(case)
    return out


def bad_cases() -> list:
    f32 = lambda *shape: np.zeros(shape, np.float32)  # noqa: E731
    return [
        (Case("boxes_shape", (f32(1, 3, 5), f32(1, 2, 3)), {}), "[N, M, 4]"),
        (Case("scores_shape", (f32(1, 3, 4), f32(1, 2, 4)), {}), "[N, C, M]"),
        (Case("float64", (np.zeros((1, 3, 4)), np.zeros((1, 2, 3))), {}), "element type"),
        (Case("decay", (f32(1, 3, 4), f32(1, 2, 3)), {"decay_function": "cubic"}), "decay_function"),
        (Case("top_k", (f32(1, 3, 4), f32(1, 2, 3)), {"nms_top_k": -3}), "nms_top_k"),
    ]


def _infer(ctx) -> None:
    nms_infer(ctx, boxes_like_input=False)


# Divergences of OpenVINO's CPU plugin (2026.4, measured) ------------------------------------------------

_OV = "openvino-cpu"
_LINEAR_EXAMPLE = Case("example", (np.array([[[3, 1, 5, 7], [0, 1, 5, 4]]], np.float32),
                                   np.array([[[0.4, 0.6]]], np.float32)), {})


def _linear_with_decay(inputs, attributes) -> bool:
    return attributes["decay_function"] == "linear" and np.shape(inputs["boxes"])[1] > 1


def _nothing_selected(inputs, attributes) -> bool:
    try:
        return matrix_nms(inputs["boxes"], inputs["scores"], **attributes)[0].shape[0] == 0
    except OpError:
        return False


def _gaussian_expf_changes(inputs, attributes) -> bool:
    """Whether the C library's expf (OpenVINO's std::exp of float) changes the gaussian decayed scores."""
    if attributes["decay_function"] != "gaussian":
        return False
    try:
        return changes_with_c_libm(lambda: matrix_nms(inputs["boxes"], inputs["scores"], **attributes))
    except OpError:
        return False


DIVERGENCES = (
    Divergence("ov-matrixnms-expf-last-bit", _OV, "value", "exp not correctly rounded",
               "Gaussian decay: the CPU plugin's std::exp of float (glibc's expf) is not correctly rounded for "
               "some arguments; the contract rounds exp correctly: the example's second decayed score is "
               "0.7900087237358093 by the contract, 0.7900087833404541 on the CPU (1 ulp; 2 of 521 generated "
               "gaussian cases, equal to OpenVINO with the C expf).",
               _gaussian_expf_changes,
               Case("example", (np.array([[[3.3, 2.7, 5.3, 7.9], [1.7, 6.9, 6.8, 10.2]]], np.float32),
                                np.array([[[0.9, 0.8]]], np.float32)), {"decay_function": "gaussian"})),
    Divergence("ov-matrixnms-linear-decay-f32", _OV, "value", "linear decay in float32",
               "The reference computes the linear decay (1 - iou) / (1 - iou_max + 1e-10) in double (1e-10 "
               "survives); the CPU plugin in float32 (1 + 1e-10 == 1): the example's second decayed score is "
               "0.2857142686843872 by the reference, 0.2857142984867096 on the CPU (1 ulp; 5 of 68 generated "
               "cases). Selection and order agreed on every measured case.",
               _linear_with_decay, _LINEAR_EXAMPLE),
    Divergence("ov-matrixnms-nothing-selected", _OV, "rejects", "no box selected raises",
               "When no box of any image survives the thresholds the contract returns empty outputs and "
               "valid_outputs of zeros; the CPU plugin raises 'Total number of boxes is less or equal than 0'.",
               _nothing_selected, Case("example", (np.zeros((1, 2, 4), np.float32), np.zeros((1, 1, 2), np.float32)),
                                       {})),
)


def benchmark_cases(mode: str) -> list:
    """count random boxes in a 100 x 100 image, distinct scores over `classes` classes (one image)."""
    count, classes = {"full": (1000, 20), "quick": (1000, 20), "tiny": (16, 2)}[mode]

    def inputs(rng):
        corner = rng.uniform(0, 90, (1, count, 2))
        boxes = np.concatenate([corner, corner + rng.uniform(2, 20, (1, count, 2))], -1).astype(np.float32)
        scores = (rng.permutation(classes * count).reshape(1, classes, count) / (classes * count)).astype(np.float32)
        return {"boxes": boxes, "scores": scores}
    return [BenchmarkCase(f"matrix-nms-{count}", f"{count} boxes, {classes} classes, nms_top_k 200, keep 100", inputs,
                          {"score_threshold": 0.05, "post_threshold": 0.05, "nms_top_k": 200, "keep_top_k": 100,
                           "background_class": -1, "decay_function": "linear", "normalized": 0})]


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 8, (Port("boxes", "T"), Port("scores", "T")),
                  (Port("selected_outputs", "T"), Port("selected_indices", "O"), Port("valid_outputs", "O")),
                  (Attribute("sort_result_type", "string", "none", SORTS),
                   Attribute("sort_result_across_batch", "int", 0, (0, 1)),
                   Attribute("output_type", "string", "i64", OUTPUT_TYPES),
                   Attribute("score_threshold", "float", 0.0), Attribute("nms_top_k", "int", -1),
                   Attribute("keep_top_k", "int", -1), Attribute("background_class", "int", -1),
                   Attribute("decay_function", "string", "linear", DECAYS),
                   Attribute("gaussian_sigma", "float", 2.0), Attribute("post_threshold", "float", 0.0),
                   Attribute("normalized", "int", 1, (0, 1))),
                  {"T": TYPES, "O": (np.dtype(np.int64), np.dtype(np.int32))},
                  matrix_nms, doc="Matrix NMS (decayed scores) per class over shared boxes.", infer=_infer),),
    openvino=OpenVINO(
        "MatrixNms", versions=(8,), factory=nms_factory("opset8", OP),
        attributes=(AttributeMap("sort_result_type", "lower"), AttributeMap("sort_result_across_batch", "bool"),
                    AttributeMap("output_type", "lower"), AttributeMap("score_threshold", "float"),
                    AttributeMap("nms_top_k", "int"), AttributeMap("keep_top_k", "int"),
                    AttributeMap("background_class", "int"), AttributeMap("decay_function", "lower"),
                    AttributeMap("gaussian_sigma", "float"), AttributeMap("post_threshold", "float"),
                    AttributeMap("normalized", "bool")),
        output_shapes=lambda i, a: [None, None, (np.shape(i["scores"])[0],)]),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("the decay matrix, per-class top-k and sort orders have no exact standard ONNX form; not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torch has no matrix NMS op"),
    divergences=DIVERGENCES,
    pyop_outputs=lambda inputs: (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.int64)),
    pyop_casts=index_pyop_casts,
    open_order="boxes of equal scores may come in any order",
    benchmark=Benchmark(benchmark_cases),
)
