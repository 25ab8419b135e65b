"""ONNX models of a benchmark case: the dialect node, the stock-marshaling PyOp, the single native op, all
from the case's unit (ports, attribute defaults, constant inputs, its benchmark piece's native counterpart)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

import custom_ops
from custom_ops.schemas import register_schemas
from custom_ops.element_types import NUMPY_TO_ONNX
from onnx_bridge.config import DOMAIN, IR_VERSION

STOCK_DOMAIN = "org.onnxbridge.bench"


class NotApplicable(Exception):
    """This column has nothing equivalent to run for the case (the message says why)."""


def ports(op: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(input port names, output port names) of the op's newest version."""
    spec = custom_ops.unit_of(op).newest
    return tuple(p.name for p in spec.inputs), tuple(p.name for p in spec.outputs)


def constant_ports(case) -> set[str]:
    """Ports given as initializers: the unit's constant inputs and the case's constants."""
    return set(custom_ops.unit_of(case.op).openvino.constant_inputs) | set(case.constants)


def openvino_node(case, inputs: dict):
    """(OpenVINO node, its Parameters) of a benchmark case: static-shape Parameters for the case's tensors,
    Constants for its constant ports (constant_ports), the node built by the unit's factory."""
    import openvino as ov
    from openvino import opset1

    unit = custom_ops.unit_of(case.op)
    constant = constant_ports(case)
    parameters, nodes = [], []
    for port in unit.newest.inputs:
        value = inputs.get(port.name)
        if value is None:
            nodes.append(None)
        elif port.name in constant:
            nodes.append(ov.op.Constant(np.asarray(value)))
        else:
            parameters.append(opset1.parameter(list(value.shape), ov.Type(value.dtype), name=port.name))
            nodes.append(parameters[-1].output(0))
    attributes = unit.openvino.ov_attributes(unit.newest.attribute_values(case.attributes))
    return unit.openvino.factory(ov, nodes, attributes), parameters


def ordered_inputs(case, inputs: dict) -> list:
    """The case's inputs in port order (absent optional ports left out)."""
    return [inputs[name] for name in ports(case.op)[0] if name in inputs]


def _model(nodes, inputs: dict, outputs, *, opsets=(("", 18),), initializers=()):
    graph_inputs = [helper.make_tensor_value_info(name, NUMPY_TO_ONNX[a.dtype], a.shape)
                    for name, a in inputs.items()]
    graph_outputs = [helper.make_tensor_value_info(name, code, None) if code else
                     helper.make_empty_tensor_value_info(name) for name, code in outputs]
    graph = helper.make_graph(nodes, "bench", graph_inputs, graph_outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                             ir_version=IR_VERSION)


def _split(case, inputs: dict):
    """(feeds, constant initializers, node input names) of the case's inputs, in port order."""
    feeds, constants, names = {}, [], []
    constant = constant_ports(case)
    for port in ports(case.op)[0]:
        if port not in inputs:
            continue
        names.append(port)
        if port in constant:
            constants.append(numpy_helper.from_array(inputs[port], port))
        else:
            feeds[port] = inputs[port]
    return feeds, constants, names


def _dialect(case, inputs: dict, outputs):
    feeds, constants, names = _split(case, inputs)
    node = helper.make_node(case.op, names, list(ports(case.op)[1]), domain=DOMAIN, name=case.id, **case.attributes)
    return _model([node], feeds, outputs, initializers=constants, opsets=(("", 18), (DOMAIN, 12))), feeds


def output_types(case, inputs: dict) -> list[tuple[str, int]]:
    """(name, ONNX element type) of the op's outputs for these inputs, from the dialect schema's inference."""
    register_schemas()
    model, _ = _dialect(case, inputs, [(name, 0) for name in ports(case.op)[1]])
    inferred = onnx.shape_inference.infer_shapes(model)
    return [(o.name, o.type.tensor_type.elem_type) for o in inferred.graph.output]


def dialect_model(case, inputs: dict):
    """(model, feeds): one dialect node with the case's attributes; constant ports as initializers."""
    return _dialect(case, inputs, output_types(case, inputs))


def stock_model(case, inputs: dict):
    """(model, feeds) calling the stock-marshaling PyOp of benchmarks.stock (every attribute written; every
    optional input given, empty when absent: see stock.register)."""
    spec = custom_ops.unit_of(case.op).newest
    types = output_types(case, inputs)
    inputs = {**{p.name: np.zeros(0, np.int64) for p in spec.inputs if p.optional}, **inputs}
    feeds, constants, names = _split(case, inputs)
    node = helper.make_node(f"Stock{case.op}", names, list(ports(case.op)[1]), domain=STOCK_DOMAIN,
                            **spec.attribute_values(case.attributes))
    model = _model([node], feeds, types, initializers=constants,
                   opsets=(("", 18), (STOCK_DOMAIN, 1)))
    return model, feeds


def native_model(case, inputs: dict):
    """(model, feeds, label, to_contract) for the single onnxruntime op equal to the case (the unit's
    benchmark.native), or NotApplicable. to_contract(outputs) turns the op's outputs into the dialect op's
    (for the exactness check)."""
    native = custom_ops.unit_of(case.op).benchmark.native
    if native is None:
        raise NotApplicable(f"no native counterpart for {case.op}")
    try:
        nodes, feeds, initializers, label, to_contract = native(case, inputs)
    except NotImplementedError as reason:
        raise NotApplicable(str(reason)) from None
    model = _model(nodes, feeds, output_types(case, inputs), initializers=initializers)
    return model, feeds, label, to_contract or (lambda outputs: outputs)
