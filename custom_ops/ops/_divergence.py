"""What units share to write their divergence rows (custom_ops.unit.Divergence): a view of one call that
computes the facts several predicates need once, value helpers, and the rows about OpenVINO's CPU plugin
that several units declare with their own predicate (same id, same text: onnx_bridge.divergences shows
them as one row naming every op that declares it)."""
from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np

from ..errors import OpError
from .._types import BFLOAT16, is_float
from ..unit import Case, Divergence

OV = "openvino-cpu"
INT32 = (-2**31, 2**31 - 1)


class Call:
    """One call of a unit's op as a predicate sees it: inputs by port name (numpy arrays, absent optional
    inputs left out) and attributes (defaults filled); `call["name"]` is an attribute or an input,
    `call.contract` the contract's outputs or its OpError, `call.memo` a place for shared facts."""

    def __init__(self, op: str, inputs: dict, attributes: dict):
        self.op = op
        self.inputs = {name: np.asarray(value) for name, value in inputs.items() if value is not None}
        self.attributes = dict(attributes)
        self.memo: dict = {}

    def __getitem__(self, name):
        return self.attributes[name] if name in self.attributes else self.inputs[name]

    @property
    def dtype(self) -> np.dtype:
        return self.inputs["data"].dtype

    @functools.cached_property
    def contract(self):
        from .. import unit_of
        try:
            return unit_of(self.op).newest.run(tuple(self.inputs.values()), self.attributes)
        except OpError as error:
            return error

    def with_attributes(self, **changed) -> "Call":
        return Call(self.op, self.inputs, {**self.attributes, **changed})


_LAST: list = [None]  # (inputs dict, attributes dict, their values' ids, Call) of the last call seen


def _call(op: str, inputs: dict, attributes: dict) -> Call:
    """The Call of (inputs, attributes), the same object while the same dicts come back (the divergence
    table asks every predicate of a case with the case's own dicts), so facts are computed once."""
    key = tuple(map(id, inputs.values())) + tuple(map(id, attributes.values()))
    last = _LAST[0]
    if last and last[0] is inputs and last[1] is attributes and last[2] == key and last[3].op == op:
        return last[3]
    call = Call(op, inputs, attributes)
    _LAST[0] = (inputs, attributes, key, call)
    return call


def on_call(op: str, result=bool) -> Callable:
    """Decorator: function(call) -> the unit's function(inputs, attributes) (a predicate: bool; an
    Outcome's outputs: result=tuple)."""
    def wrap(function: Callable[[Call], object]) -> Callable:
        @functools.wraps(function)
        def on_inputs(inputs: dict, attributes: dict):
            return result(function(_call(op, inputs, attributes)))
        return on_inputs
    return wrap


def examples(ports) -> Callable:
    """ex(**values) -> Case: an example with inputs (by port name, in `ports`' order) and attributes."""
    def ex(**values) -> Case:
        return Case("example", tuple(values.get(port) for port in ports),
                    {k: v for k, v in values.items() if k not in ports})
    return ex


def fact(function: Callable[[Call], object]) -> Callable[[Call], object]:
    """Compute a fact of a call once (several predicates share it)."""
    @functools.wraps(function)
    def cached(call: Call):
        if function.__name__ not in call.memo:
            call.memo[function.__name__] = function(call)
        return call.memo[function.__name__]
    return cached


# Values --------------------------------------------------------------------------------------------

def py(array) -> list:
    """Elements as Python numbers (floats exact as float64; bfloat16/float16 included)."""
    array = np.asarray(array)
    return (array.astype(np.float64) if is_float(array.dtype) else array).reshape(-1).tolist()


def isnan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def values(call: Call, *names) -> list:
    return [v for name in names if name in call.inputs for v in py(call.inputs[name])]


def nan_in(call: Call, *names) -> bool:
    return is_float(call.dtype) and any(isnan(v) for v in values(call, *names))


def outside(numbers, low, high) -> bool:
    return any(not isnan(v) and not low <= v <= high for v in numbers)


def f32_exact(value: float) -> bool:
    """float32 holds value (NaN stays NaN; +-inf do not survive: the CPU turns f64 inf into +-FLT_MAX)."""
    return math.isnan(value) or (math.isfinite(value) and float(np.float32(value)) == value)


def wide_int_values(call: Call) -> bool:
    """i64/u64 values outside int32 in the data ports or the contract's first output."""
    if call.dtype not in (np.dtype(np.int64), np.dtype(np.uint64)):
        return False
    return outside(values(call, "data", "updates") + py(call.contract[0]), *INT32)


def f64_values_not_in_f32(call: Call) -> bool:
    """float64 data or result values float32 cannot hold exactly."""
    return not all(f32_exact(v) for v in values(call, "data", "updates") + py(call.contract[0]))


def bfloat16_data(call: Call) -> bool:
    return call.dtype == BFLOAT16


# Rows several units declare ----------------------------------------------------------------------------

def int64_as_int32(predicate: Callable, example) -> Divergence:
    return Divergence(
        "ov-int64-as-int32", OV, "value", "i64/u64 are processed in 32 bits",
        "The CPU plugin computes i64/u64 in int32: Parameter values keep their low 32 bits, sign-extended "
        "(i64 2^40+1 -> 1, u64 2^31+5 -> 18446744071562067973, i64 2^31+5 -> -2147483643); Unique of "
        "[2^40+1, 2^40, 2^40+1] gives [0, 1]. Cases whose inputs and outputs stay in int32 are exact.",
        predicate, example)


def uint32_as_int32(predicate: Callable, example) -> Divergence:
    return Divergence(
        "ov-uint32-as-int32", OV, "value", "u32 values >= 2^31 compared as int32",
        "Measured: SEU max of u32 2^31+5 and 2^30 gives 2^30; u32 mean of [2^31+2, 2^31, 2^31+4] gives "
        "3579139416 (the contract 2147483650); sorted Unique puts 2^31+1 before 1. none/sum/prod on u32 "
        "are bit-exact.",
        predicate, example)


def f64_as_f32(predicate: Callable, example) -> Divergence:
    return Divergence(
        "ov-f64-as-f32", OV, "value", "f64 is processed in f32",
        "The CPU plugin computes f64 in f32: 0.1 -> 0.10000000149, 1e300 and inf -> 3.4028234663852886e+38, "
        "ReduceL2 [0.1, 0.2] -> 0.22360680997371674; Unique merges 0.1 and 0.1+1e-12. Values f32 holds "
        "exactly, and whole-number arithmetic below 2^24, are exact.",
        predicate, example)


def uint32_high_values(call: Call) -> bool:
    """u32 values >= 2**31 in data/updates (where a unit's CPU kernel compares or averages them as int32)."""
    return call.dtype == np.uint32 and outside(values(call, "data", "updates"), 0, INT32[1])
