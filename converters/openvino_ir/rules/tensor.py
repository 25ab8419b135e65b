"""Shape and data movement: Reshape, Transpose, Concat, Gather*, ShapeOf, Squeeze/Unsqueeze, Broadcast,
Tile, Range, Slice, StridedSlice, Split, VariadicSplit, NonZero, ScatterNDUpdate.

ONNX takes several of these inputs as attributes (Transpose order, Gather axis, Split axis): those must
be Constants in the OpenVINO model, or the import says so.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from .._registry import Unsupported, rule
from .._types import INTEGER_CODES
from .quantization import gather_block_quantized

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


@rule("Gather", versions=(1, 7, 8), onnx="Gather; GatherND for batch_dims > 0; com.microsoft "
                                           "GatherBlockQuantized for a 4-bit compressed weight",
      notes="negative indices count from the end in both (Gather-8); Gather-8 returns 0 for out-of-range "
            "indices where onnxruntime raises; a 4-bit embedding stays 4-bit (the packed data MatMulNBits "
            "reads, shared by a tied lm_head)",
      refuses=("a computed axis: ONNX Gather takes it as an attribute",
               "batch_dims with axis != batch_dims"))
def gather(ctx, node):
    # Gather-8 returns 0 for out-of-range indices where ONNX raises; valid indices agree (negative too).
    axis = scalar_axis(ctx, node, 2)
    batch_dims = int(node.get_attributes().get("batch_dims", 0))
    if batch_dims == 0:
        if gather_block_quantized(ctx, node, axis):  # 4-bit embeddings stay 4-bit (quantization/compressed_weights.py)
            return
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


@rule("GatherND", versions=(5, 8), onnx="GatherND (+ Shape, Concat, Reshape for v5 batch_dims)",
      notes="v8 keeps the batch dims as ONNX does; v5 folds them into one leading dim: a Reshape to "
            "[-1] + the ONNX result's shape after the batch dims",
      refuses=())
def gather_nd(ctx, node):
    batch_dims = int(node.get_attributes().get("batch_dims", 0))
    version = int(node.get_type_info().version_id[len("opset"):])
    if version == 8 or batch_dims <= 1:  # one batch dim folded is the same dim
        ctx.emit("GatherND", [ctx.inp(node, 0), ctx.int64(node, 1)], [ctx.out(node)], batch_dims=batch_dims)
        return
    gathered = ctx.emit("GatherND", [ctx.inp(node, 0), ctx.int64(node, 1)], batch_dims=batch_dims)
    tail = ctx.emit("Shape", [gathered], start=batch_dims)
    folded = ctx.emit("Concat", [ctx.const(np.array([-1], np.int64), "minus_one"), tail], axis=0)
    ctx.emit("Reshape", [gathered, folded], [ctx.out(node)])


@rule("ShapeOf", versions=(1, 3),
      onnx="Shape (+ Cast to i32)")
def shape_of(ctx, node):
    code = ctx.out_elem(node)
    if code == TensorProto.INT64:
        ctx.emit("Shape", [ctx.inp(node, 0)], [ctx.out(node)])
    else:
        ctx.emit("Cast", [ctx.emit("Shape", [ctx.inp(node, 0)])], [ctx.out(node)], to=code)


@rule("Squeeze", versions=(1, 15),
      onnx="Squeeze; allow_axis_skip: Shape + Compress + Reshape",
      notes="scalar axes become 1-D. Squeeze-15 allow_axis_skip=true: a selected axis whose dim is not 1 stays; "
            "decided at import for static dims, at run time (the shape without the selected 1s) otherwise",
      refuses=("allow_axis_skip=true with computed axes or data of dynamic rank",))
def squeeze(ctx, node):
    if node.get_attributes().get("allow_axis_skip", False) and node.get_input_size() > 1:
        _squeeze_skipping(ctx, node)
        return
    inputs = [ctx.inp(node, 0)] + ([ctx.int64_vector(node, 1)] if node.get_input_size() > 1 else [])
    ctx.emit("Squeeze", inputs, [ctx.out(node)])


def _squeeze_skipping(ctx, node):
    rank = static_rank(ctx, node)
    axes = sorted({int(a) % rank for a in constant_input(ctx, node, 1, "axes").reshape(-1)}) if rank else []
    shape = node.get_input_partial_shape(0)
    if all(shape[a].is_static for a in axes):  # known at import: squeeze the 1s only
        ones = [a for a in axes if shape[a].get_length() == 1]
        if ones:
            ctx.emit("Squeeze", [ctx.inp(node, 0), ctx.const(np.array(ones, np.int64), "axes")], [ctx.out(node)])
        else:
            ctx.emit("Identity", [ctx.inp(node, 0)], [ctx.out(node)])
        return
    dims = ctx.emit("Shape", [ctx.inp(node, 0)])
    selected = ctx.const(np.isin(np.arange(rank), axes), "selected")
    drop = ctx.emit("And", [selected, ctx.emit("Equal", [dims, ctx.const(np.array(1, np.int64), "one")])])
    kept = ctx.emit("Compress", [dims, ctx.emit("Not", [drop])], axis=0)
    ctx.emit("Reshape", [ctx.inp(node, 0), kept], [ctx.out(node)], allowzero=1)


@rule("Unsqueeze", versions=(1,),
      onnx="Unsqueeze",
      notes="scalar axes become 1-D")
def unsqueeze(ctx, node):
    ctx.emit("Unsqueeze", [ctx.inp(node, 0), ctx.int64_vector(node, 1)], [ctx.out(node)])


@rule("Broadcast", versions=(1, 3), onnx="Expand (+ Unsqueeze for explicit)",
      notes="numpy and bidirectional: Expand (ONNX broadcasting is bidirectional; for numpy OpenVINO "
            "requires the target shape to be the result, so both agree). Explicit (Broadcast-1 records "
            "it as mode 'none', AutoBroadcastType::EXPLICIT == NONE): data dims land on the axes of "
            "axes_mapping, the others are inserted as 1 and expanded.",
      refuses=("pdpd mode: PaddlePaddle's broadcast rule has no ONNX equivalent",
               "explicit mode with a computed axes_mapping: the inserted axes must be known",
               "explicit mode with a target shape of dynamic length"))
def broadcast(ctx, node):
    mode = str(node.get_attributes().get("mode", "numpy")).lower()
    data, shape = ctx.inp(node, 0), ctx.int64(node, 1)
    if mode in ("numpy", "bidirectional"):  # numpy: the target shape is the result; Expand agrees
        ctx.emit("Expand", [data, shape], [ctx.out(node)])
        return
    if mode not in ("explicit", "none"):  # Broadcast-1 serialises EXPLICIT as "none" (same enum value)
        raise Unsupported(f"mode={mode!r}")
    mapping = constant_input(ctx, node, 2, "axes_mapping").reshape(-1).astype(np.int64)
    target_rank = node.get_input_partial_shape(1)
    if target_rank.rank.is_dynamic or target_rank[0].is_dynamic:
        raise Unsupported("explicit mode needs a target shape of static length")
    rank = target_rank[0].get_length()
    missing = [axis for axis in range(rank) if axis not in set(mapping.tolist())]
    aligned = ctx.emit("Unsqueeze", [data, ctx.const(np.array(missing, np.int64), "axes")]) if missing else data
    ctx.emit("Expand", [aligned, shape], [ctx.out(node)])


@rule("Tile", versions=(1,), onnx="Tile (+ Unsqueeze, Concat)",
      notes="repeats shorter than the rank are padded with leading 1s; longer ones give data leading dims of 1; "
            "computed repeats of static length are aligned the same way at run time",
      refuses=("computed repeats of dynamic length: the rank alignment needs it", "data of dynamic rank"))
def tile(ctx, node):
    rank = static_rank(ctx, node)
    data = ctx.inp(node, 0)
    constant = ctx.const_value(node, 1)
    if constant is not None:
        count = constant.size
    else:
        count = _length(ctx, node, 1)
    if count > rank:  # data gains leading dims of 1
        data = ctx.emit("Unsqueeze", [data, ctx.const(np.arange(count - rank, dtype=np.int64), "axes")])
    if constant is not None:
        repeats = constant.reshape(-1).astype(np.int64)
        if count < rank:  # missing leading repeats are 1
            repeats = np.concatenate([np.ones(rank - count, np.int64), repeats])
        repeats = ctx.const(repeats, "repeats")
    else:
        repeats = ctx.int64_vector(node, 1)
        if count < rank:
            repeats = ctx.emit("Concat", [ctx.const(np.ones(rank - count, np.int64), "ones"), repeats], axis=0)
    ctx.emit("Tile", [data, repeats], [ctx.out(node)])


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
      onnx="Slice (+ Squeeze for shrink_axis_mask, Unsqueeze for new_axis_mask)",
      notes="the slice spec is resolved at import: ellipsis_mask expands to full slices of the dims it stands "
            "for, new_axis_mask inserts dims of 1 (Unsqueeze after the Slice), shrink_axis_mask takes one element",
      refuses=("begin/end/stride not Constants", "new_axis_mask or ellipsis_mask on data of dynamic rank"))
def strided_slice(ctx, node):
    attributes = node.get_attributes()
    begin = constant_input(ctx, node, 1, "begin").reshape(-1).astype(np.int64)
    end = constant_input(ctx, node, 2, "end").reshape(-1).astype(np.int64)
    stride = (constant_input(ctx, node, 3, "stride").reshape(-1).astype(np.int64)
              if node.get_input_size() > 3 else np.ones_like(begin))
    n = begin.size
    begin_mask, end_mask = _mask(attributes, "begin_mask", n), _mask(attributes, "end_mask", n)
    shrink = _mask(attributes, "shrink_axis_mask", n)
    new_axis, ellipsis = _mask(attributes, "new_axis_mask", n), _mask(attributes, "ellipsis_mask", n)
    if any(new_axis) or any(ellipsis):
        rank = ctx.rank(node, 0)
        if rank is None:
            raise Unsupported("new_axis_mask / ellipsis_mask need data of static rank")
    else:
        rank = n
    # Resolve the spec into one entry per input dim (ellipsis: full slices; the first one only, as OpenVINO)
    # and the output positions of the new axes.
    consumed = sum(1 for i in range(n) if not new_axis[i] and not ellipsis[i])
    axes, starts, ends, steps, squeezed, inserted = [], [], [], [], [], []
    dim = out = 0
    seen_ellipsis = False
    for i in range(n):
        if ellipsis[i] and not seen_ellipsis:
            seen_ellipsis = True
            count = max(rank - consumed, 0)
            dim, out = dim + count, out + count  # full slices: nothing to emit
            continue
        if ellipsis[i]:
            continue
        if new_axis[i]:
            inserted.append(out)
            out += 1
            continue
        step = int(stride[i])
        if shrink[i]:  # take the single element at begin[i]
            b = int(begin[i])
            axes.append(dim), starts.append(b), ends.append(INT64_MAX if b == -1 else b + 1), steps.append(1)
            squeezed.append(dim)
            dim += 1
            continue
        # A set mask bit means "ignore begin/end: run to that end of the dim" (OpenVINO StridedSlice-1).
        axes.append(dim)
        starts.append((0 if step > 0 else INT64_MAX) if begin_mask[i] else int(begin[i]))
        ends.append((INT64_MAX if step > 0 else INT64_MIN) if end_mask[i] else int(end[i]))
        steps.append(step)
        dim, out = dim + 1, out + 1
    value = ctx.inp(node, 0)
    last = [("slice", bool(axes)), ("squeeze", bool(squeezed)), ("unsqueeze", bool(inserted))]
    final = max((k for k, (_, used) in enumerate(last) if used), default=-1)
    if final < 0:
        ctx.emit("Identity", [value], [ctx.out(node)])
        return
    target = lambda k: [ctx.out(node)] if k == final else None  # noqa: E731
    if axes:
        value = ctx.emit("Slice", [value, ctx.const(np.array(starts, np.int64), "starts"),
                                   ctx.const(np.array(ends, np.int64), "ends"),
                                   ctx.const(np.array(axes, np.int64), "axes"),
                                   ctx.const(np.array(steps, np.int64), "steps")], target(0))
    if squeezed:
        value = ctx.emit("Squeeze", [value, ctx.const(np.array(squeezed, np.int64), "axes")], target(1))
    if inserted:
        ctx.emit("Unsqueeze", [value, ctx.const(np.array(inserted, np.int64), "axes")], target(2))


@rule("Split", versions=(1,), onnx="Split (num_outputs)",
      notes="num_splits equal parts (OpenVINO requires the axis to divide evenly, so ONNX's uneven last "
            "part never arises)",
      refuses=("a computed axis: ONNX Split takes the axis as an attribute",))
def split(ctx, node):
    outputs = [ctx.out(node, i) for i in range(node.get_output_size())]
    ctx.emit("Split", [ctx.inp(node, 0)], outputs, axis=scalar_axis(ctx, node, 1),
             num_outputs=int(node.get_attributes()["num_splits"]))


@rule("VariadicSplit", versions=(1,), onnx="Split (+ Shape, Gather, Where for -1 or computed lengths)",
      notes="constant split_lengths become a constant split input (-1 resolved from a static dim); computed "
            "lengths (or -1 on a dynamic dim) are passed at run time, a -1 replaced by what the others leave",
      refuses=("a computed axis: ONNX Split takes the axis as an attribute",))
def variadic_split(ctx, node):
    axis = scalar_axis(ctx, node, 1)
    outputs = [ctx.out(node, i) for i in range(node.get_output_size())]
    lengths = ctx.const_value(node, 2)
    if lengths is not None:
        lengths = lengths.reshape(-1).astype(np.int64)
        shape = node.get_input_partial_shape(0)
        dim = shape[axis] if shape.rank.is_static else None
        if not (lengths == -1).any():
            ctx.emit("Split", [ctx.inp(node, 0), ctx.const(lengths, "split")], outputs, axis=axis)
            return
        if dim is not None and dim.is_static:  # the one -1 takes what is left
            lengths[lengths == -1] = dim.get_length() - lengths[lengths != -1].sum()
            ctx.emit("Split", [ctx.inp(node, 0), ctx.const(lengths, "split")], outputs, axis=axis)
            return
    # Lengths known at run time only: ONNX Split has no -1, so resolve it from the dim.
    lengths = ctx.int64_vector(node, 2)
    minus_one = ctx.const(np.array(-1, np.int64), "minus_one")
    is_rest = ctx.emit("Equal", [lengths, minus_one])
    zero = ctx.const(np.array(0, np.int64), "zero")
    known = ctx.emit("ReduceSum", [ctx.emit("Where", [is_rest, zero, lengths])], keepdims=0)
    dim = ctx.emit("Gather", [ctx.emit("Shape", [ctx.inp(node, 0)]), ctx.const(np.array(axis, np.int64), "axis")],
                   axis=0)
    rest = ctx.emit("Sub", [dim, known])
    resolved = ctx.emit("Where", [is_rest, rest, lengths])
    ctx.emit("Split", [ctx.inp(node, 0), resolved], outputs, axis=axis)


@rule("NonZero", versions=(3,),
      onnx="NonZero (+ Cast to i32)")
def non_zero(ctx, node):
    code = ctx.out_elem(node)
    if code == TensorProto.INT64:
        ctx.emit("NonZero", [ctx.inp(node, 0)], [ctx.out(node)])
    else:
        ctx.emit("Cast", [ctx.emit("NonZero", [ctx.inp(node, 0)])], [ctx.out(node)], to=code)


_ND_REDUCTIONS = {"none": "none", "sum": "add", "prod": "mul", "min": "min", "max": "max", "sub": "add"}


@rule("ScatterNDUpdate", versions=(4, 15),
      onnx="ScatterND (sub: reduction add of 0 - updates)",
      notes="ScatterNDUpdate-3 is recorded as opset4; reductions none/sum/prod/min/max, and sub as the addition "
            "of the negated updates (exact: IEEE a - b == a + (-b), integers wrap alike)",
      refuses=("reduction sub on boolean data",))  # ScatterNDUpdate-3 is recorded as opset4
def scatter_nd_update(ctx, node):
    reduction = str(node.get_attributes().get("reduction", "none")).lower()
    if reduction not in _ND_REDUCTIONS:
        raise Unsupported(f"reduction={reduction!r} (ONNX ScatterND: none, sum, prod, min, max)")
    updates = ctx.inp(node, 2)
    if reduction == "sub":
        code = ctx.elem(node, 2)
        if code == TensorProto.BOOL:
            raise Unsupported("reduction sub on boolean data")
        zero = ctx.const(np.zeros((), helper.tensor_dtype_to_np_dtype(code)), "zero")
        updates = ctx.emit("Sub", [zero, updates])
    ctx.emit("ScatterND", [ctx.inp(node, 0), ctx.int64(node, 1), updates], [ctx.out(node)],
             reduction=_ND_REDUCTIONS[reduction])
