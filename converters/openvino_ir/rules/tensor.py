"""Shape and data movement: Reshape, Transpose, Concat, Gather*, ShapeOf, Squeeze/Unsqueeze, Broadcast,
Tile, Range, Slice, StridedSlice, Split, VariadicSplit, NonZero, ScatterNDUpdate.

ONNX takes several of these inputs as attributes (Transpose order, Gather axis, Split axis): those must
be Constants in the OpenVINO model, or the import says so.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule
from .._types import INTEGER_CODES

INT64_MAX, INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def constant_input(ctx, node, index: int, what: str) -> np.ndarray:
    value = ctx.const_value(node, index)
    if value is None:
        raise Unsupported(f"{what} (input {index}) must be a Constant")
    return value


def scalar_axis(ctx, node, index: int, what: str = "axis") -> int:
    value = constant_input(ctx, node, index, what)
    if value.size != 1:
        raise Unsupported(f"{what} must hold one value, got shape {value.shape}")
    return int(value.reshape(-1)[0])


def static_rank(ctx, node, index: int = 0) -> int:
    rank = ctx.rank(node, index)
    if rank is None:
        raise Unsupported(f"input {index} needs a static rank")
    return rank


@rule("Reshape", versions=(1,),
      onnx="Reshape",
      notes="special_zero true -> allowzero 0, false -> allowzero 1")
def reshape(ctx, node):
    # special_zero=true: 0 copies the input dim (ONNX allowzero=0); false: 0 is a literal 0 (allowzero=1).
    special_zero = bool(node.get_attributes().get("special_zero", False))
    ctx.emit("Reshape", [ctx.inp(node, 0), ctx.int64(node, 1)], [ctx.out(node)],
             allowzero=0 if special_zero else 1)


@rule("Transpose", versions=(1,),
      onnx="Transpose",
      notes="empty order reverses the dims",
      refuses=("order not a Constant", "empty order on data of dynamic rank"))
def transpose(ctx, node):
    order = constant_input(ctx, node, 1, "order").reshape(-1).astype(np.int64)
    if order.size == 0:  # empty order reverses the dims
        order = np.arange(static_rank(ctx, node) - 1, -1, -1)
    ctx.emit("Transpose", [ctx.inp(node, 0)], [ctx.out(node)], perm=[int(i) for i in order])


@rule("Concat", versions=(1,),
      onnx="Concat")
def concat(ctx, node):
    ctx.emit("Concat", [ctx.inp(node, i) for i in range(node.get_input_size())], [ctx.out(node)],
             axis=int(node.get_attributes()["axis"]))


@rule("Gather", versions=(1, 7, 8),
      onnx="Gather; GatherND when batch_dims = axis > 0",
      notes="Gather-8 out-of-range indices: OpenVINO returns 0, onnxruntime raises",
      refuses=("axis not a Constant", "batch_dims other than 0 or axis"))
def gather(ctx, node):
    # Gather-8 returns 0 for out-of-range indices where ONNX raises; valid indices agree (negative too).
    axis = scalar_axis(ctx, node, 2)
    batch_dims = int(node.get_attributes().get("batch_dims", 0))
    if batch_dims == 0:
        ctx.emit("Gather", [ctx.inp(node, 0), ctx.int64_or_int32(node, 1)], [ctx.out(node)], axis=axis)
        return
    data_rank, indices_rank = ctx.rank(node, 0), ctx.rank(node, 1)
    if batch_dims < 0:
        if indices_rank is None:
            raise Unsupported("negative batch_dims needs indices of static rank")
        batch_dims += indices_rank
    if axis < 0:
        if data_rank is None:
            raise Unsupported("negative axis needs data of static rank")
        axis += data_rank
    if axis != batch_dims:
        raise Unsupported(f"batch_dims={batch_dims} with axis={axis} (only axis == batch_dims)")
    # Gather along the first non-batch axis == GatherND with one-element index tuples.
    tuples = ctx.emit("Unsqueeze", [ctx.int64(node, 1), ctx.const(np.array([-1], np.int64), "axes")])
    ctx.emit("GatherND", [ctx.inp(node, 0), tuples], [ctx.out(node)], batch_dims=batch_dims)


@rule("GatherElements", versions=(6,),
      onnx="GatherElements")
def gather_elements(ctx, node):
    ctx.emit("GatherElements", [ctx.inp(node, 0), ctx.int64_or_int32(node, 1)], [ctx.out(node)],
             axis=int(node.get_attributes()["axis"]))


@rule("GatherND", versions=(5, 8),
      onnx="GatherND",
      refuses=("GatherND-5 with batch_dims > 0 (it folds the batch dims)",))
def gather_nd(ctx, node):
    batch_dims = int(node.get_attributes().get("batch_dims", 0))
    version = int(node.get_type_info().version_id[len("opset"):])
    if version == 5 and batch_dims > 0:  # v5 folds the batch dims into one output dim; ONNX keeps them
        raise Unsupported("GatherND-5 with batch_dims > 0")
    ctx.emit("GatherND", [ctx.inp(node, 0), ctx.int64(node, 1)], [ctx.out(node)], batch_dims=batch_dims)


@rule("ShapeOf", versions=(1, 3),
      onnx="Shape (+ Cast to i32)")
def shape_of(ctx, node):
    code = ctx.out_elem(node)
    if code == TensorProto.INT64:
        ctx.emit("Shape", [ctx.inp(node, 0)], [ctx.out(node)])
    else:
        ctx.emit("Cast", [ctx.emit("Shape", [ctx.inp(node, 0)])], [ctx.out(node)], to=code)


@rule("Squeeze", versions=(1, 15),
      onnx="Squeeze",
      notes="scalar axes become 1-D",
      refuses=("allow_axis_skip=true",))
def squeeze(ctx, node):
    if node.get_attributes().get("allow_axis_skip", False):
        raise Unsupported("allow_axis_skip=true")
    inputs = [ctx.inp(node, 0)] + ([ctx.int64_vector(node, 1)] if node.get_input_size() > 1 else [])
    ctx.emit("Squeeze", inputs, [ctx.out(node)])


@rule("Unsqueeze", versions=(1,),
      onnx="Unsqueeze",
      notes="scalar axes become 1-D")
def unsqueeze(ctx, node):
    ctx.emit("Unsqueeze", [ctx.inp(node, 0), ctx.int64_vector(node, 1)], [ctx.out(node)])


@rule("Broadcast", versions=(1, 3),
      onnx="Expand (numpy, bidirectional); Unsqueeze + Expand (explicit)",
      refuses=("explicit with axes_mapping not a Constant or a target shape of dynamic length",))
def broadcast(ctx, node):
    mode = str(node.get_attributes().get("mode", "numpy")).lower()
    data, shape = ctx.inp(node, 0), ctx.int64(node, 1)
    if mode in ("numpy", "bidirectional"):  # numpy: the target shape is the result; Expand agrees
        ctx.emit("Expand", [data, shape], [ctx.out(node)])
        return
    if mode != "explicit":
        raise Unsupported(f"mode={mode!r}")
    mapping = constant_input(ctx, node, 2, "axes_mapping").reshape(-1).astype(np.int64)
    target_rank = node.get_input_partial_shape(1)
    if target_rank.rank.is_dynamic or target_rank[0].is_dynamic:
        raise Unsupported("explicit mode needs a target shape of static length")
    rank = target_rank[0].get_length()
    missing = [axis for axis in range(rank) if axis not in set(mapping.tolist())]
    aligned = ctx.emit("Unsqueeze", [data, ctx.const(np.array(missing, np.int64), "axes")]) if missing else data
    ctx.emit("Expand", [aligned, shape], [ctx.out(node)])


@rule("Tile", versions=(1,),
      onnx="Tile",
      notes="repeats padded, or data unsqueezed, to the same length",
      refuses=("repeats not a Constant", "data of dynamic rank"))
def tile(ctx, node):
    repeats = constant_input(ctx, node, 1, "repeats").reshape(-1).astype(np.int64)
    rank = static_rank(ctx, node)
    data = ctx.inp(node, 0)
    if repeats.size < rank:  # missing leading repeats are 1
        repeats = np.concatenate([np.ones(rank - repeats.size, np.int64), repeats])
    elif repeats.size > rank:  # data gains leading dims of 1
        data = ctx.emit("Unsqueeze", [data, ctx.const(np.arange(repeats.size - rank, dtype=np.int64), "axes")])
    ctx.emit("Tile", [data, ctx.const(repeats, "repeats")], [ctx.out(node)])


@rule("Range", versions=(1, 4),
      onnx="Range (inputs cast to the output type)",
      refuses=("floating-point bounds with an integer output type",))
def range_(ctx, node):
    code = ctx.out_elem(node)
    if code not in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT16, TensorProto.INT32,
                    TensorProto.INT64):
        raise Unsupported(f"output type {TensorProto.DataType.Name(code)} (ONNX Range: float, double, "
                          "int16, int32, int64)")
    inputs = []
    for index in range(3):
        source = ctx.elem(node, index)
        if source not in INTEGER_CODES and code in INTEGER_CODES:
            raise Unsupported("floating-point bounds with an integer output type")
        name = ctx.inp(node, index)
        inputs.append(name if source == code else ctx.emit("Cast", [name], to=code))
    ctx.emit("Range", inputs, [ctx.out(node)])


@rule("Slice", versions=(8,),
      onnx="Slice")
def slice_(ctx, node):
    starts, stops, steps = (ctx.int64(node, i) for i in (1, 2, 3))
    if node.get_input_size() > 4:
        axes = ctx.int64(node, 4)
    else:
        axes = ctx.const(np.arange(_length(ctx, node, 1), dtype=np.int64), "axes")
    ctx.emit("Slice", [ctx.inp(node, 0), starts, stops, axes, steps], [ctx.out(node)])


def _length(ctx, node, index: int) -> int:
    shape = node.get_input_partial_shape(index)
    if shape.rank.is_dynamic or shape[0].is_dynamic:
        raise Unsupported(f"input {index} needs a static length")
    return shape[0].get_length()


def _mask(attributes, name: str, length: int) -> list[int]:
    bits = [int(b) for b in attributes.get(name, [])]
    return (bits + [0] * length)[:length]


@rule("StridedSlice", versions=(1,),
      onnx="Slice (+ Squeeze for shrink_axis_mask)",
      refuses=("begin/end/stride not Constants", "new_axis_mask, ellipsis_mask"))
def strided_slice(ctx, node):
    attributes = node.get_attributes()
    begin = constant_input(ctx, node, 1, "begin").reshape(-1).astype(np.int64)
    end = constant_input(ctx, node, 2, "end").reshape(-1).astype(np.int64)
    stride = (constant_input(ctx, node, 3, "stride").reshape(-1).astype(np.int64)
              if node.get_input_size() > 3 else np.ones_like(begin))
    n = begin.size
    if any(any(_mask(attributes, name, n)) for name in ("new_axis_mask", "ellipsis_mask")):
        raise Unsupported("new_axis_mask / ellipsis_mask")
    begin_mask, end_mask = _mask(attributes, "begin_mask", n), _mask(attributes, "end_mask", n)
    shrink = _mask(attributes, "shrink_axis_mask", n)
    starts, ends, steps = [], [], []
    for i in range(n):
        step = int(stride[i])
        if shrink[i]:  # take the single element at begin[i]
            b = int(begin[i])
            starts.append(b), ends.append(INT64_MAX if b == -1 else b + 1), steps.append(1)
            continue
        # A set mask bit means "ignore begin/end: run to that end of the dim" (OpenVINO StridedSlice-1).
        starts.append((0 if step > 0 else INT64_MAX) if begin_mask[i] else int(begin[i]))
        ends.append((INT64_MAX if step > 0 else INT64_MIN) if end_mask[i] else int(end[i]))
        steps.append(step)
    axes = np.arange(n, dtype=np.int64)
    sliced = ctx.emit("Slice", [ctx.inp(node, 0), ctx.const(np.array(starts, np.int64), "starts"),
                                ctx.const(np.array(ends, np.int64), "ends"), ctx.const(axes, "axes"),
                                ctx.const(np.array(steps, np.int64), "steps")],
                      None if any(shrink) else [ctx.out(node)])
    if any(shrink):
        squeeze_axes = np.array([i for i in range(n) if shrink[i]], np.int64)
        ctx.emit("Squeeze", [sliced, ctx.const(squeeze_axes, "axes")], [ctx.out(node)])


@rule("Split", versions=(1,),
      onnx="Split",
      refuses=("axis not a Constant",))
def split(ctx, node):
    outputs = [ctx.out(node, i) for i in range(node.get_output_size())]
    ctx.emit("Split", [ctx.inp(node, 0)], outputs, axis=scalar_axis(ctx, node, 1),
             num_outputs=int(node.get_attributes()["num_splits"]))


@rule("VariadicSplit", versions=(1,),
      onnx="Split",
      notes="a -1 length needs a static dim",
      refuses=("axis or split_lengths not Constants",))
def variadic_split(ctx, node):
    axis = scalar_axis(ctx, node, 1)
    lengths = constant_input(ctx, node, 2, "split_lengths").reshape(-1).astype(np.int64)
    if (lengths == -1).any():  # the one -1 takes what is left: needs the static dim
        shape = node.get_input_partial_shape(0)
        dim = shape[axis] if shape.rank.is_static else None
        if dim is None or dim.is_dynamic:
            raise Unsupported("split_lengths with -1 needs a static dimension on axis")
        lengths[lengths == -1] = dim.get_length() - lengths[lengths != -1].sum()
    outputs = [ctx.out(node, i) for i in range(node.get_output_size())]
    ctx.emit("Split", [ctx.inp(node, 0), ctx.const(lengths, "split")], outputs, axis=axis)


@rule("NonZero", versions=(3,),
      onnx="NonZero (+ Cast to i32)")
def non_zero(ctx, node):
    code = ctx.out_elem(node)
    if code == TensorProto.INT64:
        ctx.emit("NonZero", [ctx.inp(node, 0)], [ctx.out(node)])
    else:
        ctx.emit("Cast", [ctx.emit("NonZero", [ctx.inp(node, 0)])], [ctx.out(node)], to=code)


_ND_REDUCTIONS = {"none": "none", "sum": "add", "prod": "mul", "min": "min", "max": "max"}


@rule("ScatterNDUpdate", versions=(4, 15),
      onnx="ScatterND",
      notes="ScatterNDUpdate-3 is recorded as opset4; reductions none/sum/prod/min/max",
      refuses=("reduction sub",))  # ScatterNDUpdate-3 is recorded as opset4
def scatter_nd_update(ctx, node):
    reduction = str(node.get_attributes().get("reduction", "none")).lower()
    if reduction not in _ND_REDUCTIONS:
        raise Unsupported(f"reduction={reduction!r} (ONNX ScatterND: none, sum, prod, min, max)")
    ctx.emit("ScatterND", [ctx.inp(node, 0), ctx.int64(node, 1), ctx.inp(node, 2)], [ctx.out(node)],
             reduction=_ND_REDUCTIONS[reduction])
