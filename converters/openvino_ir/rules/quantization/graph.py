"""What the QDQ passes share: GraphIndex (the lookups over the ONNX nodes and initializers, rebuilt only after
an edit, reading again only the nodes it changed), _NodeEdits (node-list edits made in one go), _Graph (those
lookups with the values to keep), _Weights / _weight_chain (nncf's decompression chain of a weight), and the
small helpers that follow a value to its QuantizeLinear or DequantizeLinear."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ....model_io import word_transposable


NUMPY_CODES = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8,
               np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}


#: ONNX ops whose weight input onnxruntime's QDQ fusions take from a DequantizeLinear
_WEIGHTED = {"Conv": 1, "ConvTranspose": 1, "MatMul": 1, "Gemm": 1}


class GraphIndex:
    """_index's lookups over ONNX `nodes` and `initializers` ((name, ONNX type, array) list), shared by the
    qdq passes of one import: reading the protobuf fields is the cost (2-4 ms per CNN), so they are built
    on first use and rebuilt only after a pass that edited the graph says so (edited()), from the inputs and
    outputs read before for the nodes the pass did not change. A pass reads one snapshot throughout and calls
    edited() when done."""

    def __init__(self, nodes: list, initializers: list):
        self.nodes, self.initializers, self._lookups = nodes, initializers, None
        self._outer_reads = None
        self._read: dict = {}  # id(node) -> (node, inputs, outputs) as last read (the node kept: ids stay unique)

    def outer_reads(self) -> set:
        """_outer_reads of the nodes, found once: the passes neither edit subgraphs nor add nodes with one
        (scanning every attribute of every node is 1-3 ms of a CNN's import)."""
        if self._outer_reads is None:
            self._outer_reads = _outer_reads(self.nodes)
        return self._outer_reads

    def lookups(self) -> tuple[dict, dict, dict]:
        """(constants by name, producer of each value, readers of each value), current as of the last edit."""
        if self._lookups is None:
            self._lookups = _index(self.nodes, self.initializers, self._read)
        return self._lookups

    def edited(self, changed: bool = True, rewired=None) -> None:
        """The graph changed (when `changed`): the next lookups() rebuilds, reading the inputs and outputs of
        the nodes in `rewired` again (those already in the graph whose inputs or outputs the pass changed:
        new nodes are read anyway, removed ones left out), or of every node when `rewired` is None."""
        if not changed:
            return
        self._lookups = None
        if rewired is None:
            self._read = {}
        else:
            for node in rewired:
                self._read.pop(id(node), None)


def _index(nodes: list, initializers: list, read: dict | None = None) -> tuple[dict, dict, dict]:
    """The graph's constants by name, the node producing each value and the nodes reading it. `read`
    (GraphIndex's {id(node): (node, inputs, outputs)}) serves the fields of the nodes it holds and is given
    those of the others: reading the fields is most of a rebuild."""
    values = {name: array for name, _, array in initializers}
    read = {} if read is None else read
    producer: dict = {}
    readers: dict[str, list] = {}
    for n in nodes:
        fields = read.get(id(n))
        if fields is None:
            # (a slice of a repeated field is one list made in protobuf's C code, where iterating the field
            # makes a call per name)
            fields = read[id(n)] = (n, n.input[:], n.output[:])
        for out in fields[2]:
            producer[out] = n
        for name in fields[1]:  # (get / append rather than setdefault: 0.6x the time)
            found = readers.get(name)
            if found is None:
                readers[name] = [n]
            else:
                found.append(n)
    return values, producer, readers


def _outer_reads(nodes: list) -> set:
    """Names read by the subgraphs (If branches, Loop bodies) of `nodes`: values the rewrites must keep."""
    found = set()
    pending = [a for n in nodes for a in n.attribute]
    while pending:
        attribute = pending.pop()
        for graph in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
            for node in graph.node:
                found.update(node.input)
                pending.extend(node.attribute)
    return found


class _Graph:
    """Lookups over a GraphIndex's nodes and initializers that the rewrites share, with the values to keep."""

    def __init__(self, index: GraphIndex, keep: set, release=None):
        self.nodes, self.initializers, self.keep, self.release = index.nodes, index.initializers, keep, release
        self.index = index
        self.values, self.producer, self.readers = index.lookups()

    def only_reader(self, name: str):
        found = self.readers.get(name, [])
        return found[0] if len(found) == 1 and name not in self.keep else None

    def integer_constant(self, name: str):
        cast = self.producer.get(name)
        if cast is None or cast.op_type != "Cast" or cast.attribute[0].i != TensorProto.FLOAT:
            return None
        array = self.values.get(cast.input[0])
        return array if array is not None and array.dtype in (np.int8, np.uint8) else None

    def add(self, name: str, array: np.ndarray) -> str:
        """_append, the array also one of the lookups' values; where it is a contiguous copy of a constant (a new
        layout), the constant's memory-mapped pages are released (the rewritten model no longer reads them). A
        MatMul's large int8 weights read transposed stay a view (model_io writes them block by block)."""
        if not word_transposable(array):
            source, array = array, np.ascontiguousarray(array)
            if self.release is not None and array is not source and source.size == array.size:
                while isinstance(source.base, np.ndarray):  # the constant's own array (e.g. under a transpose)
                    source = source.base
                if source.size == array.size:
                    self.release(source)
        self.values[name] = array
        return _append(self.initializers, name, array)


def _append(initializers: list, name: str, array: np.ndarray) -> str:
    """Add `array` as initializer `name` (the passes' (name, ONNX type, array) list), C-contiguous but for a
    MatMul's large int8 weights read transposed (model_io writes those block by block); returns the name."""
    layout = array if word_transposable(array) else np.ascontiguousarray(array)
    initializers.append((name, NUMPY_CODES[array.dtype], layout))
    return name


class _NodeEdits:
    """Edits of a node list collected during a pass and made in one go (apply): each list.index / insert /
    remove on the list scans it comparing protobuf messages (~0.1 ms a rewrite on a CNN's few hundred nodes).
    Nodes are named by identity; a node is replaced at most once."""

    def __init__(self):
        self.replaced, self.dead, self.rewired = {}, set(), []

    def replace(self, node, nodes: list) -> None:
        """`node` becomes `nodes` (which may hold `node` itself: an insertion before or after it)."""
        self.replaced[id(node)] = nodes

    def remove(self, *nodes) -> None:
        self.dead.update(id(n) for n in nodes)

    def rewire(self, *nodes) -> None:
        """`nodes` (staying in the graph) had their inputs or outputs changed: for GraphIndex.edited."""
        self.rewired.extend(nodes)

    def apply(self, nodes: list) -> bool:
        """Make the edits in `nodes` (in place); whether there were any."""
        if not (self.replaced or self.dead):
            return False
        replaced, dead = self.replaced, self.dead
        nodes[:] = [m for n in nodes if id(n) not in dead for m in replaced.get(id(n), (n,))]
        return True

    def made_in(self, index: GraphIndex) -> bool:
        """apply to `index`'s nodes, and tell it (edited) with the nodes rewired; whether there were edits."""
        changed = self.apply(index.nodes)
        index.edited(changed, self.rewired)
        return changed


class _Weights:
    """nncf's decompression chain Cast(q) [- Cast(zero point)] * scale [-> Transpose/Reshape] of a weight:
    the integer values, scale and zero point in the weight's final shape, and the nodes of the chain."""

    def __init__(self, mul, q, scale, zero, tail, reader, value):
        self.mul, self.q, self.scale, self.zero, self.tail, self.reader, self.value = \
            mul, q, scale, zero, tail, reader, value

    def per_axis(self):
        """((scales, zero points, axis or None) when both vary along one axis at most, else None."""
        scale_axis, zero_axis = _per_axis(np.asarray(self.scale)), _per_axis(np.asarray(self.zero))
        if scale_axis is None or zero_axis is None:
            return None
        (scales, axis), (zeros, z_axis) = scale_axis, zero_axis
        if z_axis is not None and z_axis != axis:
            return None
        if axis is not None and zeros.size == 1:
            zeros = np.broadcast_to(zeros, scales.shape)
        if axis is None:
            scales, zeros = scales.reshape(()), zeros.reshape(())
        return scales, zeros, axis


def _weight_chain(graph: _Graph, mul) -> _Weights | None:
    """The decompression chain ending in `mul` and read as the weight of a Conv/MatMul/Gemm, else None."""
    from onnx import helper

    for side in (0, 1):
        scale = graph.values.get(mul.input[1 - side])
        source = graph.producer.get(mul.input[side])
        if scale is None or scale.dtype != np.float32 or source is None:
            continue
        zero = None
        if source.op_type == "Sub":
            q = graph.integer_constant(source.input[0])
            zero = graph.integer_constant(source.input[1])
            if zero is None or q is None or zero.dtype != q.dtype:
                continue
        else:
            q = graph.integer_constant(mul.input[side])
        if q is None or scale.ndim > q.ndim:
            continue
        try:
            full_scale = np.broadcast_to(scale, q.shape)
            full_zero = np.broadcast_to(zero if zero is not None else np.zeros((), q.dtype), q.shape)
        except ValueError:
            continue
        # follow Transpose / constant-shape Reshape to the weight input of a Conv/MatMul/Gemm
        value, tail, q_full = mul.output[0], [], np.asarray(q)
        reader = graph.only_reader(value)
        while reader is not None and reader.op_type in ("Transpose", "Reshape"):
            if reader.op_type == "Transpose":
                perm = list(helper.get_attribute_value(reader.attribute[0]))
                q_full, full_scale, full_zero = (a.transpose(perm) for a in (q_full, full_scale, full_zero))
            else:
                shape = graph.values.get(reader.input[1])
                if shape is None or any(a.name == "allowzero" and a.i for a in reader.attribute) \
                        or 0 in shape.tolist():
                    break
                q_full, full_scale, full_zero = (a.reshape(shape) for a in (q_full, full_scale, full_zero))
            tail.append(reader)
            value, reader = reader.output[0], graph.only_reader(reader.output[0])
        if reader is None or value not in reader.input \
                or _WEIGHTED.get(reader.op_type) != list(reader.input).index(value):
            continue
        return _Weights(mul, q_full, full_scale, full_zero, tail, reader, value)
    return None


def _per_axis(full: np.ndarray) -> tuple[np.ndarray, int | None] | None:
    """(values, axis) when `full` varies along one axis at most (axis None: one value), else None.

    `full` is typically a scale broadcast to the weight's shape (np.broadcast_to, then transposed or
    reshaped): an axis of stride 0 repeats one value, so only the others are compared, on the array
    without the repeats (the scale's own size, no full-size temporary)."""
    repeated = [d for d in range(full.ndim) if full.strides[d] == 0 or full.shape[d] <= 1]
    small = full[tuple(slice(0, 1) if d in repeated else slice(None) for d in range(full.ndim))]
    if small.dtype.kind == "f" and np.isnan(small).any():  # NaN != NaN: every axis compared as it is
        repeated, small = [d for d in range(full.ndim) if full.shape[d] <= 1], full
    varying = [d for d in range(full.ndim) if d not in repeated
               and not np.all(small == small.take([0], axis=d))]
    if len(varying) > 1:
        return None
    if not varying:
        return small.reshape(-1)[:1], None
    index = [0] * full.ndim
    index[varying[0]] = slice(None)
    return full[tuple(index)], varying[0]


def _dequantize_node(inputs: list, output: str, name: str, axis):
    from onnx import helper

    return helper.make_node("DequantizeLinear", inputs, [output], name=name,
                            **({} if axis is None else {"axis": int(axis)}))


def _quantized_after(conv, readers: dict, values: dict) -> bool:
    """Whether `conv`'s output reaches a QuantizeLinear through at most a bias Add and then Relu / Clip (ReLU6)
    nodes, each the only reader of the one before: the path onnxruntime's WeightBiasQuantization and QDQ Conv
    fusion take (QLinearConv once the bias is in the Conv; a Relu or a Clip the quantized range lies within is
    absorbed by the QuantizeLinear). Float weights on such a path onnxruntime re-quantizes per tensor."""
    return _path_to_quantize(conv, readers, values) is not None


def _path_to_quantize(conv, readers: dict, values: dict) -> list | None:
    """The nodes of _quantized_after's path from `conv` to its QuantizeLinear (the last of them), else None."""
    path, name = [], conv.output[0]
    while True:
        found = readers.get(name, [])
        if len(found) != 1:
            return None
        node = found[0]
        path.append(node)
        if node.op_type == "QuantizeLinear":
            return path
        bias = len(path) == 1 and node.op_type == "Add" and any(i in values for i in node.input)
        if not bias and node.op_type not in ("Relu", "Clip"):
            return None
        if node.op_type == "Clip" and any(i and i not in values for i in node.input[1:]):
            return None
        name = node.output[0]


#: ops onnxruntime's QDQ propagation moves a DequantizeLinear across (they only select or move values, so the
#: integer data gives the same result): a Conv after DequantizeLinear -> MaxPool reads quantized data too
_DATA_MOVEMENT = ("MaxPool", "Reshape", "Transpose", "Squeeze", "Unsqueeze")


def _dequantized_input(name: str, producer: dict):
    """The DequantizeLinear whose output reaches `name` through data movement only (_DATA_MOVEMENT), or None."""
    node = producer.get(name)
    while node is not None and node.op_type in _DATA_MOVEMENT and len(node.output) == 1:
        node = producer.get(node.input[0])
    return node if node is not None and node.op_type == "DequantizeLinear" else None


#: reductions whose output rank _rank derives (axes as a constant input, keepdims 0)
_REDUCE = ("ReduceMean", "ReduceMax")


def _rank(name: str, producer: dict, values: dict) -> int | None:
    """Rank of ONNX value `name` when the nodes before it tell (a Reshape to a shape of known length), else
    None."""
    for _ in range(8):
        node = producer.get(name)
        if node is None:
            return None
        if node.op_type == "Reshape":
            return _length(node.input[1], producer, values)
        if node.op_type in ("Conv", "MaxPool") and any(a.name == "strides" for a in node.attribute):
            return 2 + len(next(a.ints for a in node.attribute if a.name == "strides"))
        if node.op_type in _REDUCE and len(node.input) > 1 and node.input[1] in values \
                and any(a.name == "keepdims" and a.i == 0 for a in node.attribute):
            rank = _rank(node.input[0], producer, values)  # a global pool written as a mean: [N, C]
            return None if rank is None else rank - int(values[node.input[1]].size)
        if node.op_type not in ("QuantizeLinear", "DequantizeLinear", "Relu", "Clip"):
            return None
        name = node.input[0]
    return None


def _length(name: str, producer: dict, values: dict) -> int | None:
    """Number of elements of a 1-D shape tensor made of constants, Gathers at constant indices and their
    Concat (a flatten's computed shape [batch, -1]), else None."""
    if name in values:
        return int(values[name].size)
    node = producer.get(name)
    if node is not None and node.op_type == "Gather" and node.input[1] in values:
        return int(values[node.input[1]].size)
    if node is not None and node.op_type == "Concat":
        lengths = [_length(i, producer, values) for i in node.input]
        return None if None in lengths else sum(lengths)
    return None


def _static_shapes(inputs) -> dict:
    """{name: shape} of the ValueInfoProtos in `inputs` whose dimensions are all known."""
    shapes = {}
    for value in inputs:
        dims = value.type.tensor_type.shape.dim if value.type.tensor_type.HasField("shape") else None
        if dims is not None and all(d.HasField("dim_value") for d in dims):
            shapes[value.name] = tuple(d.dim_value for d in dims)
    return shapes


def _static_shape(name: str, producer: dict, values: dict, shapes: dict, depth: int = 0):
    """The shape of `name` when it is a graph input of static shape in `shapes`, or reaches one through
    arithmetic with constants that do not broadcast it further (a mean / scale preprocessing), else None."""
    if name in shapes:
        return tuple(shapes[name])
    node = producer.get(name)
    if depth > 8 or node is None or node.op_type not in ("Sub", "Add", "Mul", "Div") or len(node.input) != 2:
        return None
    data = [i for i in node.input if i not in values]
    if len(data) != 1:
        return None
    shape = _static_shape(data[0], producer, values, shapes, depth + 1)
    constant = values[node.input[1] if node.input[0] == data[0] else node.input[0]]
    try:
        return shape if shape is not None and np.broadcast_shapes(shape, constant.shape) == shape else None
    except ValueError:
        return None


def _group(conv) -> int:
    return next((a.i for a in conv.attribute if a.name == "group"), 1)
