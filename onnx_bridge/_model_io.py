"""Loading and saving models: clear errors for unreadable input, atomic writes for output."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import onnx

from .config import IR_VERSION, MAX_ORT_OPSET
from .errors import ModelError


def load_model(model) -> onnx.ModelProto:
    """A copy of `model` given as a path, bytes or ModelProto."""
    if isinstance(model, onnx.ModelProto):
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        return copy
    if isinstance(model, (bytes, bytearray)):
        try:
            return onnx.load_from_string(bytes(model))
        except Exception as exc:
            raise ModelError(f"bytes are not a valid ONNX model: {exc}") from None
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.is_file():
            raise ModelError(f"model file not found: {path}")
        try:
            loaded = onnx.load(str(path))
        except Exception as exc:
            raise ModelError(f"{path} is not a readable ONNX model: {type(exc).__name__}: {exc}") from None
        if not loaded.graph.node and not loaded.graph.output:
            raise ModelError(f"{path} holds no graph (is it an ONNX model?)")
        return loaded
    raise ModelError(f"expected a path, bytes or onnx.ModelProto, got {type(model).__name__}")


def opset_of(model: onnx.ModelProto, domain: str) -> int | None:
    for entry in model.opset_import:
        if entry.domain == domain or (domain in ("", "ai.onnx") and entry.domain in ("", "ai.onnx")):
            return entry.version
    return None


def set_opset(model: onnx.ModelProto, domain: str, version: int) -> None:
    for entry in model.opset_import:
        if entry.domain == domain:
            entry.version = version
            return
    model.opset_import.add(domain=domain, version=version)


def make_runnable(model: onnx.ModelProto) -> onnx.ModelProto:
    """Pin the IR version onnxruntime reads; refuse opsets it cannot run (in place, returns model)."""
    default = opset_of(model, "")
    if default is not None and default > MAX_ORT_OPSET:
        from converters.passes import pin_runnable_opset  # lazy: converters imports this module
        notes: list[str] = []
        pin_runnable_opset(model, notes)  # lowers the opset when no op of the model changes meaning
        if opset_of(model, "") > MAX_ORT_OPSET:
            raise ModelError(f"model imports default-domain opset {default}; onnxruntime runs at most "
                             f"{MAX_ORT_OPSET} and {notes[0].split('changed ops: ')[-1]} changed since. "
                             f"Convert it with onnx.version_converter first.")
    if model.ir_version > IR_VERSION or model.ir_version == 0:
        model.ir_version = IR_VERSION  # onnx >= 1.23 writes IR 14; nothing we emit needs more than 10
    return model


def save_model(model: onnx.ModelProto, path, *, external_data: bool = False) -> Path:
    """Write atomically: a temporary file in the same directory, then rename over the target."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
        onnx.save(model, temporary, save_as_external_data=external_data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
