"""The legacy detection units (custom_ops/ops/detection): PriorBox, PriorBoxClustered, DetectionOutput,
ROIPooling, PSROIPooling. Kernels vs OpenVINO CPU (f32 hint) on generated cases, IR import ->
InferenceSession, export to IR, backend, schema and reference evaluator, refused inputs, the CPU plugin's
measured divergences, and a small SSD head (conv feature maps -> PriorBox + DetectionOutput) end to end.

OpenVINO's CPU plugin needs static input shapes for these ops (ROIPooling refuses coords [?, ?]), so the
oracle models here have the cases' static shapes (static=True).
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import custom_ops
from custom_ops.errors import OpError
from custom_ops.unit import Case
from custom_ops.ops import _libm
from custom_ops.ops.detection import detection_output
from tests.helpers import expf
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

OPS = ("PriorBox", "PriorBoxClustered", "DetectionOutput", "ROIPooling", "PSROIPooling")
UNITS = {op: custom_ops.unit_of(op) for op in OPS}
#: onnx_bridge.backends.openvino compiles for dynamic shapes; the CPU plugin refuses these ops so
#: (ROIPooling: "invalid shape on 1st input", PSROIPooling: no implementation for dynamic shapes).
DYNAMIC_SHAPES_REFUSED = ("ROIPooling", "PSROIPooling")


def _few(op, count):
    return [pytest.param(op, case, id=case.id) for case in check.cases(UNITS[op])[:count]]


@pytest.mark.parametrize("op", OPS)
def test_kernel_matches_openvino_on_generated_cases(op):
    cases = check.cases(UNITS[op])
    assert len(cases) >= 15
    for case in cases:
        expf.check_with_c_libm(UNITS[op], case, static=True)


@pytest.mark.parametrize("op,case", [p for op in OPS if op != "DetectionOutput" for p in _few(op, 2)])
def test_import_session_export(op, case, tmp_path):
    check.check_end_to_end(UNITS[op], case, tmp_path, static=True, backend=False, reference=False)


@pytest.mark.parametrize("op,case", [p for op in OPS for p in _few(op, 1)])
def test_backend_schema_reference(op, case):
    if op not in DYNAMIC_SHAPES_REFUSED:
        check.check_backend(UNITS[op], case)
    check.check_reference_and_schema(UNITS[op], case, static=True)


# DetectionOutput ---------------------------------------------------------------------------------------

def _until_terminator(out):
    rows = out[0, 0]
    end = np.flatnonzero(rows[:, 0] == -1)
    return rows[: end[0] + 1] if end.size else rows


def _explained(got, want) -> str:
    """Why two outputs differ, if it is 'tie' (the same (image, score) pairs: equal scores of one prior in
    two classes at the keep_top_k cut, an order the reference leaves to std::sort)."""
    pairs = lambda rows: sorted(map(tuple, rows[:, [0, 2]].tolist()))  # noqa: E731
    return "tie" if pairs(got) == pairs(want) else ""


def test_detection_output_random_configurations_up_to_the_terminator():
    """100 random configurations (NMS styles, code types, two-stage, pixel priors, ties): equal to OpenVINO
    up to and including the -1 row, with the C expf in the kernel where the declared
    ov-detectionoutput-expf-last-bit claims the case, but for ties (_explained), rare; after the -1 row the
    dialect writes zeros (the CPU plugin leaves memory)."""
    unit = UNITS["DetectionOutput"]
    outcome = {"equal": 0, "expf": 0, "tie": 0}
    for seed in range(100):
        case = detection_output.random_case(np.random.default_rng(seed), f"random_{seed}")
        claimed = expf.claimed(unit, case)
        with _libm.c_libm() if claimed else contextlib.nullcontext():
            got = check.kernel_outputs(unit, case)[0]
        want = check.openvino_outputs(unit, case, static=True)[0]
        assert got.shape == want.shape, case.id
        head, ov_head = _until_terminator(got), _until_terminator(want)
        reason = ("expf" if claimed else "equal") if np.array_equal(head, ov_head) else _explained(head, ov_head)
        assert reason, f"{case.id}: {case.attributes}"
        outcome[reason] += 1
        assert not got[0, 0, len(head):].any(), case.id
    assert outcome["equal"] >= 95 and outcome["tie"] <= 2, outcome


def test_detection_output_expf_divergence_is_the_c_expf():
    expf.check_example(UNITS["DetectionOutput"], "ov-detectionoutput-expf-last-bit", static=True)


def test_detection_output_import_session_export(tmp_path):
    """The three-input and the two-stage (five-input) forms through the session and back to IR."""
    unit = UNITS["DetectionOutput"]
    cases = check.cases(unit)
    three = next(c for c in cases if len(c.inputs) == 3)
    five = next(c for c in cases if len(c.inputs) == 5)
    for case in (three, five):
        check.check_end_to_end(unit, case, tmp_path, static=True, backend=False, reference=False)


def test_detection_output_version_1_imports_as_version_8():
    """An IR with DetectionOutput-1 (num_classes attribute) imports to the same dialect node and values."""
    import openvino as ov
    from openvino import opset1
    from converters.openvino_ir import import_ir
    import onnx_bridge
    unit = UNITS["DetectionOutput"]
    case = next(c for c in check.cases(unit) if len(c.inputs) == 3)
    params = [opset1.parameter(list(x.shape), ov.Type.f32, name=p) for x, p in zip(case.inputs, ("l", "c", "p"))]
    attrs = unit.openvino.ov_attributes(unit.newest.attribute_values(case.attributes))
    num_classes = case.inputs[1].shape[1] * (4 if attrs["normalized"] else 5) // case.inputs[2].shape[2]
    node = opset1.detection_output(*params, {**attrs, "num_classes": num_classes})
    model = ov.Model(node.outputs(), params, "v1")
    want = ov.Core().compile_model(model, "CPU", check.CONFIG)(list(case.inputs))[0]
    imported = import_ir(model)
    assert [n.op_type for n in imported.graph.node] == ["DetectionOutput"]
    got = onnx_bridge.InferenceSession(imported.SerializeToString()).run(None, dict(zip("lcp", case.inputs)))[0]
    np.testing.assert_array_equal(got, want)


def test_detection_output_mxnet_top_k_tie_divergence_is_declared():
    """MXNet style, two priors tied at the top_k cut (score 0.5): the reference keeps the lower prior index
    (prior 2, class 2 -> label 1); the CPU plugin keeps prior 4 (class 1 -> label 0)."""
    unit = UNITS["DetectionOutput"]
    conf = np.array([[.1, .3, .6, 1.], [.4, .2, .1, .7], [.2, .3, .5, .4], [.3, .2, .7, .5], [.2, .5, .4, .2],
                     [.9, .2, .9, .5]], np.float32).reshape(1, -1)
    box = np.array([[0, 0, .2, .2], [.4, .4, .6, .6], [0, .5, .2, .7], [.7, 0, .9, .2], [.5, .8, .7, 1],
                    [.8, .8, 1, 1]], np.float32)
    case = Case("mxnet", (np.zeros((1, 24), np.float32), conf, box.reshape(1, 1, -1)),
                {"keep_top_k": [6], "top_k": 5, "nms_threshold": 0.5, "decrease_label_id": 1, "normalized": 1,
                 "variance_encoded_in_target": 1})
    got = _until_terminator(check.kernel_outputs(unit, case)[0])[:-1]
    want = _until_terminator(check.openvino_outputs(unit, case, static=True)[0])[:-1]
    assert len(got) == len(want) == 5
    kept = lambda rows: {tuple(r) for r in rows[:, [1, 2, 3, 4]].tolist()}  # noqa: E731
    assert kept(got) - kept(want) == {(1.0, 0.5, 0.0, 0.5)}                 # prior 2
    assert kept(want) - kept(got) == {(0.0, 0.5, 0.5, 0.800000011920929)}   # prior 4
    assert any("MXNet" in row.title for row in unit.divergences)


# ROIPooling / PSROIPooling -----------------------------------------------------------------------------

@pytest.mark.parametrize("special", [None, -np.inf, np.nan, -0.0])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_roi_pooling_max_equals_the_in_order_max_per_roi(special, dtype):
    """ROIPooling max (block-maximum tables, the -inf / NaN / signed-zero passes only when the map has such a
    value) gives each ROI's bins as the in-order max over columns then rows (_max_in_order), bytes equal:
    -inf bins the lowest value, NaN bins, +0 / -0 ties, empty bins (ROIs past the map) 0."""
    from custom_ops.ops.detection import roi_pooling as module
    r = np.random.default_rng(11)
    data = np.round(r.normal(size=(2, 3, 9, 11)) * 2) / 2
    if special is not None:
        data[r.random(data.shape) < 0.6] = special
    corners = r.uniform(-6, 16, (40, 4))
    boxes = np.concatenate([r.integers(0, 2, (40, 1)), np.minimum(corners[:, :2], corners[:, 2:]),
                            np.maximum(corners[:, :2], corners[:, 2:])], axis=1)
    data, boxes = data.astype(dtype), boxes.astype(dtype)
    out = module.roi_pooling(data, boxes, 3, 4, 1.0, "max")
    t = np.dtype(dtype)
    corners = module.round_half_away(boxes[:, 1:].astype(np.float32)).astype(np.int64)
    h0, h1 = module._bins(corners[:, 1], np.maximum(corners[:, 3] - corners[:, 1] + 1, 1), 3, 9, t)
    w0, w1 = module._bins(corners[:, 0], np.maximum(corners[:, 2] - corners[:, 0] + 1, 1), 4, 11, t)
    lowest = np.finfo(t).min
    for k, image in enumerate(boxes[:, 0].astype(int)):
        expected = module._max_in_order(data[image], h0[k], h1[k], w0[k], w1[k], lowest)
        assert out[k].tobytes() == expected.tobytes(), k
    assert out.flags.c_contiguous and (out == 0).any()


def _fused_lerp(a, b, weight):
    """a + (b - a) * weight with one rounding (the CPU plugin's vfmadd)."""
    return ((b - a).astype(np.float64) * np.asarray(weight, np.float64) + a.astype(np.float64)).astype(a.dtype)


def test_roi_pooling_bilinear_random_values_differ_only_by_the_fused_multiply_add(monkeypatch):
    """Random (non-dyadic) maps and boxes: with the interpolation fused as the CPU plugin does, the kernel
    equals OpenVINO bit for bit; unfused (the reference) it differs only in the last bits."""
    from custom_ops.ops.detection import roi_pooling as module
    unit = UNITS["ROIPooling"]
    cases = []
    for seed in range(30):
        r = np.random.default_rng(seed)
        n, c, h, w = int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 9)), int(r.integers(1, 9))
        corners = r.uniform(-0.2, 1.2, (3, 4)) if seed % 3 == 0 else r.uniform(0, 1, (3, 4))
        boxes = np.concatenate([r.integers(0, n, (3, 1)), corners], 1).astype(np.float32)
        cases.append(Case(f"bilinear_{seed}", (r.normal(size=(n, c, h, w)).astype(np.float32), boxes),
                          {"pooled_h": int(r.integers(1, 4)), "pooled_w": int(r.integers(1, 4)),
                           "spatial_scale": 1.0, "method": "bilinear"}))
    wants = [check.openvino_outputs(unit, case, static=True)[0] for case in cases]
    unfused = [check.kernel_outputs(unit, case)[0] for case in cases]
    monkeypatch.setattr(module, "lerp", _fused_lerp)
    for case, want, plain in zip(cases, wants, unfused):
        np.testing.assert_array_equal(check.kernel_outputs(unit, case)[0], want, err_msg=case.id)
        np.testing.assert_allclose(plain, want, rtol=0, atol=4 * np.finfo(np.float32).eps * np.abs(want).max())
    assert any(not np.array_equal(p, w) for p, w in zip(unfused, wants))   # the divergence is real


