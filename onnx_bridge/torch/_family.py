"""The torch scatter family, written once for both exporters.

Each rule below builds its ONNX subgraph through a `Builder`, which the dynamo path backs with onnxscript
(`DynamoBuilder`) and the TorchScript path with torch's graph context (`TorchScriptBuilder`). The rules map:

- index_reduce (prod, mean, amax, amin; include_self) and index_add (alpha): a 1-D index along `dim` is a
  ScatterElementsUpdate whose index is that vector broadcast to the source's shape;
- scatter(reduce="add"/"multiply"), scatter.value_reduce, scatter_add: ScatterElementsUpdate sum/prod with
  use_init_val=1;
- scatter_reduce: ScatterElementsUpdate (include_self is use_init_val; float amax/amin without self start at
  -inf/+inf, see `INFINITE_START`);
- segment_reduce (lengths or offsets, 1-D, axis 0; initial; empty segments): segment ids from the lengths,
  then a ScatterElementsUpdate into the segment rows (mean: a sum divided by the lengths, as torch);
- index_put with integer index tensors (TorchScript path only; dynamo's own is right): standard ScatterND,
  reduction "add" when accumulate=True.
"""
from __future__ import annotations

import numpy as np

from ..config import DOMAIN
from ..errors import ConversionError, OpError

#: torch's scatter_reduce / index_reduce reductions and the dialect's names for them.
REDUCTIONS = {"sum": "sum", "prod": "prod", "mean": "mean", "amax": "max", "amin": "min"}
#: scatter(..., reduce=...) (the older API): always includes self.
SCATTER_REDUCES = {"add": "sum", "multiply": "prod"}
#: torch.segment_reduce reductions: dialect reduction (mean is computed as sum / lengths) and the value of an
#: empty segment when no `initial` is given (torch: 0, 1, -inf, +inf; mean 0 / 0 = nan).
SEGMENT_REDUCES = {"sum": ("sum", 0.0), "prod": ("prod", 1.0), "max": ("max", -np.inf), "min": ("min", np.inf),
                   "mean": ("sum", 0.0)}

#: include_self=False max/min on floats: the dialect's use_init_val=0 starts touched slots at the lowest/highest
#: *finite* value (OpenVINO's neutral value), so a slot whose updates are all -inf (max) gets -FLT_MAX where
#: torch gives -inf (e.g. max-aggregation over fully masked messages). Exported instead as a "none" scatter of
#: -inf/+inf into the touched slots, then the reduction with use_init_val=1: torch's result on every input.
INFINITE_START = {"max": -np.inf, "min": np.inf}


def _refuse(aten: str, why: str) -> ConversionError:
    return ConversionError(f"onnx_bridge.torch: cannot export aten::{aten} exactly: {why}")


def reduction(reduce: str, table=REDUCTIONS, aten: str = "scatter_reduce") -> str:
    if reduce not in table:
        raise OpError("ScatterElementsUpdate", f"{aten} argument 'reduce'", "unknown reduction",
                      value=reduce, allowed=", ".join(table))
    return table[reduce]


class Builder:
    """What a rule needs from an exporter: emit standard and dialect nodes, constants, read ranks and dtypes."""

    exporter = ""

    def op(self, name: str, *inputs, **attributes):  # a standard ONNX node, one output
        raise NotImplementedError

    def ov(self, name: str, *inputs, **attributes):  # a dialect node, one output
        raise NotImplementedError

    def const(self, array) -> object:
        raise NotImplementedError

    def rank(self, value):  # int or None
        raise NotImplementedError

    def dtype(self, value):  # numpy dtype or None
        raise NotImplementedError

    def sizes(self, value):  # list of int/None, or None
        raise NotImplementedError

    def is_none(self, value) -> bool:
        return value is None

    # helpers shared by the rules
    def ints(self, values):
        return self.const(np.asarray(values, dtype=np.int64).reshape(-1))

    def scalar(self, value, dtype):
        return self.const(np.array(value, dtype=dtype))

    def known_rank(self, value, aten: str, what: str) -> int:
        rank = self.rank(value)
        if rank is None:
            raise _refuse(aten, f"the rank of {what} is unknown to the {self.exporter} exporter"
                          + ("; give static ranks or use the dynamo exporter (dynamo=True)"
                             if self.exporter == "TorchScript" else ""))
        return rank

    def known_dtype(self, value, aten: str, what: str):
        dtype = self.dtype(value)
        if dtype is None:
            raise _refuse(aten, f"the dtype of {what} is unknown to the {self.exporter} exporter"
                          + ("; use the dynamo exporter (dynamo=True)" if self.exporter == "TorchScript" else ""))
        return dtype


