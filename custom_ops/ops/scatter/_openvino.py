"""What the two scatter units share on the OpenVINO side: the inputs refused before OpenVINO's CPU plugin."""
from __future__ import annotations

import numpy as np

from custom_ops.errors import OpError


def refuse_crashing_inputs(op: str, named: dict) -> None:
    """Refuse the scatter inputs that crash the CPU plugin or corrupt its heap (measured, 2026.4):

    - ScatterElementsUpdate has no lower bound check: indices below -d give SIGSEGV, 'free(): invalid next
      size', 'double free or corruption' or a silent no-op.
    - An index OpenVINO does report (>= d, or negative for ScatterUpdate) leaves the heap corrupted: a
      later inference segfaulted (one CPU core: index 3 on size 3, any other model, then the same op).
    - Index values are read in 32 bits (2**32 -> 0, u32 2**32-1 -> -1).
    - ScatterElementsUpdate indices with a non-axis dimension larger than data's are written through the
      flattened offset, past the end of the output.
    - With one inference thread the CPU plugin skips its own checks (index range, updates shape) and returns
      empty outputs, after writing who knows where.
    So every index must be in the contract's range ([-d, d-1]; ScatterUpdate [0, d-1]) and the shapes fit.
    """
    elements = op == "ScatterElementsUpdate"
    data, indices, axis = (np.asarray(named[name]) for name in ("data", "indices", "axis"))
    if indices.size == 0 or indices.dtype.kind not in "iu":
        return  # nothing is written, or OpenVINO rejects the element type at build time
    axis_value = None
    if axis.dtype.kind in "iu" and axis.size and data.ndim and -data.ndim <= int(axis.reshape(-1)[0]) < data.ndim:
        axis_value = int(axis.reshape(-1)[0]) % data.ndim
    size = data.shape[axis_value] if axis_value is not None else min(data.shape, default=0)
    first = -size if elements else 0
    low, high = int(indices.min()), int(indices.max())
    if low < first or high > size - 1:
        raise OpError(op, "input 'indices'", "refused before OpenVINO: out-of-range indices crash its CPU plugin "
                      "or corrupt its heap", value=low if low < first else high,
                      allowed=f"[{first}, {size - 1}]")
    updates = np.asarray(named["updates"])
    if elements and updates.shape != indices.shape:
        raise OpError(op, "input 'updates'", "refused before OpenVINO: shape must equal indices' shape",
                      value=updates.shape, allowed=indices.shape)
    if not elements and axis_value is not None:
        expected = data.shape[:axis_value] + indices.shape + data.shape[axis_value + 1:]
        if updates.shape != expected:
            raise OpError(op, "input 'updates'", "refused before OpenVINO: shape must be data.shape[:axis] + "
                          "indices.shape + data.shape[axis+1:]", value=updates.shape, allowed=expected)
    if elements and indices.ndim == data.ndim and axis_value is not None:
        for dim, (have, limit) in enumerate(zip(indices.shape, data.shape)):
            if dim != axis_value and have > limit:
                raise OpError(op, "input 'indices'", f"refused before OpenVINO: dimension {dim} exceeds "
                              "data's and its CPU plugin writes through the flattened offset, past the "
                              "end of the output", value=indices.shape,
                              allowed=f"<= {data.shape} except on axis {axis_value}")


def same_shape_as_data(inputs: dict, attributes: dict) -> list:
    return [np.shape(inputs["data"])]
