"""The ReduceL2 unit's torch export (its `torch` piece): aten linalg_vector_norm with ord=2 -> ReduceL2 (other
orders keep torch's own translation, or standard ONNX on the TorchScript path)."""
from __future__ import annotations

from typing import Optional, Sequence

from ._builders import onnx_type
from ._common import const, dialect, int64s, onnxscript_ops, parse_args, rank, torch_dtype, ts_rank


def _axes(dim, rank: int) -> list[int]:
    """Axes of linalg_vector_norm: torch reduces everything when dim is None or empty; the dialect's
    empty axes reduce nothing, so spell the axes out. A 0-D input has no axis to name (|x| either way)."""
    if rank == 0:
        return []
    if dim is None or len(dim) == 0:
        return list(range(rank))
    return [int(d) for d in dim]


def _vector_norm(self, ord: float = 2.0, dim: Optional[Sequence[int]] = None, keepdim: bool = False,
                 dtype: int = -1):
    op, ov, _ = onnxscript_ops()
    if ord != 2:
        from onnxscript.function_libs.torch_lib.ops.linalg import aten_linalg_vector_norm
        return aten_linalg_vector_norm(self, ord, dim, keepdim, -1 if dtype is None else dtype)
    axes = int64s(_axes(dim, rank(self)))
    if dtype is not None and dtype != -1:
        self = op.Cast(self, to=dtype)
    return ov.ReduceL2(self, axes, keep_dims=int(keepdim))


def translations(aten) -> dict:
    return {aten.linalg_vector_norm.default: _vector_norm}


def _sym_vector_norm(g, self, ord, dim, keepdim, dtype):
    import torch
    axes = _axes(dim, ts_rank(self, "linalg_vector_norm", "the input"))
    if dtype is not None:
        self = g.op("Cast", self, to_i=onnx_type(torch.empty(0, dtype=torch_dtype(dtype)).numpy().dtype))
    if ord == 2:
        return g.op(dialect("ReduceL2"), self, const(g, axes), keep_dims_i=int(keepdim))
    # Other orders in standard ONNX, as torch's own symbolic computes them.
    axes_const, magnitude = const(g, axes), g.op("Abs", self)
    if ord == float("inf"):
        return g.op("ReduceMax", magnitude, axes_const, keepdims_i=int(keepdim))
    if ord == float("-inf"):
        return g.op("ReduceMin", magnitude, axes_const, keepdims_i=int(keepdim))
    if ord == 0:
        nonzero = g.op("CastLike", g.op("Not", g.op("Equal", self, g.op("CastLike", const(g, 0), self))), self)
        return g.op("ReduceSum", nonzero, axes_const, keepdims_i=int(keepdim))
    if ord == 1:
        return g.op("ReduceL1", self, axes_const, keepdims_i=int(keepdim))
    power = g.op("CastLike", const(g, float(ord), torch.float64), self)
    total = g.op("ReduceSum", g.op("Pow", magnitude, power), axes_const, keepdims_i=int(keepdim))
    return g.op("Pow", total, g.op("Div", g.op("CastLike", const(g, 1.0, torch.float64), self), power))


SYMBOLIC_NAMES = ("aten::linalg_vector_norm",)


def symbolics() -> dict:
    return {"aten::linalg_vector_norm": parse_args("v", "f", "is", "b", "i")(_sym_vector_norm)}
