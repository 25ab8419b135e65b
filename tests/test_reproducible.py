"""Tests are reproducible one by one: a module-level RNG is reseeded per test (tests/conftest.py)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

RNG = np.random.default_rng(0)   # as the value helpers of the IR rule tests keep theirs


def _expected(name: str) -> int:
    return int(np.random.default_rng(zlib.crc32(f"{__name__}::{name}".encode())).integers(1 << 30))


@pytest.mark.parametrize("case", ["a", "b"])
def test_each_case_draws_from_its_own_seed(case, request):
    assert int(RNG.integers(1 << 30)) == _expected(request.node.name)


def test_cases_draw_different_values():
    assert _expected("test_each_case_draws_from_its_own_seed[a]") != \
        _expected("test_each_case_draws_from_its_own_seed[b]")
