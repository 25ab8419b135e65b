"""The unit registry: every module `custom_ops/ops/<family>/<op_snake>.py` defines `UNIT` (a
custom_ops.unit.DialectUnit); load() imports them all and registers their specs. Adding an op is adding
its module (and its test): there is no import list to edit."""
from __future__ import annotations

import importlib
import pkgutil
import threading

from .._spec import register, unregister_all
from ..unit import DialectUnit

_UNITS: dict[str, DialectUnit] = {}
_LOADED = False
_LOCK = threading.RLock()  # loaded on first use: another thread waits for the whole registry


def _register(unit: DialectUnit, module: str) -> None:
    if not isinstance(unit, DialectUnit):
        raise TypeError(f"{module}.UNIT is not a custom_ops.unit.DialectUnit")
    if unit.op_type in _UNITS:
        raise RuntimeError(f"two units define {unit.op_type}: {module} and another")
    for spec in unit.specs:
        if spec.op_type != unit.op_type:
            raise RuntimeError(f"{module}: spec of {spec.op_type} in the unit of {unit.op_type}")
        register(spec)
    _UNITS[unit.op_type] = unit


def unit_modules() -> list[str]:
    """Names of every op module under custom_ops.ops (families are packages, ops their modules)."""
    names = []
    for family in pkgutil.iter_modules(__path__, prefix=f"{__name__}."):
        if not family.ispkg:
            continue
        package = importlib.import_module(family.name)
        names += [m.name for m in pkgutil.iter_modules(package.__path__, prefix=f"{family.name}.")
                  if not m.ispkg and not m.name.rsplit(".", 1)[1].startswith("_")]
    return sorted(names)


def load() -> None:
    """Import every unit module and register its unit (idempotent). A load that fails is undone, so the
    next use raises again rather than answering from half a registry."""
    global _LOADED
    with _LOCK:
        if _LOADED:
            return
        _LOADED = True  # a unit module that reads the registry while loading does not reload it
        try:
            for name in unit_modules():
                module = importlib.import_module(name)
                if not hasattr(module, "UNIT"):
                    raise RuntimeError(f"{name} defines no UNIT (custom_ops.unit.DialectUnit)")
                _register(module.UNIT, name)
        except BaseException:
            _LOADED = False
            _UNITS.clear()
            unregister_all()
            raise


def units() -> list[DialectUnit]:
    """Every registered unit, by op type."""
    load()
    return [_UNITS[name] for name in sorted(_UNITS)]


def unit_of(op_type: str) -> DialectUnit | None:
    """The unit of `op_type`, or None (an op not yet defined as a unit)."""
    load()
    return _UNITS.get(op_type)
