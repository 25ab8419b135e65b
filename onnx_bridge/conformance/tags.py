"""Tags a case gets from its inputs: what it exercises (for filtering with --only and for reading reports)."""
from __future__ import annotations

import numpy as np

from custom_ops._types import is_float

TAGS = {
    "duplicates": "several updates reach one position (scatters)",
    "negative-indices": "index values below 0 (counted from the end)",
    "nan": "NaN in a float input",
    "neg-zero": "-0.0 in a float input",
    "inf": "an infinity in a float input",
    "empty": "a tensor input with no elements",
    "scalar": "a 0-D data (or indices) input",
    "invalid": "an input the contract rejects (every backend should reject it too)",
}


def _floats(case) -> list[np.ndarray]:
    return [v for k, v in case.inputs.items() if v is not None and k in ("data", "updates") and is_float(v.dtype)]


def auto_tags(case) -> frozenset:
    if case.is_model:
        return frozenset()
    tags = set()
    floats = [v.astype(np.float64) for v in _floats(case)]
    if any(np.isnan(v).any() for v in floats):
        tags.add("nan")
    if any((np.signbit(v) & (v == 0)).any() for v in floats):
        tags.add("neg-zero")
    if any(np.isinf(v).any() for v in floats):
        tags.add("inf")
    tensors = [case.inputs.get(k) for k in ("data", "indices", "updates")]
    if any(t is not None and t.size == 0 for t in tensors):
        tags.add("empty")
    if case.data is not None and case.data.ndim == 0 or \
            case.inputs.get("indices") is not None and case.inputs["indices"].ndim == 0:
        tags.add("scalar")
    indices = case.inputs.get("indices")
    if indices is not None and indices.size:
        if indices.dtype.kind == "i" and int(indices.min()) < 0:
            tags.add("negative-indices")
        if _has_duplicates(case):
            tags.add("duplicates")
    return frozenset(tags)


def _has_duplicates(case) -> bool:
    indices = case.inputs["indices"]
    if case.op == "ScatterUpdate":
        flat = indices.reshape(-1)
        return np.unique(flat).size < flat.size
    data, axis = case.data, case.inputs.get("axis")
    try:
        from custom_ops.ops.scatter.scatter_elements_update import target_positions
        a = int(np.asarray(axis).reshape(-1)[0]) % data.ndim
        positions = target_positions(data.shape, indices, a).reshape(-1)
    except Exception:  # noqa: BLE001  (invalid shapes: the contract reports them; no tag needed)
        return False
    return np.unique(positions).size < positions.size
