"""ScaledDotProductAttention-13 as its exact decomposition (OpenVINO's own,
ScaledDotProductAttentionDecomposition):

    softmax(Q * scale @ K^T + mask, axis=-1) @ V,   scale = 1 / sqrt(Q.shape[-1]) unless given

A constant scale that is a power of two (1/8 for heads of 64) multiplies the scores instead of Q: the same
values bit for bit (a power of two scales every product and sum exactly, overflow and subnormals aside),
and a MatMul fed by two DequantizeLinear then becomes one of onnxruntime's integer matmuls (int8 models:
Q K^T in integers). In the int8 QDQ form (an approximation measured against the FakeQuantize graph in
float64) any scale multiplies the scores when Q and K both come from a FakeQuantize: one rounding apart from
Q * scale, for the integer matmul.

mask: causal=true -> -inf above the diagonal (aligned top-left: column j is masked for row i when
j > i, whatever the two sequence lengths), and attention_mask is then ignored; else a boolean
attention_mask (True = take part, False -> -inf) or a float one added to the scores. A row with every
score -inf gives NaN in both runtimes (OpenVINO's CPU kernel and this decomposition).

Batch 1, heads split off by the usual Reshape -> Transpose [0, 2, 1, 3]: the [1, L, heads, D] tensor before
that Transpose is read as [L, 1, heads, D] (a Reshape, no data moved) and its heads moved forward by a
Transpose [1, 2, 0, 3] ([1, 2, 3, 0] for K^T): the same [1, heads, L, D] values, but a Transpose of that form
is one onnxruntime folds into FusedMatMul (transBatchA/B, a strided read) instead of copying the tensor. The
same products summed in the same order, the scores and the output stay 4-D (masks and a power-of-two scale,
which onnxruntime folds into FusedMatMul's alpha, apply as before). Float Q, K and V: three of the four
transposes of each attention block are gone; quantized Q and K (int8 models) keep the 4-D Transposes the
QDQ fusions match (onnxruntime's integer matmuls take no transposed operands) and only V's goes.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule
from .._types import FLOAT_CODES, numpy_type


def _dim(ctx, shape: str, index: int) -> str:
    """Dim `index` of a Shape output as a 1-element int64 tensor."""
    return ctx.emit("Gather", [shape, ctx.const(np.array([index], np.int64), "dim")], axis=0)


def _causal_mask(ctx, query: str, key: str, dtype) -> str:
    """[L, S] of 0 where column <= row, -inf elsewhere (L, S: dim -2 of `query` and of `key`, or of V: the
    same length)."""
    zero, one = (ctx.const(np.array(v, np.int64), n) for v, n in ((0, "zero"), (1, "one")))
    rows = _dim(ctx, ctx.emit("Shape", [query]), -2)
    columns = _dim(ctx, ctx.emit("Shape", [key]), -2)
    squeeze = ctx.const(np.array([0], np.int64), "axes")
    row_index = ctx.emit("Range", [zero, ctx.emit("Squeeze", [rows, squeeze]), one])
    column_index = ctx.emit("Range", [zero, ctx.emit("Squeeze", [columns, squeeze]), one])
    above = ctx.emit("Greater", [ctx.emit("Unsqueeze", [column_index, squeeze]),
                                 ctx.emit("Unsqueeze", [row_index, ctx.const(np.array([1], np.int64), "axes")])])
    return ctx.emit("Where", [above, ctx.const(np.array(-np.inf, dtype), "minus_inf"),
                              ctx.const(np.array(0, dtype), "zero")])


def _quantized(node, index: int) -> bool:
    """Whether input `index` of `node` is a FakeQuantize output, possibly through data movement."""
    producer = node.input_value(index).get_node()
    while producer.get_type_name() in ("Reshape", "Transpose", "Squeeze", "Unsqueeze"):
        producer = producer.input_value(0).get_node()
    return producer.get_type_name() == "FakeQuantize"


def _power_of_two(value) -> bool:
    """A constant scale by which multiplying is exact in either order (a single power of two, not 0)."""
    if value is None or value.size != 1:
        return False
    mantissa, _ = np.frexp(np.asarray(value, np.float64).reshape(()))
    return bool(abs(mantissa) == 0.5)


@rule("ScaledDotProductAttention", versions=(13,),
      onnx="Mul, Transpose, MatMul, Add (+ Where / Range for masks), Softmax, MatMul",
      notes="OpenVINO's decomposition (a constant power-of-two scale multiplies the scores, the same values, "
            "so that onnxruntime runs Q K^T as an integer matmul in int8 models; int8='qdq' with Q and K "
            "quantized: any scale, one rounding apart): scale defaults to 1/sqrt(head size) (computed at "
            "run time when the head size is dynamic); causal masks above the diagonal (top-left aligned) and "
            "ignores attention_mask; boolean masks: True takes part (OpenVINO CPU; the spec says the same); float "
            "masks are added; a fully masked row is NaN in both. Batch 1 with float Q, K or V from the IR's head "
            "Transpose [0, 2, 1, 3]: the tensor before it read as [L, 1, heads, D], heads moved by a Transpose "
            "[1, 2, 0, 3] onnxruntime folds into its matmuls (the same values)",
      refuses=("key of dynamic rank: the transpose of its last two dims needs it",
               "non-float query"))
def scaled_dot_product_attention(ctx, node):
    code = ctx.elem(node, 0)
    if code not in FLOAT_CODES:
        raise Unsupported("query must be floating point")
    dtype = numpy_type(code)
    rank = ctx.rank(node, 1)
    if rank is None or rank < 2:
        raise Unsupported("key needs a static rank >= 2")
    scale, scale_value = _scale(ctx, node, dtype)
    # a power-of-two scale multiplies the scores (the same values; see the module docstring), else Q
    scale_scores = _power_of_two(scale_value) or (
        ctx.shared.int8 == "qdq" and _quantized(node, 0) and _quantized(node, 1))
    if _power_of_two(scale_value):
        scale = ctx.const(np.asarray(scale_value, dtype).reshape(()), "scale")  # (a scalar: see below)
    mask = _additive_mask(ctx, node, dtype)
    query, key, value = (ctx.inp(node, i) for i in range(3))
    query_heads, key_heads, value_heads = _heads_of_batch_one(ctx, node)
    if query_heads is not None:  # (a scale on Q multiplies it before the heads move: nothing between them and
        # the MatMul onnxruntime folds them into)
        query = query_heads if scale_scores else ctx.emit("Mul", [query_heads, scale])
        query = ctx.emit("Transpose", [query], perm=HEADS_FORWARD)
    elif not scale_scores:
        query = ctx.emit("Mul", [query, scale])
    if key_heads is not None:
        key_t = ctx.emit("Transpose", [key_heads], perm=HEADS_FORWARD_TRANSPOSED)
    else:
        key_t = ctx.emit("Transpose", [key], perm=list(range(rank - 2)) + [rank - 1, rank - 2])
    if value_heads is not None:
        value = ctx.emit("Transpose", [value_heads], perm=HEADS_FORWARD)
    scores = ctx.emit("MatMul", [query, key_t])
    if scale_scores:
        scores = ctx.emit("Mul", [scores, scale])
    if bool(node.get_attributes().get("causal", False)):
        scores = ctx.emit("Add", [scores, _causal_mask(ctx, query, value, dtype)])
    elif mask is not None:
        scores = ctx.emit("Add", [scores, mask])
    weights = ctx.emit("Softmax", [scores], axis=-1)
    ctx.emit("MatMul", [weights, value], [ctx.out(node)])


def _scale(ctx, node, dtype) -> tuple[str, np.ndarray | None]:
    """The scale (input 4, else 1 / sqrt(head size)) and its value when constant."""
    if node.get_input_size() > 4:
        return ctx.inp(node, 4), ctx.const_value(node, 4)
    shape = node.get_input_partial_shape(0)
    head = shape[shape.rank.get_length() - 1] if shape.rank.is_static else None
    if head is not None and head.is_static:
        value = np.array(1.0, dtype) / np.sqrt(np.array(head.get_length(), dtype))
        return ctx.const(value, "scale"), value
    size = ctx.emit("Cast", [_dim(ctx, ctx.emit("Shape", [ctx.inp(node, 0)]), -1)], to=ctx.elem(node, 0))
    return ctx.emit("Reciprocal", [ctx.emit("Sqrt", [size])]), None


def _additive_mask(ctx, node, dtype) -> str | None:
    """attention_mask as values added to the scores (a boolean one: True -> 0, False -> -inf); None without
    one or when causal (which ignores it)."""
    if node.get_input_size() < 4 or bool(node.get_attributes().get("causal", False)):
        return None
    mask = ctx.inp(node, 3)
    if ctx.elem(node, 3) == TensorProto.BOOL:
        mask = ctx.emit("Where", [mask, ctx.const(np.array(0, dtype), "zero"),
                                  ctx.const(np.array(-np.inf, dtype), "minus_inf")])
    return mask


#: [L, 1, heads, D] -> [1, heads, L, D] (K^T: [1, heads, D, L]): the IR's head Transpose [0, 2, 1, 3] of a batch
#: of 1 (and K's transpose) in the form onnxruntime folds into FusedMatMul (see the module docstring)
HEADS_FORWARD = [1, 2, 0, 3]
HEADS_FORWARD_TRANSPOSED = [1, 2, 3, 0]
#: [1, L, heads, D] read as [L, 1, heads, D] (-1: L, which may be dynamic; 0: dims copied)
_BATCH_AFTER_LENGTH = np.array([-1, 1, 0, 0], np.int64)


def _split_heads(node, index: int):
    """The OpenVINO Transpose [0, 2, 1, 3] that input `index` of `node` comes from, when it moves the heads of
    a [1, L, heads, D] tensor (a static batch of 1) forward; else None."""
    transpose = node.input_value(index).get_node()
    if transpose.get_type_name() != "Transpose" or transpose.input_value(1).get_node().get_type_name() != "Constant":
        return None
    order = transpose.input_value(1).get_node().get_data()
    shape = transpose.get_input_partial_shape(0)
    if list(np.asarray(order).reshape(-1)) != [0, 2, 1, 3] or shape.rank.is_dynamic or shape.rank.get_length() != 4 \
            or not shape[0].is_static or shape[0].get_length() != 1:
        return None
    return transpose


def _heads_of_batch_one(ctx, node) -> tuple[str | None, str | None, str | None]:
    """For each of Q, K and V: the [1, L, heads, D] tensor before the IR's head Transpose, read as
    [L, 1, heads, D], when that input is such a Transpose of a batch of 1 and not quantized (quantized Q and
    K keep the 4-D form the int8 QDQ fusions match); else None."""
    transposes = [None if _quantized(node, i) else _split_heads(node, i) for i in range(3)]
    if all(t is None for t in transposes):
        return None, None, None
    shape = ctx.const(_BATCH_AFTER_LENGTH, "batch_after_length")
    return tuple(None if t is None else ctx.emit("Reshape", [ctx.inp(t, 0), shape]) for t in transposes)


#: ops that only move data: a scale folded into a DequantizeLinear before them reaches the MatMul unchanged
_MOVES = ("Reshape", "Transpose", "Squeeze", "Unsqueeze")


def scores_scale_into_dequantize(index, keep, unique) -> int:
    """Int8 models: fold the power-of-two scale the attention scores are multiplied by (above) into the
    per-tensor DequantizeLinear that Q comes from (through data movement): DequantizeLinear(q, s * 2^k) ->
    MatMul gives (Q K^T) * 2^k bit for bit (a power of two scales every rounding exactly; skipped when s * 2^k
    would leave the normal range), and onnxruntime's MatMulIntegerToFloat then applies it with its own scales
    instead of a separate Mul over the scores. Edits the nodes (ONNX NodeProtos) and initializers ((name,
    ONNX type, array) list) of `index` (quantization.GraphIndex) in place, keeping values in `keep`;
    unique(wanted) names the new scales; returns how many scales were folded."""
    nodes, initializers = index.nodes, index.initializers
    if not any(n.op_type == "DequantizeLinear" for n in nodes):
        return 0
    keep = set(keep) | index.outer_reads()
    constants, producer, readers = index.lookups()
    folded, dead = 0, set()

    def only_reader(value, node) -> bool:
        return value not in keep and [id(r) for r in readers.get(value, [])] == [id(node)]

    for mul in [n for n in nodes if n.op_type == "Mul" and n.input[1] in constants]:
        factor = constants[mul.input[1]]
        matmul = producer.get(mul.input[0])
        if factor.ndim or factor.dtype != np.float32 or not _power_of_two(factor) or matmul is None \
                or matmul.op_type != "MatMul" or not only_reader(matmul.output[0], mul):
            continue
        reader, node = matmul, producer.get(matmul.input[0])
        while node is not None and node.op_type in _MOVES and only_reader(node.output[0], reader):
            reader, node = node, producer.get(node.input[0])
        if node is None or node.op_type != "DequantizeLinear" or not only_reader(node.output[0], reader) \
                or node.input[1] not in constants:
            continue
        scale = constants[node.input[1]]
        scaled = np.asarray(scale * factor, np.float32)
        if scale.dtype != np.float32 or scale.ndim or \
                not np.all(np.isfinite(scaled) & (np.abs(scaled) >= np.finfo(np.float32).tiny)):
            continue
        name = unique(f"{node.input[1]}/scores_scale")
        initializers.append((name, TensorProto.FLOAT, scaled))
        node.input[1] = name
        matmul.output[0] = mul.output[0]
        dead.add(id(mul))
        folded += 1
    nodes[:] = [n for n in nodes if id(n) not in dead]
    index.edited(folded > 0)
    return folded

