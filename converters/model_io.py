"""Loading and saving models: clear errors for unreadable input, atomic writes for output."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

from custom_ops.errors import ModelError

from .graph import subgraphs


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
#: save_model(external_data=None) writes the weights to external data when they pass this: a serialized
#: ModelProto is limited to 2 GiB by protobuf (64 MiB left for the graph itself).
EXTERNAL_AUTO_BYTES = (2 << 30) - (64 << 20)
#: In external data, tensors smaller than this stay in the .onnx (as onnx.save's size_threshold).
EXTERNAL_MIN_BYTES = 1024
#: Offsets of tensors in the external data file are multiples of this.
EXTERNAL_ALIGN = 64


#: Seconds after which writing a model reports progress on stderr.
PROGRESS_AFTER = 2.0


class _Progress:
    """'writing NAME: x of y MB' on stderr, at most every INTERVAL seconds, once writing is slow."""

    INTERVAL = 0.5

    def __init__(self, path: Path, total: int):
        self.name, self.total, self.written = path.name, total, 0
        self.start = self.last = time.monotonic()
        self.shown = False

    def add(self, nbytes: int) -> None:
        self.written += nbytes
        now = time.monotonic()
        if now - self.start > PROGRESS_AFTER and now - self.last >= self.INTERVAL:
            self.last, self.shown = now, True
            print(f"\rwriting {self.name}: {self.written / 1e6:.0f} of {self.total / 1e6:.0f} MB, "
                  f"{now - self.start:.1f} s", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.shown:
            print(file=sys.stderr, flush=True)


#: byte arrays at least this large that are the transpose of a contiguous one are copied in 8-byte words
#: (word_transposable): smaller ones sit in cache, where numpy's one strided copy is as fast
WORD_TRANSPOSE_BYTES = 1 << 18
#: rows of the result made per block of the word transpose (a block's words, then its bytes, stay in cache)
WORD_TRANSPOSE_ROWS = 256


def word_transposable(array) -> bool:
    """Whether `array` is a large 2-D byte array that is the transpose of a C-contiguous one, rows a multiple of
    8 (a MatMul's int8 weights [N, K] read as [K, N]): numpy copies such an array byte by byte down the
    source's columns, each byte from another cache line (~1.5 ns a byte); moving 8-byte words first (8x fewer
    strided reads), then the bytes within each block of 8 rows while in cache, takes about half that."""
    return isinstance(array, np.ndarray) and array.ndim == 2 and array.itemsize == 1 \
        and array.nbytes >= WORD_TRANSPOSE_BYTES and array.shape[0] % 8 == 0 \
        and not array.flags.c_contiguous and array.T.flags.c_contiguous


def transposed_blocks(array: np.ndarray, out: np.ndarray | None = None):
    """The rows of a word_transposable `array`, C-contiguous, WORD_TRANSPOSE_ROWS at a time: made in place in
    `out` ([rows / 8, 8, columns]) or, without it, each in the same small buffer (use a block before asking
    for the next: a writer never holds a copy of the whole)."""
    rows, columns = array.shape
    words, step = array.T.view(np.uint64), WORD_TRANSPOSE_ROWS // 8  # [columns, rows / 8]: 8 rows a word
    buffer = np.empty((step, 8, columns), array.dtype) if out is None else None
    for start in range(0, rows // 8, step):
        block = (buffer if out is None else out[start:])[:min(step, rows // 8 - start)]
        moved = np.ascontiguousarray(words[:, start:start + len(block)].T)  # [count, columns] words
        block[...] = moved.view(array.dtype).reshape(len(block), columns, 8).transpose(0, 2, 1)
        yield block.reshape(-1, columns)


def contiguous(array: np.ndarray) -> np.ndarray:
    """`array` C-contiguous (itself when it is one; np.ascontiguousarray's copy, a word_transposable one
    copied in words then bytes)."""
    if not word_transposable(array):
        return np.ascontiguousarray(array)
    out = np.empty((array.shape[0] // 8, 8, array.shape[1]), array.dtype)
    for _ in transposed_blocks(array, out):
        pass
    return out.reshape(array.shape)


class Weights:
    """Initializer data kept outside a ModelProto until it is written (the OpenVINO importer's large
    constants: views of OpenVINO's memory-mapped weights), so no protobuf copy of them is ever made.

    A deferred initializer has its name, type and dims; data_location EXTERNAL with location PENDING marks it.
    save_model(model, path, weights=w) writes their bytes straight from the arrays (into the .onnx or into
    external data); materialize(model) puts them into the model (a complete ModelProto)."""

    PENDING = "onnx-bridge:pending"

    def __init__(self):
        self.arrays: dict = {}
        #: called with each array once its bytes are written (the OpenVINO importer drops the pages of
        #: OpenVINO's memory-mapped weights there: a later read faults them in again), or None
        self.release = None

    def __len__(self) -> int:
        return len(self.arrays)

    def defer(self, tensor: onnx.TensorProto, array, name: str, code: int) -> onnx.TensorProto:
        """Mark `tensor` as deferred with `array`'s data: a numpy array, or for UINT4/INT4 an object with
        `shape` and `packed` (uint8 bytes, two values a byte, low nibble first: ONNX's raw_data layout)."""
        tensor.name, tensor.data_type = name, code
        tensor.dims.extend(array.shape)
        tensor.data_location = onnx.TensorProto.EXTERNAL
        tensor.external_data.add(key="location", value=self.PENDING)
        self.arrays[name] = array
        return tensor

    @classmethod
    def pending(cls, tensor: onnx.TensorProto) -> bool:
        return tensor.data_location == onnx.TensorProto.EXTERNAL and \
            any(e.key == "location" and e.value == cls.PENDING for e in tensor.external_data)

    def data(self, tensor: onnx.TensorProto) -> memoryview:
        """The little-endian bytes of a deferred tensor, without a copy where the array allows it."""
        try:
            array = self.arrays[tensor.name]
        except KeyError:
            raise ModelError(f"initializer {tensor.name!r} has no deferred data") from None
        if tensor.data_type in _PACKED_4BIT:  # already packed (e.g. a view of OpenVINO's u4/i4 bytes)
            packed = np.ascontiguousarray(array.packed).reshape(-1).view(np.uint8)
            return memoryview(packed[:_tensor_bytes(tensor)])
        array = np.asarray(array, dtype=onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
                           if tensor.data_type != onnx.TensorProto.BFLOAT16 else array.dtype)
        array = contiguous(array.astype(array.dtype.newbyteorder("<"), copy=False))
        return memoryview(array.reshape(-1).view(np.uint8))

    def pieces(self, tensor: onnx.TensorProto) -> tuple:
        """(the bytes of data(tensor) as an iterable of pieces, their total size): a word_transposable array
        block by block (transposed_blocks: no contiguous copy of it is ever made), else data(tensor) whole."""
        array = self.arrays.get(tensor.name)
        if word_transposable(array) and tensor.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8) \
                and array.dtype == onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type):
            blocks = transposed_blocks(array)
            return (memoryview(block.reshape(-1).view(np.uint8)) for block in blocks), array.nbytes
        data = self.data(tensor)
        return [data], data.nbytes

    def written(self, tensor: onnx.TensorProto) -> None:
        """`tensor`'s bytes are in the file: its array's memory may be released (`release`)."""
        if self.release is not None:
            array = self.arrays[tensor.name]
            self.release(array.packed if tensor.data_type in _PACKED_4BIT else array)

    def materialize(self, model: onnx.ModelProto, names=None) -> onnx.ModelProto:
        """Put every deferred tensor's bytes (or those of `names`) into `model` (in place; returns it)."""
        for tensor in _initializers(model):
            if self.pending(tensor) and (names is None or tensor.name in names):
                data = self.data(tensor)
                del tensor.external_data[:]
                tensor.ClearField("data_location")
                tensor.raw_data = data.tobytes()
        return model


