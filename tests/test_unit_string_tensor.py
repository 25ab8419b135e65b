"""StringTensorUnpack-15 / StringTensorPack-15 (custom_ops/ops/string/): OpenVINO string tensors <-> ONNX
tensor(string) (UTF-8), kernels vs OpenVINO's CPU plugin (empty strings, non-ASCII UTF-8, ragged, overlapping
and reordered ranges), IR import with a string Parameter -> InferenceSession, export, schema and reference
evaluator, and the CPU plugin's divergences."""
from __future__ import annotations

import numpy as np
import pytest

import custom_ops
from custom_ops.errors import OpError
from custom_ops.ops.string._common import strings
from custom_ops.unit import Case
from tests.helpers import units as check

pytestmark = pytest.mark.openvino

UNPACK = custom_ops.unit_of("StringTensorUnpack")
PACK = custom_ops.unit_of("StringTensorPack")
UNITS = (UNPACK, PACK)


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.op_type)
def test_kernel_matches_openvino_on_many_cases(unit):
    assert check.check_generated_cases(unit, seeds=range(3)) >= 30


@pytest.mark.parametrize("case", check.cases(UNPACK)[:4] + check.cases(PACK)[:4], ids=lambda c: c.id)
def test_import_session_export(case, tmp_path):
    unit = custom_ops.unit_of(case.id.split("_")[0])
    check.check_import_and_session(unit, case)
    check.check_export(unit, case, tmp_path)


@pytest.mark.parametrize("case", check.cases(UNPACK)[:4] + check.cases(PACK)[:4], ids=lambda c: c.id)
def test_backend_schema_reference(case):
    unit = custom_ops.unit_of(case.id.split("_")[0])
    check.check_backend(unit, case)
    check.check_reference_and_schema(unit, case)


def test_round_trip_is_the_identity():
    for seed in range(3):
        for case in check.cases(UNPACK, seed):
            begins, ends, symbols = check.kernel_outputs(UNPACK, case)
            packed = check.kernel_outputs(PACK, Case("back", (begins, ends, symbols)))[0]
            check.assert_same([packed], [case.inputs[0]], case.id)


def test_known_layout():
    begins, ends, symbols = check.kernel_outputs(UNPACK, Case("known", (strings(["ab", "", "hé", "日"], (2, 2)),)))
    np.testing.assert_array_equal(begins, [[0, 2], [2, 5]])
    np.testing.assert_array_equal(ends, [[2, 2], [5, 8]])
    assert symbols.tobytes() == "abhé日".encode()


def test_text_without_bytes_is_refused():
    """NUL (onnxruntime-extensions would cut the string there) and lone surrogates (no UTF-8 encoding)."""
    import onnx_bridge
    for text, message in (("a\0b", "NUL"), ("a\udcff", "not valid Unicode")):
        with pytest.raises(OpError, match=message):
            check.kernel_outputs(UNPACK, Case("bad", (strings([text]),)))
    session = onnx_bridge.InferenceSession(check.dialect_model(UNPACK, check.cases(UNPACK)[1]).SerializeToString())
    with pytest.raises(OpError, match="input 'data'.*NUL"):
        session.run(None, {"data": strings(["ok", "a\0b"])})
    with pytest.raises(UnicodeEncodeError):            # onnxruntime's own feed conversion
        session.run(None, {"data": strings(["a\udcff"])})


def test_string_model_through_the_session():
    """An IR of Parameter(string) -> Unpack -> Pack -> Result imports with ONNX string input and output and
    runs to OpenVINO's values."""
    import openvino as ov
    from openvino import opset1, opset15

    import onnx_bridge
    from converters.openvino_ir import import_ir
    parameter = opset1.parameter(ov.PartialShape([-1, -1]), ov.Type.string, name="text")
    unpacked = opset15.string_tensor_unpack(parameter)
    packed = opset15.string_tensor_pack(*unpacked.outputs())
    model = ov.Model([packed.output(0), unpacked.output(2)], [parameter], "strings")
    imported = import_ir(model)
    assert imported.graph.input[0].type.tensor_type.elem_type == 8     # STRING
    text = np.array([["héllo", ""], ["日本語", "👩\u200d💻"]])
    got = onnx_bridge.InferenceSession(imported.SerializeToString()).run(None, {"text": text.astype(object)})
    want = ov.Core().compile_model(model, "CPU", check.CONFIG)({"text": text})
    np.testing.assert_array_equal(got[0], want[0].astype(object))
    np.testing.assert_array_equal(got[1], want[1])


