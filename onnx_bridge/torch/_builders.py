"""What a torch export rule needs from an exporter, written once for both: a `Builder` emits standard and
dialect nodes and constants and reads ranks and dtypes; the dynamo path backs it with onnxscript
(`DynamoBuilder`), the TorchScript path with torch's graph context (`TorchScriptBuilder`)."""
from __future__ import annotations

import numpy as np

from ..config import DOMAIN
from ..errors import ConversionError


def refuse(aten: str, why: str) -> ConversionError:
    return ConversionError(f"onnx_bridge.torch: cannot export aten::{aten} exactly: {why}")


class Builder:
    """What a rule needs from an exporter: emit standard and dialect nodes, constants, read ranks and dtypes."""

    exporter = ""

    def op(self, name: str, *inputs, **attributes):  # a standard ONNX node, one output
        raise NotImplementedError

    def ov(self, name: str, *inputs, **attributes):  # a dialect node, one output
        raise NotImplementedError

    def const(self, array) -> object:
        raise NotImplementedError

    def rank(self, value):  # int or None
        raise NotImplementedError

    def dtype(self, value):  # numpy dtype or None
        raise NotImplementedError

    def sizes(self, value):  # list of int/None, or None
        raise NotImplementedError

    def is_none(self, value) -> bool:
        return value is None

    # helpers shared by the rules
    def ints(self, values):
        return self.const(np.asarray(values, dtype=np.int64).reshape(-1))

    def scalar(self, value, dtype):
        return self.const(np.array(value, dtype=dtype))

    def known_rank(self, value, aten: str, what: str) -> int:
        rank = self.rank(value)
        if rank is None:
            raise refuse(aten, f"the rank of {what} is unknown to the {self.exporter} exporter"
                          + ("; give static ranks or use the dynamo exporter (dynamo=True)"
                             if self.exporter == "TorchScript" else ""))
        return rank

    def known_dtype(self, value, aten: str, what: str):
        dtype = self.dtype(value)
        if dtype is None:
            raise refuse(aten, f"the dtype of {what} is unknown to the {self.exporter} exporter"
                          + ("; use the dynamo exporter (dynamo=True)" if self.exporter == "TorchScript" else ""))
        return dtype


_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
               "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13}


def onnx_type(dtype) -> int:
    return _ONNX_TYPES[np.dtype(dtype).name]


# ------------------------------------------------------------------------------------------------ builders

class DynamoBuilder(Builder):
    exporter = "dynamo"

    def __init__(self, op, ov, ir):
        self._op, self._ov, self._ir = op, ov, ir

    #: ops whose output has the dtype of their first input (onnxscript leaves it unset while tracing)
    SAME_DTYPE = frozenset({"Reshape", "Slice", "Expand", "Mul", "Add", "Sub", "Div", "Max", "Where"})

    def op(self, name, *inputs, **attributes):
        out = getattr(self._op, name)(*inputs, **attributes)
        source = inputs[1] if name == "Where" else inputs[0] if inputs else None
        if name in self.SAME_DTYPE and out.dtype is None and getattr(source, "dtype", None) is not None:
            out.dtype = source.dtype
        return out

    def ov(self, name, *inputs, **attributes):
        return getattr(self._ov, name)(*inputs, **attributes)

    def const(self, array):
        return self._op.Constant(value=self._ir.tensor(np.asarray(array)))

    def rank(self, value):
        return None if value.shape is None else len(value.shape)

    def dtype(self, value):
        return None if value.dtype is None else np.dtype(value.dtype.numpy())

    def sizes(self, value):
        if value.shape is None:
            return None
        return [d if isinstance(d, int) else None for d in value.shape]


#: TorchScript scalar type names -> numpy dtypes (what Value.type().scalarType() returns).
_TS_DTYPES = {"Float": np.float32, "Double": np.float64, "Half": np.float16, "Int": np.int32, "Long": np.int64,
              "Short": np.int16, "Char": np.int8, "Byte": np.uint8, "Bool": np.bool_}


class TorchScriptBuilder(Builder):
    """torch's GraphContext `g`; reads types through the public methods of torch._C.Value/Type only."""

    exporter = "TorchScript"

    def __init__(self, g):
        self.g = g

    @staticmethod
    def _attribute(name, value):
        if isinstance(value, bool) or isinstance(value, (int, np.integer)):
            return f"{name}_i", int(value)
        if isinstance(value, float):
            return f"{name}_f", value
        if isinstance(value, str):
            return f"{name}_s", value
        if isinstance(value, (list, tuple)):
            return f"{name}_is", [int(v) for v in value]
        raise TypeError(f"attribute {name}={value!r}")

    def op(self, name, *inputs, **attributes):
        return self.g.op(name, *inputs, **dict(self._attribute(k, v) for k, v in attributes.items()))

    def ov(self, name, *inputs, **attributes):
        return self.op(f"{DOMAIN}::{name}", *inputs, **attributes)

    def const(self, array):
        import torch
        return self.g.op("Constant", value_t=torch.from_numpy(np.array(array)))

    def is_none(self, value) -> bool:
        return value is None or value.node().mustBeNone()

    def rank(self, value):
        try:
            return value.type().dim()
        except (AttributeError, RuntimeError):
            return None

    def dtype(self, value):
        try:
            name = value.type().scalarType()
        except (AttributeError, RuntimeError):
            return None
        return None if name not in _TS_DTYPES else np.dtype(_TS_DTYPES[name])

    def sizes(self, value):
        try:
            sizes = value.type().varyingSizes()
        except (AttributeError, RuntimeError):
            return None
        return None if sizes is None else list(sizes)
