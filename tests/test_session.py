"""Dialect models through onnx_bridge.InferenceSession equal the kernels, for every type combination."""
import numpy as np
import onnx
import pytest

import custom_ops
import onnx_bridge
from custom_ops._types import BFLOAT16, DATA_TYPES, INTEGER_TYPES, type_name
from tests.helpers.models import dialect_model

RNG = np.random.default_rng(0)


def _values(dtype, shape):
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype) in INTEGER_TYPES:
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -50), min(info.max, 50), shape, endpoint=True).astype(dtype)
    return (RNG.standard_normal(shape) * 4).astype(dtype)


def _indices(dtype, shape, size, negative=True):
    low = -size if negative and np.dtype(dtype).kind == "i" else 0
    return RNG.integers(low, size, shape).astype(dtype)


def _run(op_type, inputs, attributes, lower=True):
    model, feeds = dialect_model(op_type, inputs, attributes)
    outputs = onnx_bridge.InferenceSession(model, lower=lower).run(None, feeds)
    expected = custom_ops.resolve(op_type, 12).run(
        [inputs[k] for k in ("data", "indices", "updates", "axis", "axes") if inputs.get(k) is not None],
        attributes)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        want = want.astype(np.float32) if want.dtype == BFLOAT16 else want
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def _types(dtypes):
    return pytest.mark.parametrize("dtype", dtypes, ids=[type_name(t) for t in dtypes])


@_types(DATA_TYPES)
@pytest.mark.parametrize("index_type", INTEGER_TYPES, ids=type_name)
def test_scatter_elements_update_types(dtype, index_type):
    reduction = "max" if dtype == np.bool_ else "mean"
    inputs = dict(data=_values(dtype, (5, 3)), indices=_indices(index_type, (8, 3), 5),
                  updates=_values(dtype, (8, 3)), axis=np.array(0, np.int64))
    _run("ScatterElementsUpdate", inputs, {"reduction": reduction, "use_init_val": 0})


@pytest.mark.parametrize("axis_type", INTEGER_TYPES, ids=type_name)
@pytest.mark.parametrize("op_type", ["ScatterElementsUpdate", "ScatterUpdate"])
def test_axis_types(op_type, axis_type):
    if op_type == "ScatterUpdate":
        inputs = dict(data=_values(np.float32, (3, 4)), indices=np.array([3, 0, 3]),
                      updates=_values(np.float32, (3, 3)), axis=np.array([1], axis_type))
    else:
        inputs = dict(data=_values(np.int32, (3, 4)), indices=_indices(np.int64, (3, 6), 4),
                      updates=_values(np.int32, (3, 6)), axis=np.array(1, axis_type))
    _run(op_type, inputs, {})


@_types(DATA_TYPES)
@pytest.mark.parametrize("index_type", INTEGER_TYPES, ids=type_name)
def test_scatter_update_types(dtype, index_type):
    inputs = dict(data=_values(dtype, (4, 5)), indices=_indices(index_type, (2, 3), 5, negative=False),
                  updates=_values(dtype, (4, 2, 3)), axis=np.array(-1, np.int8))
    _run("ScatterUpdate", inputs, {})


@_types([t for t in DATA_TYPES if t != np.bool_])
@pytest.mark.parametrize("axes_type", INTEGER_TYPES, ids=type_name)
def test_reduce_l2_types(dtype, axes_type):
    # lower=False: the custom op itself. The default session runs float ReduceL2 natively, whose sum
    # order differs (test_reduce_l2_lowered_float below).
    _run("ReduceL2", dict(data=_values(dtype, (3, 4, 2)), axes=np.array([0, 2], axes_type)),
         {"keep_dims": 1}, lower=False)


@_types([np.float16, BFLOAT16, np.float32, np.float64])
def test_reduce_l2_lowered_float(dtype):
    data = _values(dtype, (8, 50, 3))
    model, feeds = dialect_model("ReduceL2", dict(data=data, axes=np.array([1])), {"keep_dims": 0})
    session = onnx_bridge.InferenceSession(model)
    assert not session._uses_pyops, session.conversion_report.to_table()
    (got,) = session.run(None, feeds)
    exact = np.sqrt(np.sum(data.astype(np.float64) ** 2, axis=1))
    # float32 (float64) accumulation of 50 squares: relative error <= 50 eps, plus one rounding of T.
    eps = np.finfo(np.float64 if dtype == np.float64 else np.float32).eps
    rounding = 0 if dtype in (np.float32, np.float64) else float(np.finfo(np.float16).eps) \
        if dtype == np.float16 else 2.0 ** -8
    np.testing.assert_allclose(got.astype(np.float64), exact, rtol=50 * eps + rounding)


@_types(DATA_TYPES)
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("sorted_", [0, 1])
def test_unique_types(dtype, axis, sorted_):
    data = _values(dtype, (6, 2))[RNG.integers(0, 6, 6)]  # duplicated rows
    inputs = dict(data=data, axis=None if axis is None else np.array(axis, np.int32))
    _run("Unique", inputs, {"sorted": sorted_, "index_element_type": "i32"})


def test_scatter_elements_update_v3_runs_as_none():
    inputs = dict(data=np.zeros(4, np.float32), indices=np.array([1, 1, -1]),
                  updates=np.array([1, 2, 3], np.float32), axis=np.array(0))
    model, feeds = dialect_model("ScatterElementsUpdate", inputs, opset=3)
    (out,) = onnx_bridge.InferenceSession(model).run(None, feeds)
    np.testing.assert_array_equal(out, [0, 2, 0, 3])


# Model hygiene ----------------------------------------------------------------------------------

