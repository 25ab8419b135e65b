"""onnx_bridge.custom_op: users' own Python ops run in onnx_bridge.InferenceSession beside dialect ops."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_bridge
from custom_ops._types import BFLOAT16, NUMPY_TO_ONNX, type_name
from onnx_bridge._feeds import graph_input, graph_output
from tests.helpers.models import dialect_model

DOMAIN = "ai.example.test"


@onnx_bridge.custom_op("SoftShrink", domain=DOMAIN)
def soft_shrink(x, *, lambd=0.5):
    return np.where(np.abs(x) > lambd, x - np.sign(x) * x.dtype.type(lambd), 0).astype(x.dtype)


@onnx_bridge.custom_op("ArgMaxRow", domain=DOMAIN, outputs=["int64", "T"])
def argmax_row(x):
    indices = np.argmax(x, axis=-1)
    return indices, np.take_along_axis(x, indices[..., None], -1)[..., 0]


@onnx_bridge.custom_op("Describe", domain=DOMAIN, inputs=["T", "int64"], outputs=["T"])
def describe(x, shift, *, scale=1.0, count=2, label="a", factors=(1, 2), names=("p",)):
    assert isinstance(scale, float) and isinstance(count, int) and isinstance(label, str)
    return (x * scale + shift.astype(x.dtype) + count + len(label) + sum(factors) + len(names)).astype(x.dtype)


@onnx_bridge.custom_op("Fails", domain=DOMAIN)
def fails(x):
    if (x < 0).any():
        raise ValueError(f"negative values: {int((x < 0).sum())}")
    return x


@onnx_bridge.custom_op("WrongType", domain=DOMAIN)
def wrong_type(x):
    return x.astype(np.float64) if x.dtype != np.float64 else x.astype(np.float32)


@onnx_bridge.custom_op("WrongCount", domain=DOMAIN)
def wrong_count(x):
    return x, x


@onnx_bridge.custom_op("NotAnArray", domain=DOMAIN)
def not_an_array(x):
    return [1, 2]


@onnx_bridge.custom_op("Grows", domain=DOMAIN)
def grows(x, *, items):
    count = len(items)
    items.append(0)  # a function may change the list it gets: the node's next call must not see that
    return (x + count).astype(x.dtype)


ECHOED = []  # dtypes Echo received; every op of a domain is registered before any session loads it


@onnx_bridge.custom_op("Echo", domain=DOMAIN)
def echo(x):
    ECHOED.append(x.dtype)
    return x


def user_model(op_type, inputs: dict, output_types=None, attributes=None, name="user"):
    """One user-op node; inputs maps name -> array; outputs y0, y1, ... of `output_types` (default: input
    0's type); bfloat16 values travel as float32 around the graph."""
    graph_inputs, feeds, nodes, node_inputs, graph_outputs, after = [], {}, [], [], [], []
    for key, value in inputs.items():
        info, feed, casts = graph_input(key, value, value.shape)
        graph_inputs.append(info)
        feeds.update(feed)
        nodes.extend(casts)
        node_inputs.append(key)
    output_types = output_types or [next(iter(inputs.values())).dtype]
    outputs = [f"y{i}" for i in range(len(output_types))]
    for output, dtype in zip(outputs, output_types):
        info, casts = graph_output(output, NUMPY_TO_ONNX[np.dtype(dtype)])
        graph_outputs.append(info)
        after.extend(casts)
    nodes.append(helper.make_node(op_type, node_inputs, outputs, name=name, domain=DOMAIN,
                                  **(attributes or {})))
    graph = helper.make_graph(nodes + after, "g", graph_inputs, graph_outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid(DOMAIN, 1)], ir_version=10)
    return model, feeds


FLOATS = [np.float16, BFLOAT16, np.float32, np.float64]
NUMERIC = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.bool_]


