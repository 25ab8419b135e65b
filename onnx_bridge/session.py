"""Run dialect models in onnxruntime.

prepare_model() rewrites a model so onnxruntime-extensions can run its dialect nodes: every attribute
written (onnxruntime-extensions requires all declared attributes), an older op version expressed as the
newest, float16/bfloat16 nodes widened to float32 with Casts (the PyOp API cannot carry them), every
input and output named (an absent optional input becomes an empty placeholder the op is told about),
outputs cast where the op's unit asks (custom_ops.unit: pyop_casts), and the node name recorded for
error messages. Nodes of users' own ops (onnx_bridge.custom_op) are rewritten the same way.
InferenceSession is a drop-in onnxruntime.InferenceSession that does this, registers the ops, and turns a
failure inside a Python op into an OpError raised from run() instead of an abort.

Concurrency: no lock. Each run collects the errors of its Python ops in a record of its own
(custom_ops.pyops.collecting_errors on the calling thread; sessions with Python ops run in sequential
execution mode, so the ops run on that thread); the GIL serializes the Python parts, native kernels run
in parallel. A caller's SessionOptions is copied, never changed.
"""
from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import custom_ops
from converters.passes import uses_domain
from custom_ops.schemas import register_schemas
from custom_ops.element_types import NUMPY_TO_ONNX, ONNX_TO_NUMPY, WIDENED_TYPES, type_name

from converters.functions import plain_dialect_nodes
from converters.model_io import load_model, needs_external_data, opset_of, save_model
from converters.passes import make_runnable
from .config import DIALECT_OPSET, DOMAIN
from .errors import ModelError, OpError
from .state import State, state_pairs
from . import user_ops as _user_ops

_WIDENED_CODES = {NUMPY_TO_ONNX[t] for t in WIDENED_TYPES}


def custom_op_preferred(node: onnx.NodeProto, constants=None) -> str | None:
    """Why the session runs `node` as a custom op although an exact lowering exists (the unit's
    prefer_custom_op, e.g. measured faster, docs/performance.md), or None to run it natively.
    `constants`: names of the model's constant values, when known."""
    unit = custom_ops.unit_of(node.op_type) if node.domain == DOMAIN else None
    if unit is None or unit.prefer_custom_op is None:
        return None
    return unit.prefer_custom_op(node, constants)


def _preferences(model: onnx.ModelProto):
    """The `ops=` callback of converters.convert for a session: custom_op_preferred with the model's
    constant values known (e.g. an input the contract checks at run time, which a lowering would not)."""
    constant = frozenset({t.name for t in model.graph.initializer} | {
        o for n in model.graph.node if n.op_type == "Constant" for o in n.output})
    return lambda node: custom_op_preferred(node, constant)


def _ort():
    from custom_ops import pyops as _ort  # registers the PyOps and the invocation hook on first import
    return _ort


def get_library_path() -> str:
    """Path of the onnxruntime-extensions library to pass to SessionOptions.register_custom_ops_library.

    Importing it here also registers the dialect ops. Models must go through prepare_model() first.
    """
    return _ort().get_library_path()


def register_ops() -> None:
    """Register the dialect PyOps with onnxruntime-extensions (idempotent)."""
    _ort()


def _value_types(model: onnx.ModelProto) -> dict[str, int]:
    register_schemas()
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError):
        inferred = model  # inference is a help, not a requirement: types come from value_info then
    types: dict[str, int] = {}

    def collect(graph):
        for value in list(graph.input) + list(graph.value_info) + list(graph.output):
            if value.type.tensor_type.elem_type:
                types[value.name] = value.type.tensor_type.elem_type
        for tensor in graph.initializer:
            types[tensor.name] = tensor.data_type
        for node in graph.node:
            if node.op_type == "Constant":
                for attribute in node.attribute:
                    if attribute.name == "value":
                        types[node.output[0]] = attribute.t.data_type
            for attribute in node.attribute:
                for sub in ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else
                            list(attribute.graphs)):
                    collect(sub)

    collect(inferred.graph)
    return types


