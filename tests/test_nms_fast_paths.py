"""The NMS kernels' fast paths give the bytes of their plain forms (custom_ops/ops/detection): NMSRotated's
Graham scan of all pairs at once against the one-pair scan, MulticlassNms's suppressing pairs from the x
sweep against the per-class blocks, MatrixNms's decays from the non-zero IoUs against the dense matrices."""
from __future__ import annotations

import numpy as np
import pytest

from custom_ops.ops.detection import _common, detection_output, matrix_nms, multiclass_nms, nms_rotated, proposal


def _axis_boxes(seed: int, count: int) -> np.ndarray:
    """Boxes [count, 4] (float32) in a 100 x 100 image: some integer-cornered, repeated or flipped."""
    r = np.random.default_rng(seed)
    corner = r.uniform(0, 90, (count, 2))
    boxes = np.concatenate([corner, corner + r.uniform(0, 25, (count, 2))], -1)
    boxes[: count // 4] = np.round(boxes[: count // 4])
    boxes[count // 4: count // 3] = boxes[: count // 3 - count // 4]
    boxes[-3:, [0, 2]] = boxes[-3:, [2, 0]]
    return boxes.astype(np.float32)


def _equal(a, b) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_rotated_hull_areas_of_all_pairs_equal_the_one_pair_scan(seed, monkeypatch):
    """Rotated boxes (random angles or multiples of 45 degrees, some repeated: comparator ties, the one-pair
    fallback): _hull_areas equals _hull_area pair by pair, and both of its paths ran."""
    r = np.random.default_rng(seed)
    count = 40
    angles = r.choice([0, np.pi / 4, np.pi / 2], (count, 1)) if seed % 2 else r.uniform(-3.2, 3.2, (count, 1))
    boxes = np.concatenate([r.uniform(0, 30, (count, 2)), r.uniform(1, 12, (count, 2)), angles], -1)
    boxes[count // 2:] = boxes[: count // 2]
    corners = nms_rotated._vertices(boxes.astype(np.float32))
    first, second = np.nonzero(np.ones((count, count), bool))
    points, there = nms_rotated._candidate_points(corners[first], corners[second])
    hull = there.sum(1) > 2
    points, there = points[hull], there[hull]
    one_pair = []
    monkeypatch.setattr(nms_rotated, "_scan", lambda *args, scan=nms_rotated._scan: one_pair.append(1) or scan(*args))
    areas = nms_rotated._hull_areas(points, there)
    expected = np.array([nms_rotated._hull_area([(x, y) for x, y in p[t]]) for p, t in zip(points, there)], np.float32)
    assert _equal(areas, expected)
    assert 0 < len(one_pair) < len(points)


@pytest.mark.parametrize("seed", range(3))
def test_rotated_scan_without_pops_equals_the_step_scan(seed, monkeypatch):
    """Point sets of 3 to 24 points: convex polygons (points on a circle: the scan pops none, the stack at once)
    and clouds with inner and collinear points (pops: the step per sorted point): _hull_areas equals _hull_area
    set by set, and both paths ran."""
    r = np.random.default_rng(seed)
    sets, width = 300, 24
    counts = r.integers(3, width + 1, sets)
    angles = np.sort(r.uniform(0, 2 * np.pi, (sets, width)), axis=1)
    circle = np.stack([np.cos(angles), np.sin(angles)], -1) * r.uniform(0.1, 50, (sets, 1, 1))
    cloud = r.uniform(-20, 20, (sets, width, 2))
    cloud[::3, :, 1] = np.round(cloud[::3, :, 1] / 10) * 10                         # rows of collinear points
    points = np.where((np.arange(sets) % 2 == 0)[:, None, None], circle, cloud).astype(np.float32)
    there = np.arange(width)[None, :] < counts[:, None]
    stepped = []
    monkeypatch.setattr(nms_rotated, "_scan_steps",
                        lambda qx, *args, steps=nms_rotated._scan_steps: stepped.append(len(qx)) or steps(qx, *args))
    areas = nms_rotated._hull_areas(points, there)
    expected = np.array([nms_rotated._hull_area([(x, y) for x, y in p[t]]) for p, t in zip(points, there)], np.float32)
    assert _equal(areas, expected)
    assert 0 < sum(stepped) < sets // 2


@pytest.mark.parametrize("scale", [30, 1e4])
def test_rotated_far_pairs_have_no_candidate_point(scale):
    """Pairs _far skips (their IoU 0 without candidate points) have none indeed, parallel ones (one angle) are
    never skipped, and at a small scale most pairs are far."""
    r = np.random.default_rng(int(scale))
    count = 60
    boxes = np.concatenate([r.uniform(0, scale, (count, 2)), r.uniform(0.5, 12, (count, 2)),
                            r.uniform(-3.2, 3.2, (count, 1))], -1).astype(np.float32)
    boxes[: count // 3, 4] = boxes[0, 4]
    corners = nms_rotated._vertices(boxes)
    first, second = np.nonzero(~np.eye(count, dtype=bool))
    far = nms_rotated._far(nms_rotated._geometry(corners), first, second)
    _, there = nms_rotated._candidate_points(corners[first[far]], corners[second[far]])
    assert not there.any()
    assert not far[(first < count // 3) & (second < count // 3)].any()
    assert far.mean() > (0.5 if scale == 30 else 0)


@pytest.mark.parametrize("normalized", [0, 1])
def test_x_sweep_finds_every_pair_overlapping_on_x(normalized):
    """Every pair whose float32 x overlap min(x2) - max(x1) + norm is > 0 is among the swept pairs."""
    boxes = _axis_boxes(normalized, 300)
    norm = np.float32(0 if normalized else 1)
    by_x1, follow = _common.x_sweep(boxes, float(norm))
    lead, trail = _common.swept_pairs(follow)
    swept = {frozenset(p) for p in zip(by_x1[lead].tolist(), by_x1[trail].tolist())}
    one, two = boxes[:, None], boxes[None, :]
    overlap = np.minimum(one[..., 2], two[..., 2]) - np.maximum(one[..., 0], two[..., 0]) + norm > 0
    wanted = {frozenset((a, b)) for a, b in zip(*np.nonzero(np.triu(overlap, 1)))}
    assert wanted and wanted <= swept and len(swept) < 300 * 299 // 2


@pytest.mark.parametrize("normalized", [0, 1])
@pytest.mark.parametrize("threshold", [0.3, 0.5, 1e-6])
def test_multiclass_suppressing_pairs_equal_the_per_class_blocks(normalized, threshold):
    boxes = _axis_boxes(3, 400)
    r = np.random.default_rng(4)
    a = {"iou_threshold": threshold, "score_threshold": 0.1, "nms_top_k": 150, "nms_eta": 1.0,
         "normalized": normalized}
    scores = [r.random(400).astype(np.float32) for _ in range(5)]
    orders = [multiclass_nms._class_order(s, a) for s in scores]
    pairs = multiclass_nms._image_pairs(boxes, orders, a)
    assert pairs is not None and pairs[0].size
    for s, order in zip(scores, orders):
        assert multiclass_nms._nms_class(boxes, s, order, a, pairs) == multiclass_nms._nms_class(boxes, s, order, a)


@pytest.mark.parametrize("decay", ["linear", "gaussian"])
@pytest.mark.parametrize("normalized", [0, 1])
def test_matrix_decays_from_nonzero_ious_equal_the_dense_matrices(decay, normalized):
    boxes = _axis_boxes(5, 400)
    r = np.random.default_rng(6)
    scores = np.round(r.random((5, 400)) * 50).astype(np.float32) / np.float32(50)      # ties
    a = {"score_threshold": 0.05, "nms_top_k": 150, "decay_function": decay, "gaussian_sigma": 2.0,
         "post_threshold": 0.05, "normalized": normalized}
    orders = {c: matrix_nms._class_order(scores[c], a) for c in range(5)}
    with np.errstate(all="ignore"):
        sparse = matrix_nms._sparse_classes(boxes, scores, orders, a)
        dense = {c: matrix_nms._nms_class(boxes, scores[c], order, a) for c, order in orders.items()}
        mixed = matrix_nms._image_classes(boxes, scores, list(orders), a)
    assert len(sparse) >= 3                       # a class whose iou_max leaves [0, 1] (NaN) stays dense
    for c in orders:
        assert all(_equal(x, y) for x, y in zip(mixed[c], dense[c]))
        assert c not in sparse or all(_equal(x, y) for x, y in zip(sparse[c], dense[c]))


@pytest.mark.parametrize("seed", range(6))
def test_stable_argsort_head_equals_the_head_of_the_stable_sort(seed):
    """Keys with many ties (rounded), NaN, -0.0 and +0.0 (equal to the sort), every count from 0 past the size."""
    r = np.random.default_rng(seed)
    keys = np.round(r.normal(size=300), 1)
    keys[r.random(300) < 0.1] = 0.0
    keys[r.random(300) < 0.1] = -0.0
    if seed % 2:
        keys[r.random(300) < 0.2] = np.nan
    for count in [0, 1, 2, 7, 50, 150, 239, 240, 241, 299, 300, 400, None]:
        expected = np.argsort(keys, kind="stable")[:count]
        assert np.array_equal(_common.stable_argsort_head(keys, count), expected), count


def _blocks_only(monkeypatch):
    """Run the NMS on greedy_nms's blocks (swept_greedy_nms declines); returns how often the sweep was asked."""
    ran = []
    monkeypatch.setattr(_common, "swept_greedy_nms", lambda *args: ran.append(1) and None)
    return ran


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.7, 1.0])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_detection_output_swept_nms_equals_the_blocks(threshold, dtype, monkeypatch):
    """DetectionOutput's greedy NMS from the x sweep keeps what the blocks of all pairs keep (repeated, flipped
    and integer-cornered boxes, score ties), and the sweep ran."""
    boxes = (_axis_boxes(7, 300) / 100).astype(dtype)
    order = np.random.default_rng(8).permutation(300)[:250]
    t = np.dtype(dtype)
    swept = detection_output._nms(boxes, order, t.type(threshold), t)
    ran = _blocks_only(monkeypatch)
    assert np.array_equal(swept, detection_output._nms(boxes, order, t.type(threshold), t)) and ran


@pytest.mark.parametrize("limit", [1, 30, 100, 400])
@pytest.mark.parametrize("offset", [0.0, 1.0])
def test_proposal_swept_nms_equals_the_blocks(limit, offset, monkeypatch):
    """Proposal's greedy NMS from the x sweep (a prefix first, longer while it keeps fewer than the limit)
    keeps what the blocks keep."""
    boxes = _axis_boxes(9, 400)
    threshold = float(np.float32(0.5))
    swept = proposal._nms(boxes, threshold, limit, np.float32(offset))
    ran = _blocks_only(monkeypatch)
    assert np.array_equal(swept, proposal._nms(boxes, threshold, limit, np.float32(offset))) and ran
    assert len(swept) == min(limit, len(swept)) and len(swept)


@pytest.mark.parametrize("density", [0.0, 0.02, 0.3, 1.0])
def test_greedy_by_edges_equals_the_one_candidate_loop(density):
    """Random suppressing pairs (none, sparse, dense, all): the kept positions of the plain greedy loop."""
    r = np.random.default_rng(int(density * 100))
    count = 80
    early, late = np.nonzero(np.triu(r.random((count, count)) < density, 1))
    shuffle = r.permutation(early.size)
    edges = set(zip(early.tolist(), late.tolist()))
    kept: list[int] = []
    for candidate in range(count):
        if not any((k, candidate) in edges for k in kept):
            kept.append(candidate)
    assert _common.greedy_by_edges(count, early[shuffle], late[shuffle]).tolist() == kept


def test_swept_greedy_nms_leaves_heavy_overlap_to_the_blocks():
    """More swept pairs per candidate than SWEPT_PAIRS_PER_BOX (boxes all over one another): None, the blocks
    do less work; spread boxes: the sweep."""
    spread = _axis_boxes(10, 200)
    heavy = np.repeat(spread[:1], 200, axis=0)
    never = lambda early, late: np.zeros(early.shape, bool)  # noqa: E731
    assert _common.swept_greedy_nms(heavy, 0.0, never) is None
    assert _common.swept_greedy_nms(spread, 0.0, never).tolist() == list(range(200))
