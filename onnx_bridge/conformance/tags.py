"""Tags a case gets from its inputs: what it exercises (for filtering with --only and for reading reports)."""
from __future__ import annotations

import numpy as np

import custom_ops

from custom_ops.element_types import is_float

TAGS = {
    "duplicates": "several updates reach one position (scatters: the unit's case_tags say so)",
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
    if indices is not None and indices.size and indices.dtype.kind == "i" and int(indices.min()) < 0:
        tags.add("negative-indices")
    unit = custom_ops.unit_of(case.op)
    if unit is not None and unit.case_tags is not None:
        tags |= set(unit.case_tags({k: v for k, v in case.inputs.items() if v is not None}, case.attributes))
    return frozenset(tags)