class _Rewriter:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.opset = opset_of(model, DOMAIN)
        self.types = _value_types(model)
        self.user_domains = _user_ops.registered_domains()
        self.count = 0

    def graph(self, graph: onnx.GraphProto) -> None:
        nodes = []
        for node in graph.node:
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    self.graph(attribute.g)
                for sub in attribute.graphs:
                    self.graph(sub)
            if node.domain == DOMAIN:
                nodes.extend(self.node(node, graph))
            elif node.domain in self.user_domains:
                self.count += 1
                label = node.name or f"{node.op_type}_{self.count}"
                nodes.extend(_user_ops.rewrite_node(
                    node, label, lambda name, port: self._type_of(node, name, port), self.count))
            else:
                nodes.append(node)
        del graph.node[:]
        graph.node.extend(nodes)

    def _type_of(self, node, name: str, port: str) -> int:
        code = self.types.get(name)
        if not code:
            raise ModelError(f"{node.op_type} node {node.name!r}: element type of input {port!r} "
                             f"({name!r}) is unknown; give the model's inputs typed value_info")
        return code

    def node(self, node: onnx.NodeProto, graph: onnx.GraphProto) -> list[onnx.NodeProto]:
        if self.opset is None:
            raise ModelError(f"node {node.name!r} is in domain {DOMAIN!r} but the model does not "
                             f"import that domain (add opset_import {DOMAIN!r} version 12)")
        self.count += 1
        label = node.name or f"{node.op_type}_{self.count}"
        attributes = self._checked_attributes(node, label)
        # The PyOps implement the newest version; an older node is its newest version with defaults.
        newest = custom_ops.resolve(node.op_type, DIALECT_OPSET)
        attributes = newest.attribute_values(attributes)
        unit = custom_ops.unit_of(node.op_type)
        extra = [helper.make_attribute("_node", label)]
        # onnxruntime-extensions needs every declared input and output named (one input count per op).
        inputs = list(node.input) + [""] * (len(newest.inputs) - len(node.input))
        outputs = [name or f"__bridge_unused_{self.count}_{i}" for i, name in
                   enumerate(list(node.output) + [""] * (len(newest.outputs) - len(node.output)))]
        before, after, wide_type, dtype_name = self._widen(node, newest, inputs, outputs)
        extra.append(helper.make_attribute("_dtype", dtype_name))
        absent = self._absent_placeholders(node, newest, graph, inputs, wide_type)
        extra.append(helper.make_attribute("_absent", ",".join(absent)))
        if unit is not None and unit.pyop_casts is not None:
            attributes, casts = unit.pyop_casts(attributes)
            for index, dtype in casts.items():
                if index < len(node.output) and node.output[index]:
                    wide = f"{outputs[index]}__bridge_pyop"
                    after.append(helper.make_node("Cast", [wide], [outputs[index]], to=NUMPY_TO_ONNX[dtype]))
                    outputs[index] = wide
        lists = {a.name for a in newest.attributes if a.kind in ("ints", "floats")}  # PyOps take JSON
        attributes = {name: json.dumps(value) if name in lists else value for name, value in attributes.items()}
        rewritten = helper.make_node(node.op_type, inputs, outputs, name=node.name, domain=DOMAIN,
                                     **attributes)
        rewritten.attribute.extend(extra)
        return before + [rewritten] + after

    def _checked_attributes(self, node: onnx.NodeProto, label: str) -> dict:
        """The node's attribute values with its version's defaults, after checking each input's element type
        against its port's type constraint (OpError naming the node otherwise)."""
        spec = custom_ops.resolve(node.op_type, self.opset)
        given = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        try:
            attributes = spec.attribute_values(given)
            bound = {}  # type constraint -> (first port, its type)
            for index, port in enumerate(spec.inputs):
                if index < len(node.input) and node.input[index]:
                    code = self._type_of(node, node.input[index], port.name)
                    allowed = spec.type_constraints[port.type_constraint]
                    if code not in ONNX_TO_NUMPY or ONNX_TO_NUMPY[code] not in allowed:
                        raise OpError(spec.op_type, f"input '{port.name}'", "unsupported element type",
                                      value=TensorProto.DataType.Name(code),
                                      allowed=", ".join(type_name(t) for t in allowed))
                    first, first_code = bound.setdefault(port.type_constraint, (port.name, code))
                    if code != first_code:
                        raise OpError(spec.op_type, f"input '{port.name}'", f"element type must equal that of {first!r}",
                                      value=TensorProto.DataType.Name(code),
                                      allowed=TensorProto.DataType.Name(first_code))
                elif not port.optional:
                    raise OpError(spec.op_type, f"input '{port.name}'", "is required but missing")
        except OpError as error:
            raise error.with_node(label)
        return attributes

    def _widen(self, node, newest, inputs: list, outputs: list) -> tuple[list, list, str, str]:
        """(Casts before, Casts after, the data type constraint, the _dtype attribute): a data type the PyOps
        do not take (WIDENED_TYPES) is cast to float32 on the inputs of its constraint and back on its outputs
        (`inputs` and `outputs` renamed in place)."""
        # the data input: the first whose constraint admits a widened type (RandomUniform: min_val), else 0
        data_index = next((i for i, port in enumerate(newest.inputs) if i < len(node.input) and node.input[i]
                           and set(newest.type_constraints[port.type_constraint]) & set(WIDENED_TYPES)), 0)
        data_code = self.types[node.input[data_index]]
        wide_type = newest.inputs[data_index].type_constraint  # the data type: widened together
        before, after = [], []
        if data_code not in _WIDENED_CODES:
            return before, after, wide_type, ""
        for index in [i for i, port in enumerate(newest.inputs)
                      if port.type_constraint == wide_type and inputs[i]]:
            wide = f"{inputs[index]}__bridge_f32_{self.count}"
            before.append(helper.make_node("Cast", [inputs[index]], [wide], to=TensorProto.FLOAT))
            inputs[index] = wide
        for index in [i for i, port in enumerate(newest.outputs)
                      if port.type_constraint == wide_type and i < len(node.output) and node.output[i]]:
            wide = f"{outputs[index]}__bridge_f32"
            after.append(helper.make_node("Cast", [wide], [outputs[index]], to=data_code))
            outputs[index] = wide
        return before, after, wide_type, type_name(ONNX_TO_NUMPY[data_code])

    def _absent_placeholders(self, node, newest, graph: onnx.GraphProto, inputs: list, wide_type: str) -> list:
        """The indices (as strings) of absent optional inputs, each given an empty initializer (renamed in
        `inputs`) of the type its constraint is bound to, else int64 or the constraint's first type."""
        absent = []
        for index, port in enumerate(newest.inputs):
            if not inputs[index]:  # an absent optional input: an empty placeholder the op is told about
                allowed = newest.type_constraints[port.type_constraint]
                dtype = np.dtype(np.int64) if np.dtype(np.int64) in allowed else allowed[0]
                # a constraint bound by a present input: the placeholder takes that input's (widened) type
                bound = [self.types[node.input[i]] for i, p in enumerate(newest.inputs)
                         if p.type_constraint == port.type_constraint and i < len(node.input) and node.input[i]]
                if bound:
                    wide = port.type_constraint == wide_type and bound[0] in _WIDENED_CODES
                    dtype = np.dtype(np.float32) if wide else ONNX_TO_NUMPY[bound[0]]
                inputs[index] = f"__bridge_absent_{self.count}_{index}"
                graph.initializer.append(numpy_helper.from_array(np.zeros(0, dtype), inputs[index]))
                absent.append(str(index))
        return absent


