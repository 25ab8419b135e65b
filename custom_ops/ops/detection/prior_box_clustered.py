"""PriorBoxClustered-1 (OpenVINO): anchor boxes of given widths and heights at every cell of a feature map.

output_size: [H, W] and image_size: [IH, IW], 1-D integer tensors. Output: float32 [2, 4 * H * W * P]
(P = len(width)): row 0 the boxes (xmin, ymin, xmax, ymax) centred at ((w + offset) * step_w,
(h + offset) * step_h) and divided by the image size, row 1 the variances. step_w / step_h
fall back to step; when both are 0 the steps are image size / layer size. float32 arithmetic in the
reference's order, so the boxes are bit-exact.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops._types import INTEGER_TYPES
from custom_ops.errors import OpError
from custom_ops.unit import REQUIRED, Absent, Attribute, Case, DialectUnit, OpenVINO, OpSpec, Port

from ._common import F32 as F32_TYPES, FLOAT, bool_map, flag, maps, native, output_type
from ._priors import bad_case, i64, non_negative, sizes, variance, with_variances

OP = "PriorBoxClustered"
F32 = np.float32

DEFAULTS = dict(width=(), height=(), clip=1, step=0.0, step_w=0.0, step_h=0.0,
                offset=0.0, variance=())


def validate_attributes(a: dict) -> dict:
    a = {**DEFAULTS, **a}
    a["clip"] = check.flag(OP, "clip", a["clip"])
    a["width"] = [F32(v) for v in a["width"]]
    a["height"] = [F32(v) for v in a["height"]]
    if len(a["width"]) != len(a["height"]):
        raise OpError(OP, "attribute 'height'", "must have as many values as width",
                      value=len(a["height"]), allowed=f"{len(a['width'])} values")
    for name in ("width", "height"):
        if not all(np.isfinite(v) for v in a[name]):
            raise OpError(OP, f"attribute '{name}'", "values must be finite", value=[float(v) for v in a[name]])
    for name in ("step", "step_w", "step_h", "offset"):
        a[name] = non_negative(OP, name, a[name])
    a["variance"] = variance(OP, a["variance"])
    return a


def prior_box_clustered(output_size, image_size, **attributes) -> np.ndarray:
    h, w, ih, iw = sizes(OP, output_size, image_size)
    a = validate_attributes(attributes)
    step_w = a["step"] if a["step_w"] == 0 else a["step_w"]
    step_h = a["step"] if a["step_h"] == 0 else a["step_h"]
    if step_w == 0 and step_h == 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            step_w, step_h = F32(iw) / F32(w), F32(ih) / F32(h)
    cx = (np.arange(w, dtype=F32) + a["offset"]) * step_w          # [W]
    cy = (np.arange(h, dtype=F32) + a["offset"]) * step_h          # [H]
    half_w = np.asarray(a["width"], F32) / F32(2)
    half_h = np.asarray(a["height"], F32) / F32(2)
    cx = np.broadcast_to(cx[None, :, None], (h, w, 1))
    cy = np.broadcast_to(cy[:, None, None], (h, w, 1))
    boxes = np.stack([(cx - half_w) / F32(iw), (cy - half_h) / F32(ih),
                      (cx + half_w) / F32(iw), (cy + half_h) / F32(ih)], axis=-1)   # [H, W, P, 4]
    if a["clip"]:
        boxes = np.minimum(np.maximum(boxes, F32(0)), F32(1))
    return with_variances(boxes, a["variance"])


# Unit -------------------------------------------------------------------------------------------------

def _kernel_v1(output_size, image_size, **attributes):
    return (prior_box_clustered(output_size, image_size, **attributes),)


def cases(rng: np.random.Generator) -> list:
    out = []
    for index in range(24):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        k = int(r.integers(1, 4))
        a = dict(width=list(r.uniform(1, 50, k).round(2)), height=list(r.uniform(1, 50, k).round(2)),
                 clip=int(r.integers(2)), offset=float(r.choice([0.5, 0.0, 0.25])),
                 variance=[[0.1], [0.1, 0.1, 0.2, 0.2], []][index % 3])
        mode = index % 4
        if mode == 1:
            a["step"] = float(r.choice([8.0, 16.0, 3.3]))
        if mode == 2:
            a["step_w"], a["step_h"] = float(r.choice([8.0, 16.0, 3.3])), float(r.choice([0.0, 5.5]))
        if mode == 3:
            a["step_h"], a["step"] = 7.0, 2.5
        a = {key: v for key, v in a.items() if v != []}
        dtype = np.dtype(str(r.choice(["int32", "int64"])))
        layer = np.array([r.integers(1, 5), r.integers(1, 5)], dtype)
        image = np.array([r.integers(16, 300), r.integers(16, 300)], dtype)
        out.append(Case(f"prior_box_clustered_{index}", (layer, image), a))
    return out


def bad_cases() -> list:
    return [
        (bad_case("unequal_lists", (i64([2, 2]), i64([8, 8])), {"width": [1.0, 2.0], "height": [1.0]}), "height"),
        (bad_case("negative_step", (i64([2, 2]), i64([8, 8])), {"width": [1.0], "height": [1.0], "step": -1.0}),
         "step"),
        (bad_case("rank_2_size", (i64([[2, 2]]), i64([8, 8])), {"width": [1.0], "height": [1.0]}), "2 elements"),
        (bad_case("two_variances", (i64([2, 2]), i64([8, 8])), {"width": [1.0], "height": [1.0],
                                                            "variance": [0.1, 0.2]}), "variance"),
    ]


def _output_shapes(inputs: dict, attributes: dict) -> list:
    return [prior_box_clustered(inputs["output_size"], inputs["image_size"], **attributes).shape]


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 1, (Port("output_size", "T"), Port("image_size", "T")), (Port("priors", "F"),),
                  (Attribute("width", "floats", []), Attribute("height", "floats", []), flag("clip", 1),
                   Attribute("step", "float", 0.0), Attribute("step_w", "float", 0.0),
                   Attribute("step_h", "float", 0.0), Attribute("offset", "float", REQUIRED),
                   Attribute("variance", "floats", [])),
                  {"T": INTEGER_TYPES, "F": F32_TYPES}, _kernel_v1,
                  doc="Prior boxes of given widths and heights at every feature-map cell, and their variances.",
                  infer=output_type(FLOAT, [2, None])),),
    openvino=OpenVINO(
        "PriorBoxClustered", versions=(1,), factory=native("opset1", "PriorBoxClustered"),
        attributes=maps("floats", "width", "height", "variance") + bool_map("clip")
        + maps("float", "step", "step_w", "step_h", "offset"),
        constant_inputs=("output_size", "image_size"),   # the CPU plugin infers the output shape from their values
        output_shapes=_output_shapes),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("the box count follows from the input values: not written"),
    raising=Absent("no standard ONNX pattern computes prior boxes"),
    torch=Absent("torch has no prior box op to export"),
    divergences=Absent("none measured: bit-exact against OpenVINO CPU"),
    benchmark=Absent("not benchmarked: a cheap constant-like op, usually folded"),
)
