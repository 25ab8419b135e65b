"""ScatterUpdate-3 (OpenVINO): replace whole slices of data along `axis` at the given indices.

data[..., indices[m, ..., p], ...] = updates[..., m, ..., p, ...]; index values in [0, d-1]; the last
duplicate wins.
"""
from __future__ import annotations

import numpy as np

from custom_ops.errors import OpError

from custom_ops import _checks as check
from custom_ops.unit import (Absent, Benchmark, BenchmarkCase, Case, DialectUnit, Example, OpSpec, OpenVINO, Port,
                             same_as_input)
from custom_ops._types import DATA_TYPES, INTEGER_TYPES

from .. import _generate as gen

from ._divergences import SCATTER_UPDATE
from ._openvino import refuse_crashing_inputs, same_shape_as_data

OP = "ScatterUpdate"
_LOOP_SLICE_BYTES = 64 * 1024  # per-slice copies beat a gather + scatter from about this size


def validate(data, indices, updates, axis):
    data, indices, updates = (check.as_array(OP, n, v) for n, v in
                              (("data", data), ("indices", indices), ("updates", updates)))
    check.data_type(OP, "data", data)
    check.integer_type(OP, "indices", indices)
    if updates.dtype != data.dtype:
        raise OpError(OP, "input 'updates'", "element type must equal data's", value=str(updates.dtype),
                      allowed=str(data.dtype))
    if data.ndim == 0:
        raise OpError(OP, "input 'data'", "must have rank >= 1", value=data.shape, allowed="rank >= 1")
    axis = check.scalar_axis(OP, axis, data.ndim)
    expected = data.shape[:axis] + indices.shape + data.shape[axis + 1:]
    if updates.shape != expected:
        raise OpError(OP, "input 'updates'", "shape must be data.shape[:axis] + indices.shape + "
                      "data.shape[axis+1:]", value=updates.shape, allowed=expected)
    check.index_range(OP, "indices", indices, data.shape[axis], allow_negative=False, axis=axis)
    return data, indices, updates, axis


def scatter_update(data, indices, updates, axis, *, inplace=False):
    data, indices, updates, axis = validate(data, indices, updates, axis)
    out = data if inplace and data.flags.writeable else data.copy()
    if indices.size == 0:
        return out
    flat_indices = indices.reshape(-1).astype(np.intp)
    # Keep only the last occurrence of each index: unique over the reversed sequence.
    targets, first_in_reversed = np.unique(flat_indices[::-1], return_index=True)
    sources = flat_indices.size - 1 - first_in_reversed
    slices = updates.reshape(data.shape[:axis] + (flat_indices.size,) + data.shape[axis + 1:])
    if slices.nbytes // flat_indices.size >= _LOOP_SLICE_BYTES:
        # Big slices: copy each winning slice once, straight from updates (a fancy-index gather would
        # first copy them all into a temporary).
        lead = (slice(None),) * axis
        for target, source in zip(targets.tolist(), sources.tolist()):
            out[lead + (target,)] = slices[lead + (source,)]
        return out
    if targets.size != flat_indices.size:
        slices = np.take(slices, sources, axis=axis)
    else:
        targets = flat_indices
    out[(slice(None),) * axis + (targets,)] = slices
    return out


def _kernel_v3(data, indices, updates, axis, *, inplace=False):
    return (scatter_update(data, indices, updates, axis, inplace=inplace),)


# Generated and invalid cases ----------------------------------------------------------------------------

def cases(rng: np.random.Generator, count: int = 40) -> list[Case]:
    """`count` generated cases (differential tests, conformance): every element type and attribute value in
    the first few, then shapes, values and special ingredients drawn from `rng`."""
    return [_generated(rng, k) for k in range(count)]


def _generated(rng, k: int) -> Case:
    """Case k of the generated sequence (types cycled, see custom_ops.ops._generate)."""
    dtype = gen.cycle(k, DATA_TYPES)
    index_type = gen.cycle(k, INTEGER_TYPES, 2)
    rank = int(rng.choice([1, 2, 2, 3]))
    data_shape = gen.shape(rng, rank)
    axis = int(rng.integers(-rank, rank))
    a = axis % rank
    d = data_shape[a]
    index_rank = int(rng.choice([0, 1, 1, 1, 2]))
    index_shape = tuple(int(n) for n in rng.integers(1, 4, index_rank)) if d else (0,)
    indices = gen.indices(rng, index_type, index_shape, d, negative=False)
    gen.invalidate(rng, indices, d, allow_negative=False)  # sometimes one index out of range
    ingredients = gen.ingredients(rng, dtype)
    updates_shape = data_shape[:a] + index_shape + data_shape[a + 1:]
    data = gen.values(rng, dtype, data_shape, **ingredients)
    updates = gen.values(rng, dtype, updates_shape, **ingredients)
    return Case(f"{k:04d}", (data, indices, updates, gen.axis_value(rng, k, axis, rank, 3)))


def _case_tags(inputs: dict, attributes: dict) -> set[str]:
    """"duplicates" when an index value repeats (several slices written to one place)."""
    flat = np.asarray(inputs["indices"]).reshape(-1)
    return {"duplicates"} if np.unique(flat).size < flat.size else set()


