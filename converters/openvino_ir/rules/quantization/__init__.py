"""INT8 and compressed models: the FakeQuantize-1 rule, weight decompression, and the graph passes that put the
QDQ form into the shapes onnxruntime runs as integer kernels. One module per job:

- fake_quantize_rule.py  the FakeQuantize-1 rule: the exact form, or QuantizeLinear -> DequantizeLinear
- compressed_weights.py  weight decompression subgraphs (f32 / DequantizeLinear), MatMulNBits, GatherBlockQuantized
- pipeline.py            dequantized_weights: the QDQ passes below, in the order they run
- graph.py               what the passes share: GraphIndex, _Graph, _Weights, lookups along the graph
- weights.py             nncf's weight chains as DequantizeLinear, a Conv's bias Add into the Conv
- depthwise.py           depthwise convolutions' per-channel input scales
- data_movement.py       Concat / Split / MaxPool of quantized data on the uint8 values
- pointwise.py           1x1 convolutions (and patch embeddings) as channels-last MatMulIntegerToFloat
- classifiers.py         classifier heads as 3-D integer MatMuls
- smoothing.py           nncf's smooth-quant Multiply after attention into the value weights
- space_to_depth.py      strided stem convolutions on SpaceToDepth
- grouped_conv.py        narrow groups of grouped convolutions merged
- conv3d.py              quantized 3-D convolutions as 2-D ones per output frame (run by the importer)

The names other modules import are re-exported here. The switches and tuning constants (FOLD_*, GROUP_WIDTH,
MAX_DENSE_GROUPS, SPACE_TO_DEPTH_CHANNELS, CHANNEL_GROUP, ZERO_POINT_TOLERANCE) are not: a pass reads its own
module's, so that is where to set them (e.g. monkeypatch.setattr(grouped_conv, "GROUP_WIDTH", 2))."""
from .compressed_weights import (CHANGED_BY_OPSET_21, MICROSOFT, MIN_OPSET_4BIT, decompressed_in_f32,
                                 gather_block_quantized, matmul_nbits)
from .conv3d import quantized_frames_as_channels
from .fake_quantize_rule import _qdq_parameters, fake_quantize
from .graph import NUMPY_CODES, GraphIndex, _Graph, _index, _per_axis, _quantized_after
from .pipeline import dequantized_weights

__all__ = ["CHANGED_BY_OPSET_21", "MICROSOFT", "MIN_OPSET_4BIT", "NUMPY_CODES", "GraphIndex", "decompressed_in_f32",
           "dequantized_weights", "fake_quantize", "gather_block_quantized", "matmul_nbits",
           "quantized_frames_as_channels",
           # (private names tests and helpers import from here)
           "_Graph", "_index", "_per_axis", "_qdq_parameters", "_quantized_after"]
