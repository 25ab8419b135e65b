import importlib.util
import zlib

import numpy as np
import pytest


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def pytest_collection_modifyitems(config, items):
    # openvino and torch are installed by `make test`; a run without them says so instead of passing.
    for marker, module in (("openvino", "openvino"), ("torch", "torch")):
        if not _has(module):
            skip = pytest.mark.skip(reason=f"{module} not installed (pip install onnx-bridge[{marker}])")
            for item in items:
                if marker in item.keywords:
                    item.add_marker(skip)


@pytest.fixture(autouse=True)
def _module_rng_per_test(request, monkeypatch):
    """A test module's `RNG` (module level, drawn from by its value helpers while a test runs) is seeded from
    the test's own name for the test's duration: each test, every parametrized case too, draws the same
    values run alone, in any order or on any xdist worker. Tables the module builds at import keep the
    module's own seed."""
    module = request.module
    if isinstance(getattr(module, "RNG", None), np.random.Generator):
        seed = zlib.crc32(f"{module.__name__}::{request.node.name}".encode())
        monkeypatch.setattr(module, "RNG", np.random.default_rng(seed))
