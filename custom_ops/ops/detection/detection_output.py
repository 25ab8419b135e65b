"""DetectionOutput-1/-8 (OpenVINO): SSD post-processing (decode the boxes against the priors, per-class
greedy NMS, keep the best) in OpenVINO's reference semantics.

Inputs: box_logits [N, P * L * 4] (L = 1 with share_location, else C classes), class_preds [N, P * C],
proposals [1 or N, 1 or 2, P * S] (S = 4 when normalized, else 5 with a leading batch-id column;
the second row holds the variances unless variance_encoded_in_target), optional aux_class_preds
[N, P * 2] and aux_box_preds (same shape as box_logits) of the two-stage (RefineDet) variant.
Output [1, 1, R, 7] rows (image, label, score, xmin, ymin, xmax, ymax); after the last detection a row
starting with -1, zeros after it. R = N * keep_top_k[0] if keep_top_k[0] > 0, else N * top_k * C if
keep_top_k[0] == -1 and top_k > 0, else N * P * C. Version 1 takes num_classes as an attribute,
version 8 reads C from class_preds.

Order: per image, labels ascending; per label the NMS order (score descending, prior index ascending
on ties). Caffe style (decrease_label_id=0): per class, scores > confidence_threshold, best top_k,
greedy NMS (a box is dropped when its IoU with a kept box exceeds nms_threshold); MXNet style: per
prior its best non-background class (score >= confidence_threshold), best top_k over all, NMS per
class, labels written minus one. Then keep_top_k[0] best over all classes (equal scores of one prior in
two classes at that cut: the lower class first; the reference leaves that order to std::sort).
Arithmetic in the input type, in the reference's order; exp correctly rounded (glibc's expf on the CPU plugin
is not: a declared divergence).
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import (REQUIRED, Absent, Attribute, Benchmark, BenchmarkCase, Case, DialectUnit, Divergence,
                             OpenVINO, OpSpec, Port)

from .._libm import changes_with_c_libm, expf
from ._common import bool_map, flag, greedy_nms_of_pairs, maps, native, output_type, stable_argsort_head

OP = "DetectionOutput"
TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
CODE_TYPES = ("caffe.PriorBoxParameter.CORNER", "caffe.PriorBoxParameter.CENTER_SIZE")
PORTS = ("box_logits", "class_preds", "proposals", "aux_class_preds", "aux_box_preds")

DEFAULTS = dict(background_label_id=0, top_k=-1, variance_encoded_in_target=0, keep_top_k=(-1,),
                code_type=CODE_TYPES[0], share_location=1, nms_threshold=0.0, confidence_threshold=0.0,
                clip_after_nms=0, clip_before_nms=0, decrease_label_id=0, normalized=0, input_height=1,
                input_width=1, objectness_score=0.0)


def validate_attributes(a: dict, num_classes: int | None) -> dict:
    a = {**DEFAULTS, **a}
    for name in ("variance_encoded_in_target", "share_location", "clip_after_nms", "clip_before_nms",
                 "decrease_label_id", "normalized"):
        a[name] = check.flag(OP, name, a[name])
    a["code_type"] = check.choice(OP, "code_type", a["code_type"], CODE_TYPES)
    keep = [int(k) for k in np.atleast_1d(a["keep_top_k"])]
    if not keep:
        raise OpError(OP, "attribute 'keep_top_k'", "must have at least one value", value=keep)
    a["keep_top_k"] = keep[0]
    for name in ("background_label_id", "top_k", "input_height", "input_width"):
        a[name] = int(a[name])
    if not a["normalized"] and (a["input_height"] <= 0 or a["input_width"] <= 0):
        raise OpError(OP, "attribute 'input_height'/'input_width'", "must be positive when normalized=0",
                      value=(a["input_height"], a["input_width"]), allowed="> 0")
    if num_classes is not None and int(num_classes) < 1:
        raise OpError(OP, "attribute 'num_classes'", "must be positive", value=num_classes, allowed=">= 1")
    return a


def _inputs(box_logits, class_preds, proposals, aux_class_preds, aux_box_preds, a, num_classes):
    arrays = {name: (None if value is None else check.as_array(OP, name, value))
              for name, value in zip(PORTS, (box_logits, class_preds, proposals, aux_class_preds, aux_box_preds))}
    loc, conf, priors = arrays["box_logits"], arrays["class_preds"], arrays["proposals"]
    check.data_type(OP, "box_logits", loc, TYPES)
    for name, array in arrays.items():
        if array is not None and array.dtype != loc.dtype:
            raise OpError(OP, f"input '{name}'", "element type must equal box_logits'", value=str(array.dtype),
                          allowed=str(loc.dtype))
    if (arrays["aux_class_preds"] is None) != (arrays["aux_box_preds"] is None):
        raise OpError(OP, "input 'aux_box_preds'", "aux_class_preds and aux_box_preds come together",
                      value="one of them absent")
    for name, rank in (("box_logits", 2), ("class_preds", 2), ("proposals", 3)):
        if arrays[name].ndim != rank:
            raise OpError(OP, f"input '{name}'", f"must have rank {rank}", value=arrays[name].shape)
    n = loc.shape[0]
    size = 4 if a["normalized"] else 5
    rows = 1 if a["variance_encoded_in_target"] else 2
    if priors.shape[0] not in (1, n) or priors.shape[1] != rows or priors.shape[2] % size:
        raise OpError(OP, "input 'proposals'", f"must have shape [1 or N, {rows}, P * {size}]",
                      value=priors.shape, allowed=f"N = {n}")
    p = priors.shape[2] // size
    if num_classes is None:
        if p == 0 or conf.shape[1] % p:
            raise OpError(OP, "input 'class_preds'", "size must be a multiple of the number of priors",
                          value=conf.shape, allowed=f"P = {p}")
        num_classes = conf.shape[1] // p
    c = int(num_classes)
    groups = 1 if a["share_location"] else c
    expect = {"box_logits": (n, p * groups * 4), "class_preds": (n, p * c), "aux_class_preds": (n, p * 2),
              "aux_box_preds": (n, p * groups * 4)}
    for name, shape in expect.items():
        if arrays[name] is not None and arrays[name].shape != shape:
            raise OpError(OP, f"input '{name}'", "shape does not match the priors and classes", value=
                          arrays[name].shape, allowed=shape)
    if not -1 <= a["background_label_id"] < c:
        raise OpError(OP, "attribute 'background_label_id'", "out of range", value=a["background_label_id"],
                      allowed=f"[-1, {c - 1}]")
    return arrays, n, p, c, groups


def _decode(prior, variance, loc, a, t):
    """Boxes [..., 4] decoded from the priors [P, 4] and the variances [P, 4] (None: encoded in target)."""
    px0, py0, px1, py1 = (prior[:, k] for k in range(4))
    if not a["normalized"]:
        w, h = t.type(a["input_width"]), t.type(a["input_height"])
        px0, py0, px1, py1 = px0 / w, py0 / h, px1 / w, py1 / h
    lx0, ly0, lx1, ly1 = (loc[..., k] for k in range(4))
    if variance is not None:
        lx0, ly0, lx1, ly1 = (variance[:, k] * v for k, v in enumerate((lx0, ly0, lx1, ly1)))
    if a["code_type"] == CODE_TYPES[0]:
        out = np.stack([px0 + lx0, py0 + ly0, px1 + lx1, py1 + ly1], axis=-1)
    else:
        pw, ph = px1 - px0, py1 - py0
        pcx, pcy = (px0 + px1) / t.type(2), (py0 + py1) / t.type(2)
        cx, cy = lx0 * pw + pcx, ly0 * ph + pcy                   # (variance * loc) * size + centre
        bw = _exp(lx1, t) * pw
        bh = _exp(ly1, t) * ph
        out = np.stack([cx - bw / t.type(2), cy - bh / t.type(2), cx + bw / t.type(2), cy + bh / t.type(2)],
                       axis=-1)
    if a["clip_before_nms"]:
        out = np.maximum(t.type(0), np.minimum(t.type(1), out))
    return out.astype(t)


def _exp(x, t):
    """exp correctly rounded to the type (float32: _libm.expf; see the expf divergence)."""
    if t == np.float32:
        return expf(x)
    with np.errstate(over="ignore"):
        return np.exp(x.astype(np.float64)).astype(t) if t != np.float64 else np.exp(x)


def _area(b, t):
    w, h = b[..., 2] - b[..., 0], b[..., 3] - b[..., 1]
    return np.where((b[..., 2] < b[..., 0]) | (b[..., 3] < b[..., 1]), t.type(0), w * h)


def _iou(a, b, t, area_a, area_b):
    """IoU of the boxes a [4, ...] and b [4, ...] (corner rows x1, y1, x2, y2; broadcast, their areas too), as
    the reference's JaccardOverlap."""
    with np.errstate(divide="ignore", invalid="ignore"):     # (boxes apart give iw or ih < 0: no separate test)
        iw = np.minimum(a[2], b[2]) - np.maximum(a[0], b[0])
        ih = np.minimum(a[3], b[3]) - np.maximum(a[1], b[1])
        inter = iw * ih
        iou = inter / ((area_a + area_b) - inter)
    return np.where((iw > 0) & (ih > 0), iou, t.type(0))


