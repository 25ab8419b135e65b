"""The import's fast helpers against simple reference implementations, on a data-driven case table."""
from __future__ import annotations

import numpy as np
import pytest

from converters.openvino_ir.rules.quantization import _per_axis


def _per_axis_reference(full: np.ndarray):
    """Every axis compared element by element on the full array."""
    varying = [d for d in range(full.ndim) if full.shape[d] > 1 and not np.all(full == full.take([0], axis=d))]
    if len(varying) > 1:
        return None
    if not varying:
        return full.reshape(-1)[:1], None
    index = [0] * full.ndim
    index[varying[0]] = slice(None)
    return full[tuple(index)], varying[0]


def _broadcast(scale_shape, shape, transpose=None, reshape=None, values="random", dtype=np.float32):
    def make(seed):
        rng = np.random.default_rng(seed)
        if values == "random":
            scale = rng.random(scale_shape).astype(dtype)
        elif values == "constant":
            scale = np.full(scale_shape, 0.5, dtype)
        else:  # a NaN among random values
            scale = rng.random(scale_shape).astype(dtype)
            scale.reshape(-1)[0] = np.nan
        full = np.broadcast_to(scale, shape)
        if transpose is not None:
            full = full.transpose(transpose)
        if reshape is not None:
            full = full.reshape(reshape)
        return full
    return make


# (id, builder of the array _per_axis sees)
CASES = [
    ("per_output_channel", _broadcast((8, 1, 1, 1), (8, 4, 3, 3))),
    ("per_tensor", _broadcast((), (8, 4, 3, 3))),
    ("per_tensor_same_values", _broadcast((8, 1, 1, 1), (8, 4, 3, 3), values="constant")),
    ("per_column_matmul", _broadcast((1, 6), (5, 6))),
    ("per_row_transposed", _broadcast((5, 1), (5, 6), transpose=(1, 0))),
    ("grouped_reshaped", _broadcast((2, 3, 1, 1, 1), (2, 3, 1, 3, 3), reshape=(6, 1, 3, 3))),
    ("reshape_merging_varying", _broadcast((4, 1), (4, 6), reshape=(2, 12))),
    ("two_axes", _broadcast((4, 3, 1), (4, 3, 5))),
    ("full_array_not_a_view", lambda seed: np.random.default_rng(seed).random((3, 4)).astype(np.float32)),
    ("one_row_of_a_full_array", lambda seed: np.repeat(np.random.default_rng(seed).random((3, 1)), 4, 1)),
    ("nan_per_channel", _broadcast((8, 1, 1, 1), (8, 4, 3, 3), values="nan")),
    ("nan_per_tensor", _broadcast((1, 1), (4, 3), values="nan")),
    ("integer_zero_point", lambda seed: np.broadcast_to(np.arange(5, dtype=np.int8).reshape(5, 1), (5, 7))),
    ("integer_zeros", lambda seed: np.broadcast_to(np.zeros((), np.uint8), (3, 4, 2))),
    ("empty_axis", _broadcast((3, 1), (3, 0))),
    ("scalar", lambda seed: np.float32(2.0) + np.zeros((), np.float32)),
]


@pytest.mark.parametrize("case_id", [c[0] for c in CASES])
def test_per_axis_matches_reference(case_id):
    build = dict(CASES)[case_id]
    for seed in range(3):
        full = build(seed)
        got, want = _per_axis(full), _per_axis_reference(full)
        assert (got is None) == (want is None), case_id
        if want is not None:
            assert got[1] == want[1]
            assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
            np.testing.assert_array_equal(got[0], want[0])


def test_graph_add_releases_the_source_of_a_copied_weight():
    from onnx import TensorProto

    from converters.openvino_ir.rules.quantization import GraphIndex, _Graph

    released = []
    graph = _Graph(GraphIndex([], []), set(), released.append)
    base = np.arange(24, dtype=np.int8).reshape(4, 6)
    graph.add("kept", base)  # already contiguous: no copy, nothing released
    graph.add("scale", np.broadcast_to(np.float32(1), (4, 6)))  # a copy of a broadcast scalar: not a weight
    graph.add("transposed", base.T)
    assert len(released) == 1 and np.shares_memory(released[0], base) and released[0].nbytes == base.nbytes
    np.testing.assert_array_equal(graph.values["transposed"], base.T)
    assert graph.values["transposed"].flags.c_contiguous
    # each added once, as (name, ONNX type, the array the lookups hold)
    int8, f32 = TensorProto.INT8, TensorProto.FLOAT
    added = [(name, code) for name, code, _ in graph.initializers]
    assert added == [("kept", int8), ("scale", f32), ("transposed", int8)]
    assert all(array is graph.values[name] for name, _, array in graph.initializers)


