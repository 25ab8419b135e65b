"""std::max_element's argmax, vectorised: the CTC greedy decoders' best class and Inverse's pivot row."""
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