def prepare_model(model) -> onnx.ModelProto:
    """A copy of `model` that onnxruntime with onnxruntime-extensions runs with the dialect's semantics.

    For users who build their own onnxruntime.InferenceSession:

        so = onnxruntime.SessionOptions()
        so.register_custom_ops_library(onnx_bridge.get_library_path())
        sess = onnxruntime.InferenceSession(onnx_bridge.prepare_model(m).SerializeToString(), so)

    In such a session a failing Python op cannot raise (onnxruntime-extensions would abort): it
    returns empty outputs and records the error for the thread that ran it; take_errors(), called on
    that thread after run(), returns (and forgets) it. Keep the session's execution mode sequential
    (the default) so the ops run on the thread that called run(). onnx_bridge.InferenceSession does
    all this for you.
    """
    model = plain_dialect_nodes(make_runnable(load_model(model)))  # none in function bodies
    rewriter = _Rewriter(model)
    rewriter.graph(model.graph)
    if rewriter.count and opset_of(model, "") is None:
        model.opset_import.add(domain="", version=18)  # for the Casts we may have added
    return model


def take_errors() -> list:
    """Errors of bridge Python ops that ran on this thread outside onnx_bridge.InferenceSession.run
    (a user's own onnxruntime session built with prepare_model), since the last call; for that route,
    call it after every run() to learn whether the run failed. The errors keep their messages and
    traceback lines, not the failing inputs."""
    return _ort().take_errors()


def _uses_pyops(model: onnx.ModelProto) -> bool:
    domains = {DOMAIN} | _user_ops.registered_domains()
    return any(uses_domain(model, domain) for domain in domains)


