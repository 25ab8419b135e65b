"""ScatterElementsUpdate-3 and -12 (OpenVINO), exactly as docs/dialect.md section 2 defines them.

Each element of `updates` goes to its own index with the `axis` coordinate replaced by the matching
`indices` value. Reductions none/sum/prod/min/max/mean; use_init_val decides whether data takes part.
"""
from __future__ import annotations

import math

import numpy as np

from custom_ops.errors import OpError

from custom_ops import _checks as check
from custom_ops.unit import (Absent, Attribute, AttributeMap, Benchmark, BenchmarkCase, Case, DialectUnit, Example,
                             OpSpec, OpenVINO, Port, same_as_input)
from custom_ops._types import DATA_TYPES, INTEGER_TYPES, compute_dtype, highest, is_bool, is_integer, lowest

from .. import _generate as gen

from ._divergences import SCATTER_ELEMENTS_UPDATE
from ._openvino import refuse_crashing_inputs, same_shape_as_data

OP = "ScatterElementsUpdate"
REDUCTIONS = ("none", "sum", "prod", "min", "max", "mean")
_UFUNCS = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


def neutral_value(reduction: str, dtype):
    """Start value of a touched position when use_init_val=0 (OpenVINO's reduction_neutral_value)."""
    if reduction in ("sum", "mean"):
        return 0
    if reduction == "prod":
        return 1
    return highest(dtype) if reduction == "min" else lowest(dtype)


def validate(data, indices, updates, axis, reduction, use_init_val):
    """Check everything before any write; return (arrays..., normalised axis, reduction, use_init_val)."""
    data, indices, updates = (check.as_array(OP, n, v) for n, v in
                              (("data", data), ("indices", indices), ("updates", updates)))
    reduction = check.choice(OP, "reduction", reduction, REDUCTIONS)
    use_init_val = check.flag(OP, "use_init_val", use_init_val)
    check.data_type(OP, "data", data)
    check.integer_type(OP, "indices", indices)
    if updates.dtype != data.dtype:
        raise OpError(OP, "input 'updates'", "element type must equal data's", value=str(updates.dtype),
                      allowed=str(data.dtype))
    if reduction == "mean" and is_bool(data.dtype):
        raise OpError(OP, "attribute 'reduction'", "mean is not defined for bool data", value="mean",
                      allowed="none, sum, prod, min, max")
    rank = data.ndim
    if rank == 0:
        raise OpError(OP, "input 'data'", "must have rank >= 1", value=data.shape, allowed="rank >= 1")
    axis = check.scalar_axis(OP, axis, rank)
    if indices.shape != updates.shape:
        raise OpError(OP, "input 'updates'", "shape must equal indices' shape", value=updates.shape,
                      allowed=indices.shape)
    if indices.ndim != rank:
        raise OpError(OP, "input 'indices'", f"rank must equal data's rank {rank}", value=indices.shape,
                      allowed=f"rank {rank}")
    for dim, (have, limit) in enumerate(zip(indices.shape, data.shape)):
        if dim != axis and have > limit:
            raise OpError(OP, "input 'indices'", f"dimension {dim} exceeds data's", value=indices.shape,
                          allowed=f"<= {data.shape} except on axis {axis}")
    check.index_range(OP, "indices", indices, data.shape[axis], allow_negative=True, axis=axis)
    return data, indices, updates, axis, reduction, use_init_val


def target_positions(data_shape, indices: np.ndarray, axis: int) -> np.ndarray:
    """Flat (C-order) position in data of every element of updates, same shape as indices."""
    strides = np.cumprod((data_shape[1:] + (1,))[::-1])[::-1]
    positions = check.normalized_indices(indices, data_shape[axis])
    positions *= strides[axis]
    for dim, extent in enumerate(indices.shape):
        if dim != axis and extent > 1:
            shape = [1] * indices.ndim
            shape[dim] = extent
            positions += (np.arange(extent, dtype=np.intp) * strides[dim]).reshape(shape)
    return positions


