"""The end-to-end checks every dialect unit gets (custom_ops.unit): a unit's test file calls these on the
unit's generated cases. OpenVINO (CPU plugin, f32 precision hint) is the oracle; data movement and
integers are compared exactly, floats too unless the caller names a tolerance (accumulation order / libm).

    UNIT = custom_ops.unit_of("GatherTree")
    def test_kernel_matches_openvino_on_many_cases():
        assert check_generated_cases(UNIT, seeds=range(5)) >= 90
    @pytest.mark.parametrize("case", cases(UNIT)[:4], ids=lambda c: c.id)
    def test_import_session_export_backend(case, tmp_path):
        check_end_to_end(UNIT, case, tmp_path)

The per-op differences are parameters: `tolerance` (np.testing.assert_allclose keywords for float outputs),
`static=True` for ops the CPU plugin runs only on static input shapes (the oracle and exported models then
carry the case's shapes).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from custom_ops.config import DIALECT_OPSET, DOMAIN, IR_VERSION, TARGET_OPSET
from custom_ops.errors import OpError
from custom_ops.element_types import NUMPY_TO_ONNX

CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


def cases(unit, seed: int = 0):
    """The unit's generated cases (one RNG per call, seeded: reproducible one by one)."""
    return unit.cases(np.random.default_rng(seed))


def first_of_type(unit, dtype, seeds: int = 3):
    """The first generated case (seeds 0, 1, ...) whose first input is of `dtype`."""
    return next(case for seed in range(seeds) for case in cases(unit, seed)
                if np.asarray(case.inputs[0]).dtype == np.dtype(dtype))


def input_names(unit, case) -> list[str]:
    return [port.name for port, value in zip(unit.newest.inputs, case.inputs) if value is not None]


def feeds(unit, case) -> dict:
    """Graph inputs of the case: every input but the unit's constant inputs (those are initializers)."""
    constant = unit.openvino.constant_inputs
    return {port.name: np.asarray(value) for port, value in zip(unit.newest.inputs, case.inputs)
            if value is not None and port.name not in constant}


def to_openvino(value) -> np.ndarray:
    """A numpy input as OpenVINO's Python API takes it: ONNX strings (object arrays of str) as numpy str."""
    value = np.asarray(value)
    return np.asarray(value, dtype=str) if value.dtype == object else value


def from_openvino(array) -> np.ndarray:
    """An OpenVINO output as the ONNX side has it: numpy str arrays (string tensors) as object arrays of str."""
    array = np.asarray(array)
    return array.astype(object) if array.dtype.kind == "U" else array


def _shaped(function, unit, case, static: bool):
    """function(unit, case), with static=True only when asked: a test may swap in its own oracle taking
    (unit, case) (e.g. OpenVINO's reference implementation instead of the CPU plugin)."""
    return function(unit, case, static=True) if static else function(unit, case)


def openvino_model(unit, case, static: bool = False):
    """An ov.Model of the native op for the case: Parameters (dynamic dims, or the case's with `static`) for
    the tensor inputs, Constants for the unit's constant inputs, built by the unit's factory."""
    import openvino as ov
    from openvino import opset1
    parameters, inputs = [], []
    for port, value in zip(unit.newest.inputs, case.inputs):
        if value is None:
            inputs.append(None)
        elif port.name in unit.openvino.constant_inputs:
            value = np.asarray(value)   # strings: only through an ov.Tensor (Constant(numpy str) crashes)
            inputs.append(ov.op.Constant(ov.Tensor(to_openvino(value))) if value.dtype == object
                          else ov.op.Constant(value))
        else:
            value = to_openvino(value)
            shape = list(value.shape) if static else ov.PartialShape([-1] * value.ndim)
            parameters.append(opset1.parameter(shape, ov.Type(value.dtype), name=port.name))
            inputs.append(parameters[-1].output(0))
    attributes = unit.openvino.ov_attributes(unit.newest.attribute_values(case.attributes))
    node = unit.openvino.factory(ov, inputs, attributes)
    return ov.Model(node.outputs(), parameters, case.id)


