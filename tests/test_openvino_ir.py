"""OpenVINO IR -> ONNX import rules and ONNX -> IR export.

Each case builds a small OpenVINO model with the opset builders, imports it, and checks that onnxruntime
(onnx_bridge.InferenceSession) gives OpenVINO's own result (CPU plugin, f32 precision), bit for bit unless
the case states why not; then that the imported ONNX read back into OpenVINO gives it too.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest

ov = pytest.importorskip("openvino")

from openvino import (opset1, opset3, opset4, opset5, opset7, opset8, opset9, opset10, opset12,  # noqa: E402
                      opset13, opset15)

import onnx_bridge  # noqa: E402
from onnx_bridge import divergences  # noqa: E402
from converters.openvino_ir import export_ir, import_ir, supported_ops, to_openvino  # noqa: E402
from custom_ops._schemas import register_schemas  # noqa: E402
from onnx_bridge.config import DIALECT_OPSET, DOMAIN  # noqa: E402
from onnx_bridge.errors import ConversionError, ModelError  # noqa: E402
from tests.helpers.ir_cases import (ACCUMULATION, LIBM, ULP, C, Case, P, assert_same as _assert_same,  # noqa: E402
                                    build as _build, openvino_expected as _openvino_expected,
                                    opaque, ov_run as _ov_run)

pytestmark = pytest.mark.openvino
RNG = np.random.default_rng(7)


def floats(*shape, dtype=np.float32):
    return (RNG.standard_normal(shape) * 3).astype(dtype)


def ints(*shape, low=-9, high=10, dtype=np.int32):
    return RNG.integers(low, high, shape).astype(dtype)


def _unary(name, builder, tolerance=LIBM, data=None):
    data = floats(3, 4) if data is None else data
    return Case(name, lambda p: [builder(p["x"])], {"x": data}, tolerance)


POSITIVE = np.abs(floats(3, 4)) + 0.1

CASES = [
    # -- elementwise ------------------------------------------------------------------------------------
    Case("add-broadcast", lambda p: [opset1.add(p["a"], p["b"])], {"a": floats(2, 3, 4), "b": floats(4)}),
    Case("subtract-int", lambda p: [opset1.subtract(p["a"], p["b"])], {"a": ints(3, 1), "b": ints(1, 5)}),
    Case("multiply-i64", lambda p: [opset1.multiply(p["a"], C(3, np.int64))], {"a": ints(4, dtype=np.int64)}),
    Case("max-min-pow", lambda p: [opset1.maximum(p["a"], p["b"]), opset1.minimum(p["a"], p["b"]),
                                   opset1.power(opset1.abs(p["a"]), C(2.0, np.float32))],
         {"a": floats(3, 4), "b": floats(3, 4)}),
    Case("squared-difference", lambda p: [opset1.squared_difference(p["a"], p["b"])],
         {"a": floats(5), "b": floats(5)}),
    Case("compare", lambda p: [f(p["a"], p["b"]) for f in (opset1.equal, opset1.not_equal, opset1.less,
                                                            opset1.less_equal, opset1.greater,
                                                            opset1.greater_equal)],
         {"a": ints(20, low=0, high=3), "b": ints(20, low=0, high=3)}),
    Case("logical", lambda p: [opset1.logical_and(p["a"], p["b"]), opset1.logical_or(p["a"], p["b"]),
                               opset1.logical_xor(p["a"], p["b"]), opset1.logical_not(p["a"])],
         {"a": RNG.integers(0, 2, 8).astype(bool), "b": RNG.integers(0, 2, 8).astype(bool)}),
    Case("select", lambda p: [opset1.select(p["c"], p["a"], p["b"])],
         {"c": RNG.integers(0, 2, (3, 1)).astype(bool), "a": floats(3, 4), "b": floats(4)}),
    # Divide against the reference: the CPU plugin multiplies by the reciprocal in f32 (1 ulp off the
    # correctly rounded quotient ONNX Div gives) and truncates signed integers although m_pythondiv
    # (default true) asks for floor (7 / -2 -> -3, not -4). It also rounds u8/u16 quotients to nearest
    # (7 / 2 -> 4; no reference exists for those types, constant folding runs the same kernel).
    Case("divide-float", lambda p: [opset1.divide(p["a"], p["b"])], {"a": floats(3, 4), "b": POSITIVE},
         against="reference"),
    Case("divide-int-floor", lambda p: [opset1.divide(p["a"], p["b"])],
         {"a": np.array([7, -7, 7, -7, 6, -6, 0], np.int32), "b": np.array([2, 2, -2, -2, 3, -3, 5], np.int32)},
         against="reference"),
    Case("divide-unsigned", lambda p: [opset1.divide(p["a"], p["b"])],
         {"a": np.array([7, 200, 9], np.uint32), "b": np.array([2, 3, 10], np.uint32)}),
    Case("floor-mod-mod-int", lambda p: [opset1.floor_mod(p["a"], p["b"]), opset1.mod(p["a"], p["b"])],
         {"a": np.array([7, -7, 7, -7, 6], np.int32), "b": np.array([2, 2, -2, -2, 3], np.int32)}),
    Case("floor-mod-mod-float", lambda p: [opset1.floor_mod(p["a"], p["b"]), opset1.mod(p["a"], p["b"])],
         {"a": np.array([7.5, -7.5, 7.5, -7.5, 6], np.float32), "b": np.array([2, 2, -2, -2, 3], np.float32)}),
    _unary("relu", opset1.relu, {}),
    _unary("abs-neg-sign", lambda x: opset1.sign(opset1.negative(opset1.abs(x))), {}),
    _unary("floor-ceiling", lambda x: opset1.add(opset1.floor(x), opset1.ceiling(x)), {}),
    # torch's floor_divide on int64 comes out of convert_model as Divide + Floor (ONNX Floor takes floats)
    Case("floor-ceiling-int", lambda p: [opset1.floor(p["a"]), opset1.ceiling(p["b"])],
         {"a": ints(3, 4, dtype=np.int64), "b": ints(5)}),
    _unary("sqrt", opset1.sqrt, {}, POSITIVE),
    _unary("exp", opset1.exp),
    _unary("log", opset1.log, data=POSITIVE),
    _unary("sigmoid", opset1.sigmoid),
    _unary("tanh", opset1.tanh),
    _unary("erf", opset1.erf),
    _unary("sin-cos", lambda x: opset1.add(opset1.sin(x), opset1.cos(x))),
    _unary("trigonometric", lambda x: opset1.add(opset1.add(opset1.tan(x), opset1.atan(x)),
                                                 opset1.add(opset1.sinh(x), opset1.cosh(x)))),
    _unary("inverse-trigonometric", lambda x: opset1.add(opset1.asin(x), opset1.acos(x)),
           data=np.array([-0.9, -0.2, 0.0, 0.5, 1.0], np.float32)),
    _unary("inverse-hyperbolic", lambda x: opset1.add(opset4.asinh(x), opset4.atanh(opset1.tanh(x))),
           data=np.array([-0.9, -0.2, 0.0, 0.5, 1.0], np.float32)),
    _unary("acosh", opset4.acosh, data=POSITIVE + 1),
    _unary("softsign", opset9.softsign),
    _unary("softplus", opset4.softplus),
    _unary("hswish", opset4.hswish),
    _unary("hsigmoid", opset5.hsigmoid),
    _unary("mish", opset4.mish),
    _unary("swish", lambda x: opset4.swish(x, C(1.5, np.float32))),
    _unary("elu", lambda x: opset1.elu(x, 0.7)),
    _unary("gelu-erf", lambda x: opset7.gelu(x, "erf")),
    _unary("gelu-tanh", lambda x: opset7.gelu(x, "tanh")),
    _unary("clamp", lambda x: opset1.clamp(x, -1.5, 2.25), {}),
    Case("clamp-int", lambda p: [opset1.clamp(p["x"], -1.5, 2.5)], {"x": ints(10)}),
    _unary("round-even", lambda x: opset5.round(x, "half_to_even"), {},
           np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7], np.float32)),
    _unary("round-away", lambda x: opset5.round(x, "half_away_from_zero"), {},
           np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7], np.float32)),
    Case("bitwise", lambda p: [opset13.bitwise_and(p["a"], p["b"]), opset13.bitwise_or(p["a"], p["b"]),
                               opset13.bitwise_xor(p["a"], p["b"]), opset13.bitwise_not(p["a"]),
                               opset13.bitwise_and(p["c"], p["d"]), opset13.bitwise_not(p["c"])],
         {"a": ints(8, low=-100, high=100), "b": ints(8, low=-100, high=100),
          "c": RNG.integers(0, 2, 8).astype(bool), "d": RNG.integers(0, 2, 8).astype(bool)}),
    # -- types --------------------------------------------------------------------------------------
    # Float -> integer truncates in both; values out of the target's range are not fed: the CPU plugin
    # saturates them (-1.7 -> u8 0) where ONNX Cast leaves them undefined (onnxruntime wraps: 255).
    Case("convert", lambda p: [opset1.convert(p["x"], "i32"), opset1.convert(p["x"], "f16"),
                               opset1.convert(p["x"], "boolean"), opset1.convert(opset1.abs(p["x"]), "u8")],
         {"x": np.array([-1.7, 1.5, 2.5, -2.5, 0.0, 7.9], np.float32)}),
    Case("convert-like", lambda p: [opset1.convert_like(p["x"], p["y"])],
         {"x": ints(5, dtype=np.int64), "y": floats(1, dtype=np.float16)}),
    Case("bf16-constant", lambda p: [opset1.add(p["x"], opset1.convert(
        opset1.constant(np.array([1.5, -2.25, 3e10], np.float32), dtype=ov.Type.bf16), "f32"))],
         {"x": floats(3)}),
    # -- matmul, softmax --------------------------------------------------------------------------
    Case("matmul", lambda p: [opset1.matmul(p["a"], p["b"], False, False)], {"a": floats(2, 3, 4),
                                                                            "b": floats(4, 5)}, ACCUMULATION),
    Case("matmul-transposed", lambda p: [opset1.matmul(p["a"], p["b"], True, True)],
         {"a": floats(2, 4, 3), "b": floats(2, 5, 4)}, ACCUMULATION),
    Case("matmul-vector", lambda p: [opset1.matmul(p["a"], p["b"], True, False)],
         {"a": floats(4), "b": floats(4, 3)}, ACCUMULATION),
    Case("softmax", lambda p: [opset8.softmax(p["x"], -1), opset1.softmax(p["x"], 0),
                               opset5.log_softmax(p["x"], 1)], {"x": floats(3, 5)}, ACCUMULATION),
    Case("einsum", lambda p: [opset7.einsum([p["a"], p["b"]], "ij,jk->ik")],
         {"a": floats(3, 4), "b": floats(4, 2)}, ACCUMULATION),
    # -- shapes and data movement ---------------------------------------------------------------------
    Case("reshape", lambda p: [opset1.reshape(p["x"], C([0, -1], np.int64), True),
                               opset1.reshape(p["x"], C([4, 6], np.int32), False)], {"x": floats(2, 3, 4)}),
    Case("transpose", lambda p: [opset1.transpose(p["x"], C([2, 0, 1], np.int64)),
                                 opset1.transpose(p["x"], C([], np.int64))], {"x": floats(2, 3, 4)}),
    Case("concat", lambda p: [opset1.concat([p["a"], p["b"], p["a"]], -1)], {"a": floats(2, 3), "b": floats(2, 1)}),
    Case("gather", lambda p: [opset8.gather(p["x"], p["i"], C(1, np.int64)),
                              opset1.gather(p["x"], C([2, 0], np.int32), C(0, np.int64))],
         {"x": floats(3, 4), "i": np.array([[0, -1], [3, 2]], np.int64)}),
    Case("gather-7", lambda p: [opset7.gather(p["x"], p["i"], C(0, np.int64))],
         {"x": floats(3, 4), "i": np.array([2, 0, 2], np.int32)}),
    Case("gather-batch", lambda p: [opset8.gather(p["x"], p["i"], C(1, np.int64), 1)],
         {"x": floats(2, 5, 3), "i": np.array([[0, 4, 4], [1, 2, -5]], np.int64)}),
    Case("gather-elements-nd", lambda p: [opset8.gather_elements(p["x"], p["i"], 1),
                                          opset8.gather_nd(p["x"], p["j"], 0)],
         {"x": floats(3, 4), "i": ints(3, 2, low=0, high=4, dtype=np.int64),
          "j": np.array([[0, 1], [2, 3]], np.int64)}, static=True),
    Case("gather-nd-5", lambda p: [opset5.gather_nd(p["x"], p["j"], 0)],
         {"x": floats(3, 4), "j": np.array([[2], [0]], np.int32)}, static=True),
    Case("shape-of", lambda p: [opset3.shape_of(p["x"], "i32"), opset1.shape_of(p["x"])], {"x": floats(2, 3)}),
    Case("squeeze-unsqueeze", lambda p: [opset1.squeeze(p["x"], C([0, 2], np.int64)), opset15.squeeze(p["x"]),
                                         opset1.unsqueeze(p["x"], C(-1, np.int32))], {"x": floats(1, 3, 1)},
         static=True),
    Case("reduce", lambda p: [opset1.reduce_sum(p["x"], C([1], np.int64), True),
                              opset1.reduce_mean(p["x"], C([0, 2], np.int64), False),
                              opset1.reduce_max(p["x"], C(-1, np.int32), False),
                              opset1.reduce_min(p["x"], C([1], np.int64), False),
                              opset1.reduce_prod(p["x"], C([2], np.int64), False),
                              opset4.reduce_l1(p["x"], C([2], np.int64), True),
                              opset1.reduce_sum(p["x"], C([], np.int64), True)],  # empty axes: no-op
         # (keep_dims=True: the CPU plugin cannot compile empty axes without it)
         {"x": floats(2, 3, 4)}, ACCUMULATION),
    Case("reduce-logical", lambda p: [opset1.reduce_logical_and(p["x"], C([1], np.int64), False),
                                      opset1.reduce_logical_or(p["x"], C([0], np.int64), True)],
         {"x": RNG.integers(0, 2, (3, 4)).astype(bool)}),
    Case("range", lambda p: [opset4.range(C(2, np.int64), p["n"], C(3, np.int64), "i64"),
                             opset4.range(C(0.5, np.float32), C(3.0, np.float32), C(0.5, np.float32), "f32"),
                             opset1.range(C(5, np.int32), C(-1, np.int32), C(-2, np.int32))],
         {"n": np.array(17, np.int64)}),
    Case("broadcast", lambda p: [opset3.broadcast(p["x"], C([2, 3, 4], np.int64)),
                                 opset3.broadcast(p["x"], C([2, 1, 1], np.int64), broadcast_spec="BIDIRECTIONAL"),
                                 opset3.broadcast(p["y"], C([2, 3, 4], np.int64), C([1], np.int64), "EXPLICIT")],
         {"x": floats(3, 4), "y": floats(3)}),
    Case("tile", lambda p: [opset1.tile(p["x"], C([2], np.int64)), opset1.tile(p["x"], C([2, 1, 3], np.int64))],
         {"x": floats(2, 3)}),
    Case("slice", lambda p: [opset8.slice(p["x"], C([1, 0]), C([3, 100]), C([1, 2])),
                             opset8.slice(p["x"], C([-1]), C([-100]), C([-2]), C([1]))],
         {"x": floats(4, 5)}),
    Case("strided-slice", lambda p: [opset1.strided_slice(p["x"], C([1, 0, 1]), C([3, 2, 0]), C([1, 1, -1]),
                                                          [0, 1, 0], [0, 0, 1]),
                                     opset1.strided_slice(p["x"], C([0, 1]), C([0, 3]), C([1, 1]),
                                                          [1, 0], [1, 0], shrink_axis_mask=[0, 1])],
         {"x": floats(4, 3, 5)}),
    Case("split", lambda p: list(opset1.split(p["x"], C(1, np.int64), 3).outputs()) +
         list(opset1.variadic_split(p["x"], C(-1, np.int64), C([1, -1], np.int64)).outputs()),
         {"x": floats(2, 6, 3)}, static=True),
    Case("non-zero", lambda p: [opset3.non_zero(p["x"], "i64"), opset3.non_zero(p["x"], "i32")],
         {"x": ints(3, 4, low=0, high=2)}),
    Case("scatter-nd-update", lambda p: [opset4.scatter_nd_update(p["x"], C([[1], [3]], np.int64), p["u"])],
         {"x": floats(5, 2), "u": floats(2, 2)}),
    Case("scatter-nd-update-15", lambda p: [opset15.scatter_nd_update(p["x"], C([[1], [3], [1]], np.int64), p["u"],
                                                                      reduction)
                                            for reduction in ("sum", "prod", "min", "max")],
         {"x": ints(5, 2), "u": ints(3, 2)}),
    # -- the dialect ops ------------------------------------------------------------------------------
    Case("seu-3", lambda p: [opset3.scatter_elements_update(p["d"], p["i"], p["u"], C(1, np.int64))],
         {"d": floats(3, 4), "i": np.array([[1, -1], [0, 3]], np.int32), "u": floats(2, 2)}),
    *[Case(f"seu-12-{reduction}-{init}-{np.dtype(dtype).name}", lambda p, r=reduction, i=init: [
        opset12.scatter_elements_update(p["d"], p["i"], p["u"], C(0, np.int64), r, bool(i))],
        {"d": make(4, 3), "i": ints(6, 3, low=-4, high=4, dtype=np.int64), "u": make(6, 3)},
        dialect=lambda f, r=reduction, i=init: divergences.Case.of(
            "ScatterElementsUpdate", data=f["d"], indices=f["i"], updates=f["u"], axis=np.array(0),
            reduction=r, use_init_val=i))
      for reduction in ("none", "sum", "prod", "min", "max", "mean") for init in (0, 1)
      for dtype, make in ((np.int32, ints), (np.float16, lambda *s: floats(*s, dtype=np.float16)))],
    Case("scatter-update", lambda p: [opset3.scatter_update(p["d"], p["i"], p["u"], C(1, np.int64))],
         {"d": floats(3, 5), "i": np.array([[0, 2], [4, 1]], np.int64), "u": floats(3, 2, 2)}),
    Case("reduce-l2", lambda p: [opset4.reduce_l2(p["x"], C([1], np.int64), False),
                                 opset4.reduce_l2(p["x"], C([0, -1], np.int64), True)],
         {"x": floats(3, 4, 5)}, ACCUMULATION),  # sums of squares: numpy pairwise vs sequential
    Case("unique", lambda p: list(opset10.unique(p["x"], None, True, "i64", "i32").outputs()) +
         list(opset10.unique(p["x"], C(0, np.int64), False, "i32", "i64").outputs()),
         {"x": ints(6, 2, low=0, high=2)}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_import_matches_openvino(case):
    model = _build(case)
    imported = import_ir(model)
    got = onnx_bridge.InferenceSession(imported).run(None, case.feeds)
    want = _openvino_expected(case)
    _assert_same(got, want, case.tolerance, "onnxruntime vs OpenVINO")
    # Read back into OpenVINO, the ONNX model computes what the original did on the CPU plugin
    # (or, for "reference" cases, the reference's result: within a ulp, as the plugin divides floats by
    # multiplying with the reciprocal).
    if case.against == "reference":
        _assert_same(_ov_run(to_openvino(imported), case.feeds), want, ULP, "IR -> ONNX -> OpenVINO")
    else:
        _assert_same(_ov_run(to_openvino(imported), case.feeds), _ov_run(model, case.feeds), case.tolerance,
                     "IR -> ONNX -> OpenVINO")


def test_divide_reference_is_numpy_and_the_cpu_plugin_is_not():
    """Why the Divide cases compare with OpenVINO's reference: it floors signed integer quotients
    (numpy's //) and divides floats exactly; the CPU plugin does neither."""
    for case_id, numpy_divide in (("divide-int-floor", np.floor_divide), ("divide-float", np.divide)):
        case = next(c for c in CASES if c.id == case_id)
        expected = numpy_divide(case.feeds["a"], case.feeds["b"])
        np.testing.assert_array_equal(_ov_run(_build(case, constants=True), {})[0], expected)
        assert not np.array_equal(_ov_run(_build(case), case.feeds)[0], expected), case_id


@pytest.mark.parametrize("code", ["boolean", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "f32",
                                  "f64"])
def test_element_types_round_trip(code):
    """Parameters and Constants of every element type keep type and value (through Concat)."""
    dtype = getattr(ov.Type, code).to_dtype() if code != "boolean" else np.dtype(bool)
    values = (RNG.integers(0, 2, 4) if code == "boolean" else RNG.integers(0, 100, 4)).astype(dtype)
    param = P([-1], code, "x")
    model = ov.Model([opset1.concat([param, opset1.constant(values[::-1].copy())], 0)], [param], "types")
    imported = import_ir(model)
    got = onnx_bridge.InferenceSession(imported).run(None, {"x": values})[0]
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.concatenate([values, values[::-1]]))


