"""Stateful running of stateless-converted models, the way an OpenVINO InferRequest carries its variables.

A model imported from a stateful OpenVINO IR has, for each variable, an input and an output named as
OpenVINO's stateful_to_stateless_transformation names them (past_key_values.N.key -> present.N.key,
input_restored.V -> output_restored.V). `State` keeps the last outputs and feeds them as the next inputs:
run() takes only the model's own inputs; an input given explicitly in the feeds overrides the state;
`beam_idx` (optimum-intel's cache reorder, removed from the model by the import) reorders the state along
axis 0 before the run; reset() starts over from empty pasts (0 elements: the model's initial state, see
converters/openvino_ir/rules/state.py).
"""
from __future__ import annotations

import re

import numpy as np
import onnx

from custom_ops.element_types import ONNX_TO_NUMPY

_PAIRS = ((re.compile(r"past_key_values\.(.+)"), "present.{}"),
          (re.compile(r"input_restored\.(.+)"), "output_restored.{}"))


def state_pairs(model: onnx.ModelProto) -> list[tuple[str, str]]:
    """(input, output) pairs of the model's variables by the stateless naming convention."""
    outputs = {o.name for o in model.graph.output}
    pairs = []
    for value in model.graph.input:
        for pattern, template in _PAIRS:
            match = pattern.fullmatch(value.name)
            if match and template.format(match.group(1)) in outputs:
                pairs.append((value.name, template.format(match.group(1))))
    return pairs


class State:
    """The variables of one stateful session (see the module doc)."""

    def __init__(self, model: onnx.ModelProto, pairs: list[tuple[str, str]]):
        self.pairs = pairs
        inputs = {v.name: v for v in model.graph.input}
        self._empty = {}
        for name, _ in pairs:
            tensor = inputs[name].type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
            self._empty[name] = (ONNX_TO_NUMPY[tensor.elem_type], dims)
        self.outputs = [o.name for o in model.graph.output]
        self.values: dict[str, np.ndarray] = {}

    def reset(self) -> None:
        self.values = {}

    def _initial(self, name: str, batch: int | None) -> np.ndarray:
        """An empty past: dynamic dims 0, except a dynamic first dim, which takes the feeds' batch."""
        dtype, dims = self._empty[name]
        shape = [d if d is not None else (batch if axis == 0 and batch is not None else 0)
                 for axis, d in enumerate(dims)]
        return np.zeros(shape, dtype)

    def run(self, run, output_names, input_feed, run_options):
        feed = dict(input_feed)
        beam = feed.pop("beam_idx", None)
        batch = next((np.shape(v)[0] for k, v in feed.items() if np.ndim(v) and k not in self._empty), None)
        for name, _ in self.pairs:
            if name in feed:
                continue
            value = self.values.get(name)
            if value is None:
                value = self._initial(name, batch)
            elif beam is not None:
                value = np.take(value, np.asarray(beam).astype(np.int64), axis=0)
            feed[name] = value
        wanted = list(output_names) if output_names else list(self.outputs)
        asked = wanted + [present for _, present in self.pairs if present not in wanted]
        results = run(asked, feed, run_options)
        by_name = dict(zip(asked, results))
        self.values = {past: by_name[present] for past, present in self.pairs}
        return results[:len(wanted)]
