"""The packages stack one way: custom_ops < converters < onnx_bridge.

A lower package never imports a higher one, at module level or inside a function, so no two modules
of different packages can import each other. Shared names (errors, domain and opset constants, model
loading) live in the lowest package that needs them; onnx_bridge re-exports the public ones.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["custom_ops", "converters", "onnx_bridge"]  # low to high


def _imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import statement in the file, nested ones included."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    current_package = parts if path.name == "__init__.py" else parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = current_package[: len(current_package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            found.append((node.lineno, module))
    return found


def _upward_imports() -> list[str]:
    problems = []
    for rank, package in enumerate(LAYERS):
        higher = LAYERS[rank + 1:]
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, module in _imported_modules(path, package):
                top = module.split(".")[0]
                if top in higher:
                    problems.append(f"{path.relative_to(ROOT)}:{line} imports {module} ({package} < {top})")
    return problems


def test_no_lower_package_imports_a_higher_one():
    assert _upward_imports() == []


def test_the_check_sees_nested_and_relative_imports(tmp_path, monkeypatch):
    # The check must fail on what it is meant to catch: a function-level import of a higher package,
    # and a relative import resolved to its package.
    fake = tmp_path / "custom_ops"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "bad.py").write_text("def f():\n    from onnx_bridge.session import InferenceSession\n")
    (fake / "fine.py").write_text("from .errors import OpError\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    for name in ("converters", "onnx_bridge"):
        (tmp_path / name).mkdir()
    assert _upward_imports() == ["custom_ops/bad.py:2 imports onnx_bridge.session (custom_ops < onnx_bridge)"]
    assert ("custom_ops.errors" in {m for _, m in _imported_modules(fake / "fine.py", "custom_ops")})


@pytest.mark.parametrize("name", ["BridgeError", "OpError", "ConversionError", "ModelError", "DOMAIN",
                                  "DIALECT_OPSET", "IR_VERSION", "TARGET_OPSET"])
def test_public_names_still_come_from_onnx_bridge(name):
    import onnx_bridge
    import custom_ops.config
    import custom_ops.errors
    lower = getattr(custom_ops.errors, name, None) or getattr(custom_ops.config, name)
    assert getattr(onnx_bridge, name) is lower


#: Code outside the layers that uses them (benchmarks, examples): public names only, like the layers above.
CONSUMERS = ["benchmarks", "examples"]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_imports(root: Path, packages=LAYERS + CONSUMERS) -> list[str]:
    """Imports of a private module or name of another top-level package (a `_name` part after the package:
    `import package._module`, `from package._module import x`, `from package import _module`, `from
    package.module import _name`): whatever is not the package's own uses public names only."""
    problems = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in sorted(ast.walk(tree), key=lambda n: getattr(n, "lineno", 0)):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
                else:
                    continue
                for module in dict.fromkeys(modules):
                    parts = module.split(".")
                    if parts[0] in LAYERS and parts[0] != package and any(_private(p) for p in parts[1:]):
                        problems.append(f"{path.relative_to(root).as_posix()}:{node.lineno} imports {module}")
                        break
    return problems


def test_no_private_module_or_name_is_imported_across_packages():
    assert _private_imports(ROOT) == []


def test_the_private_import_check_sees_every_form(tmp_path):
    for name in LAYERS + CONSUMERS:
        (tmp_path / name).mkdir()
    (tmp_path / "custom_ops" / "_types.py").write_text("")
    (tmp_path / "converters" / "bad.py").write_text("from custom_ops._types import X\n"
                                                     "def f():\n    from custom_ops import _types\n"
                                                     "import custom_ops._ort\n")
    (tmp_path / "custom_ops" / "fine.py").write_text("from custom_ops._types import X\n")
    (tmp_path / "onnx_bridge" / "fine.py").write_text("from custom_ops import pyops as _ort, __version__\n")
    (tmp_path / "benchmarks" / "bad.py").write_text("from onnx_bridge.compare_models import value_types, _helper\n")
    assert _private_imports(tmp_path) == ["converters/bad.py:1 imports custom_ops._types",
                                          "converters/bad.py:3 imports custom_ops._types",
                                          "converters/bad.py:4 imports custom_ops._ort",
                                          "benchmarks/bad.py:1 imports onnx_bridge.compare_models._helper"]
