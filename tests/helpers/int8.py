"""Test data for integer kernels that gives the same sums on every x86 CPU."""
from __future__ import annotations

import numpy as np

#: The largest |level| of the int8 operand, as in nncf's 7-bit weights (its overflow fix): on CPUs without
#: VNNI (AVX2) OpenVINO CPU's and onnxruntime's u8 x s8 kernels (vpmaddubsw) sum pairs of products in int16
#: with saturation, each in its own places; with |level| <= 64 a pair of products of full-range uint8 data
#: stays within int16 (255 * 64 * 2 = 32640 <= 32767), so both compute the exact integer sums, as on VNNI
#: CPUs. Tests about a conversion's form and values use such data (saturation has its own test).
UNSATURATING_LEVEL = 64


def unsaturating_int8_weights(rng: np.random.Generator, shape) -> np.ndarray:
    """Random int8 weights no pair sum of which can saturate."""
    return rng.integers(-UNSATURATING_LEVEL, UNSATURATING_LEVEL + 1, shape).astype(np.int8)
