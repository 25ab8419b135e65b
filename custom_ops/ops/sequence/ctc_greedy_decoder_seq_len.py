"""CTCGreedyDecoderSeqLen-6 (OpenVINO): greedy CTC decoding with per-batch lengths.

data [N, T, C] (float), sequence_length [N] (i32/i64), optional blank_index (a scalar or [1] of the
same type; default C - 1). Per batch the first sequence_length steps; per step the first class of
maximal score (std::max_element); blanks dropped; with merge_repeated a class equal to the previous
step's dropped. Outputs: decoded [N, T] padded with -1 (classes_index_type) and the decoded lengths [N]
(sequence_length_type). sequence_length must be in [0, T] (OpenVINO's reference reads past the data
otherwise).
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

OP = "CTCGreedyDecoderSeqLen"
INDEX_TYPES = (np.dtype(np.int32), np.dtype(np.int64))
ELEMENT_TYPES = ("i32", "i64")


def ctc_greedy_decoder_seq_len(data, sequence_length, blank_index=None, merge_repeated=1,
                               classes_index_type="i32", sequence_length_type="i32"):
    data = check.as_array(OP, "data", data)
    lengths = check.as_array(OP, "sequence_length", sequence_length)
    check.data_type(OP, "data", data, FLOAT_TYPES)
    check.data_type(OP, "sequence_length", lengths, INDEX_TYPES)
    if data.ndim != 3 or data.shape[2] < 1:
        raise OpError(OP, "input 'data'", "must have shape [N, T, C] with C >= 1", value=data.shape)
    batch, steps, classes = data.shape
    if lengths.shape != (batch,):
        raise OpError(OP, "input 'sequence_length'", "must be 1-D of size N", value=lengths.shape,
                      allowed=(batch,))
    if lengths.size and (lengths.min() < 0 or lengths.max() > steps):
        bad = lengths[(lengths < 0) | (lengths > steps)][0]
        raise OpError(OP, "input 'sequence_length'", "out of range", value=int(bad), allowed=f"[0, {steps}]")
    blank = classes - 1
    if blank_index is not None:
        blank_index = check.as_array(OP, "blank_index", blank_index)
        if blank_index.dtype != lengths.dtype:
            raise OpError(OP, "input 'blank_index'", "element type must equal sequence_length's",
                          value=str(blank_index.dtype), allowed=str(lengths.dtype))
        if blank_index.size != 1 or blank_index.ndim > 1:
            raise OpError(OP, "input 'blank_index'", "must be a scalar or a one-element 1-D tensor",
                          value=blank_index.shape, allowed="shape [] or [1]")
        blank = int(blank_index.reshape(()))
    merge = check.flag(OP, "merge_repeated", merge_repeated)
    types = [np.dtype(np.int32 if check.choice(OP, name, value, ELEMENT_TYPES) == "i32" else np.int64)
             for name, value in (("classes_index_type", classes_index_type),
                                 ("sequence_length_type", sequence_length_type))]
    valid = np.arange(steps)[None, :] < lengths.astype(np.int64)[:, None]
    best = first_max(data) if batch and steps else np.zeros((batch, steps), np.int64)
    decoded, counts = collapse(best, valid, blank, bool(merge))
    return decoded.astype(types[0]), counts.astype(types[1])


def _kernel_v6(data, sequence_length, blank_index=None, *, merge_repeated, classes_index_type,
               sequence_length_type):
    return ctc_greedy_decoder_seq_len(data, sequence_length, blank_index, merge_repeated, classes_index_type,
                                      sequence_length_type)


def _pyop_casts(attributes: dict):
    """The PyOp computes int64 outputs; an asked i32 is a Cast after it."""
    casts = {index: np.dtype(np.int32) for index, name in ((0, "classes_index_type"), (1, "sequence_length_type"))
             if attributes[name] == "i32"}
    return dict(attributes, classes_index_type="i64", sequence_length_type="i64"), casts


def _infer(ctx) -> None:
    from onnx import TensorProto, helper
    codes = []
    for name in ("classes_index_type", "sequence_length_type"):
        proto = ctx.get_attribute(name)
        value = helper.get_attribute_value(proto) if proto is not None else b"i32"
        value = value.decode() if isinstance(value, bytes) else value
        codes.append(TensorProto.INT32 if value == "i32" else TensorProto.INT64)
    ctx.set_output_type(0, helper.make_tensor_type_proto(codes[0], [None, None]))
    ctx.set_output_type(1, helper.make_tensor_type_proto(codes[1], [None]))


def cases(rng: np.random.Generator) -> list:
    out = []
    for index in range(24):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        batch, steps, classes = int(r.integers(1, 4)), int(r.integers(1, 9)), int(r.integers(1, 6))
        data = r.normal(size=(batch, steps, classes))
        if index % 3 == 0:
            data = data.round()
        itype = INDEX_TYPES[index % 2]
        lengths = r.integers(0, steps + 1, batch).astype(itype)
        inputs = [data.astype(np.float32), lengths]
        if index % 4:
            inputs.append(np.asarray(r.integers(0, classes), itype).reshape(() if index % 4 == 1 else (1,)))
        out.append(Case(f"ctc_seq_len_{index}", tuple(inputs),
                        {"merge_repeated": int(index % 2 == 0), "classes_index_type": ELEMENT_TYPES[index % 3 % 2],
                         "sequence_length_type": ELEMENT_TYPES[index % 5 % 2]}))
    return out


def bad_cases() -> list:
    data = np.zeros((2, 3, 4), np.float32)
    i32 = lambda v: np.asarray(v, np.int32)  # noqa: E731
    return [
        (Case("length_past_end", (data, i32([1, 4])), {}), "out of range"),
        (Case("negative_length", (data, i32([-1, 2])), {}), "out of range"),
        (Case("length_shape", (data, i32([1, 2, 3])), {}), "size N"),
        (Case("blank_type", (data, i32([1, 2]), np.asarray(1, np.int64)), {}), "blank_index"),
        (Case("blank_shape", (data, i32([1, 2]), i32([1, 2])), {}), "one-element"),
    ]


def benchmark_cases(mode: str) -> list:
    batch, steps, classes = {"full": (8, 100, 40), "quick": (8, 100, 40), "tiny": (2, 6, 4)}[mode]

    def inputs(rng):
        return {"data": rng.standard_normal((batch, steps, classes)).astype(np.float32),
                "sequence_length": rng.integers(steps // 2, steps + 1, batch).astype(np.int32)}
    return [BenchmarkCase(f"ctc-greedy-seq-len-{steps}", f"N {batch}, T {steps}, C {classes}", inputs,
                          {"merge_repeated": 1})]


UNIT = DialectUnit(
    op_type=OP, family="sequence",
    specs=(OpSpec(OP, 6, (Port("data", "T"), Port("sequence_length", "I"), Port("blank_index", "I", optional=True)),
                  (Port("decoded", "O1"), Port("decoded_length", "O2")),
                  (Attribute("merge_repeated", "int", 1, (0, 1)),
                   Attribute("classes_index_type", "string", "i32", ELEMENT_TYPES),
                   Attribute("sequence_length_type", "string", "i32", ELEMENT_TYPES)),
                  {"T": FLOAT_TYPES, "I": INDEX_TYPES, "O1": INDEX_TYPES, "O2": INDEX_TYPES}, _kernel_v6,
                  doc="Greedy CTC decoding with per-batch lengths and a blank index.", infer=_infer),),
    openvino=OpenVINO(
        "CTCGreedyDecoderSeqLen", versions=(6,),
        factory=lambda ov, inputs, a: ov.opset6.ctc_greedy_decoder_seq_len(
            inputs[0], inputs[1], (list(inputs) + [None])[2], a["merge_repeated"], a["classes_index_type"], a["sequence_length_type"]),
        attributes=(AttributeMap("merge_repeated", "bool"), AttributeMap("classes_index_type", "lower"),
                    AttributeMap("sequence_length_type", "lower")),
        output_shapes=lambda i, a: [np.shape(i["data"])[:2], np.shape(i["data"])[:1]]),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("the collapse (drop blanks and repeats, compact left) has no standard ONNX op; not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torch has no greedy CTC decoder op"),
    divergences=Absent("none measured"),
    pyop_outputs=lambda inputs: (np.dtype(np.int64), np.dtype(np.int64)),
    pyop_casts=_pyop_casts,
    benchmark=Benchmark(benchmark_cases),
)
