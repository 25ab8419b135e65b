"""A classifier head (2-D MatMul by int8 weights + bias Add) written in 3-D, where onnxruntime runs it on integers
rather than as a float Gemm."""
from __future__ import annotations

import numpy as np

from .graph import _Graph, _NodeEdits, _Weights, _dequantize_node, _dequantized_input, _rank


def _classifier_as_integer_matmul(graph: _Graph, weights: _Weights, edits: _NodeEdits) -> bool:
    """A 2-D MatMul of quantized data (also across a flatten) by nncf's int8 weights + a bias Add (a
    classifier head) -> Unsqueeze to 3-D, MatMul by DequantizeLinear(int8 weights), Add of the bias as
    [1, 1, N], Squeeze back. Left 2-D, onnxruntime fuses MatMul + Add into a float Gemm before its QDQ
    fusions (dequantizing the weights on every call, or, given float weights, reading 4x the bytes); in 3-D
    it runs MatMulIntegerToFloat: exact integer sums times the scales, then the bias in float. The node list's
    edits go to `edits`. Returns False (nothing changed) where the MatMul is not such a head."""
    from onnx import helper

    matmul, q = weights.reader, weights.q
    if matmul.op_type != "MatMul" or q.ndim != 2 or q.dtype != np.int8 or matmul.output[0] in graph.keep \
            or _rank(matmul.input[0], graph.producer, graph.values) != 2:
        return False
    data = _dequantized_input(matmul.input[0], graph.producer)
    add = graph.only_reader(matmul.output[0])
    if data is None or graph.values.get(data.input[1], np.ones(2)).size != 1 or add is None \
            or add.op_type != "Add":
        return False
    other = add.input[1] if add.input[0] == matmul.output[0] else add.input[0]
    bias = graph.values.get(other)
    if bias is None or bias.dtype != np.float32 or bias.shape not in ((q.shape[1],), (1, q.shape[1])):
        return False
    found = weights.per_axis()
    if found is None or found[2] not in (None, 1):
        return False
    scales, zeros, axis = found
    stem = weights.mul.name or weights.value
    names = [graph.add(f"{stem}/int8_weights", q), graph.add(f"{stem}/scale", scales),
             graph.add(f"{stem}/zero_point", zeros), graph.add(f"{stem}/outer_axis", np.array([0], np.int64))]
    edits.replace(weights.mul, [_dequantize_node(names[:3], weights.value, f"{stem}/DequantizeLinear", axis)])
    lifted, result = f"{stem}/input_3d", add.output[0]
    edits.replace(matmul, [helper.make_node("Unsqueeze", [matmul.input[0], names[3]], [lifted], name=lifted),
                           matmul])
    matmul.input[0] = lifted
    add.input[:] = [matmul.output[0], graph.add(f"{stem}/bias_3d", bias.reshape(1, 1, -1))]
    add.output[0] = f"{stem}/output_3d"
    edits.replace(add, [add, helper.make_node("Squeeze", [add.output[0], names[3]], [result],
                                              name=f"{stem}/output_2d")])
    edits.rewire(matmul, add)
    return True


def _dequantized_classifiers_as_3d(graph: _Graph) -> None:
    """A 2-D MatMul of quantized data by a DequantizeLinear of an int8 initializer [K, N] (weights nncf
    FakeQuantized rather than compressed: the FakeQuantize rule wrote them so) + a bias Add -> the same 3-D form
    as _classifier_as_integer_matmul (Unsqueeze, MatMul, Add of the bias as [1, 1, N], Squeeze): left 2-D,
    onnxruntime makes a float Gemm of it and dequantizes the weights on every call (shufflenet's classifier
    after its global mean: 29% of the model's time)."""
    from onnx import helper

    for matmul in [n for n in graph.nodes if n.op_type == "MatMul"]:
        weights = graph.producer.get(matmul.input[1])
        if weights is None or weights.op_type != "DequantizeLinear" or matmul.output[0] in graph.keep \
                or graph.values.get(weights.input[0], np.zeros((0,))).ndim != 2 \
                or graph.values[weights.input[0]].dtype != np.int8 \
                or _rank(matmul.input[0], graph.producer, graph.values) != 2:
            continue
        columns = graph.values[weights.input[0]].shape[1]
        data = _dequantized_input(matmul.input[0], graph.producer)
        add = graph.only_reader(matmul.output[0])
        if data is None or graph.values.get(data.input[1], np.ones(2)).size != 1 or add is None \
                or add.op_type != "Add" or any(a.name == "axis" and a.i not in (1, -1) for a in weights.attribute):
            continue
        other = add.input[1] if add.input[0] == matmul.output[0] else add.input[0]
        bias = graph.values.get(other)
        if bias is None or bias.dtype != np.float32 or bias.shape not in ((columns,), (1, columns)):
            continue
        stem = matmul.name or matmul.output[0]
        outer, lifted, result = graph.add(f"{stem}/outer_axis", np.array([0], np.int64)), f"{stem}/input_3d", \
            add.output[0]
        graph.nodes.insert(graph.nodes.index(matmul), helper.make_node(
            "Unsqueeze", [matmul.input[0], outer], [lifted], name=lifted))
        matmul.input[0] = lifted
        add.input[:] = [matmul.output[0], graph.add(f"{stem}/bias_3d", bias.reshape(1, 1, -1))]
        add.output[0] = f"{stem}/output_3d"
        graph.nodes.insert(graph.nodes.index(add) + 1, helper.make_node(
            "Squeeze", [add.output[0], outer], [result], name=f"{stem}/output_2d"))
        graph.index.edited(rewired=(matmul, add))  # (this loop keeps reading its snapshot)
