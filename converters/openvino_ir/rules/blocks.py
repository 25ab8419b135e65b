"""Block rearrangements: BatchToSpace, SpaceToBatch, Col2Im, ReverseSequence."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule
from ._spatial import require_type
from .tensor import INT64_MAX, constant_input, static_rank


def _block(ctx, node, rank: int) -> np.ndarray:
    block = constant_input(ctx, node, 1, "block_shape").reshape(-1).astype(np.int64)
    if block.size != rank:
        raise Unsupported(f"block_shape has {block.size} values for data of rank {rank}")
    if block[0] != 1 or (block < 1).any():
        raise Unsupported(f"block_shape {block.tolist()}: the batch block must be 1 and all blocks positive")
    return block


@rule("SpaceToBatch", versions=(2,), onnx="Pad + Reshape + Transpose + Reshape (shapes computed at run time)",
      notes="zero padding, then every spatial dim D split into (D / b, b) and the b's moved in front of the "
            "batch, in OpenVINO's order",
      refuses=("block_shape not a Constant: the reshapes need it", "data of dynamic rank",
               "block_shape[0] != 1"))
def space_to_batch(ctx, node):
    rank = static_rank(ctx, node)
    block = _block(ctx, node, rank)
    pads = ctx.emit("Concat", [ctx.int64_vector(node, 2), ctx.int64_vector(node, 3)], axis=0)
    padded = ctx.emit("Pad", [ctx.inp(node, 0), pads], mode="constant")
    blocks = ctx.const(block, "block")
    quotient = ctx.emit("Div", [ctx.emit("Shape", [padded]), blocks])
    pairs = ctx.emit("Concat", [ctx.emit("Unsqueeze", [v, ctx.const(np.array([1], np.int64), "axes")])
                                for v in (quotient, blocks)], axis=1)  # [rank, 2]: (D / b, b)
    split = ctx.emit("Reshape", [padded, ctx.emit("Reshape", [pairs, ctx.const(np.array([-1], np.int64), "flat")])])
    perm = [2 * i + 1 for i in range(rank)] + [2 * i for i in range(rank)]  # b0 (=1), b1.. , then D0, D1 / b1..
    moved = ctx.emit("Transpose", [split], perm=perm)
    batch = ctx.emit("Mul", [ctx.emit("Slice", [quotient, *_consts(ctx, [0], [1], [0])]),
                             ctx.const(np.array([int(block.prod())], np.int64), "blocks")])
    rest = ctx.emit("Slice", [quotient, *_consts(ctx, [1], [INT64_MAX], [0])])
    ctx.emit("Reshape", [moved, ctx.emit("Concat", [batch, rest], axis=0)], [ctx.out(node)])


@rule("BatchToSpace", versions=(2,), onnx="Reshape + Transpose + Reshape + Slice (shapes computed at run time)",
      notes="the batch split into (b1, .., bn, B / prod(b)), each b moved behind its spatial dim, then the crops "
            "sliced off",
      refuses=("block_shape not a Constant: the reshapes need it", "data of dynamic rank",
               "block_shape[0] != 1"))
def batch_to_space(ctx, node):
    rank = static_rank(ctx, node)
    block = _block(ctx, node, rank)
    n = rank - 1  # spatial dims
    shape = ctx.emit("Shape", [ctx.inp(node, 0)])
    batch = ctx.emit("Div", [ctx.emit("Slice", [shape, *_consts(ctx, [0], [1], [0])]),
                             ctx.const(np.array([int(block.prod())], np.int64), "blocks")])
    spatial = ctx.emit("Slice", [shape, *_consts(ctx, [1], [INT64_MAX], [0])])
    split = ctx.emit("Reshape", [ctx.inp(node, 0), ctx.emit("Concat", [ctx.const(block[1:], "spatial_blocks"), batch,
                                                                       spatial], axis=0)])
    perm = [n]
    for i in range(n):
        perm += [n + 1 + i, i]  # D_i, b_i
    moved = ctx.emit("Transpose", [split], perm=perm)
    grown = ctx.emit("Mul", [spatial, ctx.const(block[1:], "spatial_blocks")])
    full = ctx.emit("Concat", [batch, grown], axis=0)
    joined = ctx.emit("Reshape", [moved, full])
    begin, end = ctx.int64_vector(node, 2), ctx.int64_vector(node, 3)
    ctx.emit("Slice", [joined, begin, ctx.emit("Sub", [full, end])], [ctx.out(node)])


def _consts(ctx, starts, ends, axes):
    return [ctx.const(np.array(v, np.int64), hint) for v, hint in ((starts, "starts"), (ends, "ends"), (axes, "axes"))]


@rule("Col2Im", versions=(15,), onnx="Col2Im (+ Unsqueeze/Squeeze for unbatched data)",
      notes="overlapping patches are summed (accumulation order may differ)",
      refuses=("element types other than f16 and f32 (onnxruntime's Col2Im kernels)",))
def col2im(ctx, node):
    require_type(ctx, node, (TensorProto.FLOAT16, TensorProto.FLOAT), "Col2Im (onnxruntime)")
    attributes = node.get_attributes()
    pads = [int(p) for p in attributes["pads_begin"]] + [int(p) for p in attributes["pads_end"]]
    options = dict(strides=[int(s) for s in attributes["strides"]],
                   dilations=[int(d) for d in attributes["dilations"]], pads=pads)
    inputs = [ctx.int64_vector(node, 1), ctx.int64_vector(node, 2)]
    if static_rank(ctx, node) == 3:
        ctx.emit("Col2Im", [ctx.inp(node, 0), *inputs], [ctx.out(node)], **options)
        return
    axes = ctx.const(np.array([0], np.int64), "axes")
    batched = ctx.emit("Col2Im", [ctx.emit("Unsqueeze", [ctx.inp(node, 0), axes]), *inputs], **options)
    ctx.emit("Squeeze", [batched, axes], [ctx.out(node)])


@rule("ReverseSequence", versions=(1,), onnx="ReverseSequence (+ Transpose when the axes are not 0 and 1)",
      notes="seq_lengths of any numeric type are cast to int64",
      refuses=("data of dynamic rank with axes other than 0/1",))
def reverse_sequence(ctx, node):
    attributes = node.get_attributes()
    batch_axis, seq_axis = int(attributes["batch_axis"]), int(attributes["seq_axis"])
    lengths = ctx.int64(node, 1)
    if {batch_axis, seq_axis} == {0, 1}:
        ctx.emit("ReverseSequence", [ctx.inp(node, 0), lengths], [ctx.out(node)], batch_axis=batch_axis,
                 time_axis=seq_axis)
        return
    rank = static_rank(ctx, node)
    batch_axis, seq_axis = batch_axis % rank, seq_axis % rank
    perm = [seq_axis, batch_axis] + [a for a in range(rank) if a not in (seq_axis, batch_axis)]
    inverse = [perm.index(a) for a in range(rank)]
    moved = ctx.emit("Transpose", [ctx.inp(node, 0)], perm=perm)
    reversed_ = ctx.emit("ReverseSequence", [moved, lengths], batch_axis=1, time_axis=0)
    ctx.emit("Transpose", [reversed_], [ctx.out(node)], perm=inverse)


@rule("SliceScatter", versions=(15,), onnx="Range + Reshape + Slice (positions) + ScatterElements + Reshape",
      notes="the flat positions of the slice (Slice-8's start/stop/step/axes semantics on a tensor of positions) "
            "receive the updates: exact data movement")
def slice_scatter(ctx, node):
    data = ctx.inp(node, 0)
    shape = ctx.emit("Shape", [data])
    flat = ctx.const(np.array([-1], np.int64), "flat")
    positions = ctx.emit("Reshape", [ctx.emit("Range", [ctx.const(np.array(0, np.int64), "zero"),
                                                        ctx.emit("Size", [data]),
                                                        ctx.const(np.array(1, np.int64), "one")]), shape])
    if node.get_input_size() > 5:
        axes = ctx.int64_vector(node, 5)
    else:
        from .tensor import _length
        axes = ctx.const(np.arange(_length(ctx, node, 2), dtype=np.int64), "axes")
    taken = ctx.emit("Slice", [positions, ctx.int64_vector(node, 2), ctx.int64_vector(node, 3), axes,
                               ctx.int64_vector(node, 4)])
    scattered = ctx.emit("ScatterElements", [ctx.emit("Reshape", [data, flat]), ctx.emit("Reshape", [taken, flat]),
                                             ctx.emit("Reshape", [ctx.inp(node, 1), flat])], axis=0)
    ctx.emit("Reshape", [scattered, shape], [ctx.out(node)])


@rule("ExtractImagePatches", versions=(3,), onnx="Pad + one strided Slice per patch tap + Concat",
      notes="output channel (i * size_cols + j) * C + c holds tap (i, j) of input channel c (OpenVINO's order); "
            "same_upper/same_lower pad with zeros as OpenVINO; exact data movement",
      refuses=("dynamic spatial dims (the pads and output size are computed at import)",))
def extract_image_patches(ctx, node):
    attributes = node.get_attributes()
    sizes, strides, rates = ([int(v) for v in attributes[k]] for k in ("sizes", "strides", "rates"))
    auto_pad = str(attributes["auto_pad"]).lower()
    shape = node.get_input_partial_shape(0)
    if shape.rank.is_dynamic or shape.rank.get_length() != 4 or not all(shape[i].is_static for i in (2, 3)):
        raise Unsupported("needs 4-D data with static spatial dims")
    spatial = [shape[2].get_length(), shape[3].get_length()]
    spans = [(k - 1) * r + 1 for k, r in zip(sizes, rates)]
    begin, outs = [], []
    for size, span, stride in zip(spatial, spans, strides):
        if auto_pad == "valid":
            out, total = max((size - span) // stride + 1, 0), 0
        elif auto_pad in ("same_upper", "same_lower"):
            out = -(-size // stride)
            total = max((out - 1) * stride + span - size, 0)
        else:
            raise Unsupported(f"auto_pad={auto_pad!r}")
        begin.append(total // 2 if auto_pad != "same_lower" else total - total // 2)
        outs.append(out)
    data = ctx.inp(node, 0)
    if any(begin) or auto_pad != "valid":
        ends = [max((o - 1) * s + span - size - b, 0) for o, s, span, size, b in zip(outs, strides, spans, spatial,
                                                                                    begin)]
        data = ctx.emit("Pad", [data, ctx.const(np.array([0, 0] + begin + [0, 0] + ends, np.int64), "pads")])
    taps = []
    for i in range(sizes[0]):
        for j in range(sizes[1]):
            starts = [i * rates[0], j * rates[1]]
            stops = [st + (o - 1) * s + 1 for st, o, s in zip(starts, outs, strides)]
            taps.append(ctx.emit("Slice", [data, ctx.const(np.array(starts, np.int64), "starts"),
                                           ctx.const(np.array(stops, np.int64), "stops"),
                                           ctx.const(np.array([2, 3], np.int64), "axes"),
                                           ctx.const(np.array(strides, np.int64), "steps")]))
    ctx.emit("Concat", taps, [ctx.out(node)], axis=1)
