"""Multinomial-13 (custom_ops/ops/random/multinomial.py): OpenVINO's reference sampling (RandomUniform's Philox
stream in probs' type, inverse CDF) reproduced bit-exactly.

OpenVINO's reference cannot be run from Python (Node.evaluate has no Multinomial), so the oracles are: a literal
transcription of the reference's loops (with RandomUniform's stream, itself checked bit-exact against OpenVINO's
reference in test_unit_random_uniform.py), and the CPU plugin given its own generator: with std::mt19937 /
std::seed_seq emulated here, the contract's sampling reproduces the CPU plugin's samples bit for bit, so the
generator is the declared divergence and nothing else differs.
"""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.ops import _libm
from custom_ops.ops.random import multinomial as mn
from custom_ops.ops.random.random_uniform import random_uniform
from custom_ops.unit import Case
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("Multinomial")
CASES = check.cases(UNIT)
_M = 0xFFFFFFFF


def reference_transcription(case) -> np.ndarray:
    """OpenVINO's reference (reference/multinomial.hpp) loop for loop, every operation in T."""
    probs, num_samples = case.inputs
    a = case.attributes
    T = probs.dtype.type
    rows = probs.reshape(-1, probs.shape[-1])
    classes, count = rows.shape[1], int(np.asarray(num_samples).reshape(()))
    values = [[T(_libm.c_exp(v)) if a["log_probs"] else v for v in row] for row in rows]   # std::exp
    cdf = []
    for row in values:
        sums = [row[0]]
        for v in row[1:]:
            sums.append(T(sums[-1] + v))
        cdf.append([T(c / sums[-1]) for c in sums])
    shape = (count,) if probs.ndim == 1 else (rows.shape[0], count)
    uniform = random_uniform(np.asarray(shape, np.int64), np.zeros((), probs.dtype), np.ones((), probs.dtype),
                             a["global_seed"], a["op_seed"]).reshape(-1)
    out = np.zeros(rows.shape[0] * count, np.int64)
    for i in range(rows.shape[0]):
        line = cdf[i]
        for j in range(count):
            selected = classes
            for k in range(classes):
                if uniform[i * count + j] <= line[k]:
                    out[i * count + j], selected = k, k
                    break
            if not a["with_replacement"]:
                p = T(line[selected] - line[selected - 1]) if selected else line[0]
                with np.errstate(divide="ignore", invalid="ignore"):
                    divisor = T(T(1) - p)
                    line = [T(T(c - p) if k >= selected else c) / divisor for k, c in enumerate(line)]
    return out.astype(mn.CONVERT_TYPES[a["convert_type"]]).reshape(shape)


# The CPU plugin's generator, emulated ---------------------------------------------------------------

def _seed_seq(seeds, n=624) -> list:
    """std::seed_seq{seeds...}.generate(n words) (C++ [rand.util.seedseq]); seeds taken as 32-bit."""
    v = [s & _M for s in seeds]
    b, s = [0x8B8B8B8B] * n, len(v)
    t = 11 if n >= 623 else 7 if n >= 68 else 5 if n >= 39 else 3 if n >= 7 else (n - 1) // 2
    p, m = (n - t) // 2, max(s + 1, n)
    q = p + t
    mix = lambda x: x ^ (x >> 27)  # noqa: E731
    for k in range(m):
        r1 = (1664525 * mix(b[k % n] ^ b[(k + p) % n] ^ b[(k - 1) % n])) & _M
        r2 = (r1 + (s if k == 0 else (k % n) + v[k - 1] if k <= s else k % n)) & _M
        b[(k + p) % n] = (b[(k + p) % n] + r1) & _M
        b[(k + q) % n] = (b[(k + q) % n] + r2) & _M
        b[k % n] = r2
    for k in range(m, m + n):
        r3 = (1566083941 * mix((b[k % n] + b[(k + p) % n] + b[(k - 1) % n]) & _M)) & _M
        r4 = (r3 - k % n) & _M
        b[(k + p) % n] ^= r3
        b[(k + q) % n] ^= r4
        b[k % n] = r4
    return b


