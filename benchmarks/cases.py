"""The benchmark cases: one row of the table each, data-driven (op, attributes, input builder)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

SEU_REDUCTIONS = ("none", "sum", "prod", "min", "max", "mean")
FULL_SCATTER_UPDATE_BATCH = 250  # the seed's batch is 1000: its updates alone would be 1.5 GB


@dataclass(frozen=True)
class Case:
    id: str                      # stable key, e.g. "seu-sum-init1"
    op: str                      # dialect op_type
    label: str                   # what the table shows
    inputs: Callable[[np.random.Generator], dict]  # port name -> array (axis/axes become constants)
    attributes: dict = field(default_factory=dict)
    stock: bool = False          # also time stock onnxruntime-extensions marshaling (slow: tolist)
    note: str = ""
    scales_from: str = ""        # id of the same case on smaller data: predicts which columns are too slow


def _shape(shape) -> str:
    return "x".join(map(str, shape))


def _seu(data_shape, index_shape):
    def build(rng):
        return dict(data=rng.standard_normal(data_shape, dtype=np.float32),
                    indices=rng.integers(0, data_shape[0], index_shape).astype(np.int64),
                    updates=rng.standard_normal(index_shape, dtype=np.float32),
                    axis=np.array(0, np.int64))
    return build


def _scatter_update(data_shape, index_shape):
    updates_shape = data_shape[:1] + index_shape + data_shape[2:]

    def build(rng):
        return dict(data=rng.standard_normal(data_shape, dtype=np.float32),
                    indices=rng.integers(0, data_shape[1], index_shape).astype(np.int64),
                    updates=rng.standard_normal(updates_shape, dtype=np.float32),
                    axis=np.array(1, np.int64))
    return build


def _reduce_l2(shape):
    def build(rng):
        return dict(data=rng.standard_normal(shape, dtype=np.float32), axes=np.array([2, 3], np.int64))
    return build


def _unique_flat(size):
    def build(rng):
        return dict(data=rng.standard_normal(size, dtype=np.float32))
    return build


def _voxels(count, grid):
    """Integer voxel coordinates of `count` points in a grid (x, y, z extents): many repeated cells."""
    def build(rng):
        coords = np.stack([rng.integers(0, extent, count) for extent in grid], axis=1).astype(np.int32)
        return dict(data=coords, axis=np.array(0, np.int64))
    return build


#: Shapes per mode: full (the issue's seed and large shapes), quick (seconds), tiny (checks the code runs).
SHAPES = {
    "full": dict(seu=((1000, 256, 7, 7), (125, 20, 7, 6)),
                 scatter_update=((FULL_SCATTER_UPDATE_BATCH, 256, 10, 15), (125, 20)),
                 reduce_l2=((6, 12, 10, 24), (64, 256, 56, 56)), unique=(1_000_000, 10_000_000),
                 voxels=1_000_000),
    "quick": dict(seu=((100, 32, 7, 7), (25, 4, 7, 6)), scatter_update=((10, 64, 10, 15), (25, 4)),
                  reduce_l2=((6, 12, 10, 24), (8, 64, 28, 28)), unique=(10_000, 100_000), voxels=30_000),
    "tiny": dict(seu=((6, 4, 3, 2), (9, 2, 3, 2)), scatter_update=((2, 6, 2, 3), (3, 2)),
                 reduce_l2=((2, 3, 4, 5), (3, 4, 5, 6)), unique=(50, 200), voxels=60),
}


def all_cases(mode: str = "full") -> list[Case]:
    shapes = SHAPES[mode]
    seu_data, seu_index = shapes["seu"]
    su_data, su_index = shapes["scatter_update"]
    l2_shapes, flat_sizes, voxel_count = shapes["reduce_l2"], shapes["unique"], shapes["voxels"]
    voxel_grid = (128, 128, 32)
    cases = []
    for reduction in SEU_REDUCTIONS:
        for init in (1, 0):
            cases.append(Case(
                f"seu-{reduction}-init{init}", "ScatterElementsUpdate",
                f"{reduction}, use_init_val={init}: data {_shape(seu_data)}, idx {_shape(seu_index)}",
                _seu(seu_data, seu_index), {"reduction": reduction, "use_init_val": init},
                stock=init == 1 and reduction in ("none", "sum")))
    batch_note = (f"batch {su_data[0]} instead of the seed's 1000: its updates would be 1.5 GB"
                  if mode == "full" else "")
    cases.append(Case("scatter-update", "ScatterUpdate",
                      f"axis 1: data {_shape(su_data)}, idx {_shape(su_index)}",
                      _scatter_update(su_data, su_index), stock=True, note=batch_note))
    for name, shape in zip(("seed", "large"), l2_shapes):
        cases.append(Case(f"reduce-l2-{name}", "ReduceL2", f"axes [2,3]: {_shape(shape)}", _reduce_l2(shape),
                          {"keep_dims": 0}, stock=True))
    for size in flat_sizes:
        count = f"{size / 1e6:g}M" if size >= 100_000 else str(size)
        smaller = cases[-1].id if cases[-1].op == "Unique" else ""
        cases.append(Case(f"unique-{count}", "Unique", f"flat: {count} float32 (normal, ~all distinct)",
                          _unique_flat(size), {"sorted": 1}, stock=not smaller, scales_from=smaller))
    cases.append(Case("unique-voxels", "Unique",
                      f"axis 0: {voxel_count:,} x 3 int32 voxels in a {_shape(voxel_grid)} grid",
                      _voxels(voxel_count, voxel_grid), {"sorted": 1}, stock=True))
    return cases
