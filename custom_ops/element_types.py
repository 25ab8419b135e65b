"""Element types of the dialect, the one table of them (numpy dtype <-> ONNX code <-> OpenVINO name), limits
and compute types: the public name of custom_ops._types for the layers above (converters, onnx_bridge)."""
from ._types import (BFLOAT16, DATA_TYPES, FLOAT_TYPES, INTEGER_TYPES, NUMPY_TO_ONNX, ONNX_TO_NUMPY,
                     OPENVINO_NAMES, STRING, WIDENED_TYPES, compute_dtype, dtype_from_name, highest, is_bool, is_float,
                     is_integer, lowest, type_name)

__all__ = ["BFLOAT16", "DATA_TYPES", "FLOAT_TYPES", "INTEGER_TYPES", "NUMPY_TO_ONNX", "ONNX_TO_NUMPY",
           "OPENVINO_NAMES", "STRING", "WIDENED_TYPES", "compute_dtype", "dtype_from_name", "highest", "is_bool", "is_float",
           "is_integer", "lowest", "type_name"]
