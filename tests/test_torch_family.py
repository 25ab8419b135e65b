"""The torch scatter family and PyTorch Geometric, exported by onnx_bridge.torch on both exporters.

Case tables below: every op x reduce x include_self x dim x dtype is one output of a shared module, exported
once per exporter (dynamo, TorchScript) and run as exported (dialect custom ops) and lowered (plain
onnxruntime); each case compares one output with torch eager, bit-exactly (values, dtype, shape). Data are
small integers, so float sums, products and means are exact in any accumulation order. PyG layers compare
within rtol 1e-5: their Linear/GEMM dot products accumulate in another order in onnxruntime.
"""
from __future__ import annotations

import functools
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")

import onnx_bridge  # noqa: E402
import onnx_bridge.torch as obt  # noqa: E402
from onnx_bridge.errors import ConversionError  # noqa: E402

pytestmark = [
    pytest.mark.torch,
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

ROOT = Path(__file__).resolve().parents[1]
EXPORTERS = ("dynamo", "torchscript")
BACKENDS = ("dialect", "lowered")
DTYPES = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32, "int64": torch.int64}
FLOATS = ("float32", "float64")

# ------------------------------------------------------------------------------------------- case table
# name -> function(t) of the inputs `t` (a dict of tensors for one dtype) returning the tensor to compare.

INDEX = [4, 0, 2, 0, 4, 4]  # along a dim of size 5: duplicates, and untouched slots 1 and 3
CASES: dict = {}

for _reduce in ("prod", "mean", "amax", "amin"):
    for _self in (True, False):
        for _dim in (0, 1, -1):
            CASES[f"index_reduce-{_reduce}-{'self' if _self else 'noself'}-dim{_dim}"] = (
                lambda t, r=_reduce, s=_self, d=_dim: t[f"self{d}"].index_reduce(d, t["index"], t[f"src{d}"], r,
                                                                                 include_self=s))
for _dim in (0, 1, -1):
    for _alpha in (1, 3):
        CASES[f"index_add-alpha{_alpha}-dim{_dim}"] = (
            lambda t, a=_alpha, d=_dim: t[f"self{d}"].index_add(d, t["index"], t[f"src{d}"], alpha=a))
for _reduce in ("add", "multiply"):
    CASES[f"scatter-{_reduce}"] = lambda t, r=_reduce: t["sself"].scatter(1, t["sindex"], t["ssrc"], reduce=r)
    CASES[f"scatter_value-{_reduce}"] = lambda t, r=_reduce: t["sself"].scatter(1, t["sindex"], 2, reduce=r)
CASES["scatter_add"] = lambda t: t["sself"].scatter_add(1, t["sindex"], t["ssrc"])
CASES["scatter_add-dim0"] = lambda t: t["self0"].scatter_add(0, t["sindex0"], t["src0"])
# index_put: duplicates only with accumulate (torch leaves the winner of duplicate plain writes undefined)
CASES["index_put-accumulate-one"] = lambda t: t["self0"].index_put((t["index"],), t["src0"], accumulate=True)
CASES["index_put-accumulate-two"] = lambda t: t["self0"].index_put((t["index"], t["col"]), t["src0"][:, 0],
                                                                   accumulate=True)
CASES["index_put-accumulate-broadcast"] = lambda t: t["self0"].index_put((t["index"],), t["src0"][0, 0],
                                                                         accumulate=True)
CASES["index_put-accumulate-negative"] = lambda t: t["self0"].index_put((t["index"] - 5,), t["src0"],
                                                                        accumulate=True)
CASES["index_put-one"] = lambda t: t["self0"].index_put((t["unique"],), t["src0"][:3])
CASES["index_put-two-broadcast"] = lambda t: t["self0"].index_put((t["unique"], t["unique"] % 3), t["src0"][0, 0])
CASES["index_put_-inplace"] = lambda t: t["self0"].clone().index_put_((t["index"],), t["src0"], accumulate=True)

SEGMENT_CASES = {}  # float only (torch implements segment_reduce for floating point only)
for _reduce in ("sum", "mean", "max", "min", "prod"):
    for _initial in (None, 2.0):
        for _by in ("lengths", "offsets"):
            SEGMENT_CASES[f"segment_reduce-{_reduce}-{_by}-initial{_initial}"] = (
                lambda t, r=_reduce, i=_initial, b=_by: torch.segment_reduce(t["segdata"], r, initial=i,
                                                                             **{b: t[b]}))


