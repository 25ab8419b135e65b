"""exp of float32: the correctly rounded one the kernels compute (the dialect contract) and the C library's
expf that OpenVINO's std::exp of float calls (glibc's expf is not correctly rounded: its error is at most
0.502 ulp, so exp(0.44369903f) comes out one ulp low). Units whose OpenVINO exp runs on float32 declare
the difference as a divergence (predicate: expf_differs, or changes_with_c_libm); their kernels call expf,
log1pf and log, which are the C library's functions within c_libm() (tests, predicates).

c_expf calls the C function (ctypes, ~0.35 us an element) only where the two can differ: an error of at
most 0.502 ulp (glibc's stated bound for its expf) can round otherwise only when exp(x) lies within 0.002 ulp
of a midpoint between two floats (NEAR_MIDPOINT, with a margin), 2 to 4 % of the elements; elsewhere it is
the correctly rounded value (equal to the C function on 3 million elements checked one by one; 10x faster).
"""
from __future__ import annotations

import contextlib
import math
import threading

import numpy as np

F32 = np.float32
#: the distance to a rounding midpoint (in ulps of the result) under which the C expf is asked
NEAR_MIDPOINT = 0.01
#: arguments whose exp is a normal float32 (outside: overflow, subnormals, the C function every time)
_NORMAL = (-87.0, 88.0)


def _load(name: str):
    """The C library's float function `name` (ctypes), or None where it cannot be loaded."""
    try:
        import ctypes
        import ctypes.util
        function = getattr(ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6"), name)
    except (OSError, AttributeError):
        return None
    function.restype, function.argtypes = ctypes.c_float, [ctypes.c_float]
    return function


LIBM_EXPF, LIBM_LOG1PF = _load("expf"), _load("log1pf")


def exp_f32(x) -> np.ndarray:
    """exp of float32 values, correctly rounded to float32 (evaluated in double)."""
    with np.errstate(over="ignore"):
        return np.exp(np.asarray(x, F32).astype(np.float64)).astype(F32)


def log1p_f32(x) -> np.ndarray:
    """log1p of float32 values, correctly rounded to float32 (evaluated in double)."""
    with np.errstate(all="ignore"):
        return np.log1p(np.asarray(x, F32).astype(np.float64)).astype(F32)


def log_f64(x) -> np.ndarray:
    """log of doubles (numpy's)."""
    with np.errstate(all="ignore"):
        return np.log(np.asarray(x, np.float64))


def c_log1pf(x) -> np.ndarray:
    """The C library's log1pf of float32 values, element by element (small arrays)."""
    x = np.asarray(x, F32)
    if LIBM_LOG1PF is None:
        return log1p_f32(x)
    return np.array([LIBM_LOG1PF(float(v)) for v in x.ravel()], F32).reshape(x.shape)


def c_log(x) -> np.ndarray:
    """The C library's log of doubles (math.log), element by element (small arrays)."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        safe = np.log(x)             # math.log raises where C returns -inf / nan
    return np.array([math.log(v) if v > 0 and math.isfinite(v) else s for v, s in zip(x.ravel(), safe.ravel())],
                    np.float64).reshape(x.shape)


def _doubtful(x: np.ndarray) -> np.ndarray:
    """Mask of the elements of x (float32) whose C expf may differ from the correctly rounded exp."""
    with np.errstate(all="ignore"):
        exact = np.exp(x.astype(np.float64))
        rounded = exact.astype(F32)
        other = np.nextafter(rounded, np.where(exact > rounded, F32(np.inf), F32(-np.inf)).astype(F32))
        midpoint = (rounded.astype(np.float64) + other.astype(np.float64)) / 2     # exact in double
        ulp = np.abs(other.astype(np.float64) - rounded.astype(np.float64))
        near = np.abs(exact - midpoint) < NEAR_MIDPOINT * ulp
    return near | ~((x >= _NORMAL[0]) & (x <= _NORMAL[1]))


def c_expf(x) -> np.ndarray:
    """The C library's expf of float32 values (the correctly rounded exp where no C expf can be loaded)."""
    x = np.asarray(x, F32)
    flat = x.reshape(-1)
    out = exp_f32(flat)
    if LIBM_EXPF is not None and flat.size:
        doubtful = _doubtful(flat)
        out[doubtful] = [LIBM_EXPF(float(v)) for v in flat[doubtful]]
    return out.reshape(x.shape)


def c_exp(values) -> np.ndarray:
    """exp of a float16/float32/float64 array in its type as the C library computes it (the reference's
    std::exp): float32 by expf (c_expf), float16 by expf rounded to float16, float64 by exp (math.exp)."""
    values = np.asarray(values)
    if values.dtype == np.float64:
        with np.errstate(over="ignore"):
            safe = np.exp(values)      # math.exp raises on overflow where C returns inf
        return np.array([math.exp(v) if s != np.inf else s for v, s in zip(values.ravel(), safe.ravel())],
                        np.float64).reshape(values.shape)
    with np.errstate(over="ignore"):
        return c_expf(values.astype(F32)).astype(values.dtype)


def expf_differs(x) -> bool:
    """Whether the C library's expf rounds the exp of some element of x otherwise than exp_f32 does."""
    x = np.asarray(x, F32).ravel()
    x = x[np.isfinite(x)]
    return bool(LIBM_EXPF is not None and x.size and np.any(c_expf(x) != exp_f32(x)))


_STATE = threading.local()      # .c: within c_libm() in this thread


def _c() -> bool:
    return getattr(_STATE, "c", False)


def expf(x) -> np.ndarray:
    """The kernels' exp of float32: exp_f32 (the contract), c_expf within c_libm()."""
    return c_expf(x) if _c() else exp_f32(x)


def log1pf(x) -> np.ndarray:
    """The kernels' log1p of float32: log1p_f32 (the contract), c_log1pf within c_libm()."""
    return c_log1pf(x) if _c() else log1p_f32(x)


def log(x) -> np.ndarray:
    """The kernels' log of doubles: log_f64 (the contract), c_log within c_libm()."""
    return c_log(x) if _c() else log_f64(x)


@contextlib.contextmanager
def c_libm():
    """Within, in this thread only: expf, log1pf and log are the C library's functions, what OpenVINO's CPU
    plugin computes (for divergence predicates and tests; kernels run by other threads keep the contract)."""
    previous, _STATE.c = _c(), True
    try:
        yield
    finally:
        _STATE.c = previous


def changes_with_c_libm(run) -> bool:
    """Whether run() (outputs: a tuple of arrays) changes with the C library's functions (c_libm)."""
    if LIBM_EXPF is None:
        return False
    want = run()
    with c_libm():
        got = run()
    return any(not np.array_equal(a, b, equal_nan=True) for a, b in zip(want, got))
