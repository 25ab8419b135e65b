"""Reductions. OpenVINO reduces nothing when `axes` is empty: ONNX noop_with_empty_axes=1 does the same."""
from __future__ import annotations

from onnx import TensorProto

from .._registry import rule
from ._nchwc import global_average

_REDUCE = {"ReduceSum": "ReduceSum", "ReduceMean": "ReduceMean", "ReduceMax": "ReduceMax",
           "ReduceMin": "ReduceMin", "ReduceProd": "ReduceProd"}


def _reduce(ctx, node, op_type: str, data: str, outputs) -> str:
    keep = int(bool(node.get_attributes().get("keep_dims", False)))
    return ctx.emit(op_type, [data, ctx.int64_vector(node, 1)], outputs, keepdims=keep,
                    noop_with_empty_axes=1)


@rule(*_REDUCE, versions=(1,),
      onnx="ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd",
      notes="noop_with_empty_axes=1: empty axes reduce nothing, as in OpenVINO. ReduceMean over H, W "
            "(keep_dims) of a convolution's f32 map is GlobalAveragePool, which onnxruntime keeps in its NCHWc "
            "layout (rules/_nchwc.py)")
def reduce(ctx, node):
    if node.get_type_name() == "ReduceMean" and global_average(ctx, node):
        return
    _reduce(ctx, node, _REDUCE[node.get_type_name()], ctx.inp(node, 0), [ctx.out(node)])


@rule("ReduceL1", versions=(4,),
      onnx="ReduceL1",
      notes="noop_with_empty_axes=1")
def reduce_l1(ctx, node):
    _reduce(ctx, node, "ReduceL1", ctx.inp(node, 0), [ctx.out(node)])


@rule("ReduceLogicalAnd", "ReduceLogicalOr", versions=(1,),
      onnx="Cast to int32, ReduceMin / ReduceMax, Cast to bool")
def reduce_logical(ctx, node):
    # ONNX ReduceMin/Max take bool only from opset 20: reduce as int32 and cast back.
    op_type = "ReduceMin" if node.get_type_name() == "ReduceLogicalAnd" else "ReduceMax"
    as_int = ctx.emit("Cast", [ctx.inp(node, 0)], to=TensorProto.INT32)
    ctx.emit("Cast", [_reduce(ctx, node, op_type, as_int, None)], [ctx.out(node)], to=TensorProto.BOOL)
