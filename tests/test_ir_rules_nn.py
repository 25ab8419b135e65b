"""OpenVINO IR import rules of the NN core (convolution, pooling, normalisation, activations) against
OpenVINO's CPU plugin (f32 precision), over each op's attribute space.

Tolerances: max pooling and anything that only selects values is exact; convolutions, averages and
normalisations accumulate in different orders in the two runtimes (NORM); exp-based activations differ
in the last bits (LIBM). f16 cases: onnxruntime computes in f16 where it has the kernel, OpenVINO in f32
(its precision hint) rounding once, so they compare within F16.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import (opset1, opset2, opset4, opset5, opset6, opset7, opset8, opset9, opset12, opset14,  # noqa: E402
                      opset16)

import onnx_bridge  # noqa: E402
from converters.openvino_ir import import_ir  # noqa: E402
from onnx_bridge.errors import ConversionError  # noqa: E402
from tests.helpers.ir_cases import LIBM, C, Case, P, assert_same, build, openvino_expected, ov_run  # noqa: E402

pytestmark = pytest.mark.openvino
RNG = np.random.default_rng(13)
NORM = dict(rtol=1e-4, atol=1e-4)
AVERAGE = dict(rtol=1e-5, atol=1e-6)
F16 = dict(rtol=1e-3, atol=1e-3)


def floats(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


#: Weights are drawn while a case builds its model, from a generator reset before every build, so the
#: model imported and the model OpenVINO runs hold the same weights.
WEIGHTS = {"rng": np.random.default_rng(0)}


def W(*shape, dtype=np.float32):
    return C(WEIGHTS["rng"].standard_normal(shape).astype(dtype))


def _build(case, **options):
    WEIGHTS["rng"] = np.random.default_rng(0)
    return build(case, **options)


# -- convolution -----------------------------------------------------------------------------------------
PADDINGS = [  # (auto_pad, pads_begin, pads_end)
    ("explicit", [0, 0], [0, 0]), ("explicit", [1, 2], [2, 0]), ("valid", [3, 3], [3, 3]),
    ("same_upper", [0, 0], [0, 0]), ("same_lower", [0, 0], [0, 0]),
]
GEOMETRIES = [([1, 1], [1, 1]), ([2, 2], [1, 1]), ([2, 3], [2, 1])]  # (strides, dilations)


def conv_cases():
    cases = []
    for (pad, begin, end), (strides, dilations), static in itertools.product(PADDINGS, GEOMETRIES, (True, False)):
        if not static and strides != [2, 2]:
            continue  # dynamic dims: one geometry (same_* with dilations is refused: see REFUSALS)
        tag = f"{pad}-{begin}{end}-s{strides}-d{dilations}-{'static' if static else 'dynamic'}"
        x = floats(2, 4, 9, 8)
        cases.append(Case(f"conv-{tag}", lambda p, a=(strides, begin, end, dilations, pad): [
            opset1.convolution(p["x"], W(6, 4, 3, 2), *a)], {"x": x}, NORM, static=static))
        cases.append(Case(f"group-conv-{tag}", lambda p, a=(strides, begin, end, dilations, pad): [
            opset1.group_convolution(p["x"], W(2, 3, 2, 3, 3), *a)], {"x": x}, NORM, static=static))
    cases += [
        Case("conv-1d", lambda p: [opset1.convolution(p["x"], W(3, 2, 4), [2], [1], [2], [1])],
             {"x": floats(1, 2, 11)}, NORM),
        Case("conv-3d", lambda p: [opset1.convolution(p["x"], W(2, 2, 2, 3, 2), [1, 2, 1], [1, 0, 1], [0, 1, 1],
                                                      [1, 1, 2])], {"x": floats(1, 2, 5, 6, 7)}, NORM),
        Case("conv-weights-input", lambda p: [opset1.convolution(p["x"], p["w"], [1, 1], [1, 1], [1, 1], [1, 1])],
             {"x": floats(1, 3, 5, 5), "w": floats(2, 3, 3, 3)}, NORM, static=True),
        Case("depthwise-weights-input", lambda p: [opset1.group_convolution(p["x"], p["w"], [1, 1], [1, 1], [1, 1],
                                                                            [1, 1])],
             {"x": floats(1, 4, 5, 5), "w": floats(4, 1, 1, 3, 3)}, NORM, static=True),
        Case("conv-f16", lambda p: [opset1.convolution(p["x"], W(3, 2, 3, 3, dtype=np.float16), [1, 1],
                                                       [1, 1], [1, 1], [1, 1])],
             {"x": floats(1, 2, 6, 6, dtype=np.float16)}, F16),
    ]
    return cases


def backprop_cases():
    cases = []
    for pad, (strides, dilations), output_padding, shape in itertools.product(
            ("explicit", "valid", "same_upper", "same_lower"), GEOMETRIES[:2] + [([3, 2], [1, 2])],
            ([0, 0], [1, 1]), (None, [13, 12])):
        if output_padding[0] >= max(strides[0], dilations[0]) or output_padding[1] >= max(strides[1], dilations[1]):
            continue
        tag = f"{pad}-s{strides}-d{dilations}-op{output_padding}-{shape}"

        def make(p, shape=shape, a=(strides, [1, 0], [0, 1], dilations, pad, output_padding), grouped=False):
            out = None if shape is None else C(np.array(shape, np.int64))
            if grouped:
                return [opset1.group_convolution_backprop_data(p["x"], W(2, 2, 3, 3, 2), a[0], out, *a[1:])]
            return [opset1.convolution_backprop_data(p["x"], W(4, 3, 3, 2), a[0], out, *a[1:])]
        cases.append(Case(f"backprop-{tag}", make, {"x": floats(1, 4, 5, 6)}, NORM, static=True))
        if shape is None or pad == "explicit":  # grouping is a weights reshape: fewer cases
            cases.append(Case(f"group-backprop-{tag}", lambda p, m=make: m(p, grouped=True),
                              {"x": floats(1, 4, 5, 6)}, NORM, static=True))
    cases.append(Case("backprop-dynamic-explicit", lambda p: [opset1.convolution_backprop_data(
        p["x"], W(2, 3, 3, 3), [2, 2], None, [1, 1], [0, 1], [1, 1], "explicit", [1, 0])],
        {"x": floats(1, 2, 4, 5)}, NORM))
    return cases


# -- pooling ---------------------------------------------------------------------------------------------
POOL_PADDINGS = [("explicit", [0, 0], [0, 0]), ("explicit", [1, 1], [1, 0]), ("explicit", [0, 1], [1, 1]),
                 ("valid", [0, 0], [0, 0]), ("same_upper", [0, 0], [0, 0]), ("same_lower", [0, 0], [0, 0])]
POOL_GEOMETRIES = [([2, 2], [3, 3]), ([2, 3], [3, 3]), ([1, 1], [2, 2])]  # (strides, kernel)


def pool_cases():
    cases = []
    x = floats(2, 3, 8, 7)
    for (pad, begin, end), (strides, kernel), rounding in itertools.product(
            POOL_PADDINGS, POOL_GEOMETRIES, ("floor", "ceil", "ceil_torch")):
        if strides == [1, 1] and rounding != "floor":
            continue  # stride 1: nothing to round
        tag = f"{pad}-{begin}{end}-s{strides}-k{kernel}-{rounding}"
        for static in (True, False) if strides == [2, 2] and not pad.startswith("same") else (True,):
            dynamic = "" if static else "-dynamic"
            max_args = (strides, [1, 1], begin, end, kernel, rounding, pad)
            cases.append(Case(f"maxpool14-{tag}{dynamic}", lambda p, a=max_args: list(
                opset14.max_pool(p["x"], *a).outputs()), {"x": x}, static=static))
        for exclude in (True, False) if strides != [2, 3] else ():  # averages: two geometries
            avg_args = (strides, begin, end, kernel, exclude, rounding, pad)
            cases.append(Case(f"avgpool14-{tag}-exclude{exclude}", lambda p, a=avg_args: [
                opset14.avg_pool(p["x"], *a)], {"x": x}, AVERAGE, static=True))
            if (strides == [1, 1] or exclude) and not pad.startswith("same"):  # (dynamic same_*: refused)
                cases.append(Case(f"avgpool14-{tag}-exclude{exclude}-dynamic", lambda p, a=avg_args: [
                    opset14.avg_pool(p["x"], *a)], {"x": x}, AVERAGE))
    for rounding in ("floor", "ceil"):
        cases.append(Case(f"maxpool1-{rounding}", lambda p, r=rounding: [
            opset1.max_pool(p["x"], [2, 2], [1, 0], [1, 1], [3, 3], r, "explicit")], {"x": x}, static=True))
        cases.append(Case(f"avgpool1-{rounding}", lambda p, r=rounding: [
            opset1.avg_pool(p["x"], [2, 2], [1, 0], [1, 1], [3, 3], False, r, "explicit")], {"x": x}, AVERAGE,
            static=True))
    for axis, element in ((0, "i64"), (1, "i32"), (2, "i64"), (-2, "i32")):
        cases.append(Case(f"maxpool8-indices-axis{axis}-{element}", lambda p, a=axis, e=element: list(
            opset8.max_pool(p["x"], [2, 1], [2, 1], [1, 0], [0, 1], [2, 3], "ceil", "explicit", e, a).outputs()),
            {"x": x}, static=True))
    cases += [
        Case("maxpool8-dilated", lambda p: list(
            opset8.max_pool(p["x"], [1, 1], [2, 2], [1, 1], [1, 1], [2, 2]).outputs()),
             {"x": x}, static=True),
        Case("maxpool-dynamic-floor", lambda p: list(opset8.max_pool(p["x"], [2, 2], [1, 1], [1, 0], [0, 1],
                                                                     [3, 2]).outputs()), {"x": x}),
        *[Case(f"avgpool16-{rounding}-exclude{exclude}", lambda p, r=rounding, e=exclude: [opset16.avg_pool(
            p["x"], [2, 2], [1, 0], [1, 1], [3, 3], e, r, "explicit", [1, 1])], {"x": x}, AVERAGE, static=True)
          for rounding in ("floor", "ceil_torch") for exclude in (True, False)],
        Case("avgpool-dynamic-floor", lambda p: [opset14.avg_pool(p["x"], [2, 2], [1, 1], [0, 0], [3, 2], True)],
             {"x": x}, AVERAGE),
        Case("maxpool-1d", lambda p: list(opset14.max_pool(p["x"], [2], [1], [1], [1], [2], "ceil_torch").outputs()),
             {"x": floats(1, 2, 9)}, static=True),
        Case("maxpool-3d", lambda p: list(opset14.max_pool(p["x"], [2, 1, 2], [1, 1, 1], [1, 0, 0], [0, 0, 1],
                                                           [2, 2, 2], "ceil").outputs()),
             {"x": floats(1, 2, 5, 4, 5)}, static=True),
        Case("maxpool-u8-i8", lambda p: [opset14.max_pool(p["u"], [2, 2], [1, 1], [1, 1], [1, 1], [3, 3], "ceil")
                                         .output(0),
                                         opset14.max_pool(p["i"], [1, 1], [1, 1], [0, 0], [0, 0], [2, 2]).output(0)],
             {"u": RNG.integers(0, 255, (1, 2, 6, 7)).astype(np.uint8),
              "i": RNG.integers(-128, 127, (1, 2, 6, 7)).astype(np.int8)}, static=True),
        Case("maxpool-f16", lambda p: list(opset14.max_pool(p["x"], [2, 2], [1, 1], [1, 1], [1, 1], [3, 3],
                                                            "ceil_torch").outputs()),
             {"x": floats(1, 2, 6, 7, dtype=np.float16)}, static=True),
        Case("avgpool-f16", lambda p: [opset14.avg_pool(p["x"], [2, 2], [1, 1], [1, 1], [3, 3], False, "ceil")],
             {"x": floats(1, 2, 6, 7, dtype=np.float16)}, F16, static=True),
    ]
    for out in ([1, 1], [4, 7], [3, 5], [5, 2], [8, 1]):
        cases.append(Case(f"adaptive-avg-{out}", lambda p, o=out: [opset8.adaptive_avg_pool(p["x"], C(np.array(o)))],
                          {"x": x}, AVERAGE, static=True))
        cases.append(Case(f"adaptive-max-{out}", lambda p, o=out: [
            opset8.adaptive_max_pool(p["x"], C(np.array(o)), "i32").output(0)], {"x": x}, static=True))
    for out in ([4, 7], [2, 1], [8, 7]):  # (i64 indices: test_adaptive_max_pool_i64_indices)
        cases.append(Case(f"adaptive-max-indices-{out}", lambda p, o=out: list(
            opset8.adaptive_max_pool(p["x"], C(np.array(o)), "i32").outputs()), {"x": x}, static=True))
    cases.append(Case("adaptive-global-dynamic", lambda p: [opset8.adaptive_avg_pool(p["x"], C(np.array([1, 1]))),
                                                            opset8.adaptive_max_pool(p["x"], C(np.array([1, 1])), "i32")
                                                            .output(0)], {"x": x}, AVERAGE))
    cases.append(Case("adaptive-avg-1d", lambda p: [opset8.adaptive_avg_pool(p["x"], C(np.array([4])))],
                      {"x": floats(2, 3, 9)}, AVERAGE, static=True))
    return cases


# -- normalisation ---------------------------------------------------------------------------------------
def norm_cases():
    x = floats(2, 6, 5, 4) * 3 + 1
    cases = []
    for axes, variance, eps_mode in itertools.product(([2, 3], [1, 2, 3], [-1], [0, 2]), (True, False),
                                                      ("inside_sqrt", "outside_sqrt")):
        cases.append(Case(f"mvn6-{axes}-var{variance}-{eps_mode}", lambda p, a=(axes, variance, eps_mode): [
            opset6.mvn(p["x"], C(np.array(a[0], np.int64)), a[1], 1e-3, a[2])], {"x": x}, NORM))
    for across, variance in itertools.product((True, False), (True, False)):
        cases.append(Case(f"mvn1-across{across}-var{variance}", lambda p, a=(across, variance): [
            opset2.mvn(p["x"], a[0], a[1], 1e-3)], {"x": x}, NORM))
    cases += [
        Case("mvn6-f16", lambda p: [opset6.mvn(p["x"], C(np.array([2, 3])), True, 1e-5, "inside_sqrt")],
             {"x": x.astype(np.float16)}, F16),
        Case("mvn6-axes-input", lambda p: [opset6.mvn(p["x"], p["a"], True, 1e-5, "inside_sqrt")],
             {"x": x, "a": np.array([1, -1], np.int32)}, NORM),
        Case("batch-norm-1", lambda p: [opset1.batch_norm_inference(p["x"], W(6), W(6), W(6), opset1.abs(W(6)),
                                                                    1e-3)], {"x": x}, NORM),
        Case("batch-norm-5", lambda p: [opset5.batch_norm_inference(p["x"], W(6), W(6), W(6), opset1.abs(W(6)),
                                                                    1e-5)], {"x": x}, NORM),
        Case("batch-norm-2d", lambda p: [opset5.batch_norm_inference(p["x"], W(6), W(6), W(6), opset1.abs(W(6)),
                                                                     1e-5)], {"x": floats(3, 6)}, NORM),
        Case("batch-norm-f16", lambda p: [opset5.batch_norm_inference(
            p["x"], *[W(6, dtype=np.float16) for _ in range(3)], C(np.ones(6, np.float16)), 1e-5)],
             {"x": x.astype(np.float16)}, F16),
        Case("group-norm", lambda p: [opset12.group_normalization(p["x"], W(6), W(6), 3, 1e-5)], {"x": x}, NORM),
        Case("group-norm-1-group", lambda p: [opset12.group_normalization(p["x"], W(6), W(6), 1, 1e-3)], {"x": x},
             NORM),
        Case("group-norm-3d", lambda p: [opset12.group_normalization(p["x"], W(6), W(6), 6, 1e-5)],
             {"x": floats(2, 6, 7)}, NORM),
        Case("group-norm-f16", lambda p: [opset12.group_normalization(p["x"], W(6, dtype=np.float16),
                                                                      W(6, dtype=np.float16), 2, 1e-5)],
             {"x": x.astype(np.float16)}, F16),
    ]
    for axes, mode, eps in itertools.product(([1], [2, 3], [1, 2, 3]), ("add", "max"), (1e-6, 30.0)):
        cases.append(Case(f"normalize-l2-{axes}-{mode}-{eps}", lambda p, a=(axes, eps, mode): [
            opset1.normalize_l2(p["x"], C(np.array(a[0], np.int64)), a[1], a[2])], {"x": x}, NORM))
    for axes, size in itertools.product(([1], [2, 3]), (1, 2, 3, 4, 5)):
        cases.append(Case(f"lrn-{axes}-size{size}", lambda p, a=(axes, size): [
            opset1.lrn(p["x"], C(np.array(a[0], np.int64)), 1e-2, 0.75, 2.0, a[1])], {"x": x}, NORM, static=True))
    return cases


# -- activations -----------------------------------------------------------------------------------------
def activation_cases():
    x = floats(2, 3, 4, 5) * 3
    return [
        Case("prelu-channel", lambda p: [opset1.prelu(p["x"], W(3))], {"x": x}, static=True),
        Case("prelu-channel-equals-last", lambda p: [opset1.prelu(p["x"], W(5))], {"x": floats(2, 5, 5) * 3},
             static=True),
        Case("prelu-last-axis", lambda p: [opset1.prelu(p["x"], W(5))], {"x": x}, static=True),
        Case("prelu-scalar", lambda p: [opset1.prelu(p["x"], C(np.array([0.25], np.float32)))], {"x": x}),
        Case("prelu-full", lambda p: [opset1.prelu(p["x"], W(4, 5))], {"x": x}, static=True),
        Case("prelu-2d", lambda p: [opset1.prelu(p["x"], W(3))], {"x": floats(4, 3)}, static=True),
        Case("prelu-slope-input", lambda p: [opset1.prelu(p["x"], p["s"])], {"x": x, "s": floats(3)}, static=True),
        Case("selu", lambda p: [opset1.selu(p["x"], C(np.array([1.67], np.float32)), C(np.array([1.05], np.float32)))],
             {"x": x}, LIBM),
        Case("selu-inputs", lambda p: [opset1.selu(p["x"], p["a"], p["l"])],
             {"x": x, "a": np.array([1.5], np.float32), "l": np.array([0.9], np.float32)}, LIBM,
             against="reference"),  # the CPU plugin takes Constant alpha and lambda only
        Case("hard-sigmoid", lambda p: [opset1.hard_sigmoid(p["x"], C(np.array(0.2, np.float32)),
                                                            C(np.array(0.5, np.float32)))], {"x": x}, LIBM),
        Case("hard-sigmoid-inputs", lambda p: [opset1.hard_sigmoid(p["x"], p["a"], p["b"])],
             {"x": x, "a": np.array(0.3, np.float32), "b": np.array(0.4, np.float32)}, LIBM,
             against="reference"),  # the CPU plugin takes Constant alpha and beta only
    ]


# The parameterless activations of rules/elementwise.py, over their whole range: large magnitudes (where
# exp overflows and OpenVINO's SoftPlus returns x itself), zero, and f16.
WIDE = np.concatenate([np.linspace(-30, 30, 61), [-100, -20.5, -1e-3, 0, 1e-3, 20.5, 100]]).astype(np.float32)
ELEMENTWISE = [
    ("elu", lambda x: opset1.elu(x, 0.5)), ("elu-alpha-2", lambda x: opset1.elu(x, 2.0)),
    ("gelu-2", opset2.gelu), ("gelu-7-erf", lambda x: opset7.gelu(x, "erf")),
    ("gelu-7-tanh", lambda x: opset7.gelu(x, "tanh")), ("swish-no-beta", opset4.swish),
    ("swish-beta", lambda x: opset4.swish(x, C(np.array(0.75, np.float32)))), ("softplus", opset4.softplus),
    ("softsign", opset9.softsign), ("mish", opset4.mish), ("hswish", opset4.hswish), ("hsigmoid", opset5.hsigmoid),
    ("clamp", lambda x: opset1.clamp(x, -2.5, 7.0)), ("sigmoid", opset1.sigmoid), ("tanh", opset1.tanh),
    ("relu", opset1.relu), ("exp", opset1.exp),
]


def elementwise_cases():
    cases = []
    for name, make in ELEMENTWISE:
        # SoftPlus and Swish against OpenVINO's reference: the CPU plugin's approximations are off by up to
        # 2e-6 absolute for x <= -15, where the values are that small (softplus(-20) = 2e-9 comes out
        # -1.9e-6, a negative softplus; swish(-20) 15% off). onnxruntime is right there.
        cases.append(Case(f"{name}-wide", lambda p, m=make: [m(p["x"])], {"x": WIDE}, LIBM,
                          against="reference" if name.startswith(("softplus", "swish")) else "cpu"))
        if not name.startswith("swish"):  # (the beta Constant, also the default one, is f32)
            cases.append(Case(f"{name}-f16", lambda p, m=make: [m(p["x"])], {"x": np.clip(WIDE, -11, 11).astype(
                np.float16)}, F16))
    return cases


CASES = elementwise_cases() + conv_cases() + backprop_cases() + pool_cases() + norm_cases() + activation_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_import_matches_openvino(case):
    imported = import_ir(_build(case))
    got = onnx_bridge.InferenceSession(imported).run(None, case.feeds)
    assert_same(got, openvino_expected(case, _build), case.tolerance, "onnxruntime vs OpenVINO")


def test_adaptive_max_pool_i64_indices():
    """The CPU plugin computes AdaptiveMaxPool's indices in i32 only: the i64 import must give its values."""
    x = floats(2, 3, 8, 6)
    for out in ([4, 3], [1, 1]):
        def model(element, out=out):
            data = P([2, 3, 8, 6], "f32", "x")
            return ov.Model(list(opset8.adaptive_max_pool(data, C(np.array(out)), element).outputs()), [data], "m")
        got = onnx_bridge.InferenceSession(import_ir(model("i64"))).run(None, {"x": x})
        values, indices = ov_run(model("i32"), {"x": x})
        assert_same(got, [values, indices.astype(np.int64)], {}, f"adaptive max pool {out}")


