"""Attention as imported for onnxruntime's fusions (BERT-like models, f32 and nncf INT8): the graph onnxruntime
optimizes to, and the values against OpenVINO CPU and against OpenVINO's own decomposition order."""
from __future__ import annotations

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
import openvino.opset13 as op  # noqa: E402

from converters.openvino_ir import import_ir  # noqa: E402
from tests.helpers.int8 import UNSATURATING_LEVEL, unsaturating_int8_weights  # noqa: E402
from tests.helpers.ir_cases import op_types, ort_optimized, ort_session  # noqa: E402

pytestmark = pytest.mark.openvino
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
#: scores summed in another order (integers in onnxruntime's fused kernel, floats in OpenVINO's)
ACCUMULATION = dict(rtol=1e-5, atol=1e-6)


#: the steps of nncf's FakeQuantize on Q and K
STEPS = {"q": 0.02, "k": 0.03}


def _fq(data, step):
    limits = [np.float32(-128 * step), np.float32(127 * step)] * 2
    return op.fake_quantize(data, *[op.constant(v) for v in limits], 256)


def _attention(head, scale=None, mask=False, quantized=True, query_output=False):
    """q, k -> FakeQuantize (as nncf quantizes BERT's Q and K) -> ScaledDotProductAttention with v;
    query_output: the quantized q is a model output too."""
    q, k, v = (op.parameter([1, 2, 8, head], ov.Type.f32, name=n) for n in "qkv")
    args = [_fq(q, STEPS["q"]), _fq(k, STEPS["k"])] if quantized else [q, k]
    args.append(v)
    if mask or scale is not None:
        args.append(op.constant(np.where(np.arange(8) < 6, 0, -np.inf).astype(np.float32).reshape(1, 1, 1, 8)))
    if scale is not None:
        args.append(op.constant(np.float32(scale)))
    outputs = [op.scaled_dot_product_attention(*args, causal=False)] + ([args[0]] if query_output else [])
    model = ov.Model(outputs, [q, k, v])
    rng = np.random.default_rng(head + int(1000 * (scale or 0)))
    feeds = {n: rng.standard_normal((1, 2, 8, head)).astype(np.float32) for n in "qkv"}
    for name, step in STEPS.items():  # Q and K within 7 bits of levels: integer sums that cannot saturate
        feeds[name] = np.clip(feeds[name], -UNSATURATING_LEVEL * step, UNSATURATING_LEVEL * step)
    return model, feeds


#: (head size, scale input or None, mask, quantized q also a model output, scale folded into Q's scale)
SCORES = {
    "head64": (64, None, True, False, True),
    "head16": (16, None, False, False, True),
    "scale_half": (12, 0.5, False, False, True),
    "scale_two": (16, 2.0, True, False, True),
    "q_read_twice": (64, None, False, True, False),
    "head12": (12, None, True, False, False),   # 1/sqrt(12): a Mul after the integer matmul
    "scale_0.3": (16, 0.3, False, False, False),
}


@pytest.mark.parametrize("case_id", list(SCORES))
def test_quantized_scores_run_as_integer_matmul(tmp_path, monkeypatch, case_id):
    """Q and K quantized: the scale multiplies the scores after Q K^T and onnxruntime fuses
    DequantizeLinear(Q), DequantizeLinear(K) -> MatMul into MatMulIntegerToFloat (integer sums). A
    power-of-two scale (1/8 for heads of 64) is then folded into Q's DequantizeLinear scale: no Mul over the
    scores, the same values bit for bit as the unfolded graph; not folded when that DequantizeLinear has
    another reader (here: a model output)."""
    head, scale, mask, query_output, folded = SCORES[case_id]
    model, feeds = _attention(head, scale, mask, query_output=query_output)
    onnx_model = import_ir(model)
    ops = op_types(onnx_model)
    assert ("Mul" in ops) != folded
    session, graph = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    optimized = op_types(graph)
    assert optimized.count("MatMulIntegerToFloat") == 1 and "FusedMatMul" not in optimized
    assert ("Mul" in optimized) != folded
    want = ov.Core().compile_model(model, "CPU", CONFIG)(feeds)
    got = session.run(None, feeds)
    for a, b in zip(got, want.values()):
        np.testing.assert_allclose(a, b, **ACCUMULATION)
    exact = ort_session(import_ir(model, int8="exact"), optimize=False).run(None, feeds)[0]
    np.testing.assert_allclose(got[0], exact, **ACCUMULATION)
    ours = ort_session(onnx_model, optimize=False).run(None, feeds)[0]
    monkeypatch.setattr("converters.openvino_ir._importer.scores_scale_into_dequantize", lambda *a: 0)
    unfolded = import_ir(model)
    assert op_types(unfolded).index("MatMul") < op_types(unfolded).index("Mul")  # the scale after the scores
    np.testing.assert_array_equal(ours, ort_session(unfolded, optimize=False).run(None, feeds)[0])


