"""Export a mean-aggregation GNN layer to ONNX that matches torch, and run it in onnxruntime.

torch.onnx alone cannot do this: the dynamo exporter writes scatter_reduce(reduce="mean") as
ScatterElements(reduction="none") -- a model that runs and is wrong -- and the TorchScript exporter refuses it.
onnx_bridge.torch.export writes it as the OpenVINO dialect's ScatterElementsUpdate (exact torch semantics),
then lowers that to standard ONNX where the lowering is exact.

    python examples/torch_scatter_mean.py [OUT.onnx]
"""
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime
import torch

import onnx_bridge
import onnx_bridge.torch


class MeanAggregation(torch.nn.Module):
    """out[v] = relu(W [x[v], mean of x[u] over edges u -> v]); nodes without in-edges get mean 0."""

    def __init__(self, features: int = 8, out: int = 4):
        super().__init__()
        self.linear = torch.nn.Linear(2 * features, out)

    def forward(self, x, edge_index):
        messages = x.index_select(0, edge_index[0])
        targets = edge_index[1].unsqueeze(-1).expand_as(messages)
        mean = torch.zeros_like(x).scatter_reduce(0, targets, messages, "mean", include_self=False)
        return torch.relu(self.linear(torch.cat([x, mean], dim=-1)))


def graph(nodes: int, edges: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(nodes, 8, generator=generator)
    edge_index = torch.randint(0, nodes, (2, edges), generator=generator)
    return x, edge_index


def main(path: Path) -> int:
    torch.manual_seed(0)
    module = MeanAggregation().eval()
    nodes, edges = torch.export.Dim("nodes", min=2), torch.export.Dim("edges", min=2)
    model, report = onnx_bridge.torch.export(
        module, graph(10, 30, seed=0), path, lower=True,
        input_names=["x", "edge_index"], dynamic_shapes={"x": {0: nodes}, "edge_index": {1: edges}})
    print(report)

    x, edge_index = graph(50, 200, seed=1)  # another graph size: the shapes are dynamic
    feeds = {"x": x.numpy(), "edge_index": edge_index.numpy()}
    if report.standard:  # no dialect node left: plain onnxruntime runs it
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    else:
        session = onnx_bridge.InferenceSession(str(path))
    (got,) = session.run(None, feeds)
    with torch.no_grad():
        want = module(x, edge_index).numpy()
    difference = float(np.max(np.abs(got - want)))
    # The Linear layer's dot products are summed in a different order by onnxruntime: float32 rounding.
    if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
        print(f"MISMATCH: max |onnx - torch| = {difference:.3g}")
        return 1
    print(f"{path.name} matches torch on a 50-node, 200-edge graph (max |onnx - torch| = {difference:.1g})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(Path(sys.argv[1])))
    with tempfile.TemporaryDirectory() as directory:
        sys.exit(main(Path(directory) / "mean_aggregation.onnx"))
