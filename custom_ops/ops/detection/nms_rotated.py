"""NMSRotated-13 (OpenVINO): NMS of rotated boxes (x_ctr, y_ctr, w, h, angle in radians) per image and
class.

boxes [N, M, 5], scores [N, C, M] (float32), max_output_boxes_per_class, iou_threshold, score_threshold
(scalars). Per image and class: boxes with score > score_threshold by score descending (ties: lower box
index first), greedy: a candidate is dropped when its rotated IoU with a kept box (newest first) is >
iou_threshold; at most max_output_boxes_per_class kept. Rotated IoU as the reference (detectron2's):
float32 vertices (cos/sin in double), edge intersections and contained vertices, Graham convex hull,
shoelace area; 0 for an empty box. clockwise=0 negates the angle. Results in image, class order, or by
score descending (ties: image, class, box) with sort_result_descending. Outputs: selected_indices [K, 3]
(image, class, box) of output_type, selected_scores [K, 3] (image, class, score; float32), valid_outputs
[1] = K.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import (Absent, Attribute, AttributeMap, Benchmark, BenchmarkCase, Case, DialectUnit, OpenVINO,
                             OpSpec, Port)

from ._common import greedy_nms, nms_factory, nms_inputs, selected_infer, selected_pyop_casts

OP = "NMSRotated"
F = np.float32


def _libm(function, value) -> float:
    """cos/sin in double as C's: NaN for an infinite angle (Python's math raises there)."""
    value = float(value)
    return function(value) if math.isfinite(value) or math.isnan(value) else math.nan


def _vertices(boxes):
    """Corners [M, 4, 2] (float32) of boxes [M, 5]; cos/sin in double, as the reference."""
    boxes = np.asarray(boxes, F).reshape(-1, 5)
    x, y, w, h, a = (boxes[:, k] for k in range(5))
    cos2 = np.array([_libm(math.cos, v) for v in a], F).reshape(-1) * F(0.5)
    sin2 = np.array([_libm(math.sin, v) for v in a], F).reshape(-1) * F(0.5)
    p0 = (x - sin2 * h - cos2 * w, y + cos2 * h - sin2 * w)
    p1 = (x + sin2 * h - cos2 * w, y - cos2 * h - sin2 * w)
    corners = [p0, p1, (F(2) * x - p0[0], F(2) * y - p0[1]), (F(2) * x - p1[0], F(2) * y - p1[1])]
    return np.stack([np.stack(c, -1) for c in corners], 1)


def _cross(a, b):
    return a[0] * b[1] - b[0] * a[1]


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1]


def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1])


#: Edge i of box 1 and edge j of box 2 of the 16 edge pairs, i major (the reference's order); a corner's next.
_EDGE_1, _EDGE_2 = np.repeat(np.arange(4), 4), np.tile(np.arange(4), 4)
_NEXT = np.array([1, 2, 3, 0])


def _inside(x, y, rect_x, rect_y, vec_x, vec_y):
    """Which of the points (x, y [4, P]) lie in the rectangles (corners rect_x, rect_y [4, P], edges vec_x,
    vec_y): [4, P]."""
    ab, da = (vec_x[0], vec_y[0]), (vec_x[3], vec_y[3])
    ab_ab, ad_ad = _dot(ab, ab), _dot(da, da)
    ap = (x - rect_x[0], y - rect_y[0])
    ap_ab, ap_ad = _dot(ap, ab), -_dot(ap, da)
    return (ap_ab >= 0) & (ap_ad >= 0) & (ap_ab <= ab_ab) & (ap_ad <= ad_ad)


def _candidate_points(pts1, pts2):
    """The hull candidates of pairs of rectangles (corners [P, 4, 2] each), in the reference's order: edge
    intersections (edge i of 1 by edge j of 2), corners of 1 inside 2, corners of 2 inside 1.
    Returns points [P, 24, 2] and which are there [P, 24]; the same float32 operations, pair by pair, on
    arrays with the pairs last (contiguous [16, P] and [4, P]: numpy's loops then run over the pairs, not over
    rows of 2 or 4)."""
    x1, y1, x2, y2 = (np.ascontiguousarray(pts[..., axis].T) for pts in (pts1, pts2) for axis in (0, 1))
    vx1, vy1, vx2, vy2 = x1[_NEXT] - x1, y1[_NEXT] - y1, x2[_NEXT] - x2, y2[_NEXT] - y2
    e1, v1 = (x1[_EDGE_1], y1[_EDGE_1]), (vx1[_EDGE_1], vy1[_EDGE_1])      # edge i of 1: [16, P]
    e2, v2 = (x2[_EDGE_2], y2[_EDGE_2]), (vx2[_EDGE_2], vy2[_EDGE_2])      # edge j of 2
    det = _cross(v2, v1)
    v12 = _sub(e2, e1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = _cross(v2, v12) / det, _cross(v1, v12) / det
        at = (e1[0] + v1[0] * t1, e1[1] + v1[1] * t1)
    crossing = ~(np.abs(det) <= 1e-14) & (0 <= t1) & (t1 <= 1) & (0 <= t2) & (t2 <= 1)
    points = np.stack([np.concatenate([at[0], x1, x2]), np.concatenate([at[1], y1, y2])], -1).transpose(1, 0, 2)
    there = np.concatenate([crossing, _inside(x1, y1, x2, y2, vx2, vy2), _inside(x2, y2, x1, y1, vx1, vy1)]).T
    return np.ascontiguousarray(points), np.ascontiguousarray(there)


def _hull_area(points):
    """Area of the convex hull of the candidate points (tuples of float32), as the reference (Graham scan)."""
    if len(points) <= 2:
        return F(0)
    t = 0
    for i in range(1, len(points)):
        if points[i][1] < points[t][1] or (points[i][1] == points[t][1] and points[i][0] < points[t][0]):
            t = i
    start = points[t]
    q = [_sub(p, start) for p in points]
    q[0], q[t] = q[t], q[0]

    def order(a, b):
        temp = _cross(a, b)
        if abs(temp) < 1e-6:
            return -1 if _dot(a, a) < _dot(b, b) else (1 if _dot(b, b) < _dot(a, a) else 0)
        return -1 if temp > 0 else 1

    q = q[:1] + sorted(q[1:], key=functools.cmp_to_key(order))
    dist = [_dot(p, p) for p in q]
    k = next((k for k in range(1, len(q)) if dist[k] > 1e-8), len(q))
    if k == len(q):
        return F(0)
    stack = [q[0], q[k]]
    for i in range(k + 1, len(q)):
        while len(stack) > 1 and _cross(_sub(q[i], stack[-2]), _sub(stack[-1], stack[-2])) >= 0:
            stack.pop()
        stack.append(q[i])
    if len(stack) <= 2:
        return F(0)
    area = F(0)
    for i in range(1, len(stack) - 1):
        area = area + F(abs(_cross(_sub(stack[i], stack[0]), _sub(stack[i + 1], stack[0]))))
    return F(area / F(2))


_TIE, _NEAR = float(F(1e-6)), float(F(1e-8))     # the reference's float32 thresholds, as exact Python floats


def _hull_areas(points, there):
    """_hull_area of each pair's candidate points (points [P, 24, 2], which are there [P, 24]; 3 or more each),
    the same float32 operations: the points shifted to their start (lowest, then leftmost, first), their
    crosses and squared lengths computed for all pairs at once, and the Graham scan run for all pairs at once
    (_scan_all) where the sort's comparator is a strict total order on the pair's points (then every sort gives
    the same order: the rank of a point is how many points come before it); otherwise _scan, the reference's
    sort, one pair at a time. Pairs with a non-finite point go through _hull_area."""
    areas = np.zeros(len(points), F)
    finite = (np.isfinite(points[..., 0]) & np.isfinite(points[..., 1]) | ~there).all(1)
    for p in np.flatnonzero(~finite):
        areas[p] = _hull_area([(x, y) for x, y in points[p][there[p]]])
    points, there = points[finite], there[finite]
    if not len(points):
        return areas
    counts = there.sum(1)
    width = int(counts.max())
    pair, point = np.nonzero(there)                                 # the pair's points first, in order
    slot = np.arange(pair.size) - (np.cumsum(counts) - counts)[pair]
    px, py = np.zeros((2, len(points), width), F)                   # padding (never read) kept finite
    px[pair, slot], py[pair, slot] = points[pair, point, 0], points[pair, point, 1]
    valid = np.arange(width)[None, :] < counts[:, None]
    ys = np.where(valid, py, np.inf)
    lowest = valid & (ys == ys.min(1, keepdims=True))
    xs = np.where(lowest, px, np.inf)
    start = np.argmax(lowest & (xs == xs.min(1, keepdims=True)), axis=1)
    qx, qy = (_from_start(c, start) for c in (px, py))
    x, y = np.ascontiguousarray(qx.T), np.ascontiguousarray(qy.T)
    crosses = x[:, None] * y[None, :] - x[None, :] * y[:, None]     # _cross(q[i], q[j]): [i, j, pair]
    dists = qx * qx + qy * qy
    ranked, total = _ranking(crosses, dists, counts)
    out = np.zeros(len(points), F)
    out[total] = _scan_all(qx[total], qy[total], ranked[total], dists[total], counts[total])
    for k in np.flatnonzero(~total):
        out[k] = _scan(crosses[:, :, k].tolist(), dists[k].tolist(), qx[k], qy[k], int(counts[k]))
    areas[finite] = out
    return areas


def _from_start(coordinate, start):
    """One coordinate [P, W] of the points less the start's, the start moved to position 0 (its place taking
    position 0's point)."""
    rows = np.arange(len(coordinate))
    q = coordinate - coordinate[rows, start][:, None]
    q[rows, 0], q[rows, start] = q[rows, start], q[rows, 0].copy()
    return q


