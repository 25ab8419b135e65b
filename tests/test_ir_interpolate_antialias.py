"""Interpolate-4/11 with antialias=true against OpenVINO's reference (the op's evaluate, as constant folding
runs it): mode linear antialiases where axes shrink, as ONNX Resize linear with antialias and exclude_outside
(the sums in another order: ACCUMULATION); linear_onnx and cubic ignore the flag. OpenVINO's CPU plugin
ignores it in every mode (observed on 2026.4; checked here so the rule's note stays true)."""
from __future__ import annotations

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import opset1, opset10, opset11  # noqa: E402

import onnx_bridge  # noqa: E402
from converters.openvino_ir import import_ir  # noqa: E402
from onnx_bridge.errors import ConversionError  # noqa: E402
from tests.helpers.ir_cases import ACCUMULATION, P, assert_same, ov_run  # noqa: E402

pytestmark = pytest.mark.openvino

COORDINATES = ("half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners", "tf_half_pixel_for_nn")


def _node(data, mode, calc, target, axes, coordinates, antialias=True, version=11):
    """Interpolate-11 (target: sizes or scales) or Interpolate-4 (sizes and scales inputs) on `data`."""
    target = opset1.constant(np.array(target, np.int64 if calc == "sizes" else np.float32))
    axes_node = opset1.constant(np.array(axes, np.int64))
    pads = [0] * data.get_output_partial_shape(0).rank.get_length()
    if version == 11:
        return opset11.interpolate(data, target, mode, calc, pads, pads, coordinates, "round_prefer_floor",
                                   antialias, -0.75, axes_node)
    ones = (opset1.constant(np.ones(len(axes), np.int64)), opset1.constant(np.ones(len(axes), np.float32)))
    sizes, scales = (target, ones[1]) if calc == "sizes" else (ones[0], target)
    return opset10.interpolate(data, sizes, scales, mode, calc, pads, pads, coordinates, "round_prefer_floor",
                               antialias, -0.75, axes_node)


def reference(x, *args, **kwargs):
    """OpenVINO's reference: the node's evaluate on constant inputs."""
    node = _node(opset1.constant(x), *args, **kwargs)
    inputs = [ov.Tensor(np.asarray(node.input_value(i).get_node().get_data())) for i in range(node.get_input_size())]
    out = [ov.Tensor(node.get_output_element_type(0), node.get_output_shape(0))]
    assert node.evaluate(out, inputs)
    return np.array(out[0].data)


def model(x, *args, **kwargs):
    data = P(list(x.shape), "f32", "x")
    return ov.Model([_node(data, *args, **kwargs).output(0)], [data], "interpolate")


CASES = [  # shape, calc, target, axes (every resized axis shrinks or keeps its size)
    ((1, 2, 12, 10), "sizes", (6, 5), (2, 3)),
    ((1, 2, 12, 10), "sizes", (12, 4), (2, 3)),
    ((1, 2, 12, 10), "scales", (0.5, 0.37), (2, 3)),
    ((2, 12, 10), "sizes", (5,), (1,)),
    ((1, 1, 6, 8, 10), "sizes", (3, 4, 5), (2, 3, 4)),
]


@pytest.mark.parametrize("version", [4, 11])
@pytest.mark.parametrize("shape, calc, target, axes", CASES, ids=[f"{c[1]}-{c[2]}" for c in CASES])
def test_linear_downscale_is_resize_antialias(shape, calc, target, axes, version):
    x = np.random.default_rng(sum(shape) + len(target)).standard_normal(shape).astype(np.float32)
    for coordinates in COORDINATES:
        args = ("linear", calc, target, axes, coordinates)
        imported = import_ir(model(x, *args, version=version))
        resize = [n for n in imported.graph.node if n.op_type == "Resize"]
        assert {a.name: a.i for a in resize[0].attribute if a.name in ("antialias", "exclude_outside")} == \
            {"antialias": 1, "exclude_outside": 1}
        got = onnx_bridge.InferenceSession(imported).run(None, {"x": x})
        assert_same(got, [reference(x, *args, version=version)], ACCUMULATION, f"{coordinates}: vs the reference")


