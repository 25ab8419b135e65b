"""FakeConvert-13 (OpenVINO): emulation of an 8-bit float type (f8e4m3 or f8e5m2) on f16/bf16/f32 data.

out = (q(data * scale - shift) + shift) / scale, every operation in the data's type (the spec), where q rounds
to the destination type and back as OpenVINO's reference and CPU plugin do: the value is first rounded to f16
(round to nearest even; f16 data as it is), then to the 8-bit type, round to nearest even with subnormals,
saturating: finite values beyond the largest and infinities become the largest value of their sign (448 for
f8e4m3, 57344 for f8e5m2); NaN stays NaN. ONNX has 8-bit float types from opset 19 only (the bridge targets
18): no standard lowering.

Measured against OpenVINO 2026.4 on every f16 value: the CPU plugin gives the same on all finite values; it
turns NaN into the largest value (a divergence row), and divides by the scale as a multiplication by
1 / scale (last-bit differences where 1 / scale is inexact: a divergence row). OpenVINO's core reference
flushes f8e4m3 subnormals below 2^-9 to zero and truncates the others (its own Convert to f8e4m3 and the CPU
plugin round them): the kernel rounds. Without a shift input there is no shift term (-0 stays -0, as on the
CPU; the core reference adds a zero); a given zero shift is added (the spec; the CPU leaves it out, a
divergence row).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from custom_ops import _checks as check
from custom_ops._types import BFLOAT16
from custom_ops.errors import OpError
from custom_ops.unit import (Absent, Attribute, AttributeMap, Case, DialectUnit, Divergence, OpenVINO, OpSpec,
                             Port, expected_shape_of, same_as_input)

OP = "FakeConvert"
TYPES = (np.dtype(np.float16), BFLOAT16, np.dtype(np.float32))
#: destination type -> (ml_dtypes type, largest finite value)
DESTINATIONS = {"f8e4m3": (ml_dtypes.float8_e4m3fn, 448.0), "f8e5m2": (ml_dtypes.float8_e5m2, 57344.0)}


def quantize(values: np.ndarray, destination: str) -> np.ndarray:
    """Round to f16, then to the 8-bit type (nearest even, saturating, NaN kept), and back to the values' type."""
    f8, largest = DESTINATIONS[destination]
    half = values.astype(np.float16)
    half = np.where(np.isnan(half), half, np.clip(half, -largest, largest)).astype(np.float16)
    return half.astype(f8).astype(np.float16).astype(values.dtype)


def fake_convert(data, scale, shift=None, destination_type="f8e4m3"):
    data = check.as_array(OP, "data", data)
    check.data_type(OP, "data", data, TYPES)
    destination = check.choice(OP, "destination_type", destination_type, tuple(DESTINATIONS))
    scale = check.as_array(OP, "scale", scale)
    shift = None if shift is None else check.as_array(OP, "shift", shift)
    for name, value in (("scale", scale), ("shift", scale if shift is None else shift)):
        if value.dtype != data.dtype:
            raise OpError(OP, f"input '{name}'", "element type must equal that of 'data'", value=value.dtype.name,
                          allowed=data.dtype.name)
    if shift is not None and shift.shape != scale.shape:
        raise OpError(OP, "input 'shift'", "must have the shape of 'scale'", value=shift.shape, allowed=scale.shape)
    try:
        shape = np.broadcast_shapes(data.shape, scale.shape)
    except ValueError:
        shape = None
    if shape != data.shape:
        raise OpError(OP, "input 'scale'", f"must broadcast to the shape of 'data' {data.shape}", value=scale.shape)
    with np.errstate(all="ignore"):
        if shift is None:  # no shift term (adding a zero would turn -0 into +0)
            return (quantize((data * scale).astype(data.dtype), destination) / scale).astype(data.dtype)
        shifted = (data * scale - shift).astype(data.dtype)
        return ((quantize(shifted, destination) + shift) / scale).astype(data.dtype)