# ------------------------------------------------------------------------------------------------- rules

def scatter_elements(b: Builder, self, dim: int, index, src, reduce: str, include_self: bool,
                     aten: str = "scatter_reduce"):
    """torch scatter_reduce semantics (reduce already in the dialect's names)."""
    rank = b.known_rank(self, aten, "self")
    if rank == 0:  # torch allows 0-D self/index/src; the dialect needs an axis
        flat = b.ints([-1])
        self, index, src = b.op("Reshape", self, flat), b.op("Reshape", index, flat), b.op("Reshape", src, flat)
    else:
        src = _slice_like(b, src, index, rank)
    axis = b.scalar(dim % max(rank, 1), np.int64)
    dtype = b.known_dtype(self, aten, "self")
    if not include_self and reduce in INFINITE_START and dtype.kind == "f":
        start = b.op("Expand", b.scalar(INFINITE_START[reduce], dtype), b.op("Shape", index))
        self = b.ov("ScatterElementsUpdate", self, index, start, axis)
        include_self = True
    out = b.ov("ScatterElementsUpdate", self, index, src, axis, reduction=reduce, use_init_val=int(include_self))
    return b.op("Reshape", out, b.ints([])) if rank == 0 else out


def _slice_like(b: Builder, src, index, rank: int):
    """torch reads only the leading index.shape block of src; ONNX scatters want equal shapes."""
    index_sizes, src_sizes = b.sizes(index), b.sizes(src)
    if index_sizes is None or None in index_sizes or index_sizes != src_sizes:
        return b.op("Slice", src, b.ints([0] * rank), b.op("Shape", index))
    return src


def scatter_plain(b: Builder, self, dim: int, index, src):
    """scatter without reduce: standard ScatterElements (duplicate indices: torch leaves the winner undefined)."""
    rank = b.known_rank(self, "scatter", "self")
    if rank == 0:
        flat = b.ints([-1])
        out = scatter_plain(b, b.op("Reshape", self, flat), 0, b.op("Reshape", index, flat),
                            b.op("Reshape", src, flat))
        return b.op("Reshape", out, b.ints([]))
    return b.op("ScatterElements", self, index, _slice_like(b, src, index, rank), axis=dim % rank)


def _along(b: Builder, index, dim: int, rank: int, source):
    """A 1-D (or 0-D) index along `dim`, broadcast to the source's shape: scatter's index for index_*."""
    shape = [1] * rank
    shape[dim] = -1
    return b.op("Expand", b.op("Reshape", index, b.ints(shape)), b.op("Shape", source))


def index_reduce(b: Builder, self, dim: int, index, source, reduce: str, include_self: bool = True,
                 aten: str = "index_reduce"):
    reduce = reduction(reduce, aten=aten)
    rank = b.known_rank(self, aten, "self")
    if rank == 0:
        flat = b.ints([-1])
        out = index_reduce(b, b.op("Reshape", self, flat), 0, index, b.op("Reshape", source, flat),
                           next(k for k, v in REDUCTIONS.items() if v == reduce), include_self, aten)
        return b.op("Reshape", out, b.ints([]))
    dim %= rank  # torch checked that source has self's rank
    return scatter_elements(b, self, dim, _along(b, index, dim, rank, source), source, reduce, include_self, aten)


def index_add(b: Builder, self, dim: int, index, source, alpha=1):
    if alpha != 1:
        dtype = b.known_dtype(source, "index_add", "source")
        if dtype.kind in "iu" and float(alpha) != int(alpha):
            raise OpError("ScatterElementsUpdate", "index_add argument 'alpha'",
                          "must be an integer for integer tensors", value=alpha)
        source = b.op("Mul", source, b.scalar(alpha, dtype))
    return index_reduce(b, self, dim, index, source, "sum", True, "index_add")


def scatter_reduce_old(b: Builder, self, dim: int, index, src, reduce: str):
    """scatter(self, dim, index, src, reduce="add"/"multiply"): self included, like scatter_reduce."""
    return scatter_elements(b, self, dim, index, src, reduction(reduce, SCATTER_REDUCES, "scatter"), True,
                            "scatter")


