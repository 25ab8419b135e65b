"""Stateful models: ReadValue-3/6 and Assign-3/6 become graph inputs and outputs (a stateless ONNX model).

The model gets exactly the inputs and outputs of OpenVINO's own pass
`openvino._offline_transformations.stateful_to_stateless_transformation`:

    variable "past_key_values.N.<key|value>present.N.<key|value>" (optimum-intel's naming)
        -> input past_key_values.N.<key|value>, output present.N.<key|value>
    any other variable id V -> input input_restored.V, output output_restored.V

state inputs after the model's own inputs and state outputs after its own outputs, both ordered as the pass
orders them: KV variables by layer then key before value, then the others in graph order. The `beam_idx`
input (optimum-intel's cache reorder: Gather(ReadValue, beam_idx, axis 0) on every past) is removed and each
such Gather becomes the past itself, as the pass does: the caller feeds pasts already reordered
(onnx_bridge.InferenceSession in stateful mode takes beam_idx and reorders its own state).

A ReadValue-6 initializer subgraph (ReadValue-3 always has one) gives the first step's state. When its
shape has a static 0 dim (optimum-intel's zeros [batch, kv_heads, 0, head_dim]) the initial state is an
empty tensor and an empty past fed at the first step is the same thing: the past is used as it is.
Otherwise the model computes the initializer too and takes it when the fed past is empty (0 elements):
If(size(past) == 0, initializer, past), and the past's dims are all dynamic (so that an empty one can be
fed: the only departure from the pass, whose input keeps the variable's shape). A ReadValue-6 without
initializer starts from zeros of the variable's shape; the past is used as it is.
"""
from __future__ import annotations

import re

import numpy as np
from onnx import helper

from .._registry import Unsupported, rule
from .._types import value_info

_KV = re.compile(r"(past_key_values\.(\d+)\.(key|value))(present\.\d+\.(?:key|value))")


def state_names(variable_id: str) -> tuple[str, str]:
    """(input, output) names OpenVINO's stateful_to_stateless_transformation gives a variable."""
    match = _KV.fullmatch(variable_id)
    if match:
        return match.group(1), match.group(4)
    return f"input_restored.{variable_id}", f"output_restored.{variable_id}"


def order_key(variable_id: str, position: int) -> tuple:
    """The pass's order: KV variables by (layer, key before value), then the others in graph order."""
    match = _KV.fullmatch(variable_id)
    if match:
        return 0, int(match.group(2)), match.group(3) != "key", 0
    return 1, 0, False, position


def beam_gathers(ov_model, op_types: set[str]) -> tuple[set[str], str | None]:
    """(names of the Gather nodes that reorder a past by beam_idx, name of the beam_idx Parameter) when the
    model (whose op type names are `op_types`) is stateful and has optimum-intel's cache reorder; else
    (set(), None)."""
    if "ReadValue" not in op_types:
        return set(), None
    for parameter in ov_model.get_parameters():
        if "beam_idx" not in parameter.output(0).get_names():
            continue
        gathers = set()
        for target in parameter.output(0).get_target_inputs():
            gather = target.get_node()
            axis = gather.input_value(2).get_node() if gather.get_type_name() == "Gather" else None
            if not (target.get_index() == 1 and axis is not None and axis.get_type_name() == "Constant"
                    and int(np.asarray(axis.get_data()).reshape(-1)[0]) == 0
                    and gather.input_value(0).get_node().get_type_name() == "ReadValue"):
                return set(), None  # beam_idx used otherwise: it stays an input
            gathers.add(gather.get_name())
        return gathers, parameter.get_name()
    return set(), None


#: Ops of model forms that cannot become an ONNX model, with the reason and the supported alternative.
REFUSED_OPS = {
    "PagedAttentionExtension": (
        "PagedAttentionExtension is OpenVINO GenAI's continuous-batching form of an LLM: its KV cache is a "
        "block table (key_cache/value_cache, block_indices, ...) that the GenAI scheduler manages outside "
        "the model, which no ONNX runtime provides. Convert the model as exported instead (optimum-cli export "
        "openvino / OVModelForCausalLM: stateful ReadValue/Assign, or --disable-stateful), before "
        "OpenVINO GenAI applies its paged-attention transformation; onnxruntime-genai then runs it (docs/llm.md)"),
}