def scatter_elements_update(data, indices, updates, axis, reduction="none", use_init_val=1, *,
                            inplace=False):
    """The kernel. With inplace=True a C-contiguous `data` of a natively computed type is overwritten."""
    data, indices, updates, axis, reduction, use_init_val = validate(
        data, indices, updates, axis, reduction, use_init_val)
    work_dtype = compute_dtype(data.dtype)
    reuse = inplace and work_dtype == data.dtype and data.flags.c_contiguous and data.flags.writeable
    out = data if reuse else np.array(data, dtype=work_dtype, order="C")
    if indices.size:
        flat = out.reshape(-1)
        positions = target_positions(data.shape, indices, axis).reshape(-1)
        values = updates.astype(work_dtype, copy=False).reshape(-1)
        if reduction == "none":
            np.put(flat, positions, values)  # sequential: the last duplicate wins
        elif reduction == "mean":
            _mean(flat, positions, values, use_init_val, (data.shape, indices, axis))
        else:
            if not use_init_val:
                flat[positions] = neutral_value(reduction, data.dtype)
            with np.errstate(invalid="ignore"):  # NaN in min/max propagates by design
                _UFUNCS[reduction].at(flat, positions, values)  # sequential, in the type (wraps)
    return out if out.dtype == data.dtype else out.astype(data.dtype)


def _update_counts(data_shape, indices: np.ndarray, axis: int, positions: np.ndarray) -> np.ndarray:
    """For every update, how many updates target its position (same shape as positions).

    Counted densely over the sub-box of data the indices can reach (indices' shape with the axis dim
    widened to data's) when that box is small, otherwise by sorting.
    """
    box = indices.shape[:axis] + (data_shape[axis],) + indices.shape[axis + 1:]
    if math.prod(box) <= 16 * positions.size + 65536:
        in_box = target_positions(box, indices, axis).reshape(-1)
        return np.bincount(in_box, minlength=math.prod(box))[in_box]
    _, inverse, counts = np.unique(positions, return_inverse=True, return_counts=True)
    return counts[inverse]


