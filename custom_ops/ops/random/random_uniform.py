"""RandomUniform-8 (OpenVINO): uniform random values from OpenVINO's Philox4x32-10 stream (_philox.py).

output_shape: 1-D i32/i64 (non-negative sizes); min_val, max_val: scalars (or one-element 1-D) of the output
type T, min_val < max_val. The output has shape output_shape and type T (OpenVINO's output_type). Each element
takes the next word(s) of the stream of (global_seed, op_seed), as OpenVINO's reference does:
- f32 / f16: the word's low 23 / 10 bits as the mantissa of a value in [1, 2), minus 1, times (max - min),
  plus min, each step rounded in T;
- f64: the word pair as a 64-bit value (first word high), its low 52 bits as the mantissa, likewise;
- i32: word % (max - min) + min in 32-bit two's complement arithmetic (the range taken unsigned);
- i64: the word pair as a 64-bit value (second word high) % (max - min) + min in 64-bit arithmetic.
Both seeds 0: a non-deterministic stream (the specification). The op is stateless: every run gives the
values of OpenVINO's first inference (OpenVINO continues the stream on further inferences).
alignment "pytorch" (RandomUniform-8's newer attribute, a different generator) is not implemented.
"""
from __future__ import annotations

import secrets

import numpy as np

from custom_ops import _checks as check
from custom_ops.errors import OpError
from custom_ops.unit import (Absent, Attribute, AttributeMap, Case, DialectUnit, Divergence, OpenVINO, OpSpec, Outcome,
                             Port)

from . import _philox

OP = "RandomUniform"
#: output_type names of OpenVINO <-> numpy types.
OUTPUT_TYPES = {"f16": np.dtype(np.float16), "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
                "i32": np.dtype(np.int32), "i64": np.dtype(np.int64)}
TYPE_NAMES = {dtype: name for name, dtype in OUTPUT_TYPES.items()}
SHAPE_TYPES = (np.dtype(np.int32), np.dtype(np.int64))
#: float type -> (unsigned type of its bits, mantissa bits, exponent bits of 1.0)
FLOAT_BITS = {np.dtype(np.float16): (np.uint16, 10, 15 << 10), np.dtype(np.float32): (np.uint32, 23, 127 << 23),
              np.dtype(np.float64): (np.uint64, 52, 1023 << 52)}
MAX_SEED = (1 << 63) - 1   # ONNX INT attributes are int64 (OpenVINO's seeds are uint64)


def _bound(name: str, value, dtype=None) -> np.ndarray:
    array = check.as_array(OP, name, value)
    check.data_type(OP, name, array, tuple(TYPE_NAMES))
    if dtype is not None and array.dtype != dtype:
        raise OpError(OP, f"input '{name}'", "element type must equal min_val's", value=str(array.dtype),
                      allowed=str(dtype))
    if array.size != 1 or array.ndim > 1:
        raise OpError(OP, f"input '{name}'", "must be a scalar or a one-element 1-D tensor", value=array.shape,
                      allowed="shape [] or [1]")
    return array.reshape(())


def _seed(name: str, value) -> int:
    if not 0 <= int(value) <= MAX_SEED:
        raise OpError(OP, f"attribute '{name}'", "out of range", value=int(value), allowed=f"[0, {MAX_SEED}]")
    return int(value)


#: Philox blocks OpenVINO's CPU plugin skips per output element between two inferences of a compiled model.
SKIP_PER_ELEMENT = 256


