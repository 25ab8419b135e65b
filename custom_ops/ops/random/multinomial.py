"""Multinomial-13 (OpenVINO): class indices sampled from the rows of probs, with OpenVINO's Philox stream.

probs: [batch, classes] (the reference also takes 1-D [classes]) of a float type T; num_samples: a scalar or
one-element 1-D i32/i64. Output [batch, num_samples] (or [num_samples]) of convert_type i32/i64. As
OpenVINO's reference computes it, every step in T:
- log_probs: p = exp(probs) (the C library's, as the reference's std::exp: custom_ops/ops/_libm.py c_exp);
- cdf = the cumulative sum of each row, divided by its last value;
- the uniform values: RandomUniform-8's stream of (global_seed, op_seed) in T over [0, 1) (random_uniform.py),
  one per output element in row-major order;
- sample j of a row: the first class k with u <= cdf[k];
- without replacement, after each sample: q = cdf[k] - cdf[k - 1] (cdf[0] for k = 0); cdf[k:] -= q; cdf /= 1 - q.
The contract requires what the specification states (probabilities finite, non-negative, with a positive sum
per row; log probabilities not +inf or NaN and not all -inf) and, without replacement, at least num_samples
classes of positive probability per row (the reference divides by zero otherwise). Both seeds 0: a
non-deterministic stream. Stateless: every run gives OpenVINO's first inference (see random_uniform.py).
"""
from __future__ import annotations

import secrets

import numpy as np

from custom_ops import _checks as check
from custom_ops.ops import _libm
from custom_ops.errors import OpError
from custom_ops.unit import Absent, Attribute, AttributeMap, Case, DialectUnit, Divergence, OpenVINO, OpSpec, Port

from .random_uniform import MAX_SEED, random_uniform

OP = "Multinomial"
FLOAT_TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
SAMPLE_TYPES = (np.dtype(np.int32), np.dtype(np.int64))
CONVERT_TYPES = {"i32": np.dtype(np.int32), "i64": np.dtype(np.int64)}


def _num_samples(value) -> int:
    array = check.as_array(OP, "num_samples", value)
    check.data_type(OP, "num_samples", array, SAMPLE_TYPES)
    if array.size != 1 or array.ndim > 1:
        raise OpError(OP, "input 'num_samples'", "must be a scalar or a one-element 1-D tensor",
                      value=array.shape, allowed="shape [] or [1]")
    count = int(array.reshape(()))
    if count < 0:
        raise OpError(OP, "input 'num_samples'", "must not be negative", value=count, allowed=">= 0")
    return count


def _weights(probs: np.ndarray, log_probs: bool) -> np.ndarray:
    """probs (2-D) checked as the specification asks, as weights in T (exp of log probabilities)."""
    if log_probs:
        if np.isnan(probs).any() or np.isposinf(probs).any():
            raise OpError(OP, "input 'probs'", "log probabilities must not be NaN or +inf",
                          value=probs[np.isnan(probs) | np.isposinf(probs)][0].item())
        weights = _libm.c_exp(probs)          # the C library's, as the reference's std::exp
        if np.isinf(weights).any():
            raise OpError(OP, "input 'probs'", f"exp of a log probability overflows {probs.dtype}",
                          value=probs[np.isinf(weights)][0].item())
    else:
        weights = probs
        if not np.isfinite(weights).all() or (weights < 0).any():
            bad = ~np.isfinite(weights) | (weights < 0)
            raise OpError(OP, "input 'probs'", "probabilities must be finite and non-negative",
                          value=weights[bad][0].item(), allowed=">= 0")
    return weights


