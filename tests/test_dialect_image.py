"""The DeformableConvolution-8 (-1) unit (custom_ops/ops/image) vs OpenVINO CPU on generated cases (groups,
deformable groups, optional mask, bilinear_interpolation_pad, auto_pad, offsets reaching outside the map):
bit for bit where the summation order cannot matter (small integers and halves), within ACCUMULATION
elsewhere; IR import (-8 and -1) -> InferenceSession, export to IR, backend, schema, reference evaluator,
refused inputs."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNIT = custom_ops.unit_of("DeformableConvolution")


def _halves(case) -> bool:
    """Every input a multiple of 1/2 (the generator's small-integer cases): every summation order gives the
    same sums, so the comparison is exact."""
    return all(np.array_equal(np.asarray(x) * 2, np.round(np.asarray(x) * 2)) for x in case.inputs if x is not None)


def tolerance(case) -> dict | None:
    """The only admitted difference: float32 summation order (OpenVINO's CPU plugin sums taps and channels in
    another order than the reference), within the unit's accumulation_bound (conformance's allowance too)."""
    if _halves(case):
        return None
    inputs = {name: x for name, x in zip(("data", "offsets", "filters", "mask"), case.inputs) if x is not None}
    return dict(rtol=0, atol=UNIT.accumulation_bound(inputs, case.attributes))


def test_conformance_allows_the_units_bound_and_no_more():
    """Conformance judges a backend's DeformableConvolution output with the same accumulation_bound as this
    file's tests (one place): a gap of the bound matches, a gap of twice the bound is a mismatch."""
    from onnx_bridge.conformance.cases import Case, full_attributes
    from onnx_bridge.conformance.evaluate import Contract, judge
    from onnx_bridge.conformance.results import MATCH, MISMATCH
    made = next(c for c in check.cases(UNIT) if not _halves(c))
    inputs = {name: x for name, x in zip(("data", "offsets", "filters", "mask"), made.inputs)}
    case = Case("gen/DeformableConvolution/x", UNIT.op_type, inputs, full_attributes(UNIT.op_type, made.attributes))
    want = check.kernel_outputs(UNIT, made)[0]
    bound = tolerance(made)["atol"]
    assert 0 < bound < 1e-3 * max(float(np.abs(want).max()), 1)
    within = (want.astype(np.float64) + bound).astype(np.float32)
    within = np.where(within.astype(np.float64) - want > bound, np.nextafter(within, want), within)
    beyond = want + np.float32(2 * bound)
    for got, status in ((within, MATCH), (beyond, MISMATCH)):
        cell = judge(case, "openvino", Contract((want,)), (got,))
        assert cell.status == status, cell.reason


def test_kernel_matches_openvino_on_generated_cases():
    count = exact = 0
    for seed in range(3):
        for case in check.cases(UNIT, seed):
            check.check_kernel_against_openvino(UNIT, case, tolerance(case))
            count += 1
            exact += tolerance(case) is None
    assert count >= 66 and exact >= 12


def test_version_1_matches_openvino():
    """DeformableConvolution-1 (no mask, no padding of the bilinear corners) is the kernel without mask."""
    import openvino as ov
    from openvino import opset1
    from custom_ops.ops.image.deformable_convolution import cases_v1, deformable_convolution
    import onnx_bridge
    from converters.openvino_ir import import_ir
    count = 0
    for case in cases_v1(np.random.default_rng(5)):
        data, offsets, filters = case.inputs[:3]
        node = opset1.deformable_convolution(ov.op.Constant(data), ov.op.Constant(offsets), ov.op.Constant(filters),
                                             **{k: case.attributes.get(k, d) for k, d in (
                                                 ("strides", None), ("pads_begin", None), ("pads_end", None),
                                                 ("dilations", None), ("auto_pad", "explicit"), ("group", 1),
                                                 ("deformable_group", 1))})
        model = ov.Model([node.output(0)], [], "v1")
        compiled = ov.Core().compile_model(model, "CPU", check.CONFIG)
        want = compiled({})[compiled.outputs[0]]
        got = deformable_convolution(data, offsets, filters, **case.attributes)
        t = tolerance(case) or dict(rtol=0, atol=0)
        np.testing.assert_allclose(got, want, **t)
        if count < 2:   # the IR of version 1 imports as the dialect op (version 8, no mask)
            (session_out,) = onnx_bridge.InferenceSession(import_ir(model).SerializeToString()).run(None, {})
            np.testing.assert_array_equal(session_out, got)
        count += 1
    assert count >= 6


@pytest.mark.parametrize("case", check.cases(UNIT)[:4], ids=lambda c: c.id)
def test_import_session_export_backend(case, tmp_path):
    check.check_end_to_end(UNIT, case, tmp_path, tolerance(case))


def test_sampling_outside_the_map():
    """Without bilinear_interpolation_pad a tap at y = -0.5 is skipped; with it, it reads half the corner."""
    from custom_ops.ops.image.deformable_convolution import deformable_convolution
    data = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 2, 2)
    offsets = np.array([-0.5, 0.0], np.float32).reshape(1, 2, 1, 1)
    a = dict(strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1])
    filters = np.ones((1, 1, 1, 1), np.float32)
    offsets = np.broadcast_to(offsets, (1, 2, 2, 2)).copy()
    assert deformable_convolution(data, offsets, filters, **a)[0, 0, 0, 0] == 0
    assert deformable_convolution(data, offsets, filters, bilinear_interpolation_pad=1, **a)[0, 0, 0, 0] == 0.5
