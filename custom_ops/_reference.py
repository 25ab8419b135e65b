"""Dialect ops for onnx.reference.ReferenceEvaluator: ReferenceEvaluator(model, new_ops=REFERENCE_OPS)."""
from __future__ import annotations

from onnx.reference.op_run import OpRun

from .config import DIALECT_OPSET, DOMAIN

from ._spec import op_types, resolve


class _DialectOp(OpRun):
    op_domain = DOMAIN
    op_schema = None  # never inherit the schema (and defaults) of an ai.onnx op of the same name

    def _run(self, *inputs, **attributes):
        opset = (self.run_params or {}).get("opsets", {}).get(DOMAIN, DIALECT_OPSET)
        spec = resolve(self.__class__.__name__, opset)
        inputs = [x for x in inputs]
        while inputs and inputs[-1] is None:  # absent optional inputs
            inputs.pop()
        return spec.run(inputs, attributes, node=self.onnx_node.name or None)


REFERENCE_OPS = [type(name, (_DialectOp,), {}) for name in op_types()]
