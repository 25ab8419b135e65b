"""Import rules of the OpenVINO ops with an exact standard-ONNX form (OneHot, Eye, Bucketize, SearchSorted,
ReverseSequence, Col2Im, BatchToSpace/SpaceToBatch, IsNaN/IsInf/IsFinite, bit shifts, GridSample, ...)
against OpenVINO's CPU plugin (f32 precision) on generated cases over each op's attribute space.

Exact unless a case names a tolerance: Col2Im sums overlapping patches and GridSample interpolates
(ACCUMULATION: the runtimes order the sums differently)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from openvino import opset1, opset2, opset3, opset9, opset10, opset15, opset16  # noqa: E402

import onnx_bridge  # noqa: E402
from converters.openvino_ir import import_ir  # noqa: E402
from onnx_bridge.errors import ConversionError  # noqa: E402
from tests.helpers.ir_cases import ACCUMULATION, C, Case, P, assert_same, build, ov_run  # noqa: E402

pytestmark = pytest.mark.openvino


def rng(tag: str):
    """A generator seeded by the case (stable across runs and case order)."""
    return np.random.default_rng(sum(map(ord, tag)) * 7919 + len(tag))


# -- OneHot, Eye ------------------------------------------------------------------------------------------
def one_hot_cases():
    cases = []
    for version, mode in ((1, None), (16, "ignore_negative"), (16, "normalize")):
        for axis, shape, itype, otype in ((-1, (5,), np.int32, np.float32), (0, (2, 3), np.int64, np.int32),
                                          (1, (2, 3), np.int32, np.float32), (-2, (2, 3), np.int64, np.float32),
                                          (2, (2, 3, 2), np.int32, np.int8)):
            tag = f"onehot-{version}-{mode}-axis{axis}-{len(shape)}d-{np.dtype(otype).name}"
            r = rng(tag)
            idx = r.integers(-6, 6, shape).astype(itype)  # depth 4: negatives and out-of-range ones too

            def make(p, axis=axis, otype=otype, version=version, mode=mode):
                args = (p["i"], C(np.int64(4)), C(otype(3)), C(otype(-1)), axis)
                return [opset16.one_hot(*args, mode) if version == 16 else opset1.one_hot(*args)]
            cases.append(Case(tag, make, {"i": idx}, static=axis < -1))
    cases.append(Case("onehot-depth-input", lambda p: [opset1.one_hot(p["i"], p["d"], C(np.float32(1)),
                                                                      C(np.float32(0)), 1)],
                      {"i": np.array([[0, 2], [1, 5]], np.int64), "d": np.array(3, np.int32)}))
    return cases


def eye_cases():
    cases = []
    for rows, cols, diag in ((3, 3, 0), (2, 4, 1), (4, 2, -1), (3, 3, 5), (3, 2, -4)):
        for out in ("f32", "i32", "u8"):
            cases.append(Case(f"eye-{rows}x{cols}-d{diag}-{out}", lambda p, out=out: [
                opset9.eye(p["r"], p["c"], p["d"], out)],
                {"r": np.array(rows, np.int64), "c": np.array([cols], np.int32), "d": np.array(diag, np.int64)}))
    cases.append(Case("eye-batch", lambda p: [opset9.eye(p["r"], p["c"], p["d"], "f32", p["b"])],
                      {"r": np.array(2, np.int32), "c": np.array(3, np.int32), "d": np.array(1, np.int32),
                       "b": np.array([2, 1], np.int64)}, static=True))
    cases.append(Case("eye-square-constant", lambda p: [opset9.eye(C(np.int64(3)), C(np.int64(3)), C(np.int64(0)),
                                                                   "i64")], {}))
    return cases


# -- searches ---------------------------------------------------------------------------------------------
def search_cases():
    cases = []
    for right in (True, False):
        for dtype, out in ((np.float32, "i64"), (np.int32, "i32")):
            tag = f"bucketize-right{right}-{np.dtype(dtype).name}-{out}"
            r = rng(tag)
            buckets = np.sort(r.integers(-5, 6, 6)).astype(dtype)  # repeated bounds too
            data = r.integers(-7, 8, (3, 4)).astype(dtype)
            cases.append(Case(tag, lambda p, out=out, right=right: [opset3.bucketize(p["x"], p["b"], out, right)],
                              {"x": data, "b": buckets}))
    cases.append(Case("bucketize-mixed-types", lambda p: [opset3.bucketize(p["x"], p["b"], "i64", True)],
                      {"x": np.array([-1.5, 0.5, 2.0, 9.0], np.float32), "b": np.array([0, 2, 4], np.int32)}))
    cases.append(Case("bucketize-nan-inf", lambda p: [opset3.bucketize(p["x"], p["b"], "i32", False)],
                      {"x": np.array([np.nan, np.inf, -np.inf, 1.0], np.float32),
                       "b": np.array([0.0, 1.0, 2.0], np.float32)}))
    for right in (False, True):
        for seq_shape, val_shape in (((7,), (3, 4)), ((2, 6), (2, 3)), ((2, 3, 5), (2, 3, 4)), ((5,), ())):
            tag = f"searchsorted-right{right}-{len(seq_shape)}d-{len(val_shape)}d"
            r = rng(tag)
            seq = np.sort(r.integers(-4, 5, seq_shape), axis=-1).astype(np.float32)
            values = r.integers(-5, 6, val_shape).astype(np.float32)
            cases.append(Case(tag, lambda p, right=right: [opset15.search_sorted(p["s"], p["v"], right)],
                              {"s": seq, "v": values}))
    cases.append(Case("searchsorted-nan-inf", lambda p: [opset15.search_sorted(p["s"], p["v"], False),
                                                         opset15.search_sorted(p["s"], p["v"], True)],
                      {"s": np.array([-1.0, 0.0, 0.0, 2.0], np.float32),
                       "v": np.array([np.nan, np.inf, -np.inf, 0.0], np.float32)}))
    cases.append(Case("searchsorted-int64", lambda p: [opset15.search_sorted(p["s"], p["v"], True)],
                      {"s": np.array([1, 3, 3, 8], np.int64), "v": np.array([[0, 3, 9], [8, 2, 1]], np.int64)}))
    return cases


# -- IsNaN / IsInf / IsFinite, shifts -----------------------------------------------------------------------
SPECIAL = np.array([[0.0, -1.5, np.nan, np.inf], [-np.inf, 3e38, -0.0, -np.nan]], np.float32)


def numeric_cases():
    cases = [Case("isnan", lambda p: [opset10.is_nan(p["x"])], {"x": SPECIAL}),
             Case("isfinite", lambda p: [opset10.is_finite(p["x"])], {"x": SPECIAL}),
             Case("isnan-f16", lambda p: [opset10.is_nan(p["x"])], {"x": np.where(np.abs(SPECIAL) < 1e4, SPECIAL, np.inf).astype(np.float16)})]
    for negative, positive in itertools.product((True, False), repeat=2):
        cases.append(Case(f"isinf-neg{negative}-pos{positive}", lambda p, n=negative, q=positive: [
            opset10.is_inf(p["x"], {"detect_negative": n, "detect_positive": q})], {"x": SPECIAL}))
    for dtype in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        bits = np.dtype(dtype).itemsize * 8
        # OpenVINO computes 64-bit shifts in 32 bits and u32 values >= 2^31 wrongly: their cases stay in range
        low_bits = min(bits, 31)
        info = np.iinfo(dtype)
        tag = f"shift-{np.dtype(dtype).name}"
        r = rng(tag)
        counts = r.integers(0, low_bits if bits >= 32 else bits, 24)
        values = r.integers(max(info.min, -2 ** 30), min(info.max, 2 ** 30) + 1, 24)
        if bits >= 32:  # results must fit 31 bits for OpenVINO's 32-bit computation of the left shift
            values = values >> counts if np.dtype(dtype).kind == "u" else np.sign(values) * (np.abs(values) >> counts)
        feeds = {"a": values.astype(dtype).reshape(4, 6), "b": counts.astype(dtype).reshape(4, 6)}
        cases.append(Case(f"{tag}-left", lambda p: [opset15.bitwise_left_shift(p["a"], p["b"])], feeds))
        cases.append(Case(f"{tag}-right", lambda p: [opset15.bitwise_right_shift(p["a"], p["b"])], feeds))
        cases.append(Case(f"{tag}-right-broadcast", lambda p: [opset15.bitwise_right_shift(p["a"], p["b"])],
                          {"a": feeds["a"], "b": np.array([1, 0, 3, 2, low_bits - 1, 4], dtype)}))
    return cases


# -- blocks ---------------------------------------------------------------------------------------------------
def block_cases():
    cases = []
    for shape, block, begin, end in (((2, 3, 4, 6), [1, 1, 2, 3], [0, 0, 1, 0], [0, 0, 1, 0]),
                                     ((1, 2, 3), [1, 2, 3], [0, 1, 0], [0, 1, 3]),
                                     ((2, 4), [1, 2], [0, 0], [0, 2]),
                                     ((1, 1, 2, 2, 3), [1, 1, 2, 2, 1], [0, 0, 1, 0, 0], [0, 0, 1, 2, 0])):
        tag = f"space-to-batch-{len(shape)}d-{block}"
        x = rng(tag).standard_normal(shape).astype(np.float32)
        cases.append(Case(tag, lambda p, a=(block, begin, end): [
            opset2.space_to_batch(p["x"], *(C(np.array(v, np.int64)) for v in a))], {"x": x}))
        # BatchToSpace undoes it: its input has the batch grown by prod(block)
        padded = [s + b + e for s, b, e in zip(shape, begin, end)]
        out_shape = [padded[0] * int(np.prod(block))] + [d // k for d, k in zip(padded[1:], block[1:])]
        tag = f"batch-to-space-{len(shape)}d-{block}"
        y = rng(tag).standard_normal(out_shape).astype(np.float32)
        cases.append(Case(tag, lambda p, a=(block, begin, end): [
            opset2.batch_to_space(p["x"], *(C(np.array(v, np.int32)) for v in a))], {"x": y}))
    cases.append(Case("space-to-batch-pads-input", lambda p: [opset2.space_to_batch(
        p["x"], C(np.array([1, 2, 2], np.int64)), p["b"], p["e"])],
        {"x": np.arange(18, dtype=np.int32).reshape(2, 3, 3), "b": np.array([0, 1, 0], np.int64),
         "e": np.array([0, 0, 1], np.int64)}))
    cases.append(Case("batch-to-space-crops-input", lambda p: [opset2.batch_to_space(
        p["x"], C(np.array([1, 2, 2], np.int64)), p["b"], p["e"])],
        {"x": np.arange(32, dtype=np.int64).reshape(8, 2, 2), "b": np.array([0, 1, 0], np.int64),
         "e": np.array([0, 0, 2], np.int64)}))
    # Col2Im: (channels, output, kernel, strides, dilations, pads_begin, pads_end)
    for batched, (channels, out, kernel, strides, dilations, begin, end) in itertools.product((True, False), (
            (2, [4, 5], [2, 2], [1, 1], [1, 1], [0, 0], [0, 0]),
            (1, [6, 5], [3, 2], [2, 1], [1, 2], [1, 0], [1, 1]),
            (3, [5, 5], [2, 3], [2, 2], [2, 1], [0, 1], [1, 0]))):
        blocks = 1
        for o, k, s, d, b, e in zip(out, kernel, strides, dilations, begin, end):
            blocks *= (o + b + e - d * (k - 1) - 1) // s + 1
        shape = ([2] if batched else []) + [channels * int(np.prod(kernel)), blocks]
        tag = f"col2im-{'batched' if batched else 'unbatched'}-k{kernel}-s{strides}-d{dilations}-p{begin}{end}"
        data = rng(tag).standard_normal(shape).astype(np.float32)
        cases.append(Case(tag, lambda p, a=(out, kernel, strides, dilations, begin, end): [
            opset15.col2im(p["x"], C(np.array(a[0], np.int64)), C(np.array(a[1], np.int64)), *a[2:])],
            {"x": data}, ACCUMULATION))
    for batch_axis, seq_axis, shape in ((0, 1, (3, 5, 2)), (1, 0, (4, 3)), (2, 0, (5, 2, 3)), (-1, 1, (2, 4, 3)),
                                        (0, 2, (3, 2, 4))):
        tag = f"reverse-sequence-b{batch_axis}-s{seq_axis}"
        r = rng(tag)
        lengths = r.integers(0, shape[seq_axis] + 1, shape[batch_axis]).astype(np.int32)
        cases.append(Case(tag, lambda p, b=batch_axis, s=seq_axis: [opset1.reverse_sequence(p["x"], p["l"], b, s)],
                          {"x": r.integers(-50, 50, shape).astype(np.float32), "l": lengths}, static=True))
    cases.append(Case("reverse-sequence-float-lengths", lambda p: [opset1.reverse_sequence(p["x"], p["l"], 0, 1)],
                      {"x": np.arange(12, dtype=np.int64).reshape(3, 4), "l": np.array([1, 4, 2], np.float32)}))
    return cases


# -- GridSample -------------------------------------------------------------------------------------------------
def grid_sample_cases():
    cases = []
    for mode, padding, align in itertools.product(("bilinear", "bicubic", "nearest"),
                                                  ("zeros", "border", "reflection"), (False, True)):
        tag = f"gridsample-{mode}-{padding}-align{align}"
        r = rng(tag)
        data = r.standard_normal((2, 3, 4, 5)).astype(np.float32)
        grid = r.uniform(-1.4, 1.4, (2, 3, 6, 2)).astype(np.float32)
        if mode == "nearest":  # away from the rounding ties (x.5 pixel positions)
            grid = np.round(grid * 8) / 8 + 0.01
        attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
        cases.append(Case(tag, lambda p, a=attrs: [opset9.grid_sample(p["x"], p["g"], a)],
                          {"x": data, "g": grid}, ACCUMULATION))
    return cases


CASES = one_hot_cases() + eye_cases() + search_cases() + numeric_cases() + block_cases() + grid_sample_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_import_matches_openvino(case):
    imported = import_ir(build(case))
    got = onnx_bridge.InferenceSession(imported).run(None, case.feeds)
    want = (ov_run(build(case, constants=True), {}) if case.against == "reference"
            else ov_run(build(case), case.feeds))
    assert_same(got, want, case.tolerance, "onnxruntime vs OpenVINO")
