"""The conformance runner: corpus, comparison, cells, crash isolation, reports, exit codes and CLI."""
import json

import numpy as np
import onnx.reference  # noqa: F401  (before any dialect schema is registered)
import pytest
from onnx import TensorProto, helper, numpy_helper

from custom_ops._types import BFLOAT16, DATA_TYPES, INTEGER_TYPES
from onnx_bridge import cli
from onnx_bridge.config import DOMAIN, IR_VERSION
from onnx_bridge.conformance import Case, build_corpus, report, run
from onnx_bridge.conformance.cases import full_attributes, op_model
from onnx_bridge.conformance.compare import compare_arrays, tolerance_ulps
from onnx_bridge.conformance.corpus import generated_cases, model_cases, seed_cases
from onnx_bridge.conformance.evaluate import contract_of
from onnx_bridge.conformance.results import CRASH, ERROR, KNOWN, MATCH, MISMATCH

A = np.array
FAKE = "helpers.fake_backends:"


def seu_case(case_id, indices=(1, 0), data=(1, 2, 3), reduction="sum"):
    inputs = {"data": A(data, np.float32), "indices": A(indices), "updates": A([5.0] * len(indices), np.float32),
              "axis": A(0)}
    return Case(case_id, "ScatterElementsUpdate", inputs,
                full_attributes("ScatterElementsUpdate", {"reduction": reduction}), "test")


# ------------------------------------------------------------------------------------------------------
# Corpus


def test_generated_corpus_is_seeded_and_covers_every_type():
    first, again = generated_cases(per_op=30, seed=3), generated_cases(per_op=30, seed=3)
    assert [c.id for c in first] == [c.id for c in again]
    for a, b in zip(first, again):
        for name in a.inputs:
            assert (a.inputs[name] is None) == (b.inputs[name] is None)
            if a.inputs[name] is not None:  # bit for bit (NaN included)
                x, y = a.inputs[name], b.inputs[name]
                assert (x.dtype, x.shape, x.tobytes()) == (y.dtype, y.shape, y.tobytes())
    other = generated_cases(per_op=30, seed=4)
    assert any(not np.array_equal(a.data, b.data) for a, b in zip(first, other))
    by_op = {op: [c for c in first if c.op == op] for op in ("ScatterElementsUpdate", "Unique")}
    for cases in by_op.values():
        assert {c.data.dtype for c in cases} == set(DATA_TYPES)
    assert {c.inputs["indices"].dtype for c in by_op["ScatterElementsUpdate"]} == set(INTEGER_TYPES)
    assert {c.attributes["reduction"] for c in by_op["ScatterElementsUpdate"]} == \
        {"none", "sum", "prod", "min", "max", "mean"}


def test_generated_cases_are_invalid_exactly_when_tagged_and_never_index_below_minus_d():
    cases = generated_cases(per_op=120, seed=0)
    tags = set().union(*(c.tags for c in cases))
    assert {"duplicates", "negative-indices", "nan", "neg-zero", "empty", "invalid"} <= tags
    for case in cases:
        rejected = bool(contract_of(case).rejection)
        assert rejected == case.has("invalid"), case.id
        if case.op == "ScatterElementsUpdate" and not rejected and case.inputs["indices"].size:
            axis = int(case.inputs["axis"].reshape(-1)[0]) % case.data.ndim
            assert int(case.inputs["indices"].min()) >= -case.data.shape[axis]


def test_cases_size_and_only():
    assert len(generated_cases(total=10)) == 10
    cases = build_corpus("small", sources=("seed", "generated"), only=["seed/seu-*", "Unique"])
    assert cases and all(c.id.startswith("seed/seu-") or c.op == "Unique" for c in cases)


def test_onnx_backend_cases_are_raised_with_their_expected_outputs():
    pytest.importorskip("converters.raising")
    cases = build_corpus(sources=("onnx",))
    ids = {c.id for c in cases}
    assert {"onnx/test_scatter_elements_with_negative_indices", "onnx/test_reduce_l2_empty_set",
            "onnx/test_unique_sorted_with_axis_3d"} <= ids
    for case in cases:
        assert case.expected is not None
        results = run([case], backends=(), jobs=0)
        assert results.cell(0, "contract").status == MATCH, (case.id, results.cell(0, "contract").detail)


