"""The declared dependency minimums are what `make test-lowest` installs, and what the code checks."""
import importlib.util
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

from custom_ops import _ortx_compat

ROOT = Path(__file__).resolve().parents[1]


def _lowest_module():
    spec = importlib.util.spec_from_file_location("lowest_constraints", ROOT / ".ci" / "lowest_constraints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _dependencies():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]


def test_every_dependency_is_pinned_to_its_minimum():
    pins = _lowest_module().lowest(_dependencies())
    assert len(pins) == len(_dependencies())
    assert all("==" in pin for pin in pins)


def test_a_dependency_without_a_minimum_is_refused():
    with pytest.raises(SystemExit, match="give every dependency a minimum"):
        _lowest_module().lowest(["numpy"])


def test_the_import_check_names_the_declared_minimum():
    pins = dict(pin.split("==") for pin in _lowest_module().lowest(_dependencies()))
    declared = tuple(int(part) for part in pins["onnxruntime-extensions"].split("."))
    assert declared == _ortx_compat.MINIMUM
