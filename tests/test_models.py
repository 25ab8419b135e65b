"""The models/ gallery: the checked-in files are what models/generate.py makes, each IR imports and runs
in onnxruntime with OpenVINO's outputs, and IR -> ONNX -> IR keeps them."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

ov = pytest.importorskip("openvino")

import custom_ops  # noqa: E402
import onnx_bridge  # noqa: E402
from converters.openvino_ir import export_ir, import_ir  # noqa: E402
from onnx_bridge import divergences  # noqa: E402
from onnx_bridge.config import DOMAIN  # noqa: E402

pytestmark = pytest.mark.openvino
MODELS = Path(__file__).resolve().parents[1] / "models"
_spec = importlib.util.spec_from_file_location("gallery_generate", MODELS / "generate.py")
generate = sys.modules.setdefault("gallery_generate", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(generate)
NAMES = list(generate.GALLERY)

#: Outputs that are not bit-exact between onnxruntime and OpenVINO's CPU plugin, and why. Every other
#: output is compared exactly.
TOLERANCES = {
    # ReduceL2 of f32: the contract's kernel sums squares with numpy (pairwise), the CPU plugin
    # sequentially; the last bit of the root differs (measured: at most 2.4e-7 absolute on norms ~1-3).
    ("voxel_pooling", "feature_norms"): dict(rtol=5e-7, atol=0),
    # MatMul and Softmax: dot products and exp sums accumulate in a different order, and exp uses a
    # different approximation (measured: at most 2.4e-7 absolute).
    ("kv_cache", "attention"): dict(rtol=1e-6, atol=1e-6),
}


def _feeds(name: str, seed):
    if seed is None:
        with np.load(MODELS / f"{name}_inputs.npz") as archive:
            return {key: archive[key] for key in archive.files}
    sizes = {"voxel_pooling": dict(points=300), "gnn_aggregation": dict(nodes=30, edges=200),
             "kv_cache": dict(batch=2, cache=32, filled=9, step=3)}[name]
    return generate.GALLERY[name].sample_inputs(np.random.default_rng(seed), **sizes)


def _openvino(model, feeds) -> dict:
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled(feeds)
    return {output.get_any_name(): result[output] for output in compiled.outputs}


def _assert_outputs(name, got: dict, want: dict, what: str):
    assert sorted(got) == sorted(want), what
    for output, value in want.items():
        assert got[output].dtype == value.dtype and got[output].shape == value.shape, (what, output)
        tolerance = TOLERANCES.get((name, output))
        if tolerance:
            np.testing.assert_allclose(got[output], value, **tolerance, err_msg=f"{what}: {output}")
        else:
            np.testing.assert_array_equal(got[output], value, err_msg=f"{what}: {output}")


def _dialect_cases(model: onnx.ModelProto, feeds) -> list:
    """divergences.Case of every dialect node, with the values its inputs take on `feeds`."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    nodes = [n for n in probe.graph.node if n.domain == DOMAIN]
    constants = {t.name: onnx.numpy_helper.to_array(t) for t in probe.graph.initializer}
    wanted = sorted({i for n in nodes for i in n.input if i and i not in constants and i not in feeds})
    probe.graph.output.extend(onnx.ValueInfoProto(name=name) for name in wanted)
    session = onnx_bridge.InferenceSession(probe, lower=False)
    values = dict(constants, **feeds)
    values.update(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    cases = []
    for node in nodes:
        ports = [port.name for port in custom_ops.resolve(node.op_type, 12).inputs]
        inputs = {port: values[name] for port, name in zip(ports, node.input) if name}
        attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        attributes = {k: v.decode() if isinstance(v, bytes) else v for k, v in attributes.items()}
        cases.append(divergences.Case(node.op_type, inputs, attributes))
    return cases


@pytest.mark.parametrize("name", NAMES)
def test_checked_in_files(name):
    files = [MODELS / f"{name}{suffix}" for suffix in (".xml", ".bin", ".onnx", "_inputs.npz")]
    for path in files:
        assert path.is_file() and path.stat().st_size < generate.MAX_FILE_BYTES, path
    # The checked-in ONNX is the import of the checked-in IR (without the import's name map, see generate.py).
    imported = import_ir(files[0])
    del imported.metadata_props[:]
    assert imported.SerializeToString() == onnx.load(files[2]).SerializeToString()
    assert f"`{name}`" in (MODELS / "README.md").read_text()


def test_generate_reproduces_the_gallery(tmp_path):
    written = generate.generate(tmp_path)
    assert len(written) == 4 * len(NAMES)
    for path in written:
        assert path.read_bytes() == (MODELS / path.name).read_bytes(), f"regenerate: {path.name} changed"


@pytest.mark.parametrize("seed", [None, 1, 2], ids=["sample", "seed1", "seed2"])
@pytest.mark.parametrize("name", NAMES)
def test_onnxruntime_matches_openvino(name, seed):
    imported = import_ir(MODELS / f"{name}.xml")
    feeds = _feeds(name, seed)
    # The comparison is only meaningful where no known CPU-plugin divergence applies to a dialect node.
    for case in _dialect_cases(imported, feeds):
        assert not divergences.matching("openvino-cpu", case), case
    session = onnx_bridge.InferenceSession(imported)
    got = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    _assert_outputs(name, got, _openvino(str(MODELS / f"{name}.xml"), feeds), "onnxruntime vs OpenVINO")
    # The dialect nodes as Python custom ops (no lowering) give the same.
    custom = onnx_bridge.InferenceSession(imported, lower=False)
    _assert_outputs(name, dict(zip([o.name for o in custom.get_outputs()], custom.run(None, feeds))), got,
                    "custom ops vs lowered")


@pytest.mark.parametrize("name", NAMES)
def test_ir_onnx_ir_round_trip(name, tmp_path):
    original = MODELS / f"{name}.xml"
    exported = export_ir(import_ir(original), tmp_path / f"{name}.xml")
    feeds = _feeds(name, 3)
    # Same runtime, same ops: exact.
    assert _openvino(str(exported), feeds).keys() == _openvino(str(original), feeds).keys()
    for output, value in _openvino(str(original), feeds).items():
        np.testing.assert_array_equal(_openvino(str(exported), feeds)[output], value, err_msg=output)
    again = import_ir(exported)
    assert sorted(n.op_type for n in again.graph.node if n.domain == DOMAIN) == \
        sorted(n.op_type for n in import_ir(original).graph.node if n.domain == DOMAIN)