def test_psroi_average_bin_past_the_map_follows_the_reference():
    """A box past the right edge: the reference clamps the bin start to the last column and averages it
    (the CPU plugin gives 0, a declared divergence)."""
    data = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    out = check.kernel_outputs(UNITS["PSROIPooling"], Case("past", (data, np.array([[0, 6, 0, 7, 0]], np.float32)), {
        "output_dim": 1, "group_size": 1, "spatial_scale": 1.0}))[0]
    np.testing.assert_array_equal(out.reshape(-1), [3.0])           # row 0, last column
    assert any(row.predicate(dict(zip(("input", "coords"), row.example.inputs)), {"mode": "average", "spatial_scale": 1.0})
               for row in UNITS["PSROIPooling"].divergences if "past the map" in row.title)


def test_psroi_bilinear_differs_only_where_declared():
    """Bilinear PSROIPooling on f32 maps (dyadic or not) and boxes (dyadic, random, partly past the map): the
    static CPU oracle equals the kernel bit for bit wherever ov-psroipooling-bilinear-points does not apply,
    and it does differ on some case the row claims."""
    unit = UNITS["PSROIPooling"]
    row = next(row for row in unit.divergences if row.id == "ov-psroipooling-bilinear-points")
    claimed = differing = 0
    for seed in range(24):
        r = np.random.default_rng(seed)
        k, group, bx, by = (int(v) for v in r.integers(1, [3, 4, 3, 3]))
        h, w = (int(v) for v in r.integers(1, 6, 2))
        data = r.standard_normal((1, k * bx * by, h, w))
        data = (data / 3 if seed % 2 else np.round(data * 8) / 8).astype(np.float32)
        low = r.uniform(0, 1, (2, 2)) if seed % 3 == 1 else r.integers(0, 8, (2, 2)) / 8
        high = low + (r.uniform(0, 0.6, (2, 2)) if seed % 3 == 1 else r.integers(0, 6, (2, 2)) / 8)
        boxes = np.concatenate([np.zeros((2, 1)), low, high], 1).astype(np.float32)
        case = Case(f"bilinear_{seed}", (data, boxes), {"output_dim": k, "group_size": group, "spatial_scale": 1.0,
                                                        "spatial_bins_x": bx, "spatial_bins_y": by, "mode": "bilinear"})
        got = check.kernel_outputs(unit, case)[0]
        want = check.openvino_outputs(unit, case, static=True)[0]
        applies = row.predicate({"input": data, "coords": boxes}, unit.newest.attribute_values(case.attributes))
        claimed += applies
        if not applies:
            np.testing.assert_array_equal(got, want, err_msg=case.id)
        differing += not np.array_equal(got, want)
    assert differing and claimed < 24