#: Configurations the rules refuse: (id, model builder (inputs by name -> outputs), input shapes, reason)
REFUSALS = [
    ("maxpool-pads-reach-kernel", lambda p: [opset14.max_pool(p["x"], [1, 1], [1, 1], [0, 2], [0, 2], [2, 2])],
     [1, 1, 6, 6], "ONNX needs pads below it"),
    ("maxpool-ceil-dynamic", lambda p: [opset14.max_pool(p["x"], [3, 3], [1, 1], [0, 0], [1, 1], [2, 2], "ceil")],
     [1, 1, -1, -1], "rounding_type=ceil with dynamic spatial dims"),
    ("maxpool-same-dynamic", lambda p: [opset14.max_pool(p["x"], [2, 2], [1, 1], [0, 0], [0, 0], [3, 2], "floor",
                                                         "same_upper").output(0)],
     [1, 1, -1, -1], "SAME_* MaxPool pads differ"),
    ("avgpool-ceil-counting-pads-dynamic", lambda p: [opset14.avg_pool(p["x"], [2, 2], [1, 1], [1, 1], [3, 3], False,
                                                                       "ceil_torch")],
     [1, 1, -1, -1], "exclude-pad=false with ceil rounding"),
    ("conv-same-dilated-dynamic", lambda p: [opset1.convolution(p["x"], W(2, 1, 3, 3), [1, 1], [0, 0], [0, 0],
                                                                [2, 2], "same_upper")],
     [1, 1, -1, -1], "onnxruntime has no SAME_* padding with dilations"),
    ("backprop-output-shape-dynamic", lambda p: [opset1.convolution_backprop_data(
        p["x"], W(1, 2, 3, 3), [2, 2], C(np.array([9, 9])))], [1, 1, -1, -1], "needs static spatial dims"),
    ("adaptive-max-uneven-indices", lambda p: list(opset8.adaptive_max_pool(p["x"], C(np.array([3, 3])), "i32")
                                                    .outputs()), [1, 1, 8, 8], "indices output with unequal bins"),
    ("adaptive-max-indices-dynamic", lambda p: list(opset8.adaptive_max_pool(p["x"], C(np.array([3, 3])), "i32")
                                                      .outputs()), [1, 1, -1, -1],
     "indices output with dynamic spatial dims"),
    ("maxpool-i32", lambda p: [opset1.convert(opset1.max_pool(opset1.convert(p["x"], "i32"), [1, 1], [0, 0], [0, 0],
                                                              [2, 2]), "f32")],
     [1, 1, 4, 4], "ONNX MaxPool takes only"),
    ("normalize-l2-empty-axes", lambda p: [opset1.normalize_l2(p["x"], C(np.array([], np.int64)), 0.5, "add")],
     [1, 2, 3], "with empty axes OpenVINO outputs 1"),
    ("avgpool16-dilated", lambda p: [opset16.avg_pool(p["x"], [1, 1], [0, 0], [0, 0], [2, 2], True, "floor",
                                                      "explicit", [2, 2])], [1, 1, -1, -1],
     "dilations need static spatial dims"),
    ("lrn-width-only", lambda p: [opset1.lrn(p["x"], C(np.array([3])), 1e-2, 0.75, 2.0, 3)], [1, 2, 4, 4],
     "only [1] or all spatial axes"),
    ("group-conv-dynamic-groups", lambda p: [opset1.group_convolution(p["x"], p["w"], [1, 1], [0, 0], [0, 0],
                                                                      [1, 1])],
     [1, 4, 5, 5], "group count"),
]