#: SessionOptions properties copied to the session's own options (onnxruntime's SessionOptions cannot
#: be copied or pickled, and registering a library changes it for good).
_OPTION_PROPERTIES = (
    "enable_cpu_mem_arena", "enable_mem_pattern", "enable_mem_reuse", "enable_profiling",
    "execution_mode", "execution_order", "graph_optimization_level", "inter_op_num_threads",
    "intra_op_num_threads", "log_severity_level", "log_verbosity_level", "logid",
    "optimized_model_filepath", "profile_file_prefix", "use_deterministic_compute",
    "use_per_session_threads")
#: Session config entries copied when set (onnxruntime cannot list the entries of an options object).
_CONFIG_KEYS = (
    "session.disable_prepacking", "session.use_env_allocators", "session.load_model_format",
    "session.save_model_format", "session.set_denormal_as_zero", "session.disable_quant_qdq",
    "session.disable_double_qdq_remover", "session.enable_quant_qdq_cleanup",
    "session.disable_aot_function_inlining", "session.disable_specified_optimizers",
    "optimization.disable_specified_optimizers", "optimization.enable_gelu_approximation",
    "optimization.minimal_build_optimizations", "session.intra_op.allow_spinning",
    "session.inter_op.allow_spinning", "session.force_spinning_stop", "session.intra_op_thread_affinities",
    "session.dynamic_block_base", "session.use_device_allocator_for_initializers",
    "session.allow_released_opsets_only", "session.strict_shape_type_inference",
    "session.disable_cpu_ep_fallback", "session.use_ort_model_bytes_directly",
    "session.use_ort_model_bytes_for_initializers", "session.qdqisint8allowed",
    "session.x64quantprecision", "session.graph_optimizations_loop_level", "session.enable_profiling",
    "session.optimized_model_external_initializers_file_name",
    "session.optimized_model_external_initializers_min_size_in_bytes", "mlas.enable_gemm_fastmath_arm64_bfloat16")


def session_options(user: ort.SessionOptions | None, *, python_ops: bool) -> ort.SessionOptions:
    """A fresh SessionOptions for one session the bridge creates: the caller's settings (properties and
    the config entries in _CONFIG_KEYS; what onnxruntime's Python API cannot read back, e.g.
    add_initializer or other custom-op libraries, is not carried), the extensions library if the model
    still has Python ops (then sequential execution, so they run on the thread that called run()), and
    log severity "fatal": a failing run reports itself through the exception alone (onnxruntime would
    log the node that failed, or the empty output a failing Python op leaves, e.g. VerifyOutputSizes)."""
    options = ort.SessionOptions()
    if user is not None:
        for name in _OPTION_PROPERTIES:
            setattr(options, name, getattr(user, name))
        for key in _CONFIG_KEYS:
            try:
                value = user.get_session_config_entry(key)
            except RuntimeError:  # not set (onnxruntime raises RuntimeError for an unset key)
                continue
            options.add_session_config_entry(key, value)
    options.log_severity_level = 4
    if python_ops:
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.register_custom_ops_library(get_library_path())
    return options


@contextlib.contextmanager
def _serialized(model: onnx.ModelProto):
    """The model as bytes for onnxruntime; past protobuf's 2 GB limit, the path of a copy with external
    data (onnxruntime has read it once the session exists)."""
    if not needs_external_data(model):
        yield model.SerializeToString()
        return
    with tempfile.TemporaryDirectory(prefix="onnx-bridge-") as directory:
        yield str(save_model(model, Path(directory) / "model.onnx", external_data=True))


