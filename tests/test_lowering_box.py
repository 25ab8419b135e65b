"""The one-data-pass lowerings, differentially against the kernels on seeded generated cases, bit for bit.

ScatterElementsUpdate mean and use_init_val=0 do their per-position work in the box the indices reach
(indices' shape with the axis dimension widened to data's) and copy data once; ScatterUpdate gathers one block
per written row. The shapes here are chosen so that the box is smaller than data on some dimension (what the
gallery and converter tests rarely have), with duplicates, negative indices, NaN/-0.0/inf, static and symbolic
shapes. The kernels are the contract (and what the previous lowerings reproduced bit for bit).
"""
import numpy as np
import pytest

import oracle
from custom_ops._types import BFLOAT16, is_bool, type_name
from test_lowering_harness import dialect_node, lower, model_of, run_dialect, run_standard

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SEU_TYPES = [np.float32, np.float16, BFLOAT16, np.float64, np.int8, np.uint16, np.int32, np.bool_]
FORMS = [(r, u) for r in ("sum", "prod", "min", "max", "mean") for u in (0, 1) if r == "mean" or u == 0]
PARAMS = [(t, r, u) for t in SEU_TYPES for r, u in FORMS if not (is_bool(t) and r == "mean")]


def _values(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if is_bool(dtype):
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -60), min(info.max, 60), shape, endpoint=True).astype(dtype)
    values = (rng.standard_normal(shape) * 4).astype(np.float32)
    flat = values.reshape(-1)
    for special, share in ((np.nan, 0.04), (-0.0, 0.04), (np.inf, 0.02), (-np.inf, 0.02)):
        flat[rng.random(flat.size) < share] = special
    return values.astype(dtype)


def _seu_case(rng, dtype):
    """data of rank 1-4, indices smaller than data on the other dimensions (mostly), axis anywhere."""
    rank = int(rng.integers(1, 5))
    shape = tuple(int(n) for n in rng.integers(1, 6, rank))
    axis = int(rng.integers(-rank, rank))
    index_shape = tuple(int(rng.integers(1, 7)) if d == axis % rank else int(rng.integers(1, n + 1))
                        for d, n in enumerate(shape))
    size = shape[axis]
    indices = rng.integers(-size, size, index_shape)
    return {"data": _values(rng, dtype, shape), "idx": indices, "upd": _values(rng, dtype, index_shape),
            "axis": np.int64(axis)}


def _run_both(node, values, dtype, symbolic):
    model, feeds = model_of([node], values, constants=("axis",), outputs={"out": (dtype, None)},
                            symbolic=symbolic)
    lowered, report = lower(model)
    assert [e.action for e in report.nodes] == ["decomposed"], report.to_table()
    return run_standard(lowered, feeds), run_dialect(model, feeds)


@pytest.mark.parametrize("dtype, reduction, use_init_val", PARAMS,
                         ids=[f"{type_name(t)}-{r}-init{u}" for t, r, u in PARAMS])
def test_box_lowering_equals_kernel(dtype, reduction, use_init_val):
    rng = np.random.default_rng([SEU_TYPES.index(dtype), len(reduction), use_init_val])
    smaller = 0
    for number in range(8):
        values = _seu_case(rng, dtype)
        smaller += values["idx"].shape != values["data"].shape
        node = dialect_node("ScatterElementsUpdate", ["data", "idx", "upd", "axis"], ["out"], reduction=reduction,
                            use_init_val=use_init_val)
        got, want = _run_both(node, values, dtype, symbolic=number % 3 == 2)
        oracle.assert_identical(tuple(got), tuple(want), f"case {number}: {values}")
    assert smaller >= 4  # the box is smaller than data in most cases


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("symbolic", [False, True])
def test_scatter_update_one_block_per_written_row(axis, symbolic):
    """Duplicates (the last wins) with each written row gathered once: no Gather over all update rows."""
    rng = np.random.default_rng([axis, symbolic])
    for number in range(6):
        shape = (3, 5, 4)[:max(axis + 1, 2)] + (2,) * (number % 2)
        index_shape = (int(rng.integers(0, 9)),) if number % 3 else (2, 3)
        indices = rng.integers(0, shape[axis], index_shape)
        values = {"data": _values(rng, np.float32, shape), "idx": indices,
                  "upd": _values(rng, np.float32, shape[:axis] + index_shape + shape[axis + 1:]),
                  "axis": np.int64(axis)}
        node = dialect_node("ScatterUpdate", ["data", "idx", "upd", "axis"], ["out"])
        got, want = _run_both(node, values, np.float32, symbolic)
        oracle.assert_identical(tuple(got), tuple(want), f"case {number}: {values}")


def test_scatter_update_gathers_blocks_only_at_written_rows():
    values = {"data": np.zeros((2, 3, 4), np.float32), "idx": np.array([2, 0, 2, 2]),
              "upd": np.arange(32, dtype=np.float32).reshape(2, 4, 4), "axis": np.int64(1)}
    node = dialect_node("ScatterUpdate", ["data", "idx", "upd", "axis"], ["out"])
    model, _ = model_of([node], values, constants=("axis",), outputs={"out": (np.float32, None)})
    lowered, _ = lower(model)
    producers = {out: n for n in lowered.graph.node for out in n.output}
    gathers = [n for n in lowered.graph.node if n.op_type == "Gather" and n.input[0] != "idx"]
    row_gather = [n for n in gathers if producers.get(n.input[0]) is not None
                  and producers[n.input[0]].op_type == "Reshape" and "upd" in producers[n.input[0]].input]
    assert len(row_gather) == 1
    source = producers[row_gather[0].input[1]]  # Gather(last, written rows)
    assert source.op_type == "Gather" and producers[source.input[1]].op_type == "Reshape" and \
        producers[producers[source.input[1]].input[0]].op_type == "NonZero"