def _ranked(scores, keep, limit=None):
    """Indices of `keep` (bool mask) by score descending, index ascending on ties: the first `limit` (None:
    all)."""
    index = np.flatnonzero(keep)
    return index[stable_argsort_head(-scores[index].astype(np.float64), limit)]


def _nms(boxes, order, threshold, t):
    """Greedy NMS over the candidates `order` (best first): the kept indices, in order (an IoU needs iw > 0:
    greedy_nms_of_pairs)."""
    order = np.asarray(order, np.int64)
    box = boxes[order]
    area = _area(box, t)
    corners = np.ascontiguousarray(box.T)               # [4, K]: np.take along its rows is the fast gather

    def suppresses(k, c):
        return _iou(np.take(corners, k, axis=1), np.take(corners, c, axis=1), t, area.take(k), area.take(c)) \
            > threshold

    return order[greedy_nms_of_pairs(box, 0.0, threshold, suppresses)]


def detection_output(box_logits, class_preds, proposals, aux_class_preds=None, aux_box_preds=None, *,
                     num_classes=None, **attributes):
    a = validate_attributes(attributes, num_classes)
    arrays, n, p, c, groups = _inputs(box_logits, class_preds, proposals, aux_class_preds, aux_box_preds, a,
                                      num_classes)
    t = arrays["box_logits"].dtype
    size = 4 if a["normalized"] else 5
    kt, top_k = a["keep_top_k"], a["top_k"]
    rows = n * kt if kt > 0 else n * top_k * c if (kt == -1 and top_k > 0) else n * p * c
    out = np.zeros((1, 1, rows, 7), t)

    loc = arrays["box_logits"].reshape(n, p, groups, 4)
    conf = arrays["class_preds"].reshape(n, p, c)
    priors = arrays["proposals"]
    two_stage = arrays["aux_class_preds"] is not None
    if two_stage:
        arm_conf = arrays["aux_class_preds"].reshape(n, p, 2)
        arm_loc = arrays["aux_box_preds"].reshape(n, p, groups, 4)
        background = np.arange(c) == a["background_label_id"]
        weak = arm_conf[:, :, 1] < t.type(a["objectness_score"])                      # [N, P]
        conf = np.where(weak[..., None], background.astype(t), conf)
    threshold = t.type(a["confidence_threshold"])
    nms_threshold = np.float32(a["nms_threshold"]).astype(t)
    count = 0
    for i in range(n):
        prior_batch = priors[i if priors.shape[0] > 1 else 0]
        prior = prior_batch[0].reshape(p, size)[:, size - 4:]
        # the variances are read 4 per prior even when the boxes take 5 values
        variance = None if a["variance_encoded_in_target"] else prior_batch[1, :p * 4].reshape(p, 4)
        boxes = {}
        for g in range(groups):
            label = -1 if a["share_location"] else g
            if a["background_label_id"] > -1 and label == a["background_label_id"]:
                continue
            base = prior
            if two_stage:
                base = _decode(prior, variance, arm_loc[i, :, g], a, t)
            boxes[label] = _decode(base, variance, loc[i, :, g], a, t)
        scores = conf[i]                                                               # [P, C]
        kept: dict[int, list[int]] = {}
        if not a["decrease_label_id"]:
            for label in range(c):
                if label == a["background_label_id"] or (-1 if a["share_location"] else label) not in boxes:
                    continue
                order = _ranked(scores[:, label], scores[:, label] > threshold, top_k if top_k > -1 else None)
                kept[label] = _nms(boxes[-1 if a["share_location"] else label], order, nms_threshold, t)
        else:
            kept = _mxnet_nms(scores, boxes, a, threshold, nms_threshold, t)
        labels, index = _detections(kept)
        if kt > -1 and index.size > kt:
            best = np.lexsort((index, -scores[index, labels].astype(np.float64)))[:kt]
            best = best[np.argsort(labels[best], kind="stable")]          # by label, each in the order above
            labels, index = labels[best], index[best]
        box = _kept_boxes(boxes, labels, index, a["share_location"])
        if a["clip_after_nms"]:
            box = np.maximum(t.type(0), np.minimum(t.type(1), box))
        block = out[0, 0, count:count + index.size]
        block[:, 0] = i
        block[:, 1] = labels - 1 if a["decrease_label_id"] else labels
        block[:, 2] = scores[index, labels]
        block[:, 3:] = box
        count += index.size
    if count < rows:
        out[0, 0, count, 0] = -1
    return out