def _ranking(crosses, dists, counts):
    """The order _scan's sort gives points 1..count-1 of each pair ([P, W]: position -> point; position 0 the
    start), and whether it is certain ([P]): the comparator gives -1 or 1 (never 0) and opposite answers for
    swapped points, and the numbers of points before each point are all distinct (a tournament with distinct
    scores is transitive, so the comparator is a strict total order there). crosses [W, W, P] (pairs last:
    numpy's loops run over the pairs), dists [P, W]."""
    pairs, width = dists.shape
    index = np.arange(width)
    others = (index[None, :] >= 1) & (index[None, :] < counts[:, None])
    among = others.T
    tie = np.abs(crosses) < F(_TIE)
    d = np.ascontiguousarray(dists.T)
    da, db = d[:, None], d[None, :]
    before = np.where(tie, da < db, crosses > 0)                  # order(a, b) == -1
    after = np.where(tie, db < da, ~(crosses > 0))                # order(a, b) == 1
    both = among[:, None] & among[None, :] & (index[:, None] != index[None, :])[..., None]
    consistent = ((before | after) & (before == after.transpose(1, 0, 2)) | ~both).all(axis=(0, 1))
    rank = (before & both).sum(axis=0).T                          # points before each point: [P, W]
    spread = np.sort(np.where(others, rank, width), axis=1)[:, :width - 1]
    distinct = ((spread == index[None, :width - 1]) | (index[None, :width - 1] >= counts[:, None] - 1)).all(1)
    ranked = np.zeros((pairs, width), np.int64)
    p, point = np.nonzero(others)
    ranked[p, np.minimum(rank[p, point] + 1, width - 1)] = point
    return ranked, consistent & distinct