def _inputs(dtype_name: str) -> dict:
    rng = np.random.default_rng(list(DTYPES).index(dtype_name))
    dtype = DTYPES[dtype_name]

    def tensor(low, high, shape):
        return torch.tensor(rng.integers(low, high, shape), dtype=dtype)

    t = {"index": torch.tensor(INDEX), "col": torch.tensor([0, 1, 0, 2, 0, 0]),
         "unique": torch.tensor([3, 0, 4]), "sindex": torch.tensor(rng.integers(0, 5, (4, 6))),
         "sindex0": torch.tensor(rng.integers(0, 5, (6, 4, 3)))}
    for dim, shape in ((0, [5, 4, 3]), (1, [4, 5, 3]), (-1, [4, 3, 5])):  # the indexed dim has size 5
        src_shape = list(shape)
        src_shape[dim] = len(INDEX)
        t[f"self{dim}"] = tensor(-9, 10, shape)
        t[f"src{dim}"] = tensor(-3, 4, src_shape)  # small factors: prod stays exact and in range
    t["sself"], t["ssrc"] = tensor(-9, 10, (4, 5)), tensor(-3, 4, (4, 7))  # src larger than sindex (4, 6)
    if dtype.is_floating_point:
        t["segdata"] = tensor(-3, 4, (6, 2))
        t["lengths"] = torch.tensor([2, 0, 3, 1])
        t["offsets"] = torch.tensor([0, 2, 2, 5, 6])
    return t


def _cases(dtype_name: str) -> dict:
    return {**CASES, **(SEGMENT_CASES if dtype_name in FLOATS else {})}


ALL_CASES = [(case, dtype) for dtype in DTYPES for case in _cases(dtype)]


@functools.cache
def _all_inputs() -> dict:
    return {f"{dtype}_{name}": tensor for dtype in DTYPES for name, tensor in _inputs(dtype).items()}


#: Cases per exported module. onnxscript's optimizer (run by torch.onnx.export) is quadratic in graph size:
#: one module of all ~240 cases takes minutes to export, chunks of 30 take seconds each.
CHUNK = 30
CHUNKS = []  # one dtype per chunk
for _dtype in DTYPES:
    _of_dtype = [(c, d) for c, d in ALL_CASES if d == _dtype]
    CHUNKS += [tuple(_of_dtype[i:i + CHUNK]) for i in range(0, len(_of_dtype), CHUNK)]
WHERE = {case: (number, chunk.index(case)) for number, chunk in enumerate(CHUNKS) for case in chunk}


class Family(torch.nn.Module):
    """The given cases as outputs, in order; inputs are all of _all_inputs() (exporters drop unused ones)."""

    def __init__(self, cases):
        super().__init__()
        self.cases = cases

    def forward(self, *tensors):
        t = dict(zip(_all_inputs(), tensors))
        return tuple(_cases(dtype)[case]({name[len(dtype) + 1:]: v for name, v in t.items()
                                           if name.startswith(dtype + "_")})
                     for case, dtype in self.cases)


@functools.cache
def _exported(chunk: int, exporter: str):
    feeds = _all_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, _ = obt.export(Family(CHUNKS[chunk]).eval(), tuple(feeds.values()), None, lower=False,
                              dynamo=exporter == "dynamo", input_names=list(feeds))
    return model


def _session(model, backend):
    if backend == "dialect" or obt._dialect_nodes(model):
        return onnx_bridge.InferenceSession(model, lower=False)
    import onnxruntime
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@functools.cache
def _outputs(chunk: int, exporter: str, backend: str):
    model = _exported(chunk, exporter)
    if backend == "lowered":
        from converters import convert
        model, _ = convert(model, to="standard")
    session = _session(model, backend)
    wanted = {i.name for i in session.get_inputs()}
    return session.run(None, {k: v.numpy() for k, v in _all_inputs().items() if k in wanted})


@functools.cache
def _expected():
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [o.numpy() for o in Family(ALL_CASES)(*_all_inputs().values())]


#: float64 and int32 repeat float32 and int64 through the same rules: slow (their chunks export only then).
SLOW_DTYPES = ("float64", "int32")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("case,dtype", [pytest.param(c, d, marks=[pytest.mark.slow] if d in SLOW_DTYPES else [])
                                        for c, d in ALL_CASES], ids=[f"{c}-{d}" for c, d in ALL_CASES])
def test_family(case, dtype, exporter, backend):
    position = ALL_CASES.index((case, dtype))
    chunk, offset = WHERE[(case, dtype)]
    got = _outputs(chunk, exporter, backend)[offset]
    np.testing.assert_array_equal(got, _expected()[position], strict=True)


