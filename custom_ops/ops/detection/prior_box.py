"""PriorBox-1/-8 (OpenVINO): SSD anchor boxes for every cell of a feature map, normalised to the image.

output_size: [H, W] and image_size: [IH, IW], 1-D integer tensors. Output: float32 [2, 4 * H * W * P]:
row 0 the boxes (xmin, ymin, xmax, ymax per prior, priors of a cell consecutive, cells row-major),
row 1 the variances. The priors of a cell, in order (OpenVINO's reference implementation):
for each fixed_size (with its density) the density grid of fixed boxes, per fixed_ratio or per aspect
ratio; then for each min_size the square box, the sqrt(min * max) box and the aspect-ratio boxes
(min_max_aspect_ratios_order=1, Caffe's order; 0 puts the aspect-ratio boxes before the max box).
Arithmetic is float32, one operation at a time in the reference's order, so the boxes are bit-exact.
Attribute combinations whose box count disagrees with the count OpenVINO declares for the output shape
(e.g. fixed_size together with min_size) are refused: OpenVINO writes past its output there.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops._types import INTEGER_TYPES
from custom_ops.errors import OpError
from custom_ops.unit import REQUIRED, Absent, Attribute, Case, DialectUnit, OpenVINO, OpSpec, Port

from ._common import F32 as F32_TYPES, FLOAT, bool_map, flag, maps, native, output_type
from ._priors import bad_case, i64, non_negative, sizes, variance, with_variances

OP = "PriorBox"
F32 = np.float32

DEFAULTS = dict(min_size=(), max_size=(), aspect_ratio=(), density=(), fixed_ratio=(), fixed_size=(),
                clip=0, flip=0, step=0.0, offset=0.0, variance=(), scale_all_sizes=1,
                min_max_aspect_ratios_order=1)


def _floats(op: str, name: str, values, positive: bool = True) -> list[float]:
    out = [float(F32(v)) for v in values]
    if positive and any(not v > 0 for v in out):
        raise OpError(op, f"attribute '{name}'", "values must be positive", value=out, allowed="> 0")
    return out


def aspect_ratios(ratios, flip) -> list[float]:
    """1.0 first, then each new ratio (and its inverse with flip), duplicates within 1e-6 dropped."""
    out = [F32(1.0)]
    for ratio in ratios:
        ratio = F32(ratio)
        if any(abs(float(ratio) - float(seen)) < 1e-6 for seen in out):
            continue
        out.append(ratio)
        if flip:
            out.append(F32(1.0) / ratio)
    return out


def declared_count(a: dict) -> int:
    """The number of priors per cell OpenVINO declares in the output shape (op::v8::PriorBox)."""
    unique = {round(float(r) * 1e6) / 1e6 for r in a["aspect_ratio"]}
    if a["flip"]:
        unique |= {round(1 / float(F32(r)) * 1e6) / 1e6 for r in a["aspect_ratio"]}
    total = len(unique | {1.0})
    if a["scale_all_sizes"]:
        count = total * len(a["min_size"]) + len(a["max_size"])
    else:
        count = total + len(a["min_size"]) - 1
    if a["fixed_size"]:
        count = total * len(a["fixed_size"])
    for density in a["density"]:
        grid = int(density) ** 2 - 1
        count += (len(a["fixed_ratio"]) if a["fixed_ratio"] else total) * grid
    return count


def _priors(a: dict, ratios: list, min_sizes: list) -> list[tuple]:
    """Per prior of a cell: (centre shift a, b, c as in ((centre - a) + b) + c, half width, half height,
    clipped at the image border)."""
    out = []

    def grid(s: int, half_w, half_h):
        density = int(a["density"][s])
        size = a["fixed_size"][s]
        shift = int(size / density)
        base = int(size) // 2
        for r in range(density):
            for c in range(density):
                out.append(((base, shift / F32(2), c * shift), (base, shift / F32(2), r * shift),
                            half_w, half_h, True))

    for s, size in enumerate(a["fixed_size"]):
        if a["fixed_ratio"]:
            for ratio in a["fixed_ratio"]:
                root = np.sqrt(F32(ratio))
                grid(s, F32(size) * F32(0.5) * root, F32(size) * F32(0.5) / root)
            continue
        if a["density"]:
            half = F32(float(int(size))) * F32(0.5)
            grid(s, half, half)
        for ratio in ratios:
            if abs(float(ratio) - 1.0) < 1e-6:
                continue
            root = np.sqrt(ratio)
            grid(s, F32(size) * F32(0.5) * root, F32(size) * F32(0.5) / root)

    none = ((0, F32(0), 0), (0, F32(0), 0))
    for index, size in enumerate(min_sizes):
        half = size * F32(0.5)
        boxes = [(*none, half, half, False)]
        maximum = []
        if len(a["max_size"]) > index:
            half = np.sqrt(size * F32(a["max_size"][index])) * F32(0.5)
            maximum = [(*none, half, half, False)]
        ratio_boxes = []
        if a["scale_all_sizes"] or index == len(min_sizes) - 1:
            base = min_sizes[index if a["scale_all_sizes"] else 0]
            for ratio in ratios:
                if abs(float(ratio) - 1.0) < 1e-6:
                    continue
                root = np.sqrt(ratio)
                ratio_boxes.append((*none, base * F32(0.5) * root, base * F32(0.5) / root, False))
        order = maximum + ratio_boxes if a["min_max_aspect_ratios_order"] else ratio_boxes + maximum
        out += boxes + order
    return out


def validate_attributes(a: dict) -> dict:
    a = {**DEFAULTS, **a}
    for name in ("clip", "flip", "scale_all_sizes", "min_max_aspect_ratios_order"):
        a[name] = check.flag(OP, name, a[name])
    for name in ("min_size", "max_size", "aspect_ratio", "fixed_ratio", "fixed_size"):
        a[name] = _floats(OP, name, a[name])
    a["density"] = _floats(OP, "density", a["density"])
    if any(int(d) < 1 for d in a["density"]):
        raise OpError(OP, "attribute 'density'", "values must be at least 1", value=a["density"],
                      allowed=">= 1")
    if a["fixed_size"] and len(a["density"]) < len(a["fixed_size"]):
        raise OpError(OP, "attribute 'density'", "needs one value per fixed_size", value=a["density"],
                      allowed=f"{len(a['fixed_size'])} values")
    a["variance"] = variance(OP, a["variance"])
    for name in ("step", "offset"):
        a[name] = float(non_negative(OP, name, a[name]))
    return a


def prior_box(output_size, image_size, **attributes) -> np.ndarray:
    h, w, ih, iw = sizes(OP, output_size, image_size)
    a = validate_attributes(attributes)
    ratios = aspect_ratios(a["aspect_ratio"], a["flip"])
    step = F32(a["step"])
    min_sizes = [F32(s) for s in a["min_size"]]
    if not a["scale_all_sizes"]:                                     # MXNet-like sizes
        step = step * F32(ih)
        min_sizes = [s * F32(ih) for s in min_sizes]
    priors = _priors(a, ratios, min_sizes)
    count = declared_count(a)
    if len(priors) != count:
        raise OpError(OP, "attributes", "this combination makes OpenVINO write a different number of boxes "
                      "than its output shape declares", value=len(priors), allowed=f"{count} boxes per cell")

    if step == 0:
        cx = (np.arange(w, dtype=F32) + F32(0.5)) * (F32(iw) / F32(w) if w else F32(0))
        cy = (np.arange(h, dtype=F32) + F32(0.5)) * (F32(ih) / F32(h) if h else F32(0))
    else:
        cx = (F32(a["offset"]) + np.arange(w, dtype=F32)) * step
        cy = (F32(a["offset"]) + np.arange(h, dtype=F32)) * step
    cx = np.broadcast_to(cx[None, :], (h, w)).reshape(-1, 1)
    cy = np.broadcast_to(cy[:, None], (h, w)).reshape(-1, 1)

    def shifted(centre, k):
        sa = np.array([p[k][0] for p in priors], F32)
        sb = np.array([p[k][1] for p in priors], F32)
        sc = np.array([p[k][2] for p in priors], F32)
        return ((centre - sa) + sb) + sc

    x, y = shifted(cx, 0), shifted(cy, 1)                            # [cells, P]
    half_w = np.array([p[2] for p in priors], F32)
    half_h = np.array([p[3] for p in priors], F32)
    clip_each = np.array([p[4] for p in priors], bool)
    inv_w, inv_h = F32(1) / F32(iw), F32(1) / F32(ih)
    boxes = np.stack([(x - half_w) * inv_w, (y - half_h) * inv_h, (x + half_w) * inv_w, (y + half_h) * inv_h],
                     axis=-1)                                        # [cells, P, 4]
    low = np.maximum(boxes[..., :2], F32(0))
    high = np.minimum(boxes[..., 2:], F32(1))
    boxes = np.where(clip_each[:, None], np.concatenate([low, high], axis=-1), boxes)
    if a["clip"]:
        boxes = np.clip(boxes, F32(0), F32(1))
    return with_variances(boxes, a["variance"])


# Unit -------------------------------------------------------------------------------------------------

LISTS = ("min_size", "max_size", "aspect_ratio", "density", "fixed_ratio", "fixed_size", "variance")
FLAGS = ("clip", "flip", "scale_all_sizes", "min_max_aspect_ratios_order")


def _kernel_v8(output_size, image_size, **attributes):
    return (prior_box(output_size, image_size, **attributes),)


def cases(rng: np.random.Generator) -> list:
    """Caffe/SSD, MXNet-like (scale_all_sizes 0), fixed-size (TF) and Paddle-order configurations."""
    out = []
    for index in range(40):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        a = dict(min_size=[float(v) for v in r.uniform(2, 40, r.integers(1, 3)).round(1)],
                 aspect_ratio=list(r.choice([0.5, 2.0, 3.0, 1.0, 1 / 3], r.integers(0, 3))),
                 flip=int(r.integers(2)), clip=int(r.integers(2)), step=float(r.choice([0, 8, 16.0, 0.1])),
                 offset=float(r.choice([0.5, 0.0, 0.3])), variance=[[0.1], [0.1, 0.1, 0.2, 0.2], []][index % 3],
                 scale_all_sizes=int(index % 4 != 1), min_max_aspect_ratios_order=int(index % 5 != 2))
        if a["scale_all_sizes"]:
            # one decimal: OpenVINO's IR writer keeps 6 significant digits of float lists
            a["max_size"] = [round(s + float(r.uniform(1, 20)), 1)
                             for s in a["min_size"]][: r.integers(0, len(a["min_size"]) + 1)]
        if index % 6 == 3:
            for name in ("min_size", "max_size"):
                a.pop(name, None)
            a["fixed_size"] = list(r.choice([4.0, 8.0, 6.0, 10.0], r.integers(1, 3)))
            a["density"] = list(r.choice([1.0, 2.0, 3.0], len(a["fixed_size"])))
            if index % 12 == 9:
                a["fixed_ratio"] = list(r.choice([1.0, 2.0, 0.5], 1))
                a["aspect_ratio"] = []
        a = {k: v for k, v in a.items() if v != []}
        layer = np.array([r.integers(1, 5), r.integers(1, 5)], np.dtype(str(r.choice(["int32", "int64"]))))
        image = np.array([r.integers(16, 300), r.integers(16, 300)], layer.dtype)
        try:
            prior_box(layer, image, **a)
        except OpError:
            continue        # a combination OpenVINO declares inconsistently: in bad_cases
        out.append(Case(f"prior_box_{index}", (layer, image), a))
    return out


def bad_cases() -> list:
    return [
        (bad_case("float_sizes", (np.array([2.0, 2.0], np.float32), i64([8, 8])), {"min_size": [2.0]}), "element type"),
        (bad_case("three_sizes", (i64([2, 2, 2]), i64([8, 8])), {"min_size": [2.0]}), "2 elements"),
        (bad_case("zero_image", (i64([2, 2]), i64([0, 8])), {"min_size": [2.0]}), "image_size"),
        (bad_case("negative_ratio", (i64([2, 2]), i64([8, 8])), {"min_size": [2.0], "aspect_ratio": [-1.0]}),
         "aspect_ratio"),
        (bad_case("three_variances", (i64([2, 2]), i64([8, 8])), {"min_size": [2.0], "variance": [0.1, 0.1, 0.2]}),
         "variance"),
        (bad_case("max_without_scale_all", (i64([2, 2]), i64([8, 8])),
              {"min_size": [2.0], "max_size": [4.0], "scale_all_sizes": 0}), "output shape declares"),
        (bad_case("fixed_and_min_size", (i64([2, 2]), i64([8, 8])),
              {"min_size": [2.0], "fixed_size": [4.0], "density": [1.0]}), "output shape declares"),
    ]


def _output_shapes(inputs: dict, attributes: dict) -> list:
    return [prior_box(inputs["output_size"], inputs["image_size"], **attributes).shape]


UNIT = DialectUnit(
    op_type=OP, family="detection",
    specs=(OpSpec(OP, 8, (Port("output_size", "T"), Port("image_size", "T")), (Port("priors", "F"),),
                  tuple(Attribute(name, "floats", []) for name in LISTS)
                  + tuple(flag(name, DEFAULTS[name]) for name in FLAGS)
                  + (Attribute("step", "float", 0.0), Attribute("offset", "float", REQUIRED)),
                  {"T": INTEGER_TYPES, "F": F32_TYPES}, _kernel_v8,
                  doc="SSD prior boxes of every feature-map cell, normalised to the image, and their variances.",
                  infer=output_type(FLOAT, [2, None])),),
    openvino=OpenVINO(
        "PriorBox", versions=(1, 8), factory=native("opset8", "PriorBox"),
        attributes=maps("floats", *LISTS) + bool_map(*FLAGS) + maps("float", "step", "offset"),
        constant_inputs=("output_size", "image_size"),   # the CPU plugin infers the output shape from their values
        output_shapes=_output_shapes,
        notes="PriorBox-1 is version 8 with min_max_aspect_ratios_order 1 (Caffe's order)"),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("the box count and values follow from the input values (output_size, image_size): "
                    "a standard lowering needs Range/Expand arithmetic per attribute configuration, not written"),
    raising=Absent("no standard ONNX pattern computes prior boxes"),
    torch=Absent("torch has no prior box op to export"),
    divergences=Absent("none measured on valid inputs (bit-exact on the generated cases); attribute "
                       "combinations OpenVINO mis-sizes are refused, see the module docstring"),
    benchmark=Absent("not benchmarked: a cheap constant-like op, usually folded"),
)
