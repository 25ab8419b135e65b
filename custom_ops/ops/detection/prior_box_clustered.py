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
from custom_ops.errors import OpError

from .prior_box import _sizes

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
        a[name] = F32(a[name])
        if not (np.isfinite(a[name]) and a[name] >= 0):
            raise OpError(OP, f"attribute '{name}'", "must be finite and not negative", value=float(a[name]),
                          allowed=">= 0")
    a["variance"] = [F32(v) for v in a["variance"]]
    if len(a["variance"]) not in (0, 1, 4):
        raise OpError(OP, "attribute 'variance'", "must have 0, 1 or 4 values",
                      value=[float(v) for v in a["variance"]], allowed="0, 1 or 4 values")
    return a


def prior_box_clustered(output_size, image_size, **attributes) -> np.ndarray:
    h, w, ih, iw = _sizes(OP, output_size, image_size)
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
    variance = a["variance"] or [F32(0.1)]
    variances = np.broadcast_to(np.asarray(variance, F32), boxes.shape)
    return np.stack([boxes.reshape(-1), variances.reshape(-1)]).astype(F32)
