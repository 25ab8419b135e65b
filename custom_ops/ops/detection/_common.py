"""Pieces the detection units share: attribute declarations, output type inference, OpenVINO node building, the
ROI align ops' input checks and sample clamping, benchmark boxes."""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops._types import NUMPY_TO_ONNX
from custom_ops.errors import OpError
from custom_ops.unit import Attribute, AttributeMap

F32 = (np.dtype(np.float32),)
INDEX_TYPES = (np.dtype(np.int32), np.dtype(np.int64))
FLOAT = NUMPY_TO_ONNX[np.dtype(np.float32)]   # the ONNX element type code
#: Float element types of the detection ops' tensors (OpenVINO's reference is templated on them).
FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def flag(name: str, default: int) -> Attribute:
    return Attribute(name, "int", default, (0, 1))


def bool_map(*names: str) -> tuple[AttributeMap, ...]:
    return tuple(AttributeMap(name, "bool") for name in names)


def maps(kind: str, *names: str) -> tuple[AttributeMap, ...]:
    return tuple(AttributeMap(name, kind) for name in names)


def output_type(elem_type: int | None = None, shape=None, like: int = 0):
    """ONNX inference: output 0 of element type `elem_type` (an onnx.TensorProto code; None: input
    `like`'s type) and `shape` (None entries unknown; None: unknown rank)."""
    def infer(ctx) -> None:
        from onnx import helper
        code = elem_type if elem_type is not None else ctx.get_input_type(like).tensor_type.elem_type
        ctx.set_output_type(0, helper.make_tensor_type_proto(code, shape))
    return infer


def native(opset: str, type_name: str, inputs_used: int | None = None):
    """An OpenVINO node factory through openvino's NodeFactory (the opset builders' Python-side checks
    refuse values OpenVINO's IR accepts, e.g. offset 0)."""
    def factory(ov, inputs, attributes):
        from openvino.utils.node_factory import NodeFactory
        used = [i for i in inputs if i is not None] if inputs_used is None else inputs[:inputs_used]
        outputs = [i.output(0) if hasattr(i, "output") else i for i in used]   # a Node or an Output
        return NodeFactory(opset).create(type_name, outputs, attributes)
    return factory


def index_pyop_casts(attributes: dict):
    """NMS ops with an output_type attribute: the PyOp computes int64 index outputs (1 and 2); an asked i32 is
    a Cast after it."""
    casts = {1: np.dtype(np.int32), 2: np.dtype(np.int32)} if attributes["output_type"] == "i32" else {}
    return dict(attributes, output_type="i64"), casts


def nms_inputs(op: str, boxes, scores, box_size: int, scalars) -> tuple:
    """The checked inputs of the [N, M, box_size]-boxes NMS ops: f32 boxes and scores [N, C, M], and the scalar
    inputs `scalars` ((name, value, kinds), ...; kinds: numpy dtype kinds) as a dict of Python numbers."""
    boxes, scores = check.as_array(op, "boxes", boxes), check.as_array(op, "scores", scores)
    for name, array in (("boxes", boxes), ("scores", scores)):
        check.data_type(op, name, array, (np.dtype(np.float32),))
    if boxes.ndim != 3 or boxes.shape[2] != box_size:
        raise OpError(op, "input 'boxes'", f"must have shape [N, M, {box_size}]", value=boxes.shape)
    if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise OpError(op, "input 'scores'", "must have shape [N, C, M] (N and M of boxes)", value=scores.shape)
    values = {}
    for name, value, kinds in scalars:
        value = check.as_array(op, name, value)
        if value.size != 1 or value.ndim > 1 or value.dtype.kind not in kinds:
            raise OpError(op, f"input '{name}'", "must be a one-element " + ("integer" if kinds == "iu" else "float")
                          + " tensor", value=f"{value.dtype}{list(value.shape)}")
        values[name] = value.reshape(()).item()
    return boxes, scores, values


