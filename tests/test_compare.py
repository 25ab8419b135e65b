"""`onnx-bridge compare` / onnx_bridge.compare: agreeing models exit 0; an injected fault in a converted node is
localised to exactly that node; an nncf INT8 model is explained by OpenVINO's own int8-vs-f32 spread; TopK
ties are recognised; a CPU plugin deviation from the specification is named; --json and exit codes."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

ov = pytest.importorskip("openvino")
from openvino import opset11 as o  # noqa: E402

import onnx_bridge  # noqa: E402
from converters.openvino_ir import import_ir  # noqa: E402
from onnx_bridge.compare_models import EXIT_AGREE, EXIT_DIFFERENT, EXIT_EXPLAINED  # noqa: E402



def _named(node, name):
    node.set_friendly_name(name)
    return node


def tiny_cnn():
    """x -> conv1 -> relu1 -> scale (Mul 2) -> conv2 -> norm (Softmax axis 1) -> pick (Gather axis 1)."""
    rng = np.random.default_rng(0)
    x = o.parameter([1, 3, 8, 8], ov.Type.f32, name="x")
    conv1 = _named(o.convolution(x, o.constant(rng.standard_normal((4, 3, 3, 3)).astype(np.float32)),
                                 [1, 1], [1, 1], [1, 1], [1, 1]), "conv1")
    relu = _named(o.relu(conv1), "relu1")
    scale = _named(o.multiply(relu, o.constant(np.full((1, 4, 1, 1), 2, np.float32))), "scale")
    conv2 = _named(o.convolution(scale, o.constant(rng.standard_normal((4, 4, 3, 3)).astype(np.float32)),
                                 [1, 1], [0, 0], [0, 0], [1, 1]), "conv2")
    norm = _named(o.softmax(conv2, 1), "norm")
    pick = _named(o.gather(norm, o.constant(np.array([0, 2], np.int64)), o.constant(np.int64(1))), "pick")
    return ov.Model([o.result(pick)], [x], "tiny_cnn")


def _set_attribute(node, name, values):
    for attribute in node.attribute:
        if attribute.name == name:
            if attribute.type == onnx.AttributeProto.INTS:
                attribute.ints[:] = values
            else:
                attribute.i = values
            return
    raise AssertionError(f"{node.name} has no attribute {name}")


def _node(model, name):
    return next(n for n in model.graph.node if n.name == name)


def _fault_attribute(node_name, attribute, values):
    def inject(model):
        _set_attribute(_node(model, node_name), attribute, values)
    return inject


def _fault_constant(model):
    """scale's constant 2 becomes 2.5 in the converted model."""
    mul = _node(model, "scale")
    tensor = next(t for t in model.graph.initializer if t.name in mul.input)
    tensor.CopyFrom(onnx.numpy_helper.from_array(np.full((1, 4, 1, 1), 2.5, np.float32), tensor.name))


FAULTS = {
    "conv1 pads": ("conv1", _fault_attribute("conv1", "pads", [0, 0, 0, 0])),
    "conv2 strides": ("conv2", _fault_attribute("conv2", "strides", [2, 2])),
    "scale constant": ("scale", _fault_constant),
    "softmax axis": ("norm", _fault_attribute("norm", "axis", 2)),
    "gather axis": ("pick", _fault_attribute("pick", "axis", 2)),
}


def test_agreeing_model_agrees():
    report = onnx_bridge.compare(tiny_cnn())
    assert report.verdict == "agree" and report.exit_code == EXIT_AGREE, report.text()
    assert report.localisation is None and not report.explanations
    [output] = report.outputs
    assert output.agree and output.total == 1 * 2 * 6 * 6 and output.count == 0 and output.beyond == 0
    assert output.max_abs < 1e-5


@pytest.mark.parametrize("fault", FAULTS)
def test_injected_fault_is_localised_to_its_node(fault):
    expected, inject = FAULTS[fault]
    model = tiny_cnn()
    converted = import_ir(model)
    inject(converted)
    report = onnx_bridge.compare(model, converted)
    assert report.verdict == "differ" and report.exit_code == EXIT_DIFFERENT, report.text()
    localisation = report.localisation
    assert localisation is not None and localisation.node == expected, report.text()
    assert localisation.inputs_agree
    assert localisation.difference["status"] in ("values", "shape")
    assert any(line.startswith(f"{expected} (") for line in localisation.onnx_nodes)
    assert not report.explanations


def test_fault_in_a_longer_chain_is_found_by_bisection():
    """Twenty Multiply nodes; the converted 13th multiplies by 3 instead of 2: found with few probe runs."""
    x = o.parameter([2, 3], ov.Type.f32, name="x")
    value = x
    for k in range(20):
        value = _named(o.multiply(value, o.constant(np.float32(1.0 if k % 2 else 0.5))), f"m{k}")
    model = ov.Model([o.result(value)], [x], "chain")
    converted = import_ir(model)
    mul = _node(converted, "m13")
    tensor = next(t for t in converted.graph.initializer if t.name == mul.input[1])
    tensor.CopyFrom(onnx.numpy_helper.from_array(np.array(3, np.float32), tensor.name))
    report = onnx_bridge.compare(model, converted)
    assert report.localisation.node == "m13", report.text()
    assert report.localisation.probes <= 5


def test_int8_model_is_explained_by_openvino_own_spread():
    """A small residual CNN quantized by nncf: OpenVINO CPU's int8 kernels differ from its own f32 execution of
    the FakeQuantize graph; the converted model agrees with the latter (FakeQuantize as specified)."""
    pytest.importorskip("nncf")
    import logging

    import nncf
    import torch

    from tests.helpers.zoo import _torch_model

    class Block(torch.nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.a = torch.nn.Conv2d(channels, channels, 3, padding=1)
            self.b = torch.nn.Conv2d(channels, channels, 3, padding=1)

        def forward(self, x):
            return torch.relu(x + self.b(torch.relu(self.a(x))))

    logging.getLogger("nncf").setLevel(logging.ERROR)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), Block(16), Block(16),
                              torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10)).eval()
    model, feeds = _torch_model(net, (torch.randn(1, 3, 16, 16),), ["image"])
    samples = [rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(2)]
    quantized = nncf.quantize(model, nncf.Dataset(samples), subset_size=2)
    report = onnx_bridge.compare(quantized, inputs=feeds, localise=False)
    if report.verdict == "agree":
        pytest.skip("OpenVINO CPU's int8 kernels give its f32 result on this machine: no spread to explain")
    assert report.verdict == "explained" and report.exit_code == EXIT_EXPLAINED, report.text()
    [explanation] = report.explanations
    # The default import is the QDQ form (integer kernels in onnxruntime): an approximation of FakeQuantize's
    # formula as OpenVINO's own int8 execution is, so either side may be off the f32 semantics.
    assert explanation.kind == "int8-spread" and explanation.follows_spec in ("converted", "both"), report.text()
    [spread] = report.spread
    assert report.outputs[0].max_abs <= spread.max_abs and spread.max_abs > 1e-4
    # The exact form computes FakeQuantize as specified: the converted side follows the specification.
    exact = onnx_bridge.compare(quantized, import_ir(quantized, int8="exact"), inputs=feeds, localise=False)
    [explanation] = exact.explanations
    assert explanation.kind == "int8-spread" and explanation.follows_spec == "converted", exact.text()


def test_compressed_weights_are_explained_by_openvino_dynamic_quantization():
    """nncf.compress_weights (u4 groups): OpenVINO CPU quantizes the activations of those MatMuls on the fly;
    without that (DYNAMIC_QUANTIZATION_GROUP_SIZE 0) it agrees with the converted model."""
    pytest.importorskip("nncf")
    from tests.helpers.zoo import nncf_int4_weights

    model, feeds = nncf_int4_weights()
    report = onnx_bridge.compare(model, inputs=feeds, localise=False)
    if report.verdict == "agree":
        pytest.skip("OpenVINO CPU does not quantize activations dynamically on this machine")
    assert report.verdict == "explained", report.text()
    [explanation] = report.explanations
    assert explanation.kind == "compressed-weights-spread" and explanation.follows_spec == "converted"


