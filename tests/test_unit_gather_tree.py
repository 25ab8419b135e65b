"""GatherTree-1, the first op written as one unit (custom_ops/ops/sequence/gather_tree.py): kernel vs
OpenVINO CPU on generated cases, IR import -> InferenceSession, export to IR, backend, schema and
reference evaluator, refused inputs, and the CPU plugin's divergences the contract does not follow."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
import custom_ops.errors
from custom_ops.ops.sequence import gather_tree
from custom_ops.unit import Case
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("GatherTree")
CASES = check.cases(UNIT)


def test_kernel_matches_openvino_on_many_cases():
    assert check.check_generated_cases(UNIT, seeds=range(4)) >= 50


@pytest.mark.parametrize("case", CASES[:4], ids=lambda c: c.id)
def test_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path)


def test_float16_through_the_session():
    """float16 is widened to float32 around the PyOp and computed (compared) in float16."""
    case = next(c for c in CASES if c.inputs[0].dtype == np.float16)
    check.check_import_and_session(UNIT, case)


def test_unused_out_of_range_parent_is_ignored_as_openvino_does():
    """A parent beyond max_seq_len, or read at time 0, is never followed: no error, OpenVINO agrees."""
    i32 = lambda a: np.array(a, np.int32)  # noqa: E731
    step = i32([[[1, 2]], [[3, 4]], [[5, 6]]])
    parent = i32([[[7, -3]], [[1, 0]], [[9, 9]]])  # time 0: read, unused; time 2: beyond length 2
    case = Case("unused_parents", (step, parent, i32([2]), i32(0)))
    check.check_kernel_against_openvino(UNIT, case)
    np.testing.assert_array_equal(check.kernel_outputs(UNIT, case)[0], i32([[[2, 1]], [[3, 4]], [[0, 0]]]))


def test_end_token_compared_in_the_element_type():
    """2.5 is not end_token 2.0 (OpenVINO's reference truncates both to indices; its CPU plugin and the
    contract compare values)."""
    f32 = lambda a: np.array(a, np.float32)  # noqa: E731
    case = Case("fractional_ids", (f32([[[2.5]], [[2.0]], [[7.0]]]), f32(np.zeros((3, 1, 1))), f32([3]), f32(2.0)))
    check.check_kernel_against_openvino(UNIT, case)
    np.testing.assert_array_equal(check.kernel_outputs(UNIT, case)[0].reshape(-1), [2.5, 2.0, 2.0])


def test_zero_length_is_all_end_token():
    """max_seq_len 0: every step of that batch is end_token (the CPU plugin leaves uninitialised memory
    there: a declared divergence, so OpenVINO is not the oracle here)."""
    i32 = lambda a: np.array(a, np.int32)  # noqa: E731
    out = check.kernel_outputs(UNIT, Case("zero", (i32(np.ones((2, 2, 1))), i32(np.zeros((2, 2, 1))),
                                                   i32([0, 2]), i32(7))))[0]
    np.testing.assert_array_equal(out[:, 0], 7)
    np.testing.assert_array_equal(out[:, 1], 1)
    assert "ov-gathertree-zero-length" in {row.id for row in UNIT.divergences}


def test_import_rule_is_listed_as_dialect():
    from converters.openvino_ir._registry import op_table
    line = next(row for row in op_table(markdown=True).splitlines() if row.startswith("| GatherTree-1 "))
    assert "GatherTree (org.openvinotoolkit)" in line


@pytest.mark.parametrize("row", UNIT.divergences, ids=lambda row: row.id)
def test_declared_openvino_divergence_is_real(row):
    """Each declared CPU-plugin divergence shows on its example, and onnx_bridge.divergences lists it."""
    from onnx_bridge import divergences
    entry = divergences.BY_ID[row.id]
    assert entry.applies(entry.example()) and entry.ops == ("GatherTree",)
    case = row.example
    if row.kind == "rejects":
        with pytest.raises(RuntimeError, match="precision"):
            check.openvino_outputs(UNIT, case)
        return
    got = check.openvino_outputs(UNIT, case)  # runs: "value" differs, "accepts" runs what we refuse
    if row.kind == "accepts":
        with pytest.raises(custom_ops.errors.OpError):
            check.kernel_outputs(UNIT, case)
    else:
        assert not np.array_equal(got[0], check.kernel_outputs(UNIT, case)[0]), got


def test_integer_parents_traced_like_float_parents():
    """Integer parents take the doubling scan over time, float parents the step by step trace: the same
    beams on long sequences of mixed lengths (every batch's trace crosses several scan strides)."""
    rng = np.random.default_rng(5)
    step, parent = rng.integers(0, 9, (37, 3, 4)), rng.integers(0, 4, (37, 3, 4))
    lengths, end = np.array([37, 20, 1]), 99            # no step id is end_token: every traced id shows
    ints = gather_tree.gather_tree(*(np.asarray(a, np.int32) for a in (step, parent, lengths, end)))
    floats = gather_tree.gather_tree(*(np.asarray(a, np.float64) for a in (step, parent, lengths, end)))
    np.testing.assert_array_equal(ints, floats)
    assert (ints[:20, 1] != 99).all() and (ints[20:, 1] == 99).all() and (ints[1:, 2] == 99).all()


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_out_of_range_parent_reported_at_the_latest_time_followed(dtype):
    """Of two followed parents out of range, the error names the one the trace back meets first (the
    later time: 4 in batch 0 before 2 in batch 1), whichever path traces."""
    parent = np.zeros((6, 2, 2), dtype)
    parent[5, 0], parent[4, 0, 1], parent[2, 1, 0] = 1, -1, 7   # batch 0 follows beam 1 at time 4
    with pytest.raises(custom_ops.errors.OpError, match="at time 4.*-1"):
        gather_tree.gather_tree(np.zeros((6, 2, 2), dtype), parent, np.array([6, 6], dtype), np.asarray(0, dtype))
