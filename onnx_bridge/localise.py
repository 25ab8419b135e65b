"""Where two runtimes part: the first OpenVINO op whose output differs between OpenVINO CPU and the
converted model while its inputs agree.

The candidates are the values with an ONNX counterpart (the importer records which ONNX value is which
OpenVINO op output: metadata_props "openvino_names"). A bisection over the topological order of the
data-dependent candidates upstream of a differing value exposes a few of them per run on both sides
(OpenVINO: extra Results on a clone of the model; ONNX: extra graph outputs) and keeps the stretch between
the last agreeing and the first differing one; the search repeats among the ancestors of each differing
value found (values of parallel branches and weights, which agree, would mislead a single bisection), then
checks the node's direct inputs, weights included: while one differs, its producer is the new candidate.
The answer: a node whose output differs and whose inputs agree.
"""
from __future__ import annotations

import numpy as np

from .comparison import measure

#: candidates exposed per bisection run (k points cut the stretch into k + 1 parts per run)
POINTS = 3


def _label(node) -> str:
    from converters.openvino_ir import op_label
    return op_label(node)


def _plain(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.generic,)):
        return value.item()
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


def _ancestors(result) -> set:
    seen, stack = set(), [result]
    while stack:
        node = stack.pop()
        for index in range(node.get_input_size()):
            producer = node.input_value(index).get_node()
            if producer.get_name() not in seen:
                seen.add(producer.get_name())
                stack.append(producer)
    return seen


class _Probe:
    def __init__(self, runner, tolerance):
        self.runner, self.tolerance, self.cache = runner, tolerance, {}

    def metrics(self, candidates: list) -> list:
        """OutputMetrics (OpenVINO as reference) of each (friendly name, port, onnx name, node)."""
        todo = [c for c in candidates if c[:2] not in self.cache]
        if todo:
            from converters.openvino_ir import onnx_type
            types = {c[2]: onnx_type(c[3].get_output_element_type(c[1])) for c in todo}
            want, got = self.runner.probe([c[:2] for c in todo], [c[2] for c in todo], types)
            for candidate, w, g in zip(todo, want, got):
                w, g = np.asarray(w), np.asarray(g)
                if w.dtype != g.dtype and w.shape == g.shape and w.dtype.kind in "fiub" and g.dtype.kind in "fiub":
                    g = g.astype(w.dtype)  # a value the import carries in another type
                tolerance = self.tolerance if self.tolerance is not None and w.dtype.kind == "f" else None
                self.cache[candidate[:2]] = (measure(w, g, candidate[2], tolerance), w, g)
        return [self.cache[c[:2]][0] for c in candidates]

    def differs(self, candidates: list) -> list[bool]:
        return [not m.agree for m in self.metrics(candidates)]


def _data_dependent(model) -> set:
    """Names of the ops whose value depends on the values of a Parameter (weights and their decompression do
    not, nor shape computations: a ShapeOf output depends on shapes only)."""
    dynamic = set()
    for op in model.get_ordered_ops():
        if op.get_type_name() == "ShapeOf":
            continue
        if op.get_type_name() == "Parameter" or any(
                op.input_value(i).get_node().get_name() in dynamic for i in range(op.get_input_size())):
            dynamic.add(op.get_name())
    return dynamic


