"""Number classification and bit shifts: IsNaN, IsInf, IsFinite, BitwiseLeftShift, BitwiseRightShift."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from .._registry import Unsupported, rule
from .elementwise import broadcast_inputs

#: signed integer type -> the unsigned type of its width (ONNX BitShift shifts unsigned integers only)
_UNSIGNED = {TensorProto.INT8: TensorProto.UINT8, TensorProto.INT16: TensorProto.UINT16,
             TensorProto.INT32: TensorProto.UINT32, TensorProto.INT64: TensorProto.UINT64}
_SHIFTABLE = frozenset(_UNSIGNED) | frozenset(_UNSIGNED.values())


def _float_data(ctx, node, kernels) -> str:
    """Input 0, cast exactly to f32 when onnxruntime has no kernel for its type (f16 IsInf, bf16)."""
    data = ctx.inp(node, 0)
    return data if ctx.elem(node, 0) in kernels else ctx.emit("Cast", [data], to=TensorProto.FLOAT)


_IS_NAN_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16)
_IS_INF_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE)


@rule("IsNaN", versions=(10,), onnx="IsNaN (bf16 through an exact Cast to f32)")
def is_nan(ctx, node):
    ctx.emit("IsNaN", [_float_data(ctx, node, _IS_NAN_TYPES)], [ctx.out(node)])


@rule("IsInf", versions=(10,), onnx="IsInf (f16/bf16 through an exact Cast to f32)",
      notes="detect_negative / detect_positive are ONNX's attributes")
def is_inf(ctx, node):
    attributes = node.get_attributes()
    ctx.emit("IsInf", [_float_data(ctx, node, _IS_INF_TYPES)], [ctx.out(node)],
             detect_negative=int(bool(attributes.get("detect_negative", True))),
             detect_positive=int(bool(attributes.get("detect_positive", True))))


@rule("IsFinite", versions=(10,), onnx="Not(Or(IsNaN, IsInf)) (f16/bf16 through an exact Cast to f32)")
def is_finite(ctx, node):
    data = _float_data(ctx, node, _IS_INF_TYPES)
    ctx.emit("Not", [ctx.emit("Or", [ctx.emit("IsNaN", [data]), ctx.emit("IsInf", [data])])], [ctx.out(node)])


@rule("BitwiseLeftShift", "BitwiseRightShift", versions=(15,),
      onnx="BitShift (signed: Cast to the unsigned type of the width, which ONNX defines as the two's complement "
           "bits; right shifts as ((a ^ m) >> b) ^ m, m all ones for negatives; Cast back)",
      notes="shift counts in [0, bit width): exact; left shifts wrap modulo 2^width, right shifts of signed "
            "values are arithmetic (sign-filling). Counts outside that range are undefined in OpenVINO's spec "
            "(its CPU plugin and reference disagree) and here give onnxruntime's BitShift result. OpenVINO "
            "computes i64/u64 shifts in 32 bits and u32 values >= 2^31 wrongly (observed on 2026.4): the lowering "
            "keeps the full width",
      refuses=("element types other than 8..64-bit integers",))
def bitwise_shift(ctx, node):
    a, b = broadcast_inputs(ctx, node)
    code = ctx.elem(node, 0)
    if code not in _SHIFTABLE:
        raise Unsupported(f"element type {TensorProto.DataType.Name(code)} (integers only)")
    left = node.get_type_name() == "BitwiseLeftShift"
    direction = "LEFT" if left else "RIGHT"
    if code not in _UNSIGNED:
        ctx.emit("BitShift", [a, b], [ctx.out(node)], direction=direction)
        return
    unsigned = _UNSIGNED[code]
    ua, ub = ctx.emit("Cast", [a], to=unsigned), ctx.emit("Cast", [b], to=unsigned)
    if left:
        shifted = ctx.emit("BitShift", [ua, ub], direction="LEFT")
    else:  # arithmetic shift: ((a ^ m) >> b) ^ m with m all ones for negative a (Where lacks u16/u64)
        width = np.dtype(helper.tensor_dtype_to_np_dtype(unsigned)).itemsize * 8
        unsigned_type = helper.tensor_dtype_to_np_dtype(unsigned)
        sign = ctx.emit("BitShift", [ua, ctx.const(np.array(width - 1, unsigned_type), "top")], direction="RIGHT")
        mask = ctx.emit("Sub", [ctx.const(np.array(0, unsigned_type), "zero"), sign])
        flipped = ctx.emit("BitShift", [ctx.emit("BitwiseXor", [ua, mask]), ub], direction="RIGHT")
        shifted = ctx.emit("BitwiseXor", [flipped, mask])
    ctx.emit("Cast", [shifted], [ctx.out(node)], to=code)
