"""onnx_bridge.backends.openvino: native ops on numpy inputs, dialect ONNX models read into OpenVINO,
the crash guard, and the errors."""
import sys

import ml_dtypes
import numpy as np
import pytest
from onnx import helper, numpy_helper

import oracle
from onnx_bridge import DOMAIN, BridgeError, OpError
from onnx_bridge.divergences import Case

pytestmark = pytest.mark.openvino
A, F32 = np.array, np.float32


@pytest.fixture(scope="module")
def ov():
    from onnx_bridge.backends import openvino
    return openvino


def _dialect_model(op, inputs: dict, constants: dict, attributes: dict, outputs: int = 1, domain_opset=12):
    names = list(inputs) + list(constants)
    node = helper.make_node(op, names, [f"y{i}" for i in range(outputs)], domain=DOMAIN, **attributes)
    graph = helper.make_graph(
        [node], op,
        [helper.make_tensor_value_info(n, numpy_helper.from_array(v).data_type, v.shape) for n, v in inputs.items()],
        [helper.make_empty_tensor_value_info(f"y{i}") for i in range(outputs)],
        initializer=[numpy_helper.from_array(v, n) for n, v in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                   helper.make_opsetid(DOMAIN, domain_opset)], ir_version=14)


MODELS = {
    "seu sum use_init_val=0": ("ScatterElementsUpdate",
                               {"data": A([[1, 2, 3], [4, 5, 6]], F32), "indices": A([[1, 0, -1]]),
                                "updates": A([[10, 20, 30]], F32)}, {"axis": A(0)},
                               {"reduction": "sum", "use_init_val": 0}, 1),
    "seu mean (i32, floor)": ("ScatterElementsUpdate",
                              {"data": A([4, -7], np.int32), "indices": A([1, 1]), "updates": A([2, 2], np.int32)},
                              {"axis": A([0])}, {"reduction": "mean"}, 1),
    "scatter_update": ("ScatterUpdate", {"data": np.zeros((3, 2), F32), "indices": A([[0, 2], [1, 1]]),
                                         "updates": np.arange(8, dtype=F32).reshape(2, 2, 2)}, {"axis": A(0)}, {}, 1),
    "reduce_l2 keep_dims": ("ReduceL2", {"data": A([[3, 4], [6, 8]], F32)}, {"axes": A([-1])}, {"keep_dims": 1}, 1),
    "reduce_l2 default keep_dims=0": ("ReduceL2", {"data": A([[3, 4], [6, 8]], F32)}, {"axes": A([0, 1])}, {}, 1),
    "unique axis unsorted i32": ("Unique", {"data": A([[3, 1, 2], [1, 9, 9], [3, 1, 2]], np.int32)},
                                 {"axis": A(0)}, {"sorted": 0, "index_element_type": "i32"}, 4),
    "unique no axis": ("Unique", {"data": A([2, 1, 2, 0], F32)}, {}, {}, 4),
}


@pytest.mark.parametrize("name", MODELS)
def test_dialect_model_in_openvino_equals_kernel(ov, name):
    op, inputs, constants, attributes, outputs = MODELS[name]
    model = _dialect_model(op, inputs, constants, attributes, outputs)  # IR 14: read_onnx pins it
    got = ov.run_model(model, inputs)
    expected = Case.of(op, **inputs, **constants, **attributes).contract
    oracle.assert_identical(tuple(got), expected, name)
    assert ov.read_onnx(model).get_ops()  # an ov.Model
    assert ov.run(op, list(inputs.values()) + list(constants.values()), attributes) is not None


def test_scatter_elements_update_3_has_no_attributes(ov):
    inputs = {"data": np.zeros(3, F32), "indices": A([1, 1]), "updates": A([5, 6], F32)}
    model = _dialect_model("ScatterElementsUpdate", inputs, {"axis": A(0)}, {}, domain_opset=3)
    assert ov.run_model(model, inputs)[0].tolist() == [0, 6, 0]


def test_unknown_op_without_extension(ov):
    model = _dialect_model("Swish2", {"x": np.zeros(2, F32)}, {}, {})
    with pytest.raises(ov.OpenVINOError, match="could not read"):
        ov.read_onnx(model)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_types(ov, dtype):
    out = ov.run("ReduceL2", [A([[300, 400]], dtype), A([1])], {"keep_dims": 1})[0]
    assert out.dtype == dtype and out.tolist() == [[500]]
    out = ov.run("ScatterUpdate", [np.zeros(3, dtype), A([2]), A([1.5], dtype), A(0)])[0]
    assert out.dtype == dtype and out.astype(F32).tolist() == [0, 0, 1.5]