def test_family_data_exercise_the_hard_cases():
    t, want = _inputs("int64"), _expected()
    assert len(set(INDEX)) < len(INDEX) and set(range(5)) - set(INDEX)  # duplicates and untouched slots
    mean = want[ALL_CASES.index(("index_reduce-mean-self-dim0", "int64"))]
    sums = t["self0"].clone().index_add(0, t["index"], t["src0"]).numpy()
    counts = 1 + np.bincount(INDEX, minlength=5)[:, None, None]
    assert np.array_equal(mean, np.floor_divide(sums, counts)) and not np.array_equal(
        mean, np.trunc(sums / counts))  # integer mean floors, and the data tell floor from truncation
    segments = want[ALL_CASES.index(("segment_reduce-mean-lengths-initialNone", "float32"))]
    assert np.isnan(segments[1]).all()  # the empty segment
    assert t["ssrc"].shape[1] > t["sindex"].shape[1]  # src larger than index


# --------------------------------------------------------------------------------------------- refusals

class _SegmentInt(torch.nn.Module):
    def forward(self, data, lengths):
        return torch.segment_reduce(data, "sum", lengths=lengths, axis=1)


def test_segment_reduce_2d_lengths_refused_by_name():
    data, lengths = torch.ones(2, 3), torch.tensor([[1, 2], [3, 0]])
    with pytest.raises(ConversionError, match="segment_reduce.*1-D lengths/offsets along axis 0"):
        obt.export(_SegmentInt(), (data, lengths), None, lower=False, dynamo=False)


class _OutWrite(torch.nn.Module):
    def forward(self, x):
        out = x.new_zeros(x.size(0) + 1)
        torch.cumsum(x, 0, out=out.narrow(0, 1, x.size(0)))
        return out


def test_torchscript_refuses_writes_it_would_lose():
    """torch's TorchScript exporter drops out=/narrow() writes (stock export is silently wrong)."""
    with pytest.raises(ConversionError, match="aten::cumsum.*out=.*dynamo=True"):
        obt.export(_OutWrite(), (torch.tensor([1.0, 2, 3]),), None, lower=False, dynamo=False)
    model, _ = obt.export(_OutWrite(), (torch.tensor([1.0, 2, 3]),), None, dynamo=True)
    got = onnx_bridge.InferenceSession(model).run(None, {model.graph.input[0].name: np.array([1, 2, 3], "f")})
    np.testing.assert_array_equal(got[0], np.array([0, 1, 3, 6], "f"))


# ---------------------------------------------------------------------------------------- PyTorch Geometric

pyg = pytest.importorskip("torch_geometric")
FEATURES = 4


class Zoo(torch.nn.Module):
    """PyG layers and aggregations the TorchScript exporter can trace: one module, one export per exporter."""

    def __init__(self):
        super().__init__()
        nn, aggr = pyg.nn, pyg.nn.aggr
        torch.manual_seed(0)
        self.convs = torch.nn.ModuleList([
            nn.SAGEConv(FEATURES, 3), nn.SAGEConv(FEATURES, 3, aggr="max"), nn.GraphConv(FEATURES, 3, aggr="mean"),
            nn.GCNConv(FEATURES, 3), nn.GINConv(torch.nn.Linear(FEATURES, 3)), nn.GATConv(FEATURES, 3, heads=2),
            nn.GATv2Conv(FEATURES, 3, heads=2), nn.TransformerConv(FEATURES, 3, heads=2)])
        self.aggrs = torch.nn.ModuleList([
            aggr.MultiAggregation(["mean", "max", "min", "std", "var", "sum", "mul"]),
            aggr.SoftmaxAggregation(learn=True), aggr.PowerMeanAggregation(learn=True)])

    def forward(self, x, edge_index, batch):
        messages, target = x[edge_index[0]], edge_index[1]
        return (*[conv(x, edge_index) for conv in self.convs],
                *[a(messages, target, dim_size=x.size(0)) for a in self.aggrs],
                pyg.utils.softmax(messages, target, num_nodes=x.size(0)),
                pyg.nn.global_mean_pool(x, batch, 3), pyg.nn.global_max_pool(x, batch, 3),
                pyg.nn.global_add_pool(x, batch, 3))


class DynamoZoo(torch.nn.Module):
    """What torch's TorchScript tracer cannot take (EdgeConv, PNAConv: torch.full of a tensor) or the
    TorchScript exporter would get wrong (to_dense_batch: writes into narrow() views, refused)."""

    def __init__(self):
        super().__init__()
        nn = pyg.nn
        torch.manual_seed(0)
        self.edge = nn.EdgeConv(torch.nn.Linear(2 * FEATURES, 3), aggr="max")
        self.pna = nn.PNAConv(FEATURES, 3, aggregators=["mean", "min", "max", "std"],
                              scalers=["identity", "amplification", "attenuation"], deg=torch.tensor([1, 2, 3, 2]))

    def forward(self, x, edge_index, batch):
        dense, mask = pyg.utils.to_dense_batch(x, batch, batch_size=3, max_num_nodes=6)
        return self.edge(x, edge_index), self.pna(x, edge_index), dense, mask


