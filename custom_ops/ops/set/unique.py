"""Unique-10 (OpenVINO): unique elements (or slices along `axis`) with first indices, inverse and counts.

-0.0 equals 0.0 and the first occurrence's value is kept; all NaNs are equal and sort last. sorted=1 gives
ascending (lexicographic for slices), sorted=0 the order of first occurrence.
"""
from __future__ import annotations

import numpy as np

from custom_ops.errors import OpError

from custom_ops import _checks as check
from custom_ops.unit import (Absent, Attribute, AttributeMap, Benchmark, BenchmarkCase, Case, DialectUnit, OpSpec,
                             OpenVINO, Port)
from custom_ops._types import DATA_TYPES, is_float

from .. import _generate as gen

from ._divergences import UNIQUE

OP = "Unique"
INDEX_TYPES = ("i64", "i32")
_NUMPY_INDEX = {"i64": np.dtype(np.int64), "i32": np.dtype(np.int32)}


def _codes(values: np.ndarray) -> np.ndarray:
    """Unsigned integers whose order and equality are the contract's for `values` (any shape).

    Floats: -0.0 -> +0.0, every NaN -> one code above +inf (all NaNs equal, sorted last), then the usual
    order-preserving map of IEEE bits (negative: all bits flipped; positive: sign bit set). Signed
    integers: sign bit flipped. bool and unsigned integers: as they are.
    """
    if is_float(values.dtype):
        wide = np.float64 if values.dtype == np.float64 else np.float32
        keys = values.astype(wide, order="C")  # a fresh array, changed in place below
        keys += wide(0.0)  # -0.0 + 0.0 == +0.0
        nan = np.isnan(keys)
        bits = keys.view(np.int64 if wide == np.float64 else np.int32)
        flip = bits >> (bits.itemsize * 8 - 1)
        flip |= np.iinfo(bits.dtype).min
        bits ^= flip
        codes = bits.view(np.uint64 if wide == np.float64 else np.uint32)
        if nan.any():
            codes[nan] = codes.dtype.type(np.iinfo(codes.dtype).max)  # above +inf's code
        return codes
    if values.dtype == np.bool_:
        return values.view(np.uint8)
    if values.dtype.kind == "i":
        unsigned = np.dtype(f"u{values.dtype.itemsize}")
        return values.view(unsigned) ^ unsigned.type(1 << (values.dtype.itemsize * 8 - 1))
    return values


def _sorted_rows(codes: np.ndarray):
    """(order, keys in that order): a stable sort of the rows of `codes` (n x width), lexicographic.

    Rows are packed into one uint64 per row when their value ranges fit, with the row number in the low
    bits when it also fits (one plain sort, unique keys, so stable); otherwise a stable argsort of the
    packed key; otherwise np.lexsort over the columns. Returned keys compare equal iff rows are equal.
    """
    count, width = codes.shape
    low = codes.min(axis=0).astype(np.uint64)
    spans = codes.max(axis=0).astype(np.uint64) - low
    widths = [int(span).bit_length() for span in spans]
    index_bits = (count - 1).bit_length()
    if sum(widths) > 64:
        order = np.lexsort(codes.T[::-1])  # stable: first column most significant
        return order, codes[order]
    packed = np.zeros(count, np.uint64)
    for column, bits in enumerate(widths):
        if bits:
            packed <<= np.uint64(bits)
            packed |= codes[:, column].astype(np.uint64) - low[column]
    if sum(widths) + index_bits <= 64:
        packed <<= np.uint64(index_bits)
        packed |= np.arange(count, dtype=np.uint64)
        packed.sort()
        order = (packed & np.uint64((1 << index_bits) - 1)).astype(np.intp)
        packed >>= np.uint64(index_bits)
        return order, packed
    order = np.argsort(packed, kind="stable")
    return order, packed[order]


