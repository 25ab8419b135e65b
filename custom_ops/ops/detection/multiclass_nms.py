"""MulticlassNms-9 (and -8) (OpenVINO): per-class NMS of boxes shared among classes, then per-image and
optional cross-batch sorting.

boxes [N, M, 4] (x1, y1, x2, y2 as given), scores [N, C, M] (float). Per image and class (but
background_class): the boxes with score >= score_threshold, the first nms_top_k by score (ties: lower box
index first), then greedy hard NMS in that order: a candidate is dropped when its IoU (float32, +1 on
the sides when not normalized; 0 for an empty box) with a kept box, checked newest first, is >=
iou_threshold; after a kept box the threshold becomes threshold * nms_eta while it is > 0.5 (nms_eta < 1).
As in the reference, a candidate whose score equals score_threshold stops checking after the newest kept
box. Per image: the kept boxes by score descending (ties: class, then box index), the first keep_top_k;
sort_result_type "classid" reorders them by class then score (per image, or across the batch with
sort_result_across_batch, where "score" sorts by score, image, class, box). Outputs: selected_outputs
[K, 6] (class, score, x1, y1, x2, y2; boxes' type), selected_indices [K, 1] (image * M + box) and
valid_outputs [N] (kept per image), both of output_type. Version 9's roisnum input (boxes per class,
scores [C, sum(M)]) is not implemented: refused.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops._types import FLOAT_TYPES
from custom_ops.errors import OpError
from custom_ops.unit import (Absent, Attribute, AttributeMap, Case, DialectUnit, OpenVINO, OpSpec, Port)

OP = "MulticlassNms"
TYPES = FLOAT_TYPES
SORTS = ("classid", "score", "none")
OUTPUT_TYPES = ("i64", "i32")


def _iou(box, kept, normalized):
    """float32 IoU of one box [4] with kept boxes [K, 4], the reference's operations."""
    norm = np.float32(0 if normalized else 1)
    area_i = (box[3] - box[1] + norm) * (box[2] - box[0] + norm)
    area_j = (kept[:, 3] - kept[:, 1] + norm) * (kept[:, 2] - kept[:, 0] + norm)
    inter = (np.maximum(np.minimum(box[3], kept[:, 3]) - np.maximum(box[1], kept[:, 1]) + norm, np.float32(0))
             * np.maximum(np.minimum(box[2], kept[:, 2]) - np.maximum(box[0], kept[:, 0]) + norm, np.float32(0)))
    iou = inter / (area_i + area_j - inter)
    return np.where((area_i <= 0) | (area_j <= 0), np.float32(0), iou)


def _nms_class(boxes, scores, a):
    """Kept box indices of one class, in selection order."""
    candidates = np.flatnonzero(scores >= np.float32(a["score_threshold"]))
    order = candidates[np.lexsort((candidates, -scores[candidates].astype(np.float64)))]
    if a["nms_top_k"] > -1:
        order = order[:a["nms_top_k"]]
    threshold = np.float32(a["iou_threshold"])
    eta, score_threshold = np.float32(a["nms_eta"]), np.float32(a["score_threshold"])
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


def multiclass_nms(boxes, scores, roisnum=None, *, sort_result_type="none", sort_result_across_batch=0,
                   output_type="i64", iou_threshold=0.0, score_threshold=0.0, nms_top_k=-1, keep_top_k=-1,
                   background_class=-1, nms_eta=1.0, normalized=1):
    boxes, scores = check.as_array(OP, "boxes", boxes), check.as_array(OP, "scores", scores)
    check.data_type(OP, "boxes", boxes, TYPES)
    if scores.dtype != boxes.dtype:
        raise OpError(OP, "input 'scores'", "element type must equal boxes'", value=str(scores.dtype),
                      allowed=str(boxes.dtype))
    if roisnum is not None:
        raise OpError(OP, "input 'roisnum'", "boxes per class with roisnum (scores [C, sum(M)]) are not "
                      "implemented; only boxes shared among classes")
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        raise OpError(OP, "input 'boxes'", "must have shape [N, M, 4]", value=boxes.shape)
    if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise OpError(OP, "input 'scores'", "must have shape [N, C, M] (N and M of boxes)", value=scores.shape,
                      allowed=f"[{boxes.shape[0]}, C, {boxes.shape[1]}]")
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
    batch, classes, count = scores.shape
    b32, s32 = boxes.astype(np.float32), scores.astype(np.float32)
    rows = []                                               # (image, class, box, score) per kept box
    valid = np.zeros(batch, np.int64)
    with np.errstate(all="ignore"):
        for image in range(batch):
            kept = [(c, i, s32[image, c, i]) for c in range(classes) if c != int(background_class)
                    for i in _nms_class(b32[image], s32[image, c], a)]
            if not kept:
                continue
            cls, idx, sc = (np.array(v) for v in zip(*kept))
            order = np.lexsort((idx, cls, -sc.astype(np.float64)))
            if int(keep_top_k) > -1:
                order = order[:int(keep_top_k)]
            if not across and sort == "classid":
                order = order[np.lexsort((idx[order], -sc[order].astype(np.float64), cls[order]))]
            valid[image] = len(order)
            rows += [(image, int(cls[o]), int(idx[o]), sc[o]) for o in order]
    if across and rows:
        image, cls, idx, sc = (np.array(v) for v in zip(*rows))
        negative = -sc.astype(np.float64)
        order = (np.lexsort((idx, cls, image, negative)) if sort == "score" else
                 np.lexsort((idx, negative, image, cls)) if sort == "classid" else np.arange(len(rows)))
        rows = [rows[o] for o in order]
    itype = np.int64 if output_type == "i64" else np.int32
    selected = np.array([[c, s, *b32[n, i]] for n, c, i, s in rows], np.float32).reshape(-1, 6)
    indices = np.array([[n * count + i] for n, _, i, _ in rows], itype).reshape(-1, 1)
    return selected.astype(boxes.dtype), indices, valid.astype(itype)