def _write_model(tmp_path):
    """One ScatterUpdate feeding an Add; indices are a graph input (the generator must keep them valid)."""
    node = helper.make_node("ScatterUpdate", ["data", "indices", "updates", "axis"], ["scattered"],
                            domain=DOMAIN)
    add = helper.make_node("Add", ["scattered", "data"], ["out"])
    graph = helper.make_graph(
        [node, add], "m",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [5, 2]),
         helper.make_tensor_value_info("indices", TensorProto.INT64, [4]),
         helper.make_tensor_value_info("updates", TensorProto.FLOAT, [4, 2])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [5, 2])],
        initializer=[numpy_helper.from_array(A(0), "axis")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 12)],
                              ir_version=IR_VERSION)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return path


def test_model_case_uses_npz_and_generates_valid_indices(tmp_path):
    path = _write_model(tmp_path)
    (case,) = model_cases([path], seed=1)
    assert case.inputs["indices"].min() >= 0 and case.inputs["indices"].max() <= 4
    np.savez(tmp_path / "x.npz", data=np.ones((5, 2), np.float32))
    (given,) = model_cases([path], tmp_path / "x.npz")
    np.testing.assert_array_equal(given.inputs["data"], np.ones((5, 2), np.float32))
    assert "generated: indices, updates" in given.description
    results = run([case], backends=("ort-dialect",), jobs=0)
    assert [results.cell(0, b).status for b in results.backends] == [MATCH, MATCH]


def test_one_node_model_carries_bfloat16_through_float32():
    case = Case("t", "Unique", {"data": A([1.5, -0.0, 1.5], np.float32).astype(BFLOAT16), "axis": None},
                full_attributes("Unique", {"index_element_type": "i32"}))
    model, feeds = op_model(case)
    assert feeds["data_f32"].dtype == np.float32
    assert [o.type.tensor_type.elem_type for o in model.graph.output] == \
        [TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT32, TensorProto.INT64]


# ------------------------------------------------------------------------------------------------------
# Comparison


@pytest.mark.parametrize("want, got, status, text", [
    (A([1.0, np.nan], np.float32), A([1.0, np.nan], np.float32), None, ""),
    (A([0.0], np.float32), A([-0.0], np.float32), "values", "sign of zero"),
    (A([1.0, 2.0], np.float32), A([1.0, np.nan], np.float32), "values", "NaN"),
    (A([1, 2, 3], np.int64), A([1, 2, 4], np.int64), "values", "got 4, contract 3"),
    (A([1, 2], np.int64), A([1, 2], np.int32), "dtype", "int32"),
    (A([1, 2], np.int64), A([[1, 2]], np.int64), "shape", "[1, 2]"),
    (A(2.0, np.float64), A(3.0, np.float64), "values", "got 3.0"),
    (A([1.0], BFLOAT16), A([1.0078125], BFLOAT16), "values", "1 ulp"),
])
def test_compare(want, got, status, text):
    difference = compare_arrays(want, got, "out")
    assert (difference.kind if difference else None) == status
    if difference:
        assert text in difference.summary()


def test_compare_reports_first_index_count_and_magnitudes():
    difference = compare_arrays(A([[1, 2], [3, 4]], np.int32), A([[1, 2], [5, 9]], np.int32), "output")
    assert difference.index == (1, 0) and difference.count == 2 and difference.max_abs == 5
    assert difference.summary().startswith("output[1, 0]: got 5, contract 3; 2 of 4 differ")


def test_reduce_l2_float_tolerance_is_the_summation_bound():
    case = Case("t", "ReduceL2", {"data": np.ones((4, 100), np.float32), "axes": A([1])},
                full_attributes("ReduceL2", {}))
    ulps = tolerance_ulps(case)
    assert 2 < ulps < 60
    want = np.float32(10.0)
    near = np.nextafter(want, np.float32(20), dtype=np.float32)
    assert compare_arrays(A([want]), A([near]), "o", ulps) is None
    assert tolerance_ulps(Case("t", "ReduceL2", {"data": np.ones(3, np.int32), "axes": A([0])}, {})) == 0
    assert tolerance_ulps(seu_case("t")) == 0


# ------------------------------------------------------------------------------------------------------
# Cells, runner, isolation


