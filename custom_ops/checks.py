"""Input and attribute checks raising OpError (the public name of custom_ops._checks for the layers above:
converters' lowering rules check what the kernels check, with the same messages)."""
from ._checks import (as_array, choice, data_type, flag, index_range, integer_type, normalized_indices,
                      scalar_axis)

__all__ = ["as_array", "choice", "data_type", "flag", "index_range", "integer_type", "normalized_indices",
           "scalar_axis"]