def random_uniform(output_shape, min_val, max_val, global_seed=0, op_seed=0, alignment="tensorflow",
                   first_block=0):
    """The op's output; `first_block` > 0 starts the stream later (the CPU plugin's further inferences)."""
    shape = check.as_array(OP, "output_shape", output_shape)
    check.data_type(OP, "output_shape", shape, SHAPE_TYPES)
    if shape.ndim != 1:
        raise OpError(OP, "input 'output_shape'", "must be 1-D", value=shape.shape, allowed="rank 1")
    if shape.size and shape.min() < 0:
        raise OpError(OP, "input 'output_shape'", "sizes must not be negative", value=int(shape.min()),
                      allowed=">= 0")
    low = _bound("min_val", min_val)
    high = _bound("max_val", max_val, low.dtype)
    dtype = low.dtype
    if not low < high:
        raise OpError(OP, "input 'min_val'", "must be less than max_val", value=low.item(),
                      allowed=f"< {high.item()}")
    check.choice(OP, "alignment", alignment, ("tensorflow",))
    global_seed, op_seed = _seed("global_seed", global_seed), _seed("op_seed", op_seed)
    if global_seed == 0 and op_seed == 0:
        global_seed = secrets.randbits(63) or 1     # non-deterministic, as the specification says
    dims = tuple(int(d) for d in shape)
    count = int(np.prod(dims, dtype=np.int64))
    if dtype.kind == "f":
        bits, mantissa, one = FLOAT_BITS[dtype]
        if dtype.itemsize == 8:
            raw = _philox.pairs(count, global_seed, op_seed, high_first=True, first_block=first_block)
        else:
            raw = _philox.words(count, global_seed, op_seed, first_block)
        unit = ((raw & np.uint64((1 << mantissa) - 1)).astype(bits) | bits(one)).view(dtype) - dtype.type(1)
        with np.errstate(over="ignore"):                # an f16 range may overflow to inf, as in OpenVINO
            out = unit * (high - low) + low
    elif dtype.itemsize == 4:
        span = np.uint32((int(high) - int(low)) & 0xFFFFFFFF)
        out = (_philox.words(count, global_seed, op_seed, first_block) % span
               + np.uint32(int(low) & 0xFFFFFFFF)).view(dtype)
    else:
        span = np.uint64((int(high) - int(low)) & (2 ** 64 - 1))
        raw = _philox.pairs(count, global_seed, op_seed, high_first=False, first_block=first_block)
        out = (raw % span + np.uint64(int(low) & (2 ** 64 - 1))).view(dtype)
    return out.reshape(dims)


def _kernel_v8(output_shape, min_val, max_val, *, global_seed, op_seed, alignment):
    return (random_uniform(output_shape, min_val, max_val, global_seed, op_seed, alignment),)


def _infer(ctx) -> None:
    """Output: min_val's element type; its rank is the size of output_shape when known."""
    from onnx import helper
    code = ctx.get_input_type(1).tensor_type.elem_type
    shape_type = ctx.get_input_type(0).tensor_type
    rank = None
    if shape_type.HasField("shape") and len(shape_type.shape.dim) == 1 and shape_type.shape.dim[0].HasField("dim_value"):
        rank = shape_type.shape.dim[0].dim_value
    ctx.set_output_type(0, helper.make_tensor_type_proto(code, None if rank is None else [None] * rank))


def _factory(ov, inputs, attributes):
    from openvino import opset8
    output_type = inputs[1].get_element_type().get_type_name()
    return opset8.random_uniform(inputs[0], inputs[1], inputs[2], output_type, attributes["global_seed"],
                                 attributes["op_seed"], attributes["alignment"])


# Cases ------------------------------------------------------------------------------------------------

def case_of(index: int, r: np.random.Generator, type_name: str) -> Case:
    dtype = OUTPUT_TYPES[type_name]
    shape = r.integers(0 if index % 11 == 5 else 1, 6, int(r.integers(0, 4)))
    if dtype.kind == "f":
        low = float(r.normal() * 4)
        high = low + float(r.choice([r.uniform(0.01, 2), r.uniform(2, 1000)]))
    else:
        info = np.iinfo(dtype)
        wide = index % 4 == 3             # spans beyond the type's positive range (two's complement wrap)
        low = int(r.integers(info.min, 0)) if wide else int(r.integers(-1000, 1000))
        high = int(r.integers(1, info.max)) if wide else low + int(r.integers(1, 5000))
    seeds = r.integers(0, 1 << 62, 2) if index % 3 else r.integers(0, 100, 2)
    return Case(f"random_uniform_{type_name}_{index}",
                (shape.astype(SHAPE_TYPES[index % 2]), np.asarray(low, dtype).reshape(() if index % 5 else (1,)),
                 np.asarray(high, dtype).reshape(() if index % 5 else (1,))),
                {"global_seed": int(seeds[0]) or 1, "op_seed": int(seeds[1])})


