"""PyTorch -> ONNX export through the OpenVINO dialect: scatter_reduce that matches torch.

torch.onnx exports ``Tensor.scatter_reduce`` with ``reduce="mean"`` as a *silently wrong* ScatterElements
(reduction "none") on the dynamo path and refuses it, and ``include_self=False``, on the TorchScript path.
The dialect's ScatterElementsUpdate-12 has torch's semantics (``include_self`` is ``use_init_val``; sum, prod,
mean, amax, amin are sum, prod, mean, max, min; integer mean floors), so exporting to it is exact.

- ``translation_table()``: for ``torch.onnx.export(..., dynamo=True, custom_translation_table=...)``.
- ``register_symbolics()``: for ``torch.onnx.export(..., dynamo=False, custom_opsets={DOMAIN: 12})``.
- ``export(module, args, path)``: either exporter, then lowering to standard ONNX where that is exact.

Exported ops, each from the module its unit's `torch` piece names (onnx_bridge/torch/<op>.py): aten
scatter_reduce.two and the scatter family -> ScatterElementsUpdate, index_copy -> ScatterUpdate, _unique2 /
_unique / unique_dim (torch.unique) -> Unique, linalg_vector_norm with ord=2 -> ReduceL2 (other ords keep
torch's own translation). Models with dialect nodes run in onnx_bridge.InferenceSession.
"""
from __future__ import annotations

import dataclasses
import importlib
import io
import warnings
from collections import Counter
from pathlib import Path
from typing import Optional

import onnx

from converters.model_io import save_model, set_opset
from custom_ops import units
from custom_ops.unit import present
from ..config import DIALECT_OPSET, DOMAIN, IR_VERSION
from ..errors import BridgeError, ConversionError
from ._common import MissingDependencyError, onnxscript_ops


try:
    import torch
except ImportError as _exc:  # pragma: no cover - exercised only without torch
    raise MissingDependencyError("onnx_bridge.torch needs torch: pip install 'onnx-bridge[torch]'") from _exc

__all__ = ["translation_table", "register_symbolics", "unregister_symbolics", "export", "ExportReport",
           "REDUCTIONS", "MissingDependencyError"]

# torch's scatter_reduce reductions and the dialect's names for them (public since the first release)
from .scatter_elements_update import REDUCTIONS  # noqa: E402


def _torch_modules() -> list:
    """The units' torch export modules (each unit's `torch` piece names one), in unit order."""
    return [importlib.import_module(unit.torch) for unit in units() if present(unit.torch)]


def translation_table() -> dict:
    """{aten overload: onnxscript function} for torch.onnx.export(..., custom_translation_table=...), from
    every unit's torch module.

    Also registers the dialect's ONNX schemas (onnx.checker validates the exported model).
    """
    onnxscript_ops()
    aten = torch.ops.aten
    table = {}
    for module in _torch_modules():
        table.update(module.translations(aten))
    return table


def _symbolics() -> dict:
    """{aten name: symbolic function} of every unit's torch module (parse_args is applied here: see
    _common.parse_args)."""
    table = {}
    for module in _torch_modules():
        table.update(module.symbolics())
    return table


_SYMBOLIC_NAMES = tuple(name for module in _torch_modules() for name in module.SYMBOLIC_NAMES)


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
    from custom_ops.schemas import register_schemas

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
