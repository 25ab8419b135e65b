"""Import rules, grouped by kind of op. Importing this package registers them all."""
from . import (  # noqa: F401
    _spatial, activation, attention, control_flow, conv, dialect, elementwise, io, layout, nn,
    norm, pool, quantization, reduce, resample, selection, state, tensor
)