def cases(rng: np.random.Generator) -> list:
    return [case_of(index, np.random.default_rng([int(rng.integers(1 << 30)), index]), name)
            for index, name in enumerate(list(OUTPUT_TYPES) * 5)]


def bad_cases() -> list:
    f32 = lambda v: np.asarray(v, np.float32)  # noqa: E731
    shape = np.asarray([2, 3], np.int64)
    return [
        (Case("min_not_below_max", (shape, f32(1), f32(1)), {"global_seed": 1}), "less than max_val"),
        (Case("negative_size", (np.asarray([2, -1], np.int64), f32(0), f32(1)), {"global_seed": 1}),
         "must not be negative"),
        (Case("shape_rank_2", (shape.reshape(1, 2), f32(0), f32(1)), {"global_seed": 1}), "1-D"),
        (Case("bound_shape", (shape, f32([0, 1]), f32(2)), {"global_seed": 1}), "one-element"),
        (Case("mixed_bounds", (shape, f32(0), np.asarray(2, np.float64)), {"global_seed": 1}), "max_val"),
        (Case("int8_bounds", (shape, np.asarray(0, np.int8), np.asarray(2, np.int8)), {"global_seed": 1}),
         "element type"),
        (Case("negative_seed", (shape, f32(0), f32(1)), {"global_seed": -3}), "global_seed"),
        (Case("pytorch_alignment", (shape, f32(0), f32(1)), {"global_seed": 1, "alignment": "pytorch"}),
         "alignment"),
    ]


# Divergences of OpenVINO's CPU plugin (2026.4, measured) ------------------------------------------------

_OV = "openvino-cpu"


def _type(inputs) -> np.dtype:
    return np.asarray(inputs["min_val"]).dtype


def _count(inputs) -> int:
    return int(np.prod(np.asarray(inputs["output_shape"]).astype(np.int64)))


def _generated(inputs, attributes, *types) -> bool:
    """Output of one of `types` with at least one value, of rank >= 1 (rank 0: the scalar row)."""
    return _type(inputs) in types and np.asarray(inputs["output_shape"]).size > 0 and _count(inputs) > 0


def _f32(inputs, attributes) -> bool:
    return _generated(inputs, attributes, np.float32)


def _f16_f64(inputs, attributes) -> bool:
    return _generated(inputs, attributes, np.float16, np.float64)


def _i64(inputs, attributes) -> bool:
    return _generated(inputs, attributes, np.int64)


def _i32_wide_range(inputs, attributes) -> bool:
    low, high = (int(np.asarray(inputs[name]).reshape(-1)[0]) for name in ("min_val", "max_val"))
    return _generated(inputs, attributes, np.int32) and high - low > 2 ** 31 - 1


def _scalar(inputs, attributes) -> bool:
    return np.asarray(inputs["output_shape"]).size == 0


def _seeded(inputs, attributes) -> bool:
    """A fixed stream (both seeds 0 is random in the contract too) and at least one value."""
    return (attributes["global_seed"], attributes["op_seed"]) != (0, 0) and _count(inputs) > 0


#: Further inferences of one compiled model whose values the stream-continuation row accepts (2nd to 9th).
CONTINUED_INFERENCES = range(2, 10)


def _continued(inference: int):
    """The contract's conversion of the stream as the CPU plugin continues it at its `inference`-th run of one
    compiled model: from Philox block (inference - 1) * elements * 256 on (measured; its source: the counter
    skips elements * 256 blocks per run)."""
    def outputs(inputs, attributes) -> tuple:
        first = (inference - 1) * _count(inputs) * SKIP_PER_ELEMENT
        return (random_uniform(inputs["output_shape"], inputs["min_val"], inputs["max_val"],
                               attributes["global_seed"], attributes["op_seed"], attributes["alignment"], first),)
    return outputs


def _example(shape, low, high, dtype, global_seed=7, op_seed=11) -> Case:
    return Case("example", (np.asarray(shape, np.int64), np.asarray(low, dtype), np.asarray(high, dtype)),
                {"global_seed": global_seed, "op_seed": op_seed})


