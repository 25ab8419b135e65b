"""ExperimentalDetectronTopKROIs-6 (OpenVINO): the max_rois boxes of highest probability.

input_rois [N, 4], rois_probs [N] of a float type T. Output [max_rois, 4]: the boxes in order of decreasing
probability, equal probabilities in box order (a stable sort; OpenVINO's std::sort agrees up to 16 boxes);
rows past N are 0. NaN probabilities are refused (their order is undefined).
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import REQUIRED, Absent, Attribute, AttributeMap, Case, DialectUnit, Divergence, OpenVINO, OpSpec, Port

from ._common import FLOATS, native, output_type

OP = "ExperimentalDetectronTopKROIs"


def topk_rois(input_rois, rois_probs, max_rois):
    rois = check.as_array(OP, "input_rois", input_rois)
    probs = check.as_array(OP, "rois_probs", rois_probs)
    check.data_type(OP, "input_rois", rois, FLOATS)
    if probs.dtype != rois.dtype:
        raise OpError(OP, "input 'rois_probs'", "element type must equal input_rois'", value=str(probs.dtype),
                      allowed=str(rois.dtype))
    if rois.ndim != 2 or rois.shape[1] != 4:
        raise OpError(OP, "input 'input_rois'", "must have shape [N, 4]", value=rois.shape)
    if probs.shape != rois.shape[:1]:
        raise OpError(OP, "input 'rois_probs'", "must be 1-D of size N", value=probs.shape, allowed=rois.shape[:1])
    if int(max_rois) < 0:
        raise OpError(OP, "attribute 'max_rois'", "must not be negative", value=int(max_rois), allowed=">= 0")
    if np.isnan(probs).any():
        raise OpError(OP, "input 'rois_probs'", "must not hold NaN", value="nan")
    out = np.zeros((int(max_rois), 4), rois.dtype)
    order = np.argsort(-probs.astype(np.float64), kind="stable")[:int(max_rois)]
    out[:order.size] = rois[order]
    return out


def _kernel_v6(input_rois, rois_probs, *, max_rois):
    return (topk_rois(input_rois, rois_probs, max_rois),)


def cases(rng: np.random.Generator) -> list:
    """Random boxes and probabilities (f32-representable: the CPU plugin computes f64 in f32), some with ties
    (few distinct values), max_rois up to N (past N the CPU plugin leaves memory uninitialised)."""
    out = []
    for index in range(18):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        n = int(r.integers(1, 12))
        dtype = FLOATS[index % 3]
        probs = r.integers(0, 3, n) / 4 if index % 3 == 0 else r.integers(0, 1 << 10, n) / 1024
        rois = r.integers(-4000, 4000, (n, 4)) / 8
        max_rois = int(r.integers(1, n + 1))
        out.append(Case(f"topk_rois_{dtype.name}_{index}", (rois.astype(dtype), probs.astype(dtype)),
                        {"max_rois": max_rois}))
    return out


def bad_cases() -> list:
    f32 = lambda v: np.asarray(v, np.float32)  # noqa: E731
    rois = f32(np.zeros((3, 4)))
    return [
        (Case("rois_shape", (f32(np.zeros((3, 5))), f32([1, 2, 3])), {"max_rois": 2}), "[N, 4]"),
        (Case("probs_size", (rois, f32([1, 2])), {"max_rois": 2}), "size N"),
        (Case("probs_type", (rois, np.asarray([1, 2, 3], np.float64)), {"max_rois": 2}), "rois_probs"),
        (Case("nan_prob", (rois, f32([1, np.nan, 3])), {"max_rois": 2}), "NaN"),
        (Case("negative_max_rois", (rois, f32([1, 2, 3])), {"max_rois": -1}), "max_rois"),
    ]


# Divergences of OpenVINO's CPU plugin (2026.4, measured) ------------------------------------------------

_OV = "openvino-cpu"


def _past_n(inputs, attributes) -> bool:
    return int(attributes["max_rois"]) > np.shape(inputs["input_rois"])[0]


def _ties_beyond_16(inputs, attributes) -> bool:
    """More than 16 boxes (std::sort leaves insertion sort) with equal probabilities."""
    probs = np.asarray(inputs["rois_probs"])
    return probs.size > 16 and np.unique(probs).size < probs.size


def _f64_inexact(inputs, attributes) -> bool:
    arrays = [np.asarray(inputs[name]) for name in ("input_rois", "rois_probs")]
    return any(a.dtype == np.float64 and not np.array_equal(a.astype(np.float32).astype(np.float64), a)
               for a in arrays)


_F32 = lambda v: np.asarray(v, np.float32)  # noqa: E731
DIVERGENCES = (
    Divergence("ov-topkrois-rows-past-n-uninitialised", _OV, "nondeterministic",
               "rows past N uninitialised",
               "With max_rois > N the CPU plugin leaves the output rows past N uninitialised (whatever the "
               "buffer held); the contract writes 0 there.",
               _past_n, Case("example", (_F32(np.arange(8).reshape(2, 4)), _F32([0.25, 0.75])), {"max_rois": 5})),
    Divergence("ov-topkrois-ties-unstable", _OV, "value", "ties among more than 16 boxes reordered",
               "Equal probabilities among more than 16 boxes: the CPU plugin's std::sort (no longer an insertion "
               "sort past 16 elements) orders tied boxes arbitrarily; the contract keeps them in box order (a "
               "stable sort). Up to 16 boxes OpenVINO agrees.",
               _ties_beyond_16, Case("example", (_F32(np.arange(40 * 4).reshape(40, 4)),
                                                 _F32(np.arange(40) % 3 / 4)), {"max_rois": 40})),
    Divergence("ov-topkrois-f64-as-f32", _OV, "value", "f64 computed in f32",
               "Under the f32 inference precision hint the CPU plugin computes f64 in f32: boxes come back "
               "rounded to f32 (0.1 as 0.10000000149011612); values f32 holds exactly are exact.",
               _f64_inexact, Case("example", (np.asarray([[0.1, 0.2, 0.3, 0.4], [1, 2, 3, 4]], np.float64),
                                              np.asarray([0.5, 0.25], np.float64)), {"max_rois": 2})),
)


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 6, (Port("input_rois", "T"), Port("rois_probs", "T")), (Port("output_rois", "T"),),
                  (Attribute("max_rois", "int", 0),), {"T": FLOATS}, _kernel_v6,
                  doc="The max_rois boxes of highest probability, in decreasing order.",
                  infer=output_type(None, [None, 4])),),
    openvino=OpenVINO(
        OP, versions=(6,), factory=native("opset6", OP), attributes=(AttributeMap("max_rois", "int"),),
        output_shapes=lambda i, a: [(int(a["max_rois"]), 4)]),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("TopK + Gather + Pad would do, but ONNX TopK's tie order is not guaranteed stable; not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torch has no such op"),
    divergences=DIVERGENCES,
    benchmark=Absent("not benchmarked"),
    open_order="ROIs of equal scores may come in any order",
)
