"""The ScatterElementsUpdate unit's torch export (its `torch` piece): the torch scatter family, written once
for both exporters through a `Builder` (onnx_bridge.torch._builders). The rules map:

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

from typing import Optional

import numpy as np

from ..errors import OpError
from ._builders import Builder, onnx_type, refuse
from ._common import builder, ts

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


def reduction(reduce: str, table=REDUCTIONS, aten: str = "scatter_reduce") -> str:
    if reduce not in table:
        raise OpError("ScatterElementsUpdate", f"{aten} argument 'reduce'", "unknown reduction",
                      value=reduce, allowed=", ".join(table))
    return table[reduce]



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
        raise refuse(aten, "'indices' (torch does not implement it either)")
    given = lengths if not b.is_none(lengths) else offsets
    if b.is_none(given):
        raise refuse(aten, "neither 'lengths' nor 'offsets' is given")
    rank = b.known_rank(data, aten, "data")
    if b.known_rank(given, aten, "lengths/offsets") != 1 or axis % max(rank, 1) != 0:
        raise refuse(aten, "only 1-D lengths/offsets along axis 0 are supported "
                            f"(got rank {b.rank(given)}, axis {axis})")
    dtype = b.known_dtype(data, aten, "data")
    if dtype.kind != "f":
        raise refuse(aten, f"data of dtype {dtype} (torch implements floating point only)")
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
        counts = b.op("Cast", b.op("Reshape", lengths, b.ints([-1] + [1] * (rank - 1))), to=onnx_type(dtype))
        if initial is not None:
            counts = b.op("Max", counts, b.scalar(1, dtype))
        out = b.op("Div", out, counts)
    return out


def index_put(b: Builder, self, indices: list, values, accumulate: bool):
    """self[i0, i1, ...] = values (accumulate: +=) for integer index tensors covering the leading dims."""
    aten = "index_put"
    rank = b.known_rank(self, aten, "self")
    if not indices or len(indices) > rank:
        raise refuse(aten, f"{len(indices)} index tensors for a rank-{rank} tensor")
    for position, index in enumerate(indices):
        if b.is_none(index):
            raise refuse(aten, f"index {position} is None (a slice before an index tensor); "
                                "use the dynamo exporter (dynamo=True)")
        kind = b.known_dtype(index, aten, f"index {position}").kind
        if kind not in "iu":
            raise refuse(aten, f"index {position} is a {'boolean mask' if kind == 'b' else kind} tensor; "
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


# ---------------------------------------------------------------------------------------------- exporters
# dynamo path: onnxscript translations

def _scatter_reduce(self, dim: int, index, src, reduce: str, include_self: bool = True):
    return scatter_elements(builder(), self, dim, index, src, reduction(reduce), include_self)


def _index_reduce(self, dim: int, index, source, reduce: str, include_self: bool = True):
    return index_reduce(builder(), self, dim, index, source, reduce, include_self)


def _index_add(self, dim: int, index, source, alpha: float = 1):
    return index_add(builder(), self, dim, index, source, alpha)


def _scatter_reduce_old(self, dim: int, index, src, reduce: str):
    return scatter_reduce_old(builder(), self, dim, index, src, reduce)


def _scatter_value_reduce(self, dim: int, index, value: float, reduce: str):
    return scatter_value_reduce(builder(), self, dim, index, value, reduce)


def _scatter_add(self, dim: int, index, src):
    return scatter_elements(builder(), self, dim, index, src, "sum", True, "scatter_add")


def _segment_reduce(data, reduce: str, lengths=None,
                    indices=None, offsets=None,
                    axis: int = 0, unsafe: bool = False, initial: Optional[float] = None):
    return segment_reduce(builder(), data, reduce, lengths, indices, offsets, axis, initial)


def translations(aten) -> dict:
    """{aten overload: onnxscript function} of the dynamo exporter."""
    return {
        aten.scatter_reduce.two: _scatter_reduce,
        aten.index_reduce.default: _index_reduce,
        aten.index_add.default: _index_add,
        aten.scatter.reduce: _scatter_reduce_old,
        aten.scatter.value_reduce: _scatter_value_reduce,
        aten.scatter_add.default: _scatter_add,
        aten.segment_reduce.default: _segment_reduce,
    }


# TorchScript path: symbolic functions

def _sym_scatter_reduce(b, self, dim, index, src, reduce, include_self):
    return scatter_elements(b, self, dim, index, src, reduction(reduce), include_self)


def _sym_scatter(b, self, dim, index, src, reduce=None):
    """aten::scatter, all four overloads: (self, dim, index, src|value[, reduce])."""
    import torch
    if isinstance(src, torch._C.Value) and b.rank(src) == 0 and src.node().kind() == "onnx::Constant":
        # the .value overloads: a scalar spread over index's shape, in self's dtype
        dtype = b.known_dtype(self, "scatter", "self")
        src = b.op("Expand", b.op("Cast", src, to=onnx_type(dtype)), b.op("Shape", index))
    if reduce is None:
        return scatter_plain(b, self, dim, index, src)
    return scatter_reduce_old(b, self, dim, index, src, reduce)


def _sym_index_put(b, self, indices, values, accumulate):
    node = indices.node()
    if node.kind() != "prim::ListConstruct":
        raise refuse("index_put", "the index list is not a literal list; use the dynamo exporter")
    return index_put(b, self, list(node.inputs()), values, accumulate)


SYMBOLIC_NAMES = ("aten::scatter_reduce", "aten::index_reduce", "aten::index_add", "aten::scatter",
                  "aten::scatter_add", "aten::segment_reduce", "aten::index_put")


def symbolics() -> dict:
    """{aten name: symbolic function} of the TorchScript exporter (index_put too: dynamo's own is right,
    TorchScript's is not)."""
    return {
        "aten::scatter_reduce": ts(_sym_scatter_reduce, "i", "v", "v", "s", "b"),
        "aten::index_reduce": ts(index_reduce, "i", "v", "v", "s", "b"),
        "aten::index_add": ts(index_add, "i", "v", "v", "f"),
        "aten::scatter": ts(_sym_scatter, "i", "v", "v", "s"),
        "aten::scatter_add": ts(lambda b, self, dim, index, src: scatter_elements(
            b, self, dim, index, src, "sum", True, "scatter_add"), "i", "v", "v"),
        "aten::segment_reduce": ts(lambda b, data, reduce, lengths, indices, offsets, axis, unsafe, initial:
                                   segment_reduce(b, data, reduce, lengths, indices, offsets, axis, initial),
                                   "s", "v", "v", "v", "i", "none", "f", keep_type=False),
        "aten::index_put": ts(_sym_index_put, "v", "v", "b"),
    }
