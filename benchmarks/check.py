"""Is a column's result the dialect op's result? Compared with the kernel's outputs."""
from __future__ import annotations

import numpy as np

from onnx_bridge.comparison import EXACT, measure

ROUNDING = 1e-5  # float differences up to this relative size: another summation order, not other semantics


def compare(got, expected) -> str:
    """'exact'; 'rounding: ...' (floats within ROUNDING); otherwise what differs.

    Outputs a column gives as None (torch.unique has no first indices) are not compared.
    """
    got = list(got)
    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    problems, rounding = [], []
    for index, (a, b) in enumerate(zip(got, expected)):
        if a is None:
            continue
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            problems.append(f"output {index}: shape {a.shape}, expected {b.shape}")
            continue
        if a.dtype != b.dtype:
            if np.array_equal(a, b, equal_nan=b.dtype.kind == "f"):
                continue
            problems.append(f"output {index}: {a.dtype}, expected {b.dtype}")
            continue
        metrics = measure(b, a, tolerance=EXACT)
        if metrics.agree:
            continue
        detail = f"output {index}: {metrics.count} of {b.size} elements differ"
        if b.dtype.kind == "f":
            detail += f", max relative difference {metrics.max_rel:.1e}"
            if metrics.max_rel <= ROUNDING:
                rounding.append(detail)
                continue
        problems.append(detail)
    if problems:
        return "; ".join(problems)
    return "rounding: " + "; ".join(rounding) if rounding else "exact"
