"""Pooling: MaxPool-1/8/14, AvgPool-1/14/16, AdaptiveAvgPool-8, AdaptiveMaxPool-8.

Rounding: with static spatial dims, OpenVINO's shape inference says how many windows there are (floor,
ceil, or ceil_torch, which drops a last window starting in the padding); the rule emits explicit ONNX
pads whose floor rounding gives exactly that many (_spatial.floor_end_pads). With dynamic spatial dims,
explicit and valid pads are kept, floor maps to ONNX's floor and ceil_torch to ONNX's ceil_mode
(onnxruntime drops a last window starting in the end padding, as ceil_torch does); plain ceil only where
no last window can start there; same_* is refused (onnxruntime's SAME_* MaxPool disagrees with OpenVINO).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule
from ._spatial import FLOATS, floor_end_pads, require_type, pads_begin, static_output_spatial, static_spatial, window

_ROUNDING = ("floor", "ceil", "ceil_torch")


def _used(node, index: int) -> bool:
    return bool(node.output(index).get_target_inputs())


def _pads(node, w, rounding: str, averaging_pads: bool = False) -> dict:
    """ONNX pads (or auto_pad, ceil_mode) giving OpenVINO's windows; see the module doc.
    `averaging_pads`: an average whose divisor counts the padding (exclude-pad=false)."""
    rounding = rounding.lower()
    if rounding not in _ROUNDING:
        raise Unsupported(f"rounding_type={rounding!r}")
    sizes, outputs = static_spatial(node), static_output_spatial(node)
    if sizes is not None and outputs is not None:
        begin = pads_begin(w, sizes, outputs)
        end = floor_end_pads(sizes, outputs, begin, w)
        for pb, pe, k in zip(begin, end, w.kernel):
            if max(pb, pe) >= k:
                raise Unsupported(f"pads {begin}+{end} reach kernel {w.kernel}: ONNX needs pads below it")
        return {"pads": begin + end}
    if w.auto_pad in ("same_upper", "same_lower"):
        raise Unsupported(f"auto_pad {w.auto_pad} with dynamic spatial dims (onnxruntime's SAME_* MaxPool "
                          "pads differ from OpenVINO's)")
    begin, end = (w.pads_begin, w.pads_end) if w.auto_pad == "explicit" else ([0] * len(w.kernel),) * 2
    if rounding == "floor":
        return {"pads": begin + end}
    # Dynamic dims, explicit pads, ceil rounding: ONNX's ceil_mode is ceil_torch (onnxruntime drops a last
    # window starting in the end padding). OpenVINO's plain ceil keeps it, but it can only start there if
    # the end pad exceeds the kernel's span minus the stride.
    spans = [(k - 1) * d + 1 for k, d in zip(w.kernel, w.dilations)]
    if rounding == "ceil" and any(pe > span - s for pe, span, s in zip(end, spans, w.strides)):
        raise Unsupported("rounding_type=ceil with dynamic spatial dims and an end pad where a last window "
                          "may start (ONNX's ceil_mode drops it, OpenVINO's ceil keeps it)")
    if averaging_pads and any(s > 1 for s in w.strides):
        raise Unsupported("exclude-pad=false with ceil rounding, strides > 1 and dynamic spatial dims "
                          "(onnxruntime divides a window running past the end pad by what it covers, "
                          "OpenVINO by the whole kernel)")
    return {"pads": begin + end, "ceil_mode": 1}


def _indices_from(ctx, node, onnx_indices: str, axis: int, element: str) -> str:
    """ONNX MaxPool's indices (flattened over the whole tensor, no padding) as OpenVINO's: flattened
    over dims axis.. , so modulo their product; in OpenVINO's index element type."""
    rank = ctx.rank(node, 0)
    if rank is None:
        raise Unsupported("indices need a static input rank")
    axis = axis + rank if axis < 0 else axis
    indices = onnx_indices
    if axis > 0:
        shape = ctx.emit("Shape", [ctx.inp(node, 0)], start=axis)
        size = ctx.emit("ReduceProd", [shape], keepdims=1)
        indices = ctx.emit("Mod", [indices, size])
    code = TensorProto.INT32 if element == "i32" else TensorProto.INT64
    return indices if code == TensorProto.INT64 else ctx.emit("Cast", [indices], to=code)


