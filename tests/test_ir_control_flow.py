"""If-8, Loop-5 and TensorIterator-1 import: bodies built with openvino's opset API, OpenVINO CPU (f32) vs
onnxruntime on the imported model, then the imported model exported back to IR gives OpenVINO's outputs."""
from __future__ import annotations

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
import openvino.opset13 as op  # noqa: E402

import onnx_bridge  # noqa: E402
from converters.openvino_ir import import_ir, to_openvino  # noqa: E402
from onnx_bridge.errors import ConversionError  # noqa: E402
from tests.helpers.ir_cases import opaque  # noqa: E402

pytestmark = pytest.mark.openvino
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
RNG = np.random.default_rng(13)


def P(shape, element="f32", name=None):
    return op.parameter(ov.PartialShape(shape), getattr(ov.Type, element), name=name)


def c(value, dtype=np.float32):
    return op.constant(np.asarray(value, dtype))


def _if(condition, inputs, then_fn, else_fn):
    """If with each branch body_fn(params) -> list of nodes; every input goes to both branches."""
    node = op.if_op(condition)
    bodies = []
    for fn in (then_fn, else_fn):
        params = [op.parameter(x.get_output_partial_shape(0), x.get_output_element_type(0)) for x in inputs]
        results = [op.result(r) for r in fn(params)]
        bodies.append((ov.Model(results, params), params, results))
    node.set_then_body(bodies[0][0])
    node.set_else_body(bodies[1][0])
    for k, x in enumerate(inputs):
        node.set_input(x.output(0), bodies[0][1][k], bodies[1][1][k])
    return [node.set_output(t, e) for t, e in zip(bodies[0][2], bodies[1][2])]


def if_outer_scope(p):
    return _if(p["c"], [p["x"], p["y"]], lambda a: [op.multiply(a[0], c(2.0)), op.add(a[0], a[1])],
               lambda a: [op.subtract(a[0], a[1]), op.relu(a[1])])


def if_nested_with_dialect(p):
    def then(a):
        inner = _if(op.greater(op.reduce_sum(a[0], c([0, 1], np.int64)), c(0.0)).output(0), [a[0]],
                    lambda b: [op.scatter_update(b[0], c([1], np.int64), op.multiply(
                        op.gather(b[0], c([0], np.int64), c(0, np.int64)), c(5.0)), c(0, np.int64))],
                    lambda b: [op.negative(b[0])])
        return [inner[0]]
    return _if(p["c"], [p["x"]], then, lambda a: [op.exp(a[0])])


def _loop(trip_count, condition, body_params, body_results, *, iteration=-1, condition_result=None):
    node = op.loop(trip_count, condition)
    node.set_function(ov.Model(body_results, body_params))
    node.set_special_body_ports([iteration, body_results.index(condition_result)])
    return node


def loop_merged_and_concat(p, trip=None):
    bi, bx = P([], "i64"), P([2])
    nx = op.add(bx, op.convert(bi, "f32"))
    rx = op.result(nx)
    rc = op.result(op.less(op.reduce_sum(nx, c([0], np.int64)), c(40.0)))
    rs = op.result(op.unsqueeze(op.multiply(nx, c(0.5)), c([0], np.int64)))
    node = _loop(p["n"] if trip is None else trip, c(True, bool), [bi, bx], [rx, rc, rs], iteration=0,
                 condition_result=rc)
    node.set_merged_input(bx, p["x"].output(0), rx.output(0))
    return [node.get_iter_value(rx.output(0), -1), node.get_concatenated_slices(rs.output(0), 0, 1, 1, -1, 0),
            node.get_iter_value(rs.output(0), -1)]


def loop_invariant_i32_iteration(p):
    bi, bx, bw = P([1], "i32"), P([3]), P([3])
    nx = op.add(op.multiply(bx, bw), op.convert(bi, "f32"))
    rx, rc = op.result(nx), op.result(c(True, bool))
    node = _loop(c(4, np.int32), c(True, bool), [bi, bx, bw], [rx, rc], iteration=0, condition_result=rc)
    node.set_merged_input(bx, p["x"].output(0), rx.output(0))
    node.set_invariant_input(bw, p["w"].output(0))
    return [node.get_iter_value(rx.output(0), -1)]


def loop_sliced_input_no_iteration_port(p):
    """Loop-5 slicing its input (OpenVINO's Loop: parts of 1 along the axis) without a current-iteration
    Parameter; the running sum is a back edge, the per-step values concatenated."""
    bs, bx = P([1, 3]), P([1, 3])
    total = op.add(bs, op.exp(bx))
    rs, rc = op.result(total), op.result(c(True, bool))
    node = _loop(c(4, np.int64), c(True, bool), [bs, bx], [rs, rc], iteration=-1, condition_result=rc)
    node.set_merged_input(bs, p["s"].output(0), rs.output(0))
    node.set_sliced_input(bx, p["x"].output(0), 0, 1, 1, -1, 0)
    return [node.get_iter_value(rs.output(0), -1), node.get_concatenated_slices(rs.output(0), 0, 1, 1, -1, 0)]


