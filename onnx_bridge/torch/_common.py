"""What the units' torch export modules share: the dialect ops as onnxscript ops (dynamo path), a Builder on
either exporter, constants, ranks, and the TorchScript symbolic wrapper. Imports torch only when called."""
from __future__ import annotations

import functools
import inspect

import numpy as np
import onnx

from ..config import DIALECT_OPSET, DOMAIN
from ..errors import BridgeError, ConversionError
from ._builders import DynamoBuilder, TorchScriptBuilder


class MissingDependencyError(BridgeError, ImportError):
    """torch or onnxscript is not installed."""


def exported_ops() -> list[str]:
    """The dialect ops with a torch export (units whose `torch` piece is present)."""
    from custom_ops import units
    from custom_ops.unit import present
    return [unit.op_type for unit in units() if present(unit.torch)]


# --------------------------------------------------------------------------------------------------
# dynamo path: onnxscript

@functools.cache
def onnxscript_ops():
    """(op, ov, ir): the standard opset, the dialect ops, onnx_ir. Registers the dialect schemas."""
    try:
        import onnxscript
        from onnxscript import opset18 as op
        from onnxscript.values import Op, Opset
    except ImportError as exc:
        raise MissingDependencyError("the dynamo export path needs onnxscript: "
                                     "pip install 'onnx-bridge[torch]'") from exc
    from custom_ops.schemas import register_schemas

    register_schemas()
    opset = Opset(DOMAIN, DIALECT_OPSET)

    def dialect_op(name: str):
        # The exporter imports a custom domain at the since_version of the first node it meets, so a
        # graph starting with an op of an older version would import that version and make the newer ops
        # invalid. Each op therefore carries a copy of its schema stamped with the dialect opset.
        schema = onnx.defs.get_schema(name, DIALECT_OPSET, DOMAIN)
        stamped = onnx.defs.OpSchema(
            schema.name, schema.domain, DIALECT_OPSET, schema.doc,
            inputs=list(schema.inputs), outputs=list(schema.outputs),
            type_constraints=[(t.type_param_str, list(t.allowed_type_strs), t.description)
                              for t in schema.type_constraints],
            attributes=list(schema.attributes.values()))
        return Op(opset, name, stamped)

    ov = type("DialectOps", (), {name: dialect_op(name) for name in exported_ops()})
    return op, ov, onnxscript.ir


def rank(value) -> int:
    if value.shape is None:
        raise BridgeError(f"onnx_bridge.torch: the rank of {value.name!r} is unknown at export time")
    return len(value.shape)


def int64s(values: list[int]):
    """A 1-D int64 Constant (a tensor attribute: an empty value_ints list has an ambiguous type)."""
    op, _, ir = onnxscript_ops()
    return op.Constant(value=ir.tensor(np.asarray(values, dtype=np.int64).reshape(-1)))


def builder() -> DynamoBuilder:
    return DynamoBuilder(*onnxscript_ops())


# --------------------------------------------------------------------------------------------------
# TorchScript path: symbolic functions

def parse_args(*descriptors):
    """torch.onnx.symbolic_helper.parse_args (public; the module is deprecated with the TorchScript exporter).

    Applied when the symbolics are registered, so importing onnx_bridge.torch never needs it.
    """
    try:
        from torch.onnx.symbolic_helper import parse_args as torch_parse_args
    except ImportError as exc:  # pragma: no cover - a torch without the TorchScript exporter
        raise ConversionError("this torch has no TorchScript exporter (torch.onnx.symbolic_helper.parse_args); "
                              "use the dynamo exporter (dynamo=True)") from exc
    return torch_parse_args(*descriptors)


def ts(function, *descriptors, keep_type: bool = True):
    """A symbolic function from a Builder rule: parses the constant arguments, builds through the graph
    context, and gives the output self's type (same dtype and shape) so later symbolics can read it."""

    def symbolic(g, self, *args):
        out = function(TorchScriptBuilder(g), self, *args)
        if keep_type and self.type().scalarType() is not None:
            out.setType(self.type())
        return out

    symbolic.__name__ = getattr(function, "__name__", "symbolic")
    # parse_args pairs descriptors with the parameter names it reads from the signature: spell them out.
    names = ["g", "self"] + [f"arg{i}" for i in range(len(descriptors))]
    symbolic.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names])
    return parse_args("v", *descriptors)(symbolic)


def const(g, value, dtype=None):
    import torch
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype or torch.int64))


def dialect(name: str) -> str:
    return f"{DOMAIN}::{name}"


def ts_rank(value, aten: str, what: str) -> int:
    return TorchScriptBuilder(None).known_rank(value, aten, what)


def torch_dtype(number: int):
    """torch ScalarType number (as a traced dtype= argument carries it) -> torch dtype."""
    import torch
    return {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 5: torch.float16,
            6: torch.float32, 7: torch.float64, 11: torch.bool}[number]