def _small_model(**kwargs):
    return dialect_model("ReduceL2", dict(data=np.ones((2, 2), np.float32), axes=np.array([1])), **kwargs)


def test_ir14_model_from_onnx_123_runs(tmp_path):
    model, feeds = _small_model()
    model.ir_version = 14
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    for source in (path, str(path), path.read_bytes(), model):
        (out,) = onnx_bridge.InferenceSession(source).run(None, feeds)
        np.testing.assert_allclose(out, [np.sqrt(2)] * 2, rtol=1e-7)


@pytest.mark.parametrize("source, message", [
    ("missing.onnx", "not found"), (b"not a model", "not a valid ONNX model"), (3, "expected a path")])
def test_unreadable_models(tmp_path, source, message):
    with pytest.raises(onnx_bridge.ModelError, match=message):
        onnx_bridge.InferenceSession(tmp_path / source if isinstance(source, str) else source)


@pytest.mark.parametrize("lower", [True, False])
def test_opset_too_new_is_adjusted_when_safe(lower):
    model, feeds = _small_model()
    model.opset_import[0].version = 28  # nothing in this model changed between opsets 26 and 28
    (out,) = onnx_bridge.InferenceSession(model, lower=lower).run(None, feeds)
    np.testing.assert_allclose(out, [np.sqrt(2)] * 2, rtol=1e-7)


def test_opset_too_new_is_a_clear_error_otherwise():
    model, _ = _small_model()
    model.opset_import[0].version = 28
    model.graph.node.append(onnx.helper.make_node("Cast", ["output"], ["as_double"], to=11))  # Cast-28
    with pytest.raises(onnx_bridge.ModelError, match="opset 28.*Cast-25 -> Cast-28"):
        onnx_bridge.InferenceSession(model, lower=False)


def test_missing_domain_import():
    model, _ = _small_model()
    del model.opset_import[1]
    with pytest.raises(onnx_bridge.ModelError, match="does not import"):
        onnx_bridge.InferenceSession(model)


def test_unsupported_type_fails_at_creation():
    model, _ = dialect_model("ReduceL2", dict(data=np.ones(2, bool), axes=np.array([0])))
    with pytest.raises(onnx_bridge.OpError, match=r"ReduceL2 \(node 'node'\): input 'data'.*BOOL"):
        onnx_bridge.InferenceSession(model)


def test_bad_attribute_fails_at_creation():
    model, _ = dialect_model("ScatterElementsUpdate", dict(
        data=np.zeros(2, np.float32), indices=np.array([0]), updates=np.ones(1, np.float32),
        axis=np.array(0)), {"reduction": "average"})
    with pytest.raises(onnx_bridge.OpError, match="reduction.*'average'.*allowed: none, sum"):
        onnx_bridge.InferenceSession(model)


def test_drop_in_methods():
    model, feeds = _small_model()
    session = onnx_bridge.InferenceSession(model)
    assert [i.name for i in session.get_inputs()] == list(feeds)
    assert session.get_providers() == ["CPUExecutionProvider"]


def test_unique_with_unnamed_outputs():
    model, feeds = dialect_model("Unique", dict(data=np.array([3, 1, 3], np.int64)))
    del model.graph.output[1:]
    model.graph.node[-1].output[1] = ""
    model.graph.node[-1].output[2] = ""
    del model.graph.node[-1].output[3]
    for lower in (False, True):
        (values,) = onnx_bridge.InferenceSession(model, lower=lower).run(None, feeds)
        np.testing.assert_array_equal(values, [1, 3])


def test_session_keeps_unique_as_custom_op_and_lowers_the_rest():
    unique, feeds = dialect_model("Unique", dict(data=np.array([3, 1, 3], np.int64)))
    session = onnx_bridge.InferenceSession(unique)
    assert session._uses_pyops
    assert [(e.op_type, e.action) for e in session.conversion_report.nodes] == [("Unique", "kept")]
    assert "faster as the custom op" in session.conversion_report.nodes[0].reason
    scatter, _ = dialect_model("ScatterUpdate", dict(data=np.zeros((2, 2), np.float32),
                                                     indices=np.array([1]), updates=np.ones((1, 2), np.float32),
                                                     axis=np.array(0)))
    assert not onnx_bridge.InferenceSession(scatter)._uses_pyops


def test_convert_ops_filter():
    from converters import convert
    model, _ = dialect_model("ReduceL2", dict(data=np.ones((2, 2), np.float32), axes=np.array([1])))
    _, report = convert(model, to="standard", ops=["Unique"])
    assert report.counts == {"kept": 1}
    _, report = convert(model, to="standard", ops=["ReduceL2"])
    assert report.counts == {"lowered": 1}


def test_session_lowers_scatter_mean_and_keeps_unique_as_custom_op():
    # mean runs natively since its box lowering beat the custom op (docs/performance.md); Unique stays.
    model, feeds = dialect_model("ScatterElementsUpdate", dict(
        data=np.zeros(4, np.float32), indices=np.array([0, 0]), updates=np.array([1, 2], np.float32),
        axis=np.array(0)), {"reduction": "mean"})
    session = onnx_bridge.InferenceSession(model)
    assert not session._uses_pyops and session.conversion_report.nodes[0].action != "kept"
    np.testing.assert_array_equal(session.run(None, feeds)[0], [1, 0, 0, 0])
    model, feeds = dialect_model("Unique", dict(data=np.array([3, 1, 3], np.float32)))
    session = onnx_bridge.InferenceSession(model)
    assert session._uses_pyops and "faster as the custom op" in session.conversion_report.nodes[0].reason