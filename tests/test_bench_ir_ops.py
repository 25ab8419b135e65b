"""benchmarks/ir_ops.py runs end to end on tiny shapes: every row agrees with OpenVINO or is a listed refusal
(no timing assertions)."""
from __future__ import annotations

import pytest

pytest.importorskip("openvino")

pytestmark = [pytest.mark.openvino, pytest.mark.filterwarnings("ignore")]


def test_ir_ops_tiny(capsys):
    from benchmarks import ir_ops

    assert ir_ops.main(["--tiny"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 + len(ir_ops.cases(True))
    timed = [row for row in rows[1:] if "refused" not in row]
    assert {row.split("|")[1].split("-")[0].strip() for row in timed} >= {"LSTMSequence", "GRUSequence", "STFT", "RDFT"}
    assert all(row.rstrip(" |").endswith("yes") for row in timed)