def test_dynamic_dims_become_symbols_and_outputs_keep_names():
    x = P([-1, 3, -1], "f32", "points")
    relu = opset1.relu(x)
    relu.output(0).get_tensor().set_names({"activated"})
    imported = import_ir(ov.Model([relu], [x], "m"))
    (graph_input,) = imported.graph.input
    dims = graph_input.type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["points_0", 3, "points_2"]
    assert [o.name for o in imported.graph.output] == ["activated"]
    assert imported.ir_version == onnx_bridge.IR_VERSION
    assert {(o.domain, o.version) for o in imported.opset_import} == {("", 18)}


def test_dialect_nodes_and_checker():
    d, i = P([-1, 4], "f32", "d"), P([-1, 4], "i64", "i")
    seu = opset12.scatter_elements_update(d, i, d, C(0, np.int64), "max", False)
    unique = opset10.unique(i, C(1, np.int64), False, "i32", "i64")
    imported = import_ir(ov.Model([seu.output(0), *unique.outputs(),
                                   opset4.reduce_l2(d, C([1], np.int64), True).output(0)], [d, i], "m"))
    register_schemas()
    onnx.checker.check_model(imported, full_check=True)
    nodes = {n.op_type: n for n in imported.graph.node if n.domain == DOMAIN}
    assert set(nodes) == {"ScatterElementsUpdate", "Unique", "ReduceL2"}
    attributes = {t: {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute} for t, n in nodes.items()}
    assert attributes == {"ScatterElementsUpdate": {"reduction": b"max", "use_init_val": 0},
                          "Unique": {"sorted": 0, "index_element_type": b"i32", "count_element_type": b"i64"},
                          "ReduceL2": {"keep_dims": 1}}
    assert (DOMAIN, DIALECT_OPSET) in {(o.domain, o.version) for o in imported.opset_import}