def attribute_value(ctx, name: str, default=None):
    """ONNX inference: the node's attribute `name` (`default` when absent)."""
    from onnx import helper
    proto = ctx.get_attribute(name)
    return helper.get_attribute_value(proto) if proto is not None else default


def index_type_code(ctx, name: str) -> int:
    """ONNX inference: the element type code an index-type attribute ("i32" / "i64", default i64) names."""
    from onnx import TensorProto
    value = attribute_value(ctx, name, b"i64")
    return TensorProto.INT32 if (value.decode() if isinstance(value, bytes) else value) == "i32" else TensorProto.INT64


def selected_pyop_casts(attributes: dict):
    """NMS ops with selected_indices [?, 3] and valid_outputs outputs (0 and 2) in output_type: the PyOp computes
    them int64; an asked i32 is a Cast after it."""
    casts = {0: np.dtype(np.int32), 2: np.dtype(np.int32)} if attributes["output_type"] == "i32" else {}
    return dict(attributes, output_type="i64"), casts


def selected_infer(ctx) -> None:
    """Shape inference of those ops: selected_indices [?, 3] in output_type, selected_scores [?, 3] f32,
    valid_outputs [1] in output_type."""
    from onnx import TensorProto, helper
    code = index_type_code(ctx, "output_type")
    ctx.set_output_type(0, helper.make_tensor_type_proto(code, [None, 3]))
    ctx.set_output_type(1, helper.make_tensor_type_proto(TensorProto.FLOAT, [None, 3]))
    ctx.set_output_type(2, helper.make_tensor_type_proto(code, [1]))


def nms_infer(ctx, boxes_like_input: bool) -> None:
    """Shape inference of the NMS ops: selected [?, 6] (f32, or the boxes' type), indices [?, 1] and
    counts [?] in output_type."""
    from onnx import TensorProto, helper
    code = index_type_code(ctx, "output_type")
    known = ctx.get_input_type(0) if boxes_like_input else None
    elem = known.tensor_type.elem_type if known is not None else TensorProto.FLOAT
    if known is not None or not boxes_like_input:
        ctx.set_output_type(0, helper.make_tensor_type_proto(elem, [None, 6]))
    ctx.set_output_type(1, helper.make_tensor_type_proto(code, [None, 1]))
    ctx.set_output_type(2, helper.make_tensor_type_proto(code, [None]))


def nms_factory(opset: str, type_name: str, box_size: int = 4):
    """The native node factory of the [N, M, box_size]-boxes NMS ops: the CPU plugin needs the box dimension
    static, so a box input whose last dim is dynamic gets a Reshape to [N, M, box_size] stating it."""
    def factory(ov, inputs, attributes):
        from openvino.utils.node_factory import NodeFactory
        used = [i.output(0) if hasattr(i, "output") else i for i in inputs if i is not None]
        shape = used[0].get_partial_shape()
        if shape.rank.is_static and shape[-1].is_dynamic:
            used[0] = ov.opset1.reshape(used[0], ov.op.Constant(np.array([0, 0, box_size], np.int64)), True).output(0)
        return NodeFactory(opset).create(type_name, used, attributes)
    return factory


def nms_case_inputs(r: np.random.Generator, empty: bool) -> tuple[np.ndarray, np.ndarray]:
    """Generated boxes [N, M, 4] (corner + size, or all of area 0 with `empty`) and distinct scores
    [N, C, M] for the NMS units' cases."""
    batch, classes, count = int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 8))
    corner = r.uniform(0, 10, (batch, count, 2))
    boxes = np.concatenate([corner, corner + r.uniform(0.5, 6, (batch, count, 2))], -1)
    if empty:
        boxes[..., 2:] = boxes[..., :2] - 1.0
    scores = r.permutation(batch * classes * count).reshape(batch, classes, count) / (batch * classes * count)
    return boxes, scores

