"""What custom_ops._ort needs from onnxruntime-extensions beyond its documented API, checked once at import.

_ort replaces the PyOp invocation hook (so kernels get and return numpy arrays instead of lists) and looks
up registrations itself. That relies on internals of onnxruntime_extensions._ocos that may change in any
release: check() verifies every one of them and raises ImportError naming the supported range, instead of
a failure deep inside a session run (or a crash in C++).
"""
from __future__ import annotations

import inspect
from importlib import metadata

#: The releases the test suite runs against (CI installs the lowest; the newest is whatever pip picks).
#: NEWEST_TESTED is informative: a newer release passes check() when its internals still match.
MINIMUM = (0, 12)
NEWEST_TESTED = "0.15"
SUPPORTED = f"onnxruntime-extensions >= {'.'.join(map(str, MINIMUM))} (tested up to {NEWEST_TESTED}.x)"

#: PyCustomOpDef type codes _ort registers with.
_TYPE_CODES = ("dt_bool", "dt_int8", "dt_uint8", "dt_int16", "dt_uint16", "dt_int32", "dt_uint32",
               "dt_int64", "dt_uint64", "dt_float", "dt_double", "dt_string")


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit()) if not piece.isdigit() else piece
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def problems() -> list[str]:
    """What is missing or different in the installed onnxruntime-extensions (empty: all is as _ort needs)."""
    try:
        version = metadata.version("onnxruntime-extensions")
    except metadata.PackageNotFoundError:
        return ["onnxruntime-extensions is not installed"]
    found = []
    if _version_tuple(version) < MINIMUM:
        found.append(f"version {version} is older than the minimum")
    try:
        import onnxruntime_extensions as ortx
        from onnxruntime_extensions import _ocos
    except Exception as error:  # noqa: BLE001 - any import failure is reported, not raised raw
        return found + [f"cannot import onnxruntime_extensions._ocos ({type(error).__name__}: {error})"]
    for name in ("PyCustomOpDef", "onnx_op", "get_library_path"):
        if not hasattr(ortx, name):
            found.append(f"onnxruntime_extensions.{name} is missing")
    pyop = getattr(_ocos, "PyCustomOpDef", None)
    if pyop is None:
        found.append("_ocos.PyCustomOpDef is missing")
    else:
        if not callable(getattr(pyop, "install_hooker", None)):
            found.append("PyCustomOpDef.install_hooker is missing")
        missing = [code for code in _TYPE_CODES if not hasattr(pyop, code)]
        if missing:
            found.append(f"PyCustomOpDef type codes missing: {', '.join(missing)}")
    hook = getattr(_ocos, "_on_pyop_invocation", None)
    if not callable(hook):
        found.append("_ocos._on_pyop_invocation (the stock invocation hook) is missing")
    elif len(inspect.signature(hook).parameters) != 3:
        found.append("_ocos._on_pyop_invocation no longer takes (k_id, feed, attributes)")
    opdef = getattr(_ocos, "Opdef", None)
    if opdef is None:
        found.append("_ocos.Opdef is missing")
    else:
        if not isinstance(getattr(opdef, "_odlist", None), dict):
            found.append("_ocos.Opdef._odlist (registrations by id) is missing")
        if not callable(getattr(opdef, "cast_attributes", None)):
            found.append("_ocos.Opdef.cast_attributes is missing")
    return found


def check() -> None:
    """Raise ImportError naming the supported range when the installed release does not fit."""
    found = problems()
    if found:
        try:
            installed = metadata.version("onnxruntime-extensions")
        except metadata.PackageNotFoundError:
            installed = "none"
        raise ImportError(f"onnx-bridge needs {SUPPORTED}; installed: {installed}, which does not fit: "
                          + "; ".join(found))
