"""StringTensorPack-15 (OpenVINO): begins, ends (i32/i64, one shape) and symbols (u8, 1-D) -> a string tensor.

Element i is the text whose UTF-8 bytes are symbols[begins[i]:ends[i]]. As OpenVINO validates them,
begins and ends are each in ascending order (row-major, repeats allowed: symbols may be skipped or shared),
begins[0] >= 0 and the last end <= len(symbols); the contract also requires begins[i] <= ends[i] (OpenVINO's
reference is undefined there). ONNX carries the output as tensor(string) (_common.py: the mapping), so each
range must be UTF-8 text without a NUL byte.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import Absent, Case, DialectUnit, Divergence, OpenVINO, OpSpec, Port

from ._common import STRING, case_id, input_shape, random_shape, random_strings
from .string_tensor_unpack import string_tensor_unpack

OP = "StringTensorPack"
INDEX_TYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _ranges(begins, ends, symbols) -> tuple:
    begins, ends = check.as_array(OP, "begins", begins), check.as_array(OP, "ends", ends)
    symbols = check.as_array(OP, "symbols", symbols)
    check.data_type(OP, "begins", begins, INDEX_TYPES)
    check.data_type(OP, "ends", ends, (begins.dtype,))
    check.data_type(OP, "symbols", symbols, (np.dtype(np.uint8),))
    if begins.shape != ends.shape:
        raise OpError(OP, "input 'ends'", "must have the shape of begins", value=ends.shape, allowed=begins.shape)
    if symbols.ndim != 1:
        raise OpError(OP, "input 'symbols'", "must be 1-D", value=symbols.shape, allowed="rank 1")
    first, last = begins.reshape(-1).astype(np.int64), ends.reshape(-1).astype(np.int64)
    for name, values in (("begins", first), ("ends", last)):      # OpenVINO's own validation
        if (np.diff(values) < 0).any():
            index = int(np.argmax(np.diff(values) < 0)) + 1
            raise OpError(OP, f"input '{name}'", f"must be in ascending order (element {index} is below the one "
                          "before)", value=values[index - 1:index + 1].tolist(), allowed="non-decreasing")
    for name, bad in (("begins", first < 0), ("ends", last < first), ("ends", last > symbols.size)):
        if bad.any():
            index = int(np.argmax(bad))
            raise OpError(OP, f"input '{name}'", f"range {index} is not inside symbols",
                          value=(int(first[index]), int(last[index])), allowed=f"0 <= begin <= end <= {symbols.size}")
    return begins.shape, first, last, symbols


def string_tensor_pack(begins, ends, symbols) -> np.ndarray:
    shape, first, last, symbols = _ranges(begins, ends, symbols)
    data = symbols.tobytes()
    out = np.empty(first.size, STRING)
    for index, (begin, end) in enumerate(zip(first.tolist(), last.tolist())):
        raw = data[begin:end]
        if b"\0" in raw:
            raise OpError(OP, "input 'symbols'", f"string {index} contains a NUL byte (onnxruntime-extensions "
                          "cuts Python op strings there)", value=list(raw))
        try:
            out[index] = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise OpError(OP, "input 'symbols'", f"string {index} is not UTF-8 ({error.reason}); ONNX "
                          "tensor(string) holds UTF-8 text", value=list(raw)) from None
    return out.reshape(shape)


def _kernel_v15(begins, ends, symbols):
    return (string_tensor_pack(begins, ends, symbols),)


def _infer(ctx) -> None:
    from onnx import TensorProto, helper
    ctx.set_output_type(0, helper.make_tensor_type_proto(TensorProto.STRING, input_shape(ctx)))


def _factory(ov, inputs, attributes):
    from openvino import opset15
    return opset15.string_tensor_pack(*inputs)


def cases(rng: np.random.Generator) -> list:
    """Packed string tensors (Unpack's layout), with strings skipped or repeated, or empty ranges."""
    out = []
    for index in range(12):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        shape = random_shape(index, r)
        begins, ends, symbols = string_tensor_unpack(random_strings(r, shape))
        if index % 3 == 1 and begins.size:      # strings skipped and repeated (still ascending)
            pick = np.sort(r.integers(0, begins.size, begins.size))
            begins, ends = begins.reshape(-1)[pick].reshape(shape), ends.reshape(-1)[pick].reshape(shape)
        if index % 3 == 2:                      # some strings cut to empty ranges
            ends = np.where(r.random(begins.shape) < 0.4, begins, ends)
        dtype = INDEX_TYPES[index % 2]
        out.append(Case(case_id(OP, index, shape), (np.asarray(begins, dtype), np.asarray(ends, dtype), symbols)))
    return out


def bad_cases() -> list:
    i32 = lambda v: np.asarray(v, np.int32)  # noqa: E731
    u8 = lambda v: np.asarray(v, np.uint8)  # noqa: E731
    return [
        (Case("beyond_symbols", (i32([0, 1]), i32([1, 4]), u8([97, 98, 99]))), "not inside symbols"),
        (Case("negative_begin", (i32([-1]), i32([1]), u8([97]))), "not inside symbols"),
        (Case("end_before_begin", (i32([2]), i32([1]), u8([97, 98]))), "not inside symbols"),
        (Case("descending", (i32([1, 0]), i32([2, 1]), u8([97, 98]))), "ascending order"),
        (Case("not_utf8", (i32([0]), i32([2]), u8([97, 255]))), "not UTF-8"),
        (Case("split_character", (i32([0]), i32([1]), u8([195, 169]))), "not UTF-8"),
        (Case("nul", (i32([0]), i32([3]), u8([97, 0, 98]))), "NUL"),
        (Case("shapes_differ", (i32([0, 0]), i32([0]), u8([97]))), "shape of begins"),
        (Case("mixed_index_types", (i32([0]), np.asarray([1], np.int64), u8([97]))), "element type"),
        (Case("symbols_2d", (i32([0]), i32([1]), u8([[97]]))), "1-D"),
    ]


def _invalid(inputs, attributes) -> bool:
    """Ranges OpenVINO's validation refuses, or a range ending before it begins."""
    first = np.asarray(inputs["begins"]).reshape(-1).astype(np.int64)
    last = np.asarray(inputs["ends"]).reshape(-1).astype(np.int64)
    return bool((np.diff(first) < 0).any() or (np.diff(last) < 0).any() or (first < 0).any()
                or (last < first).any() or (last > np.size(inputs["symbols"])).any())


def refuse(inputs, attributes) -> None:
    """Invalid ranges: OpenVINO's CPU plugin may copy memory from outside symbols (see the divergence)."""
    if _invalid(inputs, attributes):
        string_tensor_pack(inputs["begins"], inputs["ends"], inputs["symbols"])   # raises, naming the range


DIVERGENCES = (
    Divergence("ov-stringtensorpack-ranges-unchecked-on-cached-shapes", "openvino-cpu", "accepts",
               "ranges unchecked when the input shapes repeat",
               "The CPU plugin checks begins/ends (ascending, inside symbols) in its shape inference, which it "
               "caches by input shapes: a compiled model that ran before with the same shapes takes invalid "
               "ranges unchecked and copies bytes from outside symbols into the strings; the contract refuses "
               "them every time (so does the CPU plugin on shapes it has not seen).",
               _invalid, Case("example", (np.asarray([0, 1], np.int32), np.asarray([1, 4], np.int32),
                                          np.asarray([97, 98, 99], np.uint8)))),
)


UNIT = DialectUnit(
    op_type=OP, family="string",
    specs=(OpSpec(OP, 15, (Port("begins", "T_IDX"), Port("ends", "T_IDX"), Port("symbols", "T_U8")),
                  (Port("output", "T_STR"),), (),
                  {"T_IDX": INDEX_TYPES, "T_U8": (np.dtype(np.uint8),), "T_STR": (STRING,)},
                  _kernel_v15, doc="begins, ends and UTF-8 symbols -> a string tensor.", infer=_infer),),
    openvino=OpenVINO("StringTensorPack", versions=(15,), factory=_factory,
                      output_shapes=lambda i, a: [np.shape(i["begins"])], refuse=refuse,
                      notes="OpenVINO string <-> ONNX tensor(string) (UTF-8); ranges outside symbols, "
                            "non-UTF-8 and NUL bytes refused"),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("standard ONNX has no op from bytes to strings"),
    raising=Absent("no standard ONNX pattern builds strings from bytes"),
    torch=Absent("torch has no string tensors"),
    divergences=DIVERGENCES,
    benchmark=Absent("not benchmarked: no native onnxruntime counterpart"),
)