def test_cells_of_each_kind():
    cases = [seu_case("ok"), seu_case("neg", indices=(-1, 0)), seu_case("bad", indices=(7,))]
    results = run(cases, backends=(FAKE + "OffByOne", FAKE + "Raises", FAKE + "TorchLike", FAKE + "Missing"),
                  jobs=0)
    assert results.backends == ["contract", "fake-off-by-one", "fake-raises", "torch"]
    assert results.skipped == {"fake-missing": "fake-missing is not installed"}
    status = {(c.id, b): results.cell(i, b) for i, c in enumerate(cases) for b in results.backends}
    assert status[("ok", "fake-off-by-one")].status == MISMATCH
    assert "output[0]" in status[("ok", "fake-off-by-one")].detail
    assert status[("ok", "fake-raises")].status == ERROR
    assert status[("ok", "fake-raises")].detail == "RuntimeError: fake backend failure second line"
    assert status[("neg", "torch")].status == KNOWN
    assert status[("neg", "torch")].divergence == "torch-scatter-negative-indices"
    assert status[("bad", "fake-raises")].status == MATCH  # both reject
    assert status[("bad", "fake-off-by-one")].status == MISMATCH  # accepted an invalid input
    assert results.exit_code == 1


def test_an_error_is_explained_only_by_an_entry_of_a_fitting_kind_or_quoting_it():
    from onnx_bridge.conformance.divergence import _quotes
    reason = "the CPU raises 'Cannot get dims for non static shape' for (0,)"
    assert _quotes(reason, "OpenVINOError: OpenVINO failed to run Unique: Cannot get dims for non static shape")
    assert not _quotes(reason, "ValueError: Except for dimension 1, all dimensions ...")
    assert not _quotes("OpenVINO's spec: 'rounded down'", "rounded")


def _neutral_cases():
    """use_init_val=0 min/max on float16/bfloat16 with a position whose updates are all infinite (and one
    ordinary position), plus a float32 control."""
    def case(case_id, dtype, reduction):
        sign = 1.0 if reduction == "min" else -1.0
        inputs = {"data": A([1, 2, 3], dtype), "indices": A([0, 0, 2]),
                  "updates": A([sign * np.inf, sign * np.inf, 5], dtype), "axis": A(0)}
        return Case(case_id, "ScatterElementsUpdate", inputs,
                    full_attributes("ScatterElementsUpdate", {"reduction": reduction, "use_init_val": 0}), "test")
    return [case("bf16-max", BFLOAT16, "max"), case("f16-min", np.float16, "min"), case("f32-max", np.float32, "max")]


@pytest.mark.parametrize("fake, status, outcome", [
    ("OpenVinoAvx512", MATCH, None),  # the contract's value: nothing to explain
    ("OpenVinoAvx2", KNOWN, "AVX2 without AVX-512"),
    ("OpenVinoOther", MISMATCH, None),  # neither measured outcome: unexplained
])
def test_cpu_dependent_outcomes_are_each_accepted_and_nothing_else(fake, status, outcome):
    """ov-seu-init0-half-neutral-isa: the AVX-512 and the AVX2 outcome both pass, any other value fails."""
    cases = _neutral_cases()
    results = run(cases, backends=(FAKE + fake,), jobs=0)
    for index, case in enumerate(cases[:2]):
        cell = results.cell(index, "openvino")
        assert cell.status == status, (case.id, cell)
        if status == KNOWN:
            assert cell.divergence == "ov-seu-init0-half-neutral-isa" and outcome in cell.reason
    assert results.cell(2, "openvino").status == MATCH  # float32: -FLT_MAX on every CPU, never touched
    assert results.exit_code == (1 if status == MISMATCH else 0)
    if status == KNOWN:
        assert "accepted outcomes" in report.markdown(results) and "accepted outcomes" in report.html_report(results)


def test_crash_in_one_case_is_reported_and_the_run_goes_on():
    cases = [seu_case(f"case{i}") for i in range(5)] + [seu_case("case-boom")] + \
        [seu_case(f"after{i}") for i in range(5)]
    results = run(cases, backends=(FAKE + "Kernel", FAKE + "AbortOnBoom"), jobs=2)
    crashed = [(c.id, cell) for c, cell in results.failures()]
    assert [(i, cell.backend, cell.status) for i, cell in crashed] == [("case-boom", "fake-abort", CRASH)]
    assert "SIGABRT" in crashed[0][1].detail
    assert len(results.cells) == len(cases) * 3
    assert all(cell.status == MATCH for (i, b), cell in results.cells.items() if cases[i].id != "case-boom"
               or b != "fake-abort")


