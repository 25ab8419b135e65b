"""CTCGreedyDecoder-1 (OpenVINO): greedy CTC decoding of class scores.

data [T, N, C] (float), sequence_mask [T, N] (same type): for each batch, the steps before the first
zero of its mask; per step the first class of maximal score (std::max_element); the blank is class C-1;
with ctc_merge_repeated a class equal to the previous step's is dropped. Output [N, T, 1, 1] (data's
type): the decoded classes, then -1.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops._types import FLOAT_TYPES
from custom_ops.errors import OpError
from custom_ops.unit import (Absent, Attribute, AttributeMap, Benchmark, BenchmarkCase, Case, DialectUnit, OpSpec,
                             OpenVINO, Port)
from custom_ops.ops._argmax import first_max

from ._ctc import collapse

OP = "CTCGreedyDecoder"
TYPES = FLOAT_TYPES


def ctc_greedy_decoder(data, sequence_mask, ctc_merge_repeated=1):
    data, mask = check.as_array(OP, "data", data), check.as_array(OP, "sequence_mask", sequence_mask)
    check.data_type(OP, "data", data, TYPES)
    if mask.dtype != data.dtype:
        raise OpError(OP, "input 'sequence_mask'", "element type must equal data's", value=str(mask.dtype),
                      allowed=str(data.dtype))
    if data.ndim != 3 or data.shape[2] < 1:
        raise OpError(OP, "input 'data'", "must have shape [T, N, C] with C >= 1", value=data.shape)
    if mask.shape != data.shape[:2]:
        raise OpError(OP, "input 'sequence_mask'", "must have shape [T, N]", value=mask.shape,
                      allowed=data.shape[:2])
    merge = check.flag(OP, "ctc_merge_repeated", ctc_merge_repeated)
    steps, batch, classes = data.shape
    valid = np.cumprod(mask.T != 0, axis=1).astype(bool)                     # [N, T]: before the first 0
    best = first_max(data.transpose(1, 0, 2)) if steps and batch else np.zeros((batch, steps), np.int64)
    decoded, _ = collapse(best, valid, classes - 1, bool(merge))
    return decoded.astype(data.dtype).reshape(batch, steps, 1, 1)


def _kernel_v1(data, sequence_mask, ctc_merge_repeated):
    return (ctc_greedy_decoder(data, sequence_mask, ctc_merge_repeated),)


def cases(rng: np.random.Generator) -> list:
    out = []
    for index in range(24):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        steps, batch, classes = int(r.integers(1, 9)), int(r.integers(1, 4)), int(r.integers(1, 6))
        data = r.normal(size=(steps, batch, classes))
        if index % 3 == 0:
            data = data.round()                                  # ties: the first maximum wins
        lengths = r.integers(0, steps + 1, batch)
        mask = (np.arange(steps)[:, None] < lengths[None, :]).astype(float)
        if index % 4 == 1:
            mask[r.integers(0, steps)] = 0.0                     # a zero inside: decoding stops there
        dtype = np.float32
        out.append(Case(f"ctc_greedy_{index}", (data.astype(dtype), mask.astype(dtype)),
                        {"ctc_merge_repeated": int(index % 2 == 0)}))
    return out


def bad_cases() -> list:
    f32 = lambda v: np.asarray(v, np.float32)  # noqa: E731
    data = f32(np.zeros((3, 2, 4)))
    return [
        (Case("mask_shape", (data, f32(np.ones((2, 3)))), {}), "sequence_mask"),
        (Case("rank_2", (data[0], f32(np.ones((2,)))), {}), "[T, N, C]"),
        (Case("mixed_types", (data, np.ones((3, 2))), {}), "element type"),
        (Case("integer_data", (data.astype(np.int32), np.ones((3, 2), np.int32)), {}), "element type"),
    ]


def _infer(ctx) -> None:
    from onnx import helper
    ctx.set_output_type(0, helper.make_tensor_type_proto(ctx.get_input_type(0).tensor_type.elem_type,
                                                         [None, None, 1, 1]))


def benchmark_cases(mode: str) -> list:
    steps, batch, classes = {"full": (100, 8, 40), "quick": (100, 8, 40), "tiny": (6, 2, 4)}[mode]

    def inputs(rng):
        return {"data": rng.standard_normal((steps, batch, classes)).astype(np.float32),
                "sequence_mask": np.ones((steps, batch), np.float32)}
    return [BenchmarkCase(f"ctc-greedy-{steps}", f"T {steps}, N {batch}, C {classes}", inputs,
                          {"ctc_merge_repeated": 1})]


UNIT = DialectUnit(
    op_type=OP, family="sequence",
    specs=(OpSpec(OP, 1, (Port("data", "T"), Port("sequence_mask", "T")), (Port("output", "T"),),
                  (Attribute("ctc_merge_repeated", "int", 1, (0, 1)),), {"T": TYPES}, _kernel_v1,
                  doc="Greedy CTC decoding (blank = last class), -1 padded.",
                  infer=_infer),),
    openvino=OpenVINO("CTCGreedyDecoder", versions=(1,),
                      factory=lambda ov, inputs, a: ov.opset1.ctc_greedy_decoder(*inputs, a["ctc_merge_repeated"]),
                      attributes=(AttributeMap("ctc_merge_repeated", "bool"),),
                      output_shapes=lambda i, a: [(np.shape(i["data"])[1], np.shape(i["data"])[0], 1, 1)]),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("the collapse (drop blanks and repeats, compact left) has no standard ONNX op; not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torch has no greedy CTC decoder op"),
    divergences=Absent("none measured"),
    benchmark=Benchmark(benchmark_cases),
)
