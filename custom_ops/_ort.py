"""onnxruntime-extensions adapter: the only module that imports onnxruntime_extensions.

- One PyOp registration per input type signature the contract allows (same op name, dispatch by types).
- Every registration declares the op's attributes plus hidden ones written by session.prepare_model:
  `_node` (node name for errors), `_dtype` (logical type of a float16/bfloat16 node the session widened to
  float32) and, for Unique, `_axis_absent`.
- A replacement of onnxruntime-extensions' invocation hook that returns C-contiguous numpy arrays instead
  of `ndarray.tolist()` (its C++ side memcpys array data; other users' PyOps still get the stock hook),
  and that never lets an exception escape into C++ (which calls std::terminate): the error is recorded
  and onnx_bridge.InferenceSession.run raises it.
"""
from __future__ import annotations

import itertools
import threading

import numpy as np
from onnxruntime_extensions import PyCustomOpDef, _ocos, get_library_path, onnx_op  # noqa: F401

from .config import DIALECT_OPSET, DOMAIN
from .errors import OpError

from ._spec import resolve
from ._types import INTEGER_TYPES, dtype_from_name

#: numpy dtype -> onnxruntime-extensions PyOp type code (float16/bfloat16 cannot be carried).
PYOP_TYPES = {
    np.dtype(np.bool_): PyCustomOpDef.dt_bool,
    np.dtype(np.int8): PyCustomOpDef.dt_int8, np.dtype(np.uint8): PyCustomOpDef.dt_uint8,
    np.dtype(np.int16): PyCustomOpDef.dt_int16, np.dtype(np.uint16): PyCustomOpDef.dt_uint16,
    np.dtype(np.int32): PyCustomOpDef.dt_int32, np.dtype(np.uint32): PyCustomOpDef.dt_uint32,
    np.dtype(np.int64): PyCustomOpDef.dt_int64, np.dtype(np.uint64): PyCustomOpDef.dt_uint64,
    np.dtype(np.float32): PyCustomOpDef.dt_float, np.dtype(np.float64): PyCustomOpDef.dt_double,
}
CARRIED_TYPES = tuple(PYOP_TYPES)
HIDDEN_ATTRIBUTES = {"_node": PyCustomOpDef.dt_string, "_dtype": PyCustomOpDef.dt_string}


class _Registration:
    """One registered signature: runs the spec's kernel and returns arrays of the declared types."""

    def __init__(self, spec, output_dtypes, inplace_first: bool):
        self.spec, self.output_dtypes, self.inplace_first = spec, output_dtypes, inplace_first

    def __call__(self, feed, attributes):
        attributes = dict(attributes)
        node = attributes.pop("_node", "") or None
        logical = attributes.pop("_dtype", "")
        axis_absent = int(attributes.pop("_axis_absent", 0))
        inputs = list(feed)
        if axis_absent:
            inputs = inputs[:1]
        if logical:  # widened by the session: compute in the logical type (its limits, one rounding)
            inputs = [x.astype(dtype_from_name(logical)) if x.dtype == np.float32 else x for x in inputs]
        try:
            values = self.spec.kernel(*inputs, **self.spec.attribute_values(attributes),
                                      **({"inplace": True} if self.inplace_first and not logical else {}))
        except OpError as error:
            raise error.with_node(node)
        except Exception as error:  # a bug of ours: still a clean, attributable exception
            raise OpError(self.spec.op_type, "kernel", f"internal failure {type(error).__name__}: {error}",
                          node=node) from error
        if not isinstance(values, tuple):
            values = (values,)
        # np.require, not np.ascontiguousarray: the latter turns a 0-D result into shape (1,).
        return [np.require(v, dtype=d, requirements="C") for v, d in zip(values, self.output_dtypes)]



_OURS: dict[int, _Registration] = {}
_pending: list[BaseException] = []
_lock = threading.RLock()


def take_errors() -> list[BaseException]:
    """Errors raised inside dialect ops since the last call (onnx_bridge.InferenceSession raises them)."""
    with _lock:
        errors = list(_pending)
        _pending.clear()
    return errors


def _invoke(k_id, feed, attributes):
    registration = _OURS.get(k_id)
    if registration is None:
        return _ocos._on_pyop_invocation(k_id, feed, attributes)
    try:
        outputs = registration(feed, _ocos.Opdef._odlist[k_id].cast_attributes(attributes))
    except BaseException as error:  # noqa: BLE001 - anything escaping here aborts the process
        with _lock:
            _pending.append(error)
        outputs = [np.zeros((0,), dtype=d) for d in registration.output_dtypes]
    result = [k_id]
    for array in outputs:
        result += [array.shape, array]
    return tuple(result)


def _register(op_type: str, input_dtypes, output_dtypes, extra_attributes=()):
    spec = resolve(op_type, DIALECT_OPSET)  # the newest version: session.prepare_model normalises to it
    attrs = {a.name: (PyCustomOpDef.dt_int64 if a.kind == "int" else PyCustomOpDef.dt_string)
             for a in spec.attributes}
    attrs.update(HIDDEN_ATTRIBUTES)
    attrs.update({name: PyCustomOpDef.dt_int64 for name in extra_attributes})
    body = _Registration(spec, output_dtypes, inplace_first=op_type in ("ScatterElementsUpdate",
                                                                          "ScatterUpdate"))
    opdef = onnx_op(op_type=f"{DOMAIN}::{op_type}", inputs=[PYOP_TYPES[t] for t in input_dtypes],
                    outputs=[PYOP_TYPES[t] for t in output_dtypes], attrs=attrs)(body)
    _OURS[id(opdef)] = body


def _register_all() -> None:
    # Every registration of one op name must have the same number of inputs: onnxruntime-extensions
    # otherwise fails every later session ("IsCompatible input count does not match"). That is why
    # Unique always takes its axis input (prepare_model adds a placeholder and sets _axis_absent).
    i64 = np.dtype(np.int64)
    for data, index, axis in itertools.product(CARRIED_TYPES, INTEGER_TYPES, INTEGER_TYPES):
        for op_type in ("ScatterElementsUpdate", "ScatterUpdate"):
            _register(op_type, (data, index, data, axis), (data,))
    for data, axes in itertools.product(CARRIED_TYPES, INTEGER_TYPES):
        if data != np.bool_:
            _register("ReduceL2", (data, axes), (data,))
        _register("Unique", (data, axes), (data, i64, i64, i64), extra_attributes=("_axis_absent",))


_register_all()
PyCustomOpDef.install_hooker(_invoke)