def _detections(kept: dict):
    """The kept detections (label -> prior indices) as (labels, prior indices), labels ascending."""
    labels = sorted(kept)
    if not labels:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return (np.repeat(np.array(labels, np.int64), [len(kept[label]) for label in labels]),
            np.concatenate([np.asarray(kept[label], np.int64) for label in labels]))


def _kept_boxes(boxes: dict, labels, index, shared: bool):
    """The boxes [K, 4] of the detections (labels, prior indices): boxes[-1] shared, else boxes[label]."""
    if shared:
        return boxes[-1][index]
    out = np.empty((index.size, 4), boxes[next(iter(boxes))].dtype if boxes else np.float64)
    for label in np.unique(labels).tolist():
        rows = labels == label
        out[rows] = boxes[label][index[rows]]
    return out


def _mxnet_nms(scores, boxes, a, threshold, nms_threshold, t):
    """MXNet style: each prior's best class (1..C-1, not background), then NMS per class."""
    c = scores.shape[1]
    candidates = scores.copy()
    candidates[:, 0] = -np.inf
    if 0 < a["background_label_id"] < c:
        candidates[:, a["background_label_id"]] = -np.inf
    best = np.full(scores.shape[0], t.type(-1))
    label = np.zeros(scores.shape[0], np.int64)
    for k in range(1, c):                                      # first strictly greater wins
        better = candidates[:, k] > best
        best = np.where(better, candidates[:, k], best)
        label = np.where(better, k, label)
    order = _ranked(best, (label > 0) & (best >= threshold))
    if a["top_k"] != -1:
        order = order[:a["top_k"]]
    # the greedy NMS of one class depends on that class's candidates alone (in the common order)
    return {int(cls): _nms(boxes[-1 if a["share_location"] else int(cls)], order[label[order] == cls],
                           nms_threshold, t)
            for cls in np.unique(label[order])}


