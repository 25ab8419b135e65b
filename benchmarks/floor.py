"""The physical floor of a Python custom op: what moving a tensor in and out costs, with no work done.

onnxruntime-extensions gives a PyOp fresh copies of its inputs and memcpys each returned array into
onnxruntime's output, so a scatter through PyOps pays at least one copy in and one copy out of data, plus
a fixed cost per call (measured on a one-element tensor).
"""
from __future__ import annotations

import functools

import numpy as np
from onnx import TensorProto, helper

import onnx_bridge

from .columns import _ort_session

FLOOR_DOMAIN = "org.onnxbridge.floor"


@functools.cache
def _register() -> None:
    @onnx_bridge.custom_op("Nothing", domain=FLOOR_DOMAIN, inputs=["float32"], outputs=["float32"])
    def nothing(data):
        return data


def _noop_pyop(data: np.ndarray):
    """A bridge session whose only node is a PyOp doing nothing (a user op returning its input): what a
    Python op pays for moving its data in and out, whatever the op."""
    _register()
    graph = helper.make_graph([helper.make_node("Nothing", ["data"], ["out"], domain=FLOOR_DOMAIN)], "floor",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, data.shape)],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(FLOOR_DOMAIN, 1)],
                              ir_version=onnx_bridge.IR_VERSION)
    session = onnx_bridge.InferenceSession(model)
    return lambda: session.run(None, {"data": data})


def _identity(data: np.ndarray):
    graph = helper.make_graph([helper.make_node("Identity", ["data"], ["out"])], "floor",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, data.shape)],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    session = _ort_session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                                             ir_version=onnx_bridge.IR_VERSION))
    return lambda: session.run(None, {"data": data})


def floor_runners(shape) -> dict:
    """Runners (zero-argument callables) of the floor measurements on a float32 tensor of `shape`."""
    data = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    target = np.empty_like(data)
    one = np.ones(1, np.float32)
    return {
        "numpy copy (new array)": lambda: data.copy(),
        "numpy copy into an existing array": lambda: np.copyto(target, data),
        "onnxruntime Identity": _identity(data),
        "bridge PyOp doing nothing (a user op returning its input)": _noop_pyop(data),
        "onnxruntime Identity, 1 element: fixed cost of a run": _identity(one),
        "bridge PyOp doing nothing, 1 element: fixed cost of a PyOp run": _noop_pyop(one),
    }
