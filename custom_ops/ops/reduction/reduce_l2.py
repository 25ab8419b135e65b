"""ReduceL2-4 (OpenVINO): sqrt of the sum of squares over `axes`.

Empty axes reduce nothing: the result is |x|. Floats accumulate in float32 (float16/bfloat16 too) or
float64; integers are summed exactly and the root is rounded half away from zero, then cast back (wraps).
"""
from __future__ import annotations

import math
import string

import ml_dtypes
import numpy as np

from custom_ops.errors import OpError

from custom_ops import _checks as check
from custom_ops.unit import (Absent, Attribute, AttributeMap, Benchmark, BenchmarkCase, Case, DialectUnit, Example,
                             OpSpec, OpenVINO, Port)
from custom_ops._types import DATA_TYPES, INTEGER_TYPES, compute_dtype, is_float, is_integer
from .. import _generate as gen
from ._divergences import REDUCE_L2

OP = "ReduceL2"
SUPPORTED_TYPES = tuple(t for t in DATA_TYPES if t != np.bool_)


def normalized_axes(axes, rank: int) -> tuple[int, ...]:
    if not isinstance(axes, np.ndarray) and not np.size(axes):
        axes = np.zeros(0, np.int64)  # a Python [] means "no axes", not float64
    axes = check.as_array(OP, "axes", axes)
    check.integer_type(OP, "axes", axes)
    if axes.ndim > 1:
        raise OpError(OP, "input 'axes'", "must be a scalar or 1-D", value=axes.shape, allowed="shape [] or [n]")
    result = []
    for value in (int(v) for v in axes.reshape(-1)):
        if rank == 0 or not -rank <= value < rank:
            raise OpError(OP, "input 'axes'", f"axis out of range for rank {rank}", value=value,
                          allowed=f"[{-rank}, {rank - 1}]" if rank else "no axes for a scalar")
        if value % rank in result:
            raise OpError(OP, "input 'axes'", "duplicate axis", value=axes.tolist(), allowed="each axis once")
        result.append(value % rank)
    return tuple(sorted(result))