def test_hung_worker_is_killed_after_the_timeout():
    cases = [seu_case("boom"), seu_case("fine")]
    results = run(cases, backends=(FAKE + "HangOnBoom",), jobs=1, timeout=1.5)
    assert results.cell(0, "fake-hang").status == CRASH
    assert "no answer" in results.cell(0, "fake-hang").detail
    assert results.cell(1, "fake-hang").status == MATCH


def test_real_backends_on_a_small_corpus():
    cases = build_corpus("small", cases=16, sources=("seed", "generated"))
    results = run(cases, jobs=2)
    assert len(results.cells) == len(cases) * len(results.backends)
    for case, cells in results.rows():
        assert cells["contract"].status == MATCH, (case.id, cells["contract"].detail)
        if "ort-dialect" in cells:  # the kernels through onnxruntime: always exactly the contract
            assert cells["ort-dialect"].status == MATCH, (case.id, cells["ort-dialect"].detail)
        assert not any(cell.status == CRASH for cell in cells.values())


# ------------------------------------------------------------------------------------------------------
# Reports and CLI


@pytest.fixture(scope="module")
def mixed_results():
    cases = [seu_case("ok"), seu_case("neg", indices=(-1, 0)), seu_case("bad", indices=(7,))]
    results = run(cases, backends=(FAKE + "OffByOne", FAKE + "TorchLike", FAKE + "Missing"), jobs=0)
    results.settings = {"size": "small", "seed": 0}
    return results


def test_terminal_report(mixed_results):
    text = report.terminal(mixed_results)
    assert "ScatterElementsUpdate" in text and "fake-off-by-one" in text
    assert "torch-scatter-negative-indices" in text
    assert "fake-missing: fake-missing is not installed" in text
    assert text.rstrip().endswith("FAIL: 3 unexpected cells (3 mismatches)")


def test_report_files(mixed_results, tmp_path):
    written = report.write(mixed_results, tmp_path / "out")
    assert sorted(p.name for p in written) == ["conformance.html", "conformance.json", "conformance.md"]
    data = json.loads((tmp_path / "out" / "conformance.json").read_text())
    assert data["passed"] is False and data["exit_code"] == 1
    assert data["totals"]["mismatch"] == 3 and data["totals"]["known"] == 1
    assert data["known_divergences"][0]["id"] == "torch-scatter-negative-indices"
    neg = next(c for c in data["cases"] if c["id"] == "neg")
    assert neg["inputs"]["indices"]["values"] == [-1, 0]
    md = (tmp_path / "out" / "conformance.md").read_text()
    for heading in ("## Matrix", "## Unexpected disagreements (3)", "## Known divergences",
                    "`torch-scatter-negative-indices`", "--only 'ok'"):
        assert heading in md
    assert "<table>" in (tmp_path / "out" / "conformance.html").read_text()
    (single,) = report.write(mixed_results, tmp_path / "r.md")
    assert single.read_text() == md
    assert not list(tmp_path.rglob("*.tmp"))


def _cli(capsys, *argv):
    code = cli.main(["conformance", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_exit_codes(capsys, tmp_path):
    code, out, _ = _cli(capsys, "--cases", "6", "--sources", "seed,generated", "--backends", "ort-dialect",
                        "--jobs", "0", "-q", "--report", str(tmp_path / "r.json"))
    assert code == 0, out
    assert "PASS: 30 cells, no disagreement" in out and json.loads((tmp_path / "r.json").read_text())["passed"]
    code, out, _ = _cli(capsys, "--cases", "4", "--sources", "generated", "--backends", FAKE + "OffByOne",
                        "--jobs", "0", "-q")
    assert code == 1 and "FAIL" in out
    code, _, err = _cli(capsys, "--sources", "bogus")
    assert code == 2 and "unknown source bogus" in err
    code, _, err = _cli(capsys, "--only", "nothing-matches-this")
    assert code == 2 and "matches nothing" in err


def test_cli_list_and_models(capsys, tmp_path):
    code, out, _ = _cli(capsys, "--list", "--sources", "seed")
    assert code == 0 and "seed/seu-sum-init1" in out
    path = _write_model(tmp_path)
    code, out, err = _cli(capsys, str(path), "--backends", "ort-dialect", "--jobs", "0")
    assert code == 0 and "model/m" not in out and "running 1 cases" in err
    assert "1 model" in out


def test_seed_cases_reproduce_their_documented_results():
    results = run(seed_cases(), backends=(), jobs=0)
    assert [results.cell(i, "contract").status for i in range(len(results.cases))] == [MATCH] * len(results.cases)
