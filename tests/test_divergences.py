"""The divergence table: well-formed, documented (docs/divergences.md is generated from it), and real --
each onnxruntime, reference-evaluator and torch entry's example still shows the divergence.
(The OpenVINO entries are demonstrated in test_kernels_vs_openvino.py.)"""
import pathlib

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import oracle
from onnx_bridge import IR_VERSION, OpError, divergences
from onnx_bridge.divergences import BY_ID, DIVERGENCES, Case

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN and overflow in examples
DOC = pathlib.Path(__file__).parent.parent / "docs" / "divergences.md"


def test_doc_is_generated_from_the_table():
    assert DOC.read_text() == divergences.to_markdown(), \
        "docs/divergences.md is stale: python -m onnx_bridge.divergences > docs/divergences.md"


@pytest.mark.parametrize("entry", DIVERGENCES, ids=[d.id for d in DIVERGENCES])
def test_entry_is_well_formed(entry):
    assert entry.backend in divergences.BACKENDS and entry.kind in divergences.KINDS
    assert entry.id.split("-")[0] in ("ov", "ort", "ref", "torch") and entry.title and len(entry.reason) > 40
    case = entry.example()
    assert entry.applies(case), case
    assert case.valid == (entry.kind not in ("accepts", "crashes"))
    assert entry in divergences.matching(entry.backend, case)


def _unit_rows():
    import custom_ops
    from custom_ops.unit import present
    return [(unit.op_type, row) for unit in custom_ops.units() if present(unit.divergences)
            for row in unit.divergences]


@pytest.mark.parametrize("op, row", _unit_rows(), ids=lambda v: v if isinstance(v, str) else v.id)
def test_every_unit_row_is_in_the_table_and_its_own_example_applies(op, row):
    """Each unit's row (also one several units declare: each unit's own example and predicate) is the
    table's entry of that id, which names the op and applies to the unit's example."""
    entry = BY_ID[row.id]
    assert op in entry.ops and (entry.title, entry.reason, entry.kind) == (row.title, row.reason, row.kind)
    case = divergences._entry(op, row).example()
    assert case.op == op and entry.applies(case), case
    assert entry in divergences.matching(entry.backend, case)


def test_a_row_declared_twice_with_another_text_is_refused():
    ours = divergences._entry(*_unit_rows()[0])
    other = divergences.Divergence(ours.id, ours.backend, ("AnotherOp",), ours.kind, ours.title, ours.reason + "!",
                                   ours.predicate, ours.example)
    with pytest.raises(ValueError, match="another text"):
        divergences._merged([ours, other])


def test_case_of_splits_inputs_and_attributes():
    case = Case.of("ReduceL2", data=np.ones((2, 2), np.float32), axes=[1], keep_dims=1)
    assert list(case.inputs) == ["data", "axes"] and case.attributes == {"keep_dims": 1}
    assert case["keep_dims"] == 1 and case["axes"].tolist() == [1]
    assert Case.of("Unique", data=np.ones(3)).args[0].shape == (3,)  # the optional axis is left out
    assert Case.of("Unique", data=np.ones(3)).attributes["index_element_type"] == "i64"  # defaults filled
    with pytest.raises(OpError, match="unknown input names"):
        Case("ReduceL2", {"data": np.ones(2), "axis": [0]})


def test_invalid_case_reports_the_contract_error():
    case = Case.of("ScatterUpdate", data=np.zeros(3), indices=[-1], updates=[1.0], axis=0)
    assert not case.valid and "index out of range" in str(case.contract)
    assert [d.id for d in divergences.matching("onnxruntime", case)] == ["ort-scatternd-negative-indices"]
    assert [d.id for d in divergences.matching("openvino-cpu", case)] == ["ov-scatter-index-out-of-range"]
    assert divergences.matching("torch", case) == []


def test_quoted_messages_explain_errors_of_value_entries():
    """A "value" entry explains an error whose message its reason quotes (apostrophes are no quotes)."""
    from onnx_bridge.conformance.divergence import _quotes
    refused = "OpenVINOError: OpenVINO returned Unique outputs of shape [(3,), (3,), (15,), (3,)] where ..."
    assert _quotes(BY_ID["ov-unique-empty"].reason, refused)
    assert _quotes("the plugin's result, then 'a quoted message' and it's", "RuntimeError: a quoted message")
    assert not _quotes("the plugin's result and it's wrong", "s result and it")


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend"):
        divergences.matching("tensorrt", DIVERGENCES[0].example())


# ------------------------------------------------------------------------------------------------------
# The other runtimes on each example, through the standard ONNX op a lowered model would use.


