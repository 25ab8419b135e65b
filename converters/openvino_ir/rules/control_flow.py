"""Control flow: If-8, Loop-5, TensorIterator-1. Bodies are imported with the same rules (dialect nodes too)
into ONNX subgraphs; body Parameters bound to outer values read them from the outer scope by name.

OpenVINO port maps -> ONNX:
- invariant input: the body reads the outer value;
- merged input (back edge): an ONNX Loop-carried value (initial = the outer input, next = the body result);
- sliced input (part `i` of the outer input along `axis` at iteration i): a Slice inside the body, indexed
  by the iteration number;
- last-iteration output (iteration -1): the carried value when the body result is a back edge, else the
  last entry of an ONNX scan output;
- concatenated output: an ONNX scan output (stacked on a new axis 0), moved to `axis` and merged into it.
TensorIterator is an ONNX Loop with a trip count and no condition.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from onnx import TensorProto

from .._registry import Unsupported, rule
from .._types import onnx_type, value_info

INT64_MAX = np.iinfo(np.int64).max

_SLICE, _MERGED, _INVARIANT = "SliceInputDescription", "MergedInputDescription", "InvariantInputDescription"
_LAST, _CONCAT = "BodyOutputDescription", "ConcatOutputDescription"


def _kind(description) -> str:
    return type(description).__name__


def _code(ov_output, where: str) -> int:
    code = onnx_type(ov_output.get_element_type())
    if code is None:
        raise Unsupported(f"{where} has element type {ov_output.get_element_type().get_type_name()}, "
                          "which ONNX cannot carry")
    return code


# -- If ---------------------------------------------------------------------------------------------------
@rule("If", versions=(8,), onnx="If (then/else subgraphs)",
      notes="branch Parameters read the outer inputs by name; branch outputs may differ in shape")
def if_(ctx, node):
    branches = []
    for index, name in ((0, "then"), (1, "else")):
        ov_body = node.get_function(index)
        body = ctx.body()
        for description in node.get_input_descriptions(index):
            parameter = ov_body.get_parameters()[description.body_parameter_index]
            body.bind(parameter.output(0), ctx.inp(node, description.input_index))
        body.walk(ov_body, body=True)
        values = body.result_values(ov_body)
        by_output = {d.output_index: values[d.body_value_index] for d in node.get_output_descriptions(index)}
        missing = [k for k in range(node.get_output_size()) if k not in by_output]
        if missing:
            raise Unsupported(f"the {name} branch gives no value for output(s) {missing}")
        graph = body.make_graph(f"{node.get_friendly_name()}/{name}", [],
                                [by_output[k] for k in range(node.get_output_size())])
        branches.append(graph)
    condition = ctx.inp(node, 0)
    if ctx.rank(node, 0) != 0:
        condition = ctx.emit("Reshape", [condition, ctx.const(np.array([], np.int64), "scalar")])
    ctx.emit("If", [condition], [ctx.out(node, k) for k in range(node.get_output_size())],
             then_branch=branches[0], else_branch=branches[1])


# -- Loop and TensorIterator -------------------------------------------------------------------------------
def _check_slice(description, what: str) -> None:
    """Supported: the whole axis in parts of |stride| = part_size, forward (start 0, end -1) or backward
    (start -1, end 0), which is what OpenVINO's reference implements (it splits the whole axis). Loop-5
    accepts only start 0, stride 1, part_size 1, end -1 (a concatenated output then joins whole values)."""
    stride, part = description.stride, description.part_size
    forward = stride > 0 and description.start in (0,) and description.end == -1
    backward = stride < 0 and description.start == -1 and description.end == 0
    if abs(stride) != part or not (forward or backward):
        raise Unsupported(f"{what} with start={description.start}, end={description.end}, stride={stride}, "
                          f"part_size={part} (only the whole axis in parts of |stride| = part_size)")


def _iterations_of_slice(ctx, node, description) -> str:
    """Number of parts of a sliced input: dim(axis) / part_size, as an int64 scalar."""
    shape = ctx.emit("Shape", [ctx.inp(node, description.input_index)])
    dim = ctx.emit("Gather", [shape, ctx.const(np.array(description.axis, np.int64), "axis")], axis=0)
    return ctx.emit("Div", [dim, ctx.const(np.array(description.part_size, np.int64), "part")])


def _slice_in_body(body, outer_value: str, description, iteration: str, count: str | None) -> str:
    """Part `iteration` of `outer_value` (read from the outer scope) along the description's axis."""
    part = body.const(np.array([description.part_size], np.int64), "part")
    index = iteration if description.stride > 0 else body.emit(
        "Sub", [body.emit("Sub", [count, body.const(np.array(1, np.int64), "one")]), iteration])
    begin = body.emit("Mul", [body.emit("Unsqueeze", [index, body.const(np.array([0], np.int64), "ax0")]),
                              part])
    end = body.emit("Add", [begin, part])
    return body.emit("Slice", [outer_value, begin, end, body.const(np.array([description.axis], np.int64),
                                                                  "axis")])


