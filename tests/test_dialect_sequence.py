"""The CTC units (custom_ops/ops/sequence): CTCGreedyDecoder-1 and CTCGreedyDecoderSeqLen-6 vs OpenVINO CPU
on generated cases (ties, masks with holes, optional blank_index, i32/i64 outputs), IR import ->
InferenceSession, export to IR, backend, schema and reference evaluator, refused inputs."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.errors import OpError
from custom_ops.unit import Case
from tests.helpers import expf
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


def test_ctc_loss_matches_openvino_on_generated_cases():
    """Bit for bit; a case the declared ov-ctcloss-libm-last-bits claims (glibc's expf / log1pf not
    correctly rounded) with the C functions in the kernel."""
    count = claimed = 0
    for seed in range(3):
        for case in check.cases(CTC_LOSS, seed):
            claimed += expf.check_with_c_libm(CTC_LOSS, case)
            count += 1
    assert count == 72 and claimed <= 8


def test_ctc_loss_libm_divergence_is_the_c_functions():
    expf.check_example(CTC_LOSS, "ov-ctcloss-libm-last-bits")


@pytest.mark.parametrize("case", [c for c in check.cases(CTC_LOSS) if not expf.claimed(CTC_LOSS, c)][:3],
                         ids=lambda c: c.id)
def test_ctc_loss_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(CTC_LOSS, case, tmp_path)


@pytest.mark.parametrize("case,message", CTC_LOSS.bad_cases(), ids=lambda c: getattr(c, "id", ""))
def test_ctc_loss_bad_inputs_raise_op_error(case, message):
    check.check_bad_case(CTC_LOSS, case, message)


def test_ctc_loss_of_one_step_is_minus_log_softmax():
    logits = np.array([[[0.5, -1.0, 2.0]]], np.float32)
    (loss,) = check.kernel_outputs(CTC_LOSS, Case("one", (logits, np.array([1], np.int32), np.array([[1]], np.int32),
                                                           np.array([1], np.int32)), {}))
    want = -(logits[0, 0, 1] - np.log(np.exp(logits[0, 0].astype(np.float64)).sum()))
    np.testing.assert_allclose(loss, [want], rtol=1e-6)