@pytest.mark.parametrize("quantized", [False, True])
def test_other_scales_keep_openvinos_order(tmp_path, quantized):
    """1/sqrt(12) is not a power of two: Q * scale, then Q K^T (OpenVINO's decomposition) in f32 models and in
    the exact int8 form."""
    model, feeds = _attention(12, quantized=quantized)
    onnx_model = import_ir(model, int8="exact")
    producer = {o: n for n in onnx_model.graph.node for o in n.output}
    scores = next(n for n in onnx_model.graph.node if n.op_type == "MatMul")
    assert producer[scores.input[0]].op_type == "Mul"  # Q * scale
    session, graph = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    assert "MatMulIntegerToFloat" not in op_types(graph)
    want = ov.Core().compile_model(model, "CPU", CONFIG)(feeds)[0]
    np.testing.assert_allclose(session.run(None, feeds)[0], want, **ACCUMULATION)


@pytest.mark.parametrize("head,scale", [(64, None), (16, 0.25), (8, 4.0)])
def test_power_of_two_scale_after_the_scores_is_the_same_values(head, scale):
    """(Q K^T) * 2^k equals (Q * 2^k) K^T bit for bit: the import, run unoptimized, against OpenVINO's
    decomposition order written by hand."""
    model, feeds = _attention(head, scale, quantized=False)
    onnx_model = import_ir(model)
    ours = ort_session(onnx_model, optimize=False).run(None, feeds)[0]
    # the same graph with the Mul moved back onto Q
    graph = onnx_model.graph
    matmul = next(n for n in graph.node if n.op_type == "MatMul")
    mul = next(n for n in graph.node if n.op_type == "Mul" and n.input[0] == matmul.output[0])
    query, scores, scaled = matmul.input[0], mul.output[0], matmul.output[0]
    mul.input[0], mul.output[0] = query, scaled + "/q"
    matmul.input[0], matmul.output[0] = scaled + "/q", scores
    nodes = sorted(graph.node, key=lambda n: n is not mul)  # the Mul first (its inputs are graph values)
    del graph.node[:]
    graph.node.extend(nodes)
    theirs = ort_session(onnx_model, optimize=False).run(None, feeds)[0]
    np.testing.assert_array_equal(ours, theirs)


def _bert_attention(batch=1, mask=None, causal=False, scale=None, dynamic_length=False):
    """x -> three projections -> Reshape [0, 0, heads, D] -> Transpose [0, 2, 1, 3] -> ScaledDotProductAttention
    -> Transpose [0, 2, 1, 3] -> Reshape [0, 0, heads * D]: the attention block of BERT-like IRs (f32)."""
    length, heads, size = 12, 3, 8
    rng = np.random.default_rng(batch + 10 * causal)
    x = op.parameter([batch, -1 if dynamic_length else length, heads * size], ov.Type.f32, name="x")
    split = op.constant(np.array([0, 0, heads, size], np.int64))
    order = op.constant(np.array([0, 2, 1, 3], np.int64))
    q, k, v = (op.transpose(op.reshape(op.matmul(x, op.constant(
        rng.standard_normal((heads * size, heads * size)).astype(np.float32) / 5), False, False), split, True), order)
        for _ in range(3))
    args = [q, k, v]
    if mask is not None or scale is not None:
        args.append(op.constant(mask if mask is not None else np.float32(0)))
    if scale is not None:
        args.append(op.constant(np.float32(scale)))
    attention = op.scaled_dot_product_attention(*args, causal=causal)
    out = op.reshape(op.transpose(attention, order), op.constant(np.array([0, 0, heads * size], np.int64)), True)
    feeds = {"x": rng.standard_normal((batch, length, heads * size)).astype(np.float32)}
    return ov.Model([out], [x]), feeds


_RAGGED = np.where(np.arange(12) < 9, 0, -np.inf).astype(np.float32)
#: (batch, mask, causal, scale); heads moved by onnxruntime's FusedMatMul
HEAD_LAYOUTS = {
    "float_mask_1x1x1xS": (1, _RAGGED.reshape(1, 1, 1, 12), False, None),
    "bool_mask_1x1xLxS": (1, np.tril(np.ones((12, 12), bool)).reshape(1, 1, 12, 12), False, None),
    "mask_3d": (1, np.tile(_RAGGED, (3, 12, 1)), False, None),
    "no_mask": (1, None, False, None),
    "causal": (1, None, True, None),
    "scale_0.3_on_q": (1, None, False, 0.3),
    "dynamic_length": (1, _RAGGED.reshape(1, 1, 1, 12), False, None),  # (L read as -1 by the head Reshape)
}


