"""custom_ops.ops._libm: c_expf (the C library's expf, asked only near a rounding midpoint) equals the C
function element by element, and differs from the correctly rounded exp where glibc's expf errs."""
from __future__ import annotations

import numpy as np
import pytest

from custom_ops.ops import _libm

pytestmark = pytest.mark.skipif(_libm.LIBM_EXPF is None, reason="no C expf to load")


def _c_everywhere(x):
    return np.array([_libm.LIBM_EXPF(float(v)) for v in x.ravel()], np.float32).reshape(x.shape)


@pytest.mark.parametrize("seed", range(2))
def test_c_expf_equals_the_c_function_on_every_element(seed):
    r = np.random.default_rng(seed)
    x = np.concatenate([r.uniform(-100, 100, 60_000), r.uniform(-2, 2, 60_000), r.normal(0, 1e-3, 10_000),
                        [0.44369903, 0, -0.0, np.inf, -np.inf, np.nan, -87.5, 88.5, 89, -104]]).astype(np.float32)
    got, want = _libm.c_expf(x), _c_everywhere(x)
    np.testing.assert_array_equal(got, want)
    assert 0 < np.count_nonzero(got[np.isfinite(x)] != _libm.exp_f32(x[np.isfinite(x)])) < 0.002 * x.size


def test_shapes_and_scalars():
    assert _libm.c_expf(np.float32(0.44369903)).shape == ()
    assert _libm.c_expf(np.zeros((2, 0, 3), np.float32)).shape == (2, 0, 3)
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(_libm.c_expf(x), _c_everywhere(x))


def test_expf_differs_exactly_where_the_c_function_rounds_otherwise():
    assert _libm.expf_differs([0.5, 0.44369903])
    assert not _libm.expf_differs([0.5, 1.0, np.nan])
    assert not _libm.expf_differs(np.zeros(0, np.float32))


def test_c_log1pf_and_log_are_the_c_functions():
    import math
    x = np.random.default_rng(0).uniform(-0.99, 3, 2000).astype(np.float32)
    want = np.array([_libm.LIBM_LOG1PF(float(v)) for v in x], np.float32)
    np.testing.assert_array_equal(_libm.c_log1pf(x), want)
    d = np.array([0.0, -1.0, 1e-300, 2.5, np.inf, np.nan])
    got = _libm.c_log(d)
    assert got[0] == -np.inf and np.isnan(got[1]) and got[2] == math.log(1e-300) and got[3] == math.log(2.5)
    assert got[4] == np.inf and np.isnan(got[5])


def test_c_libm_is_for_this_thread_only_and_restored():
    import threading
    x = np.float32([0.44369903])
    seen = []
    with _libm.c_libm():
        assert _libm.expf(x) == _libm.c_expf(x) != _libm.exp_f32(x)
        other = threading.Thread(target=lambda: seen.append(_libm.expf(x)))
        other.start()
        other.join()
        with _libm.c_libm():
            pass
        assert _libm.expf(x) == _libm.c_expf(x)              # nested: still on
    assert seen == [_libm.exp_f32(x)] and _libm.expf(x) == _libm.exp_f32(x)
    assert _libm.log1pf(np.float32([0.25])) == _libm.log1p_f32(np.float32([0.25]))
