"""RandomUniform-8 (custom_ops/ops/random/random_uniform.py): OpenVINO's Philox stream reproduced bit-exactly.

The oracle is OpenVINO's reference implementation (Node.evaluate, also used by its constant folding): the
CPU plugin deviates from it (fused multiply-add for f32, f16/f64 generated as f32, i64 from one word), the
unit's declared divergences; where the CPU plugin agrees (i32 with ranges below 2^31) it is checked too.
"""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.unit import Case
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("RandomUniform")
CASES = check.cases(UNIT)


def reference_outputs(unit, case) -> list:
    """OpenVINO's reference implementation of the native op on the case (Node.evaluate)."""
    import openvino as ov
    arrays = [np.asarray(value) for value in case.inputs]
    constants = [ov.op.Constant(array).output(0) for array in arrays]
    attributes = unit.openvino.ov_attributes(unit.newest.attribute_values(case.attributes))
    node = unit.openvino.factory(ov, constants, attributes)
    out = [ov.Tensor(node.get_output_element_type(0), ov.Shape([int(d) for d in arrays[0]]))]
    assert node.evaluate(out, [ov.Tensor(array) for array in arrays])
    return [out[0].data.copy()]


def _bits(array):
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def assert_bit_exact(got, want, what):
    assert (got.dtype, got.shape) == (want.dtype, want.shape), what
    np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=what)


def _cpu_agrees(case) -> bool:
    """i32 outputs of rank >= 1 with max - min below 2^31: the CPU plugin equals the reference there."""
    low, high = (int(np.asarray(v).reshape(())) for v in case.inputs[1:])
    return np.asarray(case.inputs[1]).dtype == np.int32 and high - low < 2 ** 31 and case.inputs[0].size > 0


CPU_CASES = [case for seed in range(3) for case in check.cases(UNIT, seed) if _cpu_agrees(case)]


@pytest.fixture
def reference_oracle(monkeypatch):
    monkeypatch.setattr(check, "openvino_outputs", reference_outputs)


def test_kernel_bit_exact_with_openvino_reference_on_many_cases():
    count = 0
    for seed in range(8):
        for case in check.cases(UNIT, seed):
            assert_bit_exact(check.kernel_outputs(UNIT, case)[0], reference_outputs(UNIT, case)[0], case.id)
            count += 1
    assert count >= 200


def test_kernel_equals_cpu_plugin_where_it_follows_the_reference():
    assert len(CPU_CASES) >= 6
    for case in CPU_CASES:
        check.check_kernel_against_openvino(UNIT, case)


def test_cpu_plugin_f32_is_a_fused_multiply_add():
    """The declared f32 divergence: the CPU plugin rounds min + u * (max - min) once."""
    differ = 0
    from custom_ops.ops.random import _philox
    for case in [c for seed in range(3) for c in check.cases(UNIT, seed)
                 if c.inputs[1].dtype == np.float32 and c.inputs[0].size]:   # rank 0: another divergence
        got = check.kernel_outputs(UNIT, case)[0]
        low, high = (np.float32(np.asarray(v).reshape(())) for v in case.inputs[1:])
        words = _philox.words(got.size, case.attributes["global_seed"], case.attributes["op_seed"])
        unit = ((words & np.uint32(0x7FFFFF)) | np.uint32(127 << 23)).view(np.float32) - np.float32(1)
        fused = (unit.astype(np.float64) * np.float64(high - low) + np.float64(low)).astype(np.float32)
        cpu = check.openvino_outputs(UNIT, case)[0]
        np.testing.assert_array_equal(cpu.reshape(-1), fused)
        differ += int((cpu.reshape(-1) != got.reshape(-1)).sum())
    assert differ and any("fused multiply-add" in d.reason for d in UNIT.divergences)


@pytest.mark.parametrize("case", CASES[:10], ids=lambda c: c.id)
def test_import_and_session(case, reference_oracle):
    check.check_import_and_session(UNIT, case)


@pytest.mark.parametrize("case", CPU_CASES[:3], ids=lambda c: c.id)
def test_export_and_backend(case, tmp_path):
    check.check_export(UNIT, case, tmp_path)
    check.check_backend(UNIT, case)


@pytest.mark.parametrize("case", CASES[:5], ids=lambda c: c.id)
def test_schema_and_reference_evaluator(case):
    check.check_reference_and_schema(UNIT, case)


def test_known_values_and_statelessness():
    """Philox4x32-10 words of key 1, counter [0, 0, 2, 0] (TensorFlow's alignment), reduced mod 2^30;
    every run gives the same values (OpenVINO's second inference continues the stream instead)."""
    case = Case("known", (np.asarray([5], np.int64), np.asarray(0, np.int32), np.asarray(1 << 30, np.int32)),
                {"global_seed": 1, "op_seed": 2})
    first = check.kernel_outputs(UNIT, case)[0]
    np.testing.assert_array_equal(first, [657720527, 216909267, 1057429302, 168492509, 934592883])
    np.testing.assert_array_equal(check.kernel_outputs(UNIT, case)[0], first)


def test_both_seeds_zero_is_not_deterministic():
    case = Case("zero_seeds", (np.asarray([64], np.int64), np.asarray(0, np.float32), np.asarray(1, np.float32)), {})
    runs = [check.kernel_outputs(UNIT, case)[0] for _ in range(2)]
    assert not np.array_equal(*runs)
    assert ((runs[0] >= 0) & (runs[0] < 1)).all()


def test_pytorch_alignment_is_refused_at_import():
    import openvino as ov
    from openvino import opset8
    from converters.openvino_ir import import_ir
    from custom_ops.errors import ConversionError
    node = opset8.random_uniform(np.array([3], np.int64), np.float32(0), np.float32(1), "f32", 1, 2, "pytorch")
    with pytest.raises(ConversionError, match="unsupported configuration: RandomUniform-8(.|\n)*'pytorch'"):
        import_ir(ov.Model([node.output(0)], [], "pytorch_alignment"))


def test_further_inferences_are_exactly_the_declared_continuation():
    """The stream-continuation row explains the CPU plugin's 2nd, 3rd, ... inference of one compiled model
    (bit for bit, measured here on every request of it) and nothing else: a first inference that differed
    from the contract would stay unexplained."""
    import openvino as ov
    from onnx_bridge import divergences
    entry = divergences.BY_ID["ov-randomuniform-stream-continues"]
    assert entry.applies(entry.example()) and len(entry.outcomes) == 8
    wide = Case("wide", (np.asarray([6], np.int64), np.asarray(0, np.int32), np.asarray(1 << 30, np.int32)),
                {"global_seed": 5, "op_seed": 9})
    for case in CPU_CASES[:3] + [wide]:
        table_case = divergences.Case("RandomUniform", dict(zip(("output_shape", "min_val", "max_val"), case.inputs)),
                                      case.attributes)
        compiled = ov.Core().compile_model(check.openvino_model(UNIT, case), "CPU", check.CONFIG)
        feeds = check.feeds(UNIT, case)
        runs = [compiled.create_infer_request().infer(feeds)[0].copy() for _ in range(4)]
        first = check.kernel_outputs(UNIT, case)[0]
        np.testing.assert_array_equal(runs[0], first)
        assert not entry.explains(table_case, (first,))          # the first inference: nothing to explain
        for k, run in enumerate(runs[1:], start=2):
            assert entry.outcome_of(table_case, (run,)).where.startswith(f"inference {k} of one"), case.id
        if case is wide:
            wrong = first.copy()
            wrong.reshape(-1)[0] ^= 1                           # a first-inference disagreement
            assert not entry.explains(table_case, (wrong,)), case.id
