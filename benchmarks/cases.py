"""The benchmark cases of the column table: the cases of every unit whose benchmark piece is in it
(custom_ops.unit.Benchmark with table=True), one row each, in op order."""
from __future__ import annotations

import custom_ops
from custom_ops.unit import BenchmarkCase as Case, present  # noqa: F401  (Case: the row type)



def table_units() -> list:
    """The units whose benchmark piece is a row group of the column table."""
    return [unit for unit in custom_ops.units() if present(unit.benchmark) and unit.benchmark.table]


def all_cases(mode: str = "full") -> list[Case]:
    return [case for unit in table_units() for case in unit.benchmark.all_cases(unit.op_type, mode)]