@pytest.mark.parametrize("dtype", FLOATS + NUMERIC, ids=type_name)
def test_every_type_arrives_as_itself(dtype):
    ECHOED.clear()
    x = (np.arange(-3, 3) % 2).astype(dtype) if dtype == np.bool_ else np.arange(-3, 3).astype(dtype)
    model, feeds = user_model("Echo", {"x": x})
    (y,) = onnx_bridge.InferenceSession(model).run(None, feeds)
    assert ECHOED == [np.dtype(dtype)]
    expected = x.astype(np.float32) if dtype == BFLOAT16 else x  # bfloat16 is fetched as float32
    assert y.dtype == expected.dtype
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=type_name)
def test_soft_shrink_values(dtype):
    x = np.linspace(-2, 2, 17).astype(dtype)
    model, feeds = user_model("SoftShrink", {"x": x}, attributes={"lambd": 0.75})
    (y,) = onnx_bridge.InferenceSession(model).run(None, feeds)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, soft_shrink(x, lambd=np.float32(0.75).item()))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32], ids=type_name)
def test_two_outputs_of_declared_types(dtype):
    x = np.random.default_rng(0).permutation(24).reshape(4, 6).astype(dtype)
    model, feeds = user_model("ArgMaxRow", {"x": x}, output_types=[np.int64, dtype])
    indices, values = onnx_bridge.InferenceSession(model).run(None, feeds)
    assert indices.dtype == np.int64 and values.dtype == dtype
    np.testing.assert_array_equal(indices, np.argmax(x, -1))
    np.testing.assert_array_equal(values, x.max(-1))


def test_attributes_of_every_kind():
    x, shift = np.ones(3, np.float32), np.arange(3)
    attributes = dict(scale=2.0, count=3, label="abc", factors=[4, 5], names=["p", "q"])
    model, feeds = user_model("Describe", {"x": x, "shift": shift}, attributes=attributes)
    (y,) = onnx_bridge.InferenceSession(model).run(None, feeds)
    np.testing.assert_array_equal(y, describe(x, shift, **attributes))
    model, feeds = user_model("Describe", {"x": x, "shift": shift})  # defaults
    np.testing.assert_array_equal(onnx_bridge.InferenceSession(model).run(None, feeds)[0],
                                  describe(x, shift))


def test_list_attributes_are_fresh_on_every_call():
    model, feeds = user_model("Grows", {"x": np.zeros(2, np.float32)}, attributes={"items": [1, 2]})
    session = onnx_bridge.InferenceSession(model)
    for _ in range(3):
        np.testing.assert_array_equal(session.run(None, feeds)[0], [2, 2])


def test_beside_dialect_ops():
    """A user op consuming a dialect op's output, lowered and not."""
    model, feeds = dialect_model("ScatterElementsUpdate", dict(
        data=np.zeros(4, np.float32), indices=np.array([1, 3]), updates=np.array([2., -3.], np.float32),
        axis=np.array(0)), {"reduction": "mean"})
    model.graph.node.append(helper.make_node("SoftShrink", ["output"], ["shrunk"], domain=DOMAIN,
                                             name="shrink", lambd=1.0))
    model.graph.output.append(helper.make_tensor_value_info("shrunk", TensorProto.FLOAT, None))
    model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    for lower in (True, False):
        _, shrunk = onnx_bridge.InferenceSession(model, lower=lower).run(None, feeds)
        np.testing.assert_array_equal(shrunk, [0, 0, 0, -0.5])  # mean with data: [0, 1, 0, -1.5]


def test_exception_becomes_op_error_and_session_stays_usable():
    model, feeds = user_model("Fails", {"x": np.array([1., -1., -2.], np.float32)}, name="my_node")
    session = onnx_bridge.InferenceSession(model)
    with pytest.raises(onnx_bridge.OpError) as info:
        session.run(None, feeds)
    message = str(info.value)
    for part in (DOMAIN, "Fails", "my_node", "ValueError: negative values: 2"):
        assert part in message
    assert isinstance(info.value.__cause__, ValueError)
    (y,) = session.run(None, {"x": np.array([1., 2., 3.], np.float32)})
    np.testing.assert_array_equal(y, [1, 2, 3])