def _kernel_v9(boxes, scores, roisnum=None, **attributes):
    return multiclass_nms(boxes, scores, roisnum, **attributes)


def cases(rng: np.random.Generator) -> list:
    out = []
    for index in range(24):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        batch, classes, count = int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 8))
        corner = r.uniform(0, 10, (batch, count, 2))
        boxes = np.concatenate([corner, corner + r.uniform(0.5, 6, (batch, count, 2))], -1)
        if index % 6 == 5:
            boxes[..., 2:] = boxes[..., :2] - 1.0                     # empty boxes: IoU 0, all kept
        scores = r.permutation(batch * classes * count).reshape(batch, classes, count) / (batch * classes * count)
        a = {"iou_threshold": float(r.choice([0.3, 0.5, 0.7])), "score_threshold": float(r.choice([0.0, 0.2])),
             "nms_top_k": int(r.choice([-1, 3])), "keep_top_k": int(r.choice([-1, 4])),
             "background_class": int(r.choice([-1, 0])), "nms_eta": float(r.choice([1.0, 0.8])),
             "normalized": index % 2, "sort_result_type": SORTS[index % 3],
             "sort_result_across_batch": int(r.integers(2)), "output_type": OUTPUT_TYPES[index % 4 // 2]}
        out.append(Case(f"multiclass_nms_{index}", (boxes.astype(np.float32), scores.astype(np.float32)), a))
    return out


def bad_cases() -> list:
    f32 = lambda *shape: np.zeros(shape, np.float32)  # noqa: E731
    return [
        (Case("boxes_shape", (f32(1, 3, 5), f32(1, 2, 3)), {}), "[N, M, 4]"),
        (Case("scores_shape", (f32(1, 3, 4), f32(1, 2, 4)), {}), "[N, C, M]"),
        (Case("roisnum", (f32(2, 3, 4), f32(2, 3), np.array([1, 2], np.int32)), {}), "roisnum"),
        (Case("mixed_types", (f32(1, 3, 4), np.zeros((1, 2, 3))), {}), "element type"),
        (Case("eta", (f32(1, 3, 4), f32(1, 2, 3)), {"nms_eta": 1.5}), "nms_eta"),
        (Case("top_k", (f32(1, 3, 4), f32(1, 2, 3)), {"keep_top_k": -2}), "keep_top_k"),
    ]


def _pyop_casts(attributes: dict):
    """The PyOp computes int64 index outputs; an asked i32 is a Cast after it."""
    casts = {1: np.dtype(np.int32), 2: np.dtype(np.int32)} if attributes["output_type"] == "i32" else {}
    return dict(attributes, output_type="i64"), casts


def _infer(ctx) -> None:
    from onnx import TensorProto, helper
    proto = ctx.get_attribute("output_type")
    value = helper.get_attribute_value(proto) if proto is not None else b"i64"
    code = TensorProto.INT32 if (value.decode() if isinstance(value, bytes) else value) == "i32" else TensorProto.INT64
    known = ctx.get_input_type(0)
    if known is not None:
        ctx.set_output_type(0, helper.make_tensor_type_proto(known.tensor_type.elem_type, [None, 6]))
    ctx.set_output_type(1, helper.make_tensor_type_proto(code, [None, 1]))
    ctx.set_output_type(2, helper.make_tensor_type_proto(code, [None]))


def _factory(ov, inputs, a):
    from openvino.utils.node_factory import NodeFactory
    used = [i.output(0) if hasattr(i, "output") else i for i in inputs if i is not None]
    if used[0].get_partial_shape().rank.is_static and used[0].get_partial_shape()[-1].is_dynamic:
        # the CPU plugin needs the box dimension static: a Reshape to [N, M, 4] states it
        used[0] = ov.opset1.reshape(used[0], ov.op.Constant(np.array([0, 0, 4], np.int64)), True).output(0)
    return NodeFactory("opset9").create("MulticlassNms", used, a)


def _output_shapes(inputs: dict, attributes: dict) -> list:
    return [None, None, (np.shape(inputs["scores"])[0],)]


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
        "MulticlassNms", versions=(8, 9), factory=_factory,
        attributes=(AttributeMap("sort_result_type", "lower"), AttributeMap("sort_result_across_batch", "bool"),
                    AttributeMap("output_type", "lower"), AttributeMap("iou_threshold", "float"),
                    AttributeMap("score_threshold", "float"), AttributeMap("nms_top_k", "int"),
                    AttributeMap("keep_top_k", "int"), AttributeMap("background_class", "int"),
                    AttributeMap("nms_eta", "float"), AttributeMap("normalized", "bool")),
        output_shapes=_output_shapes,
        notes="MulticlassNms-8 is version 9 without roisnum; roisnum (boxes per class) refused by the kernel"),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("ONNX NonMaxSuppression has no nms_eta, keep_top_k, nor these sort orders and outputs"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torchvision's nms does not load beside CPU torch here"),
    divergences=Absent("none measured on the generated cases (bit-exact)"),
    pyop_outputs=lambda inputs: (inputs[0], np.dtype(np.int64), np.dtype(np.int64)),
    pyop_casts=_pyop_casts,
    benchmark=Absent("not benchmarked yet"),
)
