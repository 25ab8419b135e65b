"""ScatterUpdate-3 (OpenVINO): replace whole slices of data along `axis` at the given indices.

data[..., indices[m, ..., p], ...] = updates[..., m, ..., p, ...]; index values in [0, d-1]; the last
duplicate wins.
"""
from __future__ import annotations

import numpy as np

from .errors import OpError

from . import _checks as check
from ._spec import OpSpec, Port, register
from ._types import DATA_TYPES

OP = "ScatterUpdate"
_LOOP_SLICE_BYTES = 64 * 1024  # per-slice copies beat a gather + scatter from about this size


def validate(data, indices, updates, axis):
    data, indices, updates = (check.as_array(OP, n, v) for n, v in
                              (("data", data), ("indices", indices), ("updates", updates)))
    check.data_type(OP, "data", data)
    check.integer_type(OP, "indices", indices)
    if updates.dtype != data.dtype:
        raise OpError(OP, "input 'updates'", "element type must equal data's", value=str(updates.dtype),
                      allowed=str(data.dtype))
    if data.ndim == 0:
        raise OpError(OP, "input 'data'", "must have rank >= 1", value=data.shape, allowed="rank >= 1")
    axis = check.scalar_axis(OP, axis, data.ndim)
    expected = data.shape[:axis] + indices.shape + data.shape[axis + 1:]
    if updates.shape != expected:
        raise OpError(OP, "input 'updates'", "shape must be data.shape[:axis] + indices.shape + "
                      "data.shape[axis+1:]", value=updates.shape, allowed=expected)
    check.index_range(OP, "indices", indices, data.shape[axis], allow_negative=False, axis=axis)
    return data, indices, updates, axis


def scatter_update(data, indices, updates, axis, *, inplace=False):
    data, indices, updates, axis = validate(data, indices, updates, axis)
    out = data if inplace and data.flags.writeable else data.copy()
    if indices.size == 0:
        return out
    flat_indices = indices.reshape(-1).astype(np.intp)
    # Keep only the last occurrence of each index: unique over the reversed sequence.
    targets, first_in_reversed = np.unique(flat_indices[::-1], return_index=True)
    sources = flat_indices.size - 1 - first_in_reversed
    slices = updates.reshape(data.shape[:axis] + (flat_indices.size,) + data.shape[axis + 1:])
    if slices.nbytes // flat_indices.size >= _LOOP_SLICE_BYTES:
        # Big slices: copy each winning slice once, straight from updates (a fancy-index gather would
        # first copy them all into a temporary).
        lead = (slice(None),) * axis
        for target, source in zip(targets.tolist(), sources.tolist()):
            out[lead + (target,)] = slices[lead + (source,)]
        return out
    if targets.size != flat_indices.size:
        slices = np.take(slices, sources, axis=axis)
    else:
        targets = flat_indices
    out[(slice(None),) * axis + (targets,)] = slices
    return out


def _kernel_v3(data, indices, updates, axis, *, inplace=False):
    return (scatter_update(data, indices, updates, axis, inplace=inplace),)


register(OpSpec(OP, 3,
                (Port("data", "T"), Port("indices", "T_IND"), Port("updates", "T"), Port("axis", "T_AXIS")),
                (Port("output", "T"),), (),
                {"T": DATA_TYPES, "T_IND": check.INTEGER_TYPES, "T_AXIS": check.INTEGER_TYPES},
                _kernel_v3, doc="Replace slices of data along axis; indices in [0, d-1]; last wins."))