@pytest.mark.parametrize("op_type, message", [
    ("WrongType", "output 0: wrong element type returned; got 'float64'; allowed: float32"),
    ("WrongCount", "outputs: wrong number of outputs returned; got 2; allowed: 1"),
    ("NotAnArray", "output 0: wrong element type returned; got 'list'; allowed: float32"),
])
def test_wrong_outputs_are_clear_errors(op_type, message):
    model, feeds = user_model(op_type, {"x": np.ones(2, np.float32)})
    with pytest.raises(onnx_bridge.OpError, match=message):
        onnx_bridge.InferenceSession(model).run(None, feeds)


@pytest.mark.parametrize("attributes, message", [
    ({"unknown": 1}, "unexpected keyword argument 'unknown'"),
    ({"lambd": helper.make_tensor("t", TensorProto.FLOAT, [1], [1.0])}, "unsupported attribute kind"),
])
def test_bad_attributes_fail_at_creation(attributes, message):
    model, _ = user_model("SoftShrink", {"x": np.ones(2, np.float32)}, attributes=attributes)
    with pytest.raises(onnx_bridge.OpError, match=message):
        onnx_bridge.InferenceSession(model)


def test_wrong_input_count_or_type_fails_at_creation():
    model, _ = user_model("Describe", {"x": np.ones(2, np.float32), "shift": np.ones(2, np.int32)})
    with pytest.raises(onnx_bridge.OpError, match="input 1: unexpected element type; got 'int32'"):
        onnx_bridge.InferenceSession(model)
    model, _ = user_model("Describe", {"x": np.ones(2, np.float32)})
    with pytest.raises(onnx_bridge.OpError, match="wrong number of inputs"):
        onnx_bridge.InferenceSession(model)


def test_unregistered_op_of_a_registered_domain():
    model, _ = user_model("Nope", {"x": np.ones(2, np.float32)})
    with pytest.raises(onnx_bridge.ModelError, match="no custom op 'Nope'"):
        onnx_bridge.InferenceSession(model)


@pytest.mark.parametrize("kwargs, function, message", [
    (dict(domain=""), lambda x: x, "give a domain of your own"),
    (dict(domain="org.openvinotoolkit"), lambda x: x, "is the dialect's"),
    (dict(domain=DOMAIN, outputs=["U"]), lambda x: x, "name no input's type variable"),
    (dict(domain=DOMAIN, outputs=["float8"]), lambda x: x, "neither a type name"),
    (dict(domain=DOMAIN), lambda *xs: xs[0], r"\*xs is not supported"),
    (dict(domain=DOMAIN), lambda x, y=1: x, "has a default"),
    (dict(domain=DOMAIN, inputs=["T"]), lambda x, y: x, "1 input types for 2 inputs"),
    (dict(domain=DOMAIN), lambda a, b, c, d: a, "more than 2048 registrations"),
])
def test_bad_declarations(kwargs, function, message):
    with pytest.raises(onnx_bridge.BridgeError, match=message):
        onnx_bridge.custom_op("Bad", **kwargs)(function)


def test_prepare_model_route_with_own_options():
    import onnxruntime as ort
    model, feeds = user_model("Fails", {"x": np.array([-1.], np.float32)})
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.register_custom_ops_library(onnx_bridge.get_library_path())
    session = ort.InferenceSession(onnx_bridge.prepare_model(model).SerializeToString(), options)
    (y,) = session.run(None, feeds)
    assert y.shape == (0,)
    (error,) = onnx_bridge.take_errors()
    assert isinstance(error, onnx_bridge.OpError) and "negative values" in str(error)
    assert onnx_bridge.take_errors() == []


def test_a_domain_a_session_has_loaded_does_not_grow():
    @onnx_bridge.custom_op("First", domain="ai.example.sealed")
    def first(x):
        return x

    model, feeds = user_model("SoftShrink", {"x": np.ones(2, np.float32)})
    onnx_bridge.InferenceSession(model).run(None, feeds)
    with pytest.raises(onnx_bridge.BridgeError, match="register every op of a domain before"):
        onnx_bridge.custom_op("Second", domain="ai.example.sealed")(lambda x: x)

    @onnx_bridge.custom_op("First", domain="ai.example.fresh")  # a new domain is fine
    def first_again(x):
        return x
