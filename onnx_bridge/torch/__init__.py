"""PyTorch -> ONNX export through the OpenVINO dialect: scatter_reduce that matches torch.

torch.onnx exports ``Tensor.scatter_reduce`` with ``reduce="mean"`` as a *silently wrong* ScatterElements
(reduction "none") on the dynamo path and refuses it, and ``include_self=False``, on the TorchScript path.
The dialect's ScatterElementsUpdate-12 has torch's semantics (``include_self`` is ``use_init_val``; sum, prod,
mean, amax, amin are sum, prod, mean, max, min; integer mean floors), so exporting to it is exact.

- ``translation_table()``: for ``torch.onnx.export(..., dynamo=True, custom_translation_table=...)``.
- ``register_symbolics()``: for ``torch.onnx.export(..., dynamo=False, custom_opsets={DOMAIN: 12})``.
- ``export(module, args, path)``: either exporter, then lowering to standard ONNX where that is exact.

Exported ops: aten scatter_reduce.two -> ScatterElementsUpdate, index_copy -> ScatterUpdate, _unique2 /
_unique / unique_dim (torch.unique) -> Unique, linalg_vector_norm with ord=2 -> ReduceL2 (other ords keep
torch's own translation). Models with dialect nodes run in onnx_bridge.InferenceSession.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import io
import warnings
from collections import Counter
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import onnx

from converters.model_io import save_model, set_opset
from ..config import DIALECT_OPSET, DOMAIN, IR_VERSION
from ..errors import BridgeError, ConversionError, OpError


class MissingDependencyError(BridgeError, ImportError):
    """torch or onnxscript is not installed."""


try:
    import torch
except ImportError as _exc:  # pragma: no cover - exercised only without torch
    raise MissingDependencyError("onnx_bridge.torch needs torch: pip install 'onnx-bridge[torch]'") from _exc

__all__ = ["translation_table", "register_symbolics", "unregister_symbolics", "export", "ExportReport",
           "REDUCTIONS", "MissingDependencyError"]

from . import _family
from ._family import INFINITE_START as _INFINITE_START, REDUCTIONS  # noqa: F401 (public REDUCTIONS)


def _reduction(reduce: str) -> str:
    return _family.reduction(reduce)


def _axes(dim, rank: int) -> list[int]:
    """Axes of linalg_vector_norm: torch reduces everything when dim is None or empty; the dialect's
    empty axes reduce nothing, so spell the axes out. A 0-D input has no axis to name (|x| either way)."""
    if rank == 0:
        return []
    if dim is None or len(dim) == 0:
        return list(range(rank))
    return [int(d) for d in dim]


# --------------------------------------------------------------------------------------------------
# dynamo path: onnxscript translations (torch.onnx.export(..., dynamo=True, custom_translation_table=...))

@functools.cache
def _onnxscript():
    """(op, ov, ir): the standard opset, the dialect ops, onnx_ir. Registers the dialect schemas."""
    try:
        import onnxscript
        from onnxscript import opset18 as op
        from onnxscript.values import Op, Opset
    except ImportError as exc:
        raise MissingDependencyError("the dynamo export path needs onnxscript: "
                                     "pip install 'onnx-bridge[torch]'") from exc
    from custom_ops._schemas import register_schemas

    register_schemas()
    opset = Opset(DOMAIN, DIALECT_OPSET)

    def dialect_op(name: str):
        # The exporter imports a custom domain at the since_version of the first node it meets, so a
        # graph starting with ScatterUpdate (since 3) would import version 3 and make Unique invalid.
        # Each op therefore carries a copy of its schema stamped with the dialect opset.
        schema = onnx.defs.get_schema(name, DIALECT_OPSET, DOMAIN)
        stamped = onnx.defs.OpSchema(
            schema.name, schema.domain, DIALECT_OPSET, schema.doc,
            inputs=list(schema.inputs), outputs=list(schema.outputs),
            type_constraints=[(t.type_param_str, list(t.allowed_type_strs), t.description)
                              for t in schema.type_constraints],
            attributes=list(schema.attributes.values()))
        return Op(opset, name, stamped)

    ov = type("DialectOps", (), {name: dialect_op(name) for name in
                                 ("ScatterElementsUpdate", "ScatterUpdate", "ReduceL2", "Unique")})
    return op, ov, onnxscript.ir


def _rank(value) -> int:
    if value.shape is None:
        raise BridgeError(f"onnx_bridge.torch: the rank of {value.name!r} is unknown at export time")
    return len(value.shape)


def _int64s(values: list[int]):
    """A 1-D int64 Constant (a tensor attribute: an empty value_ints list has an ambiguous type)."""
    op, _, ir = _onnxscript()
    return op.Constant(value=ir.tensor(np.asarray(values, dtype=np.int64).reshape(-1)))


def _builder():
    return _family.DynamoBuilder(*_onnxscript())


def _scatter_reduce(self, dim: int, index, src, reduce: str, include_self: bool = True):
    return _family.scatter_elements(_builder(), self, dim, index, src, _reduction(reduce), include_self)


def _index_reduce(self, dim: int, index, source, reduce: str, include_self: bool = True):
    return _family.index_reduce(_builder(), self, dim, index, source, reduce, include_self)


def _index_add(self, dim: int, index, source, alpha: float = 1):
    return _family.index_add(_builder(), self, dim, index, source, alpha)


def _scatter_reduce_old(self, dim: int, index, src, reduce: str):
    return _family.scatter_reduce_old(_builder(), self, dim, index, src, reduce)


def _scatter_value_reduce(self, dim: int, index, value: float, reduce: str):
    return _family.scatter_value_reduce(_builder(), self, dim, index, value, reduce)


def _scatter_add(self, dim: int, index, src):
    return _family.scatter_elements(_builder(), self, dim, index, src, "sum", True, "scatter_add")


def _segment_reduce(data, reduce: str, lengths=None,
                    indices=None, offsets=None,
                    axis: int = 0, unsafe: bool = False, initial: Optional[float] = None):
    return _family.segment_reduce(_builder(), data, reduce, lengths, indices, offsets, axis, initial)


def _index_copy(self, dim: int, index, source):
    op, ov, _ = _onnxscript()
    rank = _rank(self)
    flat = op.Constant(value_ints=[-1])
    if rank == 0:
        self, source = op.Reshape(self, flat), op.Reshape(source, flat)
    if index.shape is None or len(index.shape) != 1:
        index = op.Reshape(index, flat)  # 0-D index: one slice, which source carries as a dim of size 1
    out = ov.ScatterUpdate(self, index, source, op.Constant(value_int=dim % max(rank, 1)))
    return op.Reshape(out, _int64s([])) if rank == 0 else out


def _unique2(self, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False):
    op, ov, _ = _onnxscript()
    # torch sorts on every backend whatever `sorted` says (torch 2.13 CPU: unique(sorted=False) is
    # sorted), so sorted=1 reproduces torch; the dialect's first-occurrence order would not.
    values, _, inverse, counts = ov.Unique(self, sorted=1)
    # Outputs torch was not asked for are empty int64 tensors, as in torch.
    inverse = op.Reshape(inverse, op.Shape(self), allowzero=1) if return_inverse else _int64s([])
    return values, inverse, counts if return_counts else _int64s([])


def _unique(self, sorted: bool = True, return_inverse: bool = False):
    values, inverse, _ = _unique2(self, sorted, return_inverse, False)
    return values, inverse


def _unique_dim(self, dim: int, sorted: bool = True, return_inverse: bool = False,
                return_counts: bool = False):
    op, ov, _ = _onnxscript()
    # Unlike _unique2, torch's unique_dim returns inverse and counts whatever the flags say.
    values, _, inverse, counts = ov.Unique(self, op.Constant(value_int=dim), sorted=1)
    return values, inverse, counts


def _vector_norm(self, ord: float = 2.0, dim: Optional[Sequence[int]] = None, keepdim: bool = False,
                 dtype: int = -1):
    op, ov, _ = _onnxscript()
    if ord != 2:
        from onnxscript.function_libs.torch_lib.ops.linalg import aten_linalg_vector_norm
        return aten_linalg_vector_norm(self, ord, dim, keepdim, -1 if dtype is None else dtype)
    axes = _int64s(_axes(dim, _rank(self)))
    if dtype is not None and dtype != -1:
        self = op.Cast(self, to=dtype)
    return ov.ReduceL2(self, axes, keep_dims=int(keepdim))


def translation_table() -> dict:
    """{aten overload: onnxscript function} for torch.onnx.export(..., custom_translation_table=...).

    Also registers the dialect's ONNX schemas (onnx.checker validates the exported model).
    """
    _onnxscript()
    aten = torch.ops.aten
    return {
        aten.scatter_reduce.two: _scatter_reduce,
        aten.index_copy.default: _index_copy,
        aten._unique2.default: _unique2,
        aten._unique.default: _unique,
        aten.unique_dim.default: _unique_dim,
        aten.linalg_vector_norm.default: _vector_norm,
        aten.index_reduce.default: _index_reduce,
        aten.index_add.default: _index_add,
        aten.scatter.reduce: _scatter_reduce_old,
        aten.scatter.value_reduce: _scatter_value_reduce,
        aten.scatter_add.default: _scatter_add,
        aten.segment_reduce.default: _segment_reduce,
    }


# --------------------------------------------------------------------------------------------------
# TorchScript path: symbolic functions (torch.onnx.export(..., dynamo=False, custom_opsets={DOMAIN: 12}))

def _parse_args(*descriptors):
    """torch.onnx.symbolic_helper.parse_args (public; the module is deprecated with the TorchScript exporter).

    Applied when the symbolics are registered, so importing onnx_bridge.torch never needs it.
    """
    try:
        from torch.onnx.symbolic_helper import parse_args
    except ImportError as exc:  # pragma: no cover - a torch without the TorchScript exporter
        raise ConversionError("this torch has no TorchScript exporter (torch.onnx.symbolic_helper.parse_args); "
                              "use the dynamo exporter (dynamo=True)") from exc
    return parse_args(*descriptors)


def _ts(function, *descriptors, keep_type: bool = True):
    """A symbolic function from a family rule: parses the constant arguments, builds through the graph
    context, and gives the output self's type (same dtype and shape) so later symbolics can read it."""

    def symbolic(g, self, *args):
        out = function(_family.TorchScriptBuilder(g), self, *args)
        if keep_type and self.type().scalarType() is not None:
            out.setType(self.type())
        return out

    symbolic.__name__ = getattr(function, "__name__", "symbolic")
    # parse_args pairs descriptors with the parameter names it reads from the signature: spell them out.
    names = ["g", "self"] + [f"arg{i}" for i in range(len(descriptors))]
    symbolic.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names])
    return _parse_args("v", *descriptors)(symbolic)


