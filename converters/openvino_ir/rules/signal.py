"""Signal processing: DFT-7, IDFT-7, RDFT-9, IRDFT-9, STFT-15, ISTFT-16 -> ONNX DFT-17 / STFT-17 / Col2Im-18
(the import targets opset 18, where DFT takes one axis as an attribute: a multi-axis transform is a chain
of DFTs).

Complex tensors are OpenVINO's and ONNX's alike: a trailing dimension of 2 (real, imaginary). Axes of a
complex input count without the trailing 2 (OpenVINO: a negative axis is r - 1 + axis). signal_size
(Constant or computed) crops or zero-pads each transformed axis at its end (-1: as is) before the
transform, by Slice / Pad. Inverse transforms divide by N per axis in both (IDFT over several axes: by
their product).

RDFT: the last of `axes` is transformed first (the real input with a zero imaginary part: ONNX's onesided
DFT of a real [..., 1] input is read with an extra dimension by OpenVINO's ONNX reader) and cut to its
N//2 + 1 bins, the others after (the DFT is separable: rfftn's order). IRDFT: full inverses over all but
the last axis, then on the last one the N//2 + 1 bins are extended to N by Hermitian symmetry
(X[N-k] = conj X[k]: a reversed Slice and a sign flip), inverse-transformed, and the real part kept: the
imaginary parts of bin 0 (and N/2 for even N) are ignored, as numpy.fft.irfftn and OpenVINO do. ONNX's
inverse onesided DFT is not used (the spec leaves it undefined).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule


def _i64(ctx, values, hint: str) -> str:
    return ctx.const(np.array(values, np.int64), hint)


def _axes(ctx, node, signal_rank: int) -> list[int]:
    value = ctx.const_value(node, 1)
    if value is None:
        raise Unsupported("axes must be a Constant (ONNX DFT takes its axis as an attribute)")
    axes = [int(a) + signal_rank if a < 0 else int(a) for a in np.asarray(value).reshape(-1)]
    if any(not 0 <= a < signal_rank for a in axes) or len(set(axes)) != len(axes):
        raise Unsupported(f"axes {np.asarray(value).tolist()} out of range or repeated for a signal of rank "
                          f"{signal_rank}")
    return axes


def _signal_sizes(ctx, node, axes) -> list:
    """signal_size per axis: an int for a Constant (-1: as is; all -1 without the input), else the ONNX name
    of a computed [1] int64 tensor."""
    if node.get_input_size() < 3:
        return [-1] * len(axes)
    value = ctx.const_value(node, 2)
    if value is None:
        shape = node.get_input_partial_shape(2)
        if shape.rank.is_dynamic or shape.rank.get_length() > 1 or (
                shape.rank.get_length() == 1 and shape[0].is_static and shape[0].get_length() != len(axes)):
            raise Unsupported(f"a computed signal_size whose shape is not [{len(axes)}] (one per axis)")
        sizes = ctx.int64_vector(node, 2)
        return [ctx.emit("Slice", [sizes, _i64(ctx, [k], "start"), _i64(ctx, [k + 1], "end")])
                for k in range(len(axes))]
    sizes = [int(s) for s in np.asarray(value).reshape(-1)]
    if len(sizes) != len(axes) or any(s < -1 or s == 0 for s in sizes):
        raise Unsupported(f"signal_size {sizes} does not match axes {axes}")
    return sizes


def _dim(node, axis: int) -> int | None:
    dim = node.get_input_partial_shape(0)[axis]
    return dim.get_length() if dim.is_static else None


def _length(ctx, value: str, axis: int) -> str:
    """The length of `axis` of `value`, computed ([1] int64)."""
    return ctx.emit("Shape", [value], start=axis, end=axis + 1)


def _resize(ctx, node, value: str, axis: int, size, current: int | None) -> str:
    """`value` cropped or zero-padded at the end of `axis` to `size` (an int, -1 or equal: as is; or a
    computed [1] int64 tensor, where -1 means as is)."""
    if isinstance(size, int):
        if size == -1 or size == current:
            return value
        if current is not None and size < current:
            return ctx.emit("Slice", [value, _i64(ctx, [0], "start"), _i64(ctx, [size], "end"),
                                      _i64(ctx, [axis], "axis")])
        if current is not None:
            return _pad_end(ctx, node, value, axis, _i64(ctx, [size - current], "grow"))
        size = _i64(ctx, [size], "size")
    length = _length(ctx, value, axis)
    size = ctx.emit("Where", [ctx.emit("Equal", [size, _i64(ctx, [-1], "as_is")]), length, size])
    value = ctx.emit("Slice", [value, _i64(ctx, [0], "start"), size, _i64(ctx, [axis], "axis")])
    grow = ctx.emit("Max", [ctx.emit("Sub", [size, length]), _i64(ctx, [0], "zero")])
    return _pad_end(ctx, node, value, axis, grow)


def _pad_end(ctx, node, value: str, axis: int, grow: str) -> str:
    """`value` with `grow` ([1] int64) zeros appended along `axis`."""
    rank = ctx.rank(node, 0)
    pads = ctx.emit("Concat", [_i64(ctx, [0] * (rank + axis), "before"), grow,
                               _i64(ctx, [0] * (rank - axis - 1), "after")], axis=0)
    return ctx.emit("Pad", [value, pads])


def _hermitian_inverse(ctx, value: str, axis: int, start: str, out: str | None = None) -> str:
    """The real inverse DFT of length N along `axis` of a complex tensor holding its N//2 + 1 bins; `start`
    ([1] int64) is N - N//2 - 1: bins start .. 1, reversed and conjugated, are bins N//2+1 .. N-1."""
    mirrored = ctx.emit("Slice", [value, start, _i64(ctx, [0], "end"), _i64(ctx, [axis], "axis"),
                                  _i64(ctx, [-1], "step")])
    conjugated = ctx.emit("Mul", [mirrored, ctx.const(np.array([1, -1], np.float32), "conj")])
    value = ctx.emit("DFT", [ctx.emit("Concat", [value, conjugated], axis=axis)], axis=axis, inverse=1)
    real = ctx.emit("Slice", [value, _i64(ctx, [0], "start"), _i64(ctx, [1], "end"), _i64(ctx, [-1], "axis")])
    return ctx.emit("Squeeze", [real, _i64(ctx, [-1], "axes")], [out] if out else None)