@pytest.mark.parametrize("case_id, make, shape, reason", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_say_why(case_id, make, shape, reason):
    inputs = {"x": P(shape, "f32", "x"), "w": P([-1, 1, 1, 3, 3], "f32", "w")}
    outputs = make(inputs)
    parameters = [inputs["x"]] + ([inputs["w"]] if case_id == "group-conv-dynamic-groups" else [])
    model = ov.Model([o.output(0) if hasattr(o, "output") else o for o in outputs], parameters, case_id)
    with pytest.raises(ConversionError, match="unsupported configuration") as error:
        import_ir(model)
    assert reason in str(error.value)


@pytest.mark.torch
@pytest.mark.slow  # ~25 s: imports torch and runs the PyTorch frontend
def test_torch_cnn_block_converts_whole():
    """A CNN block as openvino.convert_model writes it from PyTorch (static input shape): Convolution,
    GroupConvolution (depthwise), BatchNorm folded, PRelu, MaxPool-14/AvgPool-14 with ceil_mode,
    GroupNormalization, MVN-6 (LayerNorm), ConvolutionBackpropData, AdaptiveAvgPool, HSwish, Gelu, Swish,
    Mish — imported whole and matching OpenVINO."""
    torch = pytest.importorskip("torch")

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.norm = torch.nn.BatchNorm2d(8)
            self.depthwise = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
            self.prelu = torch.nn.PReLU(8)
            self.max_pool = torch.nn.MaxPool2d(3, 2, padding=1, ceil_mode=True)
            self.avg_pool = torch.nn.AvgPool2d(3, 2, padding=1, ceil_mode=True)
            self.group_norm = torch.nn.GroupNorm(4, 8)
            self.up = torch.nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)
            self.layer_norm = torch.nn.LayerNorm(4)
            self.adaptive = torch.nn.AdaptiveAvgPool2d((3, 3))

        def forward(self, x):
            y = torch.nn.functional.hardswish(self.norm(self.conv(x)))
            y = self.prelu(self.depthwise(y))
            y = self.max_pool(y) + self.avg_pool(y)
            y = torch.nn.functional.silu(torch.nn.functional.gelu(self.group_norm(y)))
            z = self.layer_norm(self.up(y).transpose(1, 3)).transpose(1, 3)
            return self.adaptive(z), torch.nn.functional.mish(z).amax((2, 3), keepdim=True)

    torch.manual_seed(0)
    x = torch.randn(2, 3, 29, 31)
    with torch.no_grad():
        model = ov.convert_model(Block().eval(), example_input=x, input=[x.shape])
    feeds = {model.inputs[0].get_any_name(): x.numpy()}
    got = onnx_bridge.InferenceSession(import_ir(model)).run(None, feeds)
    assert_same(got, ov_run(model, feeds), NORM, "PyTorch CNN block")
