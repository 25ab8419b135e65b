"""Command-line options of the benchmark (light: `onnx-bridge --help` imports this, not the runtimes)."""
from __future__ import annotations

import argparse

#: The table's columns, in order (benchmarks/columns.py implements them).
COLUMN_KEYS = ("bridge", "bridge_pyop", "stock", "lowered", "native", "openvino", "torch", "numpy", "kernel")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small shapes, few repeats (about a minute)")
    size.add_argument("--tiny", action="store_true",
                      help="tiny shapes, one repeat: checks that everything runs; the times mean nothing")
    parser.add_argument("--json", metavar="FILE", help="write all results as JSON ('-' for stdout)")
    parser.add_argument("--markdown", metavar="FILE",
                        help="write the report as Markdown; in a file with the lines <!-- bench:begin --> "
                             "and <!-- bench:end --> only the part between them is replaced")
    parser.add_argument("--only", nargs="+", metavar="ID", help="case ids (or prefixes) to run, e.g. seu-sum")
    parser.add_argument("--columns", nargs="+", metavar="COLUMN", choices=COLUMN_KEYS,
                        help=f"columns to run (default all: {', '.join(COLUMN_KEYS)})")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory child process")
    parser.add_argument("--repeats", type=int, help="timed runs per cell (default 15, quick 5)")
    parser.add_argument("--models", nargs="*", metavar="NAME",
                        help="instead of the ops, the real-model table (benchmarks/real_models.py): each model "
                             "as IR in OpenVINO CPU vs converted in onnxruntime, f32 and both INT8 forms, "
                             "timed interleaved (--repeats calls, default 20), and `convert` of each IR vs "
                             "OpenVINO's read+save; no NAME: resnet18, mobilenet_v3_small, bert_mini; NAME "
                             "'issue': every model; --markdown replaces what is between the lines "
                             "<!-- real-models: begin --> and <!-- real-models: end -->")