def mt19937_words(count: int, global_seed: int, op_seed: int) -> np.ndarray:
    """std::mt19937 seeded with std::seed_seq{global_seed, op_seed}: its first `count` words."""
    generator = np.random.MT19937(0)
    generator.state = {"bit_generator": "MT19937",
                       "state": {"key": np.array(_seed_seq([global_seed, op_seed]), np.uint32), "pos": 624}}
    return generator.random_raw(count).astype(np.uint32)


def cpu_plugin_emulated(case) -> np.ndarray:
    """The contract's sampling with the CPU plugin's uniform values and precision (f64/f16 as f32)."""
    probs, num_samples = case.inputs
    a = case.attributes
    P = np.float32
    x = probs.astype(P)
    count = int(np.asarray(num_samples).reshape(()))
    if a["log_probs"]:      # exp(p) + cdf[k - 1] in float, as it writes it
        e = _libm.c_exp(x)
        cdf = np.empty_like(x)
        for k in range(x.shape[1]):
            cdf[:, k] = e[:, k] if k == 0 else e[:, k] + cdf[:, k - 1]
    else:
        cdf = np.cumsum(x, axis=1, dtype=P)
    words = mt19937_words(x.shape[0] * count, a["global_seed"], a["op_seed"])
    uniform = (words.astype(P) / P(4294967295.0)).reshape(x.shape[0], count)
    return mn.draw(cdf / cdf[:, -1:], uniform, a["with_replacement"]).astype(mn.CONVERT_TYPES[a["convert_type"]])


@pytest.fixture
def reference_oracle(monkeypatch):
    monkeypatch.setattr(check, "openvino_outputs", lambda unit, case: [reference_transcription(case)])


def test_mt19937_emulation_is_the_standard_one():
    """std::mt19937 with std::seed_seq{1, 2} (values printed by a C++ program) and the 32-bit seed truncation."""
    np.testing.assert_array_equal(mt19937_words(5, 1, 2), [3232623227, 3218984147, 1585538226, 694568912, 1813065045])
    np.testing.assert_array_equal(mt19937_words(3, (1 << 40) + 7, (5 << 33) + 3), [351790320, 3488955865, 1077926635])


def test_kernel_equals_the_reference_transcription_on_many_cases():
    count = 0
    for seed in range(6):
        for case in check.cases(UNIT, seed):
            got = check.kernel_outputs(UNIT, case)[0]
            want = reference_transcription(case)
            assert (got.dtype, got.shape) == (want.dtype, want.shape), case.id
            np.testing.assert_array_equal(got, want, err_msg=case.id)
            count += 1
    assert count >= 90


def test_cpu_plugin_equals_the_contract_given_its_generator():
    """Every generated case: the CPU plugin's samples are the contract's sampling of its own mt19937 values."""
    differ = 0
    for seed in range(4):
        for case in check.cases(UNIT, seed):
            cpu = check.openvino_outputs(UNIT, case)[0]
            np.testing.assert_array_equal(cpu, cpu_plugin_emulated(case), err_msg=case.id)
            differ += not np.array_equal(cpu, check.kernel_outputs(UNIT, case)[0])
    assert differ >= 10


def test_exp_is_openvino_references_exp():
    """The log-probability exp equals OpenVINO's reference Exp (Node.evaluate, std::exp) bit for bit, for f32
    and f16 (numpy's own exp, or exp in double rounded, differ in the last bit on some of these values)."""
    import openvino as ov
    from openvino import opset1
    r = np.random.default_rng(5)
    sample = np.concatenate([r.normal(0, 3, 20000), r.uniform(-80, 10, 20000)])
    for dtype in (np.float32, np.float16):
        x = sample.astype(dtype)
        out = [ov.Tensor(ov.Type(np.dtype(dtype)), ov.Shape([x.size]))]
        assert opset1.exp(ov.op.Constant(x)).evaluate(out, [ov.Tensor(x)])
        np.testing.assert_array_equal(_libm.c_exp(x).view(np.uint8), out[0].data.view(np.uint8), err_msg=str(dtype))
    x = sample.astype(np.float32)
    assert (np.exp(x.astype(np.float64)).astype(np.float32) != _libm.c_exp(x)).any()   # the last bit matters


