"""Layout: Pad, DepthToSpace, SpaceToDepth, ShuffleChannels, Roll, Reverse."""
from __future__ import annotations

import numpy as np

from .._registry import Unsupported, rule
from .tensor import INT64_MAX, constant_input, static_rank


def _slice(ctx, data: str, starts, ends, axes, steps=None) -> str:
    inputs = [data, ctx.const(np.array(starts, np.int64), "starts"), ctx.const(np.array(ends, np.int64), "ends"),
              ctx.const(np.array(axes, np.int64), "axes")]
    if steps is not None:
        inputs.append(ctx.const(np.array(steps, np.int64), "steps"))
    return ctx.emit("Slice", inputs)


def _symmetric(ctx, data: str, begin, end) -> str:
    """Symmetric padding (the edge value repeated, then mirrored), per axis: reversed slices + Concat."""
    for axis, (before, after) in enumerate(zip(begin, end)):
        if before == 0 and after == 0:
            continue
        parts = []
        if before:  # x[before-1::-1] along axis
            parts.append(_slice(ctx, data, [before - 1], [-INT64_MAX], [axis], [-1]))
        parts.append(data)
        if after:  # x[-1:-after-1:-1]
            parts.append(_slice(ctx, data, [-1], [-after - 1], [axis], [-1]))
        data = ctx.emit("Concat", parts, axis=axis)
    return data


@rule("Pad", versions=(1, 12), onnx="Pad (constant, edge, reflect); Slice for negative pads; Slice+Concat "
      "for symmetric",
      notes="negative pads (Pad-12) crop: a Slice before the padding, so no reliance on ONNX negative pads; "
            "symmetric (mirror including the edge) is built from reversed Slices. Computed pads go to Pad "
            "as run-time input (constant, edge, reflect only)",
      refuses=("symmetric mode or negative pads with computed pads_begin/pads_end",))
def pad(ctx, node):
    mode = str(node.get_attributes().get("pad_mode", "constant")).lower()
    data = ctx.inp(node, 0)
    begin, end = ctx.const_value(node, 1), ctx.const_value(node, 2)
    value = [ctx.inp(node, 3)] if mode == "constant" and node.get_input_size() > 3 else []
    onnx_mode = {"constant": "constant", "edge": "edge", "reflect": "reflect"}.get(mode)
    if begin is None or end is None:
        if onnx_mode is None:
            raise Unsupported(f"pad_mode={mode!r} with computed pads")
        # ONNX Pad with negative run-time pads crops too (onnxruntime); the spec allows it.
        pads = ctx.emit("Concat", [ctx.int64_vector(node, 1), ctx.int64_vector(node, 2)], axis=0)
        ctx.emit("Pad", [data, pads] + value, [ctx.out(node)], mode=onnx_mode)
        return
    begin, end = begin.reshape(-1).astype(np.int64), end.reshape(-1).astype(np.int64)
    if (begin < 0).any() or (end < 0).any():  # crop first
        axes = [i for i in range(begin.size) if begin[i] < 0 or end[i] < 0]
        starts = [int(-min(begin[i], 0)) for i in axes]
        ends = [int(min(end[i], 0)) or INT64_MAX for i in axes]
        data = _slice(ctx, data, starts, ends, axes)
        begin, end = np.maximum(begin, 0), np.maximum(end, 0)
    if not begin.any() and not end.any():
        ctx.emit("Identity", [data], [ctx.out(node)])
    elif mode == "symmetric":
        ctx.emit("Identity", [_symmetric(ctx, data, begin.tolist(), end.tolist())], [ctx.out(node)])
    elif onnx_mode is None:
        raise Unsupported(f"pad_mode={mode!r}")
    else:
        pads = ctx.const(np.concatenate([begin, end]), "pads")
        ctx.emit("Pad", [data, pads] + value, [ctx.out(node)], mode=onnx_mode)


def _block_size(node) -> int:
    return int(node.get_attributes()["block_size"])


def _channels(ctx, node) -> int:
    shape = node.get_input_partial_shape(0)
    if shape.rank.is_dynamic or shape.rank.get_length() != 4:
        raise Unsupported("only 4-D data (ONNX DepthToSpace / SpaceToDepth are 4-D)")
    if shape[1].is_dynamic:
        raise Unsupported("depth_first needs a static channel dim")
    return shape[1].get_length()


@rule("DepthToSpace", versions=(1,), onnx="DepthToSpace",
      notes="blocks_first is ONNX mode DCR, depth_first is CRD",
      refuses=("data other than 4-D: ONNX DepthToSpace is 4-D only",))
def depth_to_space(ctx, node):
    if static_rank(ctx, node) != 4:
        raise Unsupported("only 4-D data (ONNX DepthToSpace is 4-D only)")
    mode = str(node.get_attributes()["mode"]).lower()
    ctx.emit("DepthToSpace", [ctx.inp(node, 0)], [ctx.out(node)], blocksize=_block_size(node),
             mode="DCR" if mode == "blocks_first" else "CRD")


