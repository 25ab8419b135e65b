"""Generate the model gallery: small realistic models that use the OpenVINO-dialect ops.

Each model is built with OpenVINO's Python opset builders and saved as OpenVINO IR (<name>.xml/.bin);
converters.openvino_ir.import_ir turns that IR into dialect ONNX (<name>.onnx); <name>_inputs.npz holds
sample inputs. models/README.md documents every model's inputs and outputs.

    .venv/bin/python models/generate.py            # rewrite the gallery in models/
    .venv/bin/python models/generate.py --out DIR  # somewhere else
    .venv/bin/python models/generate.py pyg_gnn    # only the PyG GNN (exported from torch by onnx_bridge.torch)

The builders and sample_inputs() are also used by the tests (tests/test_models.py).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent
MAX_FILE_BYTES = 200_000  # files checked in must stay small


def _ops():
    from openvino import opset13
    return opset13


def _constant(ops, value, name):
    node = ops.constant(np.asarray(value))
    node.set_friendly_name(name)
    return node


def _named(node, name):
    node.set_friendly_name(name)
    return node


def _model(outputs: dict, parameters: list, name: str):
    import openvino as ov
    model = ov.Model([node for node in outputs.values()], parameters, name)
    for output, tensor_name in zip(model.outputs, outputs):
        output.get_tensor().set_names({tensor_name})
    # Number unnamed nodes per model (OpenVINO numbers them per process), so files do not depend on
    # what else the process built.
    for index, node in enumerate(model.get_ordered_ops()):
        if node.get_friendly_name() == node.get_name():
            node.set_friendly_name(f"{node.get_type_name()}_{index}")
    return model


# -- point-cloud voxel pooling ---------------------------------------------------------------------------

VOXEL_SIZE = 0.5
POINT_FEATURES = 4


def build_voxel_pooling():
    """Points -> voxel cells (Floor) -> Unique cells (axis 0) -> mean feature per cell -> feature norms."""
    import openvino as ov
    ops = _ops()
    points = ops.parameter(ov.PartialShape([-1, 3]), ov.Type.f32, name="points")
    features = ops.parameter(ov.PartialShape([-1, POINT_FEATURES]), ov.Type.f32, name="features")
    cell = _named(ops.convert(ops.floor(ops.divide(points, _constant(ops, np.float32(VOXEL_SIZE), "voxel_size"))),
                              "i32"), "voxel_cell")
    unique = _named(ops.unique(cell, _constant(ops, np.int64(0), "unique_axis"), True, "i64", "i64"),
                    "unique_voxels")
    coords, _, point_voxel, counts = unique.outputs()
    zero_index = _constant(ops, np.array([0], np.int64), "dim0")
    num_voxels = ops.gather(ops.shape_of(coords), zero_index, _constant(ops, np.int64(0), "gather_axis"))
    channels = ops.gather(ops.shape_of(features), _constant(ops, np.array([1], np.int64), "dim1"),
                          _constant(ops, np.int64(0), "gather_axis_1"))
    empty = _named(ops.broadcast(_constant(ops, np.float32(0), "zero"), ops.concat([num_voxels, channels], 0)),
                   "empty_voxels")
    target = _named(ops.broadcast(ops.unsqueeze(point_voxel, _constant(ops, np.int64(1), "unsqueeze_axis")),
                                  ops.shape_of(features)), "scatter_indices")
    pooled = _named(ops.scatter_elements_update(empty, target, features,
                                                _constant(ops, np.int64(0), "scatter_axis"), "mean", False),
                    "mean_pool")
    norms = _named(ops.reduce_l2(pooled, _constant(ops, np.array([1], np.int64), "norm_axes"), False),
                   "feature_norm")
    return _model({"voxel_coords": coords, "voxel_features": pooled.output(0), "points_per_voxel": counts,
                   "feature_norms": norms.output(0), "point_voxel": point_voxel},
                  [points, features], "voxel_pooling")


def sample_voxel_pooling(rng: np.random.Generator, points: int = 96) -> dict:
    # Coordinates in [-1, 1.5)^3: 5^3 cells of 0.5, so cells repeat and some are negative.
    return {"points": rng.uniform(-1.0, 1.5, (points, 3)).astype(np.float32),
            "features": rng.standard_normal((points, POINT_FEATURES)).astype(np.float32)}


# -- graph neural network neighbour aggregation ----------------------------------------------------------

NODE_FEATURES = 8
HIDDEN = 8


def build_gnn_aggregation():
    """One message-passing layer: gather source features along edges, aggregate them at the destination
    with sum, max and mean (ScatterElementsUpdate, use_init_val=0), then Linear + Relu."""
    import openvino as ov
    ops = _ops()
    x = ops.parameter(ov.PartialShape([-1, NODE_FEATURES]), ov.Type.f32, name="node_features")
    edges = ops.parameter(ov.PartialShape([2, -1]), ov.Type.i64, name="edge_index")
    axis0 = _constant(ops, np.int64(0), "axis0")
    src = _named(ops.gather(edges, _constant(ops, np.int64(0), "src_row"), axis0), "edge_source")
    dst = _named(ops.gather(edges, _constant(ops, np.int64(1), "dst_row"), axis0), "edge_target")
    messages = _named(ops.gather(x, src, axis0), "messages")
    empty = _named(ops.broadcast(_constant(ops, np.float32(0), "zero"), ops.shape_of(x)), "empty_nodes")
    target = _named(ops.broadcast(ops.unsqueeze(dst, _constant(ops, np.int64(1), "unsqueeze_axis")),
                                  ops.shape_of(messages)), "scatter_indices")
    aggregates = [_named(ops.scatter_elements_update(empty, target, messages, axis0, mode, False),
                         f"aggregate_{mode}") for mode in ("sum", "max", "mean")]
    aggregated = _named(ops.concat(aggregates, 1), "aggregated")
    rng = np.random.default_rng(20240611)
    weight = _constant(ops, (rng.standard_normal((4 * NODE_FEATURES, HIDDEN)) / 4).astype(np.float32), "weight")
    bias = _constant(ops, (rng.standard_normal(HIDDEN) / 10).astype(np.float32), "bias")
    hidden = ops.add(ops.matmul(ops.concat([x, aggregated], 1), weight, False, False), bias)
    embeddings = _named(ops.relu(hidden), "embeddings")
    return _model({"neighbour_aggregates": aggregated.output(0), "node_embeddings": embeddings.output(0)},
                  [x, edges], "gnn_aggregation")


def sample_gnn_aggregation(rng: np.random.Generator, nodes: int = 12, edges: int = 40) -> dict:
    # Targets avoid the last two nodes so that some nodes receive no message (they keep 0).
    source = rng.integers(0, nodes, edges)
    target = rng.integers(0, max(nodes - 2, 1), edges)
    return {"node_features": rng.standard_normal((nodes, NODE_FEATURES)).astype(np.float32),
            "edge_index": np.stack([source, target]).astype(np.int64)}


# -- KV-cache write ---------------------------------------------------------------------------------------

HEADS = 2
HEAD_DIM = 8


def build_kv_cache():
    """Decoder step: write new keys/values into the caches at `positions` (ScatterUpdate along the sequence
    axis), then attend from the new queries to every cached position up to their own."""
    import openvino as ov
    ops = _ops()
    cache_shape = ov.PartialShape([-1, HEADS, -1, HEAD_DIM])
    key_cache = ops.parameter(cache_shape, ov.Type.f32, name="key_cache")
    value_cache = ops.parameter(cache_shape, ov.Type.f32, name="value_cache")
    step_shape = ov.PartialShape([-1, HEADS, -1, HEAD_DIM])
    new_keys = ops.parameter(step_shape, ov.Type.f32, name="new_keys")
    new_values = ops.parameter(step_shape, ov.Type.f32, name="new_values")
    query = ops.parameter(step_shape, ov.Type.f32, name="query")
    positions = ops.parameter(ov.PartialShape([-1]), ov.Type.i64, name="positions")
    seq_axis = _constant(ops, np.int64(2), "sequence_axis")
    keys = _named(ops.scatter_update(key_cache, positions, new_keys, seq_axis), "write_keys")
    values = _named(ops.scatter_update(value_cache, positions, new_values, seq_axis), "write_values")
    scores = ops.multiply(ops.matmul(query, keys, False, True),
                          _constant(ops, np.float32(1 / np.sqrt(HEAD_DIM)), "scale"))
    cache_length = ops.gather(ops.shape_of(key_cache), seq_axis, _constant(ops, np.int64(0), "axis0"))
    key_positions = ops.range(_constant(ops, np.int64(0), "start"), cache_length,
                              _constant(ops, np.int64(1), "step"), "i64")
    visible = _named(ops.less_equal(ops.unsqueeze(key_positions, _constant(ops, np.int64(0), "row")),
                                    ops.unsqueeze(positions, _constant(ops, np.int64(1), "column"))),
                     "causal_mask")
    masked = ops.select(visible, scores, _constant(ops, np.float32(-1e9), "masked_score"))
    attention = _named(ops.matmul(ops.softmax(masked, -1), values, False, False), "attention")
    return _model({"key_cache_out": keys.output(0), "value_cache_out": values.output(0),
                   "attention": attention.output(0)},
                  [key_cache, value_cache, new_keys, new_values, query, positions], "kv_cache")


def sample_kv_cache(rng: np.random.Generator, batch: int = 1, cache: int = 16, filled: int = 5,
                    step: int = 2) -> dict:
    def random(length):
        return rng.standard_normal((batch, HEADS, length, HEAD_DIM)).astype(np.float32)

    key_cache, value_cache = random(cache), random(cache)
    key_cache[:, :, filled:] = 0  # positions not yet written
    value_cache[:, :, filled:] = 0
    return {"key_cache": key_cache, "value_cache": value_cache, "new_keys": random(step),
            "new_values": random(step), "query": random(step),
            "positions": np.arange(filled, filled + step, dtype=np.int64)}


# -- the gallery ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    name: str
    build: Callable
    sample_inputs: Callable  # (rng, **sizes) -> {input name: array}


GALLERY = {entry.name: entry for entry in (
    Entry("voxel_pooling", build_voxel_pooling, sample_voxel_pooling),
    Entry("gnn_aggregation", build_gnn_aggregation, sample_gnn_aggregation),
    Entry("kv_cache", build_kv_cache, sample_kv_cache),
)}


# -- PyTorch Geometric GNN, exported by onnx_bridge.torch -------------------------------------------------

def build_pyg_gnn():
    """(module, sample graph, dynamic shapes): two PyG SAGEConv layers, mean then max aggregation."""
    import torch
    import torch_geometric.nn as pyg_nn

    class PygGNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(20240611)
            self.mean = pyg_nn.SAGEConv(NODE_FEATURES, HIDDEN, aggr="mean")
            self.max = pyg_nn.SAGEConv(HIDDEN, HIDDEN, aggr="max")

        def forward(self, node_features, edge_index):
            return self.max(self.mean(node_features, edge_index).relu(), edge_index)

    nodes, edges = torch.export.Dim("nodes", min=2), torch.export.Dim("edges", min=2)
    sample = {k: torch.from_numpy(v) for k, v in sample_gnn_aggregation(np.random.default_rng(1), 7, 20).items()}
    return PygGNN().eval(), sample, {"node_features": {0: nodes}, "edge_index": {1: edges}}


def generate_torch(out: Path = HERE) -> list[Path]:
    """pyg_gnn.onnx (dialect ONNX from onnx_bridge.torch.export, dynamic node and edge counts),
    pyg_gnn_inputs.npz (a graph of another size) and pyg_gnn_torch.npz (torch eager's outputs on it).
    Needs torch and torch_geometric; not byte-reproducible across torch versions, so not in GALLERY."""
    import torch
    import onnx_bridge.torch as obt
    from onnx_bridge.commands.run import save_npz

    module, sample, dynamic = build_pyg_gnn()
    model, _ = obt.export(module, tuple(sample.values()), out / "pyg_gnn.onnx", lower=False,
                          dynamic_shapes=dynamic, input_names=list(sample), output_names=["node_embeddings"])
    inputs = sample_gnn_aggregation(np.random.default_rng(0))
    save_npz(out / "pyg_gnn_inputs.npz", inputs)
    with torch.no_grad():
        expected = module(*(torch.from_numpy(v) for v in inputs.values())).numpy()
    save_npz(out / "pyg_gnn_torch.npz", {"node_embeddings": expected})
    return [out / "pyg_gnn.onnx", out / "pyg_gnn_inputs.npz", out / "pyg_gnn_torch.npz"]


def generate(out: Path = HERE, names=None) -> list[Path]:
    """Write <name>.xml/.bin, <name>.onnx and <name>_inputs.npz for each gallery model; return the paths."""
    from converters.openvino_ir import export_ir, import_ir
    from converters.model_io import save_model
    from onnx_bridge.commands.run import save_npz

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names or GALLERY:
        entry = GALLERY[name]
        xml = export_ir(entry.build(), out / f"{name}.xml")
        model = import_ir(xml)
        del model.metadata_props[:]  # the import's OpenVINO -> ONNX name map (for compare) is not gallery content
        onnx_path = save_model(model, out / f"{name}.onnx")
        inputs = out / f"{name}_inputs.npz"
        save_npz(inputs, entry.sample_inputs(np.random.default_rng(0)))
        written += [xml, xml.with_suffix(".bin"), onnx_path, inputs]
    too_big = [f"{p.name} ({p.stat().st_size} bytes)" for p in written if p.stat().st_size > MAX_FILE_BYTES]
    if too_big:
        raise SystemExit(f"gallery files above {MAX_FILE_BYTES} bytes: {', '.join(too_big)}")
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="output directory (default: models/)")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"models to generate (default: all of {', '.join(GALLERY)})")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(GALLERY) - {"pyg_gnn"})
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(GALLERY)}, pyg_gnn")
    paths = [] if args.names == ["pyg_gnn"] else generate(args.out, [n for n in args.names if n != "pyg_gnn"] or None)
    if not args.names or "pyg_gnn" in args.names:
        paths += generate_torch(args.out)  # needs torch and torch_geometric
    for path in paths:
        print(f"{path.stat().st_size:>8}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
