"""Selection: TopK, CumSum, ROIAlign, NonMaxSuppression (soft NMS as the dialect unit).

TopK: ONNX TopK returns values in value order, ties broken by the lower index (onnxruntime does this too);
OpenVINO sort="index" orders the k selected elements by index instead, which a second TopK over the
selected indices reproduces.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule
from .dialect import import_as_unit


@rule("TopK", versions=(1, 3, 11), onnx="TopK (+ TopK, GatherElements for sort=index; Cast for i32)",
      notes="mode max/min -> largest 1/0; sort value: ONNX order (descending for max, ascending for min); "
            "sort index: the k selected reordered by ascending index. Among equal values ONNX takes the "
            "lower index first, which is TopK-11's stable=true and what OpenVINO's CPU plugin does for "
            "every version. sort none: OpenVINO leaves the order unspecified; its CPU plugin gives the value "
            "order (observed for every version, mode, static and dynamic shapes), which the import makes "
            "explicit; among equal values the CPU plugin then picks other indices than the lowest (the spec "
            "allows either): values agree, indices may name another of equal elements")
def topk(ctx, node):
    attributes = node.get_attributes()
    axis = int(attributes["axis"])
    mode, sort = str(attributes["mode"]).lower(), str(attributes["sort"]).lower()
    if sort == "none":  # unspecified order: the value order, as OpenVINO's CPU plugin gives it
        sort = "value"
    if sort not in ("value", "index"):
        raise Unsupported(f"sort={sort!r}")
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
      notes="mode max and aligned_mode half_pixel / half_pixel_for_nn (no exact ONNX RoiAlign: onnxruntime's "
            "max pools weighted corners, its half_pixel differs) as ROIAlign (org.openvinotoolkit); "
            "mode avg; ROIAlign-3 and aligned_mode asymmetric are ONNX's output_half_pixel; sampling_ratio "
            "0 (adaptive) and spatial_scale mean the same",
      refuses=())
def roi_align(ctx, node):
    attributes = node.get_attributes()
    mode = str(attributes["mode"]).lower()
    aligned = str(attributes.get("aligned_mode", "asymmetric")).lower()
    if mode != "avg" or aligned not in _ALIGNED:   # no exact ONNX RoiAlign: the dialect op
        return import_as_unit(ctx, node, "ROIAlign")
    ctx.emit("RoiAlign", [ctx.inp(node, 0), ctx.inp(node, 1), ctx.int64(node, 2)], [ctx.out(node)],
             mode="avg", output_height=int(attributes["pooled_h"]), output_width=int(attributes["pooled_w"]),
             sampling_ratio=int(attributes["sampling_ratio"]),
             spatial_scale=float(attributes["spatial_scale"]),
             coordinate_transformation_mode=_ALIGNED[aligned])


def _optional_scalar(ctx, node, index: int, default, dtype, hint: str) -> str:
    if node.get_input_size() > index:
        return ctx.emit("Cast", [ctx.inp(node, index)], to=dtype)
    return ctx.const(np.array(default, {TensorProto.INT64: np.int64, TensorProto.FLOAT: np.float32}[dtype]), hint)


@rule("NonMaxSuppression", versions=(1, 3, 4, 5, 9),
      onnx="NonMaxSuppression, GatherND (+ TopK, Gather for sort_result_descending), Concat, Shape, Cast",
      notes="OpenVINO infers a dynamic [..N, 3] output for v5 and v9 alike and its CPU plugin outputs exactly "
            "the selected boxes ([num_selected, 3], no -1 padding), in "
            "ONNX's order (batch, class, then descending score) when sort_result_descending=false; true sorts "
            "them all by descending score (stable: equal scores keep that order), a TopK over the gathered "
            "scores. selected_scores = (batch, class, score) as floats, valid_outputs = [num_selected]. "
            "box_encoding center is center_point_box=1; absent inputs take OpenVINO's defaults (0). "
            "OpenVINO suppresses at IoU >= iou_threshold, ONNX at IoU > it: the threshold becomes the f32 "
            "just below (at <= 0: one box per class, as OpenVINO then suppresses even disjoint boxes). "
            "NMS-5/9 with soft_nms_sigma other than a Constant 0 or a computed iou_threshold: NonMaxSuppression "
            "(org.openvinotoolkit), OpenVINO's soft NMS (gaussian score decay; NMS-5 with soft_iou_suppression=1). "
            "NMS-1/3/4 select and order alike (one output): the selected rows only, as OpenVINO's CPU plugin "
            "gives them also where the spec pads with -1 rows and its shape inference says more (or, for "
            "NMS-1/3, fewer) rows",
      refuses=("a computed iou_threshold with fewer than 6 inputs (NMS-1/3/4, NMS-5/9 without soft_nms_sigma): "
               "the >= to > conversion needs its value",
               "boxes other than f32: ONNX NonMaxSuppression takes float only"))
def non_max_suppression(ctx, node):
    attributes = node.get_attributes()
    if ctx.elem(node, 0) != TensorProto.FLOAT or ctx.elem(node, 1) != TensorProto.FLOAT:
        raise Unsupported("boxes and scores must be f32 (ONNX NonMaxSuppression takes float only)")
    if node.get_input_size() > 5:
        sigma = ctx.const_value(node, 5)
        if sigma is None or sigma.any() or ctx.const_value(node, 3) is None:
            # soft NMS or computed thresholds: the dialect op (NMS-5's soft NMS also suppresses by IoU)
            import_as_unit(ctx, node, "NonMaxSuppression")
            if node.get_type_info().version_id == "opset5":
                next(a for a in ctx.nodes[-1].attribute if a.name == "soft_iou_suppression").i = 1
            return
    scores = ctx.inp(node, 1)
    max_boxes = ctx.emit("Reshape", [_optional_scalar(ctx, node, 2, 0, TensorProto.INT64, "max_boxes"),
                                     ctx.const(np.array([1], np.int64), "one")])
    # OpenVINO suppresses a box when IoU >= iou_threshold, ONNX when IoU > iou_threshold: pass the float
    # just below. At 0 (the default) OpenVINO suppresses every other box, even disjoint ones: one per class.
    iou = np.float32(0) if node.get_input_size() <= 3 else ctx.const_value(node, 3)
    if iou is None:
        raise Unsupported("iou_threshold must be a Constant (OpenVINO's >= becomes ONNX's > of the float "
                          "below it)")
    iou = np.float32(np.asarray(iou).reshape(-1)[0])
    if iou <= 0:
        max_boxes = ctx.emit("Min", [max_boxes, ctx.const(np.array([1], np.int64), "one_box")])
        iou = np.float32(0)
    else:
        iou = min(np.nextafter(iou, np.float32(0)), np.float32(1))
    inputs = [ctx.inp(node, 0), scores, max_boxes, ctx.const(np.array(iou, np.float32), "iou"),
              _optional_scalar(ctx, node, 4, 0.0, TensorProto.FLOAT, "score_threshold")]
    center = str(attributes.get("box_encoding", "corner")).lower() == "center"
    selected = ctx.emit("NonMaxSuppression", inputs, center_point_box=int(center))
    picked = ctx.emit("GatherND", [scores, selected])  # [num_selected]
    if attributes.get("sort_result_descending", True):
        count = ctx.emit("Shape", [picked])
        order = ctx.temp("order")
        picked = ctx.emit("TopK", [picked, count], [ctx.temp("sorted_scores"), order], axis=0, largest=1, sorted=1)
        selected = ctx.emit("Gather", [selected, order], axis=0)
    code = ctx.out_elem(node, 0)
    ctx.emit("Cast", [selected], [ctx.out(node, 0)], to=code)
    if node.get_output_size() == 1:
        return
    batch_class = ctx.emit("Cast", [ctx.emit("Slice", [selected, ctx.const(np.array([0], np.int64), "start"),
                                                       ctx.const(np.array([2], np.int64), "end"),
                                                       ctx.const(np.array([1], np.int64), "axis")])],
                           to=ctx.out_elem(node, 1))
    ctx.emit("Concat", [batch_class, ctx.emit("Unsqueeze", [picked, ctx.const(np.array([1], np.int64), "axes")])],
             [ctx.out(node, 1)], axis=1)
    ctx.emit("Cast", [ctx.emit("Shape", [selected], end=1)], [ctx.out(node, 2)], to=ctx.out_elem(node, 2))
