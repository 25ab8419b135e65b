"""The FakeConvert-13 unit (custom_ops/ops/quantization/fake_convert.py) vs OpenVINO CPU: the generated cases
bit for bit (f16/f32, both destination types, per-tensor and per-channel scales, shift or none), every f16
value through both destination types, bf16 data, the rounding of ml_dtypes against OpenVINO's own Convert to
f8, the declared divergences, IR import -> InferenceSession, export to IR, backend, schema and reference
evaluator."""
from __future__ import annotations

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

import custom_ops  # noqa: E402
from custom_ops._types import BFLOAT16  # noqa: E402
from custom_ops.unit import Case  # noqa: E402
from tests.helpers import units as check  # noqa: E402

from openvino import opset1, opset13  # noqa: E402

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("FakeConvert")
LARGEST = {"f8e4m3": 448.0, "f8e5m2": 57344.0}
EVERY_F16 = np.arange(0, 1 << 16, dtype=np.uint16).view(np.float16)


def _bits_equal(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), what
    width = np.uint16 if got.dtype.itemsize == 2 else np.uint32
    nan = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
    differ = (got.view(width) != want.view(width)) & ~nan
    assert not differ.any(), f"{what}: {differ.sum()} differ, e.g. {got[differ][:4]} vs {want[differ][:4]}"


def _cpu(data, scale, shift, destination):
    x = opset1.parameter(list(data.shape), ov.Type(data.dtype), name="data")
    node = opset13.fake_convert(x, scale, shift, destination)
    return ov.Core().compile_model(ov.Model([node.output(0)], [x]), "CPU", check.CONFIG)({"data": data})[0]


def test_kernel_matches_openvino_bit_for_bit():
    count = 0
    for seed in range(3):
        for case in check.cases(UNIT, seed):
            _bits_equal(check.kernel_outputs(UNIT, case)[0], check.openvino_outputs(UNIT, case)[0], case.id)
            count += 1
    assert count == 54


@pytest.mark.parametrize("destination", ["f8e4m3", "f8e5m2"])
def test_every_f16_value(destination):
    """All 65536 f16 values (scale 1, no shift): OpenVINO's CPU equals the kernel except on NaN, which it
    saturates (the declared divergence)."""
    one = np.ones(1, np.float16)
    (got,) = check.kernel_outputs(UNIT, Case("all", (EVERY_F16, one, None), {"destination_type": destination}))
    cpu = _cpu(EVERY_F16, one, None, destination)
    nan = np.isnan(EVERY_F16)
    _bits_equal(got[~nan], cpu[~nan], f"every f16 ({destination})")
    assert np.isnan(got[nan]).all() and (np.abs(cpu[nan]) == LARGEST[destination]).all()
    assert (got[np.isinf(EVERY_F16)] == np.sign(EVERY_F16[np.isinf(EVERY_F16)]) * LARGEST[destination]).all()


@pytest.mark.parametrize("destination", ["f8e4m3", "f8e5m2"])
def test_rounding_is_openvinos_convert(destination):
    """Within the 8-bit range the rounding (ml_dtypes: nearest even, subnormals) is OpenVINO's own Convert
    f16 -> f8 -> f16 on every finite f16 value; beyond it Convert overflows where FakeConvert saturates."""
    from custom_ops.ops.quantization.fake_convert import quantize
    x = opset1.parameter([EVERY_F16.size], ov.Type.f16, name="x")
    back = opset1.convert(opset1.convert(x, destination), "f16")
    converted = ov.Core().compile_model(ov.Model([back.output(0)], [x]), "CPU", check.CONFIG)({"x": EVERY_F16})[0]
    inside = np.abs(EVERY_F16.astype(np.float32)) <= LARGEST[destination]
    _bits_equal(quantize(EVERY_F16[inside], destination), converted[inside], f"Convert to {destination}")


