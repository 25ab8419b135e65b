"""Input and output files of the commands: checked before any work, written all-or-nothing.

- check_input(path): the file exists and can be read, else InputFileError (exit 3).
- Outputs: every requested output is checked before the command does its work (not a directory, not
  under a file, not one of the inputs — symlinks and hard links included — not given twice, its
  directory writable); commit() then writes each one to a temporary file beside its target and moves
  them into place only when all were written; if any step fails, the targets are left as they were
  (previous files restored, new ones and created directories removed). Directories it creates are
  reported ("created directory X").
The exit codes are the table EXIT_CODES (shown by `onnx-bridge --help` and docs/cli.md).
"""
from __future__ import annotations

import errno
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from custom_ops.errors import BridgeError, ModelError

#: Exit code -> meaning (every command).
EXIT_CODES = {
    0: "success",
    1: "a check found differences (demo, conformance; compare: unexplained differences)",
    2: "usage error, or the model cannot be loaded, converted or run",
    3: "an input file is missing or cannot be read",
    4: "an output path cannot be a file: it is a directory, or sits under a file",
    5: "an output cannot be written: directory not writable, read-only file system, disk full",
    6: "an output path names an input file (the same file through a symlink or hard link too)",
    7: "convert: the result has a dialect node that can never run (see --allow-invalid)",
    8: "convert: the OpenVINO IR uses ops or configurations the importer does not support (all listed)",
    9: "compare: the outputs differ, and every difference is explained (tie order, int8 spread, a known "
       "deviation of OpenVINO CPU from its specification)",
    70: "internal error (a bug; ONNX_BRIDGE_TRACEBACK=1 prints the traceback)",
    130: "interrupted",
}


class FileProblem(BridgeError):
    exit_code = 2


class InputFileError(FileProblem):
    exit_code = 3


class OutputPathError(FileProblem):
    exit_code = 4


class OutputWriteError(FileProblem):
    exit_code = 5


class OutputIsInputError(FileProblem):
    exit_code = 6


def _reason(error: OSError) -> str:
    return error.strerror or type(error).__name__


def check_input(path, what: str = "input") -> Path:
    """`path` as a Path when it is a readable file; else InputFileError."""
    path = Path(path)
    if not path.exists():
        missing = next((p for p in reversed(path.parents) if not p.exists()), path)
        where = "" if missing == path else f" (no directory {missing})"
        raise InputFileError(f"{what} {path} does not exist{where}")
    if path.is_dir():
        raise InputFileError(f"{what} {path} is a directory, not a file")
    try:
        with open(path, "rb"):
            pass
    except OSError as error:
        raise InputFileError(f"cannot read {what} {path}: {_reason(error)}") from None
    if path.suffix.lower() == ".xml":
        check_ir(path)
    return path


class _RootFound(Exception):
    """Stops the XML parser at the root element (check_ir)."""


def check_ir(path) -> None:
    """An .xml input must be an OpenVINO IR (<net> root); checked here because OpenVINO, failing to read
    it as IR, tries every other frontend and prints their native log lines before its own error. Only the
    start of the file is parsed (up to the root element); OpenVINO reports errors further in. (expat itself,
    as ElementTree's parser is set up, namespaces included: importing ElementTree costs the start-up ~3 ms.)"""
    from xml.parsers import expat

    parser = expat.ParserCreate(None, "}")

    def root_found(name, attributes):
        raise _RootFound("{" + name if "}" in name else name)  # (ElementTree's tag: "{namespace}name")

    parser.StartElementHandler = root_found
    try:
        with open(path, "rb") as stream:
            while chunk := stream.read(4096):
                parser.Parse(chunk, False)
            parser.Parse(b"", True)  # no element at all: expat's "no element found"
    except expat.ExpatError as error:
        raise ModelError(f"{path} is not an OpenVINO IR: not well-formed XML ({error})") from None
    except _RootFound as found:
        if found.args[0] != "net":
            raise ModelError(f"{path} is not an OpenVINO IR: its root element is <{found.args[0]}>, "
                             "not <net>") from None


def _existing_ancestor(path: Path) -> Path:
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            return parent
    return Path(path.anchor or ".")


