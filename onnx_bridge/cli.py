"""`onnx-bridge` command line. Each subcommand lives in onnx_bridge/commands/<name>.py and exposes
HELP (one line), add_arguments(parser) and main(args) -> exit code."""
from __future__ import annotations

import argparse
import importlib
import sys

from .errors import BridgeError

COMMANDS = ("demo", "convert", "run", "conformance", "bench")


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
    sys.exit(main())