def multinomial(probs, num_samples, convert_type="i64", with_replacement=1, log_probs=0, global_seed=0,
                op_seed=0) -> np.ndarray:
    probs = check.as_array(OP, "probs", probs)
    check.data_type(OP, "probs", probs, FLOAT_TYPES)
    if probs.ndim not in (1, 2) or probs.shape[-1] == 0:
        raise OpError(OP, "input 'probs'", "must be [batch, classes] (or [classes]) with at least one class",
                      value=probs.shape, allowed="rank 2 (or 1), classes >= 1")
    count = _num_samples(num_samples)
    check.choice(OP, "convert_type", convert_type, tuple(CONVERT_TYPES))
    with_replacement = check.flag(OP, "with_replacement", with_replacement)
    log_probs = check.flag(OP, "log_probs", log_probs)
    seeds = []
    for name, value in (("global_seed", global_seed), ("op_seed", op_seed)):
        if not 0 <= int(value) <= MAX_SEED:
            raise OpError(OP, f"attribute '{name}'", "out of range", value=int(value), allowed=f"[0, {MAX_SEED}]")
        seeds.append(int(value))
    if seeds == [0, 0]:
        seeds[0] = secrets.randbits(63) or 1        # non-deterministic, as the specification says
    rows = probs.reshape(-1, probs.shape[-1])
    weights = _weights(rows, log_probs)
    cdf = np.cumsum(weights, axis=1, dtype=probs.dtype)       # sequential, in T
    if not (cdf[:, -1] > 0).all():
        raise OpError(OP, "input 'probs'", "every row needs a positive sum of probabilities",
                      value=int(np.argmax(~(cdf[:, -1] > 0))), allowed="a row with a positive probability")
    if not with_replacement:
        positive = (weights > 0).sum(axis=1)
        if count > positive.min():
            raise OpError(OP, "input 'num_samples'", "without replacement it must not exceed the classes of "
                          "positive probability in a row", value=count, allowed=f"<= {int(positive.min())}")
    cdf = cdf / cdf[:, -1:]
    out_shape = (count,) if probs.ndim == 1 else (rows.shape[0], count)
    uniform = random_uniform(np.asarray(out_shape, np.int64), np.zeros((), probs.dtype), np.ones((), probs.dtype),
                             *seeds).reshape(rows.shape[0], count)
    samples = draw(cdf, uniform, with_replacement)
    return samples.astype(CONVERT_TYPES[convert_type]).reshape(out_shape)


def draw(cdf: np.ndarray, uniform: np.ndarray, with_replacement: bool) -> np.ndarray:
    """Samples [rows, count] (int64) for the uniform values [rows, count] from the normalised cdf [rows, classes],
    both in T: the first class k with u <= cdf[k]; without replacement the cdf is updated after each sample."""
    samples = np.zeros(uniform.shape, np.int64)
    if with_replacement:                            # cdf ascending, ends at exactly 1 >= u
        for row in range(cdf.shape[0]):
            samples[row] = np.searchsorted(cdf[row], uniform[row], side="left")
        return samples
    one = cdf.dtype.type(1)
    for row in range(cdf.shape[0]):
        line = cdf[row].copy()
        for j in range(uniform.shape[1]):           # a linear search: rounding may leave line not quite ascending
            k = int(np.argmax(uniform[row, j] <= line))       # line ends at exactly 1 >= u
            samples[row, j] = k
            taken = line[k] - line[k - 1] if k else line[0]
            line[k:] -= taken
            with np.errstate(divide="ignore", invalid="ignore"):   # 0 / 0 only after the last positive class
                line /= one - taken
    return samples


def _kernel_v13(probs, num_samples, *, convert_type, with_replacement, log_probs, global_seed, op_seed):
    return (multinomial(probs, num_samples, convert_type, with_replacement, log_probs, global_seed, op_seed),)


def _infer(ctx) -> None:
    """Output: convert_type; rank of probs (batch dimension kept when known), samples unknown."""
    from onnx import TensorProto, helper
    proto = ctx.get_attribute("convert_type")
    code = TensorProto.INT32 if proto is not None and helper.get_attribute_value(proto) == b"i32" else TensorProto.INT64
    shape = None
    known = ctx.get_input_type(0).tensor_type
    if known.HasField("shape"):
        dims = known.shape.dim
        first = dims[0].dim_value if len(dims) == 2 and dims[0].HasField("dim_value") else None
        shape = [None] if len(dims) == 1 else [first, None]
    ctx.set_output_type(0, helper.make_tensor_type_proto(code, shape))