def _model(op_type, inputs: dict, attributes: dict, outputs=1, opset=18):
    node = helper.make_node(op_type, list(inputs), [f"y{i}" for i in range(outputs)], **attributes)
    graph = helper.make_graph(
        [node], "divergence", [helper.make_tensor_value_info(name, numpy_helper.from_array(value).data_type, None)
                               for name, value in inputs.items()],
        [helper.make_empty_tensor_value_info(f"y{i}") for i in range(outputs)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)


def _onnxruntime(op_type, inputs, attributes, outputs=1):
    import onnxruntime
    session = onnxruntime.InferenceSession(_model(op_type, inputs, attributes, outputs).SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return tuple(session.run(None, inputs))


def _reference(op_type, inputs, attributes, outputs=1):
    from onnx.reference import ReferenceEvaluator
    return tuple(ReferenceEvaluator(_model(op_type, inputs, attributes, outputs)).run(None, inputs))


def _scatter_elements(case, run):
    reduction = {"min": "min", "max": "max", "sum": "add", "prod": "mul", "none": "none"}[case["reduction"]]
    return run("ScatterElements", {"data": case["data"], "indices": case["indices"].astype(np.int64),
                                   "updates": case["updates"]}, {"axis": int(case["axis"]), "reduction": reduction})


def _reduce_l2(case, run):
    return run("ReduceL2", {"data": case["data"], "axes": case["axes"].astype(np.int64)},
               {"keepdims": case["keep_dims"], "noop_with_empty_axes": 1})


def _unique(case, run):
    return run("Unique", {"x": case["data"]}, {"sorted": case["sorted"]}, outputs=4)


def _scatter_nd(case, run):  # ScatterUpdate along axis 0
    return run("ScatterND", {"data": case["data"], "indices": case["indices"].astype(np.int64)[..., None],
                             "updates": case["updates"]}, {})


def _torch_scatter(case):
    import torch
    data, axis = torch.from_numpy(case["data"]), int(case["axis"])
    indices, updates = torch.from_numpy(case["indices"].astype(np.int64)), torch.from_numpy(case["updates"])
    if case["reduction"] == "none":
        return (data.scatter(axis, indices, updates).numpy(),)
    reduce = {"min": "amin", "max": "amax", "sum": "sum", "prod": "prod", "mean": "mean"}[case["reduction"]]
    return (data.scatter_reduce(axis, indices, updates, reduce, include_self=bool(case["use_init_val"])).numpy(),)


def _lowered_reference(case):
    """The conformance run's reference column: the case lowered to standard ONNX, in onnx.reference."""
    from onnx_bridge.conformance.adapters.reference import ReferenceAdapter
    from onnx_bridge.conformance.cases import Case as ConformanceCase
    return ReferenceAdapter().run(ConformanceCase("example", case.op, dict(case.inputs), dict(case.attributes)))


def _torch_unique(case):
    import torch
    dim = {"dim": int(case["axis"])} if "axis" in case.inputs else {}
    values, inverse, counts = torch.unique(torch.from_numpy(case["data"]), sorted=bool(case["sorted"]),
                                           return_inverse=True, return_counts=True, **dim)
    return values.numpy(), inverse.numpy(), counts.numpy()


def _torch_index_copy(case):  # ScatterUpdate along axis with 1-D indices
    import torch
    return (torch.from_numpy(case["data"]).index_copy(int(case["axis"]), torch.from_numpy(case["indices"]),
                                                      torch.from_numpy(case["updates"])).numpy(),)


def _torch_norm(case):
    import torch
    return (torch.linalg.vector_norm(torch.from_numpy(case["data"]), 2, dim=tuple(case["axes"].tolist())).numpy(),)


# id: (run the example, what the runtime's error says for "rejects" (and value entries that raise))
RUNS = {
    "ort-unique-nan": (lambda c: _unique(c, _onnxruntime)[:1], None),
    "ort-reducel2-int-truncates": (lambda c: _reduce_l2(c, _onnxruntime), None),
    "ort-scatterelements-minmax-nan-replaced": (lambda c: _scatter_elements(c, _onnxruntime), None),
    "ort-scatternd-negative-indices": (lambda c: _scatter_nd(c, _onnxruntime), None),
    "ref-scatterelements-minmax-nan-ignored": (lambda c: _scatter_elements(c, _reference), None),
    "ref-reducel2-float16": (lambda c: _reduce_l2(c, _reference), None),
    "ref-reducel2-int-truncates": (lambda c: _reduce_l2(c, _reference), None),
    "ref-unique-unsorted-nd": (lambda c: _unique(c, _reference)[:1], "out of bounds"),  # IndexError
    "ref-scatterelements-shape-unchecked": (lambda c: _scatter_elements(c, _reference), None),
    "ref-gatherelements-smaller-indices": (_lowered_reference, "should be the same size"),
    "ref-scatterelements-minmax-signed-zero": (lambda c: _scatter_elements(c, _reference), None),
    "torch-scatter-negative-indices": (_torch_scatter, "out of bounds"),
    "torch-scatter-init0-infinity": (_torch_scatter, None),
    "torch-unique-nan": (lambda c: _torch_unique(c)[:1], None),
    "torch-unique-unsorted": (lambda c: _torch_unique(c)[:1], None),
    "torch-norm-integer": (_torch_norm, "floating point"),
    "torch-scatter-narrow-accumulator": (_torch_scatter, None),
    "torch-seu-minmax-signed-zero": (_torch_scatter, None),
    "torch-unique-signed-zero": (lambda c: _torch_unique(c)[:1], None),
    "torch-unique-empty-slices": (_torch_unique, "0 sized dimensions"),
    "torch-indexcopy-empty-unchecked": (_torch_index_copy, None),
    "torch-norm-single-element": (_torch_norm, None),
}


def test_every_other_runtime_entry_is_demonstrated():
    assert set(RUNS) == {d.id for d in DIVERGENCES if d.backend != "openvino-cpu"}


@pytest.mark.parametrize("entry_id", [pytest.param(i, marks=pytest.mark.torch) if i.startswith("torch") else i
                                      for i in RUNS])
def test_divergence_is_real(entry_id):
    entry = BY_ID[entry_id]
    case = entry.example()
    run, error_text = RUNS[entry_id]
    if error_text is not None:
        with pytest.raises(Exception, match=error_text):
            run(case)
        return
    got = run(case)
    if entry.kind == "value":  # the runtime runs and differs from the contract
        assert not _same(got, case.contract[:len(got)]), got


def test_onnxruntime_runs_what_the_reference_rejects():
    """ONNX allows indices smaller than data on a non-axis dimension: the lowered model runs in onnxruntime
    and gives the contract's value where onnx.reference raises (ref-gatherelements-smaller-indices)."""
    from onnx_bridge.conformance.adapters.onnxruntime import LoweredAdapter
    from onnx_bridge.conformance.cases import Case as ConformanceCase
    case = BY_ID["ref-gatherelements-smaller-indices"].example()
    got = LoweredAdapter().run(ConformanceCase("example", case.op, dict(case.inputs), dict(case.attributes)))
    oracle.assert_identical(tuple(got), case.contract)


def _same(got, want) -> bool:
    try:
        oracle.assert_identical(tuple(np.asarray(g) for g in got), want)
    except AssertionError:
        return False
    return True


# ------------------------------------------------------------------------------------------------------
# Results that depend on the machine: every measured outcome declared, each accepted, nothing else.

MACHINE_DEPENDENT = [d for d in DIVERGENCES if d.outcomes]


@pytest.mark.parametrize("entry", MACHINE_DEPENDENT, ids=[d.id for d in MACHINE_DEPENDENT])
def test_machine_dependent_entry_declares_where_each_outcome_was_measured(entry):
    assert len(entry.outcomes) >= 2 and entry.kind == "value"
    assert all(len(o.where) > 30 and "20" in o.where for o in entry.outcomes), "say where and when measured"
    case = entry.example()
    models = [o.outputs(case) for o in entry.outcomes]
    assert not _same(models[0], models[1]), "two outcomes that do not differ are one outcome"
    for outcome, outputs in zip(entry.outcomes, models):
        assert entry.outcome_of(case, outputs) is outcome and entry.explains(case, outputs)
    assert f"({len(entry.outcomes)}) " in divergences.to_markdown()


def test_cpu_dependent_neutral_value_outcomes():
    """ov-seu-init0-half-neutral-isa, modelled from the measurements: the contract's lowest(T) (AVX-512
    Xeon) or the infinity (AVX2-only EPYC) at positions whose updates are all infinite; nothing else."""
    entry = BY_ID["ov-seu-init0-half-neutral-isa"]
    inf = np.inf
    case = Case.of("ScatterElementsUpdate", data=np.array([1, 2, 3], np.float16), indices=np.array([0, 0, 2]),
                   updates=np.array([inf, inf, 5], np.float16), axis=np.array(0), reduction="min",
                   use_init_val=0)
    assert entry.applies(case)
    contract = np.array([65504, 2, 5], np.float16)
    oracle.assert_identical(case.contract, (contract,))
    avx512, avx2 = (o.outputs(case) for o in entry.outcomes)
    oracle.assert_identical(avx512, (contract,))
    oracle.assert_identical(avx2, (np.array([inf, 2, 5], np.float16),))
    assert entry.outcome_of(case, (np.array([0, 2, 5], np.float16),)) is None
    assert entry.outcome_of(case, (np.array([inf, 2, 6], np.float16),)) is None  # a real difference elsewhere
    assert not entry.explains(case, (np.array([inf, 2, 5], np.float32),))  # dtype counts
    # float32 (-+FLT_MAX on every CPU measured) and use_init_val=1 are not claimed
    for other in ({"data": case["data"].astype(np.float32), "updates": case["updates"].astype(np.float32)},
                  {"use_init_val": 1}):
        values = {**case.inputs, **case.attributes, **other}
        assert not entry.applies(Case.of("ScatterElementsUpdate", **values))


def test_an_entry_without_outcomes_explains_any_value():
    entry = BY_ID["ov-seu-int-mean-truncates"]
    assert entry.explains(entry.example(), (np.zeros(1),))