_MAX_POOL_TYPES = FLOATS + (TensorProto.INT8, TensorProto.UINT8)


def _max_pool(ctx, node, with_indices: bool):
    require_type(ctx, node, _MAX_POOL_TYPES, "MaxPool")
    attributes = node.get_attributes()
    w = window(attributes, list(attributes["kernel"]))
    pads = _pads(node, w, attributes.get("rounding_type", "floor"))
    onnx = dict(kernel_shape=w.kernel, strides=w.strides, **pads)
    if any(d != 1 for d in w.dilations):
        onnx["dilations"] = w.dilations
    indices = with_indices and _used(node, 1)
    outputs = [ctx.out(node)] + ([ctx.temp("indices")] if indices else [])
    ctx.emit("MaxPool", [ctx.inp(node, 0)], outputs, **onnx)
    if indices:
        converted = _indices_from(ctx, node, outputs[1], int(attributes.get("axis", 0)),
                                  str(attributes.get("index_element_type", "i64")))
        ctx.emit("Identity", [converted], [ctx.out(node, 1)])


_POOL_REFUSES = ("element types ONNX's pooling does not take (MaxPool: floats, i8, u8; AveragePool: floats)",
                 "auto_pad same_* with dynamic spatial dims: onnxruntime's SAME_* MaxPool pads differ",
                 "rounding ceil with dynamic spatial dims where a last window may start in the end padding "
                 "(end pad > kernel span - stride): ONNX's ceil_mode drops it, OpenVINO keeps it",
                 "pads at least as large as the kernel (ONNX requires pads < kernel)")


@rule("MaxPool", versions=(1,), onnx="MaxPool",
      notes="rounding floor/ceil as MaxPool-8 (explicit pads from OpenVINO's window count on static dims, "
            "ONNX ceil_mode on dynamic ones where equivalent)",
      refuses=_POOL_REFUSES)
def max_pool_1(ctx, node):
    _max_pool(ctx, node, with_indices=False)


@rule("MaxPool", versions=(8, 14), onnx="MaxPool (+ Mod, Cast for the indices)",
      notes="rounding floor/ceil/ceil_torch: explicit pads from OpenVINO's window count on static dims, ONNX "
            "ceil_mode (= ceil_torch) on dynamic ones; indices: "
            "ONNX's whole-tensor flat index modulo the product of dims axis.. (OpenVINO's `axis`), in "
            "index_element_type",
      refuses=_POOL_REFUSES)
def max_pool(ctx, node):
    _max_pool(ctx, node, with_indices=True)


@rule("AvgPool", versions=(1, 14, 16), onnx="AveragePool (f16 through Cast to f32)",
      notes="exclude-pad=true: pads excluded from the divisor (count_include_pad=0); exclude-pad=false: "
            "the divisor is the whole kernel, also for a ceil window running past the padding (OpenVINO's "
            "behaviour; ONNX's extended end pad counts the same), except with no padding at all, where "
            "OpenVINO divides by what the window covers (count_include_pad=0); f16 is averaged in f32",
      refuses=_POOL_REFUSES + ("AvgPool-16 with dilations on dynamic spatial dims: the dilated windows are a "
                               "convolution whose divisors are computed at import",
                               "exclude-pad=false, ceil rounding, strides > 1 and dynamic spatial dims: "
                               "onnxruntime divides a window past the end pad by what it covers"))