def _const(g, value, dtype=torch.int64):
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


def _dialect(name: str) -> str:
    return f"{DOMAIN}::{name}"


def _sym_scatter_reduce(b, self, dim, index, src, reduce, include_self):
    return _family.scatter_elements(b, self, dim, index, src, _reduction(reduce), include_self)


def _sym_scatter(b, self, dim, index, src, reduce=None):
    """aten::scatter, all four overloads: (self, dim, index, src|value[, reduce])."""
    if isinstance(src, torch._C.Value) and b.rank(src) == 0 and src.node().kind() == "onnx::Constant":
        # the .value overloads: a scalar spread over index's shape, in self's dtype
        dtype = b.known_dtype(self, "scatter", "self")
        src = b.op("Expand", b.op("Cast", src, to=_family._onnx_type(dtype)), b.op("Shape", index))
    if reduce is None:
        return _family.scatter_plain(b, self, dim, index, src)
    return _family.scatter_reduce_old(b, self, dim, index, src, reduce)


def _sym_index_copy(g, self, dim, index, source):
    rank = _ts_rank(self, "index_copy", "self")
    flat = _const(g, [-1])
    if rank == 0:
        self, source = g.op("Reshape", self, flat), g.op("Reshape", source, flat)
    if index.type().dim() != 1:
        index = g.op("Reshape", index, flat)
    out = g.op(_dialect("ScatterUpdate"), self, index, source, _const(g, dim % max(rank, 1)))
    if rank == 0:
        return g.op("Reshape", out, _const(g, []))
    out.setType(self.type())
    return out


