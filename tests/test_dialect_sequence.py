"""The CTC units (custom_ops/ops/sequence): CTCGreedyDecoder-1 and CTCGreedyDecoderSeqLen-6 vs OpenVINO CPU
on generated cases (ties, masks with holes, optional blank_index, i32/i64 outputs), IR import ->
InferenceSession, export to IR, backend, schema and reference evaluator, refused inputs."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.errors import OpError
from custom_ops.unit import Case
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

OPS = ("CTCGreedyDecoder", "CTCGreedyDecoderSeqLen")
UNITS = {op: custom_ops.unit_of(op) for op in OPS}


@pytest.mark.parametrize("op", OPS)
def test_kernel_matches_openvino_on_generated_cases(op):
    count = 0
    for seed in range(2):
        for case in check.cases(UNITS[op], seed):
            check.check_kernel_against_openvino(UNITS[op], case)
            count += 1
    assert count >= 46


@pytest.mark.parametrize("op,case", [pytest.param(op, c, id=c.id) for op in OPS for c in check.cases(UNITS[op])[:3]])
def test_import_session_export_backend(op, case, tmp_path):
    check.check_import_and_session(UNITS[op], case)
    check.check_export(UNITS[op], case, tmp_path)
    check.check_backend(UNITS[op], case)
    check.check_reference_and_schema(UNITS[op], case)


@pytest.mark.parametrize("op,case,message", [pytest.param(op, c, m, id=f"{op}-{c.id}")
                                             for op in OPS for c, m in UNITS[op].bad_cases()])
def test_bad_inputs_raise_op_error(op, case, message):
    check.check_bad_case(UNITS[op], case, message)


def test_nan_scores_follow_max_element():
    """A NaN score never becomes the maximum after the first class (std::max_element); numpy's argmax
    would pick it."""
    data = np.array([[[0.5, np.nan, 2.0, 0.1]]], np.float32)          # [N=1, T=1, C=4], blank 3
    decoded, length = check.kernel_outputs(UNITS["CTCGreedyDecoderSeqLen"],
                                           Case("nan", (data, np.array([1], np.int32)), {}))
    assert decoded.tolist() == [[2]] and length.tolist() == [1]


def test_float_lengths_are_refused():
    with pytest.raises(OpError, match="sequence_length"):
        check.kernel_outputs(UNITS["CTCGreedyDecoderSeqLen"],
                             Case("f", (np.zeros((1, 2, 3), np.float32), np.array([1.0], np.float32)), {}))