def avg_pool(ctx, node):
    require_type(ctx, node, FLOATS, "AveragePool")
    attributes = node.get_attributes()
    w = window(attributes, list(attributes["kernel"]))
    exclude = bool(attributes.get("exclude-pad", attributes.get("exclude_pad", False)))
    rounding = str(attributes.get("rounding_type", "floor")).lower()
    if w.auto_pad == "valid" or (w.auto_pad == "explicit" and not any(w.pads_begin + w.pads_end)):
        # No padding: OpenVINO divides a ceil window running past the input by what it covers, as if
        # exclude-pad were true (with padding it divides by the whole kernel)
        exclude = True
    x = ctx.inp(node, 0)
    code = ctx.elem(node, 0)
    if code == TensorProto.FLOAT16:
        x = ctx.emit("Cast", [x], to=TensorProto.FLOAT)
    if any(d != 1 for d in w.dilations):
        pooled = _dilated_average(ctx, node, x, w, rounding, exclude)
    else:
        pooled = ctx.emit("AveragePool", [x], kernel_shape=w.kernel, strides=w.strides,
                          count_include_pad=0 if exclude else 1, **_pads(node, w, rounding, not exclude))
    if code == TensorProto.FLOAT16:
        pooled = ctx.emit("Cast", [pooled], to=code)
    ctx.emit("Identity", [pooled], [ctx.out(node)])


def _dilated_average(ctx, node, x: str, w, rounding: str, exclude: bool) -> str:
    """AvgPool-16 with dilations (ONNX AveragePool has them from opset 19): the window sums as a convolution
    of every channel with a kernel of ones (channels folded into the batch), divided by each window's count:
    exclude-pad, the input pixels its taps cover (computed at import from the static geometry); else the
    whole kernel, as OpenVINO divides without dilations."""
    sizes, outputs = static_spatial(node), static_output_spatial(node)
    if sizes is None or outputs is None or rounding not in _ROUNDING:
        raise Unsupported("dilations need static spatial dims (the divisors are computed at import)")
    begin = pads_begin(w, sizes, outputs)
    end = floor_end_pads(sizes, outputs, begin, w)
    if ctx.elem(node, 0) == TensorProto.DOUBLE:
        raise Unsupported("dilations on f64 data (onnxruntime's Conv takes no f64)")
    dtype = np.float32
    if exclude:
        real = np.zeros([s + b + e for s, b, e in zip(sizes, begin, end)])
        real[tuple(slice(b, b + s) for b, s in zip(begin, sizes))] = 1
        counts = _window_sums(real, w, outputs)
    else:
        counts = np.full(outputs, float(np.prod(w.kernel)))
    shape = ctx.emit("Shape", [x])
    folded = ctx.emit("Reshape", [x, ctx.const(np.array([-1, 1] + sizes, np.int64), "folded")])
    sums = ctx.emit("Conv", [folded, ctx.const(np.ones([1, 1] + w.kernel, dtype), "ones")], kernel_shape=w.kernel,
                    strides=w.strides, dilations=w.dilations, pads=begin + end)
    leading = ctx.emit("Slice", [shape, ctx.const(np.array([0], np.int64), "start"),
                                 ctx.const(np.array([2], np.int64), "stop")])
    unfolded = ctx.emit("Reshape", [sums, ctx.emit("Concat", [leading, ctx.const(np.array(outputs, np.int64),
                                                                                 "spatial")], axis=0)])
    return ctx.emit("Div", [unfolded, ctx.const(counts.astype(dtype), "counts")])


def _window_sums(mask: np.ndarray, w, outputs) -> np.ndarray:
    """Per output window, the sum of `mask` (padded input geometry) over the window's dilated taps."""
    grids = np.meshgrid(*[np.arange(o) * s for o, s in zip(outputs, w.strides)], indexing="ij")
    total = np.zeros(outputs)
    for taps in np.ndindex(*w.kernel):
        at = tuple(g + t * d for g, t, d in zip(grids, taps, w.dilations))
        total += mask[at]
    return total


