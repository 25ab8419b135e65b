"""`onnx-bridge` command line. Each subcommand lives in onnx_bridge/commands/<name>.py and exposes
HELP (one line), add_arguments(parser) and main(args) -> exit code."""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys

from custom_ops.cycles import cycle_collection_paused

from .commands._files import EXIT_CODES
from .errors import BridgeError

COMMANDS = ("demo", "convert", "run", "compare", "conformance", "bench", "audit")

#: Commands run with Python's cyclic garbage collector paused, module imports included: `convert` is one pass
#: whose objects (the modules, the model) live to its end, so a collection finds nothing to free (measured on
#: a fresh `convert` of resnet18-int8: 9% of its CPU time). The long-running commands keep collecting.
PAUSED_COLLECTION = ("convert",)

#: Commands run with numpy's OpenBLAS on one thread: it starts a thread per core when numpy loads, and they spin
#: waiting for work (~0.05 s of CPU in a fresh process here) that a conversion never gives them (no BLAS call on
#: its path). Set only before numpy loads (no effect after) and only where the user has not set it.
SINGLE_THREADED_BLAS = ("convert",)
BLAS_THREADS_VARIABLE = "OPENBLAS_NUM_THREADS"

#: Commands that, run as the process's own command (the console script, `python -m onnx_bridge.cli`), end it
#: without Python's teardown once stdout and stderr are flushed: their files are written and closed by then,
#: and the teardown (freeing the objects of numpy, onnx and OpenVINO, their C++ destructors) took 0.1 s of a
#: fresh `convert`'s 0.6-0.7 s (deit_tiny), about as long as the conversion itself.
FAST_EXIT = ("convert",)
#: Python's own exit status when flushing stdout fails at exit (e.g. a closed pipe).
FLUSH_FAILED = 120


def _load(name):
    try:
        return importlib.import_module(f"onnx_bridge.commands.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"onnx_bridge.commands.{name}":
            return None
        raise


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `only` (the command being run), the other subcommands are left out, their modules not
    even imported (some import their machinery: numpy, the conformance adapters, the benchmark options), nor
    their parsers built (argparse looks each parser's texts up in gettext's catalogues: ~2 ms of start-up)."""
    parser = argparse.ArgumentParser(
        prog="onnx-bridge", description="OpenVINO-semantics ops in the ONNX world: run, convert, check.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit codes (every command; errors are one line on stderr):\n" + "\n".join(
            f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES.items()))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        if only is not None and name != only:
            continue  # (never parsed in this run; the usage names no command: metavar COMMAND)
        module = _load(name)
        if module is None:
            continue
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_main=module.main)
    return parser


def usage_markdown() -> str:
    """docs/cli.md: the help of every subcommand (python -m onnx_bridge.cli --markdown > docs/cli.md)."""
    parser = build_parser()
    parts = ["# Command line", "", "`onnx-bridge COMMAND ...` (installed with the package; "
             "`.venv/bin/onnx-bridge` after `make demo` or `make test`).", "",
             "```", parser.format_help().rstrip(), "```"]
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in subparsers.choices.items():
        parts += ["", f"## {name}", "", "```", command.format_help().rstrip(), "```"]
    return "\n".join(parts) + "\n"


#: Frame text that native and Python layers put into messages: C++ "Exception from src/x.cpp:12:" and
#: "Check 'cond' failed at src/x.cpp:12:" prefixes, Python traceback headers and frame lines, and the
#: "At: /x.py(58): create ..." frame list pybind11 appends to a Python error raised inside C++ (to the end).
_FRAMES = re.compile(r"(?:Exception from|Check '.*?' failed at) \S+?:\d+:?\s*"
                     r"|^[ \t]*Traceback \(most recent call last\):[^\n]*$"
                     r"|^[ \t]*File \"[^\"]*\", line \d+[^\n]*(?:\n[ \t]{4,}[^\n]*)?$"
                     r"|\s*\bAt:\s+\S+\.py\(\d+\):.*\Z", re.MULTILINE | re.DOTALL)


def clean_message(error) -> str:
    """An error message without frame text, continuation lines joined; indented list lines stay lines."""
    text = _FRAMES.sub("", str(error))
    lines = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if lines and not line[:1].isspace():
            lines[-1] = f"{lines[-1].rstrip()} {line.strip()}"
        else:
            lines.append(line.rstrip())
    return "\n".join(lines) or type(error).__name__


def _command(argv) -> str | None:
    """The subcommand named by argv (the first argument, when it is one); None for anything else, e.g.
    `--help` first (the full parser then lists every command)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command(argv)
    limit_blas_threads(command)
    with cycle_collection_paused(command in PAUSED_COLLECTION):
        return _run(build_parser(command).parse_args(argv))


def limit_blas_threads(command: str | None) -> None:
    """SINGLE_THREADED_BLAS commands: OpenBLAS on one thread, unless numpy is loaded already or the user chose."""
    if command in SINGLE_THREADED_BLAS and "numpy" not in sys.modules:
        os.environ.setdefault(BLAS_THREADS_VARIABLE, "1")


def console() -> None:
    """The `onnx-bridge` console script and `python -m onnx_bridge.cli`: main() on this process's arguments,
    then the process ends with its exit code (FAST_EXIT: without the interpreter's teardown)."""
    argv = sys.argv[1:]
    end_process(main(argv), _command(argv))


def end_process(code: int, command: str | None = None) -> None:
    """Exit with `code`; for a FAST_EXIT command, right after flushing stdout/stderr (and logging's handlers).
    Nothing else is left to finish: outputs are committed, files closed, the staging directory gone."""
    if command not in FAST_EXIT or _writes_at_exit():
        sys.exit(code)
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: as Python's own exit reports it
            code = code or FLUSH_FAILED
    os._exit(code)


def _writes_at_exit() -> bool:
    """A tracer, profiler or coverage (sys.monitoring on 3.12+) is running: it writes its data at exit."""
    return bool(sys.gettrace() or sys.getprofile() or "coverage" in sys.modules)


def _run(args) -> int:
    """The parsed command run: its exit code; errors are one line on stderr."""
    prefix = f"onnx-bridge {args.command}"
    try:
        return int(args._main(args) or 0)
    except BridgeError as error:
        print(f"{prefix}: error: {clean_message(error)}", file=sys.stderr)
        return getattr(error, "exit_code", 2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # a bug of ours: one line, the traceback on request
        if os.environ.get("ONNX_BRIDGE_TRACEBACK"):
            raise
        print(f"{prefix}: internal error: {type(error).__name__}: {clean_message(error)} "
              "(ONNX_BRIDGE_TRACEBACK=1 shows the traceback)", file=sys.stderr)
        return 70


if __name__ == "__main__":
    if sys.argv[1:] == ["--markdown"]:
        os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: make the page reproducible
        sys.stdout.write(usage_markdown())
        sys.exit(0)
    console()