def test_written_weights_release_mapped_pages_and_read_back(tmp_path, monkeypatch):
    """convert's one pass: a deferred constant (a view of OpenVINO's memory-mapped .bin) has its pages dropped
    once written; the file and a later read of the array (faulted in again) are unchanged."""
    import onnx
    ov = pytest.importorskip("openvino")
    import openvino.opset13 as op

    from converters import model_io
    from converters.openvino_ir import _importer, _types, import_ir

    monkeypatch.setattr(_importer, "RELEASE_WRITTEN", True)

    rng = np.random.default_rng(0)
    x = op.parameter([2, 64], ov.Type.f32, name="x")
    weight = rng.standard_normal((64, 256)).astype(np.float32)  # 64 KiB: whole pages of the mapping
    xml = tmp_path / "model.xml"
    ov.save_model(ov.Model([op.matmul(x, op.constant(weight), False, False)], [x], "m"), str(xml),
                  compress_to_fp16=False)
    released = []
    original = _types.MappedPages.release
    monkeypatch.setattr(_types.MappedPages, "release", lambda self, array: (released.append(array.nbytes),
                                                                             original(self, array))[1])
    weights = model_io.Weights()
    model = import_ir(xml, defer=weights)
    model_io.save_model(model, tmp_path / "deferred.onnx", weights=weights)
    assert weight.nbytes in released
    complete = import_ir(xml)
    assert onnx.load(tmp_path / "deferred.onnx") == complete
    assert weights.materialize(model) == complete