def _ts_rank(value, aten: str, what: str) -> int:
    return _family.TorchScriptBuilder(None).known_rank(value, aten, what)


def _ts_unique(g, self, axis, return_inverse, return_counts):
    inputs = (self,) if axis is None else (self, _const(g, axis))
    values, _, inverse, counts = g.op(_dialect("Unique"), *inputs, sorted_i=1, outputs=4)
    rank = self.type().dim()
    if self.type().scalarType() is not None:
        values.setType(self.type().with_sizes([None] * (1 if axis is None or rank is None else rank)))
    long = torch._C.TensorType.get().with_dtype(torch.int64).with_sizes([None])
    inverse.setType(long)
    counts.setType(long)
    if axis is not None:  # torch's unique_dim returns inverse and counts whatever the flags say
        return values, inverse, counts
    empty = _const(g, [])
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


def _sym_vector_norm(g, self, ord, dim, keepdim, dtype):
    axes = _axes(dim, _ts_rank(self, "linalg_vector_norm", "the input"))
    if dtype is not None:
        self = g.op("Cast", self, to_i=_family._onnx_type(torch.empty(0, dtype=_TORCH_DTYPES[dtype]).numpy().dtype))
    if ord == 2:
        return g.op(_dialect("ReduceL2"), self, _const(g, axes), keep_dims_i=int(keepdim))
    # Other orders in standard ONNX, as torch's own symbolic computes them.
    axes_const, magnitude = _const(g, axes), g.op("Abs", self)
    if ord == float("inf"):
        return g.op("ReduceMax", magnitude, axes_const, keepdims_i=int(keepdim))
    if ord == float("-inf"):
        return g.op("ReduceMin", magnitude, axes_const, keepdims_i=int(keepdim))
    if ord == 0:
        nonzero = g.op("CastLike", g.op("Not", g.op("Equal", self, g.op("CastLike", _const(g, 0), self))), self)
        return g.op("ReduceSum", nonzero, axes_const, keepdims_i=int(keepdim))
    if ord == 1:
        return g.op("ReduceL1", self, axes_const, keepdims_i=int(keepdim))
    power = g.op("CastLike", _const(g, float(ord), torch.float64), self)
    total = g.op("ReduceSum", g.op("Pow", magnitude, power), axes_const, keepdims_i=int(keepdim))
    return g.op("Pow", total, g.op("Div", g.op("CastLike", _const(g, 1.0, torch.float64), self), power))