def openvino_outputs(unit, case, static: bool = False) -> list[np.ndarray]:
    import openvino as ov
    compiled = ov.Core().compile_model(_shaped(openvino_model, unit, case, static), "CPU", CONFIG)
    result = compiled({name: to_openvino(value) for name, value in feeds(unit, case).items()})
    return [from_openvino(result[output]) for output in compiled.outputs]


def dialect_model(unit, case, static: bool = False) -> onnx.ModelProto:
    """A one-node dialect ONNX model of the case (constant inputs as initializers; input dims unknown, or the
    case's with `static`)."""
    spec = unit.newest
    graph_inputs, initializers, names = [], [], []
    for port, value in zip(spec.inputs, case.inputs):
        if value is None:
            names.append("")
            continue
        value = np.asarray(value)
        names.append(port.name)
        if port.name in unit.openvino.constant_inputs:
            initializers.append(onnx.numpy_helper.from_array(value, port.name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(port.name, NUMPY_TO_ONNX[value.dtype],
                                                              list(value.shape) if static else [None] * value.ndim))
    while names and not names[-1]:
        names.pop()
    outputs = [port.name for port in spec.outputs]
    node = helper.make_node(unit.op_type, names, outputs, name=f"{unit.op_type}_node", domain=DOMAIN,
                            **case.attributes)
    graph = helper.make_graph([node], case.id, graph_inputs,
                              [helper.make_tensor_value_info(name, code, shape)
                               for name, (code, shape) in zip(outputs, _output_types(unit, case))], initializers)
    return helper.make_model(graph, ir_version=IR_VERSION, opset_imports=[
        helper.make_opsetid("", TARGET_OPSET), helper.make_opsetid(DOMAIN, DIALECT_OPSET)])


def _output_types(unit, case) -> list[tuple]:
    """(ONNX element type, shape of unknown dims) of each output: the kernel's, or (for a case it refuses)
    the type of the input that binds the output's type constraint, shape unknown."""
    try:
        return [(NUMPY_TO_ONNX[np.asarray(v).dtype], [None] * np.ndim(v)) for v in kernel_outputs(unit, case)]
    except OpError:
        spec = unit.newest
        bound = {p.type_constraint: np.asarray(v).dtype for p, v in zip(spec.inputs, case.inputs) if v is not None}
        # a constraint no input binds: its first type (the default of an attribute-chosen type)
        return [(NUMPY_TO_ONNX.get(bound.get(p.type_constraint, spec.type_constraints[p.type_constraint][0]),
                                   onnx.TensorProto.FLOAT), None) for p in spec.outputs]


def assert_same(got, want, what: str, tolerance: dict | None = None) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} outputs, want {len(want)}"
    for index, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.dtype, a.shape) == (b.dtype, b.shape), f"{what} output {index}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        if tolerance and a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, **tolerance, err_msg=f"{what} output {index}")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{what} output {index}")


def kernel_outputs(unit, case) -> tuple:
    return unit.newest.run(list(case.inputs), case.attributes)


def check_kernel_against_openvino(unit, case, tolerance=None, static: bool = False) -> None:
    """The numpy kernel equals OpenVINO's CPU plugin on the case."""
    assert_same(kernel_outputs(unit, case), _shaped(openvino_outputs, unit, case, static), f"{unit.op_type} {case.id}",
                tolerance)


def check_generated_cases(unit, seeds=range(3), tolerance=None, static: bool = False) -> int:
    """The kernel equals OpenVINO on the unit's generated cases of each seed; returns how many were compared.
    `tolerance` may be a function of the case."""
    count = 0
    for seed in seeds:
        for case in cases(unit, seed):
            check_kernel_against_openvino(unit, case, tolerance(case) if callable(tolerance) else tolerance, static)
            count += 1
    return count


def check_end_to_end(unit, case, tmp_path, tolerance=None, *, static: bool = False, backend: bool = True,
                     reference: bool = True) -> None:
    """IR import -> InferenceSession, export to IR, the OpenVINO backend (unless `backend` is False: ops the
    CPU plugin refuses on dynamic shapes) and schema + reference evaluator (unless `reference` is False), each
    against OpenVINO on the case."""
    check_import_and_session(unit, case, tolerance, static)
    check_export(unit, case, tmp_path, tolerance, static)
    if backend:
        check_backend(unit, case, tolerance, static)
    if reference:
        check_reference_and_schema(unit, case, static)


