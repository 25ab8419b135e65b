"""A conformance case: one dialect op on concrete inputs (an "op case"), or a whole model with feeds.

Op cases run through every backend (each maps the op onto its own API); model cases run through the
backends that execute ONNX models. The contract value of a case is what the custom_ops kernels compute.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import custom_ops
from custom_ops.element_types import BFLOAT16, NUMPY_TO_ONNX, type_name
from onnx_bridge._feeds import graph_input, graph_output
from onnx_bridge.config import DIALECT_OPSET, DOMAIN, IR_VERSION, TARGET_OPSET
from onnx_bridge.errors import OpError

MODEL = "model"  # op of a model case


def constant_ports(op: str) -> tuple[str, ...]:
    """Inputs that are constants of the one-node model: the ports OpenVINO needs as Constants (its unit's
    constant_inputs; lowering wants them constant too)."""
    unit = custom_ops.unit_of(op)
    return unit.openvino.constant_inputs if unit is not None else ()


def output_names(op: str) -> tuple[str, ...]:
    return tuple(port.name for port in spec_of(op).outputs)


@dataclass
class Case:
    """One row of the corpus.

    id: stable name ("seed/seu-sum-init1", "gen/SEU/0042", "onnx/test_unique_length_1", "model/kv_cache").
    op: dialect op_type, or MODEL for a model case.
    inputs: port name -> array (None: optional input absent); for a model case, graph input -> array.
    attributes: every attribute of the op, defaults filled in (empty for a model case).
    tags: what the case exercises ("duplicates", "negative-indices", "nan", "neg-zero", "empty",
          "extremes", "invalid", ...), used for filtering and by divergence predicates.
    expected: documented outputs (seed examples, ONNX backend data) the kernel must reproduce, if any.
    model: the ONNX model of a model case.
    """

    id: str
    op: str
    inputs: dict
    attributes: dict = field(default_factory=dict)
    source: str = "generated"
    description: str = ""
    tags: frozenset = frozenset()
    expected: tuple | None = None
    model: onnx.ModelProto | None = None
    group: str = ""  # row of the matrix (default: the op)

    @property
    def row(self) -> str:
        return self.group or self.op

    @property
    def is_model(self) -> bool:
        return self.op == MODEL

    # Conveniences for divergence predicates and adapters.
    @property
    def data(self) -> np.ndarray | None:
        return self.inputs.get("data")

    @property
    def dtype(self) -> np.dtype | None:
        data = self.data
        return None if data is None else data.dtype

    def input_list(self) -> list:
        """Inputs in the op's port order (absent trailing optional inputs dropped)."""
        ports = [port.name for port in custom_ops.resolve(self.op, DIALECT_OPSET).inputs]
        values = [self.inputs.get(port) for port in ports]
        while values and values[-1] is None:
            values.pop()
        return values

    def has(self, tag: str) -> bool:
        return tag in self.tags

    def summary(self) -> str:
        """One line: description, or the op with its inputs' types and shapes."""
        return self.description or describe_inputs(self.inputs)


def describe_array(array: np.ndarray) -> str:
    return f"{type_name(array.dtype)}{list(array.shape)}"


def describe_inputs(inputs: dict) -> str:
    parts = []
    for name, value in inputs.items():
        if value is None:
            continue
        if value.size <= 4 and value.ndim <= 1 and value.dtype.kind in "iub":
            parts.append(f"{name}={value.tolist()}")
        else:
            parts.append(f"{name} {describe_array(value)}")
    return ", ".join(parts)


def spec_of(op: str):
    return custom_ops.resolve(op, DIALECT_OPSET)


def full_attributes(op: str, attributes: dict | None) -> dict:
    """Every attribute of `op` with defaults filled in (unknown names raise OpError)."""
    return spec_of(op).attribute_values(attributes)


# ------------------------------------------------------------------------------------------------------
# One-node dialect models


def signature(case: Case) -> tuple:
    """What a compiled one-node model depends on: op, attributes, (dtype, rank) of tensor inputs, constants.

    Tensor inputs have dynamic dimensions, so one model (and one session) serves every case with the
    same signature.
    """
    parts = [case.op, tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in case.attributes.items()))]
    for name, value in case.inputs.items():
        if value is None:
            parts.append((name, None))
        elif name in constant_ports(case.op):
            parts.append((name, value.dtype.str, value.shape, tuple(value.reshape(-1).tolist())))
        else:
            parts.append((name, value.dtype.str, value.ndim))
    return tuple(parts)