DIVERGENCES = (
    Divergence("ov-randomuniform-f32-fma", _OV, "value", "f32 scaled with a fused multiply-add",
               "The CPU plugin computes min + u * (max - min) for f32 as a fused multiply-add (one rounding); "
               "OpenVINO's reference and the contract round the product first: last-bit differences.",
               _f32, _example([16], 0.1, 3.7, np.float32)),
    Divergence("ov-randomuniform-f16-f64-via-f32", _OV, "value", "f16 and f64 generated as f32",
               "The CPU plugin generates f16 and f64 outputs as f32 (a 23-bit mantissa from one word) and "
               "converts them; OpenVINO's reference and the contract use 10-bit (f16) and 52-bit (f64, a word "
               "pair) mantissas: other values.",
               _f16_f64, _example([8], 0.0, 1.0, np.float64)),
    Divergence("ov-randomuniform-i64-one-word", _OV, "value", "i64 from one 32-bit word",
               "The CPU plugin takes one 32-bit word per i64 element (OpenVINO's reference and the contract: a "
               "word pair as a 64-bit value); ranges beyond 2^31 - 1 are truncated: other values.",
               _i64, _example([8], -(2 ** 40), 2 ** 40, np.int64)),
    Divergence("ov-randomuniform-i32-wide-range", _OV, "value", "i32 range beyond 2^31 - 1",
               "For i32 with max - min beyond 2^31 - 1 the CPU plugin gives other values than the reference's "
               "and the contract's modulo of the range taken unsigned (ranges below 2^31 agree bit for bit).",
               _i32_wide_range, _example([8], -2 ** 31 + 5, 2 ** 31 - 7, np.int32)),
    Divergence("ov-randomuniform-scalar-uninitialised", _OV, "nondeterministic",
               "scalar output uninitialised",
               "With output_shape [] (a scalar output) the CPU plugin returns uninitialised memory; the reference "
               "and the contract give the first value of the stream.",
               _scalar, _example([], 0.0, 1.0, np.float32)),
    Divergence("ov-randomuniform-stream-continues", _OV, "value",
               "further inferences continue the stream",
               "The k-th inference of one compiled OpenVINO model (k >= 2, any infer request, e.g. a cached "
               "compiled model) continues the Philox stream from block (k - 1) * elements * 256; the dialect op "
               "is stateless: every run gives the first inference's values (with fixed seeds the CPU plugin's "
               "first inference agrees wherever no other row applies). Explains only values equal to the "
               "contract's conversion of such a continued stream, inferences 2 to 9.",
               _seeded, _example([4], 0, 100, np.int32),
               outcomes=tuple(Outcome(f"inference {k} of one compiled model (OpenVINO 2026.4 CPU plugin, measured "
                               "2026-11)", _continued(k)) for k in CONTINUED_INFERENCES)),
)


UNIT = DialectUnit(
    op_type=OP, family="random",
    specs=(OpSpec(OP, 8, (Port("output_shape", "T_SHAPE"), Port("min_val", "T"), Port("max_val", "T")),
                  (Port("output", "T"),),
                  (Attribute("global_seed", "int", 0), Attribute("op_seed", "int", 0),
                   Attribute("alignment", "string", "tensorflow", ("tensorflow",))),
                  {"T_SHAPE": SHAPE_TYPES, "T": tuple(TYPE_NAMES)}, _kernel_v8,
                  doc="Uniform random values of OpenVINO's Philox stream (global_seed, op_seed).", infer=_infer),),
    openvino=OpenVINO(
        "RandomUniform", versions=(8,), factory=_factory,
        constant_inputs=("output_shape",),   # the CPU plugin refuses an output of dynamic rank
        attributes=(AttributeMap("global_seed", "int"), AttributeMap("op_seed", "int"),
                    AttributeMap("alignment", "lower")),
        output_shapes=lambda i, a: [tuple(int(d) for d in np.asarray(i["output_shape"]))],
        notes="bit-exact with OpenVINO's reference (Philox4x32-10, TensorFlow alignment); stateless",
        refuses=("alignment pytorch: another generator (PyTorch's), not implemented",)),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("standard ONNX RandomUniform has implementation-defined values: no exact lowering"),
    raising=Absent("standard ONNX RandomUniform fixes no generator: nothing to raise exactly"),
    torch=Absent("torch's generator differs (alignment pytorch not implemented)"),
    divergences=DIVERGENCES,
    benchmark=Absent("not benchmarked: no native onnxruntime counterpart with the same values"),
)