def _turns(qx, qy, rows, i, s1, s2):
    """_cross(q[i] - q[s2], q[s1] - q[s2]) of the rows (float32; q[0] = (0, 0), so s2 = 0 is the table's cross)."""
    return _turn_of(*((qx[rows, point], qy[rows, point]) for point in (i, s1, s2)))


def _turn_of(i, s1, s2):
    """_cross(i - s2, s1 - s2) of points given as (x, y) (float32)."""
    return _cross(_sub(i, s2), _sub(s1, s2))


def _gather(table, index):
    """table[p, index[p, k]] of a [P, W] table and [P, K] indices (take_along_axis without its index building)."""
    return table.ravel()[index + (np.arange(len(table)) * table.shape[1])[:, None]]


def _scan_all(qx, qy, ranked, dists, counts):
    """_scan of every pair at once on its certain order `ranked`: the pairs whose scan pops no point (_pops_none:
    every sorted point turns left of the two before it, as for a strictly convex polygon, the usual case) take
    the sorted points as their stack at once; the others a step per sorted position (_scan_steps). The fan
    area summed in the same order (float32)."""
    pairs, width = qx.shape
    index = np.arange(width)
    near = (_gather(dists, ranked) > F(_NEAR)) & (index >= 1) & (index[None, :] < counts[:, None])
    has, k = near.any(1), np.argmax(near, axis=1)
    stack = np.zeros((pairs, width + 1), np.int64)
    # without pops the stack is the start and the sorted points from k on (past the count: never read)
    stack[:, 1:width] = _gather(ranked, np.minimum(k[:, None] + index[None, :width - 1], width - 1))
    size = 1 + counts - k
    steps = np.flatnonzero(has & ~_pops_none(qx, qy, ranked, k, counts))
    if steps.size:
        stack[steps], size[steps] = _scan_steps(qx[steps], qy[steps], ranked[steps], k[steps], counts[steps])
    return _fan_area(qx, qy, stack, size, has)