def _graph(nodes, edges, seed):
    g = torch.Generator().manual_seed(seed)
    # targets from the first half only: nodes without messages; all-negative messages for max aggregation
    edge_index = torch.stack([torch.randint(0, nodes, (edges,), generator=g),
                              torch.randint(0, nodes // 2 + 1, (edges,), generator=g)])
    x = torch.randint(-4, 5, (nodes, FEATURES), generator=g).float()
    batch = torch.sort(torch.randint(0, 3, (nodes,), generator=g)).values
    return x, edge_index, batch


PYG_MODULES = {"zoo": Zoo, "dynamo_zoo": DynamoZoo}


@functools.cache
def _pyg_exported(name: str, exporter: str):
    nodes, edges = torch.export.Dim("nodes", min=2), torch.export.Dim("edges", min=2)
    dynamic = ({"dynamic_shapes": {"x": {0: nodes}, "edge_index": {1: edges}, "batch": {0: nodes}}}
               if exporter == "dynamo" else
               {"dynamic_axes": {"x": {0: "nodes"}, "edge_index": {1: "edges"}, "batch": {0: "nodes"}}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, _ = obt.export(PYG_MODULES[name]().eval(), _graph(7, 20, 0), None, lower=False,
                              dynamo=exporter == "dynamo", input_names=["x", "edge_index", "batch"], **dynamic)
    return model


PYG_CASES = [("zoo", e, b) for e in EXPORTERS for b in BACKENDS] + [("dynamo_zoo", "dynamo", b) for b in BACKENDS]


@pytest.mark.parametrize("name,exporter,backend", PYG_CASES, ids=["-".join(c) for c in PYG_CASES])
def test_pyg_layers_dynamic_graph(name, exporter, backend):
    """Exported at 7 nodes / 20 edges, run at 11 nodes / 40 edges and at 5 / 9."""
    model = _pyg_exported(name, exporter)
    if backend == "lowered":
        from converters import convert
        model, _ = convert(model, to="standard")
    session = _session(model, backend)
    module = PYG_MODULES[name]().eval()
    for nodes, edges, seed in ((11, 40, 1), (5, 9, 2)):
        x, edge_index, batch = _graph(nodes, edges, seed)
        feeds = {"x": x.numpy(), "edge_index": edge_index.numpy(), "batch": batch.numpy()}
        wanted = {i.name for i in session.get_inputs()}
        got = session.run(None, {k: v for k, v in feeds.items() if k in wanted})
        with torch.no_grad():
            want = [t.numpy() for t in module(x, edge_index, batch)]
        assert len(got) == len(want)
        for position, (g, w) in enumerate(zip(got, want)):
            assert g.shape == w.shape and g.dtype == w.dtype, position
            # GEMMs and exp/softmax accumulate in another order in onnxruntime: not bit-exact.
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"output {position}")


def test_pyg_to_dense_batch_refused_on_torchscript():
    with pytest.raises(ConversionError, match="narrow|out=.*dynamo=True"):
        obt.export(DynamoZoo().eval(), _graph(7, 20, 0), None, dynamo=False)


def test_gallery_pyg_gnn_matches_torch():
    """models/pyg_gnn.onnx (models/generate.py pyg_gnn) runs at another graph size and gives torch's output;
    regenerated models match the module the gallery builds."""
    models = ROOT / "models"
    feeds = dict(np.load(models / "pyg_gnn_inputs.npz"))
    got = onnx_bridge.InferenceSession(str(models / "pyg_gnn.onnx")).run(None, feeds)[0]
    recorded = np.load(models / "pyg_gnn_torch.npz")["node_embeddings"]
    np.testing.assert_allclose(got, recorded, rtol=1e-5, atol=1e-6)  # GEMM accumulation order
    import importlib.util
    spec = importlib.util.spec_from_file_location("gallery_generate", models / "generate.py")
    generate = sys.modules.setdefault("gallery_generate", importlib.util.module_from_spec(spec))
    spec.loader.exec_module(generate)
    module, _, _ = generate.build_pyg_gnn()
    with torch.no_grad():
        np.testing.assert_array_equal(module(*(torch.from_numpy(v) for v in feeds.values())).numpy(), recorded)
