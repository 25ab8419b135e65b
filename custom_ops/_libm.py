"""The C library's exp, which OpenVINO's reference implementations call (std::exp): float32 through expf,
float16 through expf rounded to float16, float64 through exp.

numpy's exp is another implementation: its float64 exp differs from glibc's in the last bit on about 5% of
values, and float32 computed in double and rounded differs from glibc's expf on about 0.06% (measured on
normal and uniform samples). Where the C library cannot be loaded, numpy's (float32/float16 computed in double
and rounded) is used. One call per element: meant for small tensors (probabilities, not activations).
"""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np


def _load():
    try:
        library = ctypes.CDLL(ctypes.util.find_library("m") or ctypes.util.find_library("c"))
        library.expf.restype, library.expf.argtypes = ctypes.c_float, [ctypes.c_float]
        library.exp.restype, library.exp.argtypes = ctypes.c_double, [ctypes.c_double]
        return library
    except (OSError, AttributeError, TypeError):
        return None


_LIBRARY = _load()


def exp(values) -> np.ndarray:
    """exp of a float16/float32/float64 array, in its type, as the C library computes it."""
    values = np.asarray(values)
    dtype = values.dtype
    if _LIBRARY is None:
        with np.errstate(over="ignore"):
            return np.exp(values.astype(np.float64)).astype(dtype)
    wide = dtype == np.float64
    function = _LIBRARY.exp if wide else _LIBRARY.expf
    out = np.fromiter(map(function, values.reshape(-1).tolist()), np.float64 if wide else np.float32, values.size)
    with np.errstate(over="ignore"):
        return out.astype(dtype).reshape(values.shape)