def unique(data, axis=None, sorted=1, index_element_type="i64", count_element_type="i64"):
    data = check.as_array(OP, "data", data)
    check.data_type(OP, "data", data)
    sorted_ = check.flag(OP, "sorted", sorted)
    index_type = _NUMPY_INDEX[check.choice(OP, "index_element_type", index_element_type, INDEX_TYPES)]
    count_type = _NUMPY_INDEX[check.choice(OP, "count_element_type", count_element_type, INDEX_TYPES)]
    if axis is None:
        slices = data.reshape(-1, 1)
    else:
        if data.ndim == 0:
            raise OpError(OP, "input 'axis'", "given for a 0-D input", value=int(np.asarray(axis)),
                          allowed="no axis")
        axis = check.scalar_axis(OP, axis, data.ndim)
        slices = np.moveaxis(data, axis, 0).reshape(data.shape[axis], data.size // max(data.shape[axis], 1)
                                                        if data.shape[axis] else 0)
    count = slices.shape[0]
    for name, dtype in (("index_element_type", index_type), ("count_element_type", count_type)):
        if count > np.iinfo(dtype).max:
            raise OpError(OP, f"attribute '{name}'", f"{count} elements do not fit", value="i32",
                          allowed="i64")
    first, inverse, counts = _group(slices, sorted_)
    if axis is None:
        values = data.reshape(-1)[first]
    else:
        values = np.take(data, first, axis=axis)
    return (values, first.astype(index_type, copy=False), inverse.astype(index_type, copy=False),
            counts.astype(count_type, copy=False))


def _group(slices: np.ndarray, sorted_: int):
    """first index, inverse and counts of the unique rows of `slices` (n x width)."""
    count, width = slices.shape
    if count == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    if width == 0:  # slices of size 0 are all equal
        return np.zeros(1, np.int64), np.zeros(count, np.int64), np.array([count], np.int64)
    order, keys = _sorted_rows(_codes(slices))
    starts = np.empty(count, dtype=bool)
    starts[0] = True
    different = keys[1:] != keys[:-1]
    starts[1:] = different.any(axis=1) if different.ndim == 2 else different
    first = order[starts]  # stable sort: the first element of a group is its first occurrence
    counts = np.diff(np.append(np.flatnonzero(starts), count))
    inverse = np.empty(count, np.int64)
    group = np.cumsum(starts)
    group -= 1
    inverse[order] = group
    if not sorted_:
        by_occurrence = np.argsort(first, kind="stable")
        rank = np.empty_like(by_occurrence)
        rank[by_occurrence] = np.arange(by_occurrence.size)
        first, counts, inverse = first[by_occurrence], counts[by_occurrence], rank[inverse]
    return first.astype(np.int64), inverse, counts


def _kernel_v10(data, axis=None, sorted=1, index_element_type="i64", count_element_type="i64"):
    return unique(data, axis, sorted, index_element_type, count_element_type)


def _infer(ctx) -> None:
    """unique: data's type, 1-D without axis; indices, reverse_indices, counts: 1-D of the asked type."""
    import onnx
    from onnx import TensorProto, helper
    data = ctx.get_input_type(0)
    if data is None:  # unknown (e.g. inside a function body)
        return
    values = onnx.TypeProto()
    values.tensor_type.elem_type = data.tensor_type.elem_type
    if ctx.get_num_inputs() < 2 or not ctx.has_input(1):
        values.tensor_type.shape.dim.add()  # 1-D of unknown length
    ctx.set_output_type(0, values)
    kinds = {"i32": TensorProto.INT32, "i64": TensorProto.INT64}
    for index, name in ((1, "index_element_type"), (2, "index_element_type"), (3, "count_element_type")):
        if index < ctx.get_num_outputs():
            proto = ctx.get_attribute(name)
            value = helper.get_attribute_value(proto).decode() if proto is not None else "i64"
            out = onnx.TypeProto()
            out.tensor_type.elem_type = kinds.get(value, TensorProto.INT64)
            out.tensor_type.shape.dim.add()
            ctx.set_output_type(index, out)


def _output_shapes(inputs: dict, attributes: dict) -> list:
    """reverse_indices has one entry per element (or slice along axis); the other lengths are data's."""
    data = np.asarray(inputs["data"])
    axis = inputs.get("axis")
    slices = data.size if axis is None else data.shape[int(np.asarray(axis).reshape(-1)[0]) % data.ndim]
    return [None, None, (slices,), None]


_INT64 = np.dtype(np.int64)


def _pyop_casts(attributes: dict):
    """The PyOp computes int64 indices and counts; an asked i32 is a Cast after it."""
    casts = {index: np.dtype(np.int32) for index, name in
             ((1, "index_element_type"), (2, "index_element_type"), (3, "count_element_type"))
             if attributes[name] == "i32"}
    return dict(attributes, index_element_type="i64", count_element_type="i64"), casts


# Generated and invalid cases ----------------------------------------------------------------------------

