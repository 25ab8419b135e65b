"""Dialect -> standard ONNX rules, one module per dialect op (registered in converters.registry.LOWERING)."""
from . import reduce_l2, scatter_elements_update, scatter_update, unique  # noqa: F401
