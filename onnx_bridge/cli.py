"""`onnx-bridge` command line. Each subcommand lives in onnx_bridge/commands/<name>.py and exposes
HELP (one line), add_arguments(parser) and main(args) -> exit code."""
from __future__ import annotations

import argparse
import importlib
import sys

from .errors import BridgeError

COMMANDS = ("demo", "convert", "run", "conformance", "bench", "audit")


def _load(name):
    try:
        return importlib.import_module(f"onnx_bridge.commands.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"onnx_bridge.commands.{name}":
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="onnx-bridge", description=(
        "OpenVINO-semantics ops in the ONNX world: run, convert, check."))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
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


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._main(args) or 0)
    except BridgeError as error:
        print(f"onnx-bridge {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    if sys.argv[1:] == ["--markdown"]:
        import os
        os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: make the page reproducible
        sys.stdout.write(usage_markdown())
        sys.exit(0)
    sys.exit(main())