#: The standard ONNX ops with graph attributes. A scan for subgraphs looks into the attributes of these and of
#: nodes of other domains only: reading every node's attributes was most of such a scan's time.
SUBGRAPH_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})


def _initializers(model: onnx.ModelProto):
    """The initializers of the main graph and of every subgraph."""
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        yield from graph.initializer
        for node in graph.node:
            if node.domain or node.op_type in SUBGRAPH_OPS:
                graphs.extend(subgraphs(node))


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


#: Element types stored two values a byte.
_PACKED_4BIT = frozenset({onnx.TensorProto.UINT4, onnx.TensorProto.INT4})


def _tensor_bytes(tensor: onnx.TensorProto) -> int:
    if tensor.data_type == onnx.TensorProto.STRING:
        return 0
    count = 1
    for dim in tensor.dims:
        count *= dim
    if tensor.data_type in _PACKED_4BIT:
        return (count + 1) // 2
    return count * onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize


def _initializer_bytes(model: onnx.ModelProto) -> int:
    """Size of the initializers' data from their dims (reading raw_data or ByteSize() would copy it)."""
    return sum(_tensor_bytes(tensor) for tensor in model.graph.initializer)


def _copy_fields(source, target, skip) -> None:
    for field, value in source.ListFields():
        if field.name in skip:
            continue
        if field.is_repeated:
            getattr(target, field.name).extend(value)
        elif field.message_type is not None:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)