def _pops_none(qx, qy, ranked, k, counts):
    """Whether the scan of each pair pops no point: at every sorted position t after k, the turn of the point
    against the two sorted before it (the start 0 for the one before k + 1) is not >= 0 (NaN does not pop)."""
    t = np.arange(2, qx.shape[1])[None, :]
    i, s1 = ranked[:, 2:], ranked[:, 1:-1]
    s2 = np.where(t - 2 >= k[:, None], ranked[:, :-2], 0)
    turn = _turn_of(*((_gather(qx, point), _gather(qy, point)) for point in (i, s1, s2)))
    pops = (t > k[:, None]) & (t < counts[:, None]) & (turn >= 0)
    return ~pops.any(1)


def _scan_steps(qx, qy, ranked, k, counts):
    """The Graham scan of the pairs on their sorted points, a step per sorted position, the stack's pops
    repeated while any pair still pops: (stack [P, W + 1], size [P])."""
    pairs, width = qx.shape
    stack = np.zeros((pairs, width + 1), np.int64)
    rows = np.arange(pairs)
    stack[:, 1] = ranked[rows, k]
    size = np.full(pairs, 2)
    for t in range(2, width):
        active = (t > k) & (t < counts)
        if not active.any():
            continue
        i = ranked[:, t]
        popping = np.flatnonzero(active)
        while popping.size:
            popping = popping[size[popping] > 1]
            turn = _turns(qx, qy, popping, i[popping], stack[popping, size[popping] - 1],
                          stack[popping, size[popping] - 2])
            popping = popping[turn >= 0]               # NaN stops the popping, as the reference
            size[popping] -= 1
        stack[active, size[active]] = i[active]
        size[active] += 1
    return stack, size


def _fan_area(qx, qy, stack, size, has):
    """Half the sum of |cross(q[stack[j]], q[stack[j + 1]])| for j = 1 .. size - 2 of each pair, summed left to
    right in float32 (0 + the first term is that term; the terms past the stack are 0, which leave it as is);
    0 without a near point or under 3 stacked points."""
    a, b = stack[:, 1:-2], stack[:, 2:-1]
    terms = np.abs(_cross((_gather(qx, a), _gather(qy, a)), (_gather(qx, b), _gather(qy, b))))
    terms = np.where(np.arange(1, terms.shape[1] + 1)[None, :] < (size - 1)[:, None], terms, F(0))
    area = terms[:, 0]
    for j in range(1, terms.shape[1]):             # column by column: a cumsum along short rows is slower
        area = area + terms[:, j]
    return np.where(has & (size > 2), area / F(2), F(0))


