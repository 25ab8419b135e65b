"""Import rules, one module per kind of op. Importing this package registers the rules of COMMON, the modules
CNN and transformer IRs use; every other module here is imported on the first lookup those do not answer, or
the first listing (_registry.defer), so converting such an IR does not pay their import at start-up. The
modules are found by listing the package: a new rule module needs no list to be edited (it loads on demand)."""
import importlib as _importlib
import pkgutil as _pkgutil
import sys as _sys

from .._registry import defer as _defer

#: The rule modules imported with the package: every op of the benchmark's 28 real IRs (resnet, mobilenet,
#: efficientnet, regnet, shufflenet, googlenet, convnext, r3d, BERT, DistilBERT, GPT-2, DeiT; f32 and nncf
#: INT8) has its rule in one of them. The other modules cost a fresh `convert` ~10 ms to import.
COMMON = ("attention", "conv", "elementwise", "io", "nn", "norm", "pool", "quantization", "reduce", "tensor")


def all_modules() -> list[str]:
    """Every rule module of the package, by name, sorted."""
    return sorted(module.name for module in _pkgutil.iter_modules(__path__))


def _import(names) -> None:
    for name in names:
        _importlib.import_module(f"{__name__}.{name}")


def _import_the_rest() -> None:
    """Import the modules not in COMMON. If one fails, those this call imported are forgotten too: load_all
    drops the rules they registered, and the next attempt must import (register) them again."""
    before = set(_sys.modules)
    try:
        _import(all_modules())
    except BaseException:
        for name in [m for m in _sys.modules if m.startswith(f"{__name__}.") and m not in before]:
            del _sys.modules[name]
        raise


_import(COMMON)
_defer(_import_the_rest)
