"""GatherTree-1 (OpenVINO): the complete beams of a beam search from the ids of each step and the parents.

step_ids, parent_ids: [MAX_TIME, BATCH, BEAM]; max_seq_len: [BATCH]; end_token: a scalar; all of type T.
For each (batch, beam) the beam is traced back from time min(MAX_TIME, max_seq_len[batch]) - 1 through
parent_ids; past that length, and past the first end_token of the traced beam, the output is end_token.
The contract (OpenVINO's specification): index values (parent_ids, max_seq_len) are integers; a parent
used for back-tracking must be in [0, BEAM - 1] and max_seq_len must not be negative (OpenVINO's CPU
plugin raises for the former and returns uninitialised memory for the latter). end_token is compared in T.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops._types import FLOAT_TYPES, INTEGER_TYPES
from custom_ops.errors import OpError
from custom_ops.unit import (Absent, Benchmark, BenchmarkCase, Case, DialectUnit, Divergence, OpenVINO, OpSpec, Port,
                             expected_shape_of, same_as_input)

OP = "GatherTree"
TYPES = INTEGER_TYPES + FLOAT_TYPES
PORTS = ("step_ids", "parent_ids", "max_seq_len", "end_token")


def _integral(name: str, array: np.ndarray) -> np.ndarray:
    """Index values as int64; floats must hold integers."""
    if array.dtype.kind == "f":
        wide = array.astype(np.float64)
        bad = ~np.isfinite(wide) | (wide != np.trunc(wide))
        if bad.any():
            raise OpError(OP, f"input '{name}'", "must hold integer values", value=float(wide[bad][0]),
                          allowed="integers")
        return wide.astype(np.int64)
    if array.dtype == np.uint64 and array.size and int(array.max()) > np.iinfo(np.int64).max:
        return np.minimum(array, np.iinfo(np.int64).max).astype(np.int64)  # clamped: only compared
    return array.astype(np.int64)


def validate(step_ids, parent_ids, max_seq_len, end_token):
    arrays = [check.as_array(OP, name, value) for name, value in
              zip(PORTS, (step_ids, parent_ids, max_seq_len, end_token))]
    step_ids, parent_ids, max_seq_len, end_token = arrays
    check.data_type(OP, "step_ids", step_ids, TYPES)
    for name, array in zip(PORTS[1:], arrays[1:]):
        if array.dtype != step_ids.dtype:
            raise OpError(OP, f"input '{name}'", "element type must equal step_ids'", value=str(array.dtype),
                          allowed=str(step_ids.dtype))
    if step_ids.ndim != 3:
        raise OpError(OP, "input 'step_ids'", "must have rank 3 [MAX_TIME, BATCH, BEAM]", value=step_ids.shape,
                      allowed="rank 3")
    if parent_ids.shape != step_ids.shape:
        raise OpError(OP, "input 'parent_ids'", "shape must equal step_ids'", value=parent_ids.shape,
                      allowed=step_ids.shape)
    if max_seq_len.shape != step_ids.shape[1:2]:
        raise OpError(OP, "input 'max_seq_len'", "must be 1-D of size BATCH", value=max_seq_len.shape,
                      allowed=step_ids.shape[1:2])
    if end_token.ndim != 0:
        raise OpError(OP, "input 'end_token'", "must be a scalar", value=end_token.shape, allowed="shape []")
    lengths = _integral("max_seq_len", max_seq_len)
    if lengths.size and lengths.min() < 0:
        raise OpError(OP, "input 'max_seq_len'", "must not be negative", value=int(lengths.min()),
                      allowed=">= 0")
    return step_ids, parent_ids, lengths, end_token


def _raise_parent(level: int, value, beam: int):
    raise OpError(OP, "input 'parent_ids'", f"parent beam out of range at time {level + 1}", value=int(value),
                  allowed=f"[0, {beam - 1}]")


def _trace_integer_parents(step_ids, parents, lengths, out) -> None:
    """Fills out[t, b, k] (t < lengths[b]) with the step id of beam k's ancestor at time t, integer parents
    (int64 [T, B, BEAM]). The ancestor maps of all times come from a doubling scan over time (log2 T gathers
    instead of T steps): maps[t] = the map to time t composed with the maps of the later times. A parent
    out of range is read as the beam itself by the scan; the first one the trace back follows (the
    latest time, then the first batch and beam) is then found and reported as the step by step trace does."""
    max_time, _, beam = parents.shape
    beams = np.arange(beam)
    read = np.arange(max_time - 1)[:, None, None] + 1 < lengths[None]   # [T-1, B, 1]: time t's beam read at t+1
    maps = np.broadcast_to(beams, parents.shape).copy()                 # the last time: the beam itself
    maps[:-1] = np.where(read & (parents[1:] >= 0) & (parents[1:] < beam), parents[1:], beams)
    shift = 1
    while shift < max_time:
        maps[:-shift] = np.take_along_axis(maps[:-shift], maps[shift:], axis=2)
        shift *= 2
    followed = np.take_along_axis(parents[1:], maps[1:], axis=2)       # the parent the trace reads at t + 1
    bad = read & ((followed < 0) | (followed >= beam))
    if bad.any():
        level = int(np.flatnonzero(bad.any(axis=(1, 2)))[-1])
        _raise_parent(level, followed[level][bad[level]][0], beam)
    active = np.arange(max_time)[:, None, None] < lengths[None]
    np.copyto(out, np.take_along_axis(step_ids, maps, axis=2), where=active)


def _trace_stepwise(step_ids, parent_ids, lengths, out) -> None:
    """_trace_integer_parents for parents of any type, one time step after the other (a float parent is
    checked to hold an integer where it is read)."""
    max_time, batch, beam = step_ids.shape
    rows = np.arange(batch)[:, None]
    beams = np.broadcast_to(np.arange(beam), (batch, beam))
    parent = beams.copy()                                           # the beam read at the current level
    for level in range(max_time - 1, -1, -1):
        active = level < lengths                                    # [BATCH, 1]
        source = np.where(level == lengths - 1, beams, parent)     # the last step reads the beam itself
        bad = active & ((source < 0) | (source >= beam))
        if bad.any():
            _raise_parent(level, source[bad][0], beam)
        source = np.where(active, source, 0)
        out[level] = np.where(active, step_ids[level, rows, source], out[level])
        if level:
            parent = np.where(active, _integral("parent_ids", parent_ids[level, rows, source]), parent)


def gather_tree(step_ids, parent_ids, max_seq_len, end_token):
    step_ids, parent_ids, lengths, end_token = validate(step_ids, parent_ids, max_seq_len, end_token)
    max_time = step_ids.shape[0]
    lengths = np.minimum(lengths, max_time)[:, None]              # [BATCH, 1]
    out = np.full(step_ids.shape, end_token, dtype=step_ids.dtype)
    if not step_ids.size:
        return out
    if parent_ids.dtype.kind in "iu":
        _trace_integer_parents(step_ids, _integral("parent_ids", parent_ids), lengths, out)
    else:
        _trace_stepwise(step_ids, parent_ids, lengths, out)
    finished = (out == end_token) & (np.arange(max_time)[:, None, None] < lengths[None])
    before = np.cumsum(finished, axis=0) - finished > 0             # an end_token at an earlier time
    out[before] = end_token
    return out


def _kernel_v1(step_ids, parent_ids, max_seq_len, end_token):
    return (gather_tree(step_ids, parent_ids, max_seq_len, end_token),)


# Cases ------------------------------------------------------------------------------------------------

#: Types the differential tests use: OpenVINO's CPU plugin refuses i8, u8 and bf16 (divergences below).
CASE_TYPES = ("int32", "int64", "float32", "float16", "float64", "int16", "uint16", "uint32", "uint64")


def cases(rng: np.random.Generator) -> list[Case]:
    out = []
    shapes = [(4, 2, 3), (1, 1, 1), (5, 3, 2), (3, 1, 4), (0, 2, 2), (2, 0, 3), (6, 2, 1)]
    for index, (shape, dtype) in enumerate(zip(shapes * 2, CASE_TYPES * 2)):
        max_time, batch, beam = shape
        step = rng.integers(0, 6, shape)
        parent = rng.integers(0, max(beam, 1), shape)
        lengths = rng.integers(1, max_time + 2, batch)  # 0: CPU divergence (below)
        end = rng.integers(0, 6)
        out.append(Case(f"{dtype}_{'x'.join(map(str, shape))}_{index}",
                        tuple(np.asarray(a).astype(dtype) for a in (step, parent, lengths, end))))
    return out


def bad_cases() -> list[tuple[Case, str]]:
    i32 = lambda *a: np.array(*a, dtype=np.int32)  # noqa: E731
    step = i32(np.zeros((2, 1, 2)))
    return [
        # the parents read at the last step are followed; those read at time 0 never are
        (Case("parent_out_of_range", (step, i32([[[0, 0]], [[0, 5]]]), i32([2]), i32(9))),
         "parent_ids"),
        (Case("negative_parent", (step, i32([[[0, 0]], [[-1, 0]]]), i32([2]), i32(9))), "parent_ids"),
        (Case("negative_length", (step, i32(np.zeros((2, 1, 2))), i32([-1]), i32(9))), "max_seq_len"),
        (Case("rank_2", (step[0], step[0], i32([2]), i32(9))), "rank 3"),
        (Case("end_token_1d", (step, step, i32([2]), i32([9]))), "end_token"),
        (Case("mixed_types", (step, step.astype(np.int64), i32([2]), i32(9))), "input 'parent_ids'"),
        (Case("fractional_length", (step.astype(np.float32), step.astype(np.float32),
                                    np.array([1.5], np.float32), np.float32(9))), "integer values"),
        (Case("bool", (step.astype(bool), step.astype(bool), np.array([1], bool), np.bool_(1))),
         "element type"),
    ]


# Divergences of OpenVINO's CPU plugin (2026.4, measured) ------------------------------------------------

_OV = "openvino-cpu"
_INT32 = (-2**31, 2**31 - 1)


def _values(inputs: dict):
    return [np.asarray(inputs[name]) for name in PORTS if name in inputs]


def _wide_integers(inputs, attributes) -> bool:
    return any(a.dtype in (np.int64, np.uint64, np.uint32) and a.size and
               (int(a.min()) < _INT32[0] or int(a.max()) > _INT32[1]) for a in _values(inputs))


def _f64_inexact(inputs, attributes) -> bool:
    return any(a.dtype == np.float64 and a.size and
               not np.array_equal(a.astype(np.float32).astype(np.float64), a, equal_nan=True)
               for a in _values(inputs))


def _zero_length(inputs, attributes) -> bool:
    step = np.asarray(inputs["step_ids"])
    return step.size > 0 and bool((np.asarray(inputs["max_seq_len"]) == 0).any())


def _negative_length(inputs, attributes) -> bool:
    return bool((np.asarray(inputs["max_seq_len"]).astype(np.float64) < 0).any())


def _fractional_length(inputs, attributes) -> bool:
    lengths = np.asarray(inputs["max_seq_len"]).astype(np.float64)
    return bool((lengths != np.trunc(lengths)).any())


def _unsupported_type(inputs, attributes) -> bool:
    from custom_ops._types import BFLOAT16
    return np.asarray(inputs["step_ids"]).dtype in (np.int8, np.uint8, BFLOAT16)


def _example(dtype, step, parent, lengths, end):
    return Case("example", tuple(np.asarray(a, dtype) for a in (step, parent, lengths, end)))


DIVERGENCES = (
    Divergence("ov-gathertree-zero-length", _OV, "value", "max_seq_len 0 leaves uninitialised memory",
               "The contract (and OpenVINO's spec: final_ids starts as end_token) gives end_token for every "
               "step of a batch whose max_seq_len is 0; the CPU plugin skips that batch and returns whatever "
               "its output buffer held (values like 198778784).",
               _zero_length, _example(np.int32, [[[5]]], [[[0]]], [0], 3)),
    Divergence("ov-gathertree-negative-length", _OV, "accepts", "negative max_seq_len is run",
               "The contract refuses a negative max_seq_len; the CPU plugin runs and returns uninitialised "
               "memory for that batch (int32 [-1]: -765518448, 32642, ...).",
               _negative_length, _example(np.int32, [[[5]]], [[[0]]], [-1], 3)),
    Divergence("ov-gathertree-fractional-length", _OV, "accepts", "fractional max_seq_len is truncated",
               "The contract requires integer values in max_seq_len and parent_ids (OpenVINO's spec: "
               "'inputs should have integer values only'); the CPU plugin truncates (2.7 -> 2, parent 1.7 -> 1).",
               _fractional_length, _example(np.float32, [[[2.5]], [[2.5]]], [[[0]], [[0]]], [1.5], 2.0)),
    Divergence("ov-gathertree-byte-bf16-rejected", _OV, "rejects", "int8, uint8, bfloat16 refused",
               "OpenVINO's spec allows any numeric type; the CPU plugin refuses i8, u8 and bf16 at compile "
               "time ('incorrect input/output data precision').",
               _unsupported_type, _example(np.int8, [[[1]]], [[[0]]], [1], 3)),
    Divergence("ov-gathertree-int64-as-int32", _OV, "value", "i64/u64/u32 values moved in 32 bits",
               "The CPU plugin computes i64/u64 in int32: step_ids i64 2^40+1 comes back as 1, u64 2^31+5 as "
               "18446744071562067973. Values within int32 are exact.",
               _wide_integers, _example(np.int64, [[[2**40 + 1]]], [[[0]]], [1], 5)),
    Divergence("ov-gathertree-f64-as-f32", _OV, "value", "f64 values moved in f32",
               "The CPU plugin computes f64 in f32: step_ids 0.1 comes back as 0.10000000149011612. Values "
               "f32 holds exactly are exact.",
               _f64_inexact, _example(np.float64, [[[0.1]]], [[[0]]], [1], 5)),
)


def benchmark_cases(mode: str) -> list:
    steps, batch, beam = {"full": (100, 8, 10), "quick": (100, 8, 10), "tiny": (5, 2, 3)}[mode]

    def inputs(rng):
        return {"step_ids": rng.integers(0, 50, (steps, batch, beam)).astype(np.int32),
                "parent_ids": rng.integers(0, beam, (steps, batch, beam)).astype(np.int32),
                "max_seq_len": rng.integers(steps // 2, steps + 1, batch).astype(np.int32),
                "end_token": np.array(1, np.int32)}
    return [BenchmarkCase(f"gather-tree-{steps}", f"T {steps}, N {batch}, beam {beam} int32", inputs)]


UNIT = DialectUnit(
    op_type=OP, family="sequence",
    specs=(OpSpec(OP, 1, tuple(Port(name, "T") for name in PORTS), (Port("final_ids", "T"),), (),
                  {"T": TYPES}, _kernel_v1, doc="Complete beams of a beam search, traced back through parents.",
                  infer=same_as_input(0)),),
    openvino=OpenVINO(
        "GatherTree", versions=(1,),
        factory=lambda ov, inputs, attributes: ov.opset1.gather_tree(*inputs),
        output_shapes=expected_shape_of("step_ids")),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("the back-tracking is a data-dependent gather chain over time: a Loop lowering is "
                    "possible but not written"),
    raising=Absent("standard ONNX has no beam back-tracking op to raise"),
    torch=Absent("torch has no gather_tree op to export"),
    divergences=DIVERGENCES,
    benchmark=Benchmark(benchmark_cases),
)
