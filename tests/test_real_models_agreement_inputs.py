"""benchmarks/real_models.py: the agreement inputs differ from each other for models with integer inputs only."""
from __future__ import annotations

import numpy as np


def test_token_inputs_are_shuffled_not_repeated():
    from benchmarks.real_models import _agreement_inputs

    feeds = {"input_ids": np.arange(16, dtype=np.int64).reshape(1, 16), "mask": np.ones((1, 16), np.int64),
             "x": np.zeros((2, 3), np.float32)}
    samples = _agreement_inputs(feeds, 4, 2)
    ids = [s["input_ids"] for s in samples]
    assert all(sorted(i.ravel()) == list(range(16)) for i in ids)  # the same tokens, in another order
    assert len({i.tobytes() for i in ids} | {feeds["input_ids"].tobytes()}) == 5
    assert all(np.array_equal(s["mask"], feeds["mask"]) for s in samples)
    assert all(s["x"].shape == (2, 3) and s["x"].dtype == np.float32 and s["x"].any() for s in samples)