def _scan(cross, dist, qx, qy, count):
    """The Graham scan and area of _hull_area on the tables of one pair (Python floats; qx, qy float32)."""
    def order(a, b):
        temp = cross[a][b]
        if abs(temp) < _TIE:
            return -1 if dist[a] < dist[b] else (1 if dist[b] < dist[a] else 0)
        return -1 if temp > 0 else 1

    ranked = [0] + sorted(range(1, count), key=functools.cmp_to_key(order))
    k = next((k for k in range(1, count) if dist[ranked[k]] > _NEAR), count)
    if k == count:
        return F(0)
    stack = [0, ranked[k]]
    for i in ranked[k + 1:]:
        while len(stack) > 1:
            s1, s2 = stack[-1], stack[-2]
            turn = cross[i][s1] if s2 == 0 else _cross((qx[i] - qx[s2], qy[i] - qy[s2]),
                                                         (qx[s1] - qx[s2], qy[s1] - qy[s2]))
            if not turn >= 0:                   # NaN stops the popping, as the reference
                break
            stack.pop()
        stack.append(i)
    if len(stack) <= 2:
        return F(0)
    area = F(0)
    for i in range(1, len(stack) - 1):
        area = area + F(abs(cross[stack[i]][stack[i + 1]]))
    return F(area / F(2))


def _point_lists(points, there):
    """Per pair, its candidate points as a list of (x, y) float32 scalars."""
    return [[(p[0], p[1]) for p in pair[mask]] for pair, mask in zip(points, there)]


def _intersection(box1, box2):
    """Intersection area of two rotated boxes [5]."""
    points, there = _candidate_points(_vertices(box1), _vertices(box2))
    return _hull_area(_point_lists(points, there)[0])


#: A pair of boxes is far (_far: no candidate point, IoU 0 without computing them) when its corners' bounds are
#: apart by FAR_GAP of its scale (extent plus largest |coordinate|), no edge is shorter than FAR_EDGE of it and
#: no two edges are within FAR_TURN radians of parallel: then each edge crossing's parameters (float32) err by
#: under ~2e-4 of the scale over the edge, and one of them lies outside [0, 1] by gap / 2 over the edge; the
#: inside tests err by ~1e-6 of the scale.
FAR_GAP, FAR_EDGE, FAR_TURN = 1e-3, 1e-3, 2e-2
_QUARTER = np.pi / 2


def _turn(a, b):
    """Distance of angles a - b to the nearest multiple of pi / 2 (float64)."""
    return np.abs(np.mod(a - b + _QUARTER / 2, _QUARTER) - _QUARTER / 2)


def _geometry(corners):
    """Per box of corners [M, 4, 2] (float32): corner bounds low x, low y, high x, high y, shortest edge, the
    first edge's angle and the largest turn of another edge from it (modulo pi / 2), finite (float64 but the
    flag; one 1-D array each: _far gathers and combines them per pair without reductions over short rows)."""
    edges = (np.roll(corners, -1, axis=1) - corners).astype(np.float64)        # the float32 edges the IoU uses
    angles = np.arctan2(edges[..., 1], edges[..., 0])
    with np.errstate(invalid="ignore"):
        spread = _turn(angles, angles[:, :1]).max(1)
    low, high = corners.min(1).astype(np.float64), corners.max(1).astype(np.float64)
    return (low[:, 0].copy(), low[:, 1].copy(), high[:, 0].copy(), high[:, 1].copy(),
            np.hypot(edges[..., 0], edges[..., 1]).min(1), angles[:, 0], spread, np.isfinite(corners).all((1, 2)))


def _bounds(low, high, first, second):
    """On one axis, per pair: the gap between the boxes' corner bounds, the extent of both and the largest
    |bound| (float64)."""
    low1, high1, low2, high2 = low[first], high[first], low[second], high[second]
    lowest, highest = np.minimum(low1, low2), np.maximum(high1, high2)
    return (np.maximum(low2 - high1, low1 - high2), highest - lowest,
            np.maximum(np.abs(lowest), np.abs(highest)))


def _far(geometry, first, second):
    """Which pairs (first[k], second[k]) are far (FAR_GAP): their rotated IoU is 0. The pairs' scale is the
    extent on x plus that on y plus the largest |bound| (the flag excludes the pairs with a non-finite corner,
    so the maxima need no NaN rule)."""
    low_x, low_y, high_x, high_y, edge, angle, spread, finite = geometry
    with np.errstate(invalid="ignore", over="ignore"):
        gap_x, extent_x, size_x = _bounds(low_x, high_x, first, second)
        gap_y, extent_y, size_y = _bounds(low_y, high_y, first, second)
        gap, scale = np.maximum(gap_x, gap_y), (extent_x + extent_y) + np.maximum(size_x, size_y)
        square = _turn(angle[first], angle[second]) - spread[first] - spread[second]
        return (finite[first] & finite[second] & (gap >= FAR_GAP * scale) & (square >= FAR_TURN)
                & (np.minimum(edge[first], edge[second]) >= FAR_EDGE * scale))