@pytest.mark.parametrize("case_id", list(HEAD_LAYOUTS) + ["batch_2_keeps_4d"])
def test_heads_of_batch_one_move_inside_the_matmuls(tmp_path, monkeypatch, case_id):
    """Batch 1: Q, K and V are taken before the IR's Transpose [0, 2, 1, 3], read as [L, 1, heads, D], and
    onnxruntime folds the head transposes [1, 2, 0, 3] into FusedMatMul (transBatchA/B): one Transpose left (the
    output's), no Squeeze / Unsqueeze; the values bit for bit those of the IR's form, and OpenVINO CPU's up to
    summation order. Batch 2 keeps the IR's form."""
    batch, mask, causal, scale = HEAD_LAYOUTS.get(case_id, (2, _RAGGED.reshape(1, 1, 1, 12), False, None))
    model, feeds = _bert_attention(batch, mask, causal, scale, dynamic_length=case_id == "dynamic_length")
    onnx_model = import_ir(model)
    session, graph = ort_optimized(onnx_model, tmp_path / "optimized.onnx")
    optimized = op_types(graph)
    assert optimized.count("Transpose") == (1 if batch == 1 else 4), optimized
    assert "Squeeze" not in optimized and "Unsqueeze" not in optimized
    want = ov.Core().compile_model(model, "CPU", CONFIG)(feeds)[0]
    got = session.run(None, feeds)[0]
    np.testing.assert_allclose(got, want, **ACCUMULATION)
    ours = ort_session(onnx_model, optimize=False).run(None, feeds)[0]
    monkeypatch.setattr("converters.openvino_ir.rules.attention._heads_of_batch_one", lambda *a: (None,) * 3)
    four_d = import_ir(model)
    np.testing.assert_array_equal(ours, ort_session(four_d, optimize=False).run(None, feeds)[0])
    np.testing.assert_array_equal(got, ort_session(four_d).run(None, feeds)[0])


def _int8_attention(smoothing: bool):
    """nncf's INT8 attention block: quantized Q and K ([1, heads, L, D]), V projected from quantized x by int8
    weights then split into heads (Reshape -> Transpose [0, 2, 1, 3], float: nncf leaves V and the
    probabilities unquantized), the heads merged back; smoothing: nncf's smooth-quant Multiply by a positive
    per-channel constant after the merge."""
    heads, length, size = 2, 8, 16
    rng = np.random.default_rng(7)
    x = op.parameter([1, length, heads * size], ov.Type.f32, name="x")
    weights = op.multiply(op.convert(op.constant(unsaturating_int8_weights(rng, (heads * size, heads * size))),
                                     ov.Type.f32), op.constant(np.float32(1 / 64)))
    value = op.matmul(_fq(x, STEPS["q"]), weights, False, False)
    order = op.constant(np.array([0, 2, 1, 3], np.int64))
    value = op.transpose(op.reshape(value, op.constant(np.array([0, 0, heads, size], np.int64)), True), order)
    q, k = (op.parameter([1, heads, length, size], ov.Type.f32, name=n) for n in "qk")
    attention = op.scaled_dot_product_attention(_fq(q, STEPS["q"]), _fq(k, STEPS["k"]), value, causal=False)
    out = op.reshape(op.transpose(attention, order), op.constant(np.array([0, 0, heads * size], np.int64)), True)
    if smoothing:
        out = op.multiply(out, op.constant(np.linspace(0.5, 4, heads * size, dtype=np.float32).reshape(1, 1, -1)))
    feeds = {n: np.clip(rng.standard_normal((1, heads, length, size)), -UNSATURATING_LEVEL * step,
                        UNSATURATING_LEVEL * step).astype(np.float32) for n, step in STEPS.items()}
    feeds["x"] = np.clip(rng.standard_normal((1, length, heads * size)), -2, 2).astype(np.float32)
    return ov.Model([out], [q, k, x]), feeds


@pytest.mark.parametrize("smoothing", [False, True])
def test_float_value_heads_move_inside_the_matmul_with_quantized_scores(tmp_path, monkeypatch, smoothing):
    """INT8 models: Q and K quantized keep the IR's 4-D form (integer matmul, which takes no transposed
    operand), the float V of batch 1 is read as [L, 1, heads, D] and onnxruntime folds its head Transpose into
    FusedMatMul: one Transpose fewer than the IR's form, the values bit for bit the same, OpenVINO's up to
    summation order; nncf's smooth-quant Multiply after the merge is still folded into V's weight scales."""
    model, feeds = _int8_attention(smoothing)
    onnx_model = import_ir(model)
    assert "Mul" not in op_types(onnx_model)  # (the scale 1/4 in Q's dequantization; the smoothing in V's weights)
    optimized = op_types(ort_optimized(onnx_model, tmp_path / "new.onnx")[1])
    got = ort_session(onnx_model).run(None, feeds)[0]
    monkeypatch.setattr("converters.openvino_ir.rules.attention._heads_of_batch_one", lambda *a: (None,) * 3)
    four_d = import_ir(model)
    assert "Mul" not in op_types(four_d)
    before = op_types(ort_optimized(four_d, tmp_path / "old.onnx")[1])
    assert "MatMulIntegerToFloat" in optimized and "FusedMatMul" in optimized and "FusedMatMul" not in before
    assert optimized.count("Transpose") == before.count("Transpose") - 1 == 2, (optimized, before)
    np.testing.assert_array_equal(got, ort_session(four_d).run(None, feeds)[0])
    want = ov.Core().compile_model(model, "CPU", CONFIG)(feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
