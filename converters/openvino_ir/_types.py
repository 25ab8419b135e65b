"""OpenVINO element types <-> ONNX element types and numpy dtypes."""
from __future__ import annotations

import bisect

import numpy as np
from onnx import TensorProto, helper

from custom_ops.element_types import (BFLOAT16, FLOAT_TYPES, INTEGER_TYPES, NUMPY_TO_ONNX, ONNX_TO_NUMPY,
                                     OPENVINO_NAMES)

from ..model_io import contiguous

#: OpenVINO element type name (ov.Type.get_type_name()) -> ONNX element type: custom_ops' one type table
#: (OPENVINO_NAMES, NUMPY_TO_ONNX) read the other way.
OV_TO_ONNX = {name: NUMPY_TO_ONNX[dtype] for dtype, name in OPENVINO_NAMES.items()}
INTEGER_CODES = frozenset(NUMPY_TO_ONNX[dtype] for dtype in INTEGER_TYPES)
UNSIGNED_CODES = frozenset(NUMPY_TO_ONNX[dtype] for dtype in INTEGER_TYPES if dtype.kind == "u")
FLOAT_CODES = frozenset(NUMPY_TO_ONNX[dtype] for dtype in FLOAT_TYPES)


#: Names of the element types ov.Type.is_real() holds for (a name is known without asking OpenVINO again)
REAL_TYPE_NAMES = frozenset({"f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2", "f8e8m0", "f4e2m1"})


def onnx_type(ov_type) -> int | None:
    """ONNX element type of an ov.Type (or its name); None when ONNX cannot carry it (u1, i4, nf4, ...)."""
    name = ov_type if isinstance(ov_type, str) else ov_type.get_type_name()
    return OV_TO_ONNX.get(name)


#: Packed sub-byte integer types -> the ONNX type their unpacked values are carried in (exactly: every u4 value
#: is a uint8 value, every i4 an int8). ONNX opset 18 has no INT4/UINT4 (they arrive in opset 21).
CARRIED = {"u4": TensorProto.UINT8, "i4": TensorProto.INT8}


def carried_type(ov_type) -> int | None:
    name = ov_type if isinstance(ov_type, str) else ov_type.get_type_name()
    return CARRIED.get(name)


#: Bit tensors: the one op that reads them (BinaryConvolution's weights) unpacks them itself at import.
BITS = "u1"


def deferred_constant(type_name: str) -> bool:
    """Whether a Constant's element type (its name) is one ONNX cannot carry as it is (u4/i4 unpacked, u1 read by
    its reader)."""
    return type_name in CARRIED or type_name == BITS


def unpack_nibbles(packed: np.ndarray, signed: bool, shape) -> np.ndarray:
    """u4/i4 Constant bytes -> one uint8/int8 per element (element 2k in the low nibble of byte k, as
    OpenVINO packs them; i4 sign-extended)."""
    raw = np.asarray(packed).view(np.uint8).reshape(-1)
    count = int(np.prod(shape, dtype=np.int64))
    values = np.empty(raw.size * 2, np.uint8)
    values[0::2] = raw & 0x0F
    values[1::2] = raw >> 4
    values = values[:count]
    if signed:
        values = ((values.astype(np.int16) ^ 8) - 8).astype(np.int8)
    return values.reshape(tuple(shape))


class Nibbles:
    """4-bit integers packed two to a byte, element 2k in the low nibble of byte k (OpenVINO's u4/i4 bytes and
    ONNX's UINT4/INT4 raw_data alike): an initializer value for fill_tensor."""

    def __init__(self, packed: np.ndarray, shape: tuple[int, ...]):
        self.packed, self.shape = packed, tuple(shape)
        self.nbytes, self.size = packed.nbytes, int(np.prod(self.shape, dtype=np.int64))

    @classmethod
    def pack(cls, values: np.ndarray) -> "Nibbles":
        flat = np.asarray(values).astype(np.uint8).reshape(-1) & 0x0F
        if flat.size % 2:
            flat = np.append(flat, np.uint8(0))
        return cls(flat[0::2] | (flat[1::2] << 4), np.shape(values))