def _adaptive_sizes(ctx, node) -> tuple[list[int], list[int]] | None:
    """Static spatial sizes of input and output, or None (bins computed at run time)."""
    sizes, outputs = static_spatial(node), static_output_spatial(node)
    if sizes is None or outputs is None:
        return None
    return sizes, outputs


def _adaptive_dynamic(ctx, node, x: str, reduce: str) -> str:
    """Bins computed at run time, one spatial axis after the other: for bin i of o over H pixels, the indices
    start_i + j (j < the longest bin, clamped to the bin's last pixel) gathered, then reduced over j (mean:
    the clamped repeats masked out, divided by the bin's length)."""
    rank = ctx.rank(node, 0)
    if rank is None:
        raise Unsupported("data of dynamic rank")
    sizes = ctx.int64_vector(node, 1)
    const = lambda v, hint: ctx.const(np.array(v, np.int64), hint)  # noqa: E731
    zero, one = const(0, "zero"), const(1, "one")
    for k, axis in enumerate(range(2, rank)):
        size = ctx.emit("Gather", [ctx.emit("Shape", [x]), const(axis, "axis")], axis=0)  # scalars (static rank)
        out = ctx.emit("Gather", [sizes, const(k, "index")], axis=0)
        bins = ctx.emit("Range", [zero, out, one])
        starts = ctx.emit("Div", [ctx.emit("Mul", [bins, size]), out])  # floor(i * H / o)
        ends = ctx.emit("Div", [ctx.emit("Sub", [ctx.emit("Add", [ctx.emit("Mul", [ctx.emit("Add", [bins, one]), size]),
                                                                  out]), one]), out])  # ceil((i + 1) * H / o)
        lengths = ctx.emit("Sub", [ends, starts])
        offsets = ctx.emit("Range", [zero, ctx.emit("ReduceMax", [lengths], keepdims=0), one])
        column = const([1], "axes")
        taps = ctx.emit("Add", [ctx.emit("Unsqueeze", [starts, column]), offsets])  # [o, L]
        last = ctx.emit("Sub", [ctx.emit("Unsqueeze", [ends, column]), one])
        gathered = ctx.emit("Gather", [x, ctx.emit("Min", [taps, last])], axis=axis)  # [.., o, L, ..]
        trailing = rank - axis - 1
        if reduce == "ReduceMax":
            x = ctx.emit("ReduceMax", [gathered, const([axis + 1], "axes")], keepdims=0)
            continue
        valid = ctx.emit("LessOrEqual", [taps, last])
        if trailing:
            valid = ctx.emit("Unsqueeze", [valid, const(list(range(2, 2 + trailing)), "axes")])
        zeros = ctx.emit("CastLike", [ctx.const(np.array(0, np.float32), "zero_value"), x])
        summed = ctx.emit("ReduceSum", [ctx.emit("Where", [valid, gathered, zeros]), const([axis + 1], "axes")],
                          keepdims=0)
        counts = ctx.emit("CastLike", [lengths, x])
        if trailing:
            counts = ctx.emit("Unsqueeze", [counts, const(list(range(1, 1 + trailing)), "axes")])
        x = ctx.emit("Div", [summed, counts])
    return x


def _adaptive_separable(ctx, node, x: str, reduce: str, sizes, outputs) -> str:
    """Bin [floor(i*H/o), ceil((i+1)*H/o)) along each spatial axis in turn: Slice + Reduce + Concat.
    A box mean is the mean of means along one axis then the next; a box max likewise."""
    for axis, (size, out) in enumerate(zip(sizes, outputs), start=2):
        if size == out:
            continue
        parts = []
        for i in range(out):
            start, stop = (i * size) // out, -((-(i + 1) * size) // out)
            part = ctx.emit("Slice", [x, ctx.const(np.array([start], np.int64), "start"),
                                      ctx.const(np.array([stop], np.int64), "stop"),
                                      ctx.const(np.array([axis], np.int64), "axis")])
            parts.append(ctx.emit(reduce, [part, ctx.const(np.array([axis], np.int64), "axis")], keepdims=1))
        x = ctx.emit("Concat", parts, axis=axis) if len(parts) > 1 else parts[0]
    return x