def _bisect(chain: list, probe: "_Probe", say) -> int:
    """Index of a differing value of `chain` whose probed predecessor agrees (len(chain): none differs)."""
    lo, hi = 0, len(chain)
    while lo < hi:
        count = POINTS if hi - lo < 64 else 2 * POINTS + 1  # fewer runs (each compiles both sides) on long chains
        if hi - lo <= count:
            points = list(range(lo, hi))
        else:
            points = sorted({lo + (hi - lo) * (k + 1) // (count + 1) for k in range(count)})
        say(f"bisecting {hi - lo} candidate values, probing {len(points)}")
        flags = probe.differs([chain[p] for p in points])
        first = next((p for p, flag in zip(points, flags) if flag), None)
        if first is None:
            lo = points[-1] + 1
        else:
            hi = first
            previous = [p for p in points if p < first]
            lo = previous[-1] + 1 if previous else lo
    return hi


def localise(runner, output_index: int, tolerance, say=lambda text: None):
    """Localisation of the first diverging node upstream of output `output_index`, or None (nothing
    mapped). Bisection over the data-dependent mapped ancestors of the current differing value, narrowed to
    the ancestors of each differing value found; then its direct inputs (weights included) are checked."""
    from .compare_models import Localisation

    model = runner.ov_model
    result = model.get_results()[runner.ov_outputs[output_index]]
    skip = {"Parameter", "Constant", "Result"}
    candidates = []
    for op in model.get_ordered_ops():
        if op.get_type_name() in skip:
            continue
        for port in range(op.get_output_size()):
            value = runner.names.get(f"{op.get_friendly_name()}:{port}")
            if value is not None:
                candidates.append((op.get_friendly_name(), port, value, op))
    dynamic = _data_dependent(model)
    index = {c[:2]: c for c in candidates}
    probe = _Probe(runner, tolerance)
    node_candidate, inputs_agree = None, True
    while True:
        target = result if node_candidate is None else node_candidate[3]
        ancestors = _ancestors(target)
        chain = [c for c in candidates if c[3].get_name() in ancestors and c[3].get_name() in dynamic]
        found = _bisect(chain, probe, say)
        if found < len(chain):
            node_candidate = chain[found]
            continue
        if node_candidate is None:  # nothing data-dependent differs: start from the closest mapped value
            closest = [c for c in candidates if c[3].get_name() in ancestors]
            if not closest:
                return None
            node_candidate = closest[-1]
        op = node_candidate[3]
        inputs = _mapped_inputs(op, runner, index)
        if not inputs:
            inputs_agree = all(op.input_value(i).get_node().get_type_name() in ("Constant", "Parameter")
                               for i in range(op.get_input_size()))
            break
        say(f"checking the {len(inputs)} inputs of {op.get_friendly_name()!r}")
        differing = [c for c, flag in zip(inputs, probe.differs(inputs)) if flag]
        if not differing:
            break
        node_candidate = differing[0]
    metrics = probe.metrics([node_candidate])[0]
    op = node_candidate[3]
    return Localisation(
        node=op.get_friendly_name(), op=_label(op),
        attributes={k: _plain(v) for k, v in op.get_attributes().items()},
        onnx_value=node_candidate[2], onnx_nodes=_onnx_nodes(runner.converted, op.get_friendly_name(),
                                                             node_candidate[2]),
        difference=dict(metrics.to_json(), summary=metrics.summary()), inputs_agree=inputs_agree,
        probes=runner.probes)


def _mapped_inputs(op, runner, index: dict) -> list:
    """Candidates for the inputs of `op`: the input's producer when mapped, else (through unmapped ops)
    the nearest mapped producers."""
    found, stack, seen = [], [op.input_value(i) for i in range(op.get_input_size())], set()
    while stack:
        output = stack.pop(0)
        node = output.get_node()
        key = (node.get_friendly_name(), output.get_index())
        if key in seen or node.get_type_name() in ("Constant", "Parameter"):
            continue
        seen.add(key)
        value = runner.names.get(f"{key[0]}:{key[1]}")
        if value is not None:
            found.append(index.get(key, (key[0], key[1], value, node)))
        else:
            stack += [node.input_value(i) for i in range(node.get_input_size())]
    return found


def _onnx_nodes(model, friendly: str, value: str) -> list[str]:
    """ONNX nodes emitted for the OpenVINO node (named after it) or producing `value`, with attributes
    (a long node name written "…" inside them)."""
    import onnx

    texts = []
    for node in model.graph.node:
        if node.name == friendly or node.name.startswith(friendly + "/") or value in node.output:
            attributes = []
            for attribute in node.attribute:
                if attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                    continue
                attributes.append(f"{attribute.name}={_plain(onnx.helper.get_attribute_value(attribute))}")
            texts.append(f"{node.name} ({node.op_type}{' ' + ', '.join(attributes) if attributes else ''}): "
                         f"{', '.join(node.input)} -> {', '.join(node.output)}")
    if len(friendly) > 24:  # long torch-style names: the node's own name once, "…" in its ONNX nodes
        texts = [text.replace(friendly, "…") for text in texts]
    return texts