class Unpacked:
    """A u4/i4 Constant's values as one uint8/int8 each, unpacked only when the initializer is used: the
    4-bit weights an LLM's MatMulNBits / GatherBlockQuantized / DequantizeLinear-21 keep packed are never
    unpacked (that would take twice their bytes and most of the import's time)."""

    def __init__(self, constant):
        self.constant = constant

    def array(self) -> np.ndarray:
        return constant_array(self.constant)


def numpy_type(code: int) -> np.dtype:
    return ONNX_TO_NUMPY[code]


def constant_array(constant, type_name: str | None = None) -> np.ndarray:
    """The value of an OpenVINO Constant node as a numpy array of the matching dtype: a read-only view of
    OpenVINO's (often memory-mapped) weights, never a copy (the array keeps the Constant alive). `type_name`:
    its element type's name when the caller has it (saves asking OpenVINO again).

    Constant.get_data() hands bf16 back as raw bits typed float16; reinterpret them as bfloat16.
    """
    type_name = type_name or constant.get_element_type().get_type_name()
    if type_name == "string":   # byte strings as str (bytes that are not UTF-8 kept as surrogate escapes)
        raw = np.asarray(constant.get_tensor_view().bytes_data)
        return np.array([b.decode("utf-8", "surrogateescape") for b in raw.reshape(-1).tolist()] or [],
                        dtype=object).reshape(raw.shape)
    if type_name in CARRIED:
        return unpack_nibbles(constant.get_data(), type_name == "i4", constant.get_output_shape(0))
    data = np.asarray(constant.get_data()).view()  # shaped as the output (reading the shape costs more)
    data.flags.writeable = False
    if type_name == OPENVINO_NAMES[BFLOAT16]:
        data = data.view(np.uint16).view(BFLOAT16)
    return data