def test_unsupported_ops_are_all_listed():
    x = P([-1, 4], "f32", "x")
    order = P([2], "i64", "order")
    # an extension op: no import rule
    faked = opaque(x)
    faked_again = opaque(opset1.negative(faked))
    transposed = opset1.transpose(x, order)  # a rule exists, but ONNX needs a constant order
    model = ov.Model([faked_again.output(0), transposed.output(0)], [x, order], "m")
    with pytest.raises(ConversionError) as error:
        import_ir(model)
    message = str(error.value)
    assert "1 unsupported OpenVINO op type(s) (2 node(s)): Opaque (extension) (x2)" in message
    assert "Transpose-1" in message and "order (input 1) must be a Constant" in message


def test_ir_files_v11_and_v10(tmp_path):
    x = P([-1, 3], "f32", "x")
    model = ov.Model([opset4.reduce_l2(opset1.multiply(x, C(2.0, np.float32)), C([1], np.int64), False)], [x], "m")
    ov.save_model(model, tmp_path / "m11.xml", compress_to_fp16=False)
    text = (tmp_path / "m11.xml").read_text()
    assert '<net name="m" version="11">' in text
    # IR v10 differs in how tensor names are recorded; the reader is OpenVINO's own.
    (tmp_path / "m10.xml").write_text(text.replace('version="11"', 'version="10"', 1))
    (tmp_path / "m10.bin").write_bytes((tmp_path / "m11.bin").read_bytes())
    feeds = {"x": floats(5, 3)}
    want = _ov_run(model, feeds)
    for name in ("m11.xml", "m10.xml"):
        got = onnx_bridge.InferenceSession(import_ir(tmp_path / name)).run(None, feeds)
        _assert_same(got, want, ACCUMULATION, name)