def op_model(case: Case, prefix: str = "") -> tuple[onnx.ModelProto, dict]:
    """(model, feeds) of an op case: one dialect node, tensors as graph inputs with dynamic dims, axis/axes
    as initializers. bfloat16 travels as float32 with a Cast either side (onnxruntime's Python API cannot
    feed or fetch bfloat16); every output is a graph output. `prefix` goes before every name."""
    nodes, graph_inputs, initializers, feeds, node_inputs = [], [], [], {}, []
    for port, value in case.inputs.items():
        if value is None:
            node_inputs.append("")
            continue
        name = prefix + port
        node_inputs.append(name)
        if port in constant_ports(case.op):
            initializers.append(numpy_helper.from_array(value, name))
            continue
        info, feed, casts = graph_input(name, value, [f"{name}_d{i}" for i in range(value.ndim)])
        graph_inputs.append(info)
        feeds.update(feed)
        nodes.extend(casts)
    while node_inputs and not node_inputs[-1]:
        node_inputs.pop()
    outputs = [prefix + name for name in output_names(case.op)]
    node = helper.make_node(case.op, node_inputs, outputs, domain=DOMAIN, name=prefix + case.op)
    node.attribute.extend(_attributes(case))
    nodes.append(node)
    graph_outputs = []
    codes = _output_codes(case)
    for name, code in zip(outputs, codes):
        info, casts = graph_output(name, code)
        graph_outputs.append(info)
        nodes.extend(casts)
    graph = helper.make_graph(nodes, case.id.replace("/", "_"), graph_inputs, graph_outputs,
                              initializer=initializers)
    model = helper.make_model(graph, ir_version=IR_VERSION,
                              opset_imports=[helper.make_opsetid("", TARGET_OPSET),
                                             helper.make_opsetid(DOMAIN, DIALECT_OPSET)])
    return model, feeds


def batch_model(cases: list[Case]) -> tuple[onnx.ModelProto, dict, list[list[str]]]:
    """One model holding the op_model() of every case side by side (names prefixed "c<i>_"): (model,
    feeds of all cases, output names of each case). One session then runs a whole chunk of cases."""
    merged, feeds, outputs = None, {}, []
    for index, case in enumerate(cases):
        model, case_feeds = op_model(case, prefix=f"c{index}_")
        feeds.update(case_feeds)
        outputs.append([value.name for value in model.graph.output])
        if merged is None:
            merged = model
            merged.graph.name = "batch"
            continue
        for field in ("node", "input", "output", "initializer"):
            getattr(merged.graph, field).extend(getattr(model.graph, field))
    return merged, feeds, outputs


def restore_outputs(case: Case, outputs) -> tuple:
    """Outputs of a model from op_model() in the case's types (bfloat16 came back as float32)."""
    restored = []
    for value, code in zip(outputs, _output_codes(case)):
        value = np.asarray(value)
        if code == TensorProto.BFLOAT16 and value.dtype == np.float32:
            value = value.astype(BFLOAT16)
        restored.append(value)
    return tuple(restored)


_LIST_KINDS = {"ints": onnx.AttributeProto.INTS, "floats": onnx.AttributeProto.FLOATS}


def _attributes(case: Case) -> list:
    """The case's attributes as AttributeProtos (an empty list typed by its declared kind)."""
    kinds = {a.name: a.kind for a in spec_of(case.op).attributes}
    return [helper.make_attribute(name, value, attr_type=_LIST_KINDS.get(kinds.get(name)))
            if isinstance(value, (list, tuple)) and not len(value) else helper.make_attribute(name, value)
            for name, value in case.attributes.items()]


def _output_codes(case: Case) -> list[int]:
    """ONNX element type of each output: the contract's (the kernel's outputs); for a case the contract
    rejects, the type of the input binding the output's type constraint, else int64 (index outputs)."""
    spec = spec_of(case.op)
    try:
        with np.errstate(all="ignore"):
            outputs = spec.run(case.input_list(), case.attributes)
        return [NUMPY_TO_ONNX[np.asarray(value).dtype] for value in outputs]
    except OpError:
        bound = {port.type_constraint: value.dtype for port, value in zip(spec.inputs, case.input_list())
                 if value is not None}
        return [NUMPY_TO_ONNX.get(bound.get(port.type_constraint), TensorProto.INT64) for port in spec.outputs]
