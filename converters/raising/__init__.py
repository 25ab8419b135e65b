"""Standard ONNX -> dialect rules, one module per standard op (registered in converters.registry.RAISING)."""
from . import reduce_l2, scatter_elements, unique  # noqa: F401
