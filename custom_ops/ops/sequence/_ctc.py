"""What the CTC greedy decoders share: std::max_element's argmax and the greedy collapse, vectorised."""
from __future__ import annotations

import numpy as np

_NUMPY_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def first_max(scores: np.ndarray) -> np.ndarray:
    """Index of the first maximum along the last axis, as std::max_element (a NaN never replaces the
    running maximum; numpy's argmax would pick the first NaN): a NaN first stays, later NaNs are skipped."""
    if scores.dtype not in _NUMPY_FLOATS:
        return _first_max_stepwise(scores)
    nan = np.isnan(scores)
    index = np.argmax(np.where(nan, -np.inf, scores), axis=-1)     # argmax: the first of equal maxima
    return np.where(nan[..., 0], 0, index).astype(np.int64)


def _first_max_stepwise(scores: np.ndarray) -> np.ndarray:
    """first_max for any ordered type, one step per class, vectorised over the rest."""
    best = scores[..., 0]
    index = np.zeros(best.shape, np.int64)
    for k in range(1, scores.shape[-1]):
        better = best < scores[..., k]
        best = np.where(better, scores[..., k], best)
        index = np.where(better, k, index)
    return index


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