def _concatenated(ctx, node, stacked: str, description, rank: int) -> str:
    """A scan output [n, *part] as OpenVINO's concatenation along `axis` (reversed parts for stride < 0)."""
    if description.stride < 0:
        stacked = ctx.emit("Slice", [stacked, ctx.const(np.array([-1], np.int64), "start"),
                                     ctx.const(np.array([np.iinfo(np.int64).min], np.int64), "end"),
                                     ctx.const(np.array([0], np.int64), "axis"),
                                     ctx.const(np.array([-1], np.int64), "step")])
    axis = description.axis + rank if description.axis < 0 else description.axis
    # [n, d0, .., d_axis, ..] -> [d0, .., n, d_axis, ..] -> [d0, .., n * d_axis, ..]
    perm = list(range(1, axis + 1)) + [0] + list(range(axis + 1, rank + 1))
    moved = ctx.emit("Transpose", [stacked], perm=perm) if axis else stacked
    shape = ctx.emit("Shape", [moved])
    head = ctx.emit("Slice", [shape, ctx.const(np.array([0], np.int64), "start"),
                              ctx.const(np.array([axis], np.int64), "end")])
    tail = ctx.emit("Slice", [shape, ctx.const(np.array([axis + 2], np.int64), "start"),
                              ctx.const(np.array([INT64_MAX], np.int64), "end")])
    target = ctx.emit("Concat", [head, ctx.const(np.array([-1], np.int64), "merged"), tail], axis=0)
    return ctx.emit("Reshape", [moved, target], [ctx.out(node, description.output_index)])


@dataclass
class _Carried:
    """The loop-carried values: body inputs, their initial values (outer graph), the body result index of
    each next value, and body result index -> carried position."""
    inputs: list = field(default_factory=list)
    initial: list = field(default_factory=list)
    next: list = field(default_factory=list)
    by_result: dict = field(default_factory=dict)


def _loop(ctx, node, *, trip_count: str, condition: str, iteration_port: int, condition_port):
    """Emit an ONNX Loop for a Loop-5 / TensorIterator-1 node (see the module doc)."""
    ov_body = node.get_function()
    parameters, results = ov_body.get_parameters(), ov_body.get_results()
    body = ctx.body()
    iteration = body.graph_input(f"{node.get_friendly_name()}/iteration", TensorProto.INT64, [])
    condition_in = body.graph_input(f"{node.get_friendly_name()}/condition", TensorProto.BOOL, [])
    carried, slices = _bind_inputs(ctx, node, body, parameters)
    if iteration_port >= 0:
        _bind_iteration(body, parameters[iteration_port], iteration.name)
    for parameter, description in slices:
        count = _iterations_of_slice(ctx, node, description) if description.stride < 0 else None
        part = _slice_in_body(body, ctx.inp(node, description.input_index), description, iteration.name, count)
        body.bind(parameter.output(0), part)
    body.walk(ov_body, body=True)
    values = body.result_values(ov_body)
    carried_outputs, scans = _output_plan(ctx, node, carried)

    if condition_port is None:
        condition_out = (body.emit("Identity", [condition_in.name]), None)
    else:
        condition_out = values[condition_port]
    graph_results = [condition_out] + [values[i] for i in carried.next] + [values[d.body_value_index]
                                                                           for d in scans]
    graph = body.make_graph(f"{node.get_friendly_name()}/body", [iteration, condition_in] + carried.inputs,
                            graph_results)
    carried_names = [name or ctx.temp("carried") for name in carried_outputs]
    scan_names = [ctx.temp("scan") for _ in scans]
    ctx.emit("Loop", [trip_count, condition] + carried.initial, carried_names + scan_names, body=graph)
    for description, stacked in zip(scans, scan_names):
        if _kind(description) == _LAST:
            ctx.emit("Gather", [stacked, ctx.const(np.array(-1, np.int64), "last")],
                     [ctx.out(node, description.output_index)], axis=0)
        else:
            rank = results[description.body_value_index].get_output_partial_shape(0).rank
            if rank.is_dynamic:
                raise Unsupported("a concatenated output needs a body result of static rank")
            _concatenated(ctx, node, stacked, description, rank.get_length())


