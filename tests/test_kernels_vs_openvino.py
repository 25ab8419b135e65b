"""The kernels against OpenVINO's native ops (CPU plugin, f32 inference precision) on generated cases.

Every case must match OpenVINO bit for bit, unless an entry of onnx_bridge.divergences claims it: then
the contract's value is asserted instead (kernel == the independent oracle) and the entry is recorded
(user property "divergences" of the test). Float ReduceL2 is the one tolerance: see _check_reduce_l2.
Cases claimed by ov-scatterupdate-duplicates-nondeterministic alone are still compared with OpenVINO,
on what its race leaves determined: see _check_duplicates.
Cases never hold out-of-range indices (they crash OpenVINO's CPU plugin or corrupt its heap).
"""
import functools
import math
from collections import Counter

import numpy as np
import pytest

import generated_cases
import oracle
from custom_ops import unit_of
from custom_ops._types import DATA_TYPES, is_float, type_name
from onnx_bridge import OpError, divergences
from onnx_bridge.divergences import Case

pytestmark = [pytest.mark.openvino, pytest.mark.filterwarnings("ignore::RuntimeWarning")]
BACKEND = "openvino-cpu"
#: The race of duplicate indices: OpenVINO is still compared on what it leaves determined (_check_duplicates).
DUPLICATES = "ov-scatterupdate-duplicates-nondeterministic"


@pytest.fixture(scope="module")
def ov():
    from onnx_bridge.backends import openvino
    return openvino


def _run_ov(ov, case):
    try:
        return ov.run(case.op, case.args, case.attributes)
    except (ov.OpenVINOError, OpError) as error:
        return error


def _check_contract(case):
    """The kernel's value is the contract's: equal to the oracle (float ReduceL2: within its bound). Ops
    the oracle does not implement are checked against OpenVINO by their unit's tests (test_unit_*.py)."""
    if case.op not in oracle.OPS:
        return
    expected = oracle.run(case)
    if oracle.is_float_l2(case):
        oracle.assert_l2_close(case.contract[0], expected[0], case.inputs["data"].dtype, oracle.l2_terms(case),
                               f"kernel {case}")
    else:
        oracle.assert_identical(case.contract, expected, f"kernel {case}")


def _check_reduce_l2(case, got):
    """Float ReduceL2: the kernel and OpenVINO may sum the squares in different orders (OpenVINO's CPU
    kernel vectorises, ours uses einsum), so neither is bit-exact against the other. Both must be within
    the float32 (float64) accumulation bound of the exact value computed by the oracle in float64."""
    exact = oracle.run(case)[0]
    dtype, terms = case.inputs["data"].dtype, oracle.l2_terms(case)
    oracle.assert_l2_close(case.contract[0], exact, dtype, terms, f"kernel {case}")
    oracle.assert_l2_close(got[0], exact, dtype, terms, f"openvino {case}")