def test_mapped_pages_released_in_merged_batches(tmp_path):
    """Neighbouring arrays of one read-only file mapping are released by one madvise over their whole pages,
    once BATCH bytes are pending; their values read back unchanged (faulted in again from the file)."""
    from converters.openvino_ir._types import MappedPages

    page = 4096
    data = np.random.default_rng(0).integers(0, 255, 40 * page, dtype=np.uint8)
    path = tmp_path / "weights.bin"
    data.tofile(path)
    mapped_file = np.memmap(path, dtype=np.uint8, mode="r")
    pages = MappedPages()
    pages.BATCH = 20 * page
    calls = []
    pages._read_mappings()
    real = pages.madvise
    pages.madvise = lambda address, length, advice: calls.append((address, length)) or real(address, length, advice)
    pages.release(np.asarray(mapped_file[: 2 * page]))  # too small (under 4 pages): ignored
    first, second = np.asarray(mapped_file[page + 100: 12 * page]), np.asarray(mapped_file[12 * page: 24 * page])
    pages.release(second)
    assert not calls  # 11 pages pending, under the batch
    pages.release(first)
    start = first.__array_interface__["data"][0]
    assert calls == [(-(-start // page) * page, (start + first.nbytes + second.nbytes) // page * page
                      - -(-start // page) * page)]
    np.testing.assert_array_equal(mapped_file, data)
    pages.release(np.zeros(8 * page, np.uint8))  # anonymous memory: never released
    pages.flush()
    assert len(calls) == 1


def test_find_waits_for_a_registration_under_way(monkeypatch):
    """A lookup that misses while another thread is registering deferred rules waits for it: it does not
    answer 'unsupported' because the deferred list already looks empty."""
    import threading
    import time
    from types import SimpleNamespace

    from converters.openvino_ir import _registry

    node = SimpleNamespace(get_type_info=lambda: SimpleNamespace(name="ReviewProbe", version_id="opset1"))
    handler, holding = object(), threading.Event()
    monkeypatch.setattr(_registry, "_DEFERRED", [])

    def register_late():
        with _registry._LOCK:
            holding.set()
            time.sleep(0.2)
            _registry.RULES[("ReviewProbe", 1)] = handler

    worker = threading.Thread(target=register_late)
    worker.start()
    holding.wait()
    try:
        assert _registry.find(node) is handler
    finally:
        worker.join()
        del _registry.RULES[("ReviewProbe", 1)]


def test_a_failed_deferred_registration_is_undone(monkeypatch):
    """A deferred registration that fails half way leaves no rule behind: the next lookup raises its error
    again (not 'two import rules'), and the registry answers as before."""
    from converters.openvino_ir import _registry

    def register_then_fail():
        _registry.rule("ReviewHalf", versions=(1,))(lambda ctx, node: None)
        raise ValueError("unit import failed")

    monkeypatch.setattr(_registry, "_DEFERRED", [register_then_fail])
    count = len(_registry.RULES)
    for _ in range(2):
        with pytest.raises(ValueError, match="unit import failed"):
            _registry.load_all()
    assert ("ReviewHalf", 1) not in _registry.RULES and len(_registry.RULES) == count


def test_graph_add_keeps_a_large_transposed_weight_as_a_view():
    """A MatMul's large int8 weights read transposed stay a view of the constant (model_io writes them block
    by block): no copy, so the constant's pages are not released either."""
    from converters.openvino_ir.rules.quantization import GraphIndex, _Graph

    released = []
    graph = _Graph(GraphIndex([], []), set(), released.append)
    base = np.arange(768 * 512, dtype=np.int64).astype(np.int8).reshape(768, 512)
    graph.add("transposed", base.T)
    assert not released and np.shares_memory(graph.values["transposed"], base)
    np.testing.assert_array_equal(graph.values["transposed"], base.T)


def test_real_type_names_are_openvinos_real_types():
    """_types.REAL_TYPE_NAMES stands in for ov.Type.is_real() (the walk knows a Constant's type name already)."""
    ov = pytest.importorskip("openvino")
    from converters.openvino_ir._types import REAL_TYPE_NAMES

    types = [value for value in vars(ov.Type).values() if isinstance(value, ov.Type)]
    assert len(types) > 10
    assert {t.get_type_name() for t in types if t.is_real()} == REAL_TYPE_NAMES


# (attributes of a node): every kind _make_node sets directly, and ones it hands to helper.make_attribute
MAKE_NODE_CASES = [
    {},
    {"to": 1},
    {"epsilon": 1e-5, "axis": -1},
    {"mode": "nearest", "coordinate_transformation_mode": "asymmetric"},
    {"pads": [1, 1, 1, 1], "strides": (2, 2), "group": 3},
    {"scales": [0.5, 2.0]},
    {"skipped": None, "perm": [0, 2, 1]},
    {"names": ["a", "b"], "mixed": [1, 2.0]},
]


@pytest.mark.parametrize("attributes", MAKE_NODE_CASES)
def test_make_node_is_helper_make_node(attributes):
    from onnx import helper

    from converters.openvino_ir._importer import _make_node

    made = _make_node("Op", ["x", "y"], ["z"], "node", "", attributes)
    expected = helper.make_node("Op", ["x", "y"], ["z"], name="node", domain="",
                                **{key: value for key, value in attributes.items() if value is not None})
    assert made.SerializeToString() == expected.SerializeToString()


class _CountingNode:
    """An OpenVINO node stand-in counting the element type questions asked of it."""

    def __init__(self):
        self.asked = 0

    def get_output_element_type(self, index):
        self.asked += 1
        return self

    def get_type_name(self):
        return "f32"


def test_out_type_asks_openvino_once_per_output_of_the_current_node():
    from converters.openvino_ir._importer import Context

    ctx, current, other = Context(), _CountingNode(), _CountingNode()
    ctx.begin(current)
    assert [ctx.out_type(current), ctx.out_type(current), ctx.out_elem(current)] == ["f32", "f32", 1]
    assert current.asked == 1
    ctx.out_type(other), ctx.out_type(other)
    assert other.asked == 2  # not the node being converted: not cached
    ctx.begin(other)
    ctx.out_type(other)
    assert other.asked == 3


@pytest.mark.parametrize("op_type, domain", [("If", ""), ("Loop", ""), ("Custom", "org.openvinotoolkit")])
def test_live_keeps_what_subgraphs_read(op_type, domain):
    """_live looks into the graph attributes of the standard control-flow ops and of any other-domain node."""
    from onnx import TensorProto, helper

    from converters.openvino_ir._importer import _live

    body = helper.make_graph([helper.make_node("Identity", ["outer"], ["inner"])], "body", [],
                             [helper.make_tensor_value_info("inner", TensorProto.FLOAT, [])])
    outer = helper.make_node("Relu", ["x"], ["outer"])
    dead = helper.make_node("Relu", ["x"], ["dead"])
    reader = helper.make_node(op_type, ["c"], ["y"], domain=domain, body=body)
    computed = set()
    assert _live([outer, dead, reader], {"y"}, computed) == [outer, reader]
    assert computed == {"outer", "y"}


class _Named:
    def __init__(self, friendly):
        self.friendly = friendly

    def get_friendly_name(self):
        return self.friendly


def test_record_names_maps_computed_outputs_of_unambiguous_ops_in_op_order():
    import json

    import onnx

    from converters.openvino_ir._importer import NAMES_KEY, _record_names

    walked = [(_Named("a"), "n1"), (_Named("dup"), "n2"), (_Named("dup"), "n3"), (_Named("b"), "n4")]
    names = {("n4", 1): "v4b", ("n1", 1): "constant", ("n4", 0): "v4a", ("n2", 0): "v2", ("n1", 0): "v1"}
    model = onnx.ModelProto()
    _record_names(model, walked, names, computed={"v1", "v2", "v4a", "v4b"})
    recorded = next(p.value for p in model.metadata_props if p.key == NAMES_KEY)
    assert recorded == json.dumps({"a:0": "v1", "b:0": "v4a", "b:1": "v4b"}, separators=(",", ":"))


def test_convert_scans_for_dialect_nodes_only_after_an_import_that_emitted_one(tmp_path, monkeypatch):
    """The importer imports the dialect domain only with a node of it, so convert() lowers the model of an IR
    without dialect ops without scanning its nodes for one; an IR with one is still scanned and lowered."""
    from pathlib import Path

    ov = pytest.importorskip("openvino")
    import openvino.opset13 as op

    from converters import convert, passes
    from converters.model_io import opset_of
    from custom_ops.config import DOMAIN

    scans = []
    scan = passes.uses_domain
    monkeypatch.setattr(passes, "uses_domain", lambda model, domain: scans.append(domain) or scan(model, domain))
    x = op.parameter([2, 3], ov.Type.f32, name="x")
    plain = tmp_path / "plain.xml"
    ov.save_model(ov.Model([op.relu(x)], [x], "plain"), str(plain))
    model, report = convert(plain)
    assert (scans, opset_of(model, DOMAIN), report.nodes) == ([], None, [])
    model, report = convert(Path(__file__).resolve().parent.parent / "models" / "gnn_aggregation.xml")
    assert scans and report.nodes and all(entry.domain == DOMAIN for entry in report.nodes)


@pytest.mark.parametrize("first_chars", [1, 100, 4096])
def test_mapped_pages_read_the_mappings_only_as_far_as_needed(tmp_path, first_chars):
    """From however few characters of /proc/self/maps it starts, a lookup reads on while the address lies
    beyond what was read: a file-mapped array is found in the mapping a complete read finds, anonymous
    memory in none."""
    from converters.openvino_ir._types import MappedPages

    path = tmp_path / "weights.bin"
    np.arange(8 * 4096, dtype=np.uint8).tofile(path)
    mapped = np.asarray(np.memmap(path, dtype=np.uint8, mode="r"))
    anonymous = np.zeros(8 * 4096, np.uint8)
    complete, pages = MappedPages(), MappedPages()
    complete._read_mappings()
    pages._read_mappings(first_chars)
    found = {}
    for name, array in (("mapped", mapped), ("anonymous", anonymous)):
        address = array.__array_interface__["data"][0]
        found[name] = pages._mapping(address, address + array.nbytes)
        assert found[name] == complete._mapping(address, address + array.nbytes)
    assert found["mapped"] is not None and found["anonymous"] is None