@pytest.mark.parametrize("mode", ["linear_onnx", "cubic", "linear"])
def test_flag_ignored_where_openvino_ignores_it(mode):
    """linear_onnx and cubic (downscaling) and every mode when upscaling: the flag changes nothing in the
    reference, and the import emits no antialiasing."""
    x = np.random.default_rng(5).standard_normal((1, 2, 12, 10)).astype(np.float32)
    target = (6, 5) if mode != "linear" else (24, 11)
    args = (mode, "sizes", target, (2, 3), "half_pixel")
    want = reference(x, *args)
    np.testing.assert_array_equal(want, reference(x, *args, antialias=False))
    imported = import_ir(model(x, *args))
    assert all(a.i == 0 for n in imported.graph.node for a in n.attribute if a.name == "antialias")
    assert_same(onnx_bridge.InferenceSession(imported).run(None, {"x": x}), [want], ACCUMULATION, mode)


def test_cpu_plugin_ignores_antialias():
    """The CPU plugin's result with antialias is its result without (the note in the rule): the import follows
    the reference, which filters."""
    x = np.random.default_rng(7).standard_normal((1, 2, 12, 10)).astype(np.float32)
    args = ("linear", "sizes", (6, 5), (2, 3), "half_pixel")
    with_flag = ov_run(model(x, *args), {"x": x})[0]
    np.testing.assert_array_equal(with_flag, ov_run(model(x, *args, antialias=False), {"x": x})[0])
    assert np.abs(with_flag - reference(x, *args)).max() > 0.1


@pytest.mark.parametrize("target, why", [((6, 20), "axes that grow and others that shrink")])
def test_mixed_scaling_refused(target, why):
    """One axis shrinks, one grows: the reference's filter differs from ONNX Resize's (measured up to 2.6)."""
    x = np.zeros((1, 2, 12, 10), np.float32)
    with pytest.raises(ConversionError, match=why):
        import_ir(model(x, "linear", "sizes", target, (2, 3), "half_pixel"))


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_interpolate_1_flag_ignored_below_rank_5(mode):
    """Interpolate-1 linear on data of rank < 5 runs as linear_onnx, and cubic: OpenVINO (reference and CPU)
    ignores antialias; the import emits none. Linear on 5-D data downscaling stays refused."""
    x = np.random.default_rng(11).standard_normal((1, 2, 12, 10)).astype(np.float32)
    data = P(list(x.shape), "f32", "x")

    def v1(antialias, source=data):
        attributes = dict(axes=[2, 3], mode=mode, align_corners=False, antialias=antialias, pads_begin=[], pads_end=[])
        return opset1.interpolate(source, opset1.constant(np.array([6, 5], np.int64)), attributes)

    want = ov_run(ov.Model([v1(True).output(0)], [data]), {"x": x})
    np.testing.assert_array_equal(want[0], ov_run(ov.Model([v1(False).output(0)], [data]), {"x": x})[0])
    got = onnx_bridge.InferenceSession(import_ir(ov.Model([v1(True).output(0)], [data]))).run(None, {"x": x})
    assert_same(got, want, ACCUMULATION, f"Interpolate-1 {mode} antialias")
    volume = P([1, 1, 6, 8, 10], "f32", "v")
    attributes = dict(axes=[2, 3, 4], mode="linear", align_corners=False, antialias=True, pads_begin=[], pads_end=[])
    node = opset1.interpolate(volume, opset1.constant(np.array([3, 4, 5], np.int64)), attributes)
    with pytest.raises(ConversionError, match="linear on 5-D data"):
        import_ir(ov.Model([node.output(0)], [volume]))


def test_back_in_openvino_loses_the_filter_as_its_cpu_plugin_does():
    """OpenVINO's ONNX reader makes Resize linear antialias=1 an Interpolate linear_onnx with antialias, which
    ignores the flag: read back, OpenVINO computes what its CPU plugin computes for the original (no filter)."""
    from converters.openvino_ir import to_openvino
    x = np.random.default_rng(3).standard_normal((1, 2, 12, 10)).astype(np.float32)
    args = ("linear", "sizes", (6, 5), (2, 3), "half_pixel")
    back = to_openvino(import_ir(model(x, *args)))
    modes = [op.get_attributes()["mode"] for op in back.get_ordered_ops() if op.get_type_name() == "Interpolate"]
    assert modes == ["linear_onnx"]
    np.testing.assert_array_equal(ov_run(back, {"x": x})[0], ov_run(model(x, *args), {"x": x})[0])
