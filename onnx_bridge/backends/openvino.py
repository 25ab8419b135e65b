"""OpenVINO as a backend: the four dialect ops as OpenVINO's native ops, and dialect ONNX models in OpenVINO.

- run(op, inputs, attributes) builds the native op (opset12.scatter_elements_update, opset3.scatter_update,
  opset4.reduce_l2, opset10.unique) with dynamic-shape Parameters for the tensors and a Constant for
  axis/axes, compiles it on the CPU plugin with INFERENCE_PRECISION_HINT=f32 (the plugin's default on
  AVX512/AMX machines is bf16, which silently rounds f32) and runs it on numpy arrays. Compiled models are
  cached per (op, attributes, element types, ranks, axis), so thousands of cases compile a few hundred times.
- compile(model) / run_model(model, feeds): dialect ONNX models read through
  converters.openvino_ir._frontend (core_with_extensions, read_onnx: one ConversionExtension per op).

openvino is optional (pip install onnx-bridge[openvino]); without it these functions raise BridgeError.
Where the CPU plugin differs from the contract is listed in onnx_bridge.divergences; this module runs
what OpenVINO does and only refuses inputs that endanger the process.
"""
from __future__ import annotations

import functools
import re

import numpy as np

from custom_ops import resolve, unit_of, units
from custom_ops.unit import present
from custom_ops._types import BFLOAT16
from converters.openvino_ir._frontend import OpenVINOError, core_with_extensions, extended_core, read_onnx  # noqa: F401
from converters.openvino_ir._frontend import openvino
from converters.openvino_ir._frontend import reason as _reason
from custom_ops.config import DIALECT_OPSET, DOMAIN
from custom_ops.errors import BridgeError, OpError

DEVICE = "CPU"
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
OPS = ("ScatterElementsUpdate", "ScatterUpdate", "ReduceL2", "Unique") + tuple(u.op_type for u in units())
#: Inputs given to OpenVINO as Constants (part of the compiled-model cache key); the rest are Parameters.
CONSTANT_INPUTS = {"ScatterElementsUpdate": ("axis",), "ScatterUpdate": ("axis",), "ReduceL2": ("axes",),
                   "Unique": ("axis",), **{u.op_type: u.openvino.constant_inputs for u in units()}}


_openvino = functools.cache(openvino)  # the openvino module, or BridgeError naming the extra to install


@functools.cache
def core():
    """The shared ov.Core used by run()."""
    return _openvino().Core()


def _type_table():
    ov = _openvino()
    return {np.dtype(np.bool_): ov.Type.boolean, np.dtype(np.int8): ov.Type.i8, np.dtype(np.uint8): ov.Type.u8,
            np.dtype(np.int16): ov.Type.i16, np.dtype(np.uint16): ov.Type.u16, np.dtype(np.int32): ov.Type.i32,
            np.dtype(np.uint32): ov.Type.u32, np.dtype(np.int64): ov.Type.i64, np.dtype(np.uint64): ov.Type.u64,
            np.dtype(np.float16): ov.Type.f16, BFLOAT16: ov.Type.bf16, np.dtype(np.float32): ov.Type.f32,
            np.dtype(np.float64): ov.Type.f64}


def element_type(dtype):
    """ov.Type of a numpy dtype (bfloat16 is ml_dtypes.bfloat16)."""
    try:
        return _type_table()[np.dtype(dtype)]
    except KeyError:
        raise BridgeError(f"OpenVINO backend: no OpenVINO element type for numpy dtype {np.dtype(dtype)}") \
            from None


def numpy_dtype(ov_type) -> np.dtype:
    for dtype, candidate in _type_table().items():
        if candidate == ov_type:
            return dtype
    raise BridgeError(f"OpenVINO backend: no numpy dtype for OpenVINO element type {ov_type}")