# Unit -------------------------------------------------------------------------------------------------

def _kernel_v8(box_logits, class_preds, proposals, aux_class_preds=None, aux_box_preds=None, **attributes):
    return (detection_output(box_logits, class_preds, proposals, aux_class_preds, aux_box_preds, **attributes),)


def random_case(r: np.random.Generator, name: str) -> Case:
    """One random configuration: batch, priors, classes, both code types, shared or per-class boxes,
    normalised or pixel priors, variances in the priors or encoded, the two-stage inputs, both NMS styles."""
    n, p, c = int(r.integers(1, 3)), int(r.integers(1, 9)), int(r.integers(2, 5))
    a = dict(background_label_id=int(r.choice([0, -1, 1])), top_k=int(r.choice([-1, 2, 5])),
             keep_top_k=[int(r.choice([-1, 3, 6]))], code_type=str(r.choice(CODE_TYPES)),
             share_location=int(r.integers(4) > 0), nms_threshold=float(r.choice([0.3, 0.5, 0.7])),
             confidence_threshold=float(r.choice([0.0, 0.1, 0.3])), clip_after_nms=int(r.integers(2)),
             clip_before_nms=int(r.integers(2)), decrease_label_id=int(r.integers(5) == 0),
             normalized=int(r.integers(4) > 0), variance_encoded_in_target=int(r.integers(4) == 0))
    if not a["normalized"]:
        a["input_height"], a["input_width"] = int(r.integers(10, 100)), int(r.integers(10, 100))
    if a["decrease_label_id"]:
        a["background_label_id"], a["top_k"] = 0, -1     # MXNet ties at the top_k cut: a CPU divergence
    two_stage = r.integers(5) == 0
    if two_stage:
        a["objectness_score"] = float(r.choice([0.0, 0.3]))
    groups = 1 if a["share_location"] else c
    size, rows = (4 if a["normalized"] else 5), (1 if a["variance_encoded_in_target"] else 2)
    loc = r.normal(0, 0.5, (n, p * groups * 4))
    conf = r.random((n, p * c))
    if r.integers(2):
        conf = conf.round(1)                                  # ties
    centre, extent = r.random((p, 2)), r.uniform(0.05, 0.5, (p, 2))
    box = np.concatenate([centre - extent / 2, centre + extent / 2], axis=1)
    if not a["normalized"]:
        box = np.concatenate([np.zeros((p, 1)), box * np.array([a["input_width"], a["input_height"]] * 2)], 1)
    priors = np.zeros((int(r.choice([1, n])), rows, p * size))
    priors[:, 0] = box.reshape(-1)
    if rows == 2:
        priors[:, 1, :p * 4] = np.tile([0.1, 0.1, 0.2, 0.2], p)
    inputs = [loc, conf, priors]
    if two_stage:
        inputs += [r.random((n, p * 2)), r.normal(0, 0.3, (n, p * groups * 4))]
    return Case(name, tuple(np.asarray(x, np.float32) for x in inputs), a)


