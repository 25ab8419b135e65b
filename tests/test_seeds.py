"""Every seed example of docs/dialect.md section 3, through the kernels and through onnxruntime."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bridge
from custom_ops.ops.scatter.scatter_elements_update import scatter_elements_update as seu
from custom_ops.ops.scatter.scatter_update import scatter_update as su

A = np.array
SEEDS = {
    "seu_sum_init": (dict(data=A([2, 3, 4, 6]), indices=A([1, 0, 0, -2, -1, 2]),
                          updates=A([10, 20, 30, 40, 70, 60]), axis=0, reduction="sum", use_init_val=1),
                     A([52, 13, 104, 76])),
    "seu_sum_noinit": (dict(data=A([2, 3, 4, 6]), indices=A([1, 0, 0, 2, 3, 2]),
                            updates=A([10, 20, 30, 40, 70, 60]), axis=0, reduction="sum", use_init_val=0),
                       A([50, 10, 100, 70])),
    "seu_none_axis1": (dict(data=np.zeros((3, 4), np.float32), indices=A([[1, 2], [0, 3]]),
                            updates=A([[11, 12], [13, 14]], np.float32), axis=1, reduction="none"),
                       A([[0, 11, 12, 0], [13, 0, 0, 14], [0, 0, 0, 0]], np.float32)),
    "seu_sum_axis1": (dict(data=np.ones((3, 4), np.float32), indices=A([[1, 1], [0, 3]]),
                           updates=A([[11, 12], [13, 14]], np.float32), axis=1, reduction="sum"),
                      A([[1, 24, 1, 1], [14, 1, 1, 15], [1, 1, 1, 1]], np.float32)),
    "seu_prod_axis1": (dict(data=np.full((3, 4), 2, np.float32), indices=A([[1, 1], [0, 3]]),
                            updates=A([[11, 12], [13, 14]], np.float32), axis=1, reduction="prod"),
                       A([[2, 264, 2, 2], [26, 2, 2, 28], [2, 2, 2, 2]], np.float32)),
    # ONNX ScatterElements examples 1 and 2 (seed 003) in the dialect.
    "onnx_example1": (dict(data=np.zeros((3, 3), np.float32), indices=A([[1, 0, 2], [0, 2, 1]]),
                           updates=A([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], np.float32), axis=0),
                      A([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]], np.float32)),
    "onnx_example2": (dict(data=A([[1.0, 2.0, 3.0, 4.0, 5.0]], np.float32), indices=A([[1, 3]]),
                           updates=A([[1.1, 2.1]], np.float32), axis=1),
                      A([[1.0, 1.1, 3.0, 2.1, 5.0]], np.float32)),
}


def _seu_model(case):
    attrs = {k: case[k] for k in ("reduction", "use_init_val") if k in case}
    node = helper.make_node("ScatterElementsUpdate", ["data", "indices", "updates", "axis"], ["out"],
                            domain=onnx_bridge.DOMAIN, name="seed", **attrs)
    feeds = {k: case[k] for k in ("data", "indices", "updates")}
    inputs = [helper.make_tensor_value_info(k, numpy_helper.from_array(v).data_type, v.shape)
              for k, v in feeds.items()]
    graph = helper.make_graph([node], "seed", inputs,
                              [helper.make_tensor_value_info("out", inputs[0].type.tensor_type.elem_type,
                                                             None)],
                              initializer=[numpy_helper.from_array(np.array(case["axis"], np.int64), "axis")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid(onnx_bridge.DOMAIN, 12)],
                              ir_version=onnx_bridge.IR_VERSION)
    return model, feeds


@pytest.mark.parametrize("name", SEEDS)
def test_seed_kernel(name):
    case, expected = SEEDS[name]
    np.testing.assert_array_equal(seu(**case), expected)


@pytest.mark.parametrize("name", SEEDS)
def test_seed_onnxruntime(name):
    case, expected = SEEDS[name]
    model, feeds = _seu_model(case)
    (out,) = onnx_bridge.InferenceSession(model).run(None, feeds)
    np.testing.assert_array_equal(out, expected)


def test_seed_scatter_update():
    data = np.arange(15, dtype=np.float32).reshape(3, 5)
    out = su(data, A([0, 2]), A([[1, 1], [1, 1], [1, 2]], np.float32), 1)
    expected = data.copy()
    expected[:, 0], expected[:, 2] = 1, [1, 1, 2]
    np.testing.assert_array_equal(out, expected)
