"""`import torchvision` beside a CPU build of torch whose torchvision C extension does not load.

PyPI's torchvision 0.28 is built against CUDA torch 2.13: beside the CPU wheel its C extension does not load
and `import torchvision` raises "operator torchvision::nms does not exist" (its Python side registers fake
kernels for ops the missing extension should have defined). import_torchvision() defines the schemas of those
two ops first, without kernels: models that call no torchvision C op (the classification models the demo,
the tests and the benchmarks build) import and run; one that did would raise when run.
"""
from __future__ import annotations

import importlib
import sys

_KEPT = []  # the Library holding the definitions: they live as long as it does


def import_torchvision():
    """torchvision, importable beside torch's CPU build (see the module doc)."""
    if "torchvision" in sys.modules:
        return sys.modules["torchvision"]
    import torch

    if not hasattr(torch.ops.torchvision, "nms"):
        try:
            library = torch.library.Library("torchvision", "DEF")
            library.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            library.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            _KEPT.append(library)
        except RuntimeError:  # defined already (the extension loaded after all)
            pass
    return importlib.import_module("torchvision")