#: torch ScalarType numbers (as a traced dtype= argument carries them) -> torch dtypes.
_TORCH_DTYPES = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 5: torch.float16,
                 6: torch.float32, 7: torch.float64, 11: torch.bool}


def _symbolics() -> dict:
    """{aten name: symbolic function}; parse_args is applied here (see _parse_args)."""
    family = _family
    return {
        "aten::scatter_reduce": _ts(_sym_scatter_reduce, "i", "v", "v", "s", "b"),
        "aten::index_reduce": _ts(family.index_reduce, "i", "v", "v", "s", "b"),
        "aten::index_add": _ts(family.index_add, "i", "v", "v", "f"),
        "aten::scatter": _ts(_sym_scatter, "i", "v", "v", "s"),
        "aten::scatter_add": _ts(lambda b, self, dim, index, src: family.scatter_elements(
            b, self, dim, index, src, "sum", True, "scatter_add"), "i", "v", "v"),
        "aten::segment_reduce": _ts(lambda b, data, reduce, lengths, indices, offsets, axis, unsafe, initial:
                                    family.segment_reduce(b, data, reduce, lengths, indices, offsets, axis,
                                                          initial),
                                    "s", "v", "v", "v", "i", "none", "f", keep_type=False),
        "aten::index_put": _ts(_sym_index_put, "v", "v", "b"),
        "aten::index_copy": _parse_args("v", "i", "v", "v")(_sym_index_copy),
        "aten::_unique2": _parse_args("v", "b", "b", "b")(_sym_unique2),
        "aten::_unique": _parse_args("v", "b", "b")(_sym_unique),
        "aten::unique_dim": _parse_args("v", "i", "b", "b", "b")(_sym_unique_dim),
        "aten::linalg_vector_norm": _parse_args("v", "f", "is", "b", "i")(_sym_vector_norm),
    }


_SYMBOLIC_NAMES = ("aten::scatter_reduce", "aten::index_reduce", "aten::index_add", "aten::scatter",
                   "aten::scatter_add", "aten::segment_reduce", "aten::index_put", "aten::index_copy",
                   "aten::_unique2", "aten::_unique", "aten::unique_dim", "aten::linalg_vector_norm")


def _sym_index_put(b, self, indices, values, accumulate):
    node = indices.node()
    if node.kind() != "prim::ListConstruct":
        raise _family._refuse("index_put", "the index list is not a literal list; use the dynamo exporter")
    return _family.index_put(b, self, list(node.inputs()), values, accumulate)


