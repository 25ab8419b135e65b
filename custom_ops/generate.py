"""Seeded test values of the dialect's element types (small exact numbers, optionally type extremes and
NaN/-0.0/inf): the public name of the generators in custom_ops.ops._generate that the units' cases use, for
the layers above (the conformance corpus draws model inputs with them)."""
from .ops._generate import shape, values

__all__ = ["shape", "values"]