def _ious(corners, areas, geometry, first, second):
    """Rotated IoU of the box pairs (first[k], second[k]) (index arrays), as the reference: intersections
    only where the pair has 3 candidate points or more (fewer: area 0, no hull), none computed for far pairs."""
    near = np.flatnonzero(~_far(geometry, first, second))
    points, there = _candidate_points(corners[first[near]], corners[second[near]])
    inter = np.zeros(len(first), F)
    hull = there.sum(1) > 2
    inter[near[hull]] = _hull_areas(points[hull], there[hull])
    area1, area2 = areas[first], areas[second]
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area1 + area2 - inter)
    return np.where((area1 <= 0) | (area2 <= 0), F(0), iou)


def _suppresses(corners, areas, geometry, iou_threshold):
    """greedy_nms's test: kept box k removes candidate c (a later box) when IoU(c, k) > iou_threshold."""
    def suppresses(kept, candidates):
        out = np.zeros((len(kept), len(candidates)), bool)
        k, c = np.nonzero(kept[:, None] < candidates[None, :])
        if k.size:
            out[k, c] = _ious(corners, areas, geometry, candidates[c], kept[k]) > iou_threshold
        return out
    return suppresses


def nms_rotated(boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold, sort_result_descending=1,
                output_type="i64", clockwise=1):
    boxes, scores, scalars = nms_inputs(OP, boxes, scores, 5, (
        ("max_output_boxes_per_class", max_output_boxes_per_class, "iu"), ("iou_threshold", iou_threshold, "f"),
        ("score_threshold", score_threshold, "f")))
    limit = max(int(scalars["max_output_boxes_per_class"]), 0)
    iou_t, score_t = F(scalars["iou_threshold"]), F(scalars["score_threshold"])
    output_type = check.choice(OP, "output_type", output_type, ("i64", "i32"))
    sign = F(1) if check.flag(OP, "clockwise", clockwise) else F(-1)
    kept_all = []
    for n in range(boxes.shape[0]):
        rotated = boxes[n].copy()
        rotated[:, 4] = rotated[:, 4] * sign
        corners, areas = _vertices(rotated), rotated[:, 2] * rotated[:, 3]
        geometry = _geometry(corners)
        for c in range(scores.shape[1]):
            s = scores[n, c]
            candidates = np.flatnonzero(s > score_t)
            order = candidates[np.lexsort((candidates, -s[candidates].astype(np.float64)))]
            test = _suppresses(corners[order], areas[order], tuple(g[order] for g in geometry), iou_t)
            kept = order[greedy_nms(order.size, test, limit)].tolist()
            kept_all += [(n, c, i, s[i]) for i in kept]
    if check.flag(OP, "sort_result_descending", sort_result_descending) and kept_all:
        n_, c_, i_, s_ = (np.array(v) for v in zip(*kept_all))
        kept_all = [kept_all[k] for k in np.lexsort((i_, c_, n_, -s_.astype(np.float64)))]
    itype = np.int64 if output_type == "i64" else np.int32
    indices = np.array([[n, c, i] for n, c, i, _ in kept_all], itype).reshape(-1, 3)
    selected = np.array([[n, c, s] for n, c, _, s in kept_all], np.float32).reshape(-1, 3)
    return indices, selected, np.array([len(kept_all)], itype)


def _kernel_v13(boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold, *,
                sort_result_descending, output_type, clockwise):
    return nms_rotated(boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold,
                       sort_result_descending, output_type, clockwise)