def cases(rng: np.random.Generator) -> list:
    """Random configurations whose output is filled to the last row: OpenVINO's CPU plugin leaves the
    rows after the -1 terminator uninitialised (a divergence; tests compare such outputs up to it)."""
    out = []
    for index in range(120):
        case = random_case(np.random.default_rng([int(rng.integers(1 << 30)), index]), f"detection_output_{index}")
        result = detection_output(*case.inputs, **case.attributes)
        if not (result[0, 0, :, 0] == -1).any():
            out.append(case)
    return out


def bad_cases() -> list:
    f32 = lambda v: np.array(v, np.float32)  # noqa: E731
    loc, conf, priors = f32(np.zeros((1, 8))), f32(np.zeros((1, 6))), f32(np.zeros((1, 2, 8)))
    a = {"keep_top_k": [2], "nms_threshold": 0.5, "normalized": 1}
    return [
        (Case("loc_size", (f32(np.zeros((1, 7))), conf, priors), a), "box_logits"),
        (Case("prior_rows", (loc, conf, f32(np.zeros((1, 1, 8)))), a), "proposals"),
        (Case("class_size", (loc, f32(np.zeros((1, 5))), priors), a), "class_preds"),
        (Case("code_type", (loc, conf, priors), {**a, "code_type": "caffe.PriorBoxParameter.CORNER_SIZE"}),
         "code_type"),
        (Case("background_id", (loc, conf, priors), {**a, "background_label_id": 3}), "background_label_id"),
        (Case("aux_alone", (loc, conf, priors, f32(np.zeros((1, 4))), None), a), "together"),
        (Case("int_inputs", (loc.astype(np.int32), conf.astype(np.int32), priors.astype(np.int32)), a),
         "element type"),
    ]