def test_unpack_divergence_empty_dynamic_input_is_real():
    from onnx_bridge import divergences
    row = UNPACK.divergences[0]
    assert divergences.BY_ID[row.id].applies(divergences.BY_ID[row.id].example())
    with pytest.raises(RuntimeError, match="non static shape"):
        check.openvino_outputs(UNPACK, row.example)
    assert [np.shape(out) for out in check.kernel_outputs(UNPACK, row.example)] == [(0, 2), (0, 2), (0,)]


def test_pack_divergence_unchecked_ranges_on_cached_shapes_is_real():
    """A first run of the shapes refuses the invalid ranges as the contract does; after a valid run of the
    same shapes the CPU plugin copies a byte from outside symbols instead."""
    import openvino as ov
    from onnx_bridge import divergences
    row = PACK.divergences[0]
    assert divergences.BY_ID[row.id].applies(divergences.BY_ID[row.id].example())
    compiled = ov.Core().compile_model(check.openvino_model(PACK, row.example), "CPU", check.CONFIG)
    feeds = check.feeds(PACK, row.example)
    with pytest.raises(RuntimeError, match="biggest index"):
        compiled(feeds)
    valid = dict(feeds, ends=np.asarray([1, 3], np.int32))
    assert list(compiled(valid)[0]) == ["a", "bc"]
    got = compiled(feeds)[0]                       # same shapes: not checked again, runs
    assert got[0] == "a" and got[1].startswith("bc")
    with pytest.raises(OpError, match="not inside symbols"):
        check.kernel_outputs(PACK, row.example)


def test_string_constants_import_as_utf8_initializers(tmp_path):
    """A string Constant becomes a tensor(string) initializer (and exports back); bytes that are not UTF-8
    are refused."""
    import openvino as ov
    from openvino import opset15

    import onnx_bridge
    from converters.openvino_ir import import_ir
    from custom_ops.errors import ConversionError
    text = np.array([["héllo", ""], ["x", "日本"]])
    unpacked = opset15.string_tensor_unpack(ov.op.Constant(ov.Tensor(text)))
    model = ov.Model(unpacked.outputs(), [], "constant_strings")
    from converters.openvino_ir import export_ir
    imported = import_ir(model)
    got = onnx_bridge.InferenceSession(imported.SerializeToString()).run(None, {})
    want = ov.Core().compile_model(model, "CPU", check.CONFIG)({})
    check.assert_same(got, [want[o] for o in range(3)], "constant strings")
    exported = ov.Core().read_model(str(export_ir(imported, tmp_path / "strings.xml")))
    again = ov.Core().compile_model(exported, "CPU", check.CONFIG)({})
    check.assert_same([again[o] for o in range(3)], got, "exported constant strings")
    bad = opset15.string_tensor_unpack(ov.op.Constant(ov.Tensor(np.array([b"a\xff"]))))
    with pytest.raises(ConversionError, match="not UTF-8"):
        import_ir(ov.Model(bad.outputs(), [], "not_utf8"))


def test_run_command_generates_describes_and_saves_strings(tmp_path):
    import onnx_bridge
    from onnx_bridge.commands import run
    model = check.dialect_model(UNPACK, check.cases(UNPACK)[2])
    feeds = run.random_inputs(model, seed=1)
    assert feeds["data"].dtype == object and all(isinstance(v, str) for v in feeds["data"].reshape(-1))
    assert "string[4, 4]" in run.describe("data", feeds["data"]) and "length" in run.describe("data", feeds["data"])
    outputs = onnx_bridge.InferenceSession(model.SerializeToString()).run(None, feeds)
    check.assert_same(outputs, check.kernel_outputs(UNPACK, Case("fed", (feeds["data"],))), "run")
    run.save_npz(tmp_path / "strings.npz", {"data": feeds["data"]})
    with np.load(tmp_path / "strings.npz", allow_pickle=False) as archive:
        np.testing.assert_array_equal(archive["data"].astype(object), feeds["data"])


def test_compare_runs_string_models(tmp_path):
    """onnx-bridge compare on an IR with a string Parameter and a string Result: OpenVINO CPU agrees with the
    converted model, and the comparer tells strings apart."""
    import openvino as ov
    from openvino import opset1, opset15

    import onnx_bridge
    from onnx_bridge.comparison import measure
    parameter = opset1.parameter(ov.PartialShape([-1, -1]), ov.Type.string, name="text")
    unpacked = opset15.string_tensor_unpack(parameter)
    model = ov.Model([opset15.string_tensor_pack(*unpacked.outputs()).output(0), unpacked.output(2)],
                     [parameter], "strings")
    report = onnx_bridge.compare(model)
    assert report.verdict == "agree" and [o.dtype for o in report.outputs] == ["string", "uint8"]
    differ = measure(strings(["a", "b"]), strings(["a", "c"]))
    assert (differ.status, differ.count, differ.want_value, differ.got_value) == ("values", 1, "'b'", "'c'")