def greedy_nms(count: int, suppresses, limit: int | None = None, block: int = 64) -> np.ndarray:
    """Greedy NMS over candidates 0..count-1, best first: the kept positions, in order (at most `limit`).

    suppresses(kept, candidates) -> bool [len(kept), len(candidates)]: whether a kept box removes a candidate
    (e.g. IoU > threshold), on position arrays. A candidate is kept when no earlier kept box removes it; the
    same result as the one-box-at-a-time loop, with the overlaps computed a block at a time: each block is
    checked against the boxes kept before it at once, then against itself, so only kept x candidates and
    in-block pairs are ever computed."""
    kept: list[int] = []
    limit = count if limit is None else limit
    for start in range(0, count, block):
        if len(kept) >= limit:
            break
        candidates = np.arange(start, min(start + block, count))
        if kept:
            candidates = candidates[~suppresses(np.asarray(kept), candidates).any(axis=0)]
        if not candidates.size:
            continue
        # the in-block pass on bit masks (Python ints: bit j of row r = r removes candidate j; only the bits
        # after r are read later)
        packed = np.packbits(suppresses(candidates, candidates), axis=1, bitorder="little")
        alive = (1 << candidates.size) - 1
        for row, candidate in enumerate(candidates.tolist()):
            if alive >> row & 1:
                kept.append(candidate)
                if len(kept) >= limit:
                    break
                alive &= ~int.from_bytes(packed[row].tobytes(), "little")
    return np.asarray(kept, np.int64)


#: Rounding slack of the x sweep (x_sweep): relative to |x2| + norm (float32's rounding is 6e-8) and absolute.
SWEEP_SLACK, SWEEP_FLOOR = 1e-5, 1e-30


def x_sweep(boxes, norm: float):
    """Pairs (a, b) of boxes [K, 4] (finite), each pair once, a superset of those whose x sides overlap by the
    IoU's float32 test (min(x2) - max(x1) + norm > 0): by x1 ascending, b after a while x1[b] <= x2[a] + norm
    + a slack above the test's two roundings. Returns (by x1, how many b follow each a)."""
    by_x1 = np.argsort(boxes[:, 0], kind="stable")
    x1, x2 = boxes[by_x1, 0].astype(np.float64), boxes[by_x1, 2].astype(np.float64)
    reach = x2 + norm + SWEEP_SLACK * (np.abs(x2) + norm) + SWEEP_FLOOR
    after = np.arange(1, len(x1) + 1)
    return by_x1, np.maximum(np.searchsorted(x1, reach, side="right"), after) - after


def swept_pairs(follow):
    """The pairs (lead, trail) x_sweep found, as positions in its x1 order (lead first)."""
    lead = np.repeat(np.arange(len(follow)), follow)
    shift = np.cumsum(follow) - follow - np.arange(1, len(follow) + 1)       # trail = pair number - shift[lead]
    return lead, np.arange(lead.size) - np.repeat(shift, follow)


def swept_candidates(boxes, orders, norm: float, most_pairs: int):
    """The candidates of all classes of one image (`orders`: each class's box indices) swept along x
    (x_sweep with `norm`): (their box indices, their boxes, the swept pairs as positions in those boxes: lead
    first), or None where a candidate is not finite or the sweep finds more than `most_pairs` pairs (then the
    per-class form is less work)."""
    union = np.unique(np.concatenate(orders))
    chosen = boxes[union]
    if not np.isfinite(chosen).all():
        return None
    by_x1, follow = x_sweep(chosen, norm)
    if int(follow.sum()) > most_pairs:
        return None
    lead, trail = swept_pairs(follow)
    return union, chosen, by_x1[lead], by_x1[trail]


def stable_argsort_head(keys, count: int | None) -> np.ndarray:
    """np.argsort(keys, kind="stable")[:count] of float keys [K]: where count is below K, the keys up to the
    count-th smallest from a partition and only those sorted (ties at the cut: the lower indices, as the
    stable sort; a NaN cut, i.e. NaN keys in the head, the full sort)."""
    if count is None or count >= keys.size:
        return np.argsort(keys, kind="stable")[:count]
    if count <= 0:
        return np.zeros(0, np.int64)
    cut = np.partition(keys, count - 1)[count - 1]
    if np.isnan(cut):
        return np.argsort(keys, kind="stable")[:count]
    below = np.flatnonzero(keys < cut)
    chosen = np.sort(np.concatenate([below, np.flatnonzero(keys == cut)[:count - below.size]]))
    return chosen[np.argsort(keys[chosen], kind="stable")]