def test_samples_follow_the_distribution():
    probs = np.asarray([[0.1, 0.5, 0.4], [0.0, 0.25, 0.75]], np.float32)
    case = Case("many", (probs, np.asarray(20000, np.int64)),
                {"convert_type": "i64", "with_replacement": 1, "log_probs": 0, "global_seed": 3, "op_seed": 4})
    samples = check.kernel_outputs(UNIT, case)[0]
    for row, want in zip(samples, probs):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / row.size, want, atol=0.015)
    logs = dict(case.attributes, log_probs=1)
    with np.errstate(divide="ignore"):               # log 0 = -inf: probability 0
        logs_of = np.log(probs[1:])
    again = check.kernel_outputs(UNIT, Case("logs", (logs_of, case.inputs[1]), logs))[0]
    np.testing.assert_allclose(np.bincount(again[0], minlength=3) / again.size, probs[1], atol=0.015)


def test_without_replacement_never_repeats():
    for seed in range(20):
        r = np.random.default_rng(seed)
        probs = r.random((3, 6)).astype(np.float32)
        case = Case("unique", (probs, np.asarray(6, np.int32)),
                    {"convert_type": "i32", "with_replacement": 0, "log_probs": 0, "global_seed": seed + 1,
                     "op_seed": 0})
        for row in check.kernel_outputs(UNIT, case)[0]:
            assert sorted(row) == list(range(6))


def test_draw_follows_the_specification_example():
    """Example 1 of the specification: cdf [0.1, 0.6, 1], uniform values 0.2 ... 1 -> classes 1, 1, 1, 2, 2."""
    cdf = np.asarray([[0.1, 0.6, 1.0]])
    np.testing.assert_array_equal(mn.draw(cdf, np.asarray([[0.2, 0.4, 0.6, 0.8, 1.0]]), True), [[1, 1, 1, 2, 2]])


@pytest.mark.parametrize("case", CASES[:6], ids=lambda c: c.id)
def test_import_and_session(case, reference_oracle):
    check.check_import_and_session(UNIT, case)


@pytest.mark.parametrize("case", CASES[:3], ids=lambda c: c.id)
def test_export(case, tmp_path):
    check.check_export(UNIT, case, tmp_path)      # OpenVINO against itself: the native op is exported


@pytest.mark.parametrize("case", CASES[:5], ids=lambda c: c.id)
def test_schema_and_reference_evaluator(case):
    check.check_reference_and_schema(UNIT, case)


def test_both_seeds_zero_is_not_deterministic():
    case = Case("zero_seeds", (np.ones((1, 50), np.float32), np.asarray(64, np.int64)),
                {"convert_type": "i64", "with_replacement": 1, "log_probs": 0})
    assert not np.array_equal(*[check.kernel_outputs(UNIT, case)[0] for _ in range(2)])


@pytest.mark.parametrize("row", UNIT.divergences, ids=lambda row: row.id)
def test_declared_divergence_is_real_and_precise(row):
    from onnx_bridge import divergences
    entry = divergences.BY_ID[row.id]
    assert entry.applies(entry.example()) and entry.ops == ("Multinomial",)
    cpu = check.openvino_outputs(UNIT, row.example)[0]
    assert not np.array_equal(cpu, check.kernel_outputs(UNIT, row.example)[0])
    np.testing.assert_array_equal(cpu, cpu_plugin_emulated(row.example))
    # it does not claim the cases where every generator agrees: one positive class, no samples
    for probs, samples in (([[0.0, 2.0, 0.0]], 5), ([[0.5, 0.5]], 0)):
        case = Case("agrees", (np.asarray(probs, np.float32), np.asarray(samples, np.int64)), row.example.attributes)
        assert not entry.applies(divergences.Case("Multinomial", dict(zip(("probs", "num_samples"), case.inputs)),
                                                  case.attributes))
        np.testing.assert_array_equal(check.openvino_outputs(UNIT, case)[0], check.kernel_outputs(UNIT, case)[0])