def _factory(ov, inputs, attributes):
    from openvino import opset13
    return opset13.multinomial(inputs[0], inputs[1], attributes["convert_type"], attributes["with_replacement"],
                               attributes["log_probs"], attributes["global_seed"], attributes["op_seed"])


# Cases ------------------------------------------------------------------------------------------------

def case_of(index: int, r: np.random.Generator) -> Case:
    dtype = FLOAT_TYPES[index % 3] if index % 4 else np.dtype(np.float32)
    batch, classes = int(r.integers(1, 4)), int(r.integers(1, 7))
    log_probs = index % 5 in (1, 3)
    if log_probs:
        probs = r.normal(0, 2, (batch, classes))
        probs[r.random(probs.shape) < 0.15] = -np.inf                 # probability 0
        probs[:, int(r.integers(classes))] = r.normal()               # at least one class per row
    else:
        probs = r.random((batch, classes)) * (10 if index % 2 else 1)
        probs[r.random(probs.shape) < 0.2] = 0
        probs[:, int(r.integers(classes))] += 0.5
    with_replacement = index % 4 != 2
    positive = int(np.isfinite(probs).sum(axis=1).min() if log_probs else (probs > 0).sum(axis=1).min())
    samples = int(r.integers(0, 9)) if with_replacement else int(r.integers(0, positive + 1))
    seeds = r.integers(0, 1 << 62, 2) if index % 2 else r.integers(0, 100, 2)
    return Case(f"multinomial_{dtype.name}_{index}",
                (probs.astype(dtype), np.asarray(samples, SAMPLE_TYPES[index % 2]).reshape(() if index % 3 else (1,))),
                {"convert_type": ("i64", "i32")[index % 2], "with_replacement": int(with_replacement),
                 "log_probs": int(log_probs), "global_seed": int(seeds[0]) or 1, "op_seed": int(seeds[1])})


def cases(rng: np.random.Generator) -> list:
    return [case_of(index, np.random.default_rng([int(rng.integers(1 << 30)), index])) for index in range(15)]


def bad_cases() -> list:
    f32 = lambda v: np.asarray(v, np.float32)  # noqa: E731
    two = np.asarray(2, np.int64)
    seeded = {"convert_type": "i64", "with_replacement": 1, "log_probs": 0, "global_seed": 1}
    return [
        (Case("negative_probability", (f32([[0.5, -0.1]]), two), seeded), "non-negative"),
        (Case("nan_probability", (f32([[0.5, np.nan]]), two), seeded), "finite"),
        (Case("zero_row", (f32([[1, 0], [0, 0]]), two), seeded), "positive sum"),
        (Case("log_inf", (f32([[0, np.inf]]), two), dict(seeded, log_probs=1)), "+inf"),
        (Case("log_all_minus_inf", (f32([[-np.inf, -np.inf]]), two), dict(seeded, log_probs=1)), "positive sum"),
        (Case("too_many_without_replacement", (f32([[0.5, 0, 0.5]]), np.asarray(3, np.int64)),
              dict(seeded, with_replacement=0)), "without replacement"),
        (Case("negative_samples", (f32([[1, 1]]), np.asarray(-1, np.int32)), seeded), "must not be negative"),
        (Case("samples_shape", (f32([[1, 1]]), np.asarray([1, 2], np.int64)), seeded), "one-element"),
        (Case("probs_rank_3", (f32(np.ones((1, 1, 2))), two), seeded), "[batch, classes]"),
        (Case("no_classes", (f32(np.ones((2, 0))), two), seeded), "at least one class"),
        (Case("int_probs", (np.asarray([[1, 2]], np.int32), two), seeded), "element type"),
    ]