_GRAPH_TAG = onnx.ModelProto.DESCRIPTOR.fields_by_name["graph"].number << 3 | 2
_INITIALIZER_TAG = onnx.GraphProto.DESCRIPTOR.fields_by_name["initializer"].number << 3 | 2
_RAW_DATA_TAG = onnx.TensorProto.DESCRIPTOR.fields_by_name["raw_data"].number << 3 | 2


def _shell(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model without the initializers of its main graph."""
    shell = onnx.ModelProto()
    _copy_fields(model, shell, skip=("graph",))
    _copy_fields(model.graph, shell.graph, skip=("initializer",))
    return shell


def _header(tensor: onnx.TensorProto) -> onnx.TensorProto:
    """A tensor's fields but its data (and the PENDING mark)."""
    header = onnx.TensorProto()
    _copy_fields(tensor, header, skip=("raw_data", "external_data", "data_location"))
    return header


def _check_pending(model: onnx.ModelProto, weights: Weights | None) -> None:
    pending = [t.name for t in _initializers(model) if Weights.pending(t)]
    if pending and (weights is None or any(name not in weights.arrays for name in pending)):
        raise ModelError(f"{len(pending)} initializer(s) hold deferred data ({pending[0]!r}, ...): save the "
                         f"model with the Weights object it was imported with")


def _write_streamed(model: onnx.ModelProto, path, weights: Weights | None, total: int) -> None:
    """Write `model` without ever holding a second copy of its weights (SerializeToString would): the model
    without initializers, then each initializer as a fragment ModelProto{graph{initializer: t}}. Protobuf
    merges repeated occurrences of an embedded message field, so the file parses to the same model.
    Deferred tensors are written straight from their arrays (no bytes object of them is made). total: the
    initializers' bytes (_initializer_bytes), for the progress line."""
    progress = _Progress(Path(path), total)
    with open(path, "wb") as stream:
        stream.write(_shell(model).SerializeToString())
        for tensor in model.graph.initializer:
            if weights is not None and Weights.pending(tensor):
                pieces, nbytes = weights.pieces(tensor)
                head = _header(tensor).SerializeToString() + bytes([_RAW_DATA_TAG]) + _varint(nbytes)
                size = len(head) + nbytes
            else:
                pieces, head = None, tensor.SerializeToString()
                size = len(head)
            inner = bytes([_INITIALIZER_TAG]) + _varint(size)
            stream.write(bytes([_GRAPH_TAG]) + _varint(len(inner) + size) + inner)
            stream.write(head)
            if pieces is not None:
                for piece in pieces:
                    stream.write(piece)
                piece = pieces = None  # (a contiguous copy made by data() is freed before the next tensor)
                weights.written(tensor)
            progress.add(size)
    progress.done()


def _write_external(model: onnx.ModelProto, path: Path, weights: Weights | None, total: int) -> None:
    """`path` with the main graph's initializers of EXTERNAL_MIN_BYTES or more in `path`.data (offsets
    aligned to EXTERNAL_ALIGN), each written straight from its array or raw_data; `model` is not changed.
    total: the initializers' bytes (_initializer_bytes), for the progress line."""
    location = path.name + ".data"
    shell = _shell(model)
    offset = 0
    progress = _Progress(path.parent / location, total)
    with open(path.parent / location, "wb") as stream:
        for tensor in model.graph.initializer:
            deferred = weights is not None and Weights.pending(tensor)
            if deferred:
                pieces, nbytes = weights.pieces(tensor)
            elif tensor.HasField("raw_data") and tensor.data_location != onnx.TensorProto.EXTERNAL:
                pieces = [memoryview(tensor.raw_data)]
                nbytes = pieces[0].nbytes
            else:  # typed fields (float_data, ...), strings, data already external elsewhere
                shell.graph.initializer.append(tensor)
                continue
            header = _header(tensor)
            if nbytes < EXTERNAL_MIN_BYTES:
                header.raw_data = b"".join(pieces)
                shell.graph.initializer.append(header)
                continue
            padding = -offset % EXTERNAL_ALIGN
            stream.write(bytes(padding))
            offset += padding
            for piece in pieces:
                stream.write(piece)
            if deferred:
                weights.written(tensor)
            header.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", location), ("offset", str(offset)), ("length", str(nbytes))):
                header.external_data.add(key=key, value=value)
            shell.graph.initializer.append(header)
            offset += nbytes
            progress.add(nbytes)
    progress.done()
    if not offset:  # no tensor large enough: no data file
        (path.parent / location).unlink()
    with open(path, "wb") as stream:
        stream.write(shell.SerializeToString())


def needs_external_data(model: onnx.ModelProto) -> bool:
    """Whether the model's weights pass what one protobuf message holds (EXTERNAL_AUTO_BYTES)."""
    return _initializer_bytes(model) > EXTERNAL_AUTO_BYTES


def save_model(model: onnx.ModelProto, path, *, external_data: bool | None = None,
               weights: Weights | None = None) -> Path:
    """Write `model` to `path` atomically (a staging directory beside it, then renames).

    external_data: True writes the weights to `path`.data beside it (ONNX external data, location relative;
    tensors under EXTERNAL_MIN_BYTES stay in the .onnx, and no .data is written when all are that small);
    None (default) does so only when they pass protobuf's 2 GB limit (EXTERNAL_AUTO_BYTES); False never.
    weights: the Weights holding `model`'s deferred initializers (written straight from their arrays).
    Large models are written tensor by tensor, so saving needs no second copy of the weights."""
    path = Path(path)
    _check_pending(model, weights)
    total = _initializer_bytes(model)  # (once: reading a tensor's dims costs ~1.5 us)
    if external_data is None:
        external_data = total > EXTERNAL_AUTO_BYTES
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    umask = os.umask(0)
    os.umask(umask)
    try:
        target = staging / path.name
        if external_data:
            _write_external(model, target, weights, total)
        elif (weights is not None and len(weights)) or total > STREAM_BYTES:
            _write_streamed(model, target, weights, total)
        else:
            onnx.save(model, str(target))
        written = [target] + [file for file in [staging / f"{path.name}.data"] if file.exists()]
        for file in reversed(written):  # the data first: the model never refers to a missing file
            os.chmod(file, 0o666 & ~umask)  # (mkdtemp makes a 0700 directory; files get the usual mode)
            os.replace(file, path.parent / file.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return path
