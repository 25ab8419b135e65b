"""Import rules, grouped by kind of op. Importing this package registers them all."""
from . import activation, conv, dialect, elementwise, io, nn, norm, pool, reduce, tensor  # noqa: F401