def test_export_ir_round_trip_and_atomic(tmp_path):
    x = P([-1, 4], "f32", "x")
    first_row = opset1.relu(opset8.slice(x, C([0]), C([1]), C([1])))
    model = ov.Model([opset12.scatter_elements_update(x, C([[0, 1, 0, 1]], np.int64), first_row,
                                                      C(0, np.int64), "sum", True)], [x], "m")
    imported = import_ir(model)
    path = export_ir(imported, tmp_path / "out" / "m.xml")
    assert sorted(p.name for p in path.parent.iterdir()) == ["m.bin", "m.xml"]  # no temporary left
    feeds = {"x": floats(2, 4)}
    _assert_same(_ov_run(str(path), feeds), _ov_run(model, feeds), {}, "exported IR")
    reimported = import_ir(path)
    assert [n.op_type for n in reimported.graph.node if n.domain == DOMAIN] == ["ScatterElementsUpdate"]


def test_export_dialect_opset_3_drops_seu_attributes(tmp_path):
    model = onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("ScatterElementsUpdate", ["d", "i", "u", "a"], ["y"], domain=DOMAIN,
                               reduction="sum")], "g",
        [onnx.helper.make_tensor_value_info(n, t, ["n"]) for n, t in
         (("d", onnx.TensorProto.FLOAT), ("i", onnx.TensorProto.INT64), ("u", onnx.TensorProto.FLOAT))],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["n"])],
        [onnx.numpy_helper.from_array(np.array(0, np.int64), "a")]),
        opset_imports=[onnx.helper.make_opsetid("", 18), onnx.helper.make_opsetid(DOMAIN, 3)], ir_version=10)
    feeds = {"d": np.ones(3, np.float32), "i": np.array([1, 1]), "u": np.array([5, 7], np.float32)}
    got = _ov_run(to_openvino(model), feeds)[0]
    np.testing.assert_array_equal(got, [1, 7, 1])  # version 3: reduction none, the last update wins


