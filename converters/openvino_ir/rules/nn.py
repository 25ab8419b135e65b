"""MatMul, Softmax, LogSoftmax, Einsum."""
from __future__ import annotations

from .._registry import Unsupported, rule
from .quantization import matmul_nbits


def _transposed(ctx, node, index: int) -> str:
    """Input `index` with its last two dims swapped (MatMul's transpose_a / transpose_b)."""
    rank = ctx.rank(node, index)
    if rank is None:
        raise Unsupported(f"transpose of input {index} needs a static rank")
    if rank < 2:  # OpenVINO ignores the transpose of a 1-D operand
        return ctx.inp(node, index)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return ctx.emit("Transpose", [ctx.inp(node, index)], perm=perm)


@rule("MatMul", versions=(1,),
      onnx="MatMul (+ Transpose of the last two dims for transpose_a/b); com.microsoft MatMulNBits for a "
           "compressed weight",
      notes="1-D operands are not transposed; accumulation order differs between runtimes (last bits); "
            "x @ decompressed u4/i4/u8/i8 weight^T (nncf: per channel or groups of 16-256) is one MatMulNBits, "
            "accuracy_level 0 (exact f32 dequantization, activations not quantized)",
      refuses=("transpose_a/b of an operand of dynamic rank",))
def matmul(ctx, node):
    if matmul_nbits(ctx, node):  # compressed weights stay compressed (rules/quantization/compressed_weights.py)
        return
    attributes = node.get_attributes()
    a = _transposed(ctx, node, 0) if attributes.get("transpose_a") else ctx.inp(node, 0)
    b = _transposed(ctx, node, 1) if attributes.get("transpose_b") else ctx.inp(node, 1)
    ctx.emit("MatMul", [a, b], [ctx.out(node)])


@rule("Softmax", versions=(1, 8),
      onnx="Softmax")
def softmax(ctx, node):
    ctx.emit("Softmax", [ctx.inp(node, 0)], [ctx.out(node)], axis=int(node.get_attributes()["axis"]))


@rule("LogSoftmax", versions=(5,),
      onnx="LogSoftmax")
def log_softmax(ctx, node):
    ctx.emit("LogSoftmax", [ctx.inp(node, 0)], [ctx.out(node)], axis=int(node.get_attributes()["axis"]))


@rule("Einsum", versions=(7,),
      onnx="Einsum")
def einsum(ctx, node):
    ctx.emit("Einsum", [ctx.inp(node, i) for i in range(node.get_input_size())], [ctx.out(node)],
             equation=node.get_attributes()["equation"])