class InferenceSession:
    """onnxruntime.InferenceSession for models with dialect nodes; same constructor and methods.

    lower=True (default): nodes with an exact standard-ONNX lowering (converters.convert with
    strict="semantics": the standard graph agrees on every input, valid or not, NaN included) run as
    native onnxruntime kernels (except where the op's unit prefers the custom op, e.g. measurably
    faster, or an input computed at run time that only the op checks: see custom_op_preferred); the
    rest run as Python custom ops. The one admitted difference is float summation order (a lowered
    float reduction may differ from the Python kernel in the last bits, as any two implementations of
    a float sum do). lower=False runs every dialect node as a
    Python custom op. Nodes of users' own ops (onnx_bridge.custom_op) always run as Python ops.
    If a run fails inside a lowered node, the inputs are replayed through the custom ops so the error
    is the dialect's OpError (naming node, input and value) rather than onnxruntime's message.

    `sess_options` is never changed: the session uses a copy (see session_options). Runs from several
    threads, on one session or several, are independent: each raises its own errors.

    stateful: a model with variables (inputs past_key_values.* / input_restored.* and their outputs
    present.* / output_restored.*, as converted from a stateful OpenVINO IR) carries them from run to run
    like an OpenVINO InferRequest (onnx_bridge/state.py): run() needs only the other inputs, reset_state()
    starts over, a past given in the feeds overrides. None (default): when the model has variables. Such a
    session's runs are sequential (the state is the session's).
    """

    def __init__(self, model, sess_options=None, providers=None, provider_options=None, *, lower=True,
                 stateful: bool | None = None, **kwargs):
        source = load_model(model)
        self.conversion_report = None
        self._fallback = None
        self._fallback_session = None
        self._session_args = (sess_options, providers, provider_options, kwargs)
        if lower and uses_domain(source, DOMAIN):
            from converters import convert
            lowered, self.conversion_report = convert(source, to="standard", strict="semantics",
                                                     ops=_preferences(source))
            self._fallback = source
            source = lowered
        self.prepared_model = prepare_model(source)
        self._uses_pyops = _uses_pyops(self.prepared_model)
        self._session = self._create(self.prepared_model, self._uses_pyops)
        pairs = state_pairs(source) if stateful is not False else []
        if stateful and not pairs:
            raise ModelError("stateful=True but the model has no variables (inputs past_key_values.* or "
                             "input_restored.* with outputs present.* / output_restored.*)")
        self._state = State(source, pairs) if pairs else None

    def reset_state(self) -> None:
        """Forget the variables: the next run starts from the model's initial state."""
        if self._state is None:
            raise ModelError("reset_state(): this session is not stateful")
        self._state.reset()

    def _create(self, prepared, python_ops):
        sess_options, providers, provider_options, kwargs = self._session_args
        options = session_options(sess_options, python_ops=python_ops)
        try:
            with _serialized(prepared) as serialized:
                return ort.InferenceSession(serialized, options, providers=providers or ["CPUExecutionProvider"],
                                            provider_options=provider_options, **kwargs)
        except Exception as exc:
            raise ModelError(f"onnxruntime refused the model: {exc}") from exc

    def run(self, output_names, input_feed, run_options=None):
        if self._state is not None:
            return self._state.run(self._run, output_names, input_feed, run_options)
        return self._run(output_names, input_feed, run_options)

    def _run(self, output_names, input_feed, run_options=None):
        try:
            if not self._uses_pyops:
                return self._session.run(output_names, input_feed, run_options)
            _refuse_nul_strings(input_feed)
            return _run_collecting_errors(self._session, output_names, input_feed, run_options)
        except OpError:
            raise
        except Exception as native_error:
            if self._fallback is None:
                raise
            # Replay through the custom ops: an invalid input gets the dialect's own error.
            try:
                if self._fallback_session is None:  # created once, on the first failure
                    self._fallback_session = self._create(prepare_model(self._fallback), True)
                _run_collecting_errors(self._fallback_session, output_names, input_feed, run_options)
            except OpError as error:
                raise error from native_error
            except Exception as replay_error:  # reported with the native error, not hidden
                if hasattr(native_error, "add_note"):
                    native_error.add_note("replaying the inputs through the custom ops did not explain it: "
                                          f"{type(replay_error).__name__}: {replay_error}")
            raise

    def __getattr__(self, name):  # get_inputs, get_outputs, get_providers, io_binding, ...
        return getattr(self._session, name)


def _refuse_nul_strings(input_feed) -> None:
    """onnxruntime-extensions hands Python ops C strings: a string with a NUL character would arrive cut."""
    for name, value in (input_feed or {}).items():
        if isinstance(value, np.ndarray) and value.dtype.kind in "OU" and \
                any(isinstance(v, str) and "\0" in v for v in value.reshape(-1).tolist()):
            raise OpError("InferenceSession", f"input '{name}'", "a string contains a NUL character, which "
                          "onnxruntime-extensions would cut a Python op's string at")


def _run_collecting_errors(session, output_names, input_feed, run_options):
    with _ort().collecting_errors() as errors:
        try:
            outputs = session.run(output_names, input_feed, run_options)
        except Exception as exc:
            if errors:
                raise errors[0] from exc
            raise
    if errors:
        raise errors[0]
    return outputs
