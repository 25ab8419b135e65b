"""What the CTC greedy decoders share besides their argmax (custom_ops.ops._argmax): the greedy collapse,
vectorised."""
from __future__ import annotations

import numpy as np


def collapse(classes: np.ndarray, valid: np.ndarray, blank, merge_repeated: bool):
    """Greedy CTC collapse of classes [N, T] over the valid prefix [N, T] (bool): blanks dropped, repeats
    merged when asked (the previous step counts even when it was a blank). Returns (decoded [N, T]
    padded with -1, lengths [N])."""
    previous = np.concatenate([np.full((classes.shape[0], 1), -1, np.int64), classes[:, :-1]], axis=1)
    keep = valid & (classes != blank)
    if merge_repeated:
        keep &= classes != previous
    lengths = keep.sum(axis=1)
    out = np.full(classes.shape, -1, np.int64)
    rows, steps = np.nonzero(keep)
    slot = np.cumsum(keep, axis=1)[rows, steps] - 1
    out[rows, slot] = classes[rows, steps]
    return out, lengths
