"""onnx_bridge.torch: torch modules exported through the dialect give torch's own outputs.

Each module below is exported once per exporter (dynamo, TorchScript) and shared by many cases: every
scatter_reduce reduce x include_self x dtype, index_copy, torch.unique, linalg.vector_norm, and a GNN layer.
Every exported model runs through the dialect custom ops (onnx_bridge.InferenceSession, lower=False) and,
lowered by the converter, through plain onnxruntime. Integers and the scatter/unique outputs compare
bit-exactly; data are small integer values, so float sums, means and norms are exact in every order.
"""
from __future__ import annotations

import functools
import importlib
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")

import onnx_bridge  # noqa: E402
import onnx_bridge.torch as obt  # noqa: E402
from onnx_bridge.errors import BridgeError  # noqa: E402

pytestmark = [
    pytest.mark.torch,
    # dynamo=False is asked for on purpose; torch's own internals warn about their own deprecations.
    pytest.mark.filterwarnings("ignore:You are using the legacy TorchScript-based ONNX export"),
    pytest.mark.filterwarnings("ignore:The feature will be removed:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:`isinstance\\(treespec, LeafSpec\\)` is deprecated:FutureWarning"),
]

ROOT = Path(__file__).resolve().parents[1]
EXPORTERS = ("dynamo", "torchscript")
BACKENDS = ("dialect", "lowered")
DTYPES = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32, "int64": torch.int64}
COMBOS = [(reduce, include_self) for reduce in obt.REDUCTIONS for include_self in (True, False)]


def _converter() -> bool:
    try:
        return hasattr(importlib.import_module("converters"), "convert")
    except ImportError:
        return False


CONVERTER_MISSING = "the converter (converters.convert) is not importable"
needs_converter = pytest.mark.skipif(not _converter(), reason=CONVERTER_MISSING)


# ---------------------------------------------------------------------------------------------- modules

class ScatterReduceAll(torch.nn.Module):
    """Every reduce x include_self on one (data, src) pair per dtype, along dim 1 and along dim -2."""

    def forward(self, index1, index0, f32, f32_src, f64, f64_src, i32, i32_src, i64, i64_src):
        outputs = []
        for data, src in ((f32, f32_src), (f64, f64_src), (i32, i32_src), (i64, i64_src)):
            for reduce, include_self in COMBOS:
                outputs.append(data.scatter_reduce(1, index1, src, reduce, include_self=include_self))
                outputs.append(data.scatter_reduce(-2, index0, src, reduce, include_self=include_self))
        return tuple(outputs)


def _scatter_inputs():
    rng = np.random.default_rng(8)
    # index1: 3 rows (of data's 4) x 9 columns into 5: duplicates, untouched slots; src is larger
    # than index (torch reads its leading block). index0 along dim 0: 7 rows into 4.
    index1 = rng.integers(0, 5, (3, 9))
    index0 = rng.integers(0, 4, (7, 5))
    # Integer mean must floor: slot (0, 0) gets self -10 and updates -3, -4 only -> -17/3 -> -6 (trunc: -5).
    index1[0] = [0, 0, 1, 2, 3, 1, 2, 3, 4]
    inputs = {"index1": torch.tensor(index1), "index0": torch.tensor(index0)}
    for name, dtype in DTYPES.items():
        data = rng.integers(-9, 10, (4, 5))
        src = rng.integers(-3, 4, (7, 10))  # small factors: prod stays exact and in range
        data[0, 0], src[0, 0], src[0, 1] = -10, -3, -4
        inputs[name] = torch.tensor(data, dtype=dtype)
        inputs[name + "_src"] = torch.tensor(src, dtype=dtype)
    return inputs


class Misc(torch.nn.Module):
    """index_copy, torch.unique in its forms, linalg.vector_norm in its forms."""

    def forward(self, x, idx, src, i0, row, y, m, z, inf_index, inf_src):
        scalar = z[1, 2]
        return (
            # include_self=False max/min of updates that are all -inf/+inf: torch gives the infinity.
            z[0].scatter_reduce(0, inf_index, inf_src, "amax", include_self=False),
            z[0].scatter_reduce(0, inf_index, inf_src, "amin", include_self=False),
            x.index_copy(1, idx, src),
            x.index_copy(0, i0, row),  # 0-D index
            scalar.index_copy(0, i0 - 2, z[0, 0]),  # 0-D everything
            scalar.scatter_reduce(0, i0 - 2, z[2, 3], "mean"),
            *torch.ops.aten._unique2(y, True, False, True),  # inverse not asked for: empty in torch
            *torch.ops.aten._unique(y, False, True),
            *torch.ops.aten.unique_dim(m, 1, True, False, False),  # torch returns them all anyway
            torch.unique(y),
            *torch.unique(y, sorted=False, return_inverse=True, return_counts=True),  # torch sorts anyway
            *torch.unique(m, dim=0, return_inverse=True),
            *torch.unique(m, dim=-1, return_counts=True),
            torch.linalg.vector_norm(z),
            torch.linalg.vector_norm(z, dim=1, keepdim=True),
            torch.linalg.vector_norm(z, dim=(-1, 0)),
            torch.linalg.vector_norm(z, dtype=torch.float64),
            torch.linalg.vector_norm(z, ord=1, dim=0),  # not ord 2: torch's own translation
            torch.linalg.vector_norm(scalar),  # 0-D input
        )


