"""Import rules, grouped by kind of op. Importing this package registers them all."""
from . import (  # noqa: F401
    attention, control_flow, dialect, elementwise, io, layout, nn, quantization, reduce, resample,
    selection, tensor
)
