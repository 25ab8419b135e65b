"""`onnx-bridge compare` on the model zoo (tests/helpers/zoo.py): python benchmarks/compare_zoo.py [NAME ...]

For each model: build its IR (random weights), compare OpenVINO CPU with the import (the verdict should be
"agree" wherever the zoo test says the import matches, else "explained"), then, on agreeing models, inject FAULTS faults into the converted model —
a float value computed for one OpenVINO op becomes 1.5·x + 0.5 (`Mul`, `Add` spliced after its producer), the ops picked at
even steps of the topological order — and check that compare names exactly that op. One row per model.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tests.helpers.zoo import ZOO, build_ir, import_torchvision  # noqa: E402

FAULTS = 3


def inject(model: onnx.ModelProto, value: str) -> onnx.ModelProto:
    """A copy of `model` where `value` (a node output) is replaced by 1.5·value + 0.5 for its consumers."""
    faulty = onnx.ModelProto()
    faulty.CopyFrom(model)
    producer = next(n for n in faulty.graph.node if value in n.output)
    raw = f"{value}__before_fault"
    producer.output[list(producer.output).index(value)] = raw
    scale, shift, scaled = f"{value}__fault_scale", f"{value}__fault_shift", f"{value}__fault_scaled"
    faulty.graph.initializer.extend([numpy_helper.from_array(np.array(1.5, np.float32), scale),
                                     numpy_helper.from_array(np.array(0.5, np.float32), shift)])
    position = list(faulty.graph.node).index(producer) + 1
    faulty.graph.node.insert(position, helper.make_node("Add", [scaled, shift], [value], name=f"{value}__fault"))
    faulty.graph.node.insert(position, helper.make_node("Mul", [raw, scale], [scaled], name=f"{value}__fault_mul"))
    return faulty


def fault_targets(model: onnx.ModelProto, count: int) -> list[tuple[str, str]]:
    """(OpenVINO friendly name, ONNX value) of `count` float32 values the importer mapped, evenly spread."""
    from converters.openvino_ir import NAMES_KEY
    from onnx_bridge.compare_models import value_types

    names = json.loads({p.key: p.value for p in model.metadata_props}[NAMES_KEY])
    types = value_types(model)
    outputs = {o.name for o in model.graph.output}
    order = {output: k for k, node in enumerate(model.graph.node) for output in node.output}
    floats = sorted(((order[v], key.rsplit(":", 1)[0], v) for key, v in names.items()
                     if types.get(v) == TensorProto.FLOAT and v not in outputs and v in order))
    if not floats:
        return []
    picks = sorted({int(len(floats) * (k + 1) / (count + 1)) for k in range(count)})
    return [(floats[p][1], floats[p][2]) for p in picks]


def main(argv=None) -> int:
    import onnx_bridge
    from converters.openvino_ir import import_ir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"models (default: all of {', '.join(ZOO)})")
    parser.add_argument("--faults", type=int, default=FAULTS, help=f"faults per model (default {FAULTS})")
    args = parser.parse_args(argv)
    import_torchvision()
    totals = {"models": 0, "agree": 0, "explained": 0, "faults": 0, "localised": 0, "unobservable": 0}
    print(f"{'model':28} {'verdict':10} {'max |Δ|':>9} {'s':>5}  faults localised (runs each)")
    for name in args.names or list(ZOO):
        if importlib.util.find_spec(ZOO[name][1]) is None:
            print(f"{name:28} skipped: {ZOO[name][1]} not installed")
            continue
        with tempfile.TemporaryDirectory() as directory:
            try:
                xml, feeds = build_ir(name, directory)
                converted = import_ir(xml)
            except Exception as exc:  # a model the importer does not support: say so, go on
                print(f"{name:28} not converted: {str(exc).splitlines()[0][:80]}")
                continue
            start = time.monotonic()
            report = onnx_bridge.compare(xml, converted, inputs=feeds)
            seconds = time.monotonic() - start
            totals["models"] += 1
            totals["agree"] += report.verdict == "agree"
            totals["explained"] += report.verdict == "explained"
            worst = max((m.max_abs for m in report.outputs), default=0.0)
            found = []
            if report.verdict == "agree":
                for node, value in fault_targets(converted, args.faults):
                    faulty = onnx_bridge.compare(xml, inject(converted, value), inputs=feeds)
                    if faulty.verdict == "agree":
                        totals["unobservable"] += 1
                        found.append("masked")
                        continue
                    totals["faults"] += 1
                    hit = faulty.localisation is not None and faulty.localisation.node == node
                    totals["localised"] += hit
                    runs = faulty.localisation.probes if faulty.localisation else "-"
                    found.append(f"{'ok' if hit else 'WRONG'}({runs})")
            print(f"{name:28} {report.verdict:10} {worst:9.2e} {seconds:5.1f}  {' '.join(found)}")
    print(f"\n{totals['agree']}/{totals['models']} models agree, {totals['explained']} differ with every difference "
          f"explained; {totals['localised']}/{totals['faults']} observable injected faults localised to their node "
          f"({totals['unobservable']} masked downstream)")
    settled = totals["agree"] + totals["explained"] == totals["models"]
    return 0 if settled and totals["localised"] == totals["faults"] else 1


if __name__ == "__main__":
    sys.exit(main())