#: Lowest export opset the symbolics support (they emit Slice and Reshape with inputs, Reshape allowzero).
MIN_SYMBOLIC_OPSET = 14
_REGISTERED: set[int] = set()


def _max_opset() -> int:
    try:
        from torch.onnx._constants import ONNX_MAX_OPSET
    except ImportError:  # pragma: no cover - layout of a future torch
        return 23
    return ONNX_MAX_OPSET


def register_symbolics(opset: int = MIN_SYMBOLIC_OPSET) -> list[int]:
    """Register the dialect symbolics for every TorchScript-export opset from `opset` up (idempotent).

    torch picks, for an export at opset N, the newest symbolic registered at a version <= N: ours registered
    at 14 alone would lose to torch's scatter_reduce (registered at 16) and linalg_vector_norm (at 18).
    Export with ``custom_opsets={onnx_bridge.DOMAIN: onnx_bridge.DIALECT_OPSET}``: torch imports an
    unlisted custom domain at version 1. Returns the opset versions registered.
    """
    if opset < MIN_SYMBOLIC_OPSET:
        raise BridgeError(f"register_symbolics: opset {opset} is too old; the dialect symbolics need an "
                          f"export opset >= {MIN_SYMBOLIC_OPSET}")
    from custom_ops._schemas import register_schemas

    register_schemas()
    versions = list(range(opset, _max_opset() + 1))
    for version in versions:
        if version not in _REGISTERED:
            for name, function in _symbolics().items():
                torch.onnx.register_custom_op_symbolic(name, function, version)
            _REGISTERED.add(version)
    return versions


def unregister_symbolics() -> None:
    """Undo register_symbolics(): torch's own symbolics apply again."""
    for version in sorted(_REGISTERED):
        for name in _SYMBOLIC_NAMES:
            torch.onnx.unregister_custom_op_symbolic(name, version)
    _REGISTERED.clear()


# --------------------------------------------------------------------------------------------------
# export(): either path, then lowering

def _dialect_nodes(model: onnx.ModelProto) -> dict[str, int]:
    counts: Counter = Counter()

    def visit(graph):
        for node in graph.node:
            if node.domain == DOMAIN:
                counts[node.op_type] += 1
            for attribute in node.attribute:
                for sub in ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else attribute.graphs):
                    visit(sub)

    visit(model.graph)
    for function in model.functions:
        for node in function.node:
            if node.domain == DOMAIN:
                counts[node.op_type] += 1
    return dict(counts)


@dataclasses.dataclass
class ExportReport:
    """What export() did: dialect nodes exported, what lowering made of them, what is left."""

    path: Optional[Path]
    exporter: str  # "dynamo" or "torchscript"
    exported: dict  # dialect op_type -> count in the exported model
    remaining: dict  # dialect op_type -> count in the written model
    conversion: object = None  # converters.Report when lowered

    @property
    def standard(self) -> bool:
        """True when the model has no dialect node left: plain onnxruntime runs it."""
        return not self.remaining

    def __str__(self) -> str:
        def listing(counts):
            return ", ".join(f"{n} x{c}" for n, c in sorted(counts.items())) or "none"

        lines = [f"exported with the {self.exporter} exporter: dialect nodes {listing(self.exported)}"]
        if self.conversion is not None:
            lines.append(f"lowering: {self.conversion.summary()}; dialect nodes left: {listing(self.remaining)}")
            for entry in self.conversion.nodes:
                if entry.action == "kept":
                    lines.append(f"  kept {entry.name} ({entry.op}): {entry.reason}")
                elif entry.caveat:
                    lines.append(f"  {entry.name} ({entry.op}) {entry.action}; caveat: {entry.caveat}")
        lines.append("runs in plain onnxruntime" if self.standard else
                     "run it with onnx_bridge.InferenceSession (dialect nodes need the custom ops)")
        if self.path is not None:
            lines.append(f"written to {self.path}")
        return "\n".join(lines)


def _export_dynamo(module, args, kwargs) -> onnx.ModelProto:
    table = {**translation_table(), **(kwargs.pop("custom_translation_table", None) or {})}
    kwargs.setdefault("verbose", False)
    program = torch.onnx.export(module, args, dynamo=True, custom_translation_table=table, **kwargs)
    return program.model_proto


