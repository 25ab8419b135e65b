"""Graph-building helper for the rules: what is known about a model's values, unique names, constants,
and a Builder that emits nodes with known output element types.
"""
from __future__ import annotations

import itertools

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from custom_ops.element_types import NUMPY_TO_ONNX, ONNX_TO_NUMPY

#: Initializers bigger than this are replaced by typed inputs in the copy given to shape inference.
_LIGHT_LIMIT = 1024


def subgraphs(node: onnx.NodeProto):
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            yield attribute.g
        yield from attribute.graphs


def all_graphs(graph: onnx.GraphProto):
    """graph and every subgraph in it, outer first."""
    yield graph
    for node in graph.node:
        for sub in subgraphs(node):
            yield from all_graphs(sub)


def _light_copy(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model without the data of big initializers (typed inputs instead): cheap to infer shapes on."""
    light = onnx.ModelProto()
    light.ir_version = max(model.ir_version, 4)
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    graph, source = light.graph, model.graph
    graph.name = source.name
    graph.node.extend(source.node)
    graph.input.extend(source.input)
    graph.output.extend(source.output)
    graph.value_info.extend(source.value_info)
    declared = {v.name for v in source.input}
    for tensor in source.initializer:
        size = int(np.prod(tensor.dims)) if tensor.dims else 1
        if size <= _LIGHT_LIMIT:
            graph.initializer.append(tensor)
        elif tensor.name not in declared:
            graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
    return light


def infer(model: onnx.ModelProto) -> onnx.ModelProto:
    """Shape inference (dialect schemas registered) on a light copy; the copy itself if inference fails."""
    from custom_ops.schemas import register_schemas  # (here: every op spec loads; an IR import never infers)

    register_schemas()
    light = _light_copy(model)
    try:
        # data_prop=False: data propagation can take seconds on big static shapes (measured: 0.4 s for a
        # Reshape of a 1M-element input), and types are what the rules need.
        return onnx.shape_inference.infer_shapes(light, strict_mode=False, data_prop=False)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError):
        return light  # inference helps, it is not required: rules keep nodes whose types stay unknown


def _dims(value: onnx.ValueInfoProto):
    tensor = value.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim)


class ModelInfo:
    """Element types, shapes and constant values of the values of a model (all graphs)."""

    def __init__(self, model: onnx.ModelProto, inferred: onnx.ModelProto | None = None):
        inferred = inferred if inferred is not None else infer(model)
        self.types: dict[str, int] = {}
        self.shapes: dict[str, tuple | None] = {}
        self._constants: dict[str, object] = {}
        self.names: set[str] = set()
        for graph in all_graphs(inferred.graph):
            for value in itertools.chain(graph.input, graph.value_info, graph.output):
                self._record(value)
        for graph in all_graphs(model.graph):
            inputs = {v.name for v in graph.input}
            for value in itertools.chain(graph.input, graph.output, graph.value_info):
                self.names.add(value.name)
                if value.name not in self.types:
                    self._record(value)
            for tensor in graph.initializer:
                self.names.add(tensor.name)
                self.types.setdefault(tensor.name, tensor.data_type)
                self.shapes.setdefault(tensor.name, tuple(tensor.dims))
                if tensor.name not in inputs:  # an initializer that is also an input can be overridden
                    self._constants[tensor.name] = tensor
            for node in graph.node:
                self.names.update(node.output)
                self.names.update(node.input)
                if node.name:
                    self.names.add(node.name)
                if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output:
                    self._constants[node.output[0]] = node

    def _record(self, value: onnx.ValueInfoProto) -> None:
        tensor = value.type.tensor_type
        if value.type.HasField("tensor_type") and tensor.elem_type:
            self.types[value.name] = tensor.elem_type
            self.shapes[value.name] = _dims(value)

    def elem_type(self, name: str) -> int | None:
        return self.types.get(name)

    def dtype(self, name: str) -> np.dtype | None:
        code = self.types.get(name)
        return ONNX_TO_NUMPY.get(code) if code else None

    def shape(self, name: str) -> tuple | None:
        """Dims (int, symbolic name, or None when unknown), or None when even the rank is unknown."""
        return self.shapes.get(name)

    def rank(self, name: str) -> int | None:
        shape = self.shapes.get(name)
        return None if shape is None else len(shape)

    def static_shape(self, name: str) -> tuple[int, ...] | None:
        shape = self.shapes.get(name)
        if shape is None or not all(isinstance(d, int) for d in shape):
            return None
        return shape

    def constant(self, name: str) -> np.ndarray | None:
        """The value of `name` when it is a non-overridable initializer or a Constant node's output."""
        source = self._constants.get(name)
        if source is None:
            return None
        if isinstance(source, TensorProto):
            return numpy_helper.to_array(source)
        for attribute in source.attribute:
            if attribute.name == "value":
                return numpy_helper.to_array(attribute.t)
            if attribute.name == "value_int":
                return np.array(attribute.i, np.int64)
            if attribute.name == "value_ints":
                return np.array(list(attribute.ints), np.int64)
        return None


class NameScope:
    """Hands out names not used anywhere in the model."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)

    def fresh(self, hint: str) -> str:
        name, counter = hint, 0
        while name in self.taken or not name:
            counter += 1
            name = f"{hint}_{counter}"
        self.taken.add(name)
        return name


_BOOL_OUTPUT = {"Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Equal", "IsNaN", "IsInf", "Not",
                "And", "Or", "Xor"}
_INT64_OUTPUT = {"Shape", "Size"}


class Builder:
    """Collects the nodes and initializers replacing one node. Nothing touches the model until the driver
    commits a rule's result, so a rule may give up (Keep) at any point."""

    def __init__(self, info: ModelInfo, names: NameScope, base: str, parent: Builder | None = None):
        self.info, self.names, self.base, self.parent = info, names, base, parent
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.types: dict[str, int] = {}  # element type of every new value

    def type_of(self, name: str) -> int | None:
        if name in self.types:
            return self.types[name]
        return self.parent.type_of(name) if self.parent else self.info.elem_type(name)

    def branch(self, build) -> onnx.GraphProto:
        """A subgraph (If branch) built by build(child_builder) -> list of output names; outer values are
        referenced by name. Its inner values get typed value_info."""
        child = Builder(self.info, self.names, self.base, parent=self)
        outputs = build(child)
        graph = helper.make_graph(child.nodes, self.fresh("branch"), [],
                                  [helper.make_tensor_value_info(o, child.type_of(o), None) for o in outputs],
                                  initializer=child.initializers)
        constants = {t.name for t in child.initializers} | set(outputs)
        graph.value_info.extend(helper.make_tensor_value_info(name, code, None)
                                for name, code in child.types.items() if name not in constants)
        return graph

    def if_(self, condition: str, then_build, else_build, output=None, hint: str = "If") -> str:
        """If(condition) with branches from then_build/else_build (one output each, same type)."""
        then_branch, else_branch = self.branch(then_build), self.branch(else_build)
        code = then_branch.output[0].type.tensor_type.elem_type
        return self.op("If", [condition], output, hint=hint, out_types=[code], then_branch=then_branch,
                       else_branch=else_branch)

    def fresh(self, hint: str) -> str:
        return self.names.fresh(f"{self.base}/{hint}")

    def const(self, value, dtype=None, hint: str = "const") -> str:
        array = np.asarray(value, dtype=dtype)
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(array, name))
        self.types[name] = NUMPY_TO_ONNX[array.dtype]
        return name

    def op(self, op_type: str, inputs, outputs=None, *, n: int = 1, hint: str | None = None,
           out_types=None, domain: str = "", **attributes):
        """Emit one node; returns its output name (or the list of them when it has several)."""
        if isinstance(outputs, str):
            outputs = [outputs]
        if outputs is None:
            outputs = [self.fresh(f"{hint or op_type}" + (f"_{i}" if n > 1 else "")) for i in range(n)]
        node = helper.make_node(op_type, list(inputs), list(outputs), name=self.fresh(hint or op_type),
                                domain=domain, **attributes)
        self.nodes.append(node)
        types = out_types or self._output_types(domain, op_type, list(inputs), attributes, len(outputs))
        for name, code in zip(outputs, types):
            if name and code:
                self.types[name] = code
        return outputs[0] if len(outputs) == 1 else list(outputs)

    def _output_types(self, domain, op_type, inputs, attributes, count):
        """Output types of a standard op from its inputs; another domain's op: the first input's type (give
        out_types where that is wrong)."""
        if domain:
            return [self.type_of(inputs[0])] * count
        if op_type == "Cast":
            return [attributes["to"]]
        if op_type in _BOOL_OUTPUT:
            return [TensorProto.BOOL]
        if op_type in _INT64_OUTPUT:
            return [TensorProto.INT64]
        if op_type == "ConstantOfShape":
            return [attributes["value"].data_type]
        if (domain, op_type) == ("", "Unique"):  # the standard ONNX Unique: values, then three int64 outputs
            return [self.type_of(inputs[0])] + [TensorProto.INT64] * 3
        source = inputs[1] if op_type == "Where" else inputs[0]
        return [self.type_of(source)] * count

    # Small conveniences used by several rules.

    def cast(self, name: str, to: int, output: str | None = None) -> str:
        if self.type_of(name) == to and output is None:
            return name
        return self.op("Cast", [name], [output] if output else None, to=to)

    def int64s(self, values, hint: str = "shape") -> str:
        return self.const(np.asarray(values, np.int64).reshape(-1), hint=hint)

    def dims(self, source: str, start: int = 0, end: int | None = None, hint: str = "dims") -> str:
        """1-D int64 tensor of dims [start:end] of `source` (a constant when statically known)."""
        static = self.info.static_shape(source)
        if static is not None:
            return self.int64s(static[start:end], hint)
        attributes = {"start": start} if start else {}
        if end is not None:
            attributes["end"] = end
        return self.op("Shape", [source], hint=hint, **attributes)

    def dims_product(self, source: str, start: int = 0, end: int | None = None, hint: str = "count") -> str:
        """[prod(dims[start:end])] as a 1-element int64 tensor (1 for an empty range)."""
        static = self.info.static_shape(source)
        if static is not None:
            return self.int64s([int(np.prod(static[start:end], dtype=np.int64))], hint)
        return self.op("ReduceProd", [self.dims(source, start, end)], hint=hint, keepdims=1)

    def filled(self, shape: str, value, dtype, hint: str = "fill") -> str:
        """ConstantOfShape(shape) filled with `value` of `dtype`."""
        tensor = numpy_helper.from_array(np.array([value], dtype=dtype))
        return self.op("ConstantOfShape", [shape], hint=hint, value=tensor)
