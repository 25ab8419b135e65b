"""ExperimentalDetectronPriorGridGenerator-6 (OpenVINO): the priors shifted over every feature-map cell.

priors [N, 4] (x0, y0, x1, y1); feature_map [B, C, H, W] and im_data [B, 3, IH, IW] give shapes only. For
cell (y, x) of the H x W feature map and prior n: priors[n] + (sx, sy, sx, sy) with sx = (x + 0.5) * step_x,
sy = (y + 0.5) * step_y; step_x = stride_x, or IW / (w or W) when stride_x is 0 (likewise step_y with
stride_y, IH, h, H). The output is [H * W * N, 4] with flatten, else [H, W, N, 4]: OpenVINO fills an h x w
grid into it (the CPU plugin writes past the output, corrupting the heap, when h * w > H * W, and leaves the
rest uninitialised when smaller), so the contract requires h in {0, H} and w in {0, W}. Arithmetic in f32
(as OpenVINO's implementation), the sum in T.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import Absent, Attribute, AttributeMap, Case, DialectUnit, Divergence, OpenVINO, OpSpec, Port

from ._common import FLOATS, flag, native, output_type

OP = "ExperimentalDetectronPriorGridGenerator"
PORTS = ("priors", "feature_map", "im_data")


def _check_grid(feature_shape, h, w) -> None:
    for name, value, size in (("h", h, feature_shape[2]), ("w", w, feature_shape[3])):
        if int(value) not in (0, size):
            raise OpError(OP, f"attribute '{name}'", "must be 0 or the feature map's size (OpenVINO fills an "
                          "h x w grid into the H x W output)", value=int(value), allowed=f"0, {size}")


def _refuse(inputs, attributes) -> None:
    """The CPU plugin corrupts the heap when h * w > H * W."""
    _check_grid(np.shape(inputs["feature_map"]), attributes["h"], attributes["w"])


def prior_grid(priors, feature_map, im_data, flatten=1, h=0, w=0, stride_x=0.0, stride_y=0.0):
    arrays = [check.as_array(OP, name, value) for name, value in zip(PORTS, (priors, feature_map, im_data))]
    priors, feature_map, im_data = arrays
    check.data_type(OP, "priors", priors, FLOATS)
    for name, array in zip(PORTS[1:], arrays[1:]):
        if array.dtype != priors.dtype:
            raise OpError(OP, f"input '{name}'", "element type must equal priors'", value=str(array.dtype),
                          allowed=str(priors.dtype))
        if array.ndim != 4:
            raise OpError(OP, f"input '{name}'", "must have rank 4", value=array.shape, allowed="rank 4")
    if priors.ndim != 2 or priors.shape[1] != 4:
        raise OpError(OP, "input 'priors'", "must have shape [N, 4]", value=priors.shape)
    _check_grid(feature_map.shape, h, w)
    for name, value in (("stride_x", stride_x), ("stride_y", stride_y)):
        if not np.isfinite(value) or value < 0:
            raise OpError(OP, f"attribute '{name}'", "must be finite and not negative", value=value)
    height, width = feature_map.shape[2:]
    image_h, image_w = im_data.shape[2:]
    if (not stride_x and not (w or width)) or (not stride_y and not (h or height)):
        raise OpError(OP, "input 'feature_map'", "empty grid with a stride of 0: the step divides by 0",
                      value=feature_map.shape)
    f32 = np.float32
    step_x = f32(stride_x) if stride_x else f32(image_w) / f32(w or width)
    step_y = f32(stride_y) if stride_y else f32(image_h) / f32(h or height)
    shift_x = (np.arange(width, dtype=f32) + f32(0.5)) * step_x        # [W]
    shift_y = (np.arange(height, dtype=f32) + f32(0.5)) * step_y       # [H]
    shift = np.stack(np.broadcast_arrays(shift_x[None, :], shift_y[:, None],
                                         shift_x[None, :], shift_y[:, None]), axis=-1)   # [H, W, 4]
    out = (priors[None, None].astype(f32) + shift[:, :, None]).astype(priors.dtype)      # [H, W, N, 4]
    return out.reshape(-1, 4) if flatten else out


def _kernel_v6(priors, feature_map, im_data, *, flatten, h, w, stride_x, stride_y):
    return (prior_grid(priors, feature_map, im_data, flatten, h, w, stride_x, stride_y),)


def cases(rng: np.random.Generator) -> list:
    """Random priors, grid and image sizes, explicit strides or derived ones, h/w overrides, both layouts."""
    out = []
    for index in range(18):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        dtype = FLOATS[index % 3]
        n, height, width = int(r.integers(1, 4)), int(r.integers(1, 5)), int(r.integers(1, 6))
        priors = r.normal(0, 20, (n, 4))
        if dtype != np.float32:
            priors = priors.round(1) if dtype == np.float16 else priors.astype(np.float32)
        feature = np.zeros((1, 2, height, width), dtype)
        image = np.zeros((1, 3, int(r.integers(8, 64)), int(r.integers(8, 64))), dtype)
        attributes = {"flatten": int(index % 2 == 0), "h": height if index % 4 == 1 else 0,
                      "w": width if index % 4 in (1, 2) else 0,
                      "stride_x": float(r.choice([0.0, 4.0, 7.5, 2.3])),
                      "stride_y": float(r.choice([0.0, 8.0, 3.7]))}
        out.append(Case(f"prior_grid_{dtype.name}_{index}", (priors.astype(dtype), feature, image), attributes))
    return out


def bad_cases() -> list:
    f32 = lambda *s: np.zeros(s, np.float32)  # noqa: E731
    return [
        (Case("priors_shape", (f32(2, 3), f32(1, 1, 2, 2), f32(1, 3, 8, 8)), {}), "[N, 4]"),
        (Case("feature_rank", (f32(2, 4), f32(2, 2), f32(1, 3, 8, 8)), {}), "rank 4"),
        (Case("mixed_types", (f32(2, 4), np.zeros((1, 1, 2, 2)), f32(1, 3, 8, 8)), {}), "feature_map"),
        (Case("negative_stride", (f32(2, 4), f32(1, 1, 2, 2), f32(1, 3, 8, 8)), {"stride_x": -1.0}), "stride_x"),
        (Case("negative_h", (f32(2, 4), f32(1, 1, 2, 2), f32(1, 3, 8, 8)), {"h": -2}), "attribute 'h'"),
        (Case("h_not_the_map", (f32(2, 4), f32(1, 1, 2, 2), f32(1, 3, 8, 8)), {"h": 3}), "attribute 'h'"),
        (Case("w_not_the_map", (f32(2, 4), f32(1, 1, 2, 2), f32(1, 3, 8, 8)), {"w": 1}), "attribute 'w'"),
    ]


def _output_shapes(inputs, attributes):
    n = np.shape(inputs["priors"])[0]
    height, width = np.shape(inputs["feature_map"])[2:]
    return [(height * width * n, 4) if attributes["flatten"] else (height, width, n, 4)]


def _grid_not_the_map(inputs, attributes) -> bool:
    """h or w other than 0 or the feature map's size (the contract refuses these; any inputs may come)."""
    shape = np.shape(inputs.get("feature_map"))
    if len(shape) != 4:
        return False
    try:
        return int(attributes["h"]) not in (0, shape[2]) or int(attributes["w"]) not in (0, shape[3])
    except (TypeError, ValueError):
        return False