def to_tensor(array: np.ndarray):
    """An ov.Tensor over a numpy array; bfloat16 travels as its uint16 bits."""
    ov = _openvino()
    array = array if array.flags.c_contiguous else array.copy()  # not ascontiguousarray: it makes 0-D 1-D
    if array.dtype == BFLOAT16:
        return ov.Tensor(array.view(np.uint16), list(array.shape), ov.Type.bf16)
    return ov.Tensor(array)


def from_tensor(tensor) -> np.ndarray:
    """A numpy copy of an ov.Tensor (bf16 comes back as float16 bits from .data: reinterpret them)."""
    dtype = numpy_dtype(tensor.get_element_type())
    data = np.array(tensor.data, copy=True)
    return data.view(dtype) if data.dtype != dtype else data


# ------------------------------------------------------------------------------------------------------
# Native ops


def _build(op: str, attributes: dict, parameters, constants):
    """The native op node from Parameter nodes and the Constant inputs (in port order)."""
    from openvino import opset3, opset4, opset10, opset12
    unit = unit_of(op)
    if unit is not None:  # parameters and constants back in port order
        constant_names = unit.openvino.constant_inputs
        tensors, constants = iter(parameters), iter(constants)
        inputs = [next(constants, None) if port.name in constant_names else next(tensors, None)
                  for port in unit.newest.inputs]
        return unit.openvino.factory(_openvino(), inputs, unit.openvino.ov_attributes(attributes))
    constant = constants[0] if constants else None  # axis/axes (None: Unique without axis)
    if op == "ScatterElementsUpdate":
        data, indices, updates = parameters
        return opset12.scatter_elements_update(data, indices, updates, constant, attributes["reduction"],
                                               bool(attributes["use_init_val"]))
    if op == "ScatterUpdate":
        return opset3.scatter_update(*parameters, constant)
    if op == "ReduceL2":
        return opset4.reduce_l2(parameters[0], constant, bool(attributes["keep_dims"]))
    return opset10.unique(parameters[0], constant, bool(attributes["sorted"]),
                          attributes["index_element_type"], attributes["count_element_type"])


#: Compiled models by (op, attributes, (dtype, rank) of each tensor input, axis/axes dtype, shape, values).
_COMPILED: dict = {}
_MAX_COMPILED = 4096


def _compiled(key):
    if key not in _COMPILED:
        if len(_COMPILED) >= _MAX_COMPILED:
            _COMPILED.clear()
        _COMPILED[key] = _compile(*key)
    return _COMPILED[key]


def _compile(op: str, attributes: tuple, tensor_types: tuple, constant_key):
    ov = _openvino()
    from openvino import opset12
    parameters = [opset12.parameter(ov.PartialShape([-1] * rank), element_type(dtype))
                  for dtype, rank in tensor_types]
    # may be empty: no opset12.constant
    constants = [ov.op.Constant(np.array(values, dtype=dtype).reshape(shape)) for dtype, shape, values in constant_key]
    try:
        node = _build(op, dict(attributes), parameters, constants)
        model = ov.Model(node.outputs(), parameters, f"onnx_bridge_{op}")
        return core().compile_model(model, DEVICE, CONFIG)
    except RuntimeError as exc:  # OpenVINO validation errors are RuntimeErrors
        raise OpenVINOError(f"OpenVINO rejected {op} at build/compile time: {_reason(exc)}") from None