def _kernel_v13(data, scale, shift=None, destination_type="f8e4m3"):
    return (fake_convert(data, scale, shift, destination_type),)


def cases(rng: np.random.Generator) -> list:
    """Data over the whole range of each destination type (subnormals, zeros, beyond the largest value),
    per-tensor and per-channel scales (powers of two: OpenVINO's CPU plugin multiplies by 1 / scale, exact
    then), with and without shift, f16 and f32."""
    out = []
    for index in range(18):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        dtype = TYPES[(0, 2)[index % 2]]  # f16, f32 (bf16 has no numpy <-> OpenVINO Parameter path)
        destination = ("f8e4m3", "f8e5m2")[index // 3 % 2]
        largest = DESTINATIONS[destination][1]
        shape = [(2, 3, 4), (64,), (1, 4, 2, 3)][index % 3]
        magnitude = np.exp2(r.uniform(-20 if destination == "f8e5m2" else -12, np.log2(largest) + 1, shape))
        data = (r.choice([-1.0, 1.0], shape) * magnitude).astype(np.float32)
        data.reshape(-1)[:4] = [0.0, -0.0, largest * 1.1, -largest * 1.06]
        # per tensor, or per channel (axis 1, the spec's example)
        scale_shape = (1,) if index % 3 == 1 else tuple(d if axis == 1 else 1 for axis, d in enumerate(shape))
        scale = np.exp2(r.integers(-3, 4, scale_shape)).astype(np.float32)
        shift = (r.choice([-2, -1, 1, 3], scale_shape) / 4.0).astype(np.float32)  # nonzero: a divergence row
        use_shift = index % 4 < 2
        with np.errstate(over="ignore"):  # beyond f16's range: infinities, saturated like the others
            values = tuple(v.astype(dtype) for v in (data, scale, shift))
        data, scale, shift = values
        out.append(Case(f"fake_convert_{index}_{destination}_{dtype.name}",
                        (data, scale, shift if use_shift else None), {"destination_type": destination}))
    return out


def bad_cases() -> list:
    x = np.ones((2, 3), np.float32)
    return [
        (Case("integer", (x.astype(np.int32), np.ones(1, np.int32), None), {"destination_type": "f8e4m3"}),
         "unsupported element type"),
        (Case("scale_type", (x, np.ones(1, np.float16), None), {"destination_type": "f8e4m3"}),
         "element type must equal that of 'data'"),
        (Case("scale_grows", (x, np.ones((4, 2, 3), np.float32), None), {"destination_type": "f8e5m2"}),
         "must broadcast to the shape"),
        (Case("shift_shape", (x, np.ones((1, 3), np.float32), np.ones((2, 3), np.float32)),
              {"destination_type": "f8e5m2"}), "shape of 'scale'"),
        (Case("destination", (x, np.ones(1, np.float32), None), {"destination_type": "f4e2m1"}), "destination_type"),
    ]


# Divergences of OpenVINO's CPU plugin (2026.4, f32 precision hint, measured) ---------------------------

_OV = "openvino-cpu"


def _nan_inside(inputs, attributes) -> bool:
    data, scale = np.asarray(inputs["data"], np.float32), np.asarray(inputs["scale"], np.float32)
    shift = inputs.get("shift")
    shift = np.zeros_like(scale) if shift is None else np.asarray(shift, np.float32)
    with np.errstate(all="ignore"):
        return bool(np.isnan(data * scale - shift).any())


def _inexact_reciprocal(inputs, attributes) -> bool:
    scale = np.asarray(inputs["scale"], np.float64)
    mantissa, _ = np.frexp(scale)
    return bool((np.abs(mantissa) != 0.5).any())


def _negative_zero_plus_zero_shift(inputs, attributes) -> bool:
    shift = inputs.get("shift")
    if shift is None:
        return False
    data, scale = np.asarray(inputs["data"]), np.asarray(inputs["scale"])
    with np.errstate(all="ignore"):
        quantized = quantize((data * scale - shift).astype(data.dtype), attributes["destination_type"])
        zero_shift = np.broadcast_to(np.asarray(shift) == 0, quantized.shape)
    return bool((zero_shift & (quantized == 0) & np.signbit(quantized)).any())


DIVERGENCES = (
    Divergence("ov-fake-convert-nan-saturates", _OV, "value", "NaN becomes the largest value",
               "The contract keeps NaN (OpenVINO's Convert to f8 does, and its core reference for f8e5m2). The CPU "
               "plugin saturates NaN like an infinity: NaN -> 448 (f8e4m3) or 57344 (f8e5m2), with the NaN's sign.",
               _nan_inside,
               Case("example", (np.array([np.nan, 1.0], np.float32), np.ones(1, np.float32), None),
                    {"destination_type": "f8e4m3"})),
    Divergence("ov-fake-convert-reciprocal-scale", _OV, "value", "divides by the scale as a product with 1 / scale",
               "The spec and OpenVINO's core reference compute (q + shift) / scale; the CPU plugin multiplies by "
               "the rounded 1 / scale: last-bit differences unless every scale is a power of two "
               "(x = 0.34095791 f32, scale 0.37, shift 0.11, f8e4m3: 0.33952701 vs 0.33952704 on the CPU).",
               _inexact_reciprocal,
               Case("example", (np.array([0.34095791], np.float32), np.array([0.37], np.float32),
                                np.array([0.11], np.float32)), {"destination_type": "f8e4m3"})),
    Divergence("ov-fake-convert-zero-shift-keeps-negative-zero", _OV, "value", "a zero shift is not added",
               "The spec adds the shift back: a value rounded to -0 plus a shift of 0 is +0 (IEEE). The CPU plugin "
               "leaves a zero shift out: -0.001 (f8e4m3, scale 1, shift 0) gives -0 there, +0 in the contract. "
               "Without a shift input both give -0.",
               _negative_zero_plus_zero_shift,
               Case("example", (np.array([-0.0001, 1.0], np.float32), np.ones(1, np.float32),
                                np.zeros(1, np.float32)), {"destination_type": "f8e4m3"})),
)


UNIT = DialectUnit(
    op_type=OP, family="quantization",
    specs=(OpSpec(OP, 13, (Port("data", "T"), Port("scale", "T"), Port("shift", "T", optional=True)),
                  (Port("output", "T"),),
                  (Attribute("destination_type", "string", "f8e4m3", tuple(DESTINATIONS)),), {"T": TYPES},
                  _kernel_v13,
                  doc="(q(data * scale - shift) + shift) / scale, q rounding to f8e4m3 / f8e5m2 (through f16, "
                      "nearest even, saturating) and back.",
                  infer=same_as_input(0)),),
    openvino=OpenVINO("FakeConvert", versions=(13,),
                      factory=lambda ov, inputs, a: ov.opset13.fake_convert(
                          inputs[0], inputs[1], inputs[2], a["destination_type"]),
                      attributes=(AttributeMap("destination_type", "string"),),
                      output_shapes=expected_shape_of("data"),
                      notes="rounding through f16 to the 8-bit type (nearest even, subnormals), saturating finite "
                            "values and infinities to the largest value, NaN kept; OpenVINO's CPU plugin saturates "
                            "NaN too and multiplies by 1 / scale (divergences)"),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("ONNX has 8-bit float types (Cast with saturate) from opset 19 only; the bridge targets 18"),
    raising=Absent("no standard ONNX pattern raised (QuantizeLinear/DequantizeLinear to float8 need opset 19)"),
    torch=Absent("no torch op emulates it with OpenVINO's f16 intermediate rounding"),
    divergences=DIVERGENCES,
    benchmark=Absent("not benchmarked yet"),
)
