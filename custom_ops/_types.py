"""Element types of the dialect: names, numpy dtypes, ONNX codes, limits and compute types."""
from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import TensorProto

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

#: ONNX element type -> numpy dtype, for every type the contract names.
ONNX_TO_NUMPY = {
    TensorProto.BOOL: np.dtype(np.bool_),
    TensorProto.INT8: np.dtype(np.int8), TensorProto.UINT8: np.dtype(np.uint8),
    TensorProto.INT16: np.dtype(np.int16), TensorProto.UINT16: np.dtype(np.uint16),
    TensorProto.INT32: np.dtype(np.int32), TensorProto.UINT32: np.dtype(np.uint32),
    TensorProto.INT64: np.dtype(np.int64), TensorProto.UINT64: np.dtype(np.uint64),
    TensorProto.FLOAT16: np.dtype(np.float16), TensorProto.BFLOAT16: BFLOAT16,
    TensorProto.FLOAT: np.dtype(np.float32), TensorProto.DOUBLE: np.dtype(np.float64),
}
#: ONNX tensor(string) elements (UTF-8 text) are Python str in an object array, as onnxruntime gives them;
#: OpenVINO's string element type is the same (a string tensor's bytes, StringTensorUnpack-15).
STRING = np.dtype(object)
ONNX_TO_NUMPY[TensorProto.STRING] = STRING
NUMPY_TO_ONNX = {v: k for k, v in ONNX_TO_NUMPY.items()}
#: numpy dtype -> OpenVINO element type name (ov.Type(name), ov.Type.get_type_name()).
OPENVINO_NAMES = {
    np.dtype(np.bool_): "boolean",
    np.dtype(np.int8): "i8", np.dtype(np.uint8): "u8", np.dtype(np.int16): "i16", np.dtype(np.uint16): "u16",
    np.dtype(np.int32): "i32", np.dtype(np.uint32): "u32", np.dtype(np.int64): "i64", np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16", BFLOAT16: "bf16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
    STRING: "string",
}

INTEGER_TYPES = tuple(np.dtype(t) for t in
                      (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64))
FLOAT_TYPES = (np.dtype(np.float16), BFLOAT16, np.dtype(np.float32), np.dtype(np.float64))
#: Every data type T of the contract.
DATA_TYPES = (np.dtype(np.bool_),) + INTEGER_TYPES + FLOAT_TYPES
#: Types onnxruntime-extensions Python ops cannot carry: the session casts them to float32 around the node.
WIDENED_TYPES = {np.dtype(np.float16): np.dtype(np.float32), BFLOAT16: np.dtype(np.float32)}

_NAMES = {np.dtype(np.bool_): "bool", BFLOAT16: "bfloat16", STRING: "string"}


def type_name(dtype) -> str:
    dtype = np.dtype(dtype)
    return _NAMES.get(dtype, dtype.name)


def dtype_from_name(name: str) -> np.dtype:
    for dtype in DATA_TYPES:
        if type_name(dtype) == name:
            return dtype
    raise KeyError(name)


def is_integer(dtype) -> bool:
    return np.dtype(dtype) in INTEGER_TYPES


def is_float(dtype) -> bool:
    return np.dtype(dtype) in FLOAT_TYPES


def is_bool(dtype) -> bool:
    return np.dtype(dtype) == np.bool_


def compute_dtype(dtype) -> np.dtype:
    """Type arithmetic is done in: float16/bfloat16 in float32 (rounded once at the end), others as is."""
    dtype = np.dtype(dtype)
    return WIDENED_TYPES.get(dtype, dtype)


def lowest(dtype):
    """OpenVINO's std::numeric_limits<T>::lowest(): finite for floats, False for bool."""
    dtype = np.dtype(dtype)
    if is_bool(dtype):
        return False
    if is_integer(dtype):
        return int(np.iinfo(dtype).min)
    return float(-ml_dtypes.finfo(dtype).max)


def highest(dtype):
    dtype = np.dtype(dtype)
    if is_bool(dtype):
        return True
    if is_integer(dtype):
        return int(np.iinfo(dtype).max)
    return float(ml_dtypes.finfo(dtype).max)
