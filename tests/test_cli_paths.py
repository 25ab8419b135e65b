"""Bad paths on the command line: each is one line on stderr with its own exit code, no traceback, and
nothing written (every file in the directory as it was, no temporary or created directory left).

Each case is (command line, exit code, part of the message); in a command line, {model} / {inputs} are a
dialect model and its inputs copied into the test directory, {file} an existing regular file, {dir} the
test directory itself, and {link:X} / {hard:X} a symlink / hard link to X made for the case.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from onnx_bridge.cli import main
from onnx_bridge.commands import _files

MODELS = Path(__file__).resolve().parents[1] / "models"
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

CASES = [
    # missing or unreadable inputs: 3
    ("convert {dir}/absent.onnx -o {dir}/out.onnx", 3, "absent.onnx does not exist"),
    ("convert {dir}/no/such/dir/m.onnx -o {dir}/out.onnx", 3, "does not exist (no directory"),
    ("convert {dir}/sub -o {dir}/out.onnx", 3, "is a directory, not a file"),
    ("run {dir}/absent.onnx", 3, "model", ),
    ("run {model} --inputs {dir}/absent.npz", 3, "inputs file"),
    # output paths that cannot be files: 4
    ("convert {model} -o {dir}/sub", 4, "is a directory; give a file name"),
    ("convert {model} -o {file}/out.onnx", 4, "is a file, not a directory"),
    ("convert {model} -o {file}/deeper/out.onnx", 4, "is a file, not a directory"),
    ("convert {model} -o {dir}/out.onnx --report {file}/r.json", 4, "report"),
    ("convert {model} -o {dir}/out.onnx --report {dir}/sub", 4, "is a directory"),
    ("convert {model} -o {dir}/same.onnx --report {dir}/same.onnx", 4, "also another output"),
    ("run {model} --output {dir}/sub", 4, "is a directory"),
    ("run {model} --output {file}/o.npz", 4, "is a file, not a directory"),
    # outputs that cannot be written: 5 (as root only a file system refuses)
    ("convert {model} -o /proc/onnx-bridge-test.onnx", 5, "cannot write output"),
    ("convert {model} -o {dir}/new/out.onnx --report /proc/onnx-bridge-test.json", 5, "cannot write report"),
    ("convert {model} -o /proc/onnx-bridge-new/out.onnx", 5, "cannot create directory"),
    ("run {model} --output /sys/onnx-bridge-test.npz", 5, "cannot write --output"),
    # outputs that are inputs: 6
    ("convert {model} -o {model}", 6, "is the input"),
    ("convert {model} -o {dir}/out.onnx --report {model}", 6, "is the input"),
    ("run {model} --output {model}", 6, "is the input"),
    ("run {model} --inputs {inputs} --output {inputs}", 6, "is the input"),
    ("run {model} --output {link:model}", 6, "is the input"),
    ("run {model} --inputs {inputs} --output {hard:inputs}", 6, "is the input"),
    ("run {model} --output {dir}/../{dirname}/model.onnx", 6, "is the input"),
    # the long-running commands check their paths before any work
    ("conformance {dir}/absent.onnx", 3, "model"),
    ("conformance --cases 1 --report {file}/r.json", 4, "is a file, not a directory"),
    ("conformance --cases 1 --report {file}", 4, "is a file, not a directory"),  # a directory report
    ("demo --models {dir}/absent", 3, "is not a directory"),
    ("bench --json {dir}/sub", 4, "is a directory"),
    ("bench --markdown {file}/b.md", 4, "is a file, not a directory"),
]


def _snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.is_symlink(), p.is_dir(), None if p.is_dir() or p.is_symlink()
                                       else p.read_bytes()) for p in sorted(root.rglob("*"))}


@pytest.fixture
def workdir(tmp_path):
    shutil.copy(MODELS / "kv_cache.onnx", tmp_path / "model.onnx")
    shutil.copy(MODELS / "kv_cache_inputs.npz", tmp_path / "inputs.npz")
    (tmp_path / "file").write_bytes(b"a regular file")
    (tmp_path / "sub").mkdir()
    return tmp_path


def _argv(template: str, root: Path) -> list[str]:
    names = {"model": root / "model.onnx", "inputs": root / "inputs.npz", "file": root / "file", "dir": root,
             "dirname": root.name}
    argv = []
    for word in template.split():
        if word.startswith("{link:") or word.startswith("{hard:"):
            kind, target = word[1:-1].split(":")
            link = root / f"{kind}-to-{target}"
            (os.symlink if kind == "link" else os.link)(names[target], link)
            word = str(link)
        argv.append(word.format(**names))
    return argv


@pytest.mark.parametrize("template, code, message", CASES, ids=[c[0] for c in CASES])
def test_bad_path(workdir, capsys, template, code, message):
    argv = _argv(template, workdir)
    before = _snapshot(workdir)
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"onnx-bridge {argv[0]}: error: "), err
    assert message in err and "Traceback" not in err
    assert _snapshot(workdir) == before


def _lock(directory: Path) -> bool:
    """Make `directory` unwritable for this user: mode 555, and as root (who ignores modes) the immutable
    flag (chattr +i, needs CAP_LINUX_IMMUTABLE). False when that is not possible here."""
    directory.chmod(0o555)
    if not AS_ROOT:
        return True
    import subprocess
    try:
        return subprocess.run(["chattr", "+i", str(directory)], capture_output=True).returncode == 0
    except OSError:  # no chattr
        return False


def _unlock(directory: Path) -> None:
    if AS_ROOT:
        import subprocess
        subprocess.run(["chattr", "-i", str(directory)], capture_output=True)
    directory.chmod(0o755)


#: A directory even root may not create files in (procfs refuses), for root without chattr +i.
ROOT_UNWRITABLE = Path("/proc/self")


def test_unwritable_directory(workdir, capsys):
    locked = workdir / "locked"
    locked.mkdir()
    try:
        target = locked if _lock(locked) else ROOT_UNWRITABLE
        if os.access(target, os.W_OK):
            pytest.skip(f"no directory this user cannot write to ({target} is writable here)")
        before = sorted(p.name for p in target.iterdir())
        assert main(["convert", str(workdir / "model.onnx"), "-o", str(target / "out.onnx")]) == 5
        assert f"directory {target} is not writable" in capsys.readouterr().err
        assert sorted(p.name for p in target.iterdir()) == before
    finally:
        _unlock(locked)


def test_every_exit_code_is_documented():
    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    for code, meaning in _files.EXIT_CODES.items():
        assert f"{code:<4} {meaning}" in page


def test_created_directories_are_reported(workdir, capsys):
    out = workdir / "a" / "b" / "out.onnx"
    assert main(["convert", str(workdir / "model.onnx"), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"created directory {workdir / 'a'}\ncreated directory {workdir / 'a' / 'b'}\n" in printed
    assert out.is_file()


def test_a_failed_commit_restores_every_target(workdir, monkeypatch):
    """The second output fails while being moved into place: the first one, already moved, is rolled
    back to its previous content, and nothing else is left behind."""
    first, second = workdir / "first.bin", workdir / "second.bin"
    first.write_bytes(b"old first")
    outputs = _files.Outputs(inputs=[])
    outputs.add_bytes(first, b"new first")
    outputs.add_bytes(second, b"new second")
    real_replace = os.replace

    def failing_replace(source, target):
        if Path(target) == second:
            raise OSError(28, "No space left on device")
        return real_replace(source, target)

    monkeypatch.setattr(_files.os, "replace", failing_replace)
    before = _snapshot(workdir)
    with pytest.raises(_files.OutputWriteError, match="No space left on device"):
        outputs.commit()
    assert _snapshot(workdir) == before


def test_run_refuses_before_running(workdir, capsys):
    """The refusal comes before any work: a model that would fail is not even loaded."""
    (workdir / "broken.onnx").write_bytes(b"not a model")
    assert main(["run", str(workdir / "broken.onnx"), "--output", str(workdir / "broken.onnx")]) == 6
    assert np.load(workdir / "inputs.npz").files  # untouched and still readable