def _output_shapes(inputs: dict, attributes: dict) -> list:
    return [detection_output(*(inputs.get(p) for p in PORTS), **attributes).shape]


def _terminated(inputs, attributes) -> bool:
    try:
        out = detection_output(*(inputs.get(p) for p in PORTS), **attributes)
    except OpError:
        return False
    return bool((out[0, 0, :, 0] == -1).any())


def _priors(inputs, attributes) -> int:
    return np.shape(inputs["proposals"])[2] // (4 if attributes["normalized"] else 5)


def _expf_changes(inputs, attributes) -> bool:
    """Whether the C library's expf (OpenVINO's std::exp of float) changes the CENTER_SIZE output."""
    if attributes["code_type"] != CODE_TYPES[1]:
        return False
    try:
        return changes_with_c_libm(lambda: (detection_output(*(inputs.get(p) for p in PORTS), **attributes),))
    except OpError:
        return False


_EXAMPLE = (np.zeros((1, 8), np.float32), np.array([[0.1, 0.9, 0.8, 0.2]], np.float32),
            np.array([[[0, 0, .5, .5, .5, .5, 1, 1], [.1, .1, .2, .2, .1, .1, .2, .2]]], np.float32))
DIVERGENCES = (
    Divergence("ov-detectionoutput-tail-uninitialised", "openvino-cpu", "nondeterministic",
               "rows after the -1 row uninitialised",
               "The CPU plugin leaves the rows after the -1 terminator uninitialised; the reference and the "
               "dialect write zeros.", _terminated,
               Case("example", _EXAMPLE, {"keep_top_k": [5], "nms_threshold": 0.5, "normalized": 1})),
    Divergence("ov-detectionoutput-mxnet-ties", "openvino-cpu", "value", "MXNet style: ties at top_k ordered differently",
               "With decrease_label_id 1, priors tied in score at the top_k cut are ordered differently (the "
               "reference: lower prior index first; measured: 6 priors, top_k 5, two tied at 0.5).",
               lambda inputs, attributes: bool(attributes["decrease_label_id"]) and attributes["top_k"] != -1,
               Case("example", (np.zeros((1, 24), np.float32), np.array(
                   [[.1, .3, .6, 1., .4, .2, .1, .7, .2, .3, .5, .4, .3, .2, .7, .5, .2, .5, .4, .2, .9, .2, .9, .5]],
                   np.float32), np.array([[[0, 0, .2, .2, .4, .4, .6, .6, 0, .5, .2, .7, .7, 0, .9, .2, .5, .8, .7, 1,
                                             .8, .8, 1, 1]]], np.float32)),
                    {"keep_top_k": [6], "top_k": 5, "nms_threshold": 0.5, "decrease_label_id": 1, "normalized": 1,
                     "variance_encoded_in_target": 1})),
    Divergence("ov-detectionoutput-expf-last-bit", "openvino-cpu", "value", "exp not correctly rounded",
               "CENTER_SIZE decoding: the CPU plugin's std::exp of float (glibc's expf) is not correctly rounded "
               "for some size deltas (exp(0.44369903f) one ulp low); the contract rounds exp correctly: last-bit "
               "differences in a box coordinate (4 of 1459 generated configurations, each equal to OpenVINO with "
               "the C expf).", _expf_changes, random_case(np.random.default_rng(10), "example")),
    Divergence("ov-detectionoutput-keep-zero", "openvino-cpu", "rejects", "keep_top_k 0 with a large top_k refused",
               "keep_top_k 0 with top_k larger than the priors: the CPU plugin raises 'insufficient output buffer "
               "size' at run time; the reference returns no detection.",
               lambda inputs, attributes: attributes["keep_top_k"][0] == 0 and attributes["top_k"] > _priors(inputs, attributes),
               Case("example", _EXAMPLE, {"keep_top_k": [0], "nms_threshold": 0.5, "normalized": 1, "top_k": 5})),
)


