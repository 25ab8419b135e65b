"""Selection: TopK, CumSum, ROIAlign.

TopK: ONNX TopK returns values in value order, ties broken by the lower index (onnxruntime does this too);
OpenVINO sort="index" orders the k selected elements by index instead, which a second TopK over the
selected indices reproduces.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule


@rule("TopK", versions=(1, 3, 11), onnx="TopK (+ TopK, GatherElements for sort=index; Cast for i32)",
      notes="mode max/min -> largest 1/0; sort value: ONNX order (descending for max, ascending for min); "
            "sort index: the k selected reordered by ascending index. Among equal values ONNX takes the "
            "lower index first, which is TopK-11's stable=true and what OpenVINO's CPU plugin does for "
            "every version",
      refuses=("sort=none: OpenVINO leaves the order unspecified",))
def topk(ctx, node):
    attributes = node.get_attributes()
    axis = int(attributes["axis"])
    mode, sort = str(attributes["mode"]).lower(), str(attributes["sort"]).lower()
    if sort not in ("value", "index"):
        raise Unsupported(f"sort={sort!r}: OpenVINO leaves the order of the k elements unspecified")
    k = ctx.int64_vector(node, 1)
    code = ctx.out_elem(node, 1)
    by_value = sort == "value"
    values_out = [ctx.out(node, 0), ctx.temp("indices")] if by_value else [ctx.temp("values"),
                                                                          ctx.temp("indices")]
    values, indices = values_out
    ctx.emit("TopK", [ctx.inp(node, 0), k], values_out, axis=axis, largest=int(mode == "max"), sorted=1)
    if not by_value:
        # The selected indices in ascending order, and where each came from among the k.
        order = ctx.temp("order")
        sorted_indices = ctx.emit("TopK", [indices, k], [ctx.temp("sorted_indices"), order], axis=axis,
                                  largest=0, sorted=1)
        ctx.emit("GatherElements", [values, order], [ctx.out(node, 0)], axis=axis)
        indices = sorted_indices
    if code == TensorProto.INT64:
        ctx.emit("Identity", [indices], [ctx.out(node, 1)])
    else:
        ctx.emit("Cast", [indices], [ctx.out(node, 1)], to=code)


@rule("CumSum", versions=(3,), onnx="CumSum", notes="exclusive and reverse mean the same in both; "
      "the axis input (default 0) stays an input", refuses=())
def cum_sum(ctx, node):
    attributes = node.get_attributes()
    axis = (ctx.int64(node, 1) if node.get_input_size() > 1
            else ctx.const(np.array(0, np.int64), "axis"))
    ctx.emit("CumSum", [ctx.inp(node, 0), axis], [ctx.out(node)],
             exclusive=int(bool(attributes.get("exclusive", False))),
             reverse=int(bool(attributes.get("reverse", False))))


_ALIGNED = {"asymmetric": "output_half_pixel"}


@rule("ROIAlign", versions=(3, 9), onnx="RoiAlign (opset 16 semantics)",
      notes="mode avg; ROIAlign-3 and aligned_mode asymmetric are ONNX's output_half_pixel; sampling_ratio "
            "0 (adaptive) and spatial_scale mean the same",
      refuses=("mode max: onnxruntime's RoiAlign max pools the weighted corner values, OpenVINO the "
               "interpolated samples",
               "aligned_mode half_pixel: ONNX half_pixel measured different from OpenVINO's CPU plugin (up "
               "to 6.6 apart on unit-normal data)",
               "aligned_mode half_pixel_for_nn: no ONNX equivalent"))
def roi_align(ctx, node):
    attributes = node.get_attributes()
    mode = str(attributes["mode"]).lower()
    aligned = str(attributes.get("aligned_mode", "asymmetric")).lower()
    if mode != "avg":
        raise Unsupported(f"mode={mode!r}: onnxruntime's RoiAlign max differs from OpenVINO's")
    if aligned not in _ALIGNED:
        raise Unsupported(f"aligned_mode={aligned!r} has no exactly equivalent ONNX RoiAlign mode")
    ctx.emit("RoiAlign", [ctx.inp(node, 0), ctx.inp(node, 1), ctx.int64(node, 2)], [ctx.out(node)],
             mode="avg", output_height=int(attributes["pooled_h"]), output_width=int(attributes["pooled_w"]),
             sampling_ratio=int(attributes["sampling_ratio"]),
             spatial_scale=float(attributes["spatial_scale"]),
             coordinate_transformation_mode=_ALIGNED[aligned])
