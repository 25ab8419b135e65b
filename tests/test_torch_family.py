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


class Family(torch.nn.Module):
    """Every case of every dtype as one output (ALL_CASES order): one export per exporter for all of them."""

    def forward(self, *tensors):
        t = dict(zip(_all_inputs(), tensors))
        return tuple(_cases(dtype)[case]({name[len(dtype) + 1:]: v for name, v in t.items()
                                           if name.startswith(dtype + "_")})
                     for case, dtype in ALL_CASES)


@functools.cache
def _exported(exporter: str):
    feeds = _all_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, _ = obt.export(Family().eval(), tuple(feeds.values()), None, lower=False,
                              dynamo=exporter == "dynamo", input_names=list(feeds))
    return model


def _session(model, backend):
    if backend == "dialect" or obt._dialect_nodes(model):
        return onnx_bridge.InferenceSession(model, lower=False)
    import onnxruntime
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@functools.cache
def _outputs(exporter: str, backend: str):
    model = _exported(exporter)
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
        return [o.numpy() for o in Family()(*_all_inputs().values())]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("case,dtype", ALL_CASES, ids=[f"{c}-{d}" for c, d in ALL_CASES])
def test_family(case, dtype, exporter, backend):
    position = ALL_CASES.index((case, dtype))
    np.testing.assert_array_equal(_outputs(exporter, backend)[position], _expected()[position], strict=True)


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