def test_psroi_average_ignores_spatial_bins():
    """spatial_bins_x/y take part in bilinear mode only: average mode with 0 bins runs (OpenVINO builds and runs
    it) and equals OpenVINO; bilinear mode refuses 0 bins."""
    rng = np.random.default_rng(3)
    data = rng.normal(size=(1, 8, 6, 6)).astype(np.float32)
    boxes = np.array([[0, 0, 0, 4, 4], [0, 1, 2, 5, 5]], np.float32)
    case = Case("bins0", (data, boxes), {"output_dim": 2, "group_size": 2, "spatial_scale": 1.0,
                                          "spatial_bins_x": 0, "spatial_bins_y": 0, "mode": "average"})
    np.testing.assert_array_equal(check.kernel_outputs(UNITS["PSROIPooling"], case)[0],
                                  check.openvino_outputs(UNITS["PSROIPooling"], case, static=True)[0])
    with pytest.raises(OpError, match="spatial_bins_x"):
        check.kernel_outputs(UNITS["PSROIPooling"], Case("bins0", case.inputs, {**case.attributes, "mode": "bilinear"}))


def test_prior_box_version_1_imports():
    """PriorBox-1 (no min_max_aspect_ratios_order: Caffe's order) imports as the dialect op and matches."""
    import openvino as ov
    from openvino import opset1
    from converters.openvino_ir import import_ir
    import onnx_bridge
    layer = opset1.constant(np.array([3, 2], np.int64))
    image = opset1.constant(np.array([64, 48], np.int64))
    node = opset1.prior_box(layer, image, {"offset": 0.5, "min_size": [8.0], "max_size": [20.0],
                                           "aspect_ratio": [2.0], "flip": True, "variance": [0.1, 0.1, 0.2, 0.2]})
    model = ov.Model(node.outputs(), [], "prior_box_1")
    want = ov.Core().compile_model(model, "CPU", check.CONFIG)({})[0]
    imported = import_ir(model)
    got = onnx_bridge.InferenceSession(imported.SerializeToString()).run(None, {})[0]
    np.testing.assert_array_equal(got, want)


