"""Shared machinery of the OpenVINO IR import tests: a case builds a small OpenVINO model with the opset
builders; the imported ONNX model run in onnxruntime must give OpenVINO's own result (CPU plugin, f32
precision, or its reference where the case says why)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
from openvino import opset1

from onnx_bridge import comparison, divergences

CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
#: Transcendental functions: OpenVINO's CPU plugin and onnxruntime use different vectorised
#: approximations (exp, log, erf, tanh...), so results differ in the last bits (relative to the
#: function's magnitude: swish(-7.5) = -0.0015 differs by 3e-7).
LIBM = dict(rtol=1e-5, atol=1e-6)
ULP = dict(rtol=1.2e-7, atol=0)
#: MatMul/Softmax/Einsum: the two runtimes accumulate dot products and sums in different orders.
ACCUMULATION = dict(rtol=1e-5, atol=1e-6)


def P(shape, element="f32", name=None):
    return opset1.parameter(ov.PartialShape(shape), getattr(ov.Type, element), name=name)


def C(value, dtype=None):
    value = np.asarray(value, dtype=dtype)
    if value.size == 0:  # the builder refuses empty constants
        return ov.op.Constant(ov.Type(value.dtype), ov.Shape(list(value.shape)), [])
    return opset1.constant(value)


@dataclass
class Case:
    id: str
    build: Callable  # (inputs by name) -> list of output nodes
    feeds: dict      # input name -> array; Parameters are built from these (dynamic dims unless static)
    tolerance: dict = field(default_factory=dict)  # empty: exact
    static: bool = False  # static Parameter shapes (the CPU plugin refuses some ops with dynamic rank)
    #: "cpu": OpenVINO's CPU plugin. "reference": OpenVINO's core reference (the model with Constants
    #: for inputs, constant-folded at compile time), where the CPU plugin deviates from its spec (why: inline).
    against: str = "cpu"
    #: For a dialect op: feeds -> onnx_bridge.divergences.Case, so known CPU divergences are asked for.
    dialect: Callable | None = None


def build(case: Case, constants: bool = False):
    if constants:
        inputs = {name: C(value) for name, value in case.feeds.items()}
    else:
        inputs = {name: P(list(value.shape) if case.static else [-1] * value.ndim,
                          ov.Type(value.dtype).get_type_name(), name) for name, value in case.feeds.items()}
    outputs = [node.output(0) if hasattr(node, "output") else node for node in case.build(inputs)]
    return ov.Model(outputs, [] if constants else list(inputs.values()), case.id)


def openvino_expected(case: Case, build_model: Callable = build):
    """OpenVINO's outputs for the case (or the contract's, where a known CPU divergence applies); build_model:
    build, or a test file's own that seeds its weights first."""
    if case.dialect:
        dialect_case = case.dialect(case.feeds)
        if divergences.matching("openvino-cpu", dialect_case):  # the contract decides
            return list(dialect_case.contract)
    if case.against == "reference":
        return ov_run(build_model(case, constants=True), {})
    return ov_run(build_model(case), case.feeds)


def ov_run(model, feeds):
    compiled = ov.Core().compile_model(model, "CPU", CONFIG)
    result = compiled(feeds)
    return [result[output] for output in compiled.outputs]


def ort_session(onnx_model, optimized=None, *, optimize: bool = True):
    """The model in an onnxruntime CPU session as benchmarks/real_models.py runs it: one thread, every graph
    optimisation (ORT_ENABLE_ALL), warnings off. optimized: where onnxruntime writes the graph it optimized to
    (ort_optimized reads it; the benchmark's fused-kernel column too); optimize=False: no graph optimisation,
    so the model's own nodes compute (its values without onnxruntime's fusions)."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    if optimized is not None:
        options.optimized_model_filepath = str(optimized)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize else \
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(onnx_model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def ort_optimized(onnx_model, path):
    """The model's onnxruntime session and the graph onnxruntime optimized it to (written to `path`): which
    fusions ran."""
    session = ort_session(onnx_model, path)
    return session, onnx.load(str(path)).graph


def op_types(model_or_graph) -> list[str]:
    """The op types of a model's (or a graph's) nodes, in order."""
    graph = model_or_graph.graph if isinstance(model_or_graph, onnx.ModelProto) else model_or_graph
    return [node.op_type for node in graph.node]


def assert_same(got, want, tolerance, what):
    """Outputs of the same count, dtype and shape; floats within `tolerance` (numpy-style rtol/atol, {}:
    exact), NaN == NaN; integers and bools exact."""
    comparison.assert_same(got, want, tolerance, what)


class Opaque(ov.Op):
    """An op no rule imports (an OpenVINO extension op, type 'Opaque'): the unsupported-op listing's example."""

    def __init__(self, inputs=None):
        super().__init__(self, inputs)
        if inputs:
            self.constructor_validate_and_infer_types()

    def validate_and_infer_types(self):
        self.set_output_type(0, self.get_input_element_type(0), self.get_input_partial_shape(0))

    def clone_with_new_inputs(self, new_inputs):
        return Opaque(new_inputs)

    def visit_attributes(self, visitor):
        return True


def opaque(value):
    """An 'Opaque (extension)' node on `value` (an OpenVINO node or output): no import rule exists for it."""
    return Opaque([value.output(0) if hasattr(value, "output") else value])
