"""The ScatterUpdate unit's torch export (its `torch` piece): aten index_copy -> ScatterUpdate."""
from __future__ import annotations

from ._common import const, dialect, int64s, onnxscript_ops, parse_args, rank, ts_rank


def _index_copy(self, dim: int, index, source):
    op, ov, _ = onnxscript_ops()
    self_rank = rank(self)
    flat = op.Constant(value_ints=[-1])
    if self_rank == 0:
        self, source = op.Reshape(self, flat), op.Reshape(source, flat)
    if index.shape is None or len(index.shape) != 1:
        index = op.Reshape(index, flat)  # 0-D index: one slice, which source carries as a dim of size 1
    out = ov.ScatterUpdate(self, index, source, op.Constant(value_int=dim % max(self_rank, 1)))
    return op.Reshape(out, int64s([])) if self_rank == 0 else out


def translations(aten) -> dict:
    return {aten.index_copy.default: _index_copy}


def _sym_index_copy(g, self, dim, index, source):
    self_rank = ts_rank(self, "index_copy", "self")
    flat = const(g, [-1])
    if self_rank == 0:
        self, source = g.op("Reshape", self, flat), g.op("Reshape", source, flat)
    if index.type().dim() != 1:
        index = g.op("Reshape", index, flat)
    out = g.op(dialect("ScatterUpdate"), self, index, source, const(g, dim % max(self_rank, 1)))
    if self_rank == 0:
        return g.op("Reshape", out, const(g, []))
    out.setType(self.type())
    return out


SYMBOLIC_NAMES = ("aten::index_copy",)


def symbolics() -> dict:
    return {"aten::index_copy": parse_args("v", "i", "v", "v")(_sym_index_copy)}