def run(op: str, inputs, attributes: dict | None = None) -> tuple[np.ndarray, ...]:
    """Run OpenVINO's native `op` on numpy inputs given in the dialect's port order (CPU plugin, f32).

    inputs: ScatterElementsUpdate/ScatterUpdate (data, indices, updates, axis); ReduceL2 (data, axes);
    Unique (data,) or (data, axis). Attributes are the dialect's (defaults filled in and checked by the
    op's spec, so an invalid attribute raises OpError). Returns the outputs as numpy arrays.
    Raises OpError for inputs that would crash the CPU plugin, OpenVINOError when OpenVINO refuses.
    """
    if op not in OPS:
        raise OpError(op, "op_type", "not an op of the OpenVINO backend", value=op, allowed=", ".join(OPS))
    spec = resolve(op, DIALECT_OPSET)
    attributes = spec.attribute_values(attributes)
    arrays = [np.asarray(value) for value in inputs if value is not None]
    required = [port.name for port in spec.inputs if not port.optional]
    if not len(required) <= len(arrays) <= len(spec.inputs):
        raise OpError(op, "inputs", "wrong number of inputs", value=len(arrays),
                      allowed=", ".join(port.name + (" (optional)" if port.optional else "") for port in spec.inputs))
    names = [port.name for port in spec.inputs][:len(arrays)]
    constant_names = CONSTANT_INPUTS[op]
    tensors = [a for n, a in zip(names, arrays) if n not in constant_names]
    constants = [a for n, a in zip(names, arrays) if n in constant_names]
    _refuse_crashing_inputs(op, dict(zip(names, arrays)))
    constant_key = tuple((c.dtype.str, c.shape, tuple(c.reshape(-1).tolist())) for c in constants)
    hashable = tuple((name, tuple(v) if isinstance(v, list) else v) for name, v in sorted(attributes.items()))
    key = (op, hashable, tuple((a.dtype, a.ndim) for a in tensors), constant_key)
    compiled = _compiled(key)
    request = compiled.create_infer_request()
    try:
        request.infer([to_tensor(a) for a in tensors])
    except RuntimeError as exc:
        raise OpenVINOError(f"OpenVINO failed to run {op}: {_reason(exc)}") from None
    outputs = tuple(from_tensor(request.get_output_tensor(i)) for i in range(len(compiled.outputs)))
    _check_output_shapes(op, dict(zip(names, arrays)), attributes, outputs)
    return outputs


def _check_output_shapes(op: str, named: dict, attributes: dict, outputs: tuple) -> None:
    """Raise when the outputs cannot be the op's: with one inference thread (INFERENCE_NUM_THREADS=1, or a
    single CPU core) the CPU plugin swallows its inference-time errors and returns empty outputs."""
    unit = unit_of(op)
    if unit is not None:
        expected = unit.openvino.output_shapes(named, attributes) if present(unit.openvino.output_shapes) else []
        got = [o.shape for o in outputs]
        if any(want is not None and tuple(want) != have for want, have in zip(expected, got)):
            raise OpenVINOError(f"OpenVINO returned {op} outputs of shape {got} where {expected} was "
                                "expected (with one inference thread its CPU plugin returns empty outputs "
                                "instead of raising its errors)")
        return
    data = named["data"]
    if op in ("ScatterElementsUpdate", "ScatterUpdate"):
        expected = data.shape
    elif op == "ReduceL2":
        axes = named["axes"].reshape(-1).tolist() if named["axes"].dtype.kind in "iu" else []
        axes = {a % data.ndim for a in axes} if data.ndim else set()
        expected = tuple(1 if d in axes else n for d, n in enumerate(data.shape) if attributes["keep_dims"]
                         or d not in axes)
    else:
        values, first, inverse, counts = outputs
        axis = int(named["axis"].reshape(-1)[0]) % data.ndim if "axis" in named else None
        slices = data.size if axis is None else data.shape[axis]
        expected = (first.size,) if axis is None else data.shape[:axis] + (first.size,) + data.shape[axis + 1:]
        if inverse.shape != (slices,) or counts.shape != first.shape:
            expected = "consistent indices, reverse_indices and counts"
    if outputs[0].shape != expected:
        raise OpenVINOError(f"OpenVINO returned {op} outputs of shape {[o.shape for o in outputs]} where "
                            f"{expected} was expected (with one inference thread its CPU plugin returns empty "
                            "outputs instead of raising its errors)")


