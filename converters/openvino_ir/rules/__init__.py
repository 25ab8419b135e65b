"""Import rules, grouped by kind of op. Importing this package registers them all."""
from . import dialect, elementwise, io, nn, reduce, tensor  # noqa: F401
