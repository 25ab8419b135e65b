"""Stock onnxruntime-extensions marshaling, for comparison: PyOps registered the documented way
(`onnx_op`) whose bodies call our kernels. They are not ours, so custom_ops.pyops' hook hands them to
onnxruntime-extensions' own `_on_pyop_invocation`, which returns every output through `ndarray.tolist()`.
The signature comes from the op's unit: ports of the data input's type constraint take the data type, the
other ports int64; attributes by kind.
"""
from __future__ import annotations

import functools

import numpy as np

import custom_ops
import custom_ops.pyops  # noqa: F401 - the bridge's hook is installed first, as in any bridge process
from onnxruntime_extensions import PyCustomOpDef, onnx_op

from .models import STOCK_DOMAIN

_T = {np.dtype(np.float32): PyCustomOpDef.dt_float, np.dtype(np.int32): PyCustomOpDef.dt_int32}
_ATTRIBUTES = {"int": PyCustomOpDef.dt_int64, "string": PyCustomOpDef.dt_string, "float": PyCustomOpDef.dt_float}


def _body(op: str):
    spec = custom_ops.unit_of(op).newest
    optional = [i for i, port in enumerate(spec.inputs) if port.optional]

    def body(*inputs, **attributes):
        # an absent optional input comes as an empty one (models.stock_model): left out again
        inputs = [x for i, x in enumerate(inputs) if not (i in optional and x.size == 0)]
        return spec.kernel(*inputs, **attributes)
    return body


@functools.cache
def register(op: str, dtype) -> None:
    """Register Stock<op> for data type `dtype`.

    Every signature of one op name must have the same number of inputs: onnxruntime-extensions otherwise
    fails every later session in the process ("IsCompatible input count does not match"), so optional
    inputs are always inputs (empty when absent).
    """
    t, spec = _T[np.dtype(dtype)], custom_ops.unit_of(op).newest
    data = spec.inputs[0].type_constraint
    port_type = lambda port: t if port.type_constraint == data else PyCustomOpDef.dt_int64  # noqa: E731
    onnx_op(op_type=f"{STOCK_DOMAIN}::Stock{op}", inputs=[port_type(p) for p in spec.inputs],
            outputs=[port_type(p) for p in spec.outputs],
            attrs={a.name: _ATTRIBUTES[a.kind] for a in spec.attributes})(_body(op))