def _mean(flat: np.ndarray, positions: np.ndarray, values: np.ndarray, use_init_val: int,
          scatter: tuple) -> None:
    """scatter: (data shape, indices, axis), for counting the updates per position."""
    if not is_integer(flat.dtype):
        if not use_init_val:
            flat[positions] = 0
        np.add.at(flat, positions, values)  # sequential sum starting from data (or 0)
        counts = _update_counts(*scatter, positions) + use_init_val
        # Gather, divide, scatter: duplicates of a position write the same quotient.
        flat[positions] = flat[positions] / counts.astype(flat.dtype)
        return
    # Integers: exact sum (no wrap), floor division.
    touched, inverse, counts = np.unique(positions, return_inverse=True, return_counts=True)
    counts += use_init_val
    start = flat[touched] if use_init_val else np.zeros(0, flat.dtype)
    magnitude = max((abs(int(a.min())) for a in (values, start) if a.size), default=0)
    magnitude = max(magnitude, max((abs(int(a.max())) for a in (values, start) if a.size), default=0))
    exact = np.int64 if magnitude * int(counts.max()) < 2**63 else object
    sums = np.zeros(len(touched), dtype=exact)
    np.add.at(sums, inverse, values.astype(exact))
    if use_init_val:
        sums += start.astype(exact)
    flat[touched] = np.asarray(sums // counts.astype(exact)).astype(flat.dtype)


def _kernel_v3(data, indices, updates, axis, *, inplace=False):
    return (scatter_elements_update(data, indices, updates, axis, inplace=inplace),)


def _kernel_v12(data, indices, updates, axis, reduction="none", use_init_val=1, *, inplace=False):
    return (scatter_elements_update(data, indices, updates, axis, reduction, use_init_val, inplace=inplace),)


_INPUTS = (Port("data", "T"), Port("indices", "T_IND"), Port("updates", "T"), Port("axis", "T_AXIS"))
_OUTPUTS = (Port("output", "T"),)
_TYPES = {"T": DATA_TYPES, "T_IND": check.INTEGER_TYPES, "T_AXIS": check.INTEGER_TYPES}

_SPECS = (
    OpSpec(OP, 3, _INPUTS, _OUTPUTS, (), _TYPES, _kernel_v3,
           doc="Scatter updates at indices along axis; last duplicate wins.", infer=same_as_input(0)),
    OpSpec(OP, 12, _INPUTS, _OUTPUTS,
           (Attribute("reduction", "string", "none", REDUCTIONS),
            Attribute("use_init_val", "int", 1, (0, 1), short="init")),
           _TYPES, _kernel_v12,
           doc="Scatter with reduction none/sum/prod/min/max/mean; use_init_val=0 starts touched "
               "positions from the reduction's neutral value.", infer=same_as_input(0)),
)


# Generated and invalid cases ----------------------------------------------------------------------------

def cases(rng: np.random.Generator, count: int = 40) -> list[Case]:
    """`count` generated cases (differential tests, conformance): every element type and attribute value in
    the first few, then shapes, values and special ingredients drawn from `rng`."""
    return [_generated(rng, k) for k in range(count)]


def _generated(rng, k: int) -> Case:
    """Case k of the generated sequence (types and reductions cycled, see custom_ops.ops._generate)."""
    dtype, reduction = gen.latin(k, DATA_TYPES, REDUCTIONS)
    block, position = divmod(k, len(DATA_TYPES))
    use_init_val = 1 - (position // 7 + block // len(REDUCTIONS)) % 2
    index_type = gen.cycle(k, INTEGER_TYPES, 3)
    rank = int(rng.choice([1, 2, 2, 3, 3, 4]))
    data_shape = gen.shape(rng, rank)
    axis = int(rng.integers(-rank, rank))
    a = axis % rank
    d = data_shape[a]
    shape = [int(rng.integers(1, n + 1)) if n else 0 for n in data_shape]
    shape[a] = int(rng.integers(1, 2 * d + 2)) if d else 0  # longer than d: duplicates
    if rng.random() < 0.05:
        shape[int(rng.integers(0, rank))] = 0
    negative = rng.random() < 0.5
    indices = gen.indices(rng, index_type, shape, d, negative)
    gen.invalidate(rng, indices, d, allow_negative=True)  # sometimes one index out of range
    ingredients = gen.ingredients(rng, dtype)
    data = gen.values(rng, dtype, data_shape, **ingredients)
    updates = gen.values(rng, dtype, tuple(shape), **ingredients)
    return Case(f"{k:04d}", (data, indices, updates, gen.axis_value(rng, k, axis, rank, 5)),
                {"reduction": reduction, "use_init_val": use_init_val})


def _case_tags(inputs: dict, attributes: dict) -> set[str]:
    """"duplicates" when several updates reach one position (shapes the contract rejects: no tag)."""
    data, indices, axis = (np.asarray(inputs[name]) for name in ("data", "indices", "axis"))
    try:
        a = int(axis.reshape(-1)[0]) % data.ndim
        positions = target_positions(data.shape, indices, a).reshape(-1)
    except (IndexError, ValueError, TypeError, OverflowError, ZeroDivisionError):
        return set()
    return {"duplicates"} if np.unique(positions).size < positions.size else set()


def bad_cases() -> list[tuple[Case, str]]:
    f32, z4 = np.float32, np.zeros(4, np.float32)

    def case(name, data=z4, indices=(0,), updates=(1.0,), axis=0, **attributes):
        return Case(name, (np.asarray(data), np.asarray(indices), np.asarray(updates, np.asarray(data).dtype),
                           np.asarray(axis)), attributes)
    return [
        (case("index_d", indices=[4]), "index out of range"),
        (case("index_below_minus_d", indices=[-5]), "index out of range"),
        (case("updates_shape", indices=[0, 1]), "input 'updates'"),
        (case("indices_rank", data=np.zeros((3, 4), f32), indices=[0, 1], updates=[1.0, 2.0]), "input 'indices'"),
        (case("axis_rank", axis=1), "input 'axis'"),
        (case("unknown_reduction", reduction="avg"), "attribute 'reduction'"),
        (case("use_init_val_2", use_init_val=2), "attribute 'use_init_val'"),
        (case("mean_of_bool", data=np.zeros(4, bool), updates=[True], reduction="mean"), "mean is not defined"),
    ]


def examples(large: bool = False) -> list[Example]:
    """OpenVINO's specification examples and ONNX's ScatterElements examples in the dialect, with their
    documented outputs; the seeds' performance shape (large)."""
    A, f32 = np.array, np.float32

    def example(name, data, indices, updates, axis, attributes=None, expected=None, description=""):
        return Example(Case(name, (data, indices, updates, A(axis)), attributes or {}),
                       None if expected is None else (expected,), description)
    documented = [
        example("seu-sum-init1", A([2, 3, 4, 6], f32), A([1, 0, 0, -2, -1, 2]), A([10, 20, 30, 40, 70, 60], f32), 0,
                {"reduction": "sum", "use_init_val": 1}, A([52, 13, 104, 76], f32),
                "OpenVINO spec: sum with use_init_val=1, negative indices"),
        example("seu-sum-init0", A([2, 3, 4, 6], f32), A([1, 0, 0, 2, 3, 2]), A([10, 20, 30, 40, 70, 60], f32), 0,
                {"reduction": "sum", "use_init_val": 0}, A([50, 10, 100, 70], f32),
                "OpenVINO spec: sum with use_init_val=0"),
        example("seu-none-axis1", np.zeros((3, 4), f32), A([[1, 2], [0, 3]]), A([[11, 12], [13, 14]], f32), 1,
                {"reduction": "none"}, A([[0, 11, 12, 0], [13, 0, 0, 14], [0, 0, 0, 0]], f32),
                "OpenVINO spec: reduction none along axis 1"),
        example("seu-sum-axis1", np.ones((3, 4), f32), A([[1, 1], [0, 3]]), A([[11, 12], [13, 14]], f32), 1,
                {"reduction": "sum"}, A([[1, 24, 1, 1], [14, 1, 1, 15], [1, 1, 1, 1]], f32),
                "OpenVINO spec: sum along axis 1 with a duplicate"),
        example("seu-prod-axis1", np.full((3, 4), 2, f32), A([[1, 1], [0, 3]]), A([[11, 12], [13, 14]], f32), 1,
                {"reduction": "prod"}, A([[2, 264, 2, 2], [26, 2, 2, 28], [2, 2, 2, 2]], f32),
                "OpenVINO spec: prod along axis 1 with a duplicate"),
        example("onnx-example1", np.zeros((3, 3), f32), A([[1, 0, 2], [0, 2, 1]]),
                A([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], f32), 0, None,
                A([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]], f32),
                "ONNX ScatterElements example 1 in the dialect"),
        example("onnx-example2", A([[1.0, 2.0, 3.0, 4.0, 5.0]], f32), A([[1, 3]]), A([[1.1, 2.1]], f32), 1, None,
                A([[1.0, 1.1, 3.0, 2.1, 5.0]], f32), "ONNX ScatterElements example 2 in the dialect"),
    ]
    if not large:
        return documented
    rng = np.random.default_rng(1)  # ~50 MB
    return documented + [
        example("seu-perf-shape", rng.standard_normal((1000, 256, 7, 7)).astype(f32),
                rng.integers(-1000, 1000, (125, 20, 7, 6)), rng.standard_normal((125, 20, 7, 6)).astype(f32), 0,
                {"reduction": "sum"}, description="ScatterElementsUpdate on the seeds' performance shape")]


# Benchmark -------------------------------------------------------------------------------------------------

#: (data shape, indices shape) per benchmark mode: full is the seed configuration.
_BENCH_SHAPES = {"full": ((1000, 256, 7, 7), (125, 20, 7, 6)), "quick": ((100, 32, 7, 7), (25, 4, 7, 6)),
                 "tiny": ((6, 4, 3, 2), (9, 2, 3, 2))}
_ONNX_REDUCTIONS = {"none": "none", "sum": "add", "prod": "mul", "min": "min", "max": "max"}


def benchmark_cases(mode: str) -> list:
    data_shape, index_shape = _BENCH_SHAPES[mode]

    def inputs(rng):
        return dict(data=rng.standard_normal(data_shape, dtype=np.float32),
                    indices=rng.integers(0, data_shape[0], index_shape).astype(np.int64),
                    updates=rng.standard_normal(index_shape, dtype=np.float32), axis=np.array(0, np.int64))
    shape = "x".join(map(str, data_shape)), "x".join(map(str, index_shape))
    return [BenchmarkCase(f"seu-{reduction}-init{init}",
                          f"{reduction}, use_init_val={init}: data {shape[0]}, idx {shape[1]}", inputs,
                          {"reduction": reduction, "use_init_val": init},
                          stock=init == 1 and reduction in ("none", "sum"))
            for reduction in REDUCTIONS for init in (1, 0)]


def _bench_native(case, inputs):
    from onnx import helper
    reduction = case.attributes.get("reduction", "none")
    if reduction == "mean":
        raise NotImplementedError("no mean reduction in ScatterElements-18")
    if reduction != "none" and not case.attributes.get("use_init_val", 1):
        raise NotImplementedError("ScatterElements-18 has no use_init_val=0")
    feeds = {k: inputs[k] for k in ("data", "indices", "updates")}
    node = helper.make_node("ScatterElements", list(feeds), ["output"], axis=int(inputs["axis"]),
                            reduction=_ONNX_REDUCTIONS[reduction])
    return [node], feeds, [], f"ScatterElements-18 {_ONNX_REDUCTIONS[reduction]}", None


def _bench_torch(case, inputs):
    import torch
    axis, reduction = int(inputs["axis"]), case.attributes.get("reduction", "none")
    data, indices, updates = (torch.from_numpy(inputs[k]) for k in ("data", "indices", "updates"))
    if reduction == "none":
        return lambda: [torch.scatter(data, axis, indices, updates).numpy()], "scatter"
    reduce = {"sum": "sum", "prod": "prod", "min": "amin", "max": "amax", "mean": "mean"}[reduction]
    include_self = bool(case.attributes.get("use_init_val", 1))
    return (lambda: [torch.scatter_reduce(data, axis, indices, updates, reduce, include_self=include_self).numpy()],
            f"scatter_reduce {reduce}")


def _bench_numpy(case, inputs):
    reduction, axis, data = case.attributes.get("reduction", "none"), int(inputs["axis"]), inputs["data"]
    if reduction == "mean":
        raise NotImplementedError("no numpy idiom for a scatter mean")
    ufunc = _UFUNCS.get(reduction)
    neutral = neutral_value(reduction, data.dtype) if ufunc and not case.attributes.get("use_init_val", 1) else None
    grids = list(np.ogrid[tuple(slice(n) for n in inputs["indices"].shape)])
    grids[axis] = inputs["indices"]
    index = tuple(grids)

    def run():
        out = data.copy()
        if ufunc is None:
            out[index] = inputs["updates"]
        else:
            if neutral is not None:
                out[index] = neutral
            ufunc.at(out, index, inputs["updates"])
        return [out]
    return run, "copy + fancy index" if ufunc is None else f"copy + {ufunc.__name__}.at"


def _bench_targets(cases) -> list:
    """The scatter targets: sum/none through the bridge within 1.5x native ScatterElements, mean within 2x
    (its lowering 2.5x), other lowerings within 1.3x, >= 10x faster than stock marshaling."""
    other_init = "reference op computes use_init_val=1"
    rows = []
    for column in ("bridge", "bridge_pyop"):
        for reduction in ("none", "sum"):
            for init in (1, 0):
                rows.append(("SEU sum/none through the bridge <= 1.5x native ScatterElements",
                             (f"seu-{reduction}-init{init}", column), (f"seu-{reduction}-init1", "native"), 1.5,
                             {"note": other_init if init == 0 and reduction == "sum" else ""}))
        for init in (1, 0):
            rows.append(("SEU mean through the bridge <= 2x native ScatterElements add",
                         (f"seu-mean-init{init}", column), ("seu-sum-init1", "native"), 2.0, {}))
    for case in cases:
        reduction, init = case.attributes["reduction"], case.attributes["use_init_val"]
        if reduction == "mean":
            rows.append(("mean lowering <= 2.5x native ScatterElements add", (case.id, "lowered"),
                         ("seu-sum-init1", "native"), 2.5, {}))
        else:
            rows.append(("lowered graph <= 1.3x the single native op", (case.id, "lowered"),
                         (f"seu-{reduction}-init1", "native"), 1.3,
                         {"note": other_init if init == 0 and reduction != "none" else ""}))
    for column in ("bridge", "bridge_pyop"):
        for reduction in ("sum", "none"):
            case_id = f"seu-{reduction}-init1"
            rows.append(("SEU through the bridge >= 10x faster than stock marshaling", (case_id, column),
                         (case_id, "stock"), 10.0, {"speedup": True}))
    return rows


BENCHMARK = Benchmark(benchmark_cases, table=True, native=_bench_native, torch=_bench_torch, numpy=_bench_numpy,
                      targets=_bench_targets, memory_limit=3.0)

UNIT = DialectUnit(
    op_type=OP, family="scatter", specs=_SPECS,
    openvino=OpenVINO(
        "ScatterElementsUpdate", versions=(3, 12),
        factory=lambda ov, inputs, attributes: ov.opset12.scatter_elements_update(
            *inputs, attributes["reduction"], attributes["use_init_val"]),
        attributes=(AttributeMap("reduction", "lower"), AttributeMap("use_init_val", "bool")),
        constant_inputs=("axis",), output_shapes=same_shape_as_data,
        notes="version 3 is version 12 with its defaults (none, 1)",
        refuse=lambda inputs, attributes: refuse_crashing_inputs(OP, inputs)),
    cases=cases, bad_cases=bad_cases,
    lowering="converters.lowering.scatter_elements_update",
    raising="converters.raising.scatter_elements",
    torch="onnx_bridge.torch.scatter_elements_update",
    divergences=SCATTER_ELEMENTS_UPDATE,
    benchmark=BENCHMARK,
    inplace_first=True,
    index_input=(1, 0, 3),
    case_tags=_case_tags,
    examples=examples,
)