# A small SSD head ---------------------------------------------------------------------------------------

def _ssd_head():
    """Image [1, 3, 32, 32] -> two conv feature maps (8x8, 4x4) -> loc / conf convolutions, PriorBox per map
    (from ShapeOf of the maps), Concat, Softmax over classes -> DetectionOutput."""
    import openvino as ov
    from openvino import opset8 as ops
    r = np.random.default_rng(7)
    classes = 3
    image = ops.parameter([1, 3, 32, 32], ov.Type.f32, name="image")

    def conv(x, cin, cout, stride):
        weights = ops.constant((r.normal(size=(cout, cin, 3, 3)) * 0.3).astype(np.float32))
        return ops.convolution(x, weights, [stride, stride], [1, 1], [1, 1], [1, 1])

    f1 = ops.relu(conv(image, 3, 8, 4))                   # 8x8
    f2 = ops.relu(conv(f1, 8, 8, 2))                      # 4x4
    image_hw = ops.strided_slice(ops.shape_of(image), [2], [4], [1], [0], [0])
    locs, confs, priors = [], [], []
    for fmap, sizes in ((f1, ([6.0], [12.0])), (f2, ([14.0], [24.0]))):
        attrs = {"min_size": sizes[0], "max_size": sizes[1], "aspect_ratio": [2.0], "flip": True, "clip": False,
                 "offset": 0.5, "variance": [0.1, 0.1, 0.2, 0.2], "scale_all_sizes": True}
        per_cell = 4
        fmap_hw = ops.strided_slice(ops.shape_of(fmap), [2], [4], [1], [0], [0])
        priors.append(ops.unsqueeze(ops.prior_box(fmap_hw, image_hw, attrs), [0]))
        for target, width in ((locs, per_cell * 4), (confs, per_cell * classes)):
            out = ops.transpose(conv(fmap, 8, width, 1), [0, 2, 3, 1])
            target.append(ops.reshape(out, [1, -1], special_zero=False))
    loc = ops.concat(locs, 1)
    conf = ops.reshape(ops.softmax(ops.reshape(ops.concat(confs, 1), [1, -1, classes], False), 2), [1, -1], False)
    prior = ops.concat(priors, 2)
    detections = ops.detection_output(loc, conf, prior, {
        "keep_top_k": [10], "nms_threshold": 0.45, "confidence_threshold": 0.01, "top_k": 20,
        "code_type": "caffe.PriorBoxParameter.CENTER_SIZE", "share_location": True, "background_label_id": 0,
        "normalized": True, "clip_after_nms": True})
    return ov.Model(detections.outputs(), [image], "ssd_head")


def test_ssd_head_converts_and_matches_openvino(tmp_path):
    import openvino as ov
    import onnx_bridge
    from converters.openvino_ir import import_ir
    model = _ssd_head()
    image = np.random.default_rng(3).normal(size=(1, 3, 32, 32)).astype(np.float32)
    want = ov.Core().compile_model(model, "CPU", check.CONFIG)([image])[0]
    imported = import_ir(model)
    dialect = sorted(n.op_type for n in imported.graph.node if n.domain == "org.openvinotoolkit")
    assert dialect == ["DetectionOutput", "PriorBox", "PriorBox"]
    got = onnx_bridge.InferenceSession(imported.SerializeToString()).run(None, {"image": image})[0]
    assert got.shape == want.shape
    detections = _until_terminator(want)
    assert len(detections) > 1                                       # something was detected
    np.testing.assert_allclose(_until_terminator(got), detections, rtol=1e-5, atol=1e-6)
