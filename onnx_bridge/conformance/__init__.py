"""Cross-runtime conformance: one corpus of cases, every runtime, every disagreement explained.

    from onnx_bridge.conformance import build_corpus, run, report
    results = run(build_corpus("small"))          # worker processes, crash-isolated
    print(report.terminal(results)); report.write(results, "out/")

- corpus / generate: seed examples, ONNX backend node cases raised into the dialect, generated cases,
  user models (cases.Case).
- adapters/: one adapter per runtime (ort-dialect, ort-lowered, reference, torch, openvino).
- evaluate: the contract (the custom_ops kernels) and the cell of each backend (compare, divergence).
- runner: worker pool that survives crashing runtimes; results: cells and the exit code; report: output.
"""
import onnx.reference  # noqa: F401  (must load before any dialect schema exists: it rejects a second ReduceL2)

from . import report
from .cases import Case
from .corpus import build_corpus
from .results import Cell, Results
from .runner import run

__all__ = ["Case", "Cell", "Results", "build_corpus", "report", "run"]