MISC_OUTPUTS = [  # names of Misc's outputs, in order
    "amax_noself_infinities", "amin_noself_infinities",
    "index_copy", "index_copy_0d", "index_copy_scalar", "scatter_reduce_scalar",
    "unique2_values", "unique2_empty_inverse", "unique2_counts", "_unique_values", "_unique_inverse",
    "unique_dim_values", "unique_dim_inverse_unasked", "unique_dim_counts_unasked",
    "unique", "unique_unsorted", "unique_inverse", "unique_counts",
    "unique_dim0", "unique_dim0_inverse", "unique_dim_last", "unique_dim_last_counts",
    "norm_all", "norm_dim1_keep", "norm_dims", "norm_f64", "norm_ord1", "norm_0d"]


def _misc_inputs():
    rng = np.random.default_rng(3)
    return {
        "x": torch.tensor(rng.integers(-9, 10, (4, 6)), dtype=torch.float32),
        "idx": torch.tensor([5, 0, 2]),
        "src": torch.tensor(rng.integers(-9, 10, (4, 3)), dtype=torch.float32),
        "i0": torch.tensor(2),
        "row": torch.tensor(rng.integers(-9, 10, (1, 6)), dtype=torch.float32),
        "y": torch.tensor([[4, 1, 7, 1], [7, 7, -2, 4]]),
        "m": torch.tensor([[2, 1, 2], [0, 5, 0], [2, 1, 2], [-1, 3, -1], [0, 5, 0]], dtype=torch.int32),
        "z": torch.tensor(rng.integers(-6, 7, (3, 4)), dtype=torch.float32),
        "inf_index": torch.tensor([0, 0, 1, 1, 2, 2]),
        "inf_src": torch.tensor([-np.inf, -np.inf, np.inf, np.inf, np.nan, 1.0]),
    }


class GNNLayer(torch.nn.Module):
    """Mean-aggregation message passing: gather neighbours, scatter mean onto targets, linear."""

    def __init__(self, features=4, out=3):
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(2 * features, out)

    def forward(self, x, edge_index):
        messages = x.index_select(0, edge_index[0])
        target = edge_index[1].unsqueeze(-1).expand_as(messages)
        mean = torch.zeros_like(x).scatter_reduce(0, target, messages, "mean", include_self=False)
        return self.linear(torch.cat([x, mean], dim=-1)), mean


