"""What a conversion did, node by node: a table for people and JSON for tools (like tf2onnx's final
"Unsupported ops" summary, but per node and with the reason)."""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field

#: Every action a node can get. lowered: one standard op does the work (Casts around it allowed);
#: decomposed: a standard subgraph; kept: the dialect node stays; raised: a standard node became a dialect
#: node; unchanged: a standard node a raising rule looked at and left alone; function (as_functions): the
#: dialect node stays, as a call of a model-local function whose body is its exact lowering.
ACTIONS = ("lowered", "decomposed", "function", "kept", "raised", "unchanged")


@dataclass
class NodeReport:
    name: str
    op_type: str
    domain: str
    version: int | None
    action: str
    reason: str
    #: Op types of the nodes that replaced it (empty when kept/unchanged).
    emitted: list[str] = field(default_factory=list)
    #: How the new graph can differ from the old one (e.g. float rounding); strict=True keeps such nodes.
    caveat: str | None = None

    @property
    def op(self) -> str:
        return f"{self.op_type}-{self.version}" if self.version else self.op_type


@dataclass
class Report:
    direction: str  # "standard" or "openvino"
    mode: str
    strict: bool
    nodes: list[NodeReport] = field(default_factory=list)
    #: Model-level notes (opset changes, removed initializers, ...).
    notes: list[str] = field(default_factory=list)

    def add(self, entry: NodeReport) -> None:
        self.nodes.append(entry)

    @property
    def counts(self) -> dict[str, int]:
        counted = Counter(entry.action for entry in self.nodes)
        return {action: counted[action] for action in ACTIONS if counted[action]}

    def by_action(self, action: str) -> list[NodeReport]:
        return [entry for entry in self.nodes if entry.action == action]

    @property
    def kept(self) -> list[NodeReport]:
        return self.by_action("kept")

    def summary(self) -> str:
        counts = self.counts
        if not counts:
            return "no node to convert"
        total = sum(counts.values())
        return f"{total} node{'s' if total != 1 else ''}: " + ", ".join(f"{n} {a}" for a, n in counts.items())

    def to_table(self) -> str:
        """A fixed-width table: node, op, action, reason (and the caveat under it), then a summary."""
        header = ("node", "op", "action", "reason")
        rows = [(e.name, e.op, e.action, e.reason + (f" [caveat: {e.caveat}]" if e.caveat else ""))
                for e in self.nodes]
        widths = [max([len(header[i])] + [len(r[i]) for r in rows]) for i in range(3)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(header[:3], widths)) + "  " + header[3]]
        lines += ["  ".join(c.ljust(w) for c, w in zip(row[:3], widths)) + "  " + row[3] for row in rows]
        lines.append(self.summary())
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"direction": self.direction, "mode": self.mode, "strict": self.strict,
                "counts": self.counts, "nodes": [asdict(e) for e in self.nodes], "notes": list(self.notes)}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        return self.to_table()
