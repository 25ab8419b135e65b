import importlib.util

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