def refused_model_form(op_types: set[str]) -> str | None:
    """The reason a model of these op type names cannot convert at all (REFUSED_OPS), or None."""
    found = sorted(op_types & REFUSED_OPS.keys())
    return "; ".join(REFUSED_OPS[name] for name in found) or None


def _variable_id(node) -> str:
    return str(node.get_attributes()["variable_id"])


def _empty_initial(node) -> bool:
    shape = node.get_input_partial_shape(0)
    return shape.rank.is_static and any(dim.is_static and dim.get_length() == 0 for dim in shape)


@rule("ReadValue", versions=(3, 6),
      onnx="graph input (+ If when the initializer is not empty)",
      notes="stateless, as OpenVINO's stateful_to_stateless_transformation: input past_key_values.N.key/"
            "value or input_restored.<id>; an empty past at the first step gives the initializer's result "
            "(see converters/openvino_ir/rules/state.py and docs/llm.md)",
      refuses=("inside an If/Loop body: a body cannot have graph inputs",
               "two ReadValues of one variable"))
def read_value(ctx, node):
    if ctx.is_body:
        raise Unsupported("a ReadValue inside a body (the state would need graph inputs)")
    variable = _variable_id(node)
    states = ctx.shared.states
    if variable in states and "input" in states[variable]:
        raise Unsupported(f"variable {variable!r} is read twice")
    input_name, _ = state_names(variable)
    past = ctx.unique(input_name)
    code = ctx.out_elem(node)
    entry = states.setdefault(variable, {})
    entry.update(input=value_info(past, code, node.get_output_partial_shape(0), dim_prefix=past),
                 position=len(states))
    if node.get_input_size() == 0 or _empty_initial(node):
        ctx.emit("Identity", [past], [ctx.out(node)])
        return
    shape = node.get_output_partial_shape(0)  # every dim dynamic, so that an empty past can be fed
    entry["input"] = helper.make_tensor_value_info(
        past, code, [f"{past}_{axis}" for axis in range(shape.rank.get_length())] if shape.rank.is_static else None)
    initial = ctx.inp(node, 0)
    size = ctx.emit("Size", [past])
    empty = ctx.emit("Equal", [size, ctx.const(np.array(0, np.int64), "zero")])
    branches = []
    for label, source in (("initial", initial), ("fed", past)):
        out = ctx.unique(f"{past}/{label}")
        branches.append(helper.make_graph([helper.make_node("Identity", [source], [out])], ctx.unique(label),
                                          [], [helper.make_tensor_value_info(out, code, None)]))
    ctx.emit("If", [empty], [ctx.out(node)], then_branch=branches[0], else_branch=branches[1])


@rule("Assign", versions=(3, 6),
      onnx="graph output",
      notes="the value assigned becomes output present.N.key/value or output_restored.<id>",
      refuses=("a variable assigned without a ReadValue, or twice",))
def assign(ctx, node):
    variable = _variable_id(node)
    entry = ctx.shared.states.setdefault(variable, {})
    if "output" in entry:
        raise Unsupported(f"variable {variable!r} is assigned twice")
    entry["output"] = ctx.inp(node, 0)
    entry["source"] = node.input_value(0)
    ctx.bind(node.output(0), entry["output"])


def state_boundary(ctx) -> tuple[list, list]:
    """(graph inputs, (output name, value, OpenVINO output)) of the variables, in the pass's order."""
    states = ctx.shared.states
    problems = [f"variable {v!r} is {'assigned' if 'output' in e else 'read'} but never "
                f"{'read' if 'output' in e else 'assigned'}" for v, e in states.items()
                if "input" not in e or "output" not in e]
    if problems:
        raise Unsupported("; ".join(problems))
    ordered = sorted(states, key=lambda v: order_key(v, states[v]["position"]))
    inputs = [states[v]["input"] for v in ordered]
    outputs = [(state_names(v)[1], states[v]["output"], states[v]["source"]) for v in ordered]
    return inputs, outputs
