"""GridSample: OpenVINO GridSample-9 -> ONNX GridSample-16 (the version opset 18 carries)."""
from __future__ import annotations

from onnx import TensorProto

from .._registry import Unsupported, rule
from ._spatial import require_type

#: onnxruntime's GridSample kernels
GRID_TYPES = (TensorProto.FLOAT16, TensorProto.FLOAT)

#: (mode, padding_mode) pairs whose results differ from OpenVINO's (none known: every pair is tested)
_DIFFERENT: dict[tuple[str, str], str] = {}


@rule("GridSample", versions=(9,), onnx="GridSample",
      notes="the same modes (bilinear, bicubic, nearest), padding modes (zeros, border, reflection) and "
            "align_corners; 4-D data only (as both ops)",
      refuses=("element types other than f16 and f32 (onnxruntime's GridSample kernels)",))
def grid_sample(ctx, node):
    require_type(ctx, node, GRID_TYPES, "GridSample (onnxruntime)")
    attributes = node.get_attributes()
    mode = str(attributes.get("mode", "bilinear")).lower()
    padding = str(attributes.get("padding_mode", "zeros")).lower()
    if mode not in ("bilinear", "bicubic", "nearest") or padding not in ("zeros", "border", "reflection"):
        raise Unsupported(f"mode={mode!r}, padding_mode={padding!r}")
    if (mode, padding) in _DIFFERENT:
        raise Unsupported(_DIFFERENT[(mode, padding)])
    ctx.emit("GridSample", [ctx.inp(node, 0), ctx.inp(node, 1)], [ctx.out(node)], mode=mode, padding_mode=padding,
             align_corners=int(bool(attributes.get("align_corners", False))))
