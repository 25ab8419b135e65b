"""OpenVINO's CPU plugin (f32 inference precision): op cases as native ops, model cases read through the
dialect's ConversionExtensions. Both come from onnx_bridge.backends.openvino, which refuses the inputs
that crash the plugin (indices below -d); the runner's worker processes contain any crash it misses."""
from __future__ import annotations

from collections import OrderedDict

from ..cases import Case
from . import has_module


class OpenVINOAdapter:
    name = "openvino"
    title = "OpenVINO CPU plugin, INFERENCE_PRECISION_HINT=f32 (native opset ops; models via ConversionExtension)"

    def __init__(self):
        self._models: OrderedDict = OrderedDict()

    @staticmethod
    def missing() -> str | None:
        if not has_module("openvino"):
            return "openvino is not installed (pip install 'onnx-bridge[openvino]')"
        if not has_module("onnx_bridge.backends.openvino"):
            return "onnx_bridge.backends.openvino is not available"
        return None

    def run(self, case: Case) -> tuple:
        from onnx_bridge.backends import openvino
        if not case.is_model:
            return tuple(openvino.run(case.op, case.input_list(), case.attributes))
        if case.id not in self._models:
            self._models[case.id] = openvino.compile(case.model)
            if len(self._models) > 16:
                self._models.popitem(last=False)
        return tuple(openvino.run_model(self._models[case.id], case.inputs))