@rule("AdaptiveAvgPool", versions=(8,), onnx="GlobalAveragePool, AveragePool, or Slice+ReduceMean+Concat",
      notes="bins [floor(i*H/o), ceil((i+1)*H/o)) as OpenVINO; equal bins as one AveragePool, others per "
            "axis; dynamic spatial dims (or a computed output_shape): bins computed at run time (Gather of "
            "each bin's pixels padded to the longest bin, masked ReduceSum / length)",
      refuses=("data of dynamic rank with dynamic spatial dims",))
def adaptive_avg_pool(ctx, node):
    require_type(ctx, node, FLOATS, "AveragePool")
    x = ctx.inp(node, 0)
    if _global(ctx, node):
        ctx.emit("GlobalAveragePool", [x], [ctx.out(node)])
        return
    static = _adaptive_sizes(ctx, node)
    if static is None:
        ctx.emit("Identity", [_adaptive_dynamic(ctx, node, x, "ReduceMean")], [ctx.out(node)])
        return
    sizes, outputs = static
    if all(s % o == 0 for s, o in zip(sizes, outputs)):
        kernel = [s // o for s, o in zip(sizes, outputs)]
        ctx.emit("AveragePool", [x], [ctx.out(node)], kernel_shape=kernel, strides=kernel)
    else:
        ctx.emit("Identity", [_adaptive_separable(ctx, node, x, "ReduceMean", sizes, outputs)], [ctx.out(node)])


def _global(ctx, node) -> bool:
    """Output spatial size all ones (a Constant output_shape): one bin, the whole input."""
    value = ctx.const_value(node, 1)
    return value is not None and bool(np.all(value == 1))


@rule("AdaptiveMaxPool", versions=(8,), onnx="MaxPool (+ Mod, Cast), or Slice+ReduceMax+Concat",
      notes="bins as AdaptiveAvgPool; indices (flat over the spatial dims) from MaxPool when the bins are "
            "equal; dynamic spatial dims: bins computed at run time (Gather of each bin's pixels, the shorter "
            "bins repeating their last pixel, ReduceMax)",
      refuses=("the indices output, used, with unequal bins or dynamic spatial dims",
               "data of dynamic rank with dynamic spatial dims"))
def adaptive_max_pool(ctx, node):
    require_type(ctx, node, _MAX_POOL_TYPES, "MaxPool")
    x = ctx.inp(node, 0)
    element = node.get_output_element_type(1).get_type_name()
    if _global(ctx, node) and not _used(node, 1):
        ctx.emit("GlobalMaxPool", [x], [ctx.out(node)])
        return
    static = _adaptive_sizes(ctx, node)
    if static is None:
        if _used(node, 1):
            raise Unsupported("the indices output with dynamic spatial dims")
        ctx.emit("Identity", [_adaptive_dynamic(ctx, node, x, "ReduceMax")], [ctx.out(node)])
        return
    sizes, outputs = static
    if all(s % o == 0 for s, o in zip(sizes, outputs)):
        kernel = [s // o for s, o in zip(sizes, outputs)]
        indices = ctx.temp("indices")
        ctx.emit("MaxPool", [x], [ctx.out(node), indices], kernel_shape=kernel, strides=kernel)
        if _used(node, 1):
            ctx.emit("Identity", [_indices_from(ctx, node, indices, 2, element)], [ctx.out(node, 1)])
        return
    if _used(node, 1):
        raise Unsupported("the indices output with unequal bins")
    ctx.emit("Identity", [_adaptive_separable(ctx, node, x, "ReduceMax", sizes, outputs)], [ctx.out(node)])
