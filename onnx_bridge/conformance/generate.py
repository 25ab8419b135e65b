"""Generated cases: every unit's own generator (custom_ops.unit.DialectUnit.cases), one seeded rng per unit.

A unit whose generator is open-ended (takes `count`, e.g. the scatter, ReduceL2 and Unique units: element
types and attribute values cycled as a Latin square, shapes, values and special ingredients drawn from the
rng, see custom_ops.ops._generate) gives as many cases as asked; a unit with a fixed list gives its list, up
to the same cap. The rng of a unit depends on the seed and the op type alone, so adding a unit changes no
other unit's cases: the same seed and size always give the same cases.
"""
from __future__ import annotations

import inspect
import warnings
import zlib

import numpy as np

from custom_ops import units
from custom_ops.element_types import type_name
from custom_ops.generate import values  # noqa: F401  (re-exported: model inputs are drawn with it)
from custom_ops.unit import present

from onnx_bridge.errors import OpError

from .cases import Case, full_attributes, spec_of
from .tags import auto_tags

#: Cases per unit (at most) for each --size; a --cases N corpus is split evenly over the units.
SIZES = {"small": 40, "medium": 300, "large": 1200}


def generating_units() -> list:
    """The units with a case generator, in op order."""
    return [unit for unit in units() if present(unit.cases)]


def generated_cases(per_op: int | None = None, total: int | None = None, seed: int = 0) -> list[Case]:
    """At most `per_op` cases of each unit, or `total` cases split evenly over the units."""
    generating = generating_units()
    counts = [per_op] * len(generating) if total is None else _split(total, len(generating))
    cases = []
    for unit, count in zip(generating, counts):
        rng = np.random.default_rng([seed, zlib.crc32(unit.op_type.encode())])
        ports = [port.name for port in unit.newest.inputs]
        for made in _unit_cases(unit, rng, count):
            inputs = {port: None if value is None else np.asarray(value)
                      for port, value in zip(ports, made.inputs)}
            case = Case(f"gen/{unit.op_type}/{made.id}", unit.op_type, inputs,
                        full_attributes(unit.op_type, made.attributes), "generated")
            case.tags = auto_tags(case) | _validity(case)
            case.description = _describe(case)
            cases.append(case)
    return cases


def _unit_cases(unit, rng, count: int) -> list:
    """`count` cases of an open-ended generator (one taking `count`), else the unit's list up to `count`."""
    if "count" in inspect.signature(unit.cases).parameters:
        return unit.cases(rng, count=count)
    return unit.cases(rng)[:count]


def _validity(case: Case) -> frozenset:
    """{"invalid"} when the contract rejects the case (bool mean, an out-of-range index, ...)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            spec_of(case.op).run(case.input_list(), case.attributes)
    except OpError:
        return frozenset({"invalid"})
    return frozenset()


def _split(total: int, units: int) -> list[int]:
    """`total` cases over `units` units: the same share each, the remainder to the first units."""
    share, extra = divmod(total, units)
    return [share + (index < extra) for index in range(units)]


# ------------------------------------------------------------------------------------------------------
# Descriptions


def _array(name: str, array: np.ndarray) -> str:
    return f"{name} {type_name(array.dtype)}{list(array.shape)}"


def _describe(case: Case) -> str:
    """Attributes, then each input: small integer inputs (axes, lengths) by value, tensors by type and shape."""
    parts = [", ".join(f"{k}={v}" for k, v in case.attributes.items())] if case.attributes else []
    for name, value in case.inputs.items():
        if value is None:
            parts.append(f"no {name}")
        elif value.size <= 2 and value.ndim <= 1 and value.dtype.kind in "iu":
            shown = value.reshape(-1).tolist() if value.ndim else value.item()
            parts.append(f"{name} {shown} ({type_name(value.dtype)})")
        else:
            parts.append(_array(name, value))
    tags = sorted(case.tags)
    return " · ".join(parts) + (f" · {', '.join(tags)}" if tags else "")