def scatter_value_reduce(b: Builder, self, dim: int, index, value, reduce: str):
    dtype = b.known_dtype(self, "scatter", "self")
    src = b.op("Expand", b.scalar(value, dtype), b.op("Shape", index))
    return scatter_elements(b, self, dim, index, src, reduction(reduce, SCATTER_REDUCES, "scatter"), True,
                            "scatter")


def segment_reduce(b: Builder, data, reduce: str, lengths=None, indices=None, offsets=None, axis: int = 0,
                   initial=None):
    aten = "segment_reduce"
    reduce_to, empty = reduction(reduce, SEGMENT_REDUCES, aten)
    if not b.is_none(indices):
        raise _refuse(aten, "'indices' (torch does not implement it either)")
    given = lengths if not b.is_none(lengths) else offsets
    if b.is_none(given):
        raise _refuse(aten, "neither 'lengths' nor 'offsets' is given")
    rank = b.known_rank(data, aten, "data")
    if b.known_rank(given, aten, "lengths/offsets") != 1 or axis % max(rank, 1) != 0:
        raise _refuse(aten, "only 1-D lengths/offsets along axis 0 are supported "
                            f"(got rank {b.rank(given)}, axis {axis})")
    dtype = b.known_dtype(data, aten, "data")
    if dtype.kind != "f":
        raise _refuse(aten, f"data of dtype {dtype} (torch implements floating point only)")
    given = b.op("Cast", given, to=7)  # int64
    if b.is_none(lengths):  # offsets: lengths are the differences
        lengths = b.op("Sub", b.op("Slice", given, b.ints([1]), b.ints([np.iinfo(np.int64).max])),
                       b.op("Slice", given, b.ints([0]), b.ints([-1])))
    else:
        lengths = given
    # segment id of row i = how many segment ends are <= i
    ends = b.op("CumSum", lengths, b.scalar(0, np.int64))
    rows = b.op("Range", b.scalar(0, np.int64), b.op("Squeeze", b.op("Slice", b.op("Shape", data), b.ints([0]),
                                                                     b.ints([1])), b.ints([0])),
                b.scalar(1, np.int64))
    below = b.op("Cast", b.op("LessOrEqual", b.op("Unsqueeze", ends, b.ints([0])),
                              b.op("Unsqueeze", rows, b.ints([1]))), to=7)
    ids = b.op("ReduceSum", below, b.ints([1]), keepdims=0)
    index = _along(b, ids, 0, rank, data)
    out_shape = b.op("Concat", b.op("Shape", lengths),
                     b.op("Slice", b.op("Shape", data), b.ints([1]), b.ints([np.iinfo(np.int64).max])), axis=0)
    start = empty if initial is None else initial
    base = b.op("Expand", b.scalar(start, dtype), out_shape)
    out = b.ov("ScatterElementsUpdate", base, index, data, b.scalar(0, np.int64), reduction=reduce_to,
               use_init_val=1)
    if reduce == "mean":  # torch: (initial + sum) / length; an empty segment is 0 / 0 = nan, or initial
        counts = b.op("Cast", b.op("Reshape", lengths, b.ints([-1] + [1] * (rank - 1))), to=_onnx_type(dtype))
        if initial is not None:
            counts = b.op("Max", counts, b.scalar(1, dtype))
        out = b.op("Div", out, counts)
    return out


def index_put(b: Builder, self, indices: list, values, accumulate: bool):
    """self[i0, i1, ...] = values (accumulate: +=) for integer index tensors covering the leading dims."""
    aten = "index_put"
    rank = b.known_rank(self, aten, "self")
    if not indices or len(indices) > rank:
        raise _refuse(aten, f"{len(indices)} index tensors for a rank-{rank} tensor")
    for position, index in enumerate(indices):
        if b.is_none(index):
            raise _refuse(aten, f"index {position} is None (a slice before an index tensor); "
                                "use the dynamo exporter (dynamo=True)")
        kind = b.known_dtype(index, aten, f"index {position}").kind
        if kind not in "iu":
            raise _refuse(aten, f"index {position} is a {'boolean mask' if kind == 'b' else kind} tensor; "
                                "use the dynamo exporter (dynamo=True)")
    shape = b.op("Shape", self)
    broadcast = indices[0]
    for index in indices[1:]:
        broadcast = b.op("Add", broadcast, index)
    broadcast_shape = b.op("Shape", broadcast)
    columns = []
    for position, index in enumerate(indices):
        index = b.op("Cast", b.op("Expand", index, broadcast_shape), to=7)
        size = b.op("Slice", shape, b.ints([position]), b.ints([position + 1]))
        index = b.op("Where", b.op("Less", index, b.scalar(0, np.int64)), b.op("Add", index, size), index)
        columns.append(b.op("Unsqueeze", index, b.ints([-1])))
    nd_index = columns[0] if len(columns) == 1 else b.op("Concat", *columns, axis=-1)
    values_shape = b.op("Concat", broadcast_shape,
                        b.op("Slice", shape, b.ints([len(indices)]), b.ints([np.iinfo(np.int64).max])), axis=0)
    values = b.op("Expand", values, values_shape)
    if accumulate:
        return b.op("ScatterND", self, nd_index, values, reduction="add")
    return b.op("ScatterND", self, nd_index, values)