@pytest.mark.parametrize("destination", ["f8e4m3", "f8e5m2"])
def test_bf16_data(destination):
    """bf16 data (built as f32 -> Convert, OpenVINO's Python API has no bf16 Parameter): the kernel's bf16
    arithmetic is OpenVINO's on CPUs with native bf16; elsewhere OpenVINO computes it in f32."""
    r = np.random.default_rng(len(destination) + 13)
    data = (r.standard_normal(4096) * np.exp2(r.uniform(-14, 10, 4096))).astype(BFLOAT16)
    scale, shift = np.array([0.5], BFLOAT16), np.array([0.25], BFLOAT16)
    x = opset1.parameter([data.size], ov.Type.f32, name="x")
    scale_node, shift_node = (opset1.convert(opset1.constant(v.astype(np.float32)), "bf16") for v in (scale, shift))
    node = opset13.fake_convert(opset1.convert(x, "bf16"), scale_node, shift_node, destination)
    model = ov.Model([opset1.convert(node, "f32").output(0)], [x])
    cpu = ov.Core().compile_model(model, "CPU", check.CONFIG)({"x": data.astype(np.float32)})[0]
    if not _native_bf16():
        # without bf16 instructions the CPU plugin runs the whole bf16 subgraph in f32: its output is the f32
        # formula bit for bit (measured on AVX2), not bf16 arithmetic, so it cannot check the kernel there
        from custom_ops.ops.quantization.fake_convert import quantize
        d, s, h = (v.astype(np.float32) for v in (data, scale, shift))
        _bits_equal(cpu, (quantize(d * s - h, destination).astype(np.float32) + h) / s, f"f32 ({destination})")
        return
    (got,) = check.kernel_outputs(UNIT, Case("bf16", (data, scale, shift), {"destination_type": destination}))
    _bits_equal(got.astype(np.float32), cpu, f"bf16 ({destination})")


def _native_bf16() -> bool:
    """The x86 CPU computes bf16 natively (AVX-512 BF16 or AMX); True where the flags are not known."""
    from onnx_bridge.compare_explain import cpu_flags

    flags = cpu_flags()
    return flags is None or bool({"avx512_bf16", "amx_bf16"} & flags)


def test_cpu_divides_by_multiplying_with_the_reciprocal():
    """Scales that are not powers of two: the kernel divides (the spec); the CPU's product with 1 / scale
    differs in the last bit only, as the divergence row says."""
    from onnx_bridge import divergences
    r = np.random.default_rng(37)
    data = (r.standard_normal(20000) * 30).astype(np.float32)
    scale, shift = np.array([0.37], np.float32), np.array([0.11], np.float32)
    case = Case("reciprocal", (data, scale, shift), {"destination_type": "f8e4m3"})
    (got,) = check.kernel_outputs(UNIT, case)
    from custom_ops.ops.quantization.fake_convert import quantize
    quantized = quantize((data * scale - shift).astype(np.float32), "f8e4m3")
    np.testing.assert_array_equal(got, (quantized + shift) / scale)
    cpu = _cpu(data, scale, shift, "f8e4m3")
    np.testing.assert_array_equal(cpu, (quantized + shift) * (np.float32(1) / scale))
    assert (cpu != got).any()
    row = divergences.Case(UNIT.op_type, {"data": data, "scale": scale, "shift": shift}, case.attributes)
    assert [d.id for d in divergences.matching("openvino-cpu", row)] == ["ov-fake-convert-reciprocal-scale"]


@pytest.mark.parametrize("case", check.cases(UNIT)[:4], ids=lambda c: c.id)
def test_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path)


def test_a_zero_shift_is_added():
    """-0 + 0 is +0 (the spec's formula); OpenVINO's CPU leaves a zero shift out (the declared divergence)."""
    from onnx_bridge import divergences
    data, one, zero = np.array([-0.0001, -0.0, 3.0], np.float32), np.ones(1, np.float32), np.zeros(1, np.float32)
    (got,) = check.kernel_outputs(UNIT, Case("zero", (data, one, zero), {"destination_type": "f8e4m3"}))
    assert not np.signbit(got[:2]).any()
    (without,) = check.kernel_outputs(UNIT, Case("none", (data, one, None), {"destination_type": "f8e4m3"}))
    cpu = _cpu(data, one, zero, "f8e4m3")
    assert np.signbit(without[:2]).all() and np.signbit(cpu[:2]).all()
    row = divergences.Case(UNIT.op_type, {"data": data, "scale": one, "shift": zero}, {"destination_type": "f8e4m3"})
    assert [d.id for d in divergences.matching("openvino-cpu", row)] == ["ov-fake-convert-zero-shift-keeps-negative-zero"]
