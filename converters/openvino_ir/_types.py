"""OpenVINO element types <-> ONNX element types and numpy dtypes."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from custom_ops._types import BFLOAT16, ONNX_TO_NUMPY

#: OpenVINO element type name (ov.Type.get_type_name()) -> ONNX element type.
OV_TO_ONNX = {
    "boolean": TensorProto.BOOL,
    "i8": TensorProto.INT8, "u8": TensorProto.UINT8, "i16": TensorProto.INT16, "u16": TensorProto.UINT16,
    "i32": TensorProto.INT32, "u32": TensorProto.UINT32, "i64": TensorProto.INT64, "u64": TensorProto.UINT64,
    "f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16, "f32": TensorProto.FLOAT,
    "f64": TensorProto.DOUBLE,
}
INTEGER_CODES = frozenset({TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16,
                           TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64})
UNSIGNED_CODES = frozenset({TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64})
FLOAT_CODES = frozenset({TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE})


def onnx_type(ov_type) -> int | None:
    """ONNX element type of an ov.Type (or its name); None when ONNX cannot carry it (u1, i4, nf4, ...)."""
    name = ov_type if isinstance(ov_type, str) else ov_type.get_type_name()
    return OV_TO_ONNX.get(name)


def numpy_type(code: int) -> np.dtype:
    return ONNX_TO_NUMPY[code]


def constant_array(constant) -> np.ndarray:
    """The value of an OpenVINO Constant node as a numpy array of the matching dtype.

    Constant.get_data() hands bf16 back as raw bits typed float16; reinterpret them as bfloat16.
    """
    data = np.array(constant.get_data(), copy=True)
    if constant.get_element_type().get_type_name() == "bf16":
        data = data.view(np.uint16).view(BFLOAT16)
    return data.reshape(tuple(constant.get_output_shape(0)))


def tensor_proto(array: np.ndarray, name: str, code: int) -> TensorProto:
    """A TensorProto holding `array` as little-endian raw bytes (works for bool, f16 and bf16 too)."""
    array = np.asarray(array, dtype=numpy_type(code))  # (ascontiguousarray would make 0-D 1-D)
    tensor = TensorProto(name=name, data_type=code, dims=array.shape)
    tensor.raw_data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
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
