"""The one exception family of onnx-bridge.

Messages follow OpenVINO's CHECK_VALID_NODE: op, node, the input or attribute at fault, the value
seen and what was allowed.
"""
from __future__ import annotations


def _short(value, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class BridgeError(Exception):
    """Base class of every error raised on purpose by onnx-bridge."""


class OpError(BridgeError, ValueError):
    """Invalid input or attribute for a dialect op (raised before any output is written)."""

    def __init__(self, op: str, subject: str, problem: str, *, value=None, allowed=None,
                 node: str | None = None):
        self.op, self.subject, self.problem = op, subject, problem
        self.value, self.allowed, self.node = value, allowed, node
        super().__init__(self._format())

    def _format(self) -> str:
        where = f"{self.op}" + (f" (node {self.node!r})" if self.node else "")
        text = f"{where}: {self.subject}: {self.problem}"
        if self.value is not None:
            text += f"; got {_short(self.value)}"
        if self.allowed is not None:
            text += f"; allowed: {self.allowed}"
        return text

    def with_node(self, node: str | None) -> "OpError":
        """Return the same error naming the graph node it came from."""
        if node and not self.node:
            self.node = node
            self.args = (self._format(),)
        return self


class ConversionError(BridgeError, ValueError):
    """A model cannot be converted as asked (lists every offending node)."""


class ModelError(BridgeError, ValueError):
    """A model file is unreadable, malformed or uses something the bridge cannot carry."""