def _ssd_inputs(priors: int):
    """SSD head outputs over `priors` random priors (3 classes, softmax-like scores)."""
    def inputs(rng):
        centers, sizes = rng.random((priors, 2)), rng.random((priors, 2)) * 0.2 + 0.05
        boxes = np.concatenate([centers - sizes / 2, centers + sizes / 2], 1).reshape(1, -1)
        proposals = np.stack([boxes, np.tile([0.1, 0.1, 0.2, 0.2], (1, priors))], 1).astype(np.float32)
        scores = rng.random((priors, 3)).astype(np.float32)
        return {"box_logits": (rng.standard_normal((1, priors * 4)) * 0.1).astype(np.float32),
                "class_preds": (scores / scores.sum(1, keepdims=True)).reshape(1, -1), "proposals": proposals}
    return inputs


def benchmark_cases(mode: str) -> list:
    """keep_top_k below the detections: the output is filled (OpenVINO leaves rows after the -1 uninitialised)."""
    priors, keep = {"full": (1917, 100), "quick": (1917, 100), "tiny": (20, 10)}[mode]
    return [BenchmarkCase(f"detection-output-{priors}", f"SSD {priors} priors, 3 classes, top_k 200, keep {keep}",
                          _ssd_inputs(priors),
                          {"top_k": 200, "keep_top_k": [keep], "code_type": CODE_TYPES[1], "nms_threshold": 0.45,
                           "confidence_threshold": 0.05, "normalized": 1}, constants=("proposals",))]


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 8, tuple(Port(p, "T", optional=i >= 3) for i, p in enumerate(PORTS)),
                  (Port("output", "T"),),
                  (Attribute("background_label_id", "int", 0), Attribute("top_k", "int", -1),
                   flag("variance_encoded_in_target", 0), Attribute("keep_top_k", "ints", REQUIRED),
                   Attribute("code_type", "string", CODE_TYPES[0], CODE_TYPES), flag("share_location", 1),
                   Attribute("nms_threshold", "float", REQUIRED), Attribute("confidence_threshold", "float", 0.0),
                   flag("clip_after_nms", 0), flag("clip_before_nms", 0), flag("decrease_label_id", 0),
                   flag("normalized", 0), Attribute("input_height", "int", 1), Attribute("input_width", "int", 1),
                   Attribute("objectness_score", "float", 0.0)),
                  {"T": TYPES}, _kernel_v8, doc="SSD detection output: decode, per-class NMS, keep the best.",
                  infer=output_type(None, [1, 1, None, 7])),),
    openvino=OpenVINO(
        "DetectionOutput", versions=(1, 8), factory=native("opset8", "DetectionOutput"),
        attributes=maps("int", "background_label_id", "top_k", "input_height", "input_width")
        + bool_map("variance_encoded_in_target", "share_location", "clip_after_nms", "clip_before_nms",
                   "decrease_label_id", "normalized")
        + maps("ints", "keep_top_k") + maps("string", "code_type")
        + maps("float", "nms_threshold", "confidence_threshold", "objectness_score"),
        output_shapes=_output_shapes,
        notes="DetectionOutput-1 is version 8 (its num_classes is class_preds' size / priors)"),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("decoding is standard arithmetic, but Caffe-style per-class NMS with top_k, keep_top_k "
                    "across classes and the [1, 1, R, 7] layout with a -1 terminator has no exact standard "
                    "equivalent (ONNX NonMaxSuppression orders and pads differently); not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torch has no DetectionOutput op"),
    divergences=DIVERGENCES,
    open_order="detections of equal confidence may come in any order",
    benchmark=Benchmark(benchmark_cases),
)
