"""PyTorch (CPU) where it has an equivalent of the op:

- ScatterElementsUpdate: Tensor.scatter (reduction none) / Tensor.scatter_reduce(reduce=sum|prod|amin|amax|
  mean, include_self=use_init_val), indices as int64.
- ScatterUpdate: Tensor.index_copy along axis with the indices flattened (updates reshaped to match).
- ReduceL2: torch.linalg.vector_norm(ord=2, dim=axes, keepdim=keep_dims); empty axes have no equivalent
  (dim=() reduces every dimension).
- Unique: torch.unique(sorted, return_inverse, return_counts, dim=axis); torch has no first-indices output:
  they are the minimum position of each inverse group.
Where torch differs (negative indices, integer norms, NaN, unsorted order), onnx_bridge.divergences says so.
Errors torch raises for an element type ("... not implemented for 'UInt16'") are reported as unsupported.
"""
from __future__ import annotations

import numpy as np

from custom_ops.element_types import BFLOAT16

from ..cases import Case
from . import Unsupported, has_module

_REDUCE = {"sum": "sum", "prod": "prod", "min": "amin", "max": "amax", "mean": "mean"}


class TorchAdapter:
    name = "torch"
    title = "PyTorch CPU: scatter / scatter_reduce, index_copy, linalg.vector_norm, unique"
    runs_models = False

    def __init__(self):
        import torch
        torch.set_num_threads(1)
        self.torch = torch

    @staticmethod
    def missing() -> str | None:
        return None if has_module("torch") else "torch is not installed (pip install 'onnx-bridge[torch]')"

    def run(self, case: Case) -> tuple:
        if case.is_model:
            raise Unsupported("a whole ONNX model: torch runs torch code, not ONNX graphs")
        run = getattr(self, f"_{case.op}", None)
        if run is None:
            raise Unsupported(f"torch: no counterpart of {case.op} here")
        try:
            return run(case)
        except RuntimeError as exc:
            if "not implemented for" in str(exc):
                raise Unsupported(f"torch: {str(exc).splitlines()[0]}") from None
            raise

    # -- conversions -------------------------------------------------------------------------------
    def _tensor(self, array: np.ndarray):
        torch = self.torch
        if array.dtype == BFLOAT16:
            return torch.from_numpy(array.astype(np.float32)).to(torch.bfloat16)  # exact
        return torch.from_numpy(np.ascontiguousarray(array).copy())

    def _array(self, tensor, dtype) -> np.ndarray:
        if tensor.dtype == self.torch.bfloat16:
            return tensor.to(self.torch.float32).numpy().astype(BFLOAT16)
        return tensor.numpy().astype(dtype, copy=False)

    def _axis(self, case: Case, port: str = "axis") -> int:
        axis = np.asarray(case.inputs[port])
        if axis.size != 1:
            raise Unsupported(f"{port} of shape {list(axis.shape)}: torch takes one int dim")
        return int(axis.reshape(()))

    # -- ops ---------------------------------------------------------------------------------------
    def _ScatterElementsUpdate(self, case: Case) -> tuple:
        data, indices, updates = case.inputs["data"], case.inputs["indices"], case.inputs["updates"]
        axis = self._axis(case)
        d, i, u = self._tensor(data), self.torch.from_numpy(indices.astype(np.int64)), self._tensor(updates)
        reduction = case.attributes["reduction"]
        if reduction == "none":
            out = d.scatter(axis, i, u)
        else:
            out = d.scatter_reduce(axis, i, u, _REDUCE[reduction],
                                   include_self=bool(case.attributes["use_init_val"]))
        return (self._array(out, data.dtype),)

    def _ScatterUpdate(self, case: Case) -> tuple:
        data, indices, updates = case.inputs["data"], case.inputs["indices"], case.inputs["updates"]
        axis = self._axis(case)
        if data.ndim:
            axis %= data.ndim
        flat = indices.astype(np.int64).reshape(-1)
        shape = data.shape[:axis] + (flat.size,) + data.shape[axis + 1:]
        if updates.size != int(np.prod(shape)):
            raise ValueError(f"updates {list(updates.shape)} do not hold {list(shape)} elements")
        out = self._tensor(data).index_copy(axis, self.torch.from_numpy(flat),
                                            self._tensor(updates.reshape(shape)))
        return (self._array(out, data.dtype),)

    def _ReduceL2(self, case: Case) -> tuple:
        data = case.inputs["data"]
        axes = [int(a) for a in np.asarray(case.inputs["axes"]).reshape(-1)]
        if not axes:
            raise Unsupported("empty axes: vector_norm with dim=() reduces every dimension, the dialect none")
        out = self.torch.linalg.vector_norm(self._tensor(data), 2, dim=tuple(axes),
                                            keepdim=bool(case.attributes["keep_dims"]))
        return (self._array(out, data.dtype),)

    def _Unique(self, case: Case) -> tuple:
        torch = self.torch
        data = case.inputs["data"]
        axis = self._axis(case) if case.inputs.get("axis") is not None else None
        values, inverse, counts = torch.unique(self._tensor(data), sorted=bool(case.attributes["sorted"]),
                                               return_inverse=True, return_counts=True, dim=axis)
        inverse = inverse.reshape(-1)
        positions = torch.arange(inverse.numel(), dtype=torch.int64)
        first = torch.full((counts.numel(),), inverse.numel(), dtype=torch.int64)
        first = first.scatter_reduce(0, inverse, positions, "amin")
        index_type = np.int32 if case.attributes["index_element_type"] == "i32" else np.int64
        count_type = np.int32 if case.attributes["count_element_type"] == "i32" else np.int64
        return (self._array(values, data.dtype), first.numpy().astype(index_type),
                inverse.numpy().astype(index_type), counts.numpy().astype(count_type))