def _ti(x_shape_axis, stride):
    def build(p):
        ti = op.tensor_iterator()
        bx, bh = P([2, 2]), P([2, 1])
        h = op.tanh(op.add(op.reduce_sum(op.multiply(bx, c(0.3)), c([1], np.int64), True), bh))
        rh, ry = op.result(h), op.result(op.multiply(bx, h))
        ti.set_body(ov.Model([rh, ry], [bx, bh]))
        start, end = (0, -1) if stride > 0 else (-1, 0)
        ti.set_sliced_input(bx, p["x"].output(0), start, stride, 2, end, x_shape_axis)
        ti.set_merged_input(bh, p["h"].output(0), rh.output(0))
        return [ti.get_iter_value(rh.output(0), -1),
                ti.get_concatenated_slices(ry.output(0), start, stride, 2, end, x_shape_axis)]
    return build


CASES = {
    "if_true": (if_outer_scope, {"c": np.bool_(True), "x": RNG.standard_normal((2, 3)).astype(np.float32),
                                 "y": RNG.standard_normal((2, 3)).astype(np.float32)}),
    "if_false": (if_outer_scope, {"c": np.bool_(False), "x": RNG.standard_normal((2, 3)).astype(np.float32),
                                  "y": RNG.standard_normal((2, 3)).astype(np.float32)}),
    "if_nested_dialect": (if_nested_with_dialect, {"c": np.bool_(True),
                                                   "x": np.abs(RNG.standard_normal((3, 2))).astype(np.float32)}),
    "loop_trip_count_input": (loop_merged_and_concat, {"n": np.int64(3), "x": np.float32([1, 2])}),
    "loop_condition_ends_it": (loop_merged_and_concat, {"n": np.int64(50), "x": np.float32([1, 2])}),
    "loop_unbounded": (loop_merged_and_concat, {"n": np.int64(-1), "x": np.float32([1, 2])}),
    "loop_constant_trip_count": (lambda p: loop_merged_and_concat(p, trip=c(2, np.int64)),
                                 {"x": np.float32([1, 2])}),
    "loop_invariant_i32_iteration": (loop_invariant_i32_iteration, {"x": np.float32([1, 2, 3]),
                                                                    "w": np.float32([0.5, -1, 2])}),
    "loop_sliced_input": (loop_sliced_input_no_iteration_port,
                          {"s": np.zeros((1, 3), np.float32), "x": RNG.standard_normal((4, 3)).astype(np.float32)}),
    "ti_forward_axis1": (_ti(1, 2), {"x": RNG.standard_normal((2, 8)).astype(np.float32),
                                     "h": RNG.standard_normal((2, 1)).astype(np.float32)}),
    "ti_backward_axis1": (_ti(1, -2), {"x": RNG.standard_normal((2, 8)).astype(np.float32),
                                       "h": RNG.standard_normal((2, 1)).astype(np.float32)}),
}


def _model(build, feeds):
    params = {}
    for name, value in feeds.items():
        value = np.asarray(value)
        params[name] = op.parameter(ov.PartialShape(list(value.shape)), ov.Type(value.dtype), name=name)
    outputs = build(params)
    return ov.Model([o if hasattr(o, "get_node") else o.output(0) for o in outputs], list(params.values()))


def _ov_run(model, feeds):
    compiled = ov.Core().compile_model(model, "CPU", CONFIG)
    result = compiled(dict(feeds))
    return [np.asarray(result[o]) for o in compiled.outputs]


#: ops whose results the two runtimes' libm approximations round differently in the last bits; a model
#: without any (bodies included) is compared exactly
LIBM_OPS = frozenset({"Exp", "Tanh", "Sigmoid", "Log", "Erf", "Sin", "Cos"})


def _op_types(model) -> set[str]:
    """OpenVINO op type names of the model and of every If / Loop / TensorIterator body in it."""
    found = set()
    for node in model.get_ordered_ops():
        found.add(node.get_type_name())
        bodies = [node.get_function()] if node.get_type_name() in ("Loop", "TensorIterator") else \
            [node.get_then_body(), node.get_else_body()] if node.get_type_name() == "If" else []
        for body in bodies:
            found |= _op_types(body)
    return found


def _tolerance(model):
    return dict(rtol=1e-5, atol=1e-6) if _op_types(model) & LIBM_OPS else dict(rtol=0, atol=0)


@pytest.mark.parametrize("case_id", list(CASES))
def test_control_flow_matches_openvino(case_id):
    build, feeds = CASES[case_id]
    model = _model(build, feeds)
    want = _ov_run(model, feeds)
    onnx_model = import_ir(model)
    got = onnx_bridge.InferenceSession(onnx_model.SerializeToString()).run(
        None, {k: np.asarray(v) for k, v in feeds.items()})
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, **_tolerance(model))
    # the way back: OpenVINO reading the imported model computes the same
    back = _ov_run(to_openvino(onnx_model), feeds)
    for b, w in zip(back, want):
        np.testing.assert_allclose(b, w, **_tolerance(model))


def test_unsupported_ops_inside_bodies_are_listed():
    """Ops nobody imports (an extension op) inside both branches and outside: one error counting all three."""
    x = P([4], name="x")
    node = op.if_op(op.constant(True).output(0))
    tp, ep = P([4]), P([4])
    then = ov.Model([op.result(opaque(tp))], [tp])
    other = ov.Model([op.result(opaque(ep))], [ep])
    node.set_then_body(then)
    node.set_else_body(other)
    node.set_input(x.output(0), tp, ep)
    out = node.set_output(then.get_results()[0], other.get_results()[0])
    model = ov.Model([out, opaque(x).output(0)], [x])
    with pytest.raises(ConversionError, match=r"Opaque \(extension\) \(x3\)"):
        import_ir(model)
