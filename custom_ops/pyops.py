"""The dialect ops as onnxruntime-extensions Python ops: the public name of custom_ops._ort for the layers
above. Importing it registers every unit's PyOp and the invocation hook (it imports onnxruntime-extensions)."""
from ._ort import (CARRIED_TYPES, CallKeywords, PyCustomOpDef, collecting_errors, get_library_path,
                   register_pyop, take_errors)

__all__ = ["CARRIED_TYPES", "CallKeywords", "PyCustomOpDef", "collecting_errors", "get_library_path",
           "register_pyop", "take_errors"]