def _refuse_lost_writes(graph) -> None:
    """The TorchScript exporter drops writes into a tensor through a narrow() view or an out= argument (torch
    2.13: ``torch.cumsum(x, 0, out=buf.narrow(0, 1, n))``, as PyTorch Geometric's cumsum and to_dense_batch
    do, exports as if ``buf`` were never written): refuse rather than export a silently wrong model."""
    for node in graph.nodes():
        for block in node.blocks():
            _refuse_lost_writes(block)
        kind = node.kind()
        if not kind.startswith("aten::"):
            continue
        schema = node.schema()
        written = None
        if "Tensor(a!) out" in schema:
            written = list(node.inputs())[-1]
        elif kind.endswith("_") and "Tensor(a!) self" in schema:
            written = next(node.inputs())
        if written is not None and ("Tensor(a!) out" in schema or written.node().kind() == "aten::narrow"):
            where = node.sourceRange().strip().splitlines()
            raise ConversionError(
                f"onnx_bridge.torch: cannot export {kind} exactly with the TorchScript exporter: it writes "
                f"into {'an out= tensor' if 'Tensor(a!) out' in schema else 'a narrow() view'}, a write the "
                f"TorchScript exporter loses (the model would be silently wrong). Use the dynamo exporter "
                f"(dynamo=True).{' At ' + where[0] if where else ''}")


def _export_torchscript(module, args, kwargs) -> onnx.ModelProto:
    opset = kwargs.get("opset_version")
    if opset is not None and opset < MIN_SYMBOLIC_OPSET:
        raise BridgeError(f"opset_version {opset}: the dialect symbolics need opset >= {MIN_SYMBOLIC_OPSET}")
    register_symbolics()  # stays registered: idempotent, and it only changes which nodes torch emits
    kwargs["custom_opsets"] = {DOMAIN: DIALECT_OPSET, **(kwargs.get("custom_opsets") or {})}
    if isinstance(module, torch.nn.Module) and not isinstance(module, torch.jit.ScriptModule):
        # Trace outside torch.onnx.export: libraries switch to ONNX workarounds when they see
        # torch.onnx.is_in_onnx_export(), and some of those are wrong (PyTorch Geometric's max/min
        # aggregation emulates include_self=False with a fill of src.min(), which gives 0 for a node whose
        # messages are all negative). The dialect exports the eager code exactly, so trace that.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            module = torch.jit.trace(module, args, check_trace=False, strict=False)
        _refuse_lost_writes(module.graph)
    buffer = io.BytesIO()
    torch.onnx.export(module, args, buffer, dynamo=False, **kwargs)
    return onnx.load_from_string(buffer.getvalue())


def export(module, args, path=None, *, lower: bool = True, dynamo: bool = True, **kwargs):
    """Export `module` with the dialect translations, lower it to standard ONNX where exact, write it.

    module, args and kwargs are those of torch.onnx.export (input_names, dynamic_shapes, opset_version, ...).
    lower=True converts dialect nodes to standard ONNX wherever that is exact (converters.convert, default
    mode); the rest stay dialect nodes and the report says which. path=None writes nothing. The model is
    written atomically with IR version 10. Returns (onnx.ModelProto, ExportReport).
    """
    if not isinstance(args, tuple):
        args = (args,)
    exporter = "dynamo" if dynamo else "torchscript"
    try:
        model = (_export_dynamo if dynamo else _export_torchscript)(module, args, dict(kwargs))
    except BridgeError:
        raise
    except Exception as exc:
        root = exc
        while root.__cause__ is not None:  # torch wraps errors raised by translations several times
            root = root.__cause__
            if isinstance(root, BridgeError):
                raise root from exc
        raise ConversionError(f"torch.onnx.export ({exporter}) failed: {type(root).__name__}: "
                              f"{str(root).strip()[:500]}") from exc
    model.ir_version = IR_VERSION
    exported = _dialect_nodes(model)
    if exported:
        set_opset(model, DOMAIN, DIALECT_OPSET)
    onnx.checker.check_model(model)
    conversion = None
    if lower and exported:
        try:
            from converters import convert
        except ImportError as exc:
            raise BridgeError("lower=True needs onnx-bridge's converter (package 'converters'), which is "
                              "not importable; pass lower=False to keep the dialect nodes") from exc
        model, conversion = convert(model, to="standard")
        model.ir_version = IR_VERSION
    report = ExportReport(Path(path) if path is not None else None, exporter, exported,
                          _dialect_nodes(model), conversion)
    if path is not None:
        save_model(model, path)
    return model, report