def test_compiled_models_are_cached(ov):
    ov._COMPILED.clear()
    for n in (1, 5, 9):
        ov.run("ScatterUpdate", [np.zeros((n, 3), F32), A([0]), np.ones((1, 3), F32), A(0)])
    assert len(ov._COMPILED) == 1
    ov.run("ScatterUpdate", [np.zeros((2, 3), F32), A([0]), np.ones((1, 3), F32), A(-2)])  # another axis
    assert len(ov._COMPILED) == 2


@pytest.mark.parametrize("op, indices", [
    ("ScatterElementsUpdate", A([-5])), ("ScatterElementsUpdate", A([-100])), ("ScatterElementsUpdate", A([4])),
    ("ScatterElementsUpdate", A([2**32], np.int64)), ("ScatterElementsUpdate", A([2**32 - 1], np.uint32)),
    ("ScatterUpdate", A([-1])), ("ScatterUpdate", A([4], np.uint8)), ("ScatterUpdate", A([2**32 + 1], np.uint64))])
def test_guard_refuses_out_of_range_indices(ov, op, indices):
    with pytest.raises(OpError, match="refused before OpenVINO"):
        ov.run(op, [np.zeros(4, F32), indices, np.ones(1, F32), A(0)])


@pytest.mark.parametrize("op, indices, updates", [
    ("ScatterElementsUpdate", A([0, 1]), np.ones(1, F32)), ("ScatterUpdate", A([0, 1]), np.ones(3, F32))])
def test_guard_refuses_updates_of_the_wrong_shape(ov, op, indices, updates):
    with pytest.raises(OpError, match="input 'updates': refused before OpenVINO"):
        ov.run(op, [np.zeros(4, F32), indices, updates, A(0)])


def test_guard_refuses_indices_larger_than_data(ov):
    with pytest.raises(OpError, match="dimension 1 exceeds"):
        ov.run("ScatterElementsUpdate", [np.zeros((2, 2), F32), np.zeros((2, 9), np.int64), np.ones((2, 9), F32),
                                         A(0)])


def test_openvino_errors_are_bridge_errors(ov):
    with pytest.raises(ov.OpenVINOError, match="rejected ScatterUpdate at build/compile time: .*do not support "
                                              "scalar input$") as info:
        ov.run("ScatterUpdate", [np.zeros(4, F32), A(1), A(1, F32), A(0)])
    assert isinstance(info.value, BridgeError) and "Exception from" not in str(info.value)
    with pytest.raises(ov.OpenVINOError, match="Unique .*Accessing out-of-range dimension"):
        ov.run("Unique", [A(1.0, F32), A(0)])


def test_single_thread_inference_errors_are_not_swallowed(ov, monkeypatch):
    # With one inference thread the CPU plugin returns empty outputs instead of raising its errors.
    monkeypatch.setitem(ov.CONFIG, "INFERENCE_NUM_THREADS", "1")
    monkeypatch.setattr(ov, "_COMPILED", {})
    with pytest.raises(ov.OpenVINOError, match=r"outputs of shape \[\(0,\)\] where \[\(3,\)\] was expected"):
        ov.run("ReduceL2", [np.ones(3, F32), A([], np.int8)])  # 'ptr is Null' with more threads
    assert ov.run("ReduceL2", [A([3, -4], F32), A([], np.int16)])[0].tolist() == [3, 4]


def test_dialect_attributes_are_checked(ov):
    with pytest.raises(OpError, match="attribute 'reduction'"):
        ov.run("ScatterElementsUpdate", [np.zeros(4, F32), A([0]), np.ones(1, F32), A(0)], {"reduction": "avg"})
    with pytest.raises(OpError, match="not an op of the OpenVINO backend"):
        ov.run("Gather", [np.zeros(4, F32)])
    with pytest.raises(OpError, match="wrong number of inputs"):
        ov.run("ScatterUpdate", [np.zeros(4, F32), A([0]), np.ones(1, F32)])


def test_missing_openvino_is_a_clear_error(ov, monkeypatch):
    monkeypatch.setitem(sys.modules, "openvino", None)  # makes `import openvino` raise ImportError
    ov._openvino.cache_clear()
    try:
        with pytest.raises(BridgeError, match=r"pip install 'onnx-bridge\[openvino\]'"):
            ov.core_with_extensions()
    finally:
        ov._openvino.cache_clear()
