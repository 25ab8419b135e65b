"""The benchmark runs end to end on tiny shapes (no timing assertions: times on tiny shapes mean nothing)."""
import json
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import report
from benchmarks.cases import all_cases
from benchmarks.check import compare
from benchmarks.options import COLUMN_KEYS

EXACT_COLUMNS = ("bridge_pyop", "stock", "kernel")  # our kernel behind every one of them


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    done = subprocess.run([sys.executable, "-m", "onnx_bridge.cli", "bench", "--tiny", "--json",
                           str(out / "bench.json"), "--markdown", str(out / "bench.md")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "bench.json").read_text()), (out / "bench.md").read_text(), done.stdout


def test_every_case_has_every_column_timed_or_explained(tiny_run):
    outcome, _, _ = tiny_run
    assert outcome["mode"] == "tiny"
    assert [c["id"] for c in outcome["cases"]] == [c.id for c in all_cases("tiny")]
    for case in outcome["cases"]:
        assert "error" not in case, case
        assert set(case["cells"]) == set(COLUMN_KEYS), case["id"]
        for key, cell in case["cells"].items():
            assert "error" not in cell, (case["id"], key, cell)
            assert "median" in cell or cell["skipped"], (case["id"], key)
            if "median" in cell:
                assert cell["median"] > 0 and cell["times"], (case["id"], key)
        for key in EXACT_COLUMNS + ("bridge",):
            cell = case["cells"][key]
            if "median" in cell:
                expected = ("exact",) if key in EXACT_COLUMNS else ("exact", "rounding")
                assert cell["check"].startswith(expected), (case["id"], key, cell["check"])
        assert "median" in case["cells"]["bridge"] and "median" in case["cells"]["kernel"]


def test_floor_memory_and_targets_are_reported(tiny_run):
    outcome, markdown, stdout = tiny_run
    assert any("PyOp doing nothing" in name for name in outcome["floor"]["cells"])
    for case in outcome["cases"]:
        for key in ("bridge", "bridge_pyop"):
            assert case["memory"][key]["peak"] >= 0, (case["id"], key)
    names = {row["target"] for row in outcome["targets"]}
    assert any("stock marshaling" in name for name in names)
    assert any("peak memory" in name for name in names)
    for row in outcome["targets"]:
        assert row["met"] in (True, False) or row["why_unmeasured"], row
    for heading in ("### ScatterElementsUpdate", "### ScatterUpdate", "### ReduceL2", "### Unique",
                    "### Floor of the PyOp path", "### Peak memory", "### Targets"):
        assert heading in markdown
    assert markdown in stdout


def test_markdown_replaces_only_the_marked_part(tmp_path):
    page = tmp_path / "performance.md"
    intro = f"# Title\nthe markers `{report.BEGIN}` and `{report.END}` quoted in text stay\n"
    page.write_text(f"{intro}{report.BEGIN}\nold table\n{report.END}\nanalysis\n")
    report.write_markdown(page, "new table\n")
    assert page.read_text() == f"{intro}{report.BEGIN}\nnew table\n{report.END}\nanalysis\n"
    fresh = tmp_path / "fresh.md"
    report.write_markdown(fresh, "table\n")
    assert fresh.read_text() == "table\n"


@pytest.mark.parametrize("got, verdict", [
    ([np.array([1.0, 2.0], np.float32)], "exact"),
    ([np.array([1.0, np.nextafter(np.float32(2), np.float32(3))], np.float32)], "rounding"),
    ([np.array([1.0, 2.5], np.float32)], "output 0: 1 of 2 elements differ"),
    ([np.array([1.0], np.float32)], "output 0: shape (1,), expected (2,)"),
    ([None], "exact"),  # an output the column does not give is not compared
])
def test_compare(got, verdict):
    assert compare(got, [np.array([1.0, 2.0], np.float32)]).startswith(verdict)


@pytest.mark.parametrize("flags, summary", [
    ({"sse4_2", "avx2", "fma"}, "AVX2, no AVX-512, no VNNI"),
    ({"avx2", "avx_vnni"}, "AVX2, AVX-VNNI, no AVX-512"),
    ({"avx2", "avx512f", "avx512_vnni", "amx_int8"}, "AVX2, AVX-512, AVX-512 VNNI, AMX-INT8"),
    (set(), "no AVX-512, no VNNI"),
])
def test_machine_line_names_the_vector_extensions_int8_results_depend_on(flags, summary):
    from benchmarks.run import vector_extensions

    assert vector_extensions(flags) == summary
