"""StringTensorUnpack-15 (OpenVINO): a string tensor -> begins, ends (i32, shaped like data) and symbols (u8, 1-D).

Element i's UTF-8 bytes are symbols[begins[i]:ends[i]]; the strings are laid out one after another in
row-major order (begins[0] = 0, begins[i + 1] = ends[i]), as OpenVINO's reference and CPU plugin do. ONNX
carries the data as tensor(string) (custom_ops/ops/string/_common.py: the mapping); a string with a NUL
character is refused (onnxruntime-extensions would have cut it there), so is more than 2^31 - 1 bytes in all.
"""
from __future__ import annotations

import numpy as np

from custom_ops.errors import OpError
from custom_ops.unit import Absent, Case, DialectUnit, Divergence, OpenVINO, OpSpec, Port

from ._common import STRING, case_id, input_shape, random_shape, random_strings, strings, text_of

OP = "StringTensorUnpack"
MAX_BYTES = 2 ** 31 - 1     # begins/ends are i32


def string_tensor_unpack(data) -> tuple:
    text = text_of(OP, "data", data)
    encoded = []
    for index, value in enumerate(text.reshape(-1)):
        if not isinstance(value, str):
            raise OpError(OP, "input 'data'", f"element {index} is not a string", value=type(value).__name__,
                          allowed="str")
        if "\0" in value:
            raise OpError(OP, "input 'data'", f"element {index} contains a NUL character (onnxruntime-extensions "
                          "cuts Python op strings there)", value=value)
        try:
            encoded.append(value.encode("utf-8"))
        except UnicodeEncodeError as error:
            raise OpError(OP, "input 'data'", f"element {index} is not valid Unicode text ({error.reason})",
                          value=ascii(value)) from None
    lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
    ends = np.cumsum(lengths)
    if ends.size and ends[-1] > MAX_BYTES:
        raise OpError(OP, "input 'data'", "more bytes than i32 offsets address", value=int(ends[-1]),
                      allowed=f"<= {MAX_BYTES}")
    begins = ends - lengths
    symbols = np.frombuffer(b"".join(encoded), np.uint8).copy()
    return begins.astype(np.int32).reshape(text.shape), ends.astype(np.int32).reshape(text.shape), symbols


def _kernel_v15(data):
    return string_tensor_unpack(data)


def _infer(ctx) -> None:
    from onnx import TensorProto, helper
    shape = input_shape(ctx)
    ctx.set_output_type(0, helper.make_tensor_type_proto(TensorProto.INT32, shape))
    ctx.set_output_type(1, helper.make_tensor_type_proto(TensorProto.INT32, shape))
    ctx.set_output_type(2, helper.make_tensor_type_proto(TensorProto.UINT8, [None]))


def _factory(ov, inputs, attributes):
    from openvino import opset15
    return opset15.string_tensor_unpack(inputs[0])


def cases(rng: np.random.Generator) -> list:
    out = []
    for index in range(12):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        shape = random_shape(index, r)
        out.append(Case(case_id(OP, index, shape), (random_strings(r, shape),)))
    return out


def bad_cases() -> list:
    """(NUL characters and lone surrogates are refused too, but a session never hands them to the kernel:
    onnx_bridge.InferenceSession refuses NUL in string inputs, onnxruntime cannot encode surrogates.)"""
    return [(Case("not_text", (np.asarray([1, 2], np.int32),)), "element type")]


def _empty(inputs, attributes) -> bool:
    return np.size(inputs["data"]) == 0


DIVERGENCES = (
    Divergence("ov-stringtensorunpack-empty-dynamic", "openvino-cpu", "rejects", "empty input of dynamic shape",
               "The CPU plugin fails on an empty string tensor (a zero dimension) when the input's shape is "
               "dynamic ('Cannot get dims for non static shape'); OpenVINO's reference and the contract give "
               "empty begins/ends and no symbols (a static shape runs in the CPU plugin too).",
               _empty, Case("example", (strings([], (0, 2)),))),
)


UNIT = DialectUnit(
    op_type=OP, family="string",
    specs=(OpSpec(OP, 15, (Port("data", "T_STR"),),
                  (Port("begins", "T_IDX"), Port("ends", "T_IDX"), Port("symbols", "T_U8")), (),
                  {"T_STR": (STRING,), "T_IDX": (np.dtype(np.int32),), "T_U8": (np.dtype(np.uint8),)},
                  _kernel_v15, doc="A string tensor -> begins, ends and the UTF-8 symbols.", infer=_infer),),
    openvino=OpenVINO("StringTensorUnpack", versions=(15,), factory=_factory,
                      output_shapes=lambda i, a: [np.shape(i["data"]), np.shape(i["data"]), None],
                      notes="OpenVINO string <-> ONNX tensor(string) (UTF-8); strings with NUL refused"),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("standard ONNX has no op from strings to their bytes"),
    raising=Absent("no standard ONNX pattern computes string bytes"),
    torch=Absent("torch has no string tensors"),
    divergences=DIVERGENCES,
    benchmark=Absent("not benchmarked: no native onnxruntime counterpart"),
)
