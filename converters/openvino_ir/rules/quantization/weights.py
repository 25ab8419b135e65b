"""nncf's weight chains Cast(int8) [- zero point] * scale as DequantizeLinear where onnxruntime's QDQ fusions run
an integer kernel (_weight_chains_as_dequantize), and a quantized Conv's bias Add taken into the Conv
(_conv_bias)."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .classifiers import _classifier_as_integer_matmul
from .graph import (GraphIndex, _Graph, _NodeEdits, _dequantize_node, _dequantized_input, _quantized_after, _rank,
                    _weight_chain)
from .pointwise import _pointwise_as_matmul


def _weight_chains_as_dequantize(index: GraphIndex, keep: set, release=None) -> int:
    """dequantized_weights' rewrite of each weight chain (its doc): DequantizeLinear where onnxruntime fuses it
    into an integer kernel, a classifier head in 3-D (_classifier_as_integer_matmul), a 1x1 convolution whose
    output is not quantized as MatMulIntegerToFloat (_pointwise_as_matmul). Returns how many were rewritten."""
    nodes = index.nodes
    graph = _Graph(index, keep, release)
    rewritten, edits = 0, _NodeEdits()
    for mul in [n for n in nodes if n.op_type == "Mul"]:
        weights = _weight_chain(graph, mul)
        if weights is not None and _classifier_as_integer_matmul(graph, weights, edits):
            edits.remove(*weights.tail)
            rewritten += 1
            continue
        if weights is None or not (_integer_input(graph, weights.reader)
                                   or _flattened_input_without_bias(graph, weights.reader)):
            continue  # weights of a float (or per-channel quantized) input stay float: folded by onnxruntime
        reader = weights.reader
        if reader.op_type in ("Conv", "ConvTranspose") and not _quantized_after(reader, graph.readers, graph.values):
            # onnxruntime fuses DQ -> Conv -> Q only; a Conv not followed by a QuantizeLinear would
            # dequantize its weights on every run: left to onnxruntime's constant folding (exact f32), unless
            # it is a 1x1 convolution, which runs as an integer MatMul with a float output
            if _pointwise_as_matmul(graph, weights, edits):
                edits.remove(mul, *weights.tail)
                rewritten += 1
            continue
        if reader.op_type == "MatMul" and _rank(reader.input[0], graph.producer, graph.values) == 2 \
                and any(n.op_type == "Add" for n in graph.readers.get(reader.output[0], [])):
            # onnxruntime makes a float Gemm of a 2-D MatMul + Add before its QDQ fusions, and would
            # then dequantize the weights on every run: left to its constant folding (exact f32)
            continue
        found = weights.per_axis()
        if found is None:
            continue
        scales, zeros, axis = found
        stem = mul.name or weights.value
        names = [graph.add(f"{stem}/int8_weights", weights.q), graph.add(f"{stem}/scale", scales),
                 graph.add(f"{stem}/zero_point", zeros)]
        edits.replace(mul, [_dequantize_node(names, weights.value, f"{stem}/DequantizeLinear", axis)])
        edits.remove(*weights.tail)
        rewritten += 1
    edits.made_in(index)
    return rewritten


def _integer_input(graph: _Graph, reader) -> bool:
    """Whether the data input of `reader` is a per-tensor DequantizeLinear (a Conv's possibly across data
    movement; a MatMul's directly: after a Reshape of unknown rank it may be the 2-D MatMul + bias Add that
    onnxruntime turns into a float Gemm, which would dequantize the weights on every call)."""
    if reader.op_type in ("Conv", "ConvTranspose"):
        data = _dequantized_input(reader.input[0], graph.producer)
    else:
        data = graph.producer.get(reader.input[0])
    return data is not None and data.op_type == "DequantizeLinear" \
        and graph.values.get(data.input[1], np.ones(2)).size == 1


def _flattened_input_without_bias(graph: _Graph, reader) -> bool:
    """Whether `reader` is a MatMul whose data input is a per-tensor DequantizeLinear moved by a Reshape
    (a classifier after a computed flatten) and whose output no Add reads: onnxruntime moves the
    DequantizeLinear across the Reshape and fuses MatMulIntegerToFloat (with a bias Add it would make a float
    Gemm first: _classifier_as_integer_matmul handles that form)."""
    if reader.op_type != "MatMul" or any(n.op_type == "Add" for n in graph.readers.get(reader.output[0], [])):
        return False
    data = _dequantized_input(reader.input[0], graph.producer)
    return data is not None and graph.values.get(data.input[1], np.ones(2)).size == 1


def _conv_bias(index: GraphIndex, keep: set) -> None:
    """Conv(DequantizeLinear x, DequantizeLinear w) -> Add(per-channel constant) becomes one Conv with that
    bias (as OpenVINO's Convolution + Add is written): onnxruntime's QDQ fusion wants DQ -> Conv -> Q, and
    fuses a float bias of a quantized Conv itself."""
    nodes, initializers = index.nodes, index.initializers
    if not any(n.op_type == "Conv" and len(n.input) == 2 for n in nodes):
        return
    values, producer, readers = index.lookups()
    edits = _NodeEdits()
    for conv in nodes:
        if conv.op_type != "Conv" or len(conv.input) != 2 or len(readers.get(conv.output[0], [])) != 1 \
                or conv.output[0] in keep:
            continue
        dq = [_dequantized_input(conv.input[0], producer), producer.get(conv.input[1])]
        if any(n is None or n.op_type != "DequantizeLinear" for n in dq):
            continue
        weights = values.get(dq[1].input[0])
        add = readers[conv.output[0]][0]
        if weights is None or add.op_type != "Add":
            continue
        other = add.input[1] if add.input[0] == conv.output[0] else add.input[0]
        bias = values.get(other)
        channels, rank = weights.shape[0], weights.ndim
        if bias is None or bias.dtype != np.float32 or bias.ndim > rank or other == conv.output[0]:
            continue
        shape = (1,) * (rank - bias.ndim) + bias.shape
        if any(d != 1 for i, d in enumerate(shape) if i != 1) or shape[1] not in (1, channels):
            continue
        name = f"{conv.name or conv.output[0]}/bias"
        initializers.append((name, TensorProto.FLOAT, np.ascontiguousarray(
            np.broadcast_to(bias.reshape(-1), (channels,)))))
        conv.input.append(name)
        conv.output[0] = add.output[0]
        edits.remove(add)
        edits.rewire(conv)
    edits.made_in(index)