# kind "crashes": inputs the contract refuses, which onnx_bridge.backends.openvino refuses before OpenVINO (refuse)
DIVERGENCES = (
    Divergence("ov-priorgrid-grid-not-the-map", "openvino-cpu", "crashes", "h, w other than the map's size",
               "The CPU plugin fills an h x w grid into the H x W output: h * w > H * W writes past the output "
               "(heap corruption), smaller leaves rows uninitialised. The contract refuses h, w other than 0 or "
               "the feature map's size.",
               _grid_not_the_map, Case("example", (np.zeros((2, 4), np.float32), np.zeros((1, 1, 2, 2), np.float32),
                                                   np.zeros((1, 3, 8, 8), np.float32)), {"h": 3, "w": 3})),
)


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 6, tuple(Port(name, "T") for name in PORTS), (Port("output", "T"),),
                  (flag("flatten", 1), Attribute("h", "int", 0), Attribute("w", "int", 0),
                   Attribute("stride_x", "float", 0.0), Attribute("stride_y", "float", 0.0)),
                  {"T": FLOATS}, _kernel_v6, doc="Priors shifted over every feature-map cell.",
                  infer=output_type(None, None)),),
    openvino=OpenVINO(
        OP, versions=(6,), factory=native("opset6", OP),
        attributes=(AttributeMap("flatten", "bool"), AttributeMap("h", "int"), AttributeMap("w", "int"),
                    AttributeMap("stride_x", "float"), AttributeMap("stride_y", "float")),
        output_shapes=_output_shapes, refuse=_refuse,
        refuses=("h or w other than 0 or the feature map's size: OpenVINO fills an h x w grid into the H x W "
                 "output (the kernel raises; the CPU plugin corrupts the heap or leaves memory uninitialised)",)),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("exact as Range/Mul/Add over static shapes, but not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torch has no such op"),
    divergences=DIVERGENCES,
    benchmark=Absent("not benchmarked"),
)
