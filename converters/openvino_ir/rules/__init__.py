"""Import rules, grouped by kind of op. Importing this package registers them all."""
from . import (  # noqa: F401
    _spatial, activation, attention, blocks, color, control_flow, conv, dialect, elementwise, embedding, generate,
    grouped, io, layout, nn, norm, numeric, pool, quantization, reduce, resample, sampling, search, selection,
    sparse, tensor, yolo
)