def cases(rng: np.random.Generator, count: int = 40) -> list[Case]:
    """`count` generated cases (differential tests, conformance): every element type and attribute value in
    the first few, then shapes, values and special ingredients drawn from `rng`."""
    return [_generated(rng, k) for k in range(count)]


def _generated(rng, k: int) -> Case:
    """Case k of the generated sequence (types and sorted cycled, see custom_ops.ops._generate)."""
    dtype, sorted_ = gen.latin(k, DATA_TYPES, (1, 0))
    index_type = gen.cycle(k, ("i64", "i32"), 3)
    count_type = gen.cycle(k, ("i64", "i32"), 5)
    rank = int(rng.choice([0, 1, 1, 2, 2, 3]))
    shape = gen.shape(rng, rank, high=5, empty=0.08)
    special = is_float(dtype) and rng.random() < 0.4
    pool = int(rng.integers(1, 5))
    data = gen.values(rng, dtype, shape, special=special, extremes=rng.random() < 0.1, pool=pool)
    if special and data.size and rng.random() < 0.5:  # a -0.0 / 0.0 pair, in either order
        flat = data.reshape(-1)
        flat[: min(2, flat.size)] = np.array([-0.0, 0.0] if rng.random() < 0.5 else [0.0, -0.0],
                                             np.float32)[: min(2, flat.size)].astype(dtype)
    axis = None
    if rank and rng.random() < 0.6:
        axis = gen.axis_value(rng, k, int(rng.integers(-rank, rank)), rank, 2)
    attributes = {"sorted": sorted_, "index_element_type": index_type, "count_element_type": count_type}
    return Case(f"{k:04d}", (data, axis), attributes)


def bad_cases() -> list[tuple[Case, str]]:
    data = np.zeros((3, 4), np.float32)
    return [
        (Case("sorted_2", (data, None), {"sorted": 2}), "attribute 'sorted'"),
        (Case("index_type_i16", (data, None), {"index_element_type": "i16"}), "attribute 'index_element_type'"),
        (Case("count_type_u64", (data, None), {"count_element_type": "u64"}), "attribute 'count_element_type'"),
    ]


# Benchmark -------------------------------------------------------------------------------------------------

#: (flat sizes, voxel count) per mode.
_BENCH_SIZES = {"full": ((1_000_000, 10_000_000), 1_000_000), "quick": ((10_000, 100_000), 30_000),
                "tiny": ((50, 200), 60)}
_VOXEL_GRID = (128, 128, 32)


def benchmark_cases(mode: str) -> list:
    flat, voxels = _BENCH_SIZES[mode]
    out = []
    for size in flat:
        count = f"{size / 1e6:g}M" if size >= 100_000 else str(size)
        smaller = out[-1].id if out else ""
        out.append(BenchmarkCase(f"unique-{count}", f"flat: {count} float32 (normal, ~all distinct)",
                                 lambda rng, size=size: dict(data=rng.standard_normal(size, dtype=np.float32)),
                                 {"sorted": 1}, stock=not smaller, scales_from=smaller))

    def voxel_inputs(rng):
        """Integer voxel coordinates of points in a grid: many repeated cells."""
        coords = np.stack([rng.integers(0, extent, voxels) for extent in _VOXEL_GRID], axis=1).astype(np.int32)
        return dict(data=coords, axis=np.array(0, np.int64))
    out.append(BenchmarkCase("unique-voxels", f"axis 0: {voxels:,} x 3 int32 voxels in a "
                             f"{'x'.join(map(str, _VOXEL_GRID))} grid", voxel_inputs, {"sorted": 1}, stock=True))
    return out


def _bench_native(case, inputs):
    """onnxruntime's Unique-11 (via Cast to int64 for the types it has no kernel for)."""
    from onnx import TensorProto, helper
    from custom_ops._types import NUMPY_TO_ONNX
    data = inputs["data"]
    attributes = {"sorted": case.attributes.get("sorted", 1)}
    if "axis" in inputs:
        attributes["axis"] = int(inputs["axis"])
    nodes, source, label = [], "data", "Unique-11"
    outputs = ["unique", "indices", "reverse_indices", "counts"]
    if data.dtype not in (np.float32, np.float64, np.int8, np.int64):  # onnxruntime's Unique kernels
        nodes.append(helper.make_node("Cast", ["data"], ["wide"], to=TensorProto.INT64))
        source, label, outputs[0] = "wide", f"Unique-11 (via Cast {data.dtype}->int64)", "unique_wide"
    nodes.append(helper.make_node("Unique", [source], outputs, **attributes))
    if source == "wide":
        nodes.append(helper.make_node("Cast", ["unique_wide"], ["unique"], to=NUMPY_TO_ONNX[data.dtype]))
    return nodes, {"data": data}, [], label, None


