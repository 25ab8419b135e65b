"""OpenVINO as a backend: the dialect ops as OpenVINO's native ops, and dialect ONNX models in OpenVINO.

- run(op, inputs, attributes) builds the native op with its unit's factory (custom_ops.unit) from
  dynamic-shape Parameters for the tensors and Constants for the unit's constant inputs, compiles it on the CPU plugin with INFERENCE_PRECISION_HINT=f32 (the plugin's default on
  AVX512/AMX machines is bf16, which silently rounds f32) and runs it on numpy arrays. Compiled models are
  cached per (op, attributes, element types, ranks, constant inputs), so thousands of cases compile a few hundred times.
- compile(model) / run_model(model, feeds): dialect ONNX models read through
  converters.openvino_ir._frontend (core_with_extensions, read_onnx: one ConversionExtension per op).

openvino is optional (pip install onnx-bridge[openvino]); without it these functions raise BridgeError.
Where the CPU plugin differs from the contract is listed in onnx_bridge.divergences; this module runs
what OpenVINO does and only refuses inputs that endanger the process.
"""
from __future__ import annotations

import functools

import numpy as np

from custom_ops import resolve, unit_of, units
from custom_ops.unit import present
from custom_ops.element_types import BFLOAT16, OPENVINO_NAMES, STRING
from converters.openvino_ir import OpenVINOError, core_with_extensions, extended_core, read_onnx  # noqa: F401
from converters.openvino_ir import openvino
from converters.openvino_ir import openvino_reason as _reason
from custom_ops.config import DIALECT_OPSET
from custom_ops.errors import BridgeError, OpError

DEVICE = "CPU"
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
OPS = tuple(u.op_type for u in units())
#: Inputs given to OpenVINO as Constants (part of the compiled-model cache key); the rest are Parameters.
CONSTANT_INPUTS = {u.op_type: u.openvino.constant_inputs for u in units()}


_openvino = functools.cache(openvino)  # the openvino module, or BridgeError naming the extra to install


@functools.cache
def core():
    """The shared ov.Core used by run()."""
    return _openvino().Core()


@functools.cache
def _type_table():
    ov = _openvino()
    return {dtype: getattr(ov.Type, name) for dtype, name in OPENVINO_NAMES.items()}


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
    if array.dtype == STRING:  # ONNX strings (object arrays of str): OpenVINO's API takes numpy str
        return ov.Tensor(np.asarray(array, dtype=str))
    return ov.Tensor(array)


def from_tensor(tensor) -> np.ndarray:
    """A numpy copy of an ov.Tensor (bf16 comes back as float16 bits from .data: reinterpret them)."""
    dtype = numpy_dtype(tensor.get_element_type())
    if dtype == STRING:  # OpenVINO's byte strings as ONNX's UTF-8 text (undecodable bytes kept as escapes)
        raw = np.asarray(tensor.bytes_data)
        return np.array([b.decode("utf-8", "surrogateescape") for b in raw.reshape(-1).tolist()] or [],
                        dtype=object).reshape(raw.shape)
    data = np.array(tensor.data, copy=True)
    return data.view(dtype) if data.dtype != dtype else data


# ------------------------------------------------------------------------------------------------------
# Native ops


def _build(op: str, attributes: dict, parameters, constants):
    """The native op node, built by the op's unit from the Parameter and Constant nodes (in port order)."""
    unit = unit_of(op)
    tensors, constants = iter(parameters), iter(constants)
    inputs = [next(constants, None) if port.name in unit.openvino.constant_inputs else next(tensors, None)
              for port in unit.newest.inputs]
    return unit.openvino.factory(_openvino(), inputs, unit.openvino.ov_attributes(attributes))


#: Compiled models by (op, attributes, (dtype, rank or static shape) of each tensor input, axis/axes dtype,
#: shape, values).
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
    parameters = [opset12.parameter(ov.PartialShape([-1] * dims if isinstance(dims, int) else list(dims)),
                                    element_type(dtype))
                  for dtype, dims in tensor_types]  # dims: a rank (dynamic dimensions) or a static shape
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

    inputs: in the order of the op's ports (trailing optional ones may be left out). Attributes are the dialect's (defaults filled in and checked by the
    op's spec, so an invalid attribute raises OpError). Returns the outputs as numpy arrays.
    Raises OpError for inputs that would crash the CPU plugin (the unit's refuse), OpenVINOError when OpenVINO refuses.
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
    if unit_of(op).openvino.refuse is not None:  # inputs that would crash or corrupt the CPU plugin
        unit_of(op).openvino.refuse(dict(zip(names, arrays)), attributes)
    constant_key = tuple((c.dtype.str, c.shape, tuple(c.reshape(-1).tolist())) for c in constants)
    hashable = tuple((name, tuple(v) if isinstance(v, list) else v) for name, v in sorted(attributes.items()))
    key = (op, hashable, tuple((a.dtype, a.ndim) for a in tensors), constant_key)
    try:
        compiled = _compiled(key)
    except OpenVINOError:  # some ops need static input shapes (e.g. ROIPooling's rois): this call's shapes
        compiled = _compiled((op, hashable, tuple((a.dtype, a.shape) for a in tensors), constant_key))
    request = compiled.create_infer_request()
    try:
        request.infer([to_tensor(a) for a in tensors])
    except RuntimeError as exc:
        raise OpenVINOError(f"OpenVINO failed to run {op}: {_reason(exc)}") from None
    outputs = tuple(from_tensor(request.get_output_tensor(i)) for i in range(len(compiled.outputs)))
    _check_output_shapes(op, dict(zip(names, arrays)), attributes, outputs)
    return outputs


def _check_output_shapes(op: str, named: dict, attributes: dict, outputs: tuple) -> None:
    """Raise when the outputs cannot be the op's (shapes from its unit's output_shapes): with one inference
    thread (INFERENCE_NUM_THREADS=1, or a single CPU core) the CPU plugin swallows its inference-time
    errors and returns empty outputs."""
    unit = unit_of(op)
    if not present(unit.openvino.output_shapes):
        return
    expected = unit.openvino.output_shapes(named, attributes)
    got = [o.shape for o in outputs]
    if any(want is not None and tuple(want) != have for want, have in zip(expected, got)):
        raise OpenVINOError(f"OpenVINO returned {op} outputs of shape {got} where {expected} was expected "
                            "(with one inference thread its CPU plugin returns empty outputs instead of "
                            "raising its errors)")


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

    No crash guard here (unlike run()): never feed inputs a unit's openvino.refuse refuses (e.g. scatter
    indices out of range: custom_ops/ops/scatter/_openvino.py).
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
