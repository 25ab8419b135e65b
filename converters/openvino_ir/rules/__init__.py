"""Import rules, grouped by kind of op. Importing this package registers them all."""
from . import control_flow, dialect, elementwise, io, nn, quantization, reduce, tensor  # noqa: F401