def _bind_inputs(ctx, node, body, parameters) -> tuple[_Carried, list]:
    """Invariant inputs bound into the body, merged ones made loop-carried; the sliced ones returned as
    (parameter, description) pairs, bound once the iteration number is."""
    carried, slices = _Carried(), []
    for description in node.get_input_descriptions():
        parameter = parameters[description.body_parameter_index]
        kind = _kind(description)
        if kind == _INVARIANT:
            body.bind(parameter.output(0), ctx.inp(node, description.input_index))
        elif kind == _MERGED:
            code = _code(parameter.output(0), "a merged input")
            value = value_info(body.unique(parameter.get_friendly_name()), code,
                               parameter.get_output_partial_shape(0))
            body.bind(parameter.output(0), value.name)
            carried.inputs.append(value)
            carried.initial.append(ctx.inp(node, description.input_index))
            carried.by_result.setdefault(description.body_value_index, len(carried.next))
            carried.next.append(description.body_value_index)
        elif kind == _SLICE:
            _check_slice(description, "a sliced input")
            slices.append((parameter, description))
        else:
            raise Unsupported(f"input description {kind}")
    return carried, slices


def _bind_iteration(body, parameter, iteration: str) -> None:
    """The iteration number (int64 scalar in ONNX) as the body parameter wants it."""
    value = iteration
    code = _code(parameter.output(0), "the current-iteration parameter")
    if code != TensorProto.INT64:
        value = body.emit("Cast", [value], to=code)
    if parameter.get_output_partial_shape(0).rank.get_length() == 1:
        value = body.emit("Unsqueeze", [value, body.const(np.array([0], np.int64), "ax0")])
    body.bind(parameter.output(0), value)


def _output_plan(ctx, node, carried: _Carried) -> tuple[list, list]:
    """(the node's output per carried value or None, the scan outputs' descriptions): a last-iteration output
    of a carried value is that Loop output; any other is a scan output."""
    scans = []
    carried_outputs = [None] * len(carried.next)
    for description in node.get_output_descriptions():
        kind = _kind(description)
        if kind == _LAST:
            if description.iteration != -1:
                raise Unsupported(f"an output of iteration {description.iteration} (only the last, -1)")
            if description.body_value_index in carried.by_result:
                carried_outputs[carried.by_result[description.body_value_index]] = \
                    ctx.out(node, description.output_index)
            else:
                scans.append(description)
        elif kind == _CONCAT:
            _check_slice(description, "a concatenated output")
            scans.append(description)
        else:
            raise Unsupported(f"output description {kind}")
    return carried_outputs, scans


@rule("Loop", versions=(5,), onnx="Loop (body subgraph), + Gather / Transpose / Reshape for outputs",
      notes="trip count < 0 means no limit (as in OpenVINO); the body condition ends the loop like ONNX's",
      refuses=("sliced inputs / concatenated outputs other than the whole axis in parts of "
               "|stride| = part_size (start 0 / end -1, or start -1 / end 0)",
               "outputs of an iteration other than the last"))
def loop(ctx, node):
    iteration_port, condition_port = node.get_special_body_ports()
    if condition_port < 0:
        raise Unsupported("a Loop body without a condition output")
    count = ctx.const_value(node, 0)
    if count is not None:
        trip_count = "" if int(count.reshape(-1)[0]) < 0 else ctx.const(
            np.array(int(count.reshape(-1)[0]), np.int64), "trip_count")
    else:
        value = ctx.emit("Reshape", [ctx.int64(node, 0), ctx.const(np.array([], np.int64), "scalar")])
        negative = ctx.emit("Less", [value, ctx.const(np.array(0, np.int64), "zero")])
        trip_count = ctx.emit("Where", [negative, ctx.const(np.array(INT64_MAX, np.int64), "unbounded"), value])
    condition = ctx.emit("Reshape", [ctx.inp(node, 1), ctx.const(np.array([], np.int64), "scalar")])
    if trip_count == "" and any(_kind(d) == _SLICE for d in node.get_input_descriptions()):
        raise Unsupported("sliced inputs of a loop without a trip count")
    _loop(ctx, node, trip_count=trip_count, condition=condition, iteration_port=iteration_port,
          condition_port=condition_port)


@rule("TensorIterator", versions=(1,), onnx="Loop with a trip count (body subgraph), + Gather / Transpose / "
      "Reshape for outputs",
      notes="sliced inputs become Slice by iteration number inside the body",
      refuses=("sliced inputs / concatenated outputs other than the whole axis in parts of "
               "|stride| = part_size (start 0 / end -1, or start -1 / end 0)",))
def tensor_iterator(ctx, node):
    count = node.get_num_iterations()
    if count > 0:
        trip_count = ctx.const(np.array(count, np.int64), "trip_count")
    else:
        sliced = [d for d in node.get_input_descriptions() if _kind(d) == _SLICE]
        if not sliced:
            raise Unsupported("no sliced input and no static number of iterations")
        trip_count = _iterations_of_slice(ctx, node, sliced[0])
    # an explicit true condition: OpenVINO's ONNX reader turns an absent one into a node of dynamic rank
    condition = ctx.const(np.array(True), "true")
    _loop(ctx, node, trip_count=trip_count, condition=condition, iteration_port=-1, condition_port=None)
