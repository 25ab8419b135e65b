"""Comparing a backend's outputs with the contract's: exact, except where accumulation order may differ.

Integers and bools compare bit for bit. Floats compare exactly too (NaN equals NaN whatever its payload;
-0.0 and 0.0 differ, and the difference says so), with exceptions: ReduceL2 of floats, whose sum of
squares every runtime accumulates in its own order (pairwise, blocked, vectorised). There the allowance is
the error bound of that sum: n terms of relative error u each, halved by the square root, plus the final
roundings — `tolerance_ulps()`. Units whose sums may cancel (DeformableConvolution) declare an absolute
error bound from the sums' length and the terms' magnitudes instead — `tolerance_bound()`.

Whole models (model cases) also run standard float ops (MatMul, Softmax, ...) that every runtime
accumulates in its own order: their float outputs may differ by |Δ| <= K·ε·max|contract output| (K =
MODEL_TOLERANCE unless the caller says otherwise; 0 makes them exact). Integer outputs stay exact.

The comparer itself is the project's one output comparer, onnx_bridge.comparison.
"""
from __future__ import annotations

from ..comparison import (MODEL_TOLERANCE, Difference, compare, compare_arrays, largest_gap, scalar_text,
                          tolerance_bound, tolerance_ulps, ulp_distance)

__all__ = ["MODEL_TOLERANCE", "Difference", "compare", "compare_arrays", "largest_gap", "scalar_text",
           "tolerance_bound", "tolerance_ulps", "ulp_distance"]