@rule("SpaceToDepth", versions=(1,), onnx="SpaceToDepth (+ Gather of the channels for depth_first)",
      notes="ONNX SpaceToDepth is blocks_first; depth_first is the same values with the channels "
            "permuted (channel c*b*b + k instead of k*C + c): a constant Gather along axis 1",
      refuses=("data other than 4-D: ONNX SpaceToDepth is 4-D only",
               "depth_first with a dynamic channel dim"))
def space_to_depth(ctx, node):
    if static_rank(ctx, node) != 4:
        raise Unsupported("only 4-D data (ONNX SpaceToDepth is 4-D only)")
    block = _block_size(node)
    if str(node.get_attributes()["mode"]).lower() == "blocks_first":
        ctx.emit("SpaceToDepth", [ctx.inp(node, 0)], [ctx.out(node)], blocksize=block)
        return
    channels = _channels(ctx, node)
    blocks_first = ctx.emit("SpaceToDepth", [ctx.inp(node, 0)], blocksize=block)
    # output channel c*b*b + k (depth_first) is blocks_first channel k*C + c
    order = np.arange(block * block * channels).reshape(block * block, channels).T.reshape(-1)
    ctx.emit("Gather", [blocks_first, ctx.const(order.astype(np.int64), "order")], [ctx.out(node)], axis=1)


@rule("ShuffleChannels", versions=(1,), onnx="Gather (a constant channel permutation)",
      notes="reshape to [group, C/group], transpose, flatten == a fixed permutation of the axis",
      refuses=("a dynamic dim on axis",))
def shuffle_channels(ctx, node):
    attributes = node.get_attributes()
    axis, group = int(attributes["axis"]), int(attributes["group"])
    shape = node.get_input_partial_shape(0)
    if shape.rank.is_dynamic or shape[axis].is_dynamic:
        raise Unsupported("a static dim on axis is needed")
    channels = shape[axis].get_length()
    order = np.arange(channels).reshape(group, channels // group).T.reshape(-1)
    ctx.emit("Gather", [ctx.inp(node, 0), ctx.const(order.astype(np.int64), "order")], [ctx.out(node)],
             axis=axis)


@rule("Roll", versions=(7,), onnx="Shape, Gather, Mod, Slice, Concat per (shift, axis)",
      notes="each (shift, axis) pair: shift modulo the dim (at run time, so dynamic dims work), the tail "
            "moved to the front; repeated axes add up as in OpenVINO",
      refuses=("computed axes", "computed shift"))
def roll(ctx, node):
    shift = constant_input(ctx, node, 1, "shift").reshape(-1).astype(np.int64)
    axes = constant_input(ctx, node, 2, "axes").reshape(-1).astype(np.int64)
    if shift.size == 1 and axes.size > 1:  # one shift for every axis
        shift = np.repeat(shift, axes.size)
    if shift.size != axes.size:
        raise Unsupported(f"{shift.size} shifts for {axes.size} axes")
    data = ctx.inp(node, 0)
    shape = ctx.emit("Shape", [data])
    for amount, axis in zip(shift.tolist(), axes.tolist()):
        dim = ctx.emit("Gather", [shape, ctx.const(np.array([axis], np.int64), "axis")], axis=0)
        moved = ctx.emit("Mod", [ctx.const(np.array([amount], np.int64), "shift"), dim])  # in [0, dim)
        split = ctx.emit("Sub", [dim, moved])
        axis_const = ctx.const(np.array([axis], np.int64), "axes")
        tail = ctx.emit("Slice", [data, split, ctx.const(np.array([INT64_MAX], np.int64), "end"), axis_const])
        head = ctx.emit("Slice", [data, ctx.const(np.array([0], np.int64), "start"), split, axis_const])
        data = ctx.emit("Concat", [tail, head], axis=axis)
    ctx.emit("Identity", [data], [ctx.out(node)])


@rule("Reverse", versions=(1,), onnx="Slice (step -1 on the reversed axes)",
      notes="mode index: the axes listed; mode mask: the axes whose flag is set",
      refuses=("computed axes: Slice needs to know which axes",))
def reverse(ctx, node):
    value = constant_input(ctx, node, 1, "axes").reshape(-1)
    if str(node.get_attributes().get("mode", "index")).lower() == "mask":
        axes = [i for i, flag in enumerate(value.tolist()) if flag]
    else:
        axes = [int(a) for a in value]
    if not axes:
        ctx.emit("Identity", [ctx.inp(node, 0)], [ctx.out(node)])
        return
    ctx.emit("Identity", [_slice(ctx, ctx.inp(node, 0), [-1] * len(axes), [-INT64_MAX] * len(axes), axes,
                                 [-1] * len(axes))], [ctx.out(node)])
