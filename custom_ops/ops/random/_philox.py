"""Philox4x32-10 as OpenVINO's RandomUniform uses it (TensorFlow's alignment), vectorised over blocks.

Block n (0, 1, ...; or from `first_block`) runs the counter [n low, n high, op_seed low, op_seed high]
through ten rounds keyed by [global_seed low, global_seed high] and yields four 32-bit words. 32-bit outputs take one word each, 64-bit
outputs two: the words of block n fill elements in order, surplus words of the last block are dropped.
"""
from __future__ import annotations

import numpy as np

ROUNDS = 10
MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
_LOW = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)


def words(count: int, global_seed: int, op_seed: int, first_block: int = 0) -> np.ndarray:
    """The first `count` 32-bit words (uint32) of the stream of (global_seed, op_seed), both uint64, from
    block `first_block` on (below 2^64 - blocks: the carry into op_seed's words is not modelled)."""
    blocks = -(-count // 4)
    n = np.arange(first_block, first_block + blocks, dtype=np.uint64)
    c0, c1 = n & _LOW, n >> _32
    c2 = np.full(blocks, op_seed & 0xFFFFFFFF, np.uint64)
    c3 = np.full(blocks, op_seed >> 32, np.uint64)
    k0, k1 = global_seed & 0xFFFFFFFF, global_seed >> 32
    m0, m1 = np.uint64(MULTIPLIERS[0]), np.uint64(MULTIPLIERS[1])
    for _ in range(ROUNDS):
        p0, p1 = m0 * c0, m1 * c2                      # 32 x 32 -> 64 bits: exact in uint64
        c0, c1, c2, c3 = ((p1 >> _32) ^ c1 ^ np.uint64(k0), p1 & _LOW,
                          (p0 >> _32) ^ c3 ^ np.uint64(k1), p0 & _LOW)
        k0, k1 = (k0 + KEY_STEPS[0]) & 0xFFFFFFFF, (k1 + KEY_STEPS[1]) & 0xFFFFFFFF
    return np.stack([c0, c1, c2, c3], axis=1).reshape(-1)[:count].astype(np.uint32)


def pairs(count: int, global_seed: int, op_seed: int, high_first: bool, first_block: int = 0) -> np.ndarray:
    """`count` 64-bit values (uint64) from consecutive word pairs (w0, w1): w0 high if high_first."""
    w = words(2 * count, global_seed, op_seed, first_block).astype(np.uint64)
    first, second = w[0::2], w[1::2]
    return (first << _32) | second if high_first else (second << _32) | first
