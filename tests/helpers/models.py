"""Small builders of one-node dialect models for tests."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from custom_ops.element_types import NUMPY_TO_ONNX
from onnx_bridge._feeds import graph_input, graph_output
from onnx_bridge.config import DOMAIN, IR_VERSION

_PORTS = {
    "ScatterElementsUpdate": (["data", "indices", "updates", "axis"], ["output"]),
    "ScatterUpdate": (["data", "indices", "updates", "axis"], ["output"]),
    "ReduceL2": (["data", "axes"], ["output"]),
    "Unique": (["data", "axis"], ["unique", "indices", "reverse_indices", "counts"]),
}


def dialect_model(op_type: str, inputs: dict, attributes: dict | None = None, *, constants=("axis", "axes"),
                  opset: int = 12, name: str = "node"):
    """One dialect node; `inputs` maps port name -> array (None = absent). Axis/axes become initializers.

    float16/bfloat16 graph inputs are fed as float32 and Cast inside the graph (onnxruntime's Python API
    cannot feed bfloat16). Returns (model, feeds).
    """
    port_names, output_names = _PORTS[op_type]
    nodes, graph_inputs, initializers, feeds, node_inputs = [], [], [], {}, []
    for port in port_names:
        value = inputs.get(port)
        if value is None:
            continue
        node_inputs.append(port)
        code = NUMPY_TO_ONNX[value.dtype]
        if port in constants:
            initializers.append(numpy_helper.from_array(value, port) if code != TensorProto.BFLOAT16 else
                                helper.make_tensor(port, code, value.shape, value.view(np.uint16).tolist()))
        else:
            info, feed, casts = graph_input(port, value, value.shape)
            graph_inputs.append(info)
            feeds.update(feed)
            nodes.extend(casts)
    node = helper.make_node(op_type, node_inputs, list(output_names), domain=DOMAIN, name=name,
                            **(attributes or {}))
    nodes.append(node)
    outputs = []
    data_code = NUMPY_TO_ONNX[inputs["data"].dtype]
    for index, out in enumerate(output_names):
        code = data_code
        if index:
            key = "count_element_type" if index == 3 else "index_element_type"
            code = TensorProto.INT32 if (attributes or {}).get(key) == "i32" else TensorProto.INT64
        info, casts = graph_output(out, code)
        outputs.append(info)
        nodes.extend(casts)
    graph = helper.make_graph(nodes, "test", graph_inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid(DOMAIN, opset)],
                              ir_version=IR_VERSION)
    return model, feeds
