"""The Unique unit's torch export (its `torch` piece): aten _unique2 / _unique / unique_dim (torch.unique)
-> Unique."""
from __future__ import annotations

from ._common import const, dialect, int64s, onnxscript_ops, parse_args


def _unique2(self, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False):
    op, ov, _ = onnxscript_ops()
    # torch sorts on every backend whatever `sorted` says (torch 2.13 CPU: unique(sorted=False) is
    # sorted), so sorted=1 reproduces torch; the dialect's first-occurrence order would not.
    values, _, inverse, counts = ov.Unique(self, sorted=1)
    # Outputs torch was not asked for are empty int64 tensors, as in torch.
    inverse = op.Reshape(inverse, op.Shape(self), allowzero=1) if return_inverse else int64s([])
    return values, inverse, counts if return_counts else int64s([])


def _unique(self, sorted: bool = True, return_inverse: bool = False):
    values, inverse, _ = _unique2(self, sorted, return_inverse, False)
    return values, inverse


def _unique_dim(self, dim: int, sorted: bool = True, return_inverse: bool = False,
                return_counts: bool = False):
    op, ov, _ = onnxscript_ops()
    # Unlike _unique2, torch's unique_dim returns inverse and counts whatever the flags say.
    values, _, inverse, counts = ov.Unique(self, op.Constant(value_int=dim), sorted=1)
    return values, inverse, counts


def translations(aten) -> dict:
    return {aten._unique2.default: _unique2, aten._unique.default: _unique, aten.unique_dim.default: _unique_dim}


def _ts_unique(g, self, axis, return_inverse, return_counts):
    import torch
    inputs = (self,) if axis is None else (self, const(g, axis))
    values, _, inverse, counts = g.op(dialect("Unique"), *inputs, sorted_i=1, outputs=4)
    rank = self.type().dim()
    if self.type().scalarType() is not None:
        values.setType(self.type().with_sizes([None] * (1 if axis is None or rank is None else rank)))
    long = torch._C.TensorType.get().with_dtype(torch.int64).with_sizes([None])
    inverse.setType(long)
    counts.setType(long)
    if axis is not None:  # torch's unique_dim returns inverse and counts whatever the flags say
        return values, inverse, counts
    empty = const(g, [])
    if return_inverse:
        inverse = g.op("Reshape", inverse, g.op("Shape", self), allowzero_i=1)
    return values, inverse if return_inverse else empty, counts if return_counts else empty


def _sym_unique2(g, self, sorted, return_inverse, return_counts):
    return _ts_unique(g, self, None, return_inverse, return_counts)  # sorted: ignored as torch does


def _sym_unique(g, self, sorted, return_inverse):
    values, inverse, _ = _ts_unique(g, self, None, return_inverse, False)
    return values, inverse


def _sym_unique_dim(g, self, dim, sorted, return_inverse, return_counts):
    return _ts_unique(g, self, dim, return_inverse, return_counts)


SYMBOLIC_NAMES = ("aten::_unique2", "aten::_unique", "aten::unique_dim")


def symbolics() -> dict:
    return {
        "aten::_unique2": parse_args("v", "b", "b", "b")(_sym_unique2),
        "aten::_unique": parse_args("v", "b", "b")(_sym_unique),
        "aten::unique_dim": parse_args("v", "i", "b", "b", "b")(_sym_unique_dim),
    }