def _topk_model():
    x = o.parameter([2, 8], ov.Type.f32, name="scores")
    topk = _named(o.topk(x, o.constant(np.int64(3)), 1, "max", "value", ov.Type.i64, stable=False), "top3")
    values, indices = o.result(topk.output(0)), o.result(topk.output(1))
    values.output(0).get_tensor().set_names({"values"})
    indices.output(0).get_tensor().set_names({"indices"})
    return ov.Model([values, indices], [x], "top3")


def _topk_onnx(prefer_last: bool, largest: int = 1):
    """ONNX TopK k=3 on axis 1 of an [2, 8] input; prefer_last breaks ties toward the highest index (a valid
    order for stable=false) by running TopK on the reversed row."""
    from onnx import TensorProto, helper

    from custom_ops.config import IR_VERSION

    k = helper.make_tensor("k", TensorProto.INT64, [1], [3])
    nodes = []
    source = "scores"
    if prefer_last:
        nodes.append(helper.make_node("Slice", ["scores", "start", "end", "axis", "step"], ["reversed"]))
        source = "reversed"
    nodes.append(helper.make_node("TopK", [source, "k"], ["values", "raw" if prefer_last else "indices"],
                                  axis=1, largest=largest))
    if prefer_last:
        nodes.append(helper.make_node("Sub", ["last", "raw"], ["indices"]))
    constants = [k] + ([helper.make_tensor("start", TensorProto.INT64, [1], [-1]),
                        helper.make_tensor("end", TensorProto.INT64, [1], [-(2 ** 62)]),
                        helper.make_tensor("axis", TensorProto.INT64, [1], [1]),
                        helper.make_tensor("step", TensorProto.INT64, [1], [-1]),
                        helper.make_tensor("last", TensorProto.INT64, [], [7])] if prefer_last else [])
    graph = helper.make_graph(nodes, "top3", [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("values", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("indices", TensorProto.INT64, [2, 3])], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=IR_VERSION)


TIED = {"scores": np.array([[1, 3, 3, 3, 3, 0, 3, 2], [9, 5, 5, 8, 5, 5, 5, 5]], np.float32)}


def test_topk_ties_are_recognised():
    report = onnx_bridge.compare(_topk_model(), _topk_onnx(prefer_last=True), inputs=TIED)
    assert report.verdict == "explained" and report.exit_code == EXIT_EXPLAINED, report.text()
    assert report.tie_dependent == ["indices"]
    [explanation] = report.explanations
    assert explanation.kind == "tie-order" and "same score" in explanation.text


def test_topk_without_ties_is_not_excused():
    distinct = {"scores": np.arange(16, dtype=np.float32).reshape(2, 8)[:, ::-1].copy()}
    report = onnx_bridge.compare(_topk_model(), _topk_onnx(prefer_last=False, largest=0), inputs=distinct)
    assert report.verdict == "differ" and not report.tie_dependent, report.text()


def test_cpu_integer_divide_truncation_is_named():
    a, b = o.parameter([6], ov.Type.i32, name="a"), o.parameter([6], ov.Type.i32, name="b")
    model = ov.Model([o.result(_named(o.divide(a, b), "quotient"))], [a, b], "divide")
    feeds = {"a": np.array([-7, 7, -7, 7, -6, 5], np.int32), "b": np.array([2, 2, -2, -2, 3, 5], np.int32)}
    report = onnx_bridge.compare(model, inputs=feeds)
    if report.verdict == "agree":
        pytest.skip("this OpenVINO CPU plugin floors signed integer division (the deviation is gone)")
    assert report.verdict == "explained", report.text()
    assert report.localisation.node == "quotient"
    assert "agrees with the converted model" in report.localisation.reference
    assert [e.id for e in report.explanations] == ["ov-cpu-divide-int-truncates"]
    assert report.explanations[0].follows_spec == "converted"


def _cli(capsys, *args):
    from onnx_bridge.cli import main

    code = main(["compare", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_exit_codes_and_json(tmp_path, capsys):
    model = tiny_cnn()
    xml = tmp_path / "tiny.xml"
    ov.save_model(model, str(xml), compress_to_fp16=False)
    code, out, err = _cli(capsys, xml, "--json", "-")
    assert code == EXIT_AGREE, err
    document = json.loads(out)
    assert {"model", "converted", "inputs", "verdict", "exit_code", "outputs", "explanations", "localisation",
            "spread", "tie_dependent", "seconds"} <= set(document)
    [output] = document["outputs"]
    assert {"name", "status", "max_abs", "rel_l2", "beyond", "count", "total", "tolerance", "summary",
            "agree"} <= set(output)
    assert document["verdict"] == "agree" and output["agree"] and document["localisation"] is None

    converted = import_ir(xml)
    _fault_attribute("conv2", "strides", [2, 2])(converted)
    broken = tmp_path / "broken.onnx"
    onnx.save(converted, broken)
    report = tmp_path / "out" / "report.json"
    code, out, err = _cli(capsys, xml, "--onnx", broken, "--json", report)
    assert code == EXIT_DIFFERENT, err
    assert "first diverging node: 'conv2'" in out and "UNEXPLAINED" in out
    assert json.loads(report.read_text())["localisation"]["node"] == "conv2"

    tied = tmp_path / "tied.npz"
    np.savez(tied, **TIED)
    ov.save_model(_topk_model(), str(tmp_path / "top3.xml"))
    onnx.save(_topk_onnx(prefer_last=True), tmp_path / "top3.onnx")
    code, out, err = _cli(capsys, tmp_path / "top3.xml", "--onnx", tmp_path / "top3.onnx", "--inputs", tied)
    assert code == EXIT_EXPLAINED, out + err
    assert "tie-dependent" in out

    code, out, err = _cli(capsys, tmp_path / "nothing.xml")
    assert code == 3 and "does not exist" in err


def test_inputs_and_outputs_are_matched_by_name():
    """A converted model from another tool, its inputs and outputs in another order: matched by tensor name;
    without the importer's name map, shared tensor names still localise."""
    from onnx import TensorProto, helper

    from custom_ops.config import IR_VERSION

    a, b = o.parameter([3], ov.Type.f32, name="a"), o.parameter([3], ov.Type.f32, name="b")
    total = _named(o.add(a, b), "total")
    total.output(0).get_tensor().set_names({"total"})
    product = _named(o.multiply(total, b), "product")
    product.output(0).get_tensor().set_names({"product"})
    difference = _named(o.subtract(a, b), "difference")
    difference.output(0).get_tensor().set_names({"difference"})
    model = ov.Model([o.result(product), o.result(difference)], [a, b], "two")
    floats = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [3])  # noqa: E731
    graph = helper.make_graph([helper.make_node("Sub", ["a", "b"], ["difference"]),
                               helper.make_node("Add", ["a", "b"], ["total"]),
                               helper.make_node("Mul", ["total", "b"], ["product"])], "two",
                              [floats("b"), floats("a")], [floats("difference"), floats("product")])
    converted = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=IR_VERSION)
    feeds = {"a": np.array([1, 2, 3], np.float32), "b": np.array([10, 20, 40], np.float32)}
    assert onnx_bridge.compare(model, converted, inputs=feeds).verdict == "agree"
    converted.graph.node[1].op_type = "Sub"  # total = a - b
    report = onnx_bridge.compare(model, converted, inputs=feeds)
    assert report.localisation.node == "total" and report.outputs[0].agree, report.text()


def test_a_converted_model_that_cannot_run_is_a_clear_error():
    model = tiny_cnn()
    converted = import_ir(model)
    _node(converted, "conv2").input[1] = "conv1"  # a weight of the wrong shape
    with pytest.raises(onnx_bridge.BridgeError, match="cannot run the converted model|conv2"):
        onnx_bridge.compare(model, converted)
