"""Pieces the detection units share: attribute declarations, output type inference, OpenVINO node building."""
from __future__ import annotations

import numpy as np

from custom_ops._types import NUMPY_TO_ONNX
from custom_ops.unit import Attribute, AttributeMap

F32 = (np.dtype(np.float32),)
FLOAT = NUMPY_TO_ONNX[np.dtype(np.float32)]   # the ONNX element type code
#: Float element types of the detection ops' tensors (OpenVINO's reference is templated on them).
FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def flag(name: str, default: int) -> Attribute:
    return Attribute(name, "int", default, (0, 1))


def bool_map(*names: str) -> tuple[AttributeMap, ...]:
    return tuple(AttributeMap(name, "bool") for name in names)


def maps(kind: str, *names: str) -> tuple[AttributeMap, ...]:
    return tuple(AttributeMap(name, kind) for name in names)


def output_type(elem_type: int | None = None, shape=None, like: int = 0):
    """ONNX inference: output 0 of element type `elem_type` (an onnx.TensorProto code; None: input
    `like`'s type) and `shape` (None entries unknown; None: unknown rank)."""
    def infer(ctx) -> None:
        from onnx import helper
        code = elem_type if elem_type is not None else ctx.get_input_type(like).tensor_type.elem_type
        ctx.set_output_type(0, helper.make_tensor_type_proto(code, shape))
    return infer


def native(opset: str, type_name: str, inputs_used: int | None = None):
    """An OpenVINO node factory through openvino's NodeFactory (the opset builders' Python-side checks
    refuse values OpenVINO's IR accepts, e.g. offset 0)."""
    def factory(ov, inputs, attributes):
        from openvino.utils.node_factory import NodeFactory
        used = [i for i in inputs if i is not None] if inputs_used is None else inputs[:inputs_used]
        outputs = [i.output(0) if hasattr(i, "output") else i for i in used]   # a Node or an Output
        return NodeFactory(opset).create(type_name, outputs, attributes)
    return factory


def index_pyop_casts(attributes: dict):
    """NMS ops with an output_type attribute: the PyOp computes int64 index outputs (1 and 2); an asked i32 is
    a Cast after it."""
    casts = {1: np.dtype(np.int32), 2: np.dtype(np.int32)} if attributes["output_type"] == "i32" else {}
    return dict(attributes, output_type="i64"), casts


def nms_infer(ctx, boxes_like_input: bool) -> None:
    """Shape inference of the NMS ops: selected [?, 6] (f32, or the boxes' type), indices [?, 1] and
    counts [?] in output_type."""
    from onnx import TensorProto, helper
    proto = ctx.get_attribute("output_type")
    value = helper.get_attribute_value(proto) if proto is not None else b"i64"
    code = TensorProto.INT32 if (value.decode() if isinstance(value, bytes) else value) == "i32" else TensorProto.INT64
    known = ctx.get_input_type(0) if boxes_like_input else None
    elem = known.tensor_type.elem_type if known is not None else TensorProto.FLOAT
    if known is not None or not boxes_like_input:
        ctx.set_output_type(0, helper.make_tensor_type_proto(elem, [None, 6]))
    ctx.set_output_type(1, helper.make_tensor_type_proto(code, [None, 1]))
    ctx.set_output_type(2, helper.make_tensor_type_proto(code, [None]))


def nms_factory(opset: str, type_name: str):
    """The native node factory of the [N, M, 4]-boxes NMS ops: the CPU plugin needs the box dimension static,
    so a box input whose last dim is dynamic gets a Reshape to [N, M, 4] stating it."""
    def factory(ov, inputs, attributes):
        from openvino.utils.node_factory import NodeFactory
        used = [i.output(0) if hasattr(i, "output") else i for i in inputs if i is not None]
        shape = used[0].get_partial_shape()
        if shape.rank.is_static and shape[-1].is_dynamic:
            used[0] = ov.opset1.reshape(used[0], ov.op.Constant(np.array([0, 0, 4], np.int64)), True).output(0)
        return NodeFactory(opset).create(type_name, used, attributes)
    return factory


def nms_case_inputs(r: np.random.Generator, empty: bool) -> tuple[np.ndarray, np.ndarray]:
    """Generated boxes [N, M, 4] (corner + size, or all of area 0 with `empty`) and distinct scores
    [N, C, M] for the NMS units' cases."""
    batch, classes, count = int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(1, 8))
    corner = r.uniform(0, 10, (batch, count, 2))
    boxes = np.concatenate([corner, corner + r.uniform(0.5, 6, (batch, count, 2))], -1)
    if empty:
        boxes[..., 2:] = boxes[..., :2] - 1.0
    scores = r.permutation(batch * classes * count).reshape(batch, classes, count) / (batch * classes * count)
    return boxes, scores

def greedy_nms(count: int, suppresses, limit: int | None = None, block: int = 64) -> np.ndarray:
    """Greedy NMS over candidates 0..count-1, best first: the kept positions, in order (at most `limit`).

    suppresses(kept, candidates) -> bool [len(kept), len(candidates)]: whether a kept box removes a candidate
    (e.g. IoU > threshold), on position arrays. A candidate is kept when no earlier kept box removes it; the
    same result as the one-box-at-a-time loop, with the overlaps computed a block at a time: each block is
    checked against the boxes kept before it at once, then against itself, so only kept x candidates and
    in-block pairs are ever computed."""
    kept: list[int] = []
    limit = count if limit is None else limit
    for start in range(0, count, block):
        if len(kept) >= limit:
            break
        candidates = np.arange(start, min(start + block, count))
        if kept:
            candidates = candidates[~suppresses(np.asarray(kept), candidates).any(axis=0)]
        if not candidates.size:
            continue
        inner = suppresses(candidates, candidates)
        alive = np.ones(candidates.size, bool)
        for row in range(candidates.size):
            if alive[row]:
                kept.append(int(candidates[row]))
                if len(kept) >= limit:
                    break
                alive[row + 1:] &= ~inner[row, row + 1:]
    return np.asarray(kept, np.int64)