#: Most swept pairs swept_greedy_nms takes on: in all (their tests are arrays of this size) and per candidate
#: (greedy_nms's blocks test up to a block of 64 pairs per candidate: with more, measured, they are the less work).
MOST_SWEPT_PAIRS, SWEPT_PAIRS_PER_BOX = 1 << 18, 48


def greedy_by_edges(count: int, early, late) -> np.ndarray:
    """Greedy NMS of candidates 0..count-1 (best first) given every suppressing pair (early, late: positions,
    early before late): the positions kept. Taken by early position, each candidate's fate is settled before
    its edges are read (only an earlier candidate removes it); a removed candidate's edges are skipped, so heavy
    overlap (many edges, few kept) is few steps."""
    by_early = np.argsort(early, kind="stable")
    sources, starts = np.unique(early[by_early], return_index=True)
    ends = np.append(starts[1:], by_early.size)
    late = late[by_early].tolist()
    removed = [False] * count
    for source, start, end in zip(sources.tolist(), starts.tolist(), ends.tolist()):
        if not removed[source]:
            for target in late[start:end]:
                removed[target] = True
    return np.flatnonzero(~np.array(removed, bool))


def swept_greedy_nms(boxes, norm: float, suppresses, limit: int | None = None):
    """greedy_nms of the boxes [K, 4] (x1, y1, x2, y2; best first) for a test that can hold only where the x
    sides overlap (min(x2) - max(x1) + norm > 0, as x_sweep), from the pairs of one x sweep:
    suppresses(early, late) -> bool per pair (position arrays, early before late, elementwise). With `limit`,
    a prefix of the candidates first, 4x longer while it keeps fewer (the kept of a prefix are the first kept of
    all; the pairs grow with the prefix squared). None where a box is not finite or there are more pairs than
    the limits above (then greedy_nms's blocks)."""
    if not np.isfinite(boxes).all():
        return None
    total = len(boxes)
    size = total if limit is None else min(total, max(limit + limit // 4, 64))
    while True:
        by_x1, follow = x_sweep(boxes[:size], norm)
        if int(follow.sum()) > min(MOST_SWEPT_PAIRS, SWEPT_PAIRS_PER_BOX * size):
            return None
        lead, trail = swept_pairs(follow)
        first, second = by_x1[lead], by_x1[trail]
        early, late = np.minimum(first, second), np.maximum(first, second)
        hit = suppresses(early, late)
        kept = greedy_by_edges(size, early[hit], late[hit])
        if size == total or len(kept) >= limit:
            return kept if limit is None else kept[:limit]
        size = min(total, 4 * size)


def greedy_nms_of_pairs(boxes, norm: float, threshold, suppresses, limit: int | None = None) -> np.ndarray:
    """Greedy NMS of the boxes [K, 4] (best first) for an elementwise pair test suppresses(early, late) (position
    arrays, broadcast) of the form IoU > threshold, an IoU needing an x overlap (min(x2) - max(x1) + norm > 0):
    from one x sweep (swept_greedy_nms) unless the threshold is negative (an IoU of 0 then suppresses too) or
    the sweep declines, else greedy_nms's blocks. The kept positions, at most `limit`."""
    kept = swept_greedy_nms(boxes, norm, suppresses, limit) if not threshold < 0 else None
    if kept is None:
        kept = greedy_nms(len(boxes), lambda k, c: suppresses(k[:, None], c[None, :]), limit)
    return kept


def same_type_arrays(op: str, named: tuple, types) -> list:
    """`named` ((input name, value), ...) as arrays: the first of one of `types`, the others of its element
    type."""
    arrays = [check.as_array(op, name, value) for name, value in named]
    first = named[0][0]
    check.data_type(op, first, arrays[0], types)
    owner = f"{first}'" if first.endswith("s") else f"{first}'s"
    for (name, _), array in zip(named[1:], arrays[1:]):
        if array.dtype != arrays[0].dtype:
            raise OpError(op, f"input '{name}'", f"element type must equal {owner}", value=str(array.dtype),
                          allowed=str(arrays[0].dtype))
    return arrays


def roi_align_inputs(op: str, data, rois, batch_indices, types, box_size: int, box_text: str):
    """The checked inputs of the ROI align ops: a feature map [N, C, H, W] of one of `types`, boxes [R, box_size]
    of its element type (finite) and batch indices [R] (i32/i64) in [0, N - 1]."""
    data = check.as_array(op, "input", data)
    rois = check.as_array(op, "rois", rois)
    indices = check.as_array(op, "batch_indices", batch_indices)
    check.data_type(op, "input", data, types)
    check.data_type(op, "batch_indices", indices, INDEX_TYPES)
    if rois.dtype != data.dtype:
        raise OpError(op, "input 'rois'", "element type must equal input's", value=str(rois.dtype),
                      allowed=str(data.dtype))
    if data.ndim != 4:
        raise OpError(op, "input 'input'", "must have rank 4 [N, C, H, W]", value=data.shape)
    if rois.ndim != 2 or rois.shape[1] != box_size:
        raise OpError(op, "input 'rois'", f"must have shape {box_text}", value=rois.shape)
    if indices.shape != rois.shape[:1]:
        raise OpError(op, "input 'batch_indices'", "must be 1-D of size R", value=indices.shape,
                      allowed=rois.shape[:1])
    if indices.size and (indices.min() < 0 or indices.max() >= data.shape[0]):
        bad = indices[(indices < 0) | (indices >= data.shape[0])][0]
        raise OpError(op, "input 'batch_indices'", "out of range", value=int(bad), allowed=f"[0, {data.shape[0] - 1}]")
    return data, rois, indices


def roi_align_attributes(op: str, rois, pooled_h, pooled_w, sampling_ratio) -> None:
    """pooled_h, pooled_w >= 1, sampling_ratio >= 0, finite boxes."""
    for name, value in (("pooled_h", pooled_h), ("pooled_w", pooled_w)):
        if int(value) < 1:
            raise OpError(op, f"attribute '{name}'", "must be positive", value=int(value), allowed=">= 1")
    if int(sampling_ratio) < 0:
        raise OpError(op, "attribute 'sampling_ratio'", "must not be negative", value=int(sampling_ratio))
    if not np.isfinite(rois).all():
        raise OpError(op, "input 'rois'", "must be finite", value="inf/nan")


def clamp_sample(position, size: int):
    """A sample coordinate inside [-1, size] -> (low, high, position) of one axis, clamped to the map as the
    ROI align references do."""
    position = np.maximum(position, 0)
    low = np.floor(position).astype(np.int64)
    last = low >= size - 1
    low = np.where(last, size - 1, low)
    return low, np.where(last, low, low + 1), np.where(last, low.astype(position.dtype), position)


def pooled_output_shapes(boxes: str):
    """output_shapes of the ROI pooling units: one [boxes' rows, input channels, pooled_h, pooled_w] output."""
    def output_shapes(inputs: dict, attributes: dict) -> list:
        return [(np.shape(inputs[boxes])[0], np.shape(inputs["input"])[1], attributes["pooled_h"],
                 attributes["pooled_w"])]
    return output_shapes


def image_boxes(rng: np.random.Generator, count: int) -> np.ndarray:
    """Benchmark boxes [count, 4] (x1, y1, x2, y2, float64) uniform over an 800 x 600 image."""
    corners = rng.uniform(0, 1, (count, 4)) * np.array([800, 600, 800, 600])
    return np.concatenate([np.minimum(corners[:, :2], corners[:, 2:]),
                           np.maximum(corners[:, :2], corners[:, 2:])], axis=1)