def _same_elements(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise (broadcasting) identity of oracle.assert_identical: floats bit for bit up to the NaN
    payload (-0.0 is not 0.0)."""
    if is_float(got.dtype):
        g, w = got.astype(np.float64), want.astype(np.float64)
        return (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))
    return got == want


def _check_duplicates(case, got) -> None:
    """ScatterUpdate with duplicate indices, where OpenVINO's CPU plugin copies each (batch, index) block
    of updates in parallel (parallel_for2d + memcpy), so which duplicate lands is a race.

    Output blocks no duplicated index targets must equal the kernel's bit for bit; a block a duplicated
    index targets must be, per batch position (data.shape[:axis], each copied independently), exactly
    one of the update blocks aimed at it (any one: a mix of two, e.g. a torn copy, fails). The kernel's
    value there is the last one (the contract, asserted by _check_contract).
    """
    data, indices, updates = case.inputs["data"], case.inputs["indices"], case.inputs["updates"]
    want = case.contract[0]
    assert len(got) == 1 and got[0].dtype == want.dtype and got[0].shape == want.shape, (case, got)
    axis = int(case.inputs["axis"].reshape(-1)[0]) % data.ndim
    outer, size, inner = math.prod(data.shape[:axis]), data.shape[axis], math.prod(data.shape[axis + 1:])
    flat = indices.reshape(-1).astype(np.intp)
    blocks = got[0].reshape(outer, size, inner)
    sources = updates.reshape(outer, flat.size, inner)
    duplicated = np.bincount(flat, minlength=size) > 1
    oracle.assert_identical((blocks[:, ~duplicated],), (want.reshape(outer, size, inner)[:, ~duplicated],),
                            f"openvino vs kernel outside the duplicated indices on {case}")
    for target in np.flatnonzero(duplicated).tolist():
        candidates = sources[:, flat == target]  # (outer, duplicates, block)
        one_of = _same_elements(blocks[:, target, None], candidates).all(axis=-1).any(axis=-1)
        assert one_of.all(), (f"openvino's blocks at index {target} (batch positions "
                              f"{np.flatnonzero(~one_of).tolist()}) are none of the updates aimed there "
                              f"on {case}:\n got {got[0]!r}")


def check_case(ov, case, applied: Counter) -> None:
    claimed = {d.id for d in divergences.matching(BACKEND, case)}
    applied.update(claimed)
    if claimed - {DUPLICATES}:  # another known divergence: the contract's value, and the record
        if case.valid:
            _check_contract(case)
        else:
            assert isinstance(case.contract, OpError)
        return
    got = _run_ov(ov, case)
    if not case.valid:
        assert isinstance(got, Exception), f"OpenVINO accepted an invalid {case}: {got}"
        return
    assert not isinstance(got, Exception), f"OpenVINO failed on {case}: {got}"
    if claimed:  # DUPLICATES alone
        _check_contract(case)
        _check_duplicates(case, got)
        applied["duplicates compared"] += 1
    elif oracle.is_float_l2(case):
        _check_reduce_l2(case, got)
        applied["exact"] += 1
    else:
        oracle.assert_identical(got, case.contract, f"openvino vs kernel on {case}")
        applied["exact"] += 1


@functools.cache
def _groups_by_type(op):
    by_type = {}
    for label, cases in generated_cases.all_groups(op):
        by_type.setdefault(label.split("-")[0] if not label.endswith("-extra") else "extra", []).append(cases)
    return by_type


PARAMS = [(op, name) for op in generated_cases.GROUPS for name in
          [type_name(t) for t in DATA_TYPES if not (op == "ReduceL2" and t == np.bool_)]
          + (["extra"] if op in generated_cases.EXTRA else [])]


@pytest.mark.parametrize("op, type_", PARAMS, ids=[f"{op}-{t}" for op, t in PARAMS])
def test_generated_cases(ov, op, type_, record_property):
    groups = _groups_by_type(op)[type_]
    applied = Counter()
    for cases in groups:
        for case in cases:
            check_case(ov, case, applied)
    record_property("divergences", dict(applied))


@pytest.mark.parametrize("op", generated_cases.GROUPS)
def test_most_generated_cases_are_compared_exactly(op):
    """The divergence predicates claim a minority of the grid: most cases are compared bit for bit."""
    cases = [case for _, group in generated_cases.all_groups(op) for case in group]
    claimed = sum(bool(divergences.matching(BACKEND, case)) for case in cases)
    assert claimed <= 0.6 * len(cases), f"{claimed} of {len(cases)} {op} cases claimed by divergences"


# Invalid inputs OpenVINO must refuse as the contract does (out-of-range indices never reach OpenVINO:
# the backend refuses them, see divergence ov-scatter-index-out-of-range).
A, F32 = np.array, np.float32
INVALID = {
    "seu axis out of range": Case.of("ScatterElementsUpdate", data=np.zeros(4, F32), indices=A([0]),
                                     updates=A([1], F32), axis=A(1)),
    "seu rank mismatch": Case.of("ScatterElementsUpdate", data=np.zeros((2, 2), F32), indices=A([0]),
                                 updates=A([1], F32), axis=A(0)),
    "seu float indices": Case.of("ScatterElementsUpdate", data=np.zeros(4, F32), indices=A([0.0], F32),
                                 updates=A([1], F32), axis=A(0)),
    "seu mean on bool": Case.of("ScatterElementsUpdate", data=np.zeros(4, bool), indices=A([0]),
                                updates=A([True]), axis=A(0), reduction="mean"),
    "scatter_update updates shape": Case.of("ScatterUpdate", data=np.zeros(3, F32), indices=A([1]),
                                            updates=A([1, 2], F32), axis=A(0)),
    "reduce_l2 axis out of range": Case.of("ReduceL2", data=np.zeros((2, 2), F32), axes=A([2])),
    "reduce_l2 bool": Case.of("ReduceL2", data=np.zeros((2, 2), bool), axes=A([1])),
    "unique axis out of range": Case.of("Unique", data=np.zeros((2, 2), F32), axis=A(2)),
    "unique axis on 0-D data": Case.of("Unique", data=A(1.0, F32), axis=A(0)),
}


@pytest.mark.parametrize("name", INVALID)
def test_invalid_inputs_rejected_by_both(ov, name):
    case = INVALID[name]
    assert not case.valid and not divergences.matching(BACKEND, case)
    assert isinstance(_run_ov(ov, case), Exception)


OV_DIVERGENCES = [d for d in divergences.DIVERGENCES if d.backend == BACKEND]


@pytest.mark.parametrize("entry", OV_DIVERGENCES, ids=[d.id for d in OV_DIVERGENCES])
def test_divergence_is_real(ov, entry):
    """Each OpenVINO entry's example applies and still shows the divergence (remove entries OpenVINO fixed)."""
    case = entry.example()
    assert entry.applies(case), case
    got = _run_ov(ov, case)
    refusal = _refusal(case)
    assert refusal is None or entry.kind not in ("value", "nondeterministic"), \
        f"the example never reaches OpenVINO, so it cannot show the divergence: {refusal}"
    if refusal is not None:  # inputs that endanger OpenVINO: the backend raises the unit's refusal, never runs it
        assert isinstance(got, OpError) and str(got) == str(refusal), got
    elif entry.kind == "accepts":
        assert not isinstance(got, Exception), got
    elif entry.kind == "nondeterministic":
        # The run-to-run variation cannot be asserted in one run; the contract's value can, and what the
        # race leaves determined.
        _check_contract(case)
        if entry.id == DUPLICATES:
            _check_duplicates(case, got)
    elif entry.outcomes:  # depends on the machine or on what ran before: the contract's value or a measured outcome
        _check_contract(case)
        assert not isinstance(got, Exception), got
        assert _same(got, case.contract) or entry.outcome_of(case, got) is not None, got
    else:  # value / rejects: OpenVINO raises or returns something else than the contract
        _check_contract(case)
        assert isinstance(got, Exception) or not _same(got, case.contract), got


def _refusal(case) -> OpError | None:
    """The OpError the op's unit refuses `case` with before OpenVINO runs (its openvino.refuse), or None."""
    refuse = unit_of(case.op).openvino.refuse
    try:
        if refuse is not None:
            refuse(dict(case.inputs), case.spec.attribute_values(case.attributes))
    except OpError as error:
        return error
    return None


def _same(got, want) -> bool:
    try:
        oracle.assert_identical(got, want)
    except AssertionError:
        return False
    return True