class MappedPages:
    """Drops the pages of read-only file mappings (OpenVINO's memory-mapped .bin) that copied constants
    occupied from this process's resident set (madvise MADV_DONTNEED): once a constant's bytes are in the
    ModelProto its mapped pages are not needed, and a later read of the constant faults them in again from
    the page cache. Linux only; a no-op elsewhere or when anything about the mapping is unclear. The
    mappings are read at the first array large enough to release (most imports of small IRs never do), and
    only as far as needed (MAPS_CHARS)."""

    PAGE = 4096
    MADV_DONTNEED = 4

    #: bytes of released arrays collected before one round of madvise calls (release)
    BATCH = 1 << 20
    #: characters of /proc/self/maps read first (about 40 mappings), doubled while an array lies beyond them.
    #: The kernel writes the file out on each read (the whole of it: ~0.7 ms of a convert's 50-100 ms here) and
    #: lists mappings by address; the newest, OpenVINO's .bin mapped by read_model, comes among the first.
    MAPS_CHARS = 4096

    def __init__(self):
        self.ranges: list[tuple[int, int]] | None = None  # read-only file mappings, by address (read on first use)
        self.starts: list[int] = []  # their start addresses (bisected)
        self.listed_to = 0  # what lies below this address is known (the end of the last mapping read)
        self.chars = 0  # characters of /proc/self/maps read last
        self.madvise = None
        self.pending: list[tuple[tuple[int, int], int, int]] = []  # (mapping, start, end) not yet released
        self.pending_bytes = 0

    def _read_mappings(self, chars: int = -1) -> None:
        """The read-only file mappings in the first `chars` characters of /proc/self/maps (-1: all of it)."""
        self.ranges, self.starts, self.listed_to, self.chars = [], [], 0, chars
        try:
            import sys

            if not sys.platform.startswith("linux"):
                return
            with open("/proc/self/maps") as maps:
                text = maps.read(chars)
            lines = text.splitlines()
            whole = chars < 0 or len(text) < chars
            if not whole and not text.endswith("\n"):
                lines.pop()  # (cut off)
            for line in lines:
                fields = line.split()
                # read-only (no w), file-backed (a path, not [heap], [stack], ...)
                if len(fields) >= 6 and fields[1][1] == "-" and fields[5].startswith("/"):
                    start, end = (int(x, 16) for x in fields[0].split("-"))
                    self.ranges.append((start, end))
                    self.starts.append(start)
            if whole:
                self.listed_to = float("inf")
            elif lines:
                self.listed_to = int(lines[-1].split(None, 1)[0].split("-")[1], 16)
            if self.madvise is None:
                self._load_madvise()
        except (OSError, ValueError, IndexError, AttributeError):  # no /proc, an odd line, no madvise:
            self.ranges, self.starts, self.listed_to = [], [], float("inf")  # nothing more is released

    def _load_madvise(self) -> None:
        import ctypes
        import mmap

        self.PAGE = mmap.PAGESIZE
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.madvise = libc.madvise

    def _mapping(self, address: int, end: int) -> tuple[int, int] | None:
        """The read-only file mapping holding [address, end), if any; more of /proc/self/maps is read while
        `address` lies beyond what was read."""
        while True:
            index = bisect.bisect_right(self.starts, address) - 1
            if index >= 0 and end <= self.ranges[index][1]:
                return self.ranges[index]
            if address < self.listed_to:
                return None
            self._read_mappings(2 * self.chars)

    def release(self, array: np.ndarray) -> None:
        """Drop the pages of `array` if it lies in a read-only file mapping. Batched: the ranges are collected
        and released together once BATCH bytes are pending (neighbouring constants merged into one madvise:
        each call interrupts the other threads to flush their page tables), so up to BATCH bytes stay."""
        if array.nbytes < 4 * self.PAGE:
            return
        if self.ranges is None:
            self._read_mappings(self.MAPS_CHARS)
        if self.madvise is None:
            return
        address = array.__array_interface__["data"][0]
        end = address + array.nbytes
        mapping = self._mapping(address, end)
        if mapping is None:
            return
        self.pending.append((mapping, address, end))
        self.pending_bytes += array.nbytes
        if self.pending_bytes >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        """Release the pending ranges: whole pages inside runs of neighbouring arrays of one mapping."""
        runs: list[list[int]] = []
        for mapping, address, end in sorted(self.pending):
            if runs and runs[-1][0] == mapping and address - runs[-1][2] < self.PAGE:
                runs[-1][2] = max(runs[-1][2], end)
            else:
                runs.append([mapping, address, end])
        self.pending, self.pending_bytes = [], 0
        for _, address, end in runs:
            first = -(-address // self.PAGE) * self.PAGE  # whole pages inside the run only
            last = end // self.PAGE * self.PAGE
            if last > first:
                self.madvise(first, last - first, self.MADV_DONTNEED)


def tensor_proto(array: np.ndarray, name: str, code: int) -> TensorProto:
    """A TensorProto holding `array` as little-endian raw bytes (works for bool, f16 and bf16 too)."""
    return fill_tensor(TensorProto(), array, name, code)


def fill_tensor(tensor: TensorProto, array: np.ndarray, name: str, code: int) -> TensorProto:
    """Fill `tensor` (e.g. a new entry of graph.initializer, so the bytes are not copied twice) in place."""
    if isinstance(array, Nibbles):  # UINT4/INT4
        tensor.name, tensor.data_type = name, code
        tensor.dims.extend(array.shape)
        tensor.raw_data = array.packed.tobytes()
        return tensor
    array = np.asarray(array, dtype=numpy_type(code))  # (ascontiguousarray would make 0-D 1-D)
    tensor.name, tensor.data_type = name, code
    tensor.dims.extend(array.shape)
    if code == TensorProto.STRING:
        tensor.string_data.extend(v.encode("utf-8") for v in array.reshape(-1).tolist())
        return tensor
    array = array.astype(array.dtype.newbyteorder("<"), copy=False)
    if not array.flags.c_contiguous:  # (a MatMul's transposed int8 weights: model_io copies them faster)
        array = contiguous(array)
    tensor.raw_data = array.tobytes()
    return tensor


def value_info(name: str, code: int, partial_shape, dim_prefix: str | None = None):
    if partial_shape.rank.is_dynamic:
        return helper.make_tensor_value_info(name, code, None)
    dims = []
    for axis, dim in enumerate(partial_shape):
        if dim.is_static:
            dims.append(dim.get_length())
        else:
            dims.append(f"{dim_prefix}_{axis}" if dim_prefix else None)
    return helper.make_tensor_value_info(name, code, dims)
