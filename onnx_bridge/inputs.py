"""Random feeds for a model (`onnx-bridge run` and `compare` without --inputs): every symbolic or unknown
dimension gets one size (dim_size, or its own by name in `dims`); floats are standard normal, bools fair coin
flips; integers are indices in [0, bound), bound the smallest extent of an axis they index, followed through
Cast/Unsqueeze/Reshape/Expand/... into Gather, GatherElements, ScatterElements and the dialect ops whose unit
declares its `index_input` (ONNX shape inference with data propagation gives the extents); dim_size when no
such use is found."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from custom_ops import units
from custom_ops.element_types import ONNX_TO_NUMPY
from onnx_bridge.config import DOMAIN
from onnx_bridge.errors import ModelError

DEFAULT_DIM_SIZE = 4

# Consumers through which an integer input stays "the same indices" (port 0 only, except Gather's data).
_PASS_THROUGH = {"Cast", "Identity", "Unsqueeze", "Squeeze", "Reshape", "Expand", "Flatten", "Transpose",
                 "Tile", "Concat", "Slice", "Split", "Gather", "GatherElements"}
# (domain, op_type) -> (index port, data port, how to find the axis); the dialect's from the units.
_INDEX_PORTS = {
    ("", "Gather"): (1, 0, "attribute"), ("", "GatherElements"): (1, 0, "attribute"),
    ("", "ScatterElements"): (1, 0, "attribute"), ("", "Scatter"): (1, 0, "attribute"),
    **{(DOMAIN, unit.op_type): (unit.index_input[0], unit.index_input[1], f"input {unit.index_input[2]}")
       for unit in units() if unit.index_input is not None},
}


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """Inputs that need a feed (initializers with the same name are optional inputs with defaults)."""
    initialized = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initialized]


def _concrete_shape(value: onnx.ValueInfoProto, dim_size: int, dims: dict) -> tuple[int, ...]:
    tensor_type = value.type.tensor_type
    if not tensor_type.HasField("shape"):
        raise ModelError(f"input {value.name!r} has no declared rank; give it with --inputs")
    shape = []
    for dim in tensor_type.shape.dim:
        if dim.HasField("dim_value"):
            shape.append(dim.dim_value)
        else:
            shape.append(dims.get(dim.dim_param, dim_size))
    return tuple(shape)


def random_inputs(model: onnx.ModelProto, *, seed: int = 0, dim_size: int = DEFAULT_DIM_SIZE,
                  dims: dict | None = None) -> dict[str, np.ndarray]:
    """Random feeds for every input of `model` (see the module docstring for the rules)."""
    dims = dims or {}
    rng = np.random.default_rng(seed)
    shapes = {v.name: _concrete_shape(v, dim_size, dims) for v in graph_inputs(model)}
    bounds = index_bounds(model, shapes)
    feeds = {}
    for value in graph_inputs(model):
        code = value.type.tensor_type.elem_type
        dtype = ONNX_TO_NUMPY.get(code)
        shape = shapes[value.name]
        if dtype is None:
            raise ModelError(f"input {value.name!r}: cannot generate element type "
                             f"{TensorProto.DataType.Name(code)}; give it with --inputs")
        if dtype == np.bool_:
            feeds[value.name] = rng.integers(0, 2, shape).astype(bool)
        elif dtype == object:   # tensor(string)
            letters = [bytes(rng.integers(97, 123, int(rng.integers(0, 9)), dtype=np.uint8)).decode()
                       for _ in range(int(np.prod(shape, dtype=np.int64)))]
            feeds[value.name] = np.array(letters + [""], dtype=object)[:-1].reshape(shape)
        elif dtype.kind in "iu":
            bound = bounds.get(value.name, dim_size)
            feeds[value.name] = rng.integers(0, max(bound, 1), shape).astype(dtype)
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def index_bounds(model: onnx.ModelProto, shapes: dict) -> dict[str, int]:
    """For each integer input used as indices: the smallest extent of the axes it indexes."""
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    for value in fixed.graph.input:
        if value.name in shapes:
            value.type.tensor_type.ClearField("shape")
            for extent in shapes[value.name]:
                value.type.tensor_type.shape.dim.add().dim_value = extent
    from custom_ops.schemas import register_schemas
    register_schemas()
    try:
        fixed = onnx.shape_inference.infer_shapes(fixed, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError):  # fewer inferred bounds
        pass
    known = dict(shapes)
    for value in list(fixed.graph.value_info) + list(fixed.graph.output):
        if value.type.tensor_type.HasField("shape"):
            dims = value.type.tensor_type.shape.dim
            if all(d.HasField("dim_value") for d in dims):
                known[value.name] = tuple(d.dim_value for d in dims)
    constants = {t.name: numpy_helper.to_array(t) for t in fixed.graph.initializer}
    consumers: dict[str, list] = {}
    for node in fixed.graph.node:
        for port, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, port))

    def bound_of(start: str) -> int | None:
        found, seen, frontier = [], {start}, [start]
        while frontier:
            name = frontier.pop()
            for node, port in consumers.get(name, []):
                key = (node.domain if node.domain != "ai.onnx" else "", node.op_type)
                if key in _INDEX_PORTS and port == _INDEX_PORTS[key][0]:
                    extent = _indexed_extent(node, _INDEX_PORTS[key], known, constants)
                    if extent is not None:
                        found.append(extent)
                elif node.op_type in _PASS_THROUGH and not node.domain and (
                        port == 0 or node.op_type == "Concat"):
                    for out in node.output:
                        if out and out not in seen:
                            seen.add(out)
                            frontier.append(out)
        return min(found) if found else None

    bounds = {}
    for value in graph_inputs(model):
        dtype = ONNX_TO_NUMPY.get(value.type.tensor_type.elem_type)
        if dtype is not None and dtype.kind in "iu":
            bound = bound_of(value.name)
            if bound is not None:
                bounds[value.name] = bound
    return bounds


def _indexed_extent(node, ports, known: dict, constants: dict) -> int | None:
    _, data_port, axis_from = ports
    shape = known.get(node.input[data_port])
    if shape is None:
        return None
    if axis_from == "attribute":
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    else:
        index = int(axis_from.split()[1])
        if len(node.input) <= index or node.input[index] not in constants:
            return None
        axis = int(constants[node.input[index]].reshape(-1)[0])
    if not -len(shape) <= axis < len(shape):
        return None
    return shape[axis]