def check_output(path, what: str = "output", inputs=()) -> Path:
    """Refuse an output path that can never be written, or that names one of `inputs`."""
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(f"{what} {path} is a directory; give a file name")
    for source in inputs:
        try:
            same = path.exists() and Path(source).exists() and os.path.samefile(path, source)
        except OSError:
            same = False
        if same:
            raise OutputIsInputError(f"{what} {path} is the input {source}; refusing to overwrite it")
    ancestor = _existing_ancestor(path)
    if not ancestor.is_dir():
        raise OutputPathError(f"{what} {path} cannot be created: {ancestor} is a file, not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputWriteError(f"cannot write {what} {path}: directory {ancestor} is not writable")
    return path


@dataclass
class _Output:
    what: str
    #: The files this output consists of (an OpenVINO IR is an .xml and a .bin), the first is the main one.
    paths: list[Path]
    #: write(staging_dir): writes the files named like `paths` into staging_dir.
    write: Callable[[Path], None]
    #: Files it may write too (ONNX external data), moved into place before the others when written.
    optional: list[Path] = field(default_factory=list)


@dataclass
class Outputs:
    """The outputs of one command: check them all first, write them all or none (see the module doc)."""
    inputs: list = field(default_factory=list)
    _planned: list = field(default_factory=list)

    def add(self, path, write: Callable[[Path], None], what: str = "output", companions=(),
            optional=()) -> Path:
        """Plan an output (checked now, written by commit()). `companions`: suffixes of files written with it;
        `optional`: names of files beside it that write() may or may not produce (e.g. model.onnx.data)."""
        path = Path(path)
        paths = [path] + [path.with_suffix(suffix) for suffix in companions]
        maybe = [path.parent / name for name in optional]
        taken = {os.path.abspath(p) for planned in self._planned for p in planned.paths + planned.optional}
        for target in paths + maybe:
            check_output(target, what, self.inputs)
            if os.path.abspath(target) in taken:
                raise OutputPathError(f"{what} {target} is also another output of this command")
        self._planned.append(_Output(what, paths, write, maybe))
        return path

    def add_bytes(self, path, data: bytes, what: str = "output") -> Path:
        return self.add(path, lambda staging: (staging / Path(path).name).write_bytes(data), what)

    def commit(self) -> list[Path]:
        """Write every planned output; returns the directories created (already reported on stdout)."""
        created: list[Path] = []
        staged: list[tuple[Path, Path]] = []  # (staging dir, final directory)
        moved: list[tuple[Path, Path | None]] = []  # (target, backup of what it replaced)
        current = (self._planned[0].what, self._planned[0].paths[0]) if self._planned else ("output", Path())
        try:
            for output in self._planned:
                current = (output.what, output.paths[0])
                directory = output.paths[0].parent
                created += _make_directories(directory, output.what)
                staging = Path(tempfile.mkdtemp(prefix=f".{output.paths[0].name}.", dir=directory))
                staged.append((staging, directory))
                output.write(staging)
                for target in output.paths:
                    if not (staging / target.name).is_file():
                        raise OutputWriteError(f"cannot write {output.what} {target}: nothing was written")
            umask = os.umask(0)
            os.umask(umask)
            for (staging, _), output in zip(staged, self._planned):
                written = [t for t in output.optional if (staging / t.name).is_file()]
                for target in written + output.paths:  # external data before the model that refers to it
                    current = (output.what, target)
                    backup = None
                    if target.exists():
                        backup = staging / f".previous.{target.name}"
                        os.replace(target, backup)
                    moved.append((target, backup))
                    os.chmod(staging / target.name, 0o666 & ~umask)
                    os.replace(staging / target.name, target)
        except BaseException as error:
            for target, backup in reversed(moved):
                try:
                    if backup is not None and backup.exists():
                        os.replace(backup, target)
                    elif backup is None:
                        target.unlink(missing_ok=True)
                except OSError:
                    pass
            for staging, _ in staged:
                shutil.rmtree(staging, ignore_errors=True)
            for directory in reversed(created):
                try:
                    directory.rmdir()
                except OSError:
                    pass
            if isinstance(error, OSError):
                raise _write_error(error, *current) from None
            raise
        for staging, _ in staged:
            shutil.rmtree(staging, ignore_errors=True)
        for directory in created:
            print(f"created directory {directory}")
        return created


def _make_directories(directory: Path, what: str) -> list[Path]:
    missing = []
    for candidate in [directory, *directory.parents]:
        if candidate.exists():
            break
        missing.append(candidate)
    created = []
    for candidate in reversed(missing):
        try:
            candidate.mkdir()
        except OSError as error:
            for made in reversed(created):
                made.rmdir()
            raise _write_error(error, what, directory, creating=True) from None
        created.append(candidate)
    return created


def _write_error(error: OSError, what: str, path: Path, creating: bool = False) -> FileProblem:
    action = f"create directory {path} for {what}" if creating else f"write {what} {path}"
    if error.errno in (errno.ENOTDIR, errno.EISDIR, errno.EEXIST):  # the path itself is wrong
        return OutputPathError(f"cannot {action}: {_reason(error)}")
    return OutputWriteError(f"cannot {action}: {_reason(error)}")  # permissions, read-only, disk full, ...
