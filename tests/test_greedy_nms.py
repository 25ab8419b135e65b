"""detection/_common.greedy_nms (the block-wise greedy NMS the detection kernels share) keeps exactly what the
one-box-at-a-time loop keeps, for any block size and limit."""
from __future__ import annotations

import numpy as np
import pytest

from custom_ops.ops.detection._common import greedy_nms


def _loop(suppress: np.ndarray, limit: int) -> list[int]:
    kept: list[int] = []
    for candidate in range(len(suppress)):
        if len(kept) < limit and not any(suppress[k, candidate] for k in kept):
            kept.append(candidate)
    return kept


@pytest.mark.parametrize("seed", range(40))
def test_greedy_nms_equals_the_loop(seed):
    r = np.random.default_rng(seed)
    count = int(r.integers(0, 150))
    suppress = r.random((count, count)) < r.choice([0.0, 0.02, 0.2, 0.9])   # not symmetric on purpose
    limit = int(r.choice([0, 1, 5, count + 1]))
    block = int(r.choice([1, 3, 64]))
    calls = []

    def suppresses(kept, candidates):
        calls.append((kept.copy(), candidates.copy()))
        return suppress[np.ix_(kept, candidates)]

    got = greedy_nms(count, suppresses, limit, block)
    assert got.dtype == np.int64 and got.tolist() == _loop(suppress, limit)
    for kept, candidates in calls:           # only earlier boxes are asked about later ones, or a block itself
        assert (kept[:, None] < candidates[None, :]).all() or np.array_equal(kept, candidates)
