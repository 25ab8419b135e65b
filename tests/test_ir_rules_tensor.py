"""Import rules for attention, resampling, layout, selection and shape ops.

Each case builds a small OpenVINO model with the opset builders, imports it with import_ir, and checks
onnxruntime's result against OpenVINO's CPU plugin (f32 precision): integers and data movement exactly,
arithmetic within FLOAT (the two runtimes sum in different orders). Configurations the rules refuse are
checked to be refused, with their reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import (opset1, opset3, opset4, opset5, opset6, opset7, opset8, opset9, opset10, opset11,  # noqa: E402
                      opset12, opset13, opset15)

import onnxruntime  # noqa: E402
from converters.openvino_ir import import_ir  # noqa: E402
from custom_ops.errors import ConversionError  # noqa: E402

pytestmark = pytest.mark.openvino
RNG = np.random.default_rng(13)
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
#: Dot products, softmax and interpolation weights: the runtimes accumulate in different orders.
FLOAT = dict(rtol=1e-4, atol=1e-5)
CORE = ov.Core()


def P(shape, element="f32", name=None):
    return opset1.parameter(ov.PartialShape(shape), getattr(ov.Type, element), name=name)


def C(value, dtype=None):
    return opset1.constant(np.asarray(value, dtype=dtype))


def floats(*shape):
    return (RNG.standard_normal(shape) * 3).astype(np.float32)


def ints(*shape, low=-9, high=10, dtype=np.int32):
    return RNG.integers(low, high, shape).astype(dtype)


@dataclass
class Case:
    id: str
    build: Callable  # (parameters by name) -> list of output nodes (or outputs)
    feeds: dict      # input name -> array; Parameters get dynamic dims unless `static`
    tolerance: dict = field(default_factory=dict)  # empty: exact
    static: bool = False
    #: "cpu": OpenVINO's CPU plugin; "reference": OpenVINO's reference (the model with Constants for inputs,
    #: constant-folded at compile time), where the CPU plugin deviates from the op's spec (why: inline).
    against: str = "cpu"


def _model(case: Case, constants: bool = False):
    if constants:
        outputs = []
        for node in case.build({name: C(value) for name, value in case.feeds.items()}):
            outputs += node.outputs() if hasattr(node, "outputs") else [node]
        return ov.Model(outputs, [], case.id)
    params = {name: P(list(v.shape) if case.static else [-1] * v.ndim,
                      "boolean" if v.dtype == bool else ov.Type(v.dtype).get_type_name(), name)
              for name, v in case.feeds.items()}
    outputs = []
    for node in case.build(params):
        outputs += node.outputs() if hasattr(node, "outputs") else [node]
    return ov.Model(outputs, list(params.values()), case.id)


def _run_openvino(model, feeds):
    compiled = CORE.compile_model(model, "CPU", CONFIG)
    result = compiled(feeds)
    return [result[output] for output in compiled.outputs]


def _run_onnx(onnx_model, feeds):
    session = onnxruntime.InferenceSession(onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def check(case: Case):
    model = _model(case)
    got = _run_onnx(import_ir(model), case.feeds)
    want = (_run_openvino(_model(case, constants=True), {}) if case.against == "reference"
            else _run_openvino(model, case.feeds))
    assert len(got) == len(want)
    for index, (a, b) in enumerate(zip(got, want)):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), f"{case.id} output {index}"
        if case.tolerance:
            np.testing.assert_allclose(a, b, **case.tolerance, err_msg=f"{case.id} output {index}")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{case.id} output {index}")


def _sdpa(mask=None, scale=None, causal=False):
    def build(p):
        args = [p["q"], p["k"], p["v"]]
        if mask is not None or scale is not None:
            args.append(p["m"] if mask is not None else C(np.zeros((), np.float32)))
        if scale is not None:
            args.append(p["s"])
        return [opset13.scaled_dot_product_attention(*args, causal=causal)]
    return build


def _attention_cases():
    q, k, v = floats(2, 3, 4, 8), floats(2, 3, 5, 8), floats(2, 3, 5, 6)
    bool_mask = RNG.integers(0, 2, (4, 5)).astype(bool)
    bool_mask[:, 0] = True
    float_mask = floats(1, 4, 5)
    qkv = {"q": q, "k": k, "v": v}
    long_q = {"q": floats(1, 6, 8), "k": floats(1, 3, 8), "v": floats(1, 3, 4)}  # more rows than columns
    return [
        Case("sdpa-plain", _sdpa(), qkv, FLOAT),
        Case("sdpa-plain-static-head", _sdpa(), qkv, FLOAT, static=True),
        Case("sdpa-causal", _sdpa(causal=True), qkv, FLOAT),
        Case("sdpa-causal-more-rows", _sdpa(causal=True), long_q, FLOAT),
        Case("sdpa-bool-mask", _sdpa(mask=True), {**qkv, "m": bool_mask}, FLOAT),
        Case("sdpa-float-mask", _sdpa(mask=True), {**qkv, "m": float_mask}, FLOAT),
        Case("sdpa-causal-ignores-mask", _sdpa(mask=True, causal=True), {**qkv, "m": float_mask}, FLOAT),
        Case("sdpa-scale", _sdpa(mask=True, scale=True), {**qkv, "m": float_mask, "s": np.array(0.3, np.float32)},
             FLOAT),
        Case("sdpa-scale-no-mask", _sdpa(scale=True), {**qkv, "s": np.array(0.7, np.float32)}, FLOAT),
        # A fully masked row: -inf everywhere -> NaN in OpenVINO and in the decomposition.
        Case("sdpa-fully-masked-row", _sdpa(mask=True),
             {**qkv, "m": np.where(np.arange(4)[:, None] == 1, False, bool_mask)}, FLOAT),
    ]


def _topk(version, mode, sort, k=2, axis=1, index="i32", stable=None):
    module = {1: opset1, 3: opset3, 11: opset11}[version]

    def build(p):
        count = C(k, np.int64) if not isinstance(k, str) else opset1.convert(p[k], "i64")
        if version == 1:
            return [module.topk(p["x"], count, axis, mode, sort, index)]
        if version == 3:
            return [module.topk(p["x"], count, axis, mode, sort, index)]
        return [module.topk(p["x"], count, axis, mode, sort, index, stable)]
    return build


def _selection_cases():
    distinct = RNG.permutation(60).reshape(3, 4, 5).astype(np.float32)
    ties = ints(3, 8, low=0, high=3).astype(np.float32)
    cases = []
    for version in (1, 3, 11):
        for mode in ("max", "min"):
            for sort in ("value", "index"):
                for index in ("i32", "i64"):
                    cases.append(Case(f"topk-{version}-{mode}-{sort}-{index}", _topk(version, mode, sort, 3, 1, index,
                                                                                   True if version == 11 else None),
                                      {"x": distinct}))
    cases += [
        # stable=true: equal values in index order. The CPU plugin with dynamic shapes and sort=index
        # picks another of equal elements (max of [0, 0, 2, 1, 1, 2, 0, 0], k=5: index 1, not 0); the
        # reference follows the spec.
        *[Case(f"topk-11-stable-ties-{mode}-{sort}{'-static' * static}", _topk(11, mode, sort, 5, 1, "i64", True),
               {"x": ties}, static=static, against="reference" if sort == "index" and not static else "cpu")
          for mode in ("max", "min") for sort in ("value", "index") for static in (False, True)],
        Case("topk-k-computed", _topk(3, "max", "value", "k", 2), {"x": distinct, "k": np.array(4, np.int32)}),
        Case("topk-int", _topk(11, "max", "index", 3, 0, "i64", True), {"x": ints(6, 4, low=-100, high=100)}),
        *[Case(f"cumsum-{e}-{r}", lambda p, e=e, r=r: [opset3.cum_sum(p["x"], C(-1, np.int64), e, r)],
               {"x": ints(3, 5)}) for e in (False, True) for r in (False, True)],
        Case("cumsum-float-axis-input", lambda p: [opset3.cum_sum(p["x"], p["a"], True, False)],
             {"x": floats(3, 4, 2), "a": np.array(1, np.int32)}, FLOAT),
    ]
    return cases


def _pad(version, begin, end, mode, value=None, computed=False):
    module = opset12 if version == 12 else opset1

    def build(p):
        b, e = (p["b"], p["e"]) if computed else (C(begin, np.int64), C(end, np.int64))
        args = [p["x"], b, e, mode] + ([C(value, np.float32)] if value is not None else [])
        return [module.pad(*args)]
    return build


def _reverse(axes, mode):
    def build(p):
        from openvino.utils.node_factory import NodeFactory  # opset1.reverse has no Python builder
        dtype = bool if mode == "mask" else np.int64
        return [NodeFactory("opset1").create("Reverse", [p["x"].output(0), C(axes, dtype).output(0)],
                                             {"mode": mode})]
    return build


def _layout_cases():
    x = floats(2, 3, 4, 5)
    cases = []
    for mode in ("constant", "edge", "reflect", "symmetric"):
        cases.append(Case(f"pad-1-{mode}", _pad(1, [0, 1, 2, 0], [1, 0, 1, 3], mode), {"x": x}))
        cases.append(Case(f"pad-12-{mode}-negative", _pad(12, [0, -1, 2, -2], [-1, 1, -1, 2], mode), {"x": x}))
    cases += [
        Case("pad-1-constant-value", _pad(1, [1, 0, 0, 1], [0, 0, 2, 1], "constant", 2.5), {"x": x}),
        Case("pad-12-crop-only", _pad(12, [0, 0, -1, -2], [0, -1, 0, -1], "constant"), {"x": x}),
        *[Case(f"pad-12-computed-{mode}", _pad(12, None, None, mode, computed=True),
               {"x": x, "b": np.array([0, 1, -1, 2]), "e": np.array([1, -1, 2, 0])})
          for mode in ("constant", "edge", "reflect")],
        *[Case(f"depth-to-space-{mode}-{b}", lambda p, m=mode, b=b: [opset1.depth_to_space(p["x"], m, b)],
               {"x": floats(2, 8 * b * b // 4 * 4 // 4, 3, 2) if b == 1 else floats(2, 3 * b * b, 3, 2)})
          for mode in ("blocks_first", "depth_first") for b in (2, 3)],
        *[Case(f"space-to-depth-{mode}-{b}", lambda p, m=mode, b=b: [opset1.space_to_depth(p["x"], m, b)],
               {"x": floats(2, 3, 2 * b, 3 * b)}, static=True)
          for mode in ("blocks_first", "depth_first") for b in (2, 3)],
        *[Case(f"shuffle-channels-{axis}-{group}",
               lambda p, a=axis, g=group: [opset3.shuffle_channels(p["x"], a, g)], {"x": floats(2, 6, 4, 3)},
               static=True) for axis, group in ((1, 2), (1, 3), (-3, 6), (3, 3), (2, 2))],
        Case("reverse-index", _reverse([0, -1], "index"), {"x": x}),
        Case("reverse-mask", _reverse([False, True, True, False], "mask"), {"x": x}),
        Case("reverse-mask-none", _reverse([False] * 4, "mask"), {"x": x}),
        Case("roll-one-axis", lambda p: [opset7.roll(p["x"], C([2], np.int64), C([1], np.int64))], {"x": x}),
        Case("roll-negative-shift-and-axis", lambda p: [opset7.roll(p["x"], C([-7, 3], np.int32),
                                                                    C([-1, 0], np.int32))], {"x": x}),
        Case("roll-repeated-axis", lambda p: [opset7.roll(p["x"], C([1, 2], np.int64), C([3, 3], np.int64))],
             {"x": x}),
    ]
    return cases


def _shape_cases():
    x = floats(4, 6, 5)
    return [
        # Broadcast-1 explicit (recorded as mode "none") and Broadcast-3 explicit, numpy, bidirectional.
        Case("broadcast-1-explicit", lambda p: [opset1.broadcast(p["x"], C([2, 3, 4], np.int64), C([1], np.int64),
                                                                 "explicit")], {"x": floats(3)}),
        Case("broadcast-3-explicit", lambda p: [opset3.broadcast(p["x"], C([3, 2, 4], np.int64),
                                                                 C([0, 2], np.int64), "explicit")],
             {"x": floats(3, 4)}),
        Case("broadcast-1-numpy", lambda p: [opset1.broadcast(p["x"], C([2, 3, 4], np.int64))], {"x": floats(3, 1)}),
        Case("broadcast-3-bidirectional", lambda p: [opset3.broadcast(p["x"], C([2, 1, 4], np.int64),
                                                                      broadcast_spec="bidirectional")],
             {"x": floats(3, 1)}),
        Case("broadcast-3-computed-shape", lambda p: [opset3.broadcast(p["x"], opset3.shape_of(p["y"]))],
             {"x": floats(1, 4), "y": floats(3, 4)}),
        Case("variadic-split-constant", lambda p: [opset1.variadic_split(p["x"], C(1, np.int64),
                                                                         C([2, -1, 1], np.int64))], {"x": x}),
        Case("variadic-split-computed", lambda p: [opset1.variadic_split(p["x"], C(-1, np.int64), p["n"])],
             {"x": x, "n": np.array([1, 3, 1], np.int64)}, static=True),  # a static count of outputs
        Case("variadic-split-computed-rest", lambda p: [opset1.variadic_split(p["x"], C(0, np.int32), p["n"])],
             {"x": x, "n": np.array([-1, 1], np.int32)}, static=True),
        Case("variadic-split-minus-one-dynamic", lambda p: [opset1.variadic_split(p["x"], C(1, np.int64),
                                                                                  C([-1, 4], np.int64))],
             {"x": x}),
        Case("split", lambda p: [opset1.split(p["x"], C(-2, np.int64), 3)], {"x": x}),
        Case("tile", lambda p: [opset1.tile(p["x"], C([2, 1, 3], np.int64))], {"x": floats(3, 2)}),
        *[Case(f"tile-computed-{len(r)}", lambda p: [opset1.tile(p["x"], p["r"])],
               {"x": floats(3, 2), "r": np.array(r, np.int64)}, static=True) for r in ([2], [2, 3], [2, 1, 3])],
        Case("tile-short-repeats", lambda p: [opset1.tile(p["x"], C([2], np.int64))], {"x": floats(3, 2)}),
        Case("gather-negative-indices", lambda p: [opset8.gather(p["x"], C([-1, 0, -4, 2], np.int64),
                                                                 C(1, np.int64))], {"x": x}),
        Case("gather-batch-dims", lambda p: [opset8.gather(p["x"], p["i"], C(1, np.int64), 1)],
             {"x": x, "i": ints(4, 3, low=-6, high=6, dtype=np.int64)}),
        *[Case(f"gather-nd-{v}-batch-{b}", lambda p, v=v, b=b: [(opset5 if v == 5 else opset8).gather_nd(
            p["x"], p["i"], b)], {"x": floats(2, 3, 4, 5), "i": ints(2, 3, 2, 1, low=0, high=2, dtype=np.int64)},
               static=True)
          for v in (5, 8) for b in (0, 1, 2)],
        Case("gather-elements", lambda p: [opset6.gather_elements(p["x"], p["i"], -1)],
             {"x": x, "i": ints(4, 6, 2, low=0, high=5)}),
        Case("scatter-nd-update", lambda p: [opset4.scatter_nd_update(p["x"], C([[1], [3]], np.int64), p["u"])],
             {"x": x, "u": floats(2, 6, 5)}),
        Case("scatter-nd-update-15-sum", lambda p: [opset15.scatter_nd_update(p["x"], C([[1], [1]], np.int64), p["u"],
                                                                               "sum")],
             {"x": x, "u": floats(2, 6, 5)}, FLOAT),
        Case("non-zero", lambda p: [opset3.non_zero(p["x"], "i32"), opset3.non_zero(p["x"], "i64")],
             {"x": ints(3, 4, low=0, high=2)}),
        Case("range-1-int", lambda p: [opset1.range(p["a"], p["b"], C(3, np.int64))],
             {"a": np.array(-4, np.int64), "b": np.array(11, np.int64)}),
        Case("range-4-float", lambda p: [opset4.range(p["a"], C(2.5, np.float32), C(0.5, np.float32), "f32")],
             {"a": np.array(-1.0, np.float32)}),
    ]


def _unstable_topk_cases():
    """TopK-1/3 and TopK-11 stable=false leave the order of equal values unspecified (OpenVINO's CPU
    plugin picks differently for static and dynamic shapes); ONNX takes the lower index first."""
    ties = ints(3, 8, low=0, high=3).astype(np.float32)
    return [Case(f"topk-{version}-ties-{mode}-{sort}", _topk(version, mode, sort, 4, -1, "i32",
                                                             False if version == 11 else None), {"x": ties})
            for version in (1, 3, 11) for mode in ("max", "min") for sort in ("value", "index")]


def _interpolate(mode, calc, target, coordinates="half_pixel", nearest="round_prefer_floor", antialias=False,
                 cube=-0.75, pads=(0, 0, 0, 0), axes=(2, 3), version=11):
    def build(p):
        axes_node = C(list(axes), np.int64) if axes is not None else None
        dtype = np.int64 if calc == "sizes" else np.float32
        if version == 11:
            return [opset11.interpolate(p["x"], C(target, dtype), mode, calc, list(pads), list(pads), coordinates,
                                        nearest, antialias, cube, axes_node)]
        n = len(target)
        sizes = C(target if calc == "sizes" else [1] * n, np.int64)
        scales = C(target if calc == "scales" else [1.0] * n, np.float32)
        return [opset10.interpolate(p["x"], sizes, scales, mode, calc, list(pads), list(pads), coordinates,
                                    nearest, antialias, cube, axes_node)]
    return build


#: (sizes, scales) targets for H x W = 5 x 7: up, down, mixed; 0.6 * 5 = 3.0000001 in f32 (floor: 3)
_TARGETS = {"sizes": ([9, 13], [3, 4], [10, 3]), "scales": ([2.0, 1.5], [0.6, 0.43], [1.7, 0.5])}


def _interpolate_1(mode, sizes, axes=(2, 3), align_corners=False, pads=(), antialias=False):
    def build(p):
        attrs = dict(axes=list(axes), mode=mode, align_corners=align_corners, antialias=antialias,
                     pads_begin=list(pads), pads_end=list(pads))
        return [opset1.interpolate(p["x"], C(sizes, np.int64), attrs)]
    return build


def _interpolate_1_cases():
    image, volume = {"x": floats(1, 2, 5, 7)}, {"x": floats(1, 2, 3, 4, 5)}
    return [Case(f"interpolate-1-{mode}-{'-'.join(map(str, sizes))}-{'-'.join(map(str, axes))}-ac{int(align)}",
                 _interpolate_1(mode, sizes, axes, align), data, FLOAT, static=True)
            for mode in ("nearest", "linear", "cubic") for align in (False, True)
            for sizes, axes, data in (([9, 13], (2, 3), image), ([3, 4], (2, 3), image), ([11], (3,), image),
                                      ([6, 10], (3, 4), volume))
            if not (mode == "cubic" and len(data["x"].shape) == 5)] + [
        Case(f"interpolate-1-{mode}-pads", _interpolate_1(mode, [12], (3,), pads=(0, 0, 0, 1)), image, FLOAT,
             static=True) for mode in ("linear", "nearest")]


def _interpolate_cases():
    image = {"x": floats(1, 2, 5, 7)}
    cases = []
    for mode, coordinates, nearest in (
            *[("nearest", c, n) for c in ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn",
                                          "align_corners")
              for n in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")],
            *[(m, c, "round_prefer_floor") for m in ("linear_onnx", "linear", "cubic")
              for c in ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners")]):
        for calc in ("sizes", "scales"):  # one of the three targets each, in turn
            index = len(cases) % 3
            cases.append(Case(f"interpolate-{mode}-{coordinates}-{nearest}-{calc}-{index}",
                              _interpolate(mode, calc, _TARGETS[calc][index], coordinates, nearest), image, FLOAT))
    cases += [
        Case("interpolate-cubic-coeff", _interpolate("cubic", "sizes", [8, 4], cube=-0.5), image, FLOAT),
        Case("interpolate-antialias-upscale", _interpolate("linear_onnx", "scales", [2.0, 1.0], antialias=True),
             image, FLOAT),
        Case("interpolate-nearest-antialias", _interpolate("nearest", "scales", [0.5, 0.5], antialias=True),
             image, FLOAT),
        Case("interpolate-pads", _interpolate("linear_onnx", "sizes", [9, 12], pads=(0, 0, 1, 2)), image, FLOAT),
        Case("interpolate-nearest-u8", _interpolate("nearest", "sizes", [9, 4]),
             {"x": RNG.integers(0, 255, (1, 2, 5, 7)).astype(np.uint8)}),
        Case("interpolate-no-axes", _interpolate("nearest", "scales", [1.0, 1.0, 2.0, 0.5], axes=None), image),
        Case("interpolate-one-axis", _interpolate("cubic", "sizes", [11], axes=(3,)), image, FLOAT),
        *[Case(f"interpolate-4-{mode}-{calc}", _interpolate(mode, calc, _TARGETS[calc][2], version=4), image, FLOAT)
          for mode in ("nearest", "linear_onnx", "cubic") for calc in ("sizes", "scales")],
        Case("interpolate-computed-sizes", lambda p: [opset11.interpolate(
            p["x"], opset1.convert(p["s"], "i64"), "linear_onnx", "sizes", axes=C([2, 3], np.int64))],
             {**image, "s": np.array([4, 11], np.int32)}, FLOAT),
    ]
    return cases


def _roi_align(version, sampling, scale, aligned=None, mode="avg"):
    def build(p):
        if version == 3:
            return [opset3.roi_align(p["x"], p["r"], p["b"], 3, 2, sampling, scale, mode)]
        return [opset9.roi_align(p["x"], p["r"], p["b"], 3, 2, sampling, scale, mode, aligned)]
    return build


def _roi_cases():
    corners = np.sort(RNG.uniform(0, 14, (5, 2, 2)), axis=1).astype(np.float32)  # x1 <= x2, y1 <= y2
    feeds = {"x": floats(2, 3, 8, 10), "r": corners.transpose(0, 2, 1).reshape(5, 4)[:, [0, 2, 1, 3]].copy(),
             "b": np.array([0, 1, 1, 0, 1], np.int32)}
    return [Case(f"roi-align-{version}-{aligned}-{sampling}-{scale}", _roi_align(version, sampling, scale, aligned),
                 feeds, FLOAT, static=True)  # the CPU plugin needs static ROI shapes
            for version, aligned in ((3, None), (9, "asymmetric"))
            for sampling, scale in ((2, 0.5), (0, 0.75), (1, 1.0))]


def _nms(sort=True, encoding="corner", inputs=("m", "i", "t"), output_type="i64", version=9):
    def build(p):
        args = [C(3, np.int64), C(0.3, np.float32), C(0.1, np.float32)]
        args = [p[name] if name in p else arg for name, arg in zip(inputs, args)][:len(inputs)]
        module = opset9 if version == 9 else opset5
        return [module.non_max_suppression(p["b"], p["s"], *args, box_encoding=encoding, sort_result_descending=sort,
                                           output_type=output_type)]
    return build


def _nms_cases():
    xy, wh = RNG.uniform(0, 10, (2, 6, 2)), RNG.uniform(1, 5, (2, 6, 2))
    corners = np.concatenate([xy, xy + wh], -1).astype(np.float32)
    centers = np.concatenate([xy + wh / 2, wh], -1).astype(np.float32)
    scores = RNG.uniform(-0.2, 1, (2, 3, 6)).astype(np.float32)
    scores[0, 0, 2] = scores[0, 0, 3]  # equal scores within a class
    scores[1, 1, 0] = scores[0, 2, 4]  # and across batches
    scores[0, 1, 1] = 0.1              # at the threshold
    feeds = {"b": corners, "s": scores}
    return [
        *[Case(f"nms-9-sort-{sort}-{encoding}", _nms(sort, encoding), {**feeds, "b": boxes}, FLOAT, static=True)
          for sort in (False, True) for encoding, boxes in (("corner", corners), ("center", centers))],
        Case("nms-9-i32", _nms(output_type="i32"), feeds, FLOAT, static=True),
        *[Case(f"nms-5-sort-{sort}", _nms(sort, version=5), feeds, FLOAT, static=True) for sort in (False, True)],
        Case("nms-9-defaults", _nms(inputs=("m",)), feeds, FLOAT, static=True),  # iou 0, no threshold given
        Case("nms-9-computed-inputs", _nms(), {**feeds, "m": np.array(2, np.int64), "t": np.array(-0.1, np.float32)},
             FLOAT, static=True),
        # IoU exactly at the threshold (1/2): OpenVINO suppresses (>=), ONNX would keep (>)
        *[Case(f"nms-9-iou-at-threshold-{iou}", lambda p, iou=iou: [opset9.non_max_suppression(
            p["b"], p["s"], C(3, np.int64), C(iou, np.float32), C(0.0, np.float32))],
            {"b": np.array([[[0, 0, 2, 1], [0, 0, 1, 1], [5, 5, 6, 6]]], np.float32),
             "s": np.array([[[0.9, 0.8, 0.7]]], np.float32)}, FLOAT, static=True) for iou in (0.5, 0.0, 1.0, 1.5)],
    ]


CASES = (_interpolate_cases() + _interpolate_1_cases() + _attention_cases() + _selection_cases() + _layout_cases()
         + _shape_cases() + _roi_cases() + _nms_cases())


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_import_matches_openvino(case):
    check(case)


@pytest.mark.parametrize("case", _unstable_topk_cases(), ids=lambda c: c.id)
def test_topk_ties_unspecified_order(case):
    """The same k values (in the same order for sort=value); indices may pick other equal elements, each a
    valid choice (and in ascending order for sort=index)."""
    model = _model(case)
    (values, indices), (want_values, want_indices) = (_run_onnx(import_ir(model), case.feeds),
                                                      _run_openvino(model, case.feeds))
    if "-index" in case.id:
        np.testing.assert_array_equal(np.sort(values, -1), np.sort(want_values, -1))
    else:
        np.testing.assert_array_equal(values, want_values)
    assert indices.dtype == want_indices.dtype
    np.testing.assert_array_equal(np.take_along_axis(case.feeds["x"], indices.astype(np.int64), -1), values)
    assert all(len(set(row)) == len(row) for row in indices.tolist())
    if "-index" in case.id:
        assert (np.diff(indices, axis=-1) > 0).all()


#: Configurations the rules refuse: (id, build, input shapes, words the reason must contain)
REFUSALS = [
    *[(f"interpolate-{mode}-scales-dynamic", _interpolate(mode, "scales", [0.5, 2.0]), {"x": [1, 2, -1, -1]},
       "needs static output sizes") for mode in ("bilinear_pillow", "bicubic_pillow")],
    ("interpolate-nearest-simple", _interpolate("nearest", "sizes", [9, 13], nearest="simple"), {"x": [1, 2, 5, 7]},
     "nearest_mode='simple'"),
    ("interpolate-antialias-downscale", _interpolate("linear", "scales", [0.5, 2.0], antialias=True),
     {"x": [1, 2, 5, 7]}, "axes that grow and others that shrink"),
    ("interpolate-computed-axes", lambda p: [opset11.interpolate(p["x"], C([4], np.int64), "nearest", "sizes",
                                                                 axes=p["a"])],
     {"x": [1, 2, 5, 7], "a": ([1], "i64")}, "axes must be a Constant"),
    ("interpolate-1-nearest-mixed", _interpolate_1("nearest", [9, 3]), {"x": [1, 2, 5, 7]}, "nearest_mode simple"),
    ("interpolate-1-area", _interpolate_1("area", [9, 13]), {"x": [1, 2, 5, 7]}, "mode='area'"),
    ("interpolate-linear-integer", _interpolate("linear_onnx", "sizes", [9, 13]), {"x": ([1, 2, 5, 7], "u8")},
     "on integer data"),
    # ROIAlign mode max / aligned_mode half_pixel*: imported as the dialect op (tests/test_unit_roi_align.py)
    ("pad-symmetric-computed", _pad(12, None, None, "symmetric", computed=True),
     {"x": [2, 3], "b": ([2], "i64"), "e": ([2], "i64")}, "pad_mode='symmetric' with computed pads"),
    # with soft_nms_sigma (6 inputs) a computed iou_threshold imports as the dialect op
    ("nms-computed-iou", lambda p: [opset5.non_max_suppression(p["b"], p["s"], C(3, np.int64), p["i"])],
     {"b": [1, 3, 4], "s": [1, 1, 3], "i": ([], "f32")},
     "iou_threshold must be a Constant"),
    # NMS-5/9 soft: imported as the dialect op (tests/test_unit_non_max_suppression.py)
    ("depth-to-space-5d", lambda p: [opset1.depth_to_space(p["x"], "blocks_first", 2)], {"x": [1, 8, 2, 2, 2]},
     "only 4-D"),
    ("roll-computed-shift", lambda p: [opset7.roll(p["x"], p["s"], C([0], np.int64))],
     {"x": [4], "s": ([1], "i64")}, "shift (input 1) must be a Constant"),
    ("variadic-split-computed-axis", lambda p: [opset1.variadic_split(p["x"], p["a"], C([1, 1], np.int64))],
     {"x": [2, 2], "a": ([], "i64")}, "axis (input 1) must be a Constant"),
]


@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda r: r[0])
def test_refused_with_reason(refusal):
    case_id, build, shapes, reason = refusal
    params = {name: P(*spec) if isinstance(spec, tuple) else P(spec) for name, spec in shapes.items()}
    outputs = []
    for node in build(params):
        outputs += node.outputs() if hasattr(node, "outputs") else [node]
    with pytest.raises(ConversionError, match="unsupported configuration") as error:
        import_ir(ov.Model(outputs, list(params.values()), case_id))
    assert reason in str(error.value)


@pytest.mark.torch
def test_torch_module_ir_converts_whole():
    """An IR as openvino.convert_model writes it from PyTorch (SDPA causal / float mask / bool mask + scale,
    F.interpolate bilinear / nearest / bicubic, topk, an index_copy KV cache (Broadcast-1 mode "none"),
    reflect pad, roll, cumsum, pixel_shuffle) converts whole and matches OpenVINO CPU."""
    torch = pytest.importorskip("torch")
    import onnx_bridge
    functional = torch.nn.functional

    class Block(torch.nn.Module):
        def forward(self, q, k, v, mask, img, cache, pos):
            return (functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                    functional.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                    functional.scaled_dot_product_attention(q, k, v, attn_mask=mask > 0, scale=0.2),
                    functional.interpolate(img, scale_factor=2, mode="bilinear", align_corners=False),
                    functional.interpolate(img, size=(7, 9), mode="nearest"),
                    functional.interpolate(img, scale_factor=1.5, mode="bicubic", align_corners=True),
                    *torch.topk(img.flatten(1), 5),
                    cache.index_copy(2, pos, k[:, :, :2]),
                    functional.pad(img, (1, 2, 0, 1), mode="reflect"),
                    torch.roll(img, shifts=(1, -2), dims=(2, 3)),
                    torch.cumsum(img, dim=3),
                    functional.pixel_shuffle(img.repeat(1, 2, 1, 1), 2))

    generator = torch.Generator().manual_seed(0)
    args = (torch.randn(1, 2, 4, 8, generator=generator), torch.randn(1, 2, 6, 8, generator=generator),
            torch.randn(1, 2, 6, 8, generator=generator), torch.randn(1, 1, 4, 6, generator=generator),
            torch.randn(1, 4, 5, 6, generator=generator), torch.zeros(1, 2, 10, 8), torch.tensor([3, 7]))
    model = ov.convert_model(Block(), example_input=args)
    types = {node.get_type_name() for node in model.get_ordered_ops()}
    assert {"ScaledDotProductAttention", "Interpolate", "TopK", "Broadcast", "Pad", "Roll", "CumSum"} <= types
    feeds = {parameter.get_any_name(): value.numpy() for parameter, value in zip(model.inputs, args)}
    got = onnx_bridge.InferenceSession(import_ir(model)).run(None, feeds)
    want = _run_openvino(model, feeds)
    for index, (a, b) in enumerate(zip(got, want, strict=True)):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), index
        np.testing.assert_allclose(a, b, **FLOAT, err_msg=f"output {index}")


def test_broadcast_1_explicit_is_recorded_as_none():
    """OpenVINO records Broadcast-1's explicit mode as mode="none"; it imports as explicit."""
    x = P([3], name="x")
    node = opset1.broadcast(x, C([2, 3, 4], np.int64), C([1], np.int64), "explicit")
    assert node.get_attributes()["mode"] == "none"
    check(Case("broadcast-none", lambda p: [opset1.broadcast(p["x"], C([2, 3, 4], np.int64), C([1], np.int64),
                                                             "explicit")], {"x": floats(3)}))