def test_export_refuses_unknown_dialect_op():
    model = onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("Unique", ["x"], ["y"], domain=DOMAIN, name="u")], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)]),
        opset_imports=[onnx.helper.make_opsetid("", 18), onnx.helper.make_opsetid(DOMAIN, 9)], ir_version=10)
    with pytest.raises(ConversionError, match="Unique 'u': not an op of org.openvinotoolkit opset 9"):
        to_openvino(model)


def test_missing_file(tmp_path):
    with pytest.raises(ModelError, match="not found"):
        import_ir(tmp_path / "nothing.xml")
    (tmp_path / "bad.xml").write_text("<net>")
    with pytest.raises(ModelError, match="OpenVINO cannot read"):
        import_ir(tmp_path / "bad.xml")


def test_supported_ops_listed():
    ops = supported_ops()
    for label in ("ScatterElementsUpdate-3", "ScatterElementsUpdate-12", "ScatterUpdate-3", "ReduceL2-4",
                  "Unique-10", "Parameter-1", "Constant-1", "Result-1", "Convert-1", "MatMul-1", "Gather-8"):
        assert label in ops


def test_known_cpu_divergence_is_taken_from_the_table():
    """Integer mean with negative sums: the CPU plugin truncates, the contract floors; the table says so
    and the comparison uses the contract's value."""
    case = next(c for c in CASES if c.id == "seu-12-mean-0-int32")
    dialect_case = case.dialect(case.feeds)
    assert [d.id for d in divergences.matching("openvino-cpu", dialect_case)] == ["ov-seu-int-mean-truncates"]
    cpu = _ov_run(_build(case), case.feeds)[0]
    assert not np.array_equal(cpu, dialect_case.contract[0])


def test_rule_versions_are_openvino_versions():
    """Every registered (op, version) is what OpenVINO records for some opset's op of that name."""
    from openvino._pyopenvino import NodeFactory
    from converters.openvino_ir._registry import load_all
    RULES = load_all()
    recorded: dict[str, set] = {}
    for opset in range(1, 30):
        try:
            factory = NodeFactory(f"opset{opset}")
        except Exception:  # past the newest opset of this OpenVINO
            break
        for name in {name for name, _ in RULES} - {"Constant"}:  # an empty Constant cannot be made
            try:
                recorded.setdefault(name, set()).add(factory.create(name).get_type_info().version_id)
            except Exception:  # not in this opset
                pass
    recorded["Constant"] = {C(1).get_type_info().version_id}
    missing = sorted(f"{name}-{version}" for name, version in RULES
                     if f"opset{version}" not in recorded.get(name, ()))
    assert not missing, f"rules for versions OpenVINO never records: {missing}"


def test_docs_list_every_supported_op():
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "docs" / "openvino_ir.md").read_text()
    undocumented = [label for label in supported_ops() if not re.search(rf"\b{label}\b", text)]
    assert not undocumented, f"docs/openvino_ir.md does not list: {undocumented}"
