"""A real wheel (not the editable install the tests run from) carries everything `onnx-bridge demo` needs.

Builds the wheel with pip (build isolation: the setuptools that pyproject.toml declares), checks the build
prints no warning, installs it with --no-deps into a scratch venv that sees this interpreter's
site-packages for the dependencies (onnx, onnxruntime, ...; not their .pth hooks, so not this checkout's
editable install), and runs the installed `onnx-bridge demo` from a directory outside the checkout.
"""
from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GALLERY = sorted(p.name for p in (ROOT / "models").iterdir() if p.suffix in (".onnx", ".xml", ".bin", ".npz"))
#: Lines of a verbose build that are warnings about the project (not pip's own notes about the index).
_WARNING = re.compile(r"(?i)(deprecat|warning:|warn\(|SetuptoolsWarning)")
_BENIGN = re.compile(r"(?i)byte-compiling is disabled|WARNING: Location '.*' is ignored")

pytestmark = [pytest.mark.wheel, pytest.mark.slow]  # 15 s alone, ~60 s on a busy machine


def _run(command, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_NO_INDEX")}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, **kwargs)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = out / "source"  # a copy: the build writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis"))
    built = _run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", str(source), "-w", str(out)])
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    warnings = [line for line in (built.stdout + built.stderr).splitlines()
                if _WARNING.search(line) and not _BENIGN.search(line)]
    assert not warnings, "the build warns:\n" + "\n".join(warnings)
    (path,) = out.glob("onnx_bridge-*.whl")
    return path


def test_wheel_ships_the_gallery(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [name for name in GALLERY if f"onnx_bridge/gallery/{name}" not in names]
    assert not missing, f"gallery files not in the wheel: {missing}"
    assert "onnx_bridge/cli.py" in names and "custom_ops/_ort.py" in names


def test_installed_wheel_runs_the_demo(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site_dir = Path(_run([str(python), "-c", "import site; print(site.getsitepackages()[0])"]).stdout.strip())
    # The dependencies come from this interpreter's site-packages (appended after the venv's own).
    (site_dir / "zz_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    installed = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                      "--no-index", str(wheel)])
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert not [line for line in installed.stderr.splitlines() if _WARNING.search(line)
                and not _BENIGN.search(line)], installed.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    where = _run([str(python), "-c", "import onnx_bridge; print(onnx_bridge.__file__)"], cwd=outside)
    assert where.stdout.startswith(str(site_dir)), where.stdout + where.stderr
    demo = _run([str(env_dir / "bin" / "onnx-bridge"), "demo", "--repeat", "1"], cwd=outside)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    for model in ("gnn_aggregation", "kv_cache", "voxel_pooling"):
        assert f"\n{model}:" in demo.stdout
    assert "Traceback" not in demo.stderr
