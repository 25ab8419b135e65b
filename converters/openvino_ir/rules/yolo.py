"""YOLOv2/v3 heads: RegionYolo, ReorgYolo (Darknet's region and reorg layers) as Reshape/Slice/Sigmoid/Softmax/
Transpose. Shapes are computed at run time, so dynamic batch and spatial dims import too."""
from __future__ import annotations

import numpy as np

from .._registry import Unsupported, rule
from .tensor import INT64_MAX, static_rank


def _slice(ctx, data: str, start: int, end: int, axis: int) -> str:
    return ctx.emit("Slice", [data, ctx.const(np.array([start], np.int64), "starts"),
                              ctx.const(np.array([end], np.int64), "ends"),
                              ctx.const(np.array([axis], np.int64), "axes")])


@rule("RegionYolo", versions=(1,), onnx="Reshape + Slice + Sigmoid (+ Softmax) + Concat + Reshape",
      notes="RegionYolo-0 (recorded as opset1). Per region and cell: x, y and the confidence through Sigmoid, the "
            "other coords unchanged, the classes through Softmax (do_softmax, over `num` regions, the output "
            "flattened from axis to end_axis) or Sigmoid (the `mask` regions, the output shaped as the input)",
      refuses=("input not 4-D",))
def region_yolo(ctx, node):
    attributes = node.get_attributes()
    coords, classes = int(attributes["coords"]), int(attributes["classes"])
    softmax = bool(attributes["do_softmax"])
    regions = int(attributes["num"]) if softmax else len(attributes["mask"])
    if static_rank(ctx, node) != 4:
        raise Unsupported("input must be 4-D [N, C, H, W]")
    entry = coords + 1 + classes
    data = ctx.inp(node, 0)
    shape = ctx.emit("Shape", [data])
    grouped = ctx.emit("Reshape", [data, ctx.const(np.array([0, regions, entry, -1], np.int64), "regions")])
    parts = [ctx.emit("Sigmoid", [_slice(ctx, grouped, 0, 2, 2)])]
    if coords > 2:
        parts.append(_slice(ctx, grouped, 2, coords, 2))
    parts.append(ctx.emit("Sigmoid", [_slice(ctx, grouped, coords, coords + 1, 2)]))
    scores = _slice(ctx, grouped, coords + 1, entry, 2)
    parts.append(ctx.emit("Softmax", [scores], axis=2) if softmax else ctx.emit("Sigmoid", [scores]))
    joined = ctx.emit("Concat", parts, axis=2)
    if not softmax:
        ctx.emit("Reshape", [joined, shape], [ctx.out(node)])
        return
    axis, end_axis = int(attributes["axis"]) % 4, int(attributes["end_axis"]) % 4
    pieces = []
    if axis > 0:
        pieces.append(ctx.emit("Slice", [shape, *(ctx.const(np.array([v], np.int64), h)
                                                  for v, h in ((0, "starts"), (axis, "ends"), (0, "axes")))]))
    pieces.append(ctx.const(np.array([-1], np.int64), "flat"))
    if end_axis < 3:
        pieces.append(ctx.emit("Slice", [shape, *(ctx.const(np.array([v], np.int64), h)
                                                  for v, h in ((end_axis + 1, "starts"), (INT64_MAX, "ends"),
                                                               (0, "axes")))]))
    ctx.emit("Reshape", [joined, ctx.emit("Concat", pieces, axis=0)], [ctx.out(node)])


@rule("ReorgYolo", versions=(2,), onnx="Reshape + Transpose + Reshape",
      notes="Darknet's reorg: the input read as [N, C / s^2, H, s, W, s], transposed to [N, s, s, C / s^2, H, W] "
            "and read as [N, C * s^2, H / s, W / s] (not SpaceToDepth's order)",
      refuses=("input not 4-D",))
def reorg_yolo(ctx, node):
    stride = int(node.get_attributes()["stride"][0])
    if static_rank(ctx, node) != 4:
        raise Unsupported("input must be 4-D [N, C, H, W]")
    data = ctx.inp(node, 0)
    shape = ctx.emit("Shape", [data])
    n, c, h, w = (ctx.emit("Slice", [shape, *(ctx.const(np.array([v], np.int64), k)
                                              for v, k in ((i, "starts"), (i + 1, "ends"), (0, "axes")))])
                  for i in range(4))
    s = ctx.const(np.array([stride], np.int64), "stride")
    s2 = ctx.const(np.array([stride * stride], np.int64), "stride2")
    read = ctx.emit("Concat", [n, ctx.emit("Div", [c, s2]), h, s, w, s], axis=0)
    moved = ctx.emit("Transpose", [ctx.emit("Reshape", [data, read])], perm=[0, 3, 5, 1, 2, 4])
    out = ctx.emit("Concat", [n, ctx.emit("Mul", [c, s2]), ctx.emit("Div", [h, s]), ctx.emit("Div", [w, s])], axis=0)
    ctx.emit("Reshape", [moved, out], [ctx.out(node)])
