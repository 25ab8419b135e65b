"""Shared by the raising rules."""
from __future__ import annotations

import numpy as np
import onnx

from custom_ops.element_types import DATA_TYPES, type_name

from ..rules import Keep, RuleContext


def dialect_type(ctx: RuleContext, node: onnx.NodeProto, index: int = 0, port: str = "data"):
    """numpy dtype of a data input the dialect can carry, or Keep."""
    name = node.input[index] if index < len(node.input) else ""
    code = ctx.info.elem_type(name) if name else None
    if not code:
        return Keep(f"element type of input '{port}' ({name!r}) is unknown; give the model typed "
                    f"inputs/value_info")
    dtype = ctx.info.dtype(name)
    if dtype is None or dtype not in DATA_TYPES:
        label = type_name(dtype) if dtype is not None else onnx.TensorProto.DataType.Name(code).lower()
        return Keep(f"type {label} has no counterpart in the dialect")
    return np.dtype(dtype)