def _require(ctx, node):
    if ctx.elem(node, 0) != TensorProto.FLOAT:
        raise Unsupported("data other than f32: onnxruntime's DFT/STFT kernels take float and double only "
                          "(and OpenVINO's CPU plugin computes f32)")
    if ctx.rank(node, 0) is None:
        raise Unsupported("data of dynamic rank (axes are counted from the end)")


def _complex(ctx, node, inverse: bool):
    """DFT-7 / IDFT-7: complex [..., 2] -> complex, a chain of one-axis DFTs."""
    _require(ctx, node)
    axes = _axes(ctx, node, ctx.rank(node, 0) - 1)
    sizes = _signal_sizes(ctx, node, axes)
    value = ctx.inp(node, 0)
    for axis, size in zip(axes, sizes):
        value = _resize(ctx, node, value, axis, size, _dim(node, axis))
    for k, axis in enumerate(axes):
        last = k == len(axes) - 1
        value = ctx.emit("DFT", [value], [ctx.out(node)] if last else None, axis=axis, inverse=int(inverse))


_NOTES = ("signal_size (Constant or computed) crops or zero-pads at the end (Slice/Pad); one ONNX DFT per axis "
          "(DFT-17's axis is an attribute); onnxruntime's FFT sums in another order than OpenVINO's (last "
          "bits, relative to the signal's magnitude)")
_REFUSES = ("axes not a Constant: ONNX DFT-17 takes the axis as an attribute",
            "data other than f32 (onnxruntime's DFT takes float/double, OpenVINO's CPU computes f32) or of "
            "dynamic rank")


@rule("DFT", "IDFT", versions=(7,), onnx="DFT (inverse=1 for IDFT) per axis (+ Slice/Pad for signal_size)",
      notes=_NOTES + "; both divide the inverse by N per axis", refuses=_REFUSES)