_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
               "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13}


def _onnx_type(dtype) -> int:
    return _ONNX_TYPES[np.dtype(dtype).name]


# ------------------------------------------------------------------------------------------------ builders

class DynamoBuilder(Builder):
    exporter = "dynamo"

    def __init__(self, op, ov, ir):
        self._op, self._ov, self._ir = op, ov, ir

    #: ops whose output has the dtype of their first input (onnxscript leaves it unset while tracing)
    SAME_DTYPE = frozenset({"Reshape", "Slice", "Expand", "Mul", "Add", "Sub", "Div", "Max", "Where"})

    def op(self, name, *inputs, **attributes):
        out = getattr(self._op, name)(*inputs, **attributes)
        source = inputs[1] if name == "Where" else inputs[0] if inputs else None
        if name in self.SAME_DTYPE and out.dtype is None and getattr(source, "dtype", None) is not None:
            out.dtype = source.dtype
        return out

    def ov(self, name, *inputs, **attributes):
        return getattr(self._ov, name)(*inputs, **attributes)

    def const(self, array):
        return self._op.Constant(value=self._ir.tensor(np.asarray(array)))

    def rank(self, value):
        return None if value.shape is None else len(value.shape)

    def dtype(self, value):
        return None if value.dtype is None else np.dtype(value.dtype.numpy())

    def sizes(self, value):
        if value.shape is None:
            return None
        return [d if isinstance(d, int) else None for d in value.shape]


#: TorchScript scalar type names -> numpy dtypes (what Value.type().scalarType() returns).
_TS_DTYPES = {"Float": np.float32, "Double": np.float64, "Half": np.float16, "Int": np.int32, "Long": np.int64,
              "Short": np.int16, "Char": np.int8, "Byte": np.uint8, "Bool": np.bool_}


class TorchScriptBuilder(Builder):
    """torch's GraphContext `g`; reads types through the public methods of torch._C.Value/Type only."""

    exporter = "TorchScript"

    def __init__(self, g):
        self.g = g

    @staticmethod
    def _attribute(name, value):
        if isinstance(value, bool) or isinstance(value, (int, np.integer)):
            return f"{name}_i", int(value)
        if isinstance(value, float):
            return f"{name}_f", value
        if isinstance(value, str):
            return f"{name}_s", value
        if isinstance(value, (list, tuple)):
            return f"{name}_is", [int(v) for v in value]
        raise TypeError(f"attribute {name}={value!r}")

    def op(self, name, *inputs, **attributes):
        return self.g.op(name, *inputs, **dict(self._attribute(k, v) for k, v in attributes.items()))

    def ov(self, name, *inputs, **attributes):
        return self.op(f"{DOMAIN}::{name}", *inputs, **attributes)

    def const(self, array):
        import torch
        return self.g.op("Constant", value_t=torch.from_numpy(np.array(array)))

    def is_none(self, value) -> bool:
        return value is None or value.node().mustBeNone()

    def rank(self, value):
        try:
            return value.type().dim()
        except (AttributeError, RuntimeError):
            return None

    def dtype(self, value):
        try:
            name = value.type().scalarType()
        except (AttributeError, RuntimeError):
            return None
        return None if name not in _TS_DTYPES else np.dtype(_TS_DTYPES[name])

    def sizes(self, value):
        try:
            sizes = value.type().varyingSizes()
        except (AttributeError, RuntimeError):
            return None
        return None if sizes is None else list(sizes)