def _gnn_inputs(nodes, edges, seed):
    rng = np.random.default_rng(seed)
    # Targets drawn from the first half only: duplicates, and nodes that receive nothing (keep 0).
    edge_index = np.stack([rng.integers(0, nodes, edges), rng.integers(0, nodes // 2 + 1, edges)])
    return {"x": torch.tensor(rng.integers(-8, 9, (nodes, 4)), dtype=torch.float32),
            "edge_index": torch.tensor(edge_index)}


# ---------------------------------------------------------------------------------------------- export

def _dynamic(exporter):
    if exporter == "dynamo":
        nodes, edges = torch.export.Dim("nodes", min=2), torch.export.Dim("edges", min=2)
        return {"dynamic_shapes": {"x": {0: nodes}, "edge_index": {1: edges}}}
    return {"dynamic_axes": {"x": {0: "nodes"}, "edge_index": {1: "edges"}}}


MODULES = {  # name -> (module factory, example inputs, extra export arguments per exporter)
    "scatter": (ScatterReduceAll, _scatter_inputs, lambda exporter: {}),
    "misc": (Misc, _misc_inputs, lambda exporter: {}),
    "gnn": (GNNLayer, lambda: _gnn_inputs(7, 20, 0), _dynamic),
}


@functools.cache
def exported(name: str, exporter: str):
    factory, inputs, extra = MODULES[name]
    feeds = inputs()
    model, report = obt.export(factory().eval(), tuple(feeds.values()), None, lower=False,
                               dynamo=exporter == "dynamo", input_names=list(feeds), **extra(exporter))
    return model, report


@functools.cache
def lowered(name: str, exporter: str):
    from converters import convert
    model, _ = convert(exported(name, exporter)[0], to="standard")
    return model


def _run(model, feeds, backend):
    if backend == "dialect" or obt._dialect_nodes(model):
        # A lowered model with nodes the converter kept (see test_lowering_keeps_only_int64_mean): its
        # standard nodes still run as onnxruntime kernels, the kept ones through the custom ops.
        session = onnx_bridge.InferenceSession(model, lower=False)
    else:
        import onnxruntime
        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    wanted = {i.name for i in session.get_inputs()}
    return session.run(None, {k: v.numpy() for k, v in feeds.items() if k in wanted})


@functools.cache
def outputs(name: str, exporter: str, backend: str):
    if backend == "lowered" and not _converter():
        pytest.skip(CONVERTER_MISSING)
    model = exported(name, exporter)[0] if backend == "dialect" else lowered(name, exporter)
    return _run(model, MODULES[name][1](), backend)


@functools.cache
def expected(name: str):
    factory, inputs, _ = MODULES[name]
    with torch.no_grad():
        return [t.numpy() for t in factory().eval()(*inputs().values())]


def assert_same(got, want):
    np.testing.assert_array_equal(got, want, strict=True)  # values, dtype and shape


# ---------------------------------------------------------------------------------------------- tests

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduce,include_self", COMBOS, ids=[f"{r}-{'self' if s else 'noself'}"
                                                             for r, s in COMBOS])
def test_scatter_reduce(reduce, include_self, dtype, exporter, backend):
    position = 2 * (list(DTYPES).index(dtype) * len(COMBOS) + COMBOS.index((reduce, include_self)))
    got = outputs("scatter", exporter, backend)
    want = expected("scatter")
    for dim, offset in (("1", 0), ("-2", 1)):
        assert_same(got[position + offset], want[position + offset])


def test_scatter_data_exercise_the_hard_cases():
    """The shared data really contain what the cases above claim to check."""
    feeds, want = _scatter_inputs(), expected("scatter")
    mean = want[2 * (list(DTYPES).index("int64") * len(COMBOS) + COMBOS.index(("mean", True)))]
    assert mean[0, 0] == -6  # floor(-17 / 3); truncation would give -5
    for index in (feeds["index1"].numpy(), feeds["index0"].numpy().T):
        assert all(len(set(row)) < len(row) for row in index)  # duplicates everywhere
    assert feeds["index1"].shape[0] < feeds["int64"].shape[0]  # rows no update reaches
    assert feeds["int64_src"].shape[1] > feeds["index1"].shape[1]  # src larger than index


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("output", MISC_OUTPUTS)
def test_index_copy_unique_vector_norm(output, exporter, backend):
    position = MISC_OUTPUTS.index(output)
    assert_same(outputs("misc", exporter, backend)[position], expected("misc")[position])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("exporter", EXPORTERS)
def test_gnn_layer_dynamic_shapes(exporter, backend):
    """Exported at 7 nodes / 20 edges, run at 11 nodes / 40 edges."""
    if backend == "lowered" and not _converter():
        pytest.skip(CONVERTER_MISSING)
    model = exported("gnn", exporter)[0] if backend == "dialect" else lowered("gnn", exporter)
    feeds = _gnn_inputs(11, 40, 1)
    got_out, got_mean = _run(model, feeds, backend)
    with torch.no_grad():
        want_out, want_mean = (t.numpy() for t in GNNLayer().eval()(*feeds.values()))
    assert_same(got_mean, want_mean)  # the scatter mean itself is exact
    # The Linear's dot products accumulate in a different order in torch and onnxruntime (GEMM).
    np.testing.assert_allclose(got_out, want_out, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", MODULES)
def test_exported_model_is_valid_dialect(name, exporter):
    model, report = exported(name, exporter)
    onnx_bridge.register_schemas()
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == onnx_bridge.IR_VERSION
    assert {o.domain: o.version for o in model.opset_import}[onnx_bridge.DOMAIN] == onnx_bridge.DIALECT_OPSET
    assert report.exporter == exporter and report.exported == obt._dialect_nodes(model)
    assert "ScatterElementsUpdate" in report.exported or name == "misc"
    assert not report.standard and "InferenceSession" in str(report)


@needs_converter
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", MODULES)
def test_lowering_keeps_only_int64_mean(name, exporter):
    """Everything lowers to standard ONNX except int64 mean, whose exact sum can exceed 64 bits."""
    model = lowered(name, exporter)
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type.elem_type for v in (*inferred.graph.input, *inferred.graph.value_info)}
    kept = [(n.op_type, {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}.get("reduction"),
             types.get(n.input[0])) for n in model.graph.node if n.domain == onnx_bridge.DOMAIN]
    expected_kept = 4 if name == "scatter" else 0  # mean x include_self x two dims, int64 only
    assert kept == [("ScatterElementsUpdate", b"mean", onnx.TensorProto.INT64)] * expected_kept


def test_translation_table_covers_the_ops():
    aten = torch.ops.aten
    assert set(obt.translation_table()) == {
        aten.scatter_reduce.two, aten.index_copy.default, aten._unique2.default, aten._unique.default,
        aten.unique_dim.default, aten.linalg_vector_norm.default, aten.index_reduce.default,
        aten.index_add.default, aten.scatter.reduce, aten.scatter.value_reduce, aten.scatter_add.default,
        aten.segment_reduce.default}
    # The TorchScript path also needs index_put (dynamo's own translation is right; TorchScript's is not).
    names = {f"aten::{o._schema.name.split('::')[1]}" for o in obt.translation_table()} | {"aten::index_put"}
    assert set(obt._symbolics()) == set(obt._SYMBOLIC_NAMES) == names


def test_register_symbolics_covers_every_opset_and_undoes():
    versions = obt.register_symbolics(16)
    assert versions[0] == 16 and versions[-1] >= 20
    with pytest.raises(BridgeError, match="opset 13 is too old"):
        obt.register_symbolics(13)
    obt.unregister_symbolics()
    try:  # torch's own symbolic is back: it refuses mean
        with pytest.raises(Exception, match="mean"):
            torch.onnx.export(_TinyMean(), (torch.zeros(4), torch.tensor([0, 0])), io.BytesIO(), dynamo=False)
    finally:
        obt.register_symbolics()


class _TinyMean(torch.nn.Module):
    def forward(self, data, index):
        return data.scatter_reduce(0, index, torch.ones(2), "mean")


def test_export_writes_atomically_and_refuses_old_opsets(tmp_path):
    target = tmp_path / "sub" / "tiny.onnx"
    args = (torch.tensor([1.0, 2, 3, 4]), torch.tensor([0, 0]))
    model, report = obt.export(_TinyMean(), args, target, lower=False, dynamo=False)
    assert target.is_file() and report.path == target and [p.name for p in target.parent.iterdir()] == [
        "tiny.onnx"]
    assert onnx.load(str(target)) == model
    got = onnx_bridge.InferenceSession(model, lower=False).run(None, {
        i.name: a.numpy() for i, a in zip(model.graph.input, args)})[0]
    assert_same(got, _TinyMean()(*args).numpy())
    with pytest.raises(BridgeError, match="opset >= 14"):
        obt.export(_TinyMean(), args, None, lower=False, dynamo=False, opset_version=13)


class _Unexportable(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.eigvals(x).real


def test_export_failure_names_the_cause():
    with pytest.raises(onnx_bridge.ConversionError, match=r"\(torchscript\) failed: .*linalg_eigvals"):
        obt.export(_Unexportable(), (torch.eye(3),), None, lower=False, dynamo=False)


@needs_converter
def test_export_lowered_end_to_end(tmp_path):
    args = (torch.tensor([1.0, 2, 3, 4]), torch.tensor([0, 0]))
    model, report = obt.export(_TinyMean(), args, tmp_path / "m.onnx", lower=True, dynamo=False)
    assert report.exported == {"ScatterElementsUpdate": 1} and report.standard and report.conversion
    assert report.conversion.summary() in str(report) and "runs in plain onnxruntime" in str(report)
    feeds = {i.name: a for i, a in zip(model.graph.input, args)}
    assert_same(_run(model, feeds, "lowered")[0], _TinyMean()(*args).numpy())


@needs_converter
def test_example_runs(tmp_path):
    # PYTHONPATH: run against this checkout, as `make test` does, whatever the venv's install points at.
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "torch_scatter_mean.py"),
                             str(tmp_path / "gnn.onnx")], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert "matches torch" in result.stdout and (tmp_path / "gnn.onnx").is_file()


def test_the_units_name_their_torch_modules():
    """onnx_bridge.torch iterates over the units: each unit's `torch` piece names a module of onnx_bridge.torch
    with its translations, symbolics and their names; the generic module names no op."""
    import importlib

    import custom_ops
    from custom_ops.unit import present
    pointers = [unit.torch for unit in custom_ops.units() if present(unit.torch)]
    assert pointers and all(p.startswith("onnx_bridge.torch.") for p in pointers)
    for pointer in pointers:
        module = importlib.import_module(pointer)
        assert set(module.symbolics()) == set(module.SYMBOLIC_NAMES) and module.translations(torch.ops.aten)