def dft(ctx, node):
    _complex(ctx, node, inverse=node.get_type_name() == "IDFT")


@rule("RDFT", versions=(9,), onnx="Unsqueeze, Pad (zero imaginary part), DFT on the last axis, Slice of its "
      "N//2 + 1 bins, DFT on the others (+ Slice/Pad for signal_size)",
      notes=_NOTES + "; the last of axes keeps N//2 + 1 bins. Not ONNX's onesided DFT of a real [..., 1] "
            "input, which OpenVINO's ONNX reader gives an extra dimension (no way back to IR)",
      refuses=_REFUSES)
def rdft(ctx, node):
    _require(ctx, node)
    rank = ctx.rank(node, 0)
    axes = _axes(ctx, node, rank)
    sizes = _signal_sizes(ctx, node, axes)
    value = ctx.inp(node, 0)
    for axis, size in zip(axes, sizes):
        value = _resize(ctx, node, value, axis, size, _dim(node, axis))
    value = ctx.emit("Pad", [ctx.emit("Unsqueeze", [value, _i64(ctx, [-1], "axes")]),
                             _i64(ctx, [0] * (2 * rank + 1) + [1], "imaginary")])
    axis, size = axes[-1], sizes[-1]
    n = size if isinstance(size, int) and size != -1 else _dim(node, axis) if size == -1 else None
    value = ctx.emit("DFT", [value], axis=axis)
    if n is not None:
        end = _i64(ctx, [n // 2 + 1], "bins")
    else:
        end = ctx.emit("Add", [ctx.emit("Div", [_length(ctx, value, axis), _i64(ctx, [2], "two")]),
                               _i64(ctx, [1], "one")])
    others = axes[:-1]
    value = ctx.emit("Slice", [value, _i64(ctx, [0], "start"), end, _i64(ctx, [axis], "axis")],
                     None if others else [ctx.out(node)])
    for k, axis in enumerate(others):
        value = ctx.emit("DFT", [value], [ctx.out(node)] if k == len(others) - 1 else None, axis=axis)


@rule("IRDFT", versions=(9,), onnx="DFT inverse=1 per axis; on the last axis a Hermitian extension (Slice "
      "reversed, Mul by (1, -1), Concat) then DFT inverse=1 and the real part (Slice, Squeeze)",
      notes=_NOTES + "; the last of axes: N = signal_size or 2 (M - 1) for M input bins, cropped or "
            "zero-padded to N//2 + 1 bins; imaginary parts of bin 0 and N/2 ignored",
      refuses=_REFUSES)
def irdft(ctx, node):
    _require(ctx, node)
    axes = _axes(ctx, node, ctx.rank(node, 0) - 1)
    sizes = _signal_sizes(ctx, node, axes)
    value = ctx.inp(node, 0)
    for axis, size in zip(axes[:-1], sizes[:-1]):
        value = _resize(ctx, node, value, axis, size, _dim(node, axis))
    for axis in axes[:-1]:
        value = ctx.emit("DFT", [value], axis=axis, inverse=1)
    axis, bins, n = axes[-1], _dim(node, axes[-1]), sizes[-1]
    if isinstance(n, int) and n == -1 and bins is not None:
        n = 2 * (bins - 1)
    if isinstance(n, int) and n != -1:
        if n < 1:
            raise Unsupported(f"{bins} bin(s) on axis {axis} give an empty signal")
        value = _resize(ctx, node, value, axis, n // 2 + 1, bins)
        start = _i64(ctx, [n - n // 2 - 1], "start")
    else:  # N computed: signal_size, or 2 (M - 1) for M bins
        m = _length(ctx, value, axis)
        default = ctx.emit("Mul", [ctx.emit("Sub", [m, _i64(ctx, [1], "one")]), _i64(ctx, [2], "two")])
        n = default if n == -1 else ctx.emit("Where", [ctx.emit("Equal", [n, _i64(ctx, [-1], "as_is")]), default, n])
        half = ctx.emit("Div", [n, _i64(ctx, [2], "two")])
        value = _resize(ctx, node, value, axis, ctx.emit("Add", [half, _i64(ctx, [1], "one")]), bins)
        start = ctx.emit("Sub", [ctx.emit("Sub", [n, half]), _i64(ctx, [1], "one")])
    _hermitian_inverse(ctx, value, axis, start, ctx.out(node))


@rule("STFT", versions=(15,), onnx="STFT onesided=1 (+ Unsqueeze, Pad of the window, Transpose)",
      notes="signal [B, L] (or [L]) -> [B, L, 1]; a window shorter than frame_size is zero-padded on both "
            "sides (left (frame_size - window) // 2), as OpenVINO does; frames = (L - frame_size) // step + 1 in "
            "both; transpose_frames -> Transpose to [B, bins, frames, 2]",
      refuses=("frame_size not a Constant, or a window of dynamic length: the window is padded to frame_size",
               "data other than f32 or of dynamic rank"))
def stft(ctx, node):
    _require(ctx, node)
    rank = ctx.rank(node, 0)
    signal = ctx.emit("Unsqueeze", [ctx.inp(node, 0), _i64(ctx, [-1] if rank == 2 else [0, -1], "axes")])
    frame_size = ctx.const_value(node, 2)
    window_dim = node.get_input_partial_shape(1)[0]
    window = ctx.inp(node, 1)
    if frame_size is None or window_dim.is_dynamic:
        raise Unsupported("frame_size must be a Constant and the window length static (the window is "
                          "padded to frame_size)")
    frame_size = int(np.asarray(frame_size).reshape(-1)[0])
    length = window_dim.get_length()
    if length < frame_size:
        left = (frame_size - length) // 2
        window = ctx.emit("Pad", [window, _i64(ctx, [left, frame_size - length - left], "window_pads")])
    transpose = bool(node.get_attributes().get("transpose_frames", False))
    out = ctx.out(node) if rank == 2 and not transpose else None
    step = ctx.const_value(node, 3)  # a Constant scalar: OpenVINO's ONNX reader needs one (the way back)
    step = (_i64(ctx, int(np.asarray(step).reshape(-1)[0]), "step") if step is not None
            else ctx.emit("Reshape", [ctx.int64(node, 3), _i64(ctx, [], "scalar")]))
    value = ctx.emit("STFT", [signal, step, window, _i64(ctx, frame_size, "frame_size")],
                     [out] if out else None, onesided=1)
    if rank == 1:
        value = ctx.emit("Squeeze", [value, _i64(ctx, [0], "batch")],
                         [ctx.out(node)] if not transpose else None)
    if transpose:
        perm = [0, 2, 1, 3] if rank == 2 else [1, 0, 2]
        ctx.emit("Transpose", [value], [ctx.out(node)], perm=perm)


def _constant_int(ctx, node, index: int, what: str) -> int:
    value = ctx.const_value(node, index)
    if value is None:
        raise Unsupported(f"{what} must be a Constant (ONNX Col2Im takes the step as an attribute, and the "
                          "frame's inverse DFT length is static)")
    return int(np.asarray(value).reshape(-1)[0])


@rule("ISTFT", versions=(16,), onnx="Transpose, Hermitian extension + DFT inverse=1 per frame, Mul by the "
      "window, Col2Im (overlap-add of the frames and of the squared window), Div, Where, Slice/Pad",
      notes="OpenVINO's reference: each frame's frame_size//2 + 1 bins inverse-transformed to frame_size "
            "samples, times the window (zero-padded centred to frame_size), overlap-added at frame_step; "
            "divided by the overlap-added squared window where it is not 0 (0 there); normalized multiplies "
            "by sqrt(frame_size) first; center drops frame_size//2 samples at the start; the length is "
            "signal_length when > 0, else (frames - 1) * step + frame_size, less frame_size rounded down to "
            "even when center, cropped or zero-padded at the end",
      refuses=("frame_size or frame_step not a Constant: Col2Im takes the step as an attribute and the "
               "frame's inverse DFT length is static",
               "a window of dynamic length",
               "data other than f32 or of dynamic rank"))
def istft(ctx, node):
    _require(ctx, node)
    rank = ctx.rank(node, 0)
    frame_size = _constant_int(ctx, node, 2, "frame_size")
    step = _constant_int(ctx, node, 3, "frame_step")
    attributes = node.get_attributes()
    window_dim = node.get_input_partial_shape(1)[0]
    if window_dim.is_dynamic:
        raise Unsupported("a window of dynamic length (it is padded to frame_size)")
    data = ctx.inp(node, 0)
    if rank == 3:
        data = ctx.emit("Unsqueeze", [data, _i64(ctx, [0], "batch")])
    frames = _hermitian_inverse(ctx, ctx.emit("Transpose", [data], perm=[0, 2, 1, 3]), 2,
                                _i64(ctx, [frame_size - frame_size // 2 - 1], "start"))
    window, length = ctx.inp(node, 1), window_dim.get_length()
    if length < frame_size:
        left = (frame_size - length) // 2
        window = ctx.emit("Pad", [window, _i64(ctx, [left, frame_size - length - left], "window_pads")])
    elif length > frame_size:
        raise Unsupported(f"a window of {length} samples longer than frame_size {frame_size}")
    frames = ctx.emit("Transpose", [ctx.emit("Mul", [frames, window])], perm=[0, 2, 1])  # [B, frame, frames]
    # overlap-add: Col2Im of a [B, frame_size, frames] column matrix into a [1, L] image
    count = ctx.emit("Shape", [frames], start=2, end=3)
    gaps = ctx.emit("Mul", [ctx.emit("Sub", [count, _i64(ctx, [1], "one")]), _i64(ctx, [step], "step")])
    full = ctx.emit("Add", [gaps, _i64(ctx, [frame_size], "frame_size")])  # (frames - 1) * step + frame_size
    image = ctx.emit("Concat", [_i64(ctx, [1], "one"), full], axis=0)
    blocks = _i64(ctx, [1, frame_size], "block")

    def overlap_add(columns):
        added = ctx.emit("Col2Im", [columns, image, blocks], strides=[1, step])
        return ctx.emit("Reshape", [added, _i64(ctx, [0, -1], "rows")])  # [B or 1, L]
    signal = overlap_add(frames)
    squared = ctx.emit("Unsqueeze", [ctx.emit("Mul", [window, window]), _i64(ctx, [0, 2], "axes")])
    envelope = overlap_add(ctx.emit("Expand", [squared, ctx.emit("Concat", [_i64(ctx, [1, frame_size], "dims"), count],
                                                                 axis=0)]))
    if attributes.get("normalized"):
        signal = ctx.emit("Mul", [signal, ctx.const(np.array(np.sqrt(frame_size), np.float32), "sqrt_frame")])
    zero = ctx.const(np.array(0, np.float32), "zero")
    signal = ctx.emit("Where", [ctx.emit("Equal", [envelope, zero]), zero, ctx.emit("Div", [signal, envelope])])
    margin = frame_size // 2 if attributes.get("center") else 0
    default = ctx.emit("Sub", [full, _i64(ctx, [frame_size & ~1 if attributes.get("center") else 0], "trim")])
    if node.get_input_size() > 4:
        given = ctx.int64_vector(node, 4)
        final = ctx.emit("Where", [ctx.emit("Greater", [given, _i64(ctx, [0], "zero")]), given, default])
    else:
        final = default
    end = ctx.emit("Add", [final, _i64(ctx, [margin], "margin")])
    kept = ctx.emit("Slice", [signal, _i64(ctx, [margin], "margin"), end, _i64(ctx, [1], "axis")])
    short = ctx.emit("Sub", [final, ctx.emit("Shape", [kept], start=1, end=2)])
    grow = ctx.emit("Max", [short, _i64(ctx, [0], "none")])
    pads = ctx.emit("Concat", [_i64(ctx, [0, 0, 0], "before"), grow], axis=0)
    if rank == 3:
        ctx.emit("Squeeze", [ctx.emit("Pad", [kept, pads]), _i64(ctx, [0], "batch")], [ctx.out(node)])
    else:
        ctx.emit("Pad", [kept, pads], [ctx.out(node)])
