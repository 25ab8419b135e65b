"""Cells (one case on one backend), the run's results, and what counts as a failure."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .cases import Case

MATCH, MISMATCH, ERROR, UNSUPPORTED, KNOWN, CRASH = (
    "match", "mismatch", "error", "unsupported", "known", "crash")
#: Display order, and the statuses that fail a run.
STATUSES = (MATCH, KNOWN, UNSUPPORTED, MISMATCH, ERROR, CRASH)
FAILING = (MISMATCH, ERROR, CRASH)
MEANING = {
    MATCH: "same result as the contract (or both reject the input)",
    KNOWN: "differs in a declared known divergence (id and reason given)",
    UNSUPPORTED: "the runtime has no equivalent of this configuration (reason given)",
    MISMATCH: "different result: first differing element, both values, max |Δ| and ulps",
    ERROR: "the runtime raised where the contract computes a result",
    CRASH: "the worker process died (or hung) running this cell",
}


@dataclass
class Cell:
    backend: str
    status: str
    detail: str = ""  # one line: what happened
    difference: dict | None = None  # compare.Difference.to_json() of a mismatch (also of a known one)
    divergence: str | None = None  # id in onnx_bridge.divergences
    reason: str = ""  # why: the divergence's or the unsupported configuration's reason
    seconds: float = 0.0

    def to_json(self) -> dict:
        """The cell without its backend (the key it is filed under) and with seconds rounded."""
        data = {k: v for k, v in self.__dict__.items() if v not in (None, "", {}) and k != "backend"}
        data["seconds"] = round(self.seconds, 4)
        return data


@dataclass
class Results:
    cases: list[Case]
    backends: list[str]  # columns, contract first
    skipped: dict[str, str] = field(default_factory=dict)  # backend -> why it did not run
    cells: dict[tuple[int, str], Cell] = field(default_factory=dict)  # (case index, backend) -> cell
    seconds: float = 0.0
    jobs: int = 0
    settings: dict = field(default_factory=dict)  # seed, size, ... (for the report)
    versions: dict = field(default_factory=dict)
    titles: dict = field(default_factory=dict)  # column -> one-line description
    notes: list = field(default_factory=list)  # what the corpus left out, and why

    def cell(self, index: int, backend: str) -> Cell | None:
        return self.cells.get((index, backend))

    def rows(self):
        """(case, {backend: cell}) in corpus order."""
        for index, case in enumerate(self.cases):
            yield case, {b: self.cells[(index, b)] for b in self.backends if (index, b) in self.cells}

    def failures(self) -> list[tuple[Case, Cell]]:
        return [(case, cell) for case, cells in self.rows() for cell in cells.values()
                if cell.status in FAILING]

    def by_status(self, status: str) -> list[tuple[Case, Cell]]:
        return [(case, cell) for case, cells in self.rows() for cell in cells.values() if cell.status == status]

    def counts(self) -> dict[tuple[str, str], Counter]:
        """(row label, backend) -> Counter of statuses; rows are ops, or a model case's group."""
        table: dict[tuple[str, str], Counter] = {}
        for case, cells in self.rows():
            for backend, cell in cells.items():
                table.setdefault((case.row, backend), Counter())[cell.status] += 1
        return table

    def totals(self) -> Counter:
        return Counter(cell.status for cell in self.cells.values())

    @property
    def exit_code(self) -> int:
        return 1 if self.failures() else 0
