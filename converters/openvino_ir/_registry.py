"""Import rules: OpenVINO (op type, opset version) -> a handler that emits ONNX nodes.

The version is the one OpenVINO records for the op (its type_info version_id "opsetN", the `version`
attribute of an IR layer): usually the op's own version, but not always (LogicalXor-1 is "opset2",
ScatterNDUpdate-3 "opset4"). A rule is registered for the exact versions whose semantics it reproduces;
a version nobody registered is unsupported (a newer version of an op may behave differently).

    @rule("Add", "Multiply", versions=(1,), onnx="Add, Mul", notes="...", refuses=("pdpd broadcast: ...",))
    def binary(ctx, node): ...

`onnx`, `notes` and `refuses` document the rule (what it emits, how it matches OpenVINO, which
configurations it refuses and why); the supported-op table (`onnx-bridge convert --list-ops`,
docs/openvino_ir.md) is generated from them.
"""
from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from typing import Callable

#: (OpenVINO type name, opset version) -> handler(ctx, node)
RULES: dict[tuple[str, int], Callable] = {}


@dataclass(frozen=True)
class RuleDoc:
    onnx: str = ""                  # the ONNX ops it emits
    notes: str = ""                 # how it reproduces OpenVINO, where it differs
    refuses: tuple[str, ...] = ()   # configurations refused, each with its reason


#: (OpenVINO type name, opset version) -> its documentation
DOCS: dict[tuple[str, int], RuleDoc] = {}

#: Registrations run on the first lookup the rules registered so far do not answer, or the first listing
#: (the dialect ops' rules, generated from every op unit: an IR without them never imports the units).
_DEFERRED: list[Callable[[], None]] = []
_LOCK = threading.RLock()


def defer(register_more: Callable[[], None]) -> None:
    _DEFERRED.append(register_more)


def load_all() -> dict[tuple[str, int], Callable]:
    """Run the deferred registrations; RULES then holds every rule (returned)."""
    with _LOCK:  # another thread's lookup waits until they are done
        while _DEFERRED:
            before = set(RULES)
            try:
                _DEFERRED[0]()
            except BaseException:  # undone: the next lookup raises the same error, not "two import rules"
                for key in set(RULES) - before:
                    del RULES[key], DOCS[key]
                raise
            _DEFERRED.pop(0)
    return RULES


class Unsupported(Exception):
    """A supported op used in a configuration the import cannot express (the reason says which)."""


def rule(*names: str, versions: tuple[int, ...], onnx: str = "", notes: str = "",
         refuses: tuple[str, ...] = ()):
    doc = RuleDoc(onnx, notes, tuple(refuses))

    def register(handler):
        for name in names:
            for version in versions:
                key = (name, version)
                if key in RULES:
                    raise RuntimeError(f"two import rules for {name}-{version}")
                RULES[key] = handler
                DOCS[key] = doc
        return handler
    return register


def op_key(node) -> tuple[str, int | None]:
    """(type name, opset number) of an OpenVINO node; version None for non-opset (extension) ops."""
    info = node.get_type_info()
    return info.name, _opset_number(info.version_id or "")


@functools.lru_cache(maxsize=None)
def _opset_number(version_id: str) -> int | None:
    match = re.fullmatch(r"opset(\d+)", version_id)
    return int(match.group(1)) if match else None


def op_label(node) -> str:
    name, version = op_key(node)
    return f"{name}-{version}" if version is not None else f"{name} ({node.get_type_info().version_id})"


def find(node) -> Callable | None:
    key = op_key(node)
    handler = RULES.get(key)
    if handler is None:  # not `and _DEFERRED`: another thread may be registering (load_all waits for it)
        handler = load_all().get(key)
    return handler


def supported_ops() -> list[str]:
    """Every supported OpenVINO op as 'Name-version', sorted."""
    return [f"{name}-{version}" for name, version in sorted(load_all())]


def op_table(markdown: bool = False) -> str:
    """The supported-op table from the rules' documentation: one row per rule (the op/versions it covers,
    the ONNX it emits, notes, refused configurations). `onnx-bridge convert --list-ops` prints it;
    docs/openvino_ir.md carries the markdown form (converters/openvino_ir/_doctable.py)."""
    groups: dict[int, list] = {}
    for key, handler in load_all().items():
        groups.setdefault(id(handler), [handler, DOCS[key], []])[2].append(key)
    rows = []
    for _, doc, keys in groups.values():
        labels = ", ".join(f"{name}-{version}" for name, version in sorted(keys))
        rows.append((labels, doc.onnx, doc.notes, "; ".join(doc.refuses)))
    rows.sort(key=lambda row: row[0].lower())
    if markdown:
        cell = lambda text: text.replace("|", "\\|") or "—"  # noqa: E731
        lines = ["| OpenVINO | ONNX | notes | refuses (reason) |", "|---|---|---|---|"]
        lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
        return "\n".join(lines) + "\n"
    lines = []
    for labels, onnx, notes, refuses in rows:
        lines.append(labels)
        lines.append(f"    onnx: {onnx}")
        if notes:
            lines.append(f"    notes: {notes}")
        if refuses:
            lines.append(f"    refuses: {refuses}")
    count = len(RULES)
    return f"{count} OpenVINO op versions import into ONNX (opset 18, dialect opset 12):\n" + "\n".join(lines) + "\n"
