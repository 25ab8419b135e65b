"""Graph inputs and outputs onnxruntime's Python API can feed and fetch.

It cannot carry bfloat16 arrays, so a bfloat16 value travels as float32 with a Cast inside the graph.
Used by everything that builds small models around dialect nodes (tests, conformance).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from custom_ops.element_types import BFLOAT16, NUMPY_TO_ONNX


def graph_input(name: str, value: np.ndarray, dims) -> tuple:
    """(value_info, {feed name: array}, nodes) making `value` available as `name` inside the graph."""
    code = NUMPY_TO_ONNX[value.dtype]
    if value.dtype != BFLOAT16:
        return helper.make_tensor_value_info(name, code, dims), {name: value}, []
    wide = f"{name}_f32"
    return (helper.make_tensor_value_info(wide, TensorProto.FLOAT, dims), {wide: value.astype(np.float32)},
            [helper.make_node("Cast", [wide], [name], to=code)])


def graph_output(name: str, code: int, shape=None) -> tuple:
    """(value_info, nodes) fetching `name`; a bfloat16 one comes out as float32 `<name>_f32`."""
    if code != TensorProto.BFLOAT16:
        return helper.make_tensor_value_info(name, code, shape), []
    wide = f"{name}_f32"
    return (helper.make_tensor_value_info(wide, TensorProto.FLOAT, shape),
            [helper.make_node("Cast", [name], [wide], to=TensorProto.FLOAT)])
