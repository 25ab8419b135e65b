"""GroupedMatMul-17 (mixture-of-experts matmul) as Gather + MatMul.

OpenVINO 2026.4 has neither a CPU kernel nor a reference implementation for it, so the rule is tested
against the op's documented formula (numpy) instead of OpenVINO's output."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule


@rule("GroupedMatMul", versions=(17,), onnx="MatMul with Transpose (3-D x 3-D); LessOrEqual + ReduceSum + Gather + "
      "MatMul (2-D x 3-D with offsets)",
      notes="3-D x 3-D: out[g] = A[g] @ B[g]^T; 2-D x 3-D: token t uses group g with offsets[g-1] <= t < offsets[g] "
            "(offsets are cumulative ends). Tested against the documented formula: OpenVINO 2026.4 can run it "
            "on no device here (no CPU kernel, no reference)",
      refuses=("inputs of dynamic rank", "2-D x 3-D without offsets"))
def grouped_matmul(ctx, node):
    rank_a, rank_b = ctx.rank(node, 0), ctx.rank(node, 1)
    if rank_a is None or rank_b != 3:
        raise Unsupported("needs mat_a of static rank and a 3-D mat_b")
    weights = ctx.emit("Transpose", [ctx.inp(node, 1)], perm=[0, 2, 1])  # (G, K, N)
    if rank_a == 3:
        ctx.emit("MatMul", [ctx.inp(node, 0), weights], [ctx.out(node)])
        return
    if rank_a != 2 or node.get_input_size() < 3:
        raise Unsupported("2-D mat_a needs offsets")
    offsets = ctx.int64(node, 2)
    tokens = ctx.emit("Range", [ctx.const(np.array(0, np.int64), "zero"),
                                ctx.emit("Gather", [ctx.emit("Shape", [ctx.inp(node, 0)]),
                                                    ctx.const(np.array(0, np.int64), "rows")], axis=0),
                                ctx.const(np.array(1, np.int64), "one")])
    ended = ctx.emit("LessOrEqual", [offsets, ctx.emit("Unsqueeze", [tokens, ctx.const(np.array([1], np.int64),
                                                                                        "axes")])])  # (T, G)
    group = ctx.emit("ReduceSum", [ctx.emit("Cast", [ended], to=TensorProto.INT64),
                                   ctx.const(np.array([1], np.int64), "axes")], keepdims=0)
    rows = ctx.emit("Unsqueeze", [ctx.inp(node, 0), ctx.const(np.array([1], np.int64), "axes")])  # (T, 1, K)
    products = ctx.emit("MatMul", [rows, ctx.emit("Gather", [weights, group], axis=0)])  # (T, 1, N)
    ctx.emit("Squeeze", [products, ctx.const(np.array([1], np.int64), "axes")], [ctx.out(node)])