def _sum_of_squares(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """sum(x*x) over axes in x's dtype, without a squared temporary (einsum)."""
    letters = string.ascii_letters[: x.ndim]
    kept = "".join(c for i, c in enumerate(letters) if i not in axes)
    return np.einsum(f"{letters},{letters}->{kept}", x, x)


def reduce_l2(data, axes, keep_dims=0):
    data = check.as_array(OP, "data", data)
    check.data_type(OP, "data", data, SUPPORTED_TYPES)
    keep_dims = check.flag(OP, "keep_dims", keep_dims)
    axes = normalized_axes(axes, data.ndim)
    if not axes:
        return np.abs(data)
    if is_integer(data.dtype):
        result = _integer_l2(data, axes)
    else:
        work = data.astype(compute_dtype(data.dtype), copy=False)
        result = np.sqrt(_sum_of_squares(work, axes)).astype(data.dtype)
    if keep_dims:
        result = result.reshape([1 if i in axes else n for i, n in enumerate(data.shape)])
    return np.asarray(result)


def _integer_l2(data: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    count = math.prod(data.shape[a] for a in axes)
    magnitude = max(abs(int(data.min())), abs(int(data.max()))) if data.size else 0
    bound = magnitude * magnitude * max(count, 1)
    if bound < 2**53:  # float64 sums of integer squares are exact here
        sums = _sum_of_squares(data.astype(np.float64), axes).astype(np.int64)
        root = np.floor(np.sqrt(sums)).astype(np.int64)
        root -= root * root > sums
        root += (root + 1) * (root + 1) <= sums
        root += sums - root * root > root  # round half away from zero: S - r^2 > r
        return _wrap(root, data.dtype)
    squares = data.astype(object) ** 2
    sums = np.add.reduce(squares, axis=axes) if axes else squares
    sums = np.asarray(sums, dtype=object)
    roots = np.vectorize(_rounded_isqrt, otypes=[object])(sums)
    return _wrap(roots, data.dtype)


def _rounded_isqrt(value: int) -> int:
    root = math.isqrt(int(value))
    return root + 1 if value - root * root > root else root


def _wrap(values: np.ndarray, dtype) -> np.ndarray:
    """Cast non-negative integers to dtype modulo 2**bits (C++ static_cast semantics)."""
    bits = np.dtype(dtype).itemsize * 8
    if values.dtype == object:
        values = np.asarray([int(v) % (1 << bits) for v in values.reshape(-1)],
                            dtype=np.uint64).reshape(values.shape)
    return values.astype(dtype)


def _kernel_v4(data, axes, keep_dims=0):
    return (reduce_l2(data, axes, keep_dims),)


def _infer(ctx) -> None:
    """Output type of data; its shape where axes is a constant and data's rank known."""
    import onnx
    from onnx import helper, numpy_helper
    data = ctx.get_input_type(0)
    if data is None:  # unknown (e.g. inside a function body)
        return
    out = onnx.TypeProto()
    out.tensor_type.elem_type = data.tensor_type.elem_type
    axes = ctx.get_input_data(1) if ctx.get_num_inputs() > 1 else None
    if axes is not None and data.tensor_type.HasField("shape"):
        dims = list(data.tensor_type.shape.dim)
        rank = len(dims)
        reduced = {int(a) % rank for a in numpy_helper.to_array(axes).reshape(-1)} if rank else set()
        keep = ctx.get_attribute("keep_dims")
        keep = helper.get_attribute_value(keep) if keep is not None else 0
        out.tensor_type.shape.SetInParent()
        for i, dim in enumerate(dims):
            if i in reduced:
                if keep:
                    out.tensor_type.shape.dim.add().dim_value = 1
            else:
                out.tensor_type.shape.dim.add().CopyFrom(dim)
    ctx.set_output_type(0, out)


def _output_shapes(inputs: dict, attributes: dict) -> list:
    data, axes = np.asarray(inputs["data"]), np.asarray(inputs["axes"])
    axes = axes.reshape(-1).tolist() if axes.dtype.kind in "iu" else []
    axes = {a % data.ndim for a in axes} if data.ndim else set()
    return [tuple(1 if d in axes else n for d, n in enumerate(data.shape)
                  if attributes["keep_dims"] or d not in axes)]


def _accumulation_ulps(inputs: dict, attributes: dict) -> int:
    """ulps allowed on float results: every runtime sums the squares in its own order. The bound: n terms
    of relative error u each, halved by the square root, plus the final roundings; integers, bool and
    empty axes (|x|, no arithmetic) are exact."""
    data, axes = np.asarray(inputs["data"]), np.asarray(inputs.get("axes", np.zeros(0))).reshape(-1)
    if not is_float(data.dtype) or not axes.size:
        return 0
    count = math.prod(data.shape[int(a) % data.ndim] for a in axes) if data.ndim else 1
    unit = float(ml_dtypes.finfo(compute_dtype(data.dtype)).eps) / 2
    out_eps = float(ml_dtypes.finfo(data.dtype).eps)
    return 2 + math.ceil(max(count - 1, 0) * unit / out_eps)


def _prefer_custom_op(node, constants) -> str | None:
    if constants is not None and len(node.input) > 1 and node.input[1] and node.input[1] not in constants:
        return "axes fed at run time: its rank (scalar or 1-D) is checked by the op"
    return None


# Generated and invalid cases ----------------------------------------------------------------------------

def cases(rng: np.random.Generator, count: int = 40) -> list[Case]:
    """`count` generated cases (differential tests, conformance): every element type and attribute value in
    the first few, then shapes, values and special ingredients drawn from `rng`."""
    return [_generated(rng, k) for k in range(count)]


def _generated(rng, k: int) -> Case:
    """Case k of the generated sequence (types cycled, see custom_ops.ops._generate)."""
    dtype, keep_dims = gen.latin(k, gen.NON_BOOL, (0, 1))
    axes_type = gen.cycle(k, INTEGER_TYPES, 2)
    if rng.random() < 0.02:
        dtype = np.dtype(np.bool_)  # invalid
    rank = int(rng.choice([0, 1, 2, 2, 3, 3, 4]))
    shape = gen.shape(rng, rank, high=5)
    count = int(rng.integers(0, rank + 1)) if rng.random() < 0.15 or rank == 0 else int(rng.integers(1, rank + 1))
    axes = [int(a) for a in rng.permutation(rank)[:count]]
    signed = axes_type.kind == "i"
    axes = [a - rank if signed and rng.random() < 0.4 else a for a in axes]
    if rank and rng.random() < gen.INVALID_RATE:
        axes.append(axes[0] if axes else rank)  # a duplicate, or out of range: invalid
    axes_array = np.array(axes, axes_type)
    if len(axes) == 1 and rng.random() < 0.3:
        axes_array = axes_array.reshape(())
    data = gen.values(rng, dtype, shape, **gen.ingredients(rng, dtype))
    return Case(f"{k:04d}", (data, axes_array), {"keep_dims": keep_dims})


def bad_cases() -> list[tuple[Case, str]]:
    data = np.zeros((3, 4), np.float32)
    return [
        (Case("duplicate_axes", (data, np.array([1, -1]))), "duplicate axis"),
        (Case("axis_rank", (data, np.array([2]))), "axis out of range"),
        (Case("axis_below_minus_rank", (data, np.array([-3], np.int8))), "axis out of range"),
        (Case("axes_2d", (data, np.array([[1]]))), "must be a scalar or 1-D"),
        (Case("bool_data", (np.zeros((3, 4), bool), np.array([1]))), "input 'data'"),
        (Case("keep_dims_2", (data, np.array([1])), {"keep_dims": 2}), "attribute 'keep_dims'"),
    ]


def examples(large: bool = False) -> list[Example]:
    """The seeds' performance shape 6x12x10x24 (no documented output: every runtime runs it)."""
    data = np.random.default_rng(0).standard_normal((6, 12, 10, 24)).astype(np.float32)
    return [Example(Case("l2-perf-shape", (data, np.array([1, 3])), {"keep_dims": 1}),
                    description="ReduceL2 on the seeds' performance shape 6x12x10x24")]


# Benchmark -------------------------------------------------------------------------------------------------

_BENCH_SHAPES = {"full": ((6, 12, 10, 24), (64, 256, 56, 56)), "quick": ((6, 12, 10, 24), (8, 64, 28, 28)),
                 "tiny": ((2, 3, 4, 5), (3, 4, 5, 6))}


def benchmark_cases(mode: str) -> list:
    def build(shape):
        return lambda rng: dict(data=rng.standard_normal(shape, dtype=np.float32), axes=np.array([2, 3], np.int64))
    return [BenchmarkCase(f"reduce-l2-{name}", f"axes [2,3]: {'x'.join(map(str, shape))}", build(shape),
                          {"keep_dims": 0}, stock=True)
            for name, shape in zip(("seed", "large"), _BENCH_SHAPES[mode])]


def _bench_native(case, inputs):
    from onnx import helper, numpy_helper
    node = helper.make_node("ReduceL2", ["data", "axes"], ["output"], keepdims=case.attributes.get("keep_dims", 0),
                            noop_with_empty_axes=1)
    return ([node], {"data": inputs["data"]}, [numpy_helper.from_array(inputs["axes"].astype(np.int64), "axes")],
            "ReduceL2-18", None)


def _bench_torch(case, inputs):
    import torch
    data, dims = torch.from_numpy(inputs["data"]), tuple(int(x) for x in inputs["axes"])
    return lambda: [torch.linalg.vector_norm(data, 2, dim=dims).numpy()], "linalg.vector_norm"


def _bench_targets(cases) -> list:
    rows = [("lowered graph <= 1.3x the single native op", (c.id, "lowered"), (c.id, "native"), 1.3, {})
            for c in cases]
    return rows + [("ReduceL2 through the bridge <= 1.2x native", (c.id, column), (c.id, "native"), 1.2, {})
                   for c in cases for column in ("bridge", "bridge_pyop")]


BENCHMARK = Benchmark(benchmark_cases, table=True, native=_bench_native, torch=_bench_torch,
                      numpy=lambda case, inputs: ((lambda: [np.linalg.norm(inputs["data"], axis=tuple(
                          int(x) for x in inputs["axes"]))]), "linalg.norm"),
                      targets=_bench_targets)

UNIT = DialectUnit(
    op_type=OP, family="reduction",
    specs=(OpSpec(OP, 4, (Port("data", "T"), Port("axes", "T_IND")), (Port("output", "T"),),
                  (Attribute("keep_dims", "int", 0, (0, 1), short="keep"),),
                  {"T": SUPPORTED_TYPES, "T_IND": check.INTEGER_TYPES}, _kernel_v4,
                  doc="L2 norm over axes; empty axes give |x|; integers rounded half away from zero.",
                  infer=_infer),),
    openvino=OpenVINO(
        "ReduceL2", versions=(4,),
        factory=lambda ov, inputs, attributes: ov.opset4.reduce_l2(*inputs, attributes["keep_dims"]),
        attributes=(AttributeMap("keep_dims", "bool"),), constant_inputs=("axes",),
        output_shapes=_output_shapes),
    cases=cases, bad_cases=bad_cases,
    lowering="converters.lowering.reduce_l2",
    raising="converters.raising.reduce_l2",
    torch="onnx_bridge.torch.reduce_l2",
    divergences=REDUCE_L2,
    benchmark=BENCHMARK,
    prefer_custom_op=_prefer_custom_op,
    accumulation_ulps=_accumulation_ulps,
    examples=examples,
)
