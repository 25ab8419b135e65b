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


#: Models whose initializers hold more than this are written tensor by tensor (see _write_streamed).
STREAM_BYTES = 32 << 20


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _initializer_bytes(model: onnx.ModelProto) -> int:
    """Size of the initializers' data from their dims (reading raw_data or ByteSize() would copy it)."""
    total = 0
    for tensor in model.graph.initializer:
        count = 1
        for dim in tensor.dims:
            count *= dim
        total += count * onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize \
            if tensor.data_type != onnx.TensorProto.STRING else 0
    return total


def _copy_fields(source, target, skip: str) -> None:
    for field, value in source.ListFields():
        if field.name == skip:
            continue
        if field.is_repeated:
            getattr(target, field.name).extend(value)
        elif field.message_type is not None:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)


def _write_streamed(model: onnx.ModelProto, path) -> None:
    """Write `model` without ever holding a second copy of its weights (SerializeToString would): the model
    without initializers, then each initializer as a fragment ModelProto{graph{initializer: t}}. Protobuf
    merges repeated occurrences of an embedded message field, so the file parses to the same model."""
    graph_tag = onnx.ModelProto.DESCRIPTOR.fields_by_name["graph"].number << 3 | 2
    initializer_tag = onnx.GraphProto.DESCRIPTOR.fields_by_name["initializer"].number << 3 | 2
    shell = onnx.ModelProto()
    _copy_fields(model, shell, skip="graph")
    _copy_fields(model.graph, shell.graph, skip="initializer")
    with open(path, "wb") as stream:
        stream.write(shell.SerializeToString())
        for tensor in model.graph.initializer:
            data = tensor.SerializeToString()
            inner = bytes([initializer_tag]) + _varint(len(data))
            stream.write(bytes([graph_tag]) + _varint(len(inner) + len(data)) + inner)
            stream.write(data)


def save_model(model: onnx.ModelProto, path, *, external_data: bool = False) -> Path:
    """Write atomically: a temporary file in the same directory, then rename over the target. Large models
    (initializers over STREAM_BYTES) are written tensor by tensor, so saving needs no second copy of them."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
        if not external_data and _initializer_bytes(model) > STREAM_BYTES:
            _write_streamed(model, temporary)
        else:
            onnx.save(model, temporary, save_as_external_data=external_data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
