"""ONNX models of a benchmark case: the dialect node, the stock-marshaling PyOp, the single native op."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from custom_ops._types import NUMPY_TO_ONNX
from onnx_bridge.config import DOMAIN, IR_VERSION

STOCK_DOMAIN = "org.onnxbridge.bench"
PORTS = {
    "ScatterElementsUpdate": (("data", "indices", "updates", "axis"), ("output",)),
    "ScatterUpdate": (("data", "indices", "updates", "axis"), ("output",)),
    "ReduceL2": (("data", "axes"), ("output",)),
    "Unique": (("data", "axis"), ("unique", "indices", "reverse_indices", "counts")),
}
CONSTANT_PORTS = ("axis", "axes")
_DEFAULTS = {"ScatterElementsUpdate": {"reduction": "none", "use_init_val": 1}, "ScatterUpdate": {},
             "ReduceL2": {"keep_dims": 0},
             "Unique": {"sorted": 1, "index_element_type": "i64", "count_element_type": "i64"}}
_SEU_TO_ONNX = {"none": "none", "sum": "add", "prod": "mul", "min": "min", "max": "max"}


class NotApplicable(Exception):
    """This column has nothing equivalent to run for the case (the message says why)."""


def _model(nodes, inputs: dict, outputs, *, opsets=(("", 18),), initializers=()):
    graph_inputs = [helper.make_tensor_value_info(name, NUMPY_TO_ONNX[a.dtype], a.shape)
                    for name, a in inputs.items()]
    graph_outputs = [helper.make_tensor_value_info(name, code, None) for name, code in outputs]
    graph = helper.make_graph(nodes, "bench", graph_inputs, graph_outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                             ir_version=IR_VERSION)


def _output_types(op: str, inputs: dict):
    data_code = NUMPY_TO_ONNX[inputs["data"].dtype]
    return [(name, data_code if i == 0 else TensorProto.INT64) for i, name in enumerate(PORTS[op][1])]


def _split(op: str, inputs: dict):
    """(feeds, constant initializers, node input names) of the case's inputs, in port order."""
    feeds, constants, names = {}, [], []
    for port in PORTS[op][0]:
        if port not in inputs:
            continue
        names.append(port)
        if port in CONSTANT_PORTS:
            constants.append(numpy_helper.from_array(inputs[port], port))
        else:
            feeds[port] = inputs[port]
    return feeds, constants, names


def dialect_model(case, inputs: dict):
    """(model, feeds): one dialect node with the case's attributes; axis/axes as constants."""
    feeds, constants, names = _split(case.op, inputs)
    node = helper.make_node(case.op, names, list(PORTS[case.op][1]), domain=DOMAIN, name=case.id,
                            **case.attributes)
    model = _model([node], feeds, _output_types(case.op, inputs), initializers=constants,
                   opsets=(("", 18), (DOMAIN, 12)))
    return model, feeds


def stock_model(case, inputs: dict):
    """(model, feeds) calling the stock-marshaling PyOp of benchmarks.stock (every attribute written)."""
    if case.op == "Unique" and "axis" not in inputs:
        inputs = {**inputs, "axis": np.zeros(0, np.int64)}  # see stock.register
    feeds, constants, names = _split(case.op, inputs)
    node = helper.make_node(f"Stock{case.op}", names, list(PORTS[case.op][1]), domain=STOCK_DOMAIN,
                            **{**_DEFAULTS[case.op], **case.attributes})
    model = _model([node], feeds, _output_types(case.op, inputs), initializers=constants,
                   opsets=(("", 18), (STOCK_DOMAIN, 1)))
    return model, feeds


def native_model(case, inputs: dict):
    """(model, feeds, label, to_contract) for the single onnxruntime op equal to the case, or NotApplicable.

    to_contract(outputs) turns the op's outputs into the dialect op's (for the exactness check).
    """
    same = lambda outputs: outputs  # noqa: E731
    if case.op == "ScatterElementsUpdate":
        reduction = case.attributes.get("reduction", "none")
        if reduction == "mean":
            raise NotApplicable("no mean reduction in ScatterElements-18")
        if reduction != "none" and not case.attributes.get("use_init_val", 1):
            raise NotApplicable("ScatterElements-18 has no use_init_val=0")
        feeds = {k: inputs[k] for k in ("data", "indices", "updates")}
        node = helper.make_node("ScatterElements", list(feeds), ["output"], axis=int(inputs["axis"]),
                                reduction=_SEU_TO_ONNX[reduction])
        return (_model([node], feeds, _output_types(case.op, inputs)), feeds,
                f"ScatterElements-18 {_SEU_TO_ONNX[reduction]}", same)
    if case.op == "ScatterUpdate":
        # ScatterND scatters along axis 0 only: time it on the same data with the axis already moved to
        # the front (no Transposes), i.e. the single native op doing this scatter's work.
        axis, rank = int(inputs["axis"]), inputs["indices"].ndim
        data = np.ascontiguousarray(np.moveaxis(inputs["data"], axis, 0))
        updates = np.ascontiguousarray(np.moveaxis(inputs["updates"], list(range(axis, axis + rank)),
                                                   list(range(rank))))
        feeds = {"data": data, "indices": inputs["indices"][..., None].astype(np.int64), "updates": updates}
        node = helper.make_node("ScatterND", list(feeds), ["output"])
        return (_model([node], feeds, _output_types(case.op, inputs)), feeds,
                "ScatterND-18 (axis pre-moved to 0)",
                lambda outputs: [np.moveaxis(outputs[0], 0, axis)])
    if case.op == "ReduceL2":
        axes = numpy_helper.from_array(inputs["axes"].astype(np.int64), "axes")
        feeds = {"data": inputs["data"]}
        node = helper.make_node("ReduceL2", ["data", "axes"], ["output"],
                                keepdims=case.attributes.get("keep_dims", 0), noop_with_empty_axes=1)
        return (_model([node], feeds, _output_types(case.op, inputs), initializers=[axes]), feeds,
                "ReduceL2-18", same)
    if case.op == "Unique":
        data = inputs["data"]
        attributes = {"sorted": case.attributes.get("sorted", 1)}
        if "axis" in inputs:
            attributes["axis"] = int(inputs["axis"])
        nodes, source, label = [], "data", "Unique-11"
        if data.dtype not in (np.float32, np.float64, np.int8, np.int64):  # onnxruntime's Unique kernels
            nodes.append(helper.make_node("Cast", ["data"], ["wide"], to=TensorProto.INT64))
            source, label = "wide", f"Unique-11 (via Cast {data.dtype}->int64)"
        outputs = ["unique", "indices", "reverse_indices", "counts"]
        if source == "wide":
            outputs[0] = "unique_wide"
        nodes.append(helper.make_node("Unique", [source], outputs, **attributes))
        if source == "wide":
            nodes.append(helper.make_node("Cast", ["unique_wide"], ["unique"], to=NUMPY_TO_ONNX[data.dtype]))
        feeds = {"data": data}
        return _model(nodes, feeds, _output_types(case.op, inputs)), feeds, label, same
    raise NotApplicable(f"no native counterpart for {case.op}")
