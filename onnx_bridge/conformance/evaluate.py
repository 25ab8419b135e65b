"""Evaluating one case: the contract first, then each backend, each judged against the contract.

Runs inside a worker process (or in-process with jobs=0). Yields one Cell per requested column.
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from onnx_bridge.errors import OpError

from . import divergence
from .adapters import CONTRACT, Unsupported, first_line, load
from .cases import Case
from .cases import output_names as op_output_names
from .compare import MODEL_TOLERANCE, Difference, compare, largest_gap, tolerance_bound, tolerance_ulps
from .results import ERROR, KNOWN, MATCH, MISMATCH, UNSUPPORTED, Cell


class Contract:
    """What the kernels compute: outputs, or the OpError message when the contract rejects the input."""

    def __init__(self, outputs=None, rejection: str = "", failure: str = ""):
        self.outputs, self.rejection, self.failure = outputs, rejection, failure


def contract_of(case: Case) -> Contract:
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # wrap-around is the contract
        warnings.simplefilter("ignore")
        return _contract_of(case)


def _contract_of(case: Case) -> Contract:
    try:
        if case.is_model:
            return Contract(_run_model_contract(case))
        spec = _spec(case.op)
        return Contract(tuple(np.asarray(x) for x in spec.run(case.input_list(), case.attributes)))
    except OpError as error:
        return Contract(rejection=first_line(error))
    except Exception as error:  # noqa: BLE001  (a kernel bug: reported, never raised)
        if case.is_model:
            return Contract(rejection=first_line(error))
        return Contract(failure=first_line(error))


def _spec(op: str):
    from .cases import spec_of
    return spec_of(op)


def _run_model_contract(case: Case) -> tuple:
    """Standard nodes by the ONNX reference evaluator, dialect nodes by the kernels."""
    from onnx.reference import ReferenceEvaluator

    from custom_ops.reference import REFERENCE_OPS
    evaluator = ReferenceEvaluator(case.model, new_ops=REFERENCE_OPS)
    return tuple(np.asarray(x) for x in evaluator.run(None, case.inputs))


def output_names(case: Case) -> tuple[str, ...]:
    if case.is_model:
        return tuple(output.name for output in case.model.graph.output)
    return op_output_names(case.op)


def contract_cell(case: Case, contract: Contract, seconds: float) -> Cell:
    if contract.failure:
        return Cell(CONTRACT, ERROR, f"kernel failed: {contract.failure}", seconds=seconds)
    if case.expected is not None:
        if contract.rejection:
            return Cell(CONTRACT, MISMATCH, f"kernel rejects a documented example: {contract.rejection}",
                        seconds=seconds)
        difference = compare(case.expected, contract.outputs, output_names(case))
        if difference:
            return Cell(CONTRACT, MISMATCH, f"kernel differs from the documented result: "
                        f"{difference.summary()}", difference.to_json(), seconds=seconds)
        return Cell(CONTRACT, MATCH, "reproduces the documented result", seconds=seconds)
    detail = f"rejects: {contract.rejection}" if contract.rejection else "computed"
    return Cell(CONTRACT, MATCH, detail, seconds=seconds)


def judge(case: Case, backend: str, contract: Contract, outputs=None, error: BaseException | None = None,
          seconds: float = 0.0, model_tolerance: float = MODEL_TOLERANCE) -> Cell:
    """The cell of `backend` given what it returned (outputs) or raised (error)."""
    if isinstance(error, Unsupported):
        return Cell(backend, UNSUPPORTED, reason=first_line(error), seconds=seconds)
    if contract.failure:
        return Cell(backend, UNSUPPORTED, reason="no contract value: the kernel failed", seconds=seconds)
    if error is not None:
        message = first_line(error)
        if contract.rejection:
            return Cell(backend, MATCH, f"both reject: {message}", seconds=seconds)
        cell = Cell(backend, ERROR, message, seconds=seconds)
    elif contract.rejection:
        difference = Difference("accepted", want=contract.rejection)
        cell = Cell(backend, MISMATCH, difference.summary(), difference.to_json(), seconds=seconds)
    else:
        names = output_names(case)
        outputs = tuple(np.asarray(x) for x in outputs)
        difference = compare(contract.outputs, outputs, names, ulps=0 if case.is_model else tolerance_ulps(case),
                             scale=model_tolerance if case.is_model else 0,
                             atol=0 if case.is_model else tolerance_bound(case))
        if difference is None:
            gap, ulps = largest_gap(contract.outputs, outputs) if case.is_model else (0, 0)
            detail = f"within the model tolerance: max |Δ| {gap:.3g} ({ulps:.0f} ulp)" if gap else ""
            return Cell(backend, MATCH, detail, seconds=seconds)
        cell = Cell(backend, MISMATCH, difference.summary(), difference.to_json(), seconds=seconds)
    known = divergence.find(backend, case, cell, outputs)
    if known:
        cell.status, cell.divergence, cell.reason = KNOWN, known[0], known[1]
    return cell


class Evaluator:
    """Runs cases on fixed columns (name -> adapter spec), keeping adapters and their caches alive."""

    def __init__(self, specs: dict[str, str], model_tolerance: float = MODEL_TOLERANCE):
        self.specs = dict(specs)
        self.model_tolerance = model_tolerance
        self.backends = list(specs)
        self.adapters: dict = {}
        self.contracts: dict[str, Contract] = {}

    def prepare(self, cases: list[Case], columns: set[str]) -> None:
        """Before a chunk: compute its contracts and tell adapters that batch (prepare()) which cases
        of the chunk the contract accepts."""
        self.contracts = {case.id: contract_of(case) for case in cases}
        accepted = [case for case in cases if self.contracts[case.id].outputs is not None]
        for backend in columns:
            if backend != CONTRACT and hasattr(load(self.specs[backend]), "prepare"):
                self._adapter(backend).prepare(accepted)

    def _adapter(self, backend: str):
        if backend not in self.adapters:
            self.adapters[backend] = load(self.specs[backend])()
        return self.adapters[backend]

    def evaluate(self, case: Case, backends: list[str] | None = None):
        """Yield one Cell per column of `backends` (default: all), in order."""
        with warnings.catch_warnings(), np.errstate(all="ignore"):  # wrap-around is the contract
            warnings.simplefilter("ignore")
            yield from self._evaluate(case, backends)

    def _evaluate(self, case: Case, backends):
        start = time.perf_counter()
        contract = self.contracts.pop(case.id, None) or contract_of(case)
        seconds = time.perf_counter() - start
        for backend in backends or self.backends:
            if backend == CONTRACT:
                yield contract_cell(case, contract, seconds)
                continue
            start = time.perf_counter()
            try:
                outputs = self._adapter(backend).run(case)
                error = None
            except Exception as exc:  # noqa: BLE001  (every runtime failure becomes a cell)
                outputs, error = None, exc
            yield judge(case, backend, contract, outputs, error, time.perf_counter() - start,
                        self.model_tolerance)