def bad_cases() -> list[tuple[Case, str]]:
    f32, z4 = np.float32, np.zeros(4, np.float32)

    def case(name, data=z4, indices=(0,), updates=(1.0,), axis=0):
        return Case(name, (np.asarray(data), np.asarray(indices), np.asarray(updates, np.asarray(data).dtype),
                           np.asarray(axis)))
    return [
        (case("negative_index", indices=[-1]), "index out of range"),
        (case("index_d", indices=[4]), "index out of range"),
        (case("updates_shape", data=np.zeros((3, 4), f32), indices=[0, 1], updates=np.zeros((2, 3))),
         "input 'updates'"),
        (case("axis_out_of_range", axis=np.uint8(3)), "input 'axis'"),
    ]


def examples(large: bool = False) -> list[Example]:
    """OpenVINO's specification example, with its documented output (the performance shape, 1.5 GB of
    updates, is left out)."""
    data = np.arange(15, dtype=np.float32).reshape(3, 5)
    expected = data.copy()
    expected[:, 0], expected[:, 2] = 1, [1, 1, 2]
    return [Example(Case("su-axis1", (data, np.array([0, 2]), np.array([[1, 1], [1, 1], [1, 2]], np.float32),
                                      np.array(1))), (expected,), "OpenVINO spec: columns 0 and 2 replaced")]


# Benchmark -------------------------------------------------------------------------------------------------

#: (data shape, indices shape) per mode; full: batch 250 instead of the seed's 1000 (its updates: 1.5 GB).
_BENCH_SHAPES = {"full": ((250, 256, 10, 15), (125, 20)), "quick": ((10, 64, 10, 15), (25, 4)),
                 "tiny": ((2, 6, 2, 3), (3, 2))}


def benchmark_cases(mode: str) -> list:
    data_shape, index_shape = _BENCH_SHAPES[mode]
    updates_shape = data_shape[:1] + index_shape + data_shape[2:]

    def inputs(rng):
        return dict(data=rng.standard_normal(data_shape, dtype=np.float32),
                    indices=rng.integers(0, data_shape[1], index_shape).astype(np.int64),
                    updates=rng.standard_normal(updates_shape, dtype=np.float32), axis=np.array(1, np.int64))
    note = f"batch {data_shape[0]} instead of the seed's 1000: its updates would be 1.5 GB" if mode == "full" else ""
    return [BenchmarkCase("scatter-update", f"axis 1: data {'x'.join(map(str, data_shape))}, idx "
                          f"{'x'.join(map(str, index_shape))}", inputs, stock=True, note=note)]


def _bench_native(case, inputs):
    """ScatterND scatters along axis 0 only: timed on the same data with the axis already moved to the front
    (no Transposes), i.e. the single native op doing this scatter's work."""
    from onnx import helper
    axis, rank = int(inputs["axis"]), inputs["indices"].ndim
    data = np.ascontiguousarray(np.moveaxis(inputs["data"], axis, 0))
    updates = np.ascontiguousarray(np.moveaxis(inputs["updates"], list(range(axis, axis + rank)), list(range(rank))))
    feeds = {"data": data, "indices": inputs["indices"][..., None].astype(np.int64), "updates": updates}
    node = helper.make_node("ScatterND", list(feeds), ["output"])
    return [node], feeds, [], "ScatterND-18 (axis pre-moved to 0)", lambda outputs: [np.moveaxis(outputs[0], 0, axis)]


def _bench_torch(case, inputs):
    import torch
    axis, data = int(inputs["axis"]), torch.from_numpy(inputs["data"])
    shape = inputs["data"].shape[:axis] + (-1,) + inputs["data"].shape[axis + 1:]
    flat_indices = torch.from_numpy(inputs["indices"]).reshape(-1)
    updates = torch.from_numpy(inputs["updates"]).reshape(shape)
    return lambda: [torch.index_copy(data, axis, flat_indices, updates).numpy()], "index_copy"


def _bench_numpy(case, inputs):
    axis, data = int(inputs["axis"]), inputs["data"]

    def run():
        out = data.copy()
        out[(slice(None),) * axis + (inputs["indices"],)] = inputs["updates"]
        return [out]
    return run, "copy + fancy index"


BENCHMARK = Benchmark(benchmark_cases, table=True, native=_bench_native, torch=_bench_torch, numpy=_bench_numpy,
                      targets=lambda cases: [("lowered graph <= 1.3x the single native op", (c.id, "lowered"),
                                              (c.id, "native"), 1.3, {}) for c in cases],
                      memory_limit=3.0)

UNIT = DialectUnit(
    op_type=OP, family="scatter",
    specs=(OpSpec(OP, 3, (Port("data", "T"), Port("indices", "T_IND"), Port("updates", "T"), Port("axis", "T_AXIS")),
                  (Port("output", "T"),), (),
                  {"T": DATA_TYPES, "T_IND": check.INTEGER_TYPES, "T_AXIS": check.INTEGER_TYPES},
                  _kernel_v3, doc="Replace slices of data along axis; indices in [0, d-1]; last wins.",
                  infer=same_as_input(0)),),
    openvino=OpenVINO(
        "ScatterUpdate", versions=(3,),
        factory=lambda ov, inputs, attributes: ov.opset3.scatter_update(*inputs),
        constant_inputs=("axis",), output_shapes=same_shape_as_data,
        refuse=lambda inputs, attributes: refuse_crashing_inputs(OP, inputs)),
    cases=cases, bad_cases=bad_cases,
    lowering="converters.lowering.scatter_update",
    raising=Absent("no standard ONNX op replaces whole slices at indices (ScatterND needs expanded indices)"),
    torch="onnx_bridge.torch.scatter_update",
    divergences=SCATTER_UPDATE,
    benchmark=BENCHMARK,
    inplace_first=True,
    index_input=(1, 0, 3),
    case_tags=_case_tags,
    examples=examples,
)
