"""Stock onnxruntime-extensions marshaling, for comparison: PyOps registered the documented way
(`onnx_op`) whose bodies call our kernels. They are not ours, so custom_ops._ort's hook hands them to
onnxruntime-extensions' own `_on_pyop_invocation`, which returns every output through `ndarray.tolist()`.
"""
from __future__ import annotations

import functools

import numpy as np

import custom_ops
import custom_ops._ort  # noqa: F401 - the bridge's hook is installed first, as in any bridge process
from onnxruntime_extensions import PyCustomOpDef, onnx_op

from .models import STOCK_DOMAIN

_T = {np.dtype(np.float32): PyCustomOpDef.dt_float, np.dtype(np.int32): PyCustomOpDef.dt_int32}
_I64 = PyCustomOpDef.dt_int64
_STR = PyCustomOpDef.dt_string
_SIGNATURES = {  # op -> (inputs after data, outputs after the first, attributes)
    "ScatterElementsUpdate": ((_I64, "T", _I64), (), {"reduction": _STR, "use_init_val": _I64}),
    "ScatterUpdate": ((_I64, "T", _I64), (), {}),
    "ReduceL2": ((_I64,), (), {"keep_dims": _I64}),
    "Unique": ((_I64,), (_I64, _I64, _I64),
               {"sorted": _I64, "index_element_type": _STR, "count_element_type": _STR}),
}


def _body(op: str):
    kernel = custom_ops.resolve(op, 12).kernel

    def body(*inputs, **attributes):
        if op == "Unique" and inputs[1].size == 0:  # no axis: models.stock_model feeds an empty one
            inputs = inputs[:1]
        return kernel(*inputs, **attributes)
    return body


@functools.cache
def register(op: str, dtype) -> None:
    """Register Stock<op> for data type `dtype`.

    Every signature of one op name must have the same number of inputs: onnxruntime-extensions otherwise
    fails every later session in the process ("IsCompatible input count does not match"), so Unique
    always has its axis input (empty when absent).
    """
    t = _T[np.dtype(dtype)]
    rest, outputs, attributes = _SIGNATURES[op]
    inputs = [t] + [t if r == "T" else r for r in rest]
    onnx_op(op_type=f"{STOCK_DOMAIN}::Stock{op}", inputs=inputs, outputs=[t, *outputs],
            attrs=attributes)(_body(op))
