"""GenerateProposals-9 (OpenVINO): batched RPN proposals with a count of rois per image.

im_info [N, 3 or 4] (height, width, scale or scale_h, scale_w), anchors [H, W, A, 4], deltas [N, 4A, H, W],
scores [N, A, H, W]. Per image, as ExperimentalDetectronGenerateProposalsSingleImage but: sizes take the +1
pixel unless `normalized`, min_size is scaled by the image scale, a box below it is not zeroed but kept out of
the NMS (after the top pre_nms_count by score, ties in box order), and the NMS uses the same +1 pixel. The kept
boxes of all images are concatenated: rois [sum, 4], scores [sum], rois_num [N] (roi_num_type). Computed in
f32 (the reference's float), outputs in the input type. nms_eta must be 1.0 (OpenVINO refuses other values).
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import (REQUIRED, Absent, Attribute, AttributeMap, Case, DialectUnit, Divergence, OpenVINO, OpSpec,
                             Port)

from ._common import flag, index_type_code, native, same_type_arrays
from .experimental_detectron_generate_proposals_single_image import (EXPF_LOW, F32, expf_divergence, make_inputs, nms,
                                                                     refine_anchors)

OP = "GenerateProposals"
TYPES = (np.dtype(np.float16), np.dtype(np.float32))
ROI_NUM_TYPES = ("i32", "i64")


def validate(im_info, anchors, deltas, scores, a):
    info, anc, dlt, scr = same_type_arrays(
        OP, (("im_info", im_info), ("anchors", anchors), ("deltas", deltas), ("scores", scores)), TYPES)
    if scr.ndim != 4:
        raise OpError(OP, "input 'scores'", "must have shape [N, A, H, W]", value=scr.shape)
    n, count, height, width = scr.shape
    if info.ndim != 2 or info.shape[0] != n or info.shape[1] not in (3, 4):
        raise OpError(OP, "input 'im_info'", "must have shape [N, 3] or [N, 4] (N of scores)", value=info.shape)
    if dlt.shape != (n, 4 * count, height, width):
        raise OpError(OP, "input 'deltas'", "must have shape [N, 4A, H, W]", value=dlt.shape,
                      allowed=(n, 4 * count, height, width))
    if anc.shape != (height, width, count, 4):
        raise OpError(OP, "input 'anchors'", "must have shape [H, W, A, 4]", value=anc.shape,
                      allowed=(height, width, count, 4))
    if np.isnan(scr).any():   # the reference's sort leaves their order undefined
        raise OpError(OP, "input 'scores'", "must not hold NaN", value="nan")
    for name in ("pre_nms_count", "post_nms_count"):   # OpenVINO's node validation refuses 0
        if int(a[name]) < 1:
            raise OpError(OP, f"attribute '{name}'", "must be positive", value=a[name], allowed=">= 1")
    if float(a["nms_eta"]) != 1.0:   # OpenVINO's node validation refuses any other value
        raise OpError(OP, "attribute 'nms_eta'", "adaptive NMS is not defined: must be 1.0", value=a["nms_eta"],
                      allowed="1.0")
    check.choice(OP, "roi_num_type", a["roi_num_type"], ROI_NUM_TYPES)
    return info, anc, dlt, scr


def generate_proposals(im_info, anchors, deltas, scores, *, min_size, nms_threshold, pre_nms_count, post_nms_count,
                       normalized, nms_eta, roi_num_type):
    info, anc, dlt, scr = validate(im_info, anchors, deltas, scores, locals())
    offset = F32(0) if normalized else F32(1)
    rois, out_scores, counts = [], [], []
    for b in range(scr.shape[0]):
        row = info[b].astype(F32)
        scale_h, scale_w = (row[2], row[3]) if row.size == 4 else (row[2], row[2])
        boxes, big = refine_anchors(anc.astype(F32), dlt[b].astype(F32), row[0], row[1],
                                    F32(min_size) * scale_h, F32(min_size) * scale_w, offset)
        score = scr[b].astype(F32).transpose(1, 2, 0).reshape(-1)
        order = np.argsort(-score.astype(np.float64), kind="stable")[:int(pre_nms_count)]
        post = int(post_nms_count)
        kept = order[nms(boxes[order], nms_threshold, post, offset, ~big[order])]
        rois.append(boxes[kept])
        out_scores.append(score[kept])
        counts.append(kept.size)
    dtype = info.dtype
    rois, out_scores = rois or [np.zeros((0, 4), F32)], out_scores or [np.zeros(0, F32)]
    return (np.concatenate(rois).astype(dtype).reshape(-1, 4), np.concatenate(out_scores).astype(dtype),
            np.asarray(counts, np.int32 if roi_num_type == "i32" else np.int64))


def _infer(ctx) -> None:
    from onnx import helper
    code = ctx.get_input_type(0).tensor_type.elem_type
    count = index_type_code(ctx, "roi_num_type")
    ctx.set_output_type(0, helper.make_tensor_type_proto(code, [None, 4]))
    ctx.set_output_type(1, helper.make_tensor_type_proto(code, [None]))
    ctx.set_output_type(2, helper.make_tensor_type_proto(count, [None]))


def _pyop_casts(attributes: dict):
    """The PyOp computes rois_num in i64; an asked i32 is a Cast after it."""
    casts = {2: np.dtype(np.int32)} if attributes["roi_num_type"] == "i32" else {}
    return dict(attributes, roi_num_type="i64"), casts


# Cases ------------------------------------------------------------------------------------------------

def cases(rng: np.random.Generator) -> list:
    """1-3 images on one anchor grid, im_info with one or two scales, normalized both ways, min_size /
    thresholds / counts varied; cases whose top scores tie are left out (std::partial_sort leaves their
    order open)."""
    out = []
    for index in range(20):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        count, height, width = int(r.integers(1, 4)), int(r.integers(1, 4)), int(r.integers(1, 5))
        n = int(r.integers(1, 4))
        dtype = np.float16 if index % 7 == 6 else np.float32
        stride = int(r.choice([4, 8]))
        images = [make_inputs(r, count, height, width, stride, dtype) for _ in range(n)]
        anchors = images[0][1].reshape(height, width, count, 4)
        scales = 4 if index % 3 == 2 else 3
        info = np.stack([np.concatenate([im[0][:2], r.choice([0.5, 1.0, 2.0], scales - 2)]) for im in images])
        total = count * height * width
        a = {"min_size": float(r.choice([0.0, 1.0, 2.0, 4.0])), "nms_threshold": float(r.choice([0.3, 0.5, 0.7])),
             "pre_nms_count": int(r.choice([max(1, total // 2), total, total + 5])),
             "post_nms_count": int(r.integers(1, total + 3)), "normalized": int(index % 2),
             "nms_eta": 1.0, "roi_num_type": ROI_NUM_TYPES[index % 4 // 2]}
        inputs = (info.astype(dtype), anchors, np.stack([im[2] for im in images]), np.stack([im[3] for im in images]))
        top = np.sort(inputs[3].reshape(n, -1).astype(F32), 1)[:, ::-1][:, :a["pre_nms_count"] + 1]
        if all(np.unique(t).size == t.size for t in top):
            out.append(Case(f"generate_proposals_{np.dtype(dtype).name}_{index}", inputs, a))
    return out


def _example() -> Case:
    info, anchors, deltas, scores = make_inputs(np.random.default_rng(0), 2, 2, 3, 8)
    return Case("example", (info[None], anchors.reshape(2, 3, 2, 4), deltas[None], scores[None]),
                {"min_size": 0.0, "nms_threshold": 0.7, "pre_nms_count": 8, "post_nms_count": 4})


def bad_cases() -> list:
    (info, anchors, deltas, scores), a = _example().inputs, _example().attributes
    return [
        (Case("im_info_shape", (info[:, :2], anchors, deltas, scores), a), "im_info"),
        (Case("anchors_shape", (info, anchors[:1], deltas, scores), a), "[H, W, A, 4]"),
        (Case("deltas_shape", (info, anchors, deltas[:, :4], scores), a), "[N, 4A, H, W]"),
        (Case("scores_rank", (info, anchors, deltas, scores[0]), a), "[N, A, H, W]"),
        (Case("scores_type", (info, anchors, deltas, scores.astype(np.float16)), a), "element type"),
        (Case("nan_score", (info, anchors, deltas, np.where(scores == scores.max(), np.nan, scores).astype(F32)), a),
         "NaN"),
        (Case("zero_post", (info, anchors, deltas, scores), {**a, "post_nms_count": 0}), "post_nms_count"),
        (Case("nms_eta", (info, anchors, deltas, scores), {**a, "nms_eta": 0.5}), "nms_eta"),
    ]


def _no_proposals(inputs, attributes) -> bool:
    return 0 in np.shape(inputs["scores"])


_EMPTY = _example()
DIVERGENCES = (
    expf_divergence("generateproposals",
                    (np.array([[24, 32, 1]], F32), np.array([3, 0, 13, 8], F32).reshape(1, 1, 1, 4),
                     np.array([0.03864474, 0.0, EXPF_LOW, 0.0], F32).reshape(1, 4, 1, 1),
                     np.full((1, 1, 1, 1), 0.9, F32)),
                    {"min_size": 0.0, "nms_threshold": 0.7, "pre_nms_count": 1, "post_nms_count": 1, "normalized": 0}),
    Divergence("ov-generateproposals-empty-rejected", "openvino-cpu", "rejects", "no image or no anchor rejected",
               "With a batch of 0 images or no anchor position (A * H * W = 0) the CPU plugin raises (a Convert "
               "of rois_num cannot get static dims); the dialect outputs no rois and a count of 0 per image.",
               _no_proposals, Case("example", (_EMPTY.inputs[0][:0], _EMPTY.inputs[1], _EMPTY.inputs[2][:0],
                                               _EMPTY.inputs[3][:0]), _EMPTY.attributes)),
)


UNIT = DialectUnit(
    op_type=OP, family="detection",
    open_order="proposals of equal scores may come in any order",
    specs=(OpSpec(OP, 9, (Port("im_info", "T"), Port("anchors", "T"), Port("deltas", "T"), Port("scores", "T")),
                  (Port("rois", "T"), Port("roi_scores", "T"), Port("rois_num", "I")),
                  (Attribute("min_size", "float", REQUIRED), Attribute("nms_threshold", "float", REQUIRED),
                   Attribute("pre_nms_count", "int", REQUIRED), Attribute("post_nms_count", "int", REQUIRED),
                   flag("normalized", 1), Attribute("nms_eta", "float", 1.0),
                   Attribute("roi_num_type", "string", "i64", ROI_NUM_TYPES)),
                  {"T": TYPES, "I": (np.dtype(np.int64), np.dtype(np.int32))}, generate_proposals,   # default first
                  doc="Batched RPN proposals: refine, top-n, NMS per image; rois per image counted.",
                  infer=_infer),),
    openvino=OpenVINO(
        OP, versions=(9,), factory=native("opset9", OP),
        attributes=(AttributeMap("min_size", "float"), AttributeMap("nms_threshold", "float"),
                    AttributeMap("pre_nms_count", "int"), AttributeMap("post_nms_count", "int"),
                    AttributeMap("normalized", "bool"), AttributeMap("nms_eta", "float"),
                    AttributeMap("roi_num_type", "lower")),
        output_shapes=lambda i, a: [None, None, (np.shape(i["scores"])[0],)]),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("greedy NMS with the +1 pixel and per-image top-n has no exact standard ONNX equivalent"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torchvision's RPN is not exported through the dialect"),
    divergences=DIVERGENCES,
    benchmark=Absent("not benchmarked"),
    pyop_outputs=lambda inputs: (inputs[0], inputs[0], np.dtype(np.int64)),
    pyop_casts=_pyop_casts,
)
