"""dequantized_weights: the QDQ form's graph passes, in the order they run (one line each: what the pass does;
each is documented in its module). The importer runs two more on the same GraphIndex after these:
quantized_frames_as_channels (conv3d.py: a 3-D integer convolution as 2-D ones) and
rules/attention.py's scores_scale_into_dequantize."""
from __future__ import annotations

from .classifiers import _dequantized_classifiers_as_3d
from .data_movement import _integer_data_movement
from .depthwise import _depthwise_per_tensor, _float_weights_for_per_channel_inputs, _redundant_clip_scale_into_conv
from .graph import GraphIndex, _Graph, _static_shapes
from .grouped_conv import _wider_groups
from .pointwise import _patches_as_pointwise
from .smoothing import _smoothing_into_value_weights
from .space_to_depth import _space_to_depth
from .weights import _conv_bias, _weight_chains_as_dequantize


def dequantized_weights(index: GraphIndex, outputs=(), inputs=(), release=None) -> int:
    """In a model with QuantizeLinear (activations quantized), rewrite nncf's weight decompression
    Cast(int8/uint8 constant) [-> Sub(zero point)] -> Mul(float32 scale) [-> Transpose/Reshape to a constant
    shape], read by a Conv/MatMul/Gemm weight, into DequantizeLinear(int8 initializer, scale, zero point, axis):
    the same values (DequantizeLinear computes (q - zero point) * scale as the chain does), in the form
    onnxruntime's QDQ fusions run as integer kernels (left as float, onnxruntime folds the chain and
    re-quantizes the weights per tensor itself: less precise). A 1x1 convolution whose output is not quantized
    becomes a MatMul over channels (_pointwise_as_matmul), a patch embedding one after SpaceToDepth
    (_patches_as_pointwise). Edits `index`'s nodes (ONNX NodeProtos, in order) and initializers
    ((name, ONNX type, array) list) in place; returns how many weights were rewritten.
    Values in `outputs` (the graph's outputs) or read by subgraphs are kept; `inputs` (the graph's input
    ValueInfoProtos) give the static shapes _space_to_depth needs. `release` (an array -> None, or None) is
    called with each weight copied into a new layout (a MatMul's transposed weights): the importer drops
    the memory-mapped pages of OpenVINO's constant there, which the rewritten model no longer reads."""
    nodes = index.nodes
    if not any(n.op_type == "QuantizeLinear" for n in nodes):
        return 0
    keep, shapes = set(outputs) | index.outer_reads(), _static_shapes(inputs)
    _patches_as_pointwise(index, keep, shapes)  # ViT patch embedding: SpaceToDepth, then a 1x1 convolution
    _depthwise_per_tensor(index, keep)  # a depthwise input's per-channel scales moved into its weights
    _redundant_clip_scale_into_conv(index, keep)  # (FOLD_REDUNDANT_CLIP, off) ReLU6 + Div into the Conv's scales
    _float_weights_for_per_channel_inputs(index)  # float weights where the input is quantized per channel
    _integer_data_movement(index, keep)  # Concat / Split / MaxPool (and reshapes after) on the uint8 values
    rewritten = _weight_chains_as_dequantize(index, keep, release)  # nncf's weights as DequantizeLinear (int8)
    _smoothing_into_value_weights(index, keep)  # smooth-quant Mul after attention into V's weight scales
    _conv_bias(index, keep)  # Conv -> Add(per-channel constant) as the Conv's bias
    _dequantized_classifiers_as_3d(_Graph(index, keep))  # a 2-D classifier MatMul + Add in 3-D (integer MatMul)
    _space_to_depth(index, keep, shapes)  # a strided stem convolution of few channels after SpaceToDepth
    _wider_groups(index, keep)  # narrow groups of a grouped convolution merged (prime counts padded first)
    return rewritten
