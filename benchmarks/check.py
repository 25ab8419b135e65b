"""Is a column's result the dialect op's result? Compared with the kernel's outputs."""
from __future__ import annotations

import numpy as np

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
        a = np.asarray(a)
        if a.shape != b.shape:
            problems.append(f"output {index}: shape {a.shape}, expected {b.shape}")
        elif np.array_equal(a, b, equal_nan=b.dtype.kind == "f"):
            continue
        elif a.dtype != b.dtype:
            problems.append(f"output {index}: {a.dtype}, expected {b.dtype}")
        else:
            detail = f"output {index}: {np.count_nonzero(a != b)} of {b.size} elements differ"
            if b.dtype.kind == "f":
                wide = a.astype(np.float64)
                scale = np.maximum(np.maximum(np.abs(wide), np.abs(b)), np.finfo(b.dtype).tiny)
                relative = float(np.nanmax(np.abs(wide - b) / scale))
                detail += f", max relative difference {relative:.1e}"
                if relative <= ROUNDING:
                    rounding.append(detail)
                    continue
            problems.append(detail)
    if problems:
        return "; ".join(problems)
    return "rounding: " + "; ".join(rounding) if rounding else "exact"