def check_import_and_session(unit, case, tolerance=None, static: bool = False) -> onnx.ModelProto:
    """IR of the native op -> import_ir -> one dialect node -> onnx_bridge.InferenceSession equals OpenVINO.
    Returns the imported model."""
    import onnx_bridge
    from converters.openvino_ir import import_ir
    imported = import_ir(_shaped(openvino_model, unit, case, static))
    dialect = [node for node in imported.graph.node if node.domain == DOMAIN]
    assert [node.op_type for node in dialect] == [unit.op_type], [n.op_type for n in imported.graph.node]
    session = onnx_bridge.InferenceSession(imported.SerializeToString())
    ov_inputs = [i.name for i in session.get_inputs()]
    got = session.run(None, {name: feeds(unit, case)[name] for name in ov_inputs})
    assert_same(got, _shaped(openvino_outputs, unit, case, static), f"{unit.op_type} {case.id} (session)", tolerance)
    return imported


def check_export(unit, case, tmp_path, tolerance=None, static: bool = False) -> None:
    """The dialect model exported to IR holds the native op and runs to OpenVINO's outputs."""
    import openvino as ov
    from converters.openvino_ir import export_ir
    xml = export_ir(_shaped(dialect_model, unit, case, static), tmp_path / f"{unit.op_type}.xml")
    model = ov.Core().read_model(str(xml))
    assert unit.openvino.type_name in [op.get_type_name() for op in model.get_ordered_ops()]
    compiled = ov.Core().compile_model(model, "CPU", CONFIG)
    result = compiled({name: to_openvino(value) for name, value in feeds(unit, case).items()})
    assert_same([from_openvino(result[o]) for o in compiled.outputs], _shaped(openvino_outputs, unit, case, static),
                f"{unit.op_type} {case.id} (exported)", tolerance)


def check_backend(unit, case, tolerance=None, static: bool = False) -> None:
    """onnx_bridge.backends.openvino.run builds the op from the unit and equals OpenVINO (the oracle on the
    case's shapes with `static`)."""
    from onnx_bridge.backends import openvino as backend
    got = backend.run(unit.op_type, list(case.inputs), case.attributes)
    assert_same(got, _shaped(openvino_outputs, unit, case, static), f"{unit.op_type} {case.id} (backend)", tolerance)


def check_reference_and_schema(unit, case, static: bool = False) -> None:
    """onnx.checker (full check, the unit's schema), shape inference of the output types, and
    onnx.reference with the dialect ops equal the kernel."""
    from onnx.reference import ReferenceEvaluator
    from custom_ops.reference import REFERENCE_OPS
    from custom_ops.schemas import register_schemas
    register_schemas()
    model = _shaped(dialect_model, unit, case, static)
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    want = kernel_outputs(unit, case)
    types = {v.name: v.type.tensor_type.elem_type for v in inferred.graph.output}
    for port, value in zip(unit.newest.outputs, want):
        assert types[port.name] == NUMPY_TO_ONNX[np.asarray(value).dtype], port.name
    got = ReferenceEvaluator(model, new_ops=REFERENCE_OPS).run(None, feeds(unit, case))
    assert_same(got, want, f"{unit.op_type} {case.id} (reference evaluator)")


def check_bad_case(unit, case, message: str) -> None:
    """The kernel and onnx_bridge.InferenceSession refuse the case with an OpError naming the op, the
    node (in the session) and `message`."""
    import pytest

    import onnx_bridge
    with pytest.raises(OpError, match=unit.op_type) as caught:
        kernel_outputs(unit, case)
    assert message in str(caught.value), str(caught.value)
    with pytest.raises(OpError) as caught:  # at session creation (types) or in run() (values)
        session = onnx_bridge.InferenceSession(dialect_model(unit, case).SerializeToString())
        session.run(None, feeds(unit, case))
    assert message in str(caught.value) and f"{unit.op_type}_node" in str(caught.value), str(caught.value)
