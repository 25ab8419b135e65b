"""onnxruntime, two ways: the dialect model through onnx-bridge's custom ops, and the lowered standard model."""
from __future__ import annotations

from collections import OrderedDict

from ..cases import Case, batch_model, op_model, restore_outputs, signature
from . import has_module
from ._lowering import lowered
from ._lowering import missing as lowering_missing

_SESSIONS = 256


def _options():
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # workers run side by side on the machine's cores
    options.inter_op_num_threads = 1
    options.log_severity_level = 4
    return options


class _Cached:
    def __init__(self):
        self._sessions: OrderedDict = OrderedDict()

    def _session(self, key, build):
        if key not in self._sessions:
            self._sessions[key] = build()
            if len(self._sessions) > _SESSIONS:
                self._sessions.popitem(last=False)
        return self._sessions[key]


class DialectAdapter(_Cached):
    """Creating a session with the custom-op library costs ~25 ms, a run of a small node far less: the op
    cases of a chunk that the contract accepts run side by side in one model (one session, one run);
    anything else, or a batch that fails as a whole, runs alone."""

    name = "ort-dialect"
    title = "onnxruntime running the dialect nodes as onnx-bridge custom ops (InferenceSession, lower=False)"

    def __init__(self):
        super().__init__()
        self._batch: dict[str, Case] = {}
        self._answers: dict[str, tuple] = {}

    @staticmethod
    def missing() -> str | None:
        return None if has_module("onnxruntime_extensions") else "onnxruntime-extensions is not installed"

    def prepare(self, cases: list[Case]) -> None:
        """The next cases to be run, all accepted by the contract (run together on first use)."""
        self._batch = {case.id: case for case in cases if not case.is_model}
        self._answers = {}

    def _run_batch(self) -> None:
        from onnx_bridge.session import InferenceSession
        cases, self._batch = list(self._batch.values()), {}
        model, feeds, names = batch_model(cases)
        try:
            outputs = InferenceSession(model, _options(), lower=False).run(None, feeds)
        except Exception:  # noqa: BLE001  (each case then runs alone and gets its own cell)
            return
        position = 0
        for case, case_names in zip(cases, names):
            self._answers[case.id] = restore_outputs(case, outputs[position:position + len(case_names)])
            position += len(case_names)

    def run(self, case: Case) -> tuple:
        from onnx_bridge.session import InferenceSession
        if len(self._batch) > 1 and case.id in self._batch:
            self._run_batch()
        if case.id in self._answers:
            return self._answers.pop(case.id)
        if case.is_model:
            session = self._session(("model", case.id),
                                    lambda: InferenceSession(case.model, _options(), lower=False))
            return tuple(session.run(None, case.inputs))
        model, feeds = op_model(case)
        session = self._session(signature(case), lambda: InferenceSession(model, _options(), lower=False))
        return restore_outputs(case, session.run(None, feeds))


class LoweredAdapter(_Cached):
    name = "ort-lowered"
    title = "onnxruntime (no custom ops) running the model lowered to standard ONNX by converters.convert"

    @staticmethod
    def missing() -> str | None:
        return lowering_missing()

    def run(self, case: Case) -> tuple:
        import onnxruntime as ort
        model, feeds, key = lowered(case)
        session = self._session(key, lambda: ort.InferenceSession(
            model.SerializeToString(), _options(), providers=["CPUExecutionProvider"]))
        outputs = session.run(None, feeds)
        return tuple(outputs) if case.is_model else restore_outputs(case, outputs)
