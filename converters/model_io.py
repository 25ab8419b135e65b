"""Loading and saving models: clear errors for unreadable input, atomic writes for output."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import onnx

from custom_ops.errors import ModelError


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