def cases(rng: np.random.Generator) -> list:
    out = []
    for index in range(20):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        batch, classes, count = int(r.integers(1, 3)), int(r.integers(1, 3)), int(r.integers(1, 8))
        boxes = np.concatenate([r.uniform(0, 10, (batch, count, 2)), r.uniform(1, 6, (batch, count, 2)),
                                r.uniform(-3.2, 3.2, (batch, count, 1))], -1)
        if index % 5 == 4:
            boxes[..., 4] = r.choice([0.0, np.pi / 2, np.pi / 4], (batch, count))     # axis-aligned, 45 degrees
        scores = r.permutation(batch * classes * count).reshape(batch, classes, count) / (batch * classes * count)
        inputs = (boxes.astype(np.float32), scores.astype(np.float32),
                  np.array(int(r.choice([1, 3, 10])), (np.int64, np.int32)[index % 2]),
                  np.array(float(r.choice([0.1, 0.3, 0.6])), np.float32),
                  np.array(float(r.choice([0.0, 0.2])), np.float32))
        out.append(Case(f"nms_rotated_{index}", inputs, {"sort_result_descending": int(index % 3 != 1),
                                                          "output_type": ("i64", "i32")[index % 4 // 2],
                                                          "clockwise": int(index % 5 != 2)}))
    return out


def bad_cases() -> list:
    f32 = lambda *shape: np.zeros(shape, np.float32)  # noqa: E731
    k, t = np.array(2, np.int64), np.array(0.5, np.float32)
    return [
        (Case("boxes_shape", (f32(1, 3, 4), f32(1, 2, 3), k, t, t), {}), "[N, M, 5]"),
        (Case("scores_shape", (f32(1, 3, 5), f32(1, 2, 4), k, t, t), {}), "[N, C, M]"),
        (Case("float_count", (f32(1, 3, 5), f32(1, 2, 3), t, t, t), {}), "max_output_boxes_per_class"),
        (Case("two_thresholds", (f32(1, 3, 5), f32(1, 2, 3), k, np.array([0.5, 0.5], np.float32), t), {}),
         "iou_threshold"),
    ]


def benchmark_cases(mode: str) -> list:
    """M random rotated boxes in a 100 x 100 image, 2 classes, at most 100 kept per class."""
    m = {"full": 300, "quick": 300, "tiny": 12}[mode]

    def inputs(rng):
        boxes = np.concatenate([rng.uniform(0, 100, (1, m, 2)), rng.uniform(5, 20, (1, m, 2)),
                                rng.uniform(-3.2, 3.2, (1, m, 1))], -1)
        return {"boxes": boxes.astype(np.float32), "scores": rng.permutation(2 * m).reshape(1, 2, m).astype(
                    np.float32) / np.float32(2 * m), "max_output_boxes_per_class": np.array(100, np.int64),
                "iou_threshold": np.array(0.5, np.float32), "score_threshold": np.array(0.05, np.float32)}
    return [BenchmarkCase(f"nms-rotated-{m}", f"{m} boxes, 2 classes, keep 100", inputs)]


_INDEX = (np.dtype(np.int32), np.dtype(np.int64))
UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 13, (Port("boxes", "T"), Port("scores", "T"), Port("max_output_boxes_per_class", "I"),
                           Port("iou_threshold", "T"), Port("score_threshold", "T")),
                  (Port("selected_indices", "O"), Port("selected_scores", "T"), Port("valid_outputs", "O")),
                  (Attribute("sort_result_descending", "int", 1, (0, 1)),
                   Attribute("output_type", "string", "i64", ("i64", "i32")), Attribute("clockwise", "int", 1, (0, 1))),
                  {"T": (np.dtype(np.float32),), "I": _INDEX, "O": (np.dtype(np.int64), np.dtype(np.int32))},
                  _kernel_v13, doc="NMS of rotated boxes per image and class (rotated IoU).", infer=selected_infer),),
    openvino=OpenVINO(
        "NMSRotated", versions=(13,), factory=nms_factory("opset13", "NMSRotated", 5),
        attributes=(AttributeMap("sort_result_descending", "bool"), AttributeMap("output_type", "lower"),
                    AttributeMap("clockwise", "bool")),
        constant_inputs=("max_output_boxes_per_class", "iou_threshold", "score_threshold"),
        output_shapes=lambda i, a: [None, None, (1,)]),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("rotated IoU (polygon clipping and convex hull) has no standard ONNX form; not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torchvision has no rotated NMS"),
    divergences=Absent("none measured on the generated cases (bit-exact)"),
    pyop_outputs=lambda inputs: (np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.int64)),
    pyop_casts=selected_pyop_casts,
    benchmark=Benchmark(benchmark_cases),
)
