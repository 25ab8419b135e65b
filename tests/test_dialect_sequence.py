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
    assert check.check_generated_cases(UNITS[op], seeds=range(2)) >= 46


@pytest.mark.parametrize("op,case", [pytest.param(op, c, id=c.id) for op in OPS for c in check.cases(UNITS[op])[:3]])
def test_import_session_export_backend(op, case, tmp_path):
    check.check_end_to_end(UNITS[op], case, tmp_path)


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


CTC_LOSS = custom_ops.unit_of("CTCLoss")
#: libm: expf/log1pf/log of glibc against correctly rounded ones, a few ulps of the loss.
CTC_LOSS_LIBM = dict(rtol=8 * float(np.finfo(np.float32).eps), atol=0)


def test_ctc_loss_matches_openvino_on_generated_cases():
    count = exact = 0
    for seed in range(3):
        for case in check.cases(CTC_LOSS, seed):
            got, want = check.kernel_outputs(CTC_LOSS, case), check.openvino_outputs(CTC_LOSS, case)
            check.assert_same(got, want, case.id, CTC_LOSS_LIBM)
            exact += np.array_equal(got[0], want[0])
            count += 1
    assert count == 72 and exact >= 50


@pytest.mark.parametrize("case", check.cases(CTC_LOSS)[:3], ids=lambda c: c.id)
def test_ctc_loss_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(CTC_LOSS, case, tmp_path, CTC_LOSS_LIBM)


@pytest.mark.parametrize("case,message", CTC_LOSS.bad_cases(), ids=lambda c: getattr(c, "id", ""))
def test_ctc_loss_bad_inputs_raise_op_error(case, message):
    check.check_bad_case(CTC_LOSS, case, message)


def test_ctc_loss_of_one_step_is_minus_log_softmax():
    logits = np.array([[[0.5, -1.0, 2.0]]], np.float32)
    (loss,) = check.kernel_outputs(CTC_LOSS, Case("one", (logits, np.array([1], np.int32), np.array([[1]], np.int32),
                                                           np.array([1], np.int32)), {}))
    want = -(logits[0, 0, 1] - np.log(np.exp(logits[0, 0].astype(np.float64)).sum()))
    np.testing.assert_allclose(loss, [want], rtol=1e-6)