def _refuse_crashing_inputs(op: str, named: dict) -> None:
    """Refuse the scatter inputs that crash the CPU plugin or corrupt its heap (measured, 2026.4):

    - ScatterElementsUpdate has no lower bound check: indices below -d give SIGSEGV, 'free(): invalid next
      size', 'double free or corruption' or a silent no-op.
    - An index OpenVINO does report (>= d, or negative for ScatterUpdate) leaves the heap corrupted: a
      later inference segfaulted (one CPU core: index 3 on size 3, any other model, then the same op).
    - Index values are read in 32 bits (2**32 -> 0, u32 2**32-1 -> -1).
    - ScatterElementsUpdate indices with a non-axis dimension larger than data's are written through the
      flattened offset, past the end of the output.
    - With one inference thread the CPU plugin skips its own checks (index range, updates shape) and returns
      empty outputs, after writing who knows where.
    So every index must be in the contract's range ([-d, d-1]; ScatterUpdate [0, d-1]) and the shapes fit.
    """
    if op not in ("ScatterElementsUpdate", "ScatterUpdate"):
        return
    data, indices, axis = named["data"], named["indices"], named["axis"]
    if indices.size == 0 or indices.dtype.kind not in "iu":
        return  # nothing is written, or OpenVINO rejects the element type at build time
    axis_value = None
    if axis.dtype.kind in "iu" and axis.size and data.ndim and -data.ndim <= int(axis.reshape(-1)[0]) < data.ndim:
        axis_value = int(axis.reshape(-1)[0]) % data.ndim
    size = data.shape[axis_value] if axis_value is not None else min(data.shape, default=0)
    first = -size if op == "ScatterElementsUpdate" else 0
    low, high = int(indices.min()), int(indices.max())
    if low < first or high > size - 1:
        raise OpError(op, "input 'indices'", "refused before OpenVINO: out-of-range indices crash its CPU plugin "
                      "or corrupt its heap", value=low if low < first else high,
                      allowed=f"[{first}, {size - 1}]")
    updates = named["updates"]
    if op == "ScatterElementsUpdate" and updates.shape != indices.shape:
        raise OpError(op, "input 'updates'", "refused before OpenVINO: shape must equal indices' shape",
                      value=updates.shape, allowed=indices.shape)
    if op == "ScatterUpdate" and axis_value is not None:
        expected = data.shape[:axis_value] + indices.shape + data.shape[axis_value + 1:]
        if updates.shape != expected:
            raise OpError(op, "input 'updates'", "refused before OpenVINO: shape must be data.shape[:axis] + "
                          "indices.shape + data.shape[axis+1:]", value=updates.shape, allowed=expected)
    if op == "ScatterElementsUpdate" and indices.ndim == data.ndim and axis_value is not None:
        for dim, (have, limit) in enumerate(zip(indices.shape, data.shape)):
            if dim != axis_value and have > limit:
                raise OpError(op, "input 'indices'", f"refused before OpenVINO: dimension {dim} exceeds "
                              "data's and its CPU plugin writes through the flattened offset, past the "
                              "end of the output", value=indices.shape,
                              allowed=f"<= {data.shape} except on axis {axis_value}")


def compile(model):  # noqa: A001  (mirrors ov.Core.compile_model; the module is used qualified)
    """A dialect ONNX model (or an ov.Model) compiled on the CPU plugin with f32 inference precision."""
    ov = _openvino()
    ov_model = model if isinstance(model, ov.Model) else read_onnx(model)
    try:
        return extended_core().compile_model(ov_model, DEVICE, CONFIG)
    except RuntimeError as exc:
        raise OpenVINOError(f"OpenVINO could not compile the model: {_reason(exc)}") from None


def run_model(model, feeds: dict) -> list[np.ndarray]:
    """Run a dialect ONNX model (or a compiled model) in OpenVINO; outputs in the model's output order.

    No crash guard here (unlike run()): never feed scatter indices out of range (see _refuse_crashing_inputs).
    """
    compiled = model if hasattr(model, "create_infer_request") else compile(model)
    request = compiled.create_infer_request()
    try:
        for name, value in feeds.items():
            request.set_tensor(name, to_tensor(np.asarray(value)))
        request.infer()
    except RuntimeError as exc:
        raise OpenVINOError(f"OpenVINO failed to run the model: {_reason(exc)}") from None
    return [from_tensor(request.get_output_tensor(i)) for i in range(len(compiled.outputs))]