def _pyop_casts(attributes: dict):
    """The PyOp computes int64 samples; an asked i32 is a Cast after it."""
    casts = {0: np.dtype(np.int32)} if attributes["convert_type"] == "i32" else {}
    return dict(attributes, convert_type="i64"), casts


def _random(inputs, attributes) -> bool:
    """At least one sample from a row with two or more classes of positive probability (otherwise every
    generator gives the same samples)."""
    probs = np.asarray(inputs["probs"])
    count = int(np.asarray(inputs["num_samples"]).reshape(-1)[0]) if np.size(inputs["num_samples"]) == 1 else 0
    if count <= 0 or probs.ndim not in (1, 2) or probs.size == 0:
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        weights = np.exp(probs.astype(np.float64)) if attributes["log_probs"] else probs
    return bool(((weights > 0).reshape(-1, probs.shape[-1]).sum(axis=1) >= 2).any())


DIVERGENCES = (
    Divergence("ov-multinomial-mt19937", "openvino-cpu", "value", "samples from std::mt19937, not the Philox stream",
               "The CPU plugin draws its uniform values from std::mt19937 seeded with std::seed_seq{global_seed, "
               "op_seed} (their low 32 bits), as u = float(word) / float(2^32 - 1) (1.0 possible), and computes "
               "f64 probabilities in f32; OpenVINO's reference and the contract draw them from RandomUniform's "
               "Philox stream of (global_seed, op_seed) in probs' type: other samples, same distribution. Given "
               "the CPU plugin's uniform values the contract's sampling gives its samples bit for bit.",
               _random, Case("example", (np.asarray([[0.2, 0.3, 0.5]], np.float32), np.asarray(8, np.int64)),
                             {"convert_type": "i64", "with_replacement": 1, "log_probs": 0, "global_seed": 7,
                              "op_seed": 11})),
)


UNIT = DialectUnit(
    op_type=OP, family="random",
    specs=(OpSpec(OP, 13, (Port("probs", "T_IN"), Port("num_samples", "T_SAMPLES")), (Port("output", "T_OUT"),),
                  (Attribute("convert_type", "string", "i64", tuple(CONVERT_TYPES)),
                   Attribute("with_replacement", "int", 1, (0, 1)), Attribute("log_probs", "int", 0, (0, 1)),
                   Attribute("global_seed", "int", 0), Attribute("op_seed", "int", 0)),
                  {"T_IN": FLOAT_TYPES, "T_SAMPLES": SAMPLE_TYPES, "T_OUT": (np.dtype(np.int64), np.dtype(np.int32))},
                  _kernel_v13, doc="Class indices sampled from probs with OpenVINO's Philox stream.", infer=_infer),),
    openvino=OpenVINO(
        "Multinomial", versions=(13,), factory=_factory,
        attributes=(AttributeMap("convert_type", "lower"), AttributeMap("with_replacement", "bool"),
                    AttributeMap("log_probs", "bool"), AttributeMap("global_seed", "int"),
                    AttributeMap("op_seed", "int")),
        output_shapes=lambda i, a: [np.shape(i["probs"])[:-1] + (int(np.asarray(i["num_samples"]).reshape(())),)],
        notes="bit-exact with OpenVINO's reference (RandomUniform's Philox stream in probs' type, inverse CDF); "
              "stateless"),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("standard ONNX Multinomial has implementation-defined values: no exact lowering"),
    raising=Absent("standard ONNX Multinomial fixes no generator: nothing to raise exactly"),
    torch=Absent("torch.multinomial's generator differs"),
    divergences=DIVERGENCES,
    pyop_outputs=lambda inputs: (np.dtype(np.int64),),
    pyop_casts=_pyop_casts,
    benchmark=Absent("not benchmarked: no native onnxruntime counterpart with the same values"),
)