def _bench_torch(case, inputs):
    import torch
    data, dim = torch.from_numpy(inputs["data"]), int(inputs["axis"]) if "axis" in inputs else None

    def run():
        values, inverse, counts = torch.unique(data, sorted=True, return_inverse=True, return_counts=True, dim=dim)
        return [values.numpy(), None, inverse.numpy().reshape(-1), counts.numpy()]
    return run, "unique (no first indices)"


def _bench_numpy(case, inputs):
    axis = int(inputs["axis"]) if "axis" in inputs else None

    def run():
        values, first, inverse, counts = np.unique(inputs["data"], return_index=True, return_inverse=True,
                                                   return_counts=True, axis=axis)
        return [values, first, inverse.reshape(-1), counts]
    return run, "np.unique (index, inverse, counts)"


def _bench_targets(cases) -> list:
    rows = [("lowered graph <= 1.3x the single native op", (c.id, "lowered"), (c.id, "native"), 1.3, {})
            for c in cases]
    for case in cases:
        for column in ("bridge", "bridge_pyop"):
            if case.id == "unique-voxels":
                rows.append(("Unique with axis <= 1.5x onnxruntime's Unique", (case.id, column),
                             (case.id, "native"), 1.5, {}))
            else:
                rows.append(("Unique flat faster than onnxruntime's Unique", (case.id, column), (case.id, "native"),
                             1.0, {"strict": True}))
                rows.append(("Unique flat <= 1.2x numpy.unique (index, inverse, counts)", (case.id, column),
                             (case.id, "numpy"), 1.2, {}))
    return rows


#: The CPU plugin's Unique is quadratic in the number of distinct values (10k: 0.24 s, 30k: 1.8 s, 100k: 12 s
#: measured): above 20k rows it is timed on a prefix instead.
BENCHMARK = Benchmark(benchmark_cases, table=True, native=_bench_native, torch=_bench_torch, numpy=_bench_numpy,
                      targets=_bench_targets, openvino_rows=20_000)

UNIT = DialectUnit(
    op_type=OP, family="set",
    specs=(OpSpec(OP, 10, (Port("data", "T"), Port("axis", "T_AXIS", optional=True)),
                  (Port("unique", "T"), Port("indices", "T_IDX"), Port("reverse_indices", "T_IDX"),
                   Port("counts", "T_CNT")),
                  (Attribute("sorted", "int", 1, (0, 1)),
                   Attribute("index_element_type", "string", "i64", INDEX_TYPES, short="index"),
                   Attribute("count_element_type", "string", "i64", INDEX_TYPES, short="count")),
                  {"T": DATA_TYPES, "T_AXIS": check.INTEGER_TYPES,
                   "T_IDX": (np.dtype(np.int32), np.dtype(np.int64)),
                   "T_CNT": (np.dtype(np.int32), np.dtype(np.int64))},
                  _kernel_v10, doc="Unique elements or slices with first indices, inverse and counts.",
                  infer=_infer),),
    openvino=OpenVINO(
        "Unique", versions=(10,),
        factory=lambda ov, inputs, attributes: ov.opset10.unique(
            inputs[0], inputs[1] if len(inputs) > 1 else None, attributes["sorted"],
            attributes["index_element_type"], attributes["count_element_type"]),
        attributes=(AttributeMap("sorted", "bool"), AttributeMap("index_element_type", "string"),
                    AttributeMap("count_element_type", "string")),
        constant_inputs=("axis",), output_shapes=_output_shapes),
    cases=cases, bad_cases=bad_cases,
    lowering="converters.lowering.unique",
    raising="converters.raising.unique",
    torch="onnx_bridge.torch.unique",
    divergences=UNIQUE,
    benchmark=BENCHMARK,
    pyop_outputs=lambda inputs: (inputs[0], _INT64, _INT64, _INT64),
    pyop_casts=_pyop_casts,
    prefer_custom_op=lambda node, constants: "faster as the custom op: onnxruntime's Unique is 15-45x "
                                             "slower than its sort",
)
