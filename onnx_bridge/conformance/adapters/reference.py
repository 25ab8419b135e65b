"""The ONNX reference evaluator (onnx.reference) running the lowered standard model."""
from __future__ import annotations

from collections import OrderedDict

from ..cases import Case, restore_outputs
from ._lowering import lowered
from ._lowering import missing as lowering_missing


class ReferenceAdapter:
    name = "reference"
    title = "onnx.reference.ReferenceEvaluator running the model lowered to standard ONNX"

    def __init__(self):
        self._evaluators: OrderedDict = OrderedDict()

    @staticmethod
    def missing() -> str | None:
        return lowering_missing()

    def run(self, case: Case) -> tuple:
        from onnx.reference import ReferenceEvaluator
        model, feeds, key = lowered(case)
        if key not in self._evaluators:
            self._evaluators[key] = ReferenceEvaluator(model)
            if len(self._evaluators) > 256:
                self._evaluators.popitem(last=False)
        outputs = self._evaluators[key].run(None, feeds)
        return tuple(outputs) if case.is_model else restore_outputs(case, outputs)
