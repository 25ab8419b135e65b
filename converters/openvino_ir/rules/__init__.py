"""Import rules, one module per kind of op. Importing this package registers them all: every module here
is imported (a new rule module needs no list to be edited)."""
import importlib as _importlib
import pkgutil as _pkgutil

for _module in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
    _importlib.import_module(f"{__name__}.{_module.name}")
