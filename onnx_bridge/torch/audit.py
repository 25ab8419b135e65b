"""audit(module, args): is stock torch.onnx export right for this module, and what does the bridge do instead?

Exports `module` four ways — stock torch.onnx (dynamo, TorchScript) and onnx_bridge.torch.export (dynamo,
TorchScript; lowered to standard ONNX where exact) — runs each model in onnxruntime (the bridge's through
onnx_bridge.InferenceSession, which runs any dialect node left as a custom op) on the example inputs and on
any extra input sets, and compares every output with torch eager:

    ok      every output equal (floats: within rtol 1e-5 / atol 1e-6; integers, bools: exactly)
    wrong   the model runs and gives another answer: max |diff| and the scatter-family aten ops of the module
    error   export or run failed: the reason

Command line: ``onnx-bridge audit file.py:factory`` (see onnx_bridge/commands/audit.py).
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import warnings
from typing import Optional, Sequence

import numpy as np

import torch

from ..config import IR_VERSION

EXPORTERS = ("stock dynamo", "stock TorchScript", "bridge dynamo", "bridge TorchScript")
#: aten ops a wrong row names when the module uses them (the ones stock exporters get wrong or refuse).
SUSPECT_OPS = ("scatter_reduce", "index_reduce", "index_add", "index_put", "scatter", "scatter_add",
               "segment_reduce", "index_copy", "unique", "_unique2", "unique_dim", "linalg_vector_norm")
RTOL, ATOL = 1e-5, 1e-6


@dataclasses.dataclass
class AuditRow:
    exporter: str
    status: str  # ok, wrong, error
    max_abs_diff: Optional[float] = None
    detail: str = ""


@dataclasses.dataclass
class AuditReport:
    rows: list
    aten_ops: list  # scatter-family aten ops the module's exported program contains

    def row(self, exporter: str) -> AuditRow:
        return next(r for r in self.rows if r.exporter == exporter)

    def __str__(self) -> str:
        width = max(len(e) for e in EXPORTERS)
        lines = [f"{'exporter':<{width}}  status  max |diff|  detail"]
        for row in self.rows:
            diff = "" if row.max_abs_diff is None else f"{row.max_abs_diff:.3g}"
            lines.append(f"{row.exporter:<{width}}  {row.status:<6}  {diff:<10}  {row.detail}")
        if self.aten_ops:
            lines.append("scatter-family aten ops in the module: " + ", ".join(self.aten_ops))
        return "\n".join(lines)


def _aten_ops(module, args, export_kwargs) -> list:
    kwargs = {k: v for k, v in export_kwargs.items() if k == "dynamic_shapes"}
    try:
        program = torch.export.export(module, args, **kwargs)
    except Exception:  # noqa: BLE001 - the rows say why export fails
        return []
    found = []
    for node in program.graph.nodes:
        if node.op == "call_function" and hasattr(node.target, "_schema"):
            name = node.target._schema.name.split("::")[-1]
            if name.rstrip("_") in SUSPECT_OPS and name.rstrip("_") not in found:
                found.append(name.rstrip("_"))
    return found


def _stock(module, args, dynamo: bool, export_kwargs):
    from . import _REGISTERED, register_symbolics, unregister_symbolics

    kwargs = dict(export_kwargs)
    if dynamo:
        kwargs.pop("dynamic_axes", None)
        return torch.onnx.export(module, args, dynamo=True, verbose=False, **kwargs).model_proto
    kwargs.pop("dynamic_shapes", None)
    registered = bool(_REGISTERED)
    unregister_symbolics()  # torch's own symbolics, not ours
    try:
        buffer = io.BytesIO()
        torch.onnx.export(module, args, buffer, dynamo=False, **kwargs)
    finally:
        if registered:
            register_symbolics()
    import onnx
    return onnx.load_from_string(buffer.getvalue())


def _bridge(module, args, dynamo: bool, export_kwargs, lower: bool):
    from . import export

    kwargs = dict(export_kwargs)
    kwargs.pop("dynamic_axes" if dynamo else "dynamic_shapes", None)
    return export(module, args, None, lower=lower, dynamo=dynamo, **kwargs)[0]


def _run(model, stock: bool, inputs: Sequence, input_names: Sequence[str]):
    import onnx_bridge

    model.ir_version = IR_VERSION
    if stock:
        import onnxruntime
        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    else:
        session = onnx_bridge.InferenceSession(model, lower=False)
    wanted = {i.name for i in session.get_inputs()}  # an exporter may drop inputs the graph does not use
    tensors = [a for a in inputs if isinstance(a, torch.Tensor)]
    return session.run(None, {name: t.detach().numpy() for name, t in zip(input_names, tensors) if name in wanted})


def _eager(module, inputs):
    with torch.no_grad():
        out = module(*inputs)
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [t.detach().numpy() for t in out]


def _compare(got, want):
    """(status, max |diff|, detail)."""
    if len(got) != len(want):
        return "wrong", None, f"{len(got)} outputs, torch gives {len(want)}"
    worst, where = 0.0, []
    for position, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        if g.shape != w.shape:
            return "wrong", None, f"output {position}: shape {g.shape}, torch {w.shape}"
        if w.dtype.kind == "f":
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            both_nan = np.isnan(g) & np.isnan(w)
            same_inf = np.isinf(w) & (g == w)
            diff = np.where(both_nan | same_inf, 0.0, diff)
            diff = np.where(np.isnan(diff), np.inf, diff)
            if not np.all(diff <= ATOL + RTOL * np.abs(np.where(np.isfinite(w), w, 0))):
                where.append(position)
            worst = max(worst, float(diff.max(initial=0.0)))
        elif not np.array_equal(g, w):
            where.append(position)
            worst = max(worst, float(np.abs(g.astype(np.float64) - w.astype(np.float64)).max(initial=0.0)))
    if where:
        return "wrong", worst, "outputs " + ", ".join(map(str, where))
    return "ok", worst, ""


def audit(module, args, *, input_sets: Sequence = (), exporters: Sequence[str] = EXPORTERS, lower: bool = True,
          **export_kwargs) -> AuditReport:
    """Export `module` with each exporter, run it in onnxruntime, compare with torch eager.

    args: the example inputs (a tuple); input_sets: more input tuples to run the exported models at (e.g. other
    graph sizes with dynamic shapes). export_kwargs go to the exporters: dynamic_shapes is used by the dynamo
    ones, dynamic_axes by the TorchScript ones, input_names, opset_version, ... by all.
    Returns an AuditReport; print it for the table.
    """
    if not isinstance(args, tuple):
        args = (args,)
    module = module.eval()
    runs = [args, *[tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in input_sets]]
    wants = [_eager(module, inputs) for inputs in runs]
    tensors = sum(isinstance(a, torch.Tensor) for a in args)
    export_kwargs.setdefault("input_names", [f"input_{i}" for i in range(tensors)])
    rows = []
    for exporter in exporters:
        if exporter not in EXPORTERS:
            raise ValueError(f"unknown exporter {exporter!r}; choose from {', '.join(EXPORTERS)}")
        stock, dynamo = exporter.startswith("stock"), exporter.endswith("dynamo")
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            try:
                model = (_stock(module, args, dynamo, export_kwargs) if stock
                         else _bridge(module, args, dynamo, export_kwargs, lower))
            except Exception as exc:  # noqa: BLE001 - reported
                rows.append(AuditRow(exporter, "error", None, "export: " + _reason(exc)))
                continue
            status, worst, detail = "ok", 0.0, ""
            for number, (inputs, want) in enumerate(zip(runs, wants)):
                try:
                    got = _run(model, stock, inputs, export_kwargs["input_names"])
                except Exception as exc:  # noqa: BLE001 - reported
                    status, worst, detail = "error", None, f"run (input set {number}): " + _reason(exc)
                    break
                status, diff, detail = _compare(got, want)
                worst = diff if worst is None or diff is None else max(worst, diff)
                if status != "ok":
                    detail = f"input set {number}: {detail}"
                    break
        rows.append(AuditRow(exporter, status, worst, detail))
    report = AuditReport(rows, _aten_ops(module, args, export_kwargs))
    for row in report.rows:
        if row.status == "wrong" and report.aten_ops:
            row.detail += f" (scatter-family ops: {', '.join(report.aten_ops)})"
    return report


def _reason(exc: BaseException) -> str:
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    text = str(root).strip().splitlines()
    return f"{type(root).__name__}: {text[0][:200] if text else ''}"
