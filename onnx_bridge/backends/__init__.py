"""Other runtimes driven on the dialect's terms (optional dependencies, imported on first use).

- onnx_bridge.backends.openvino: the four ops as OpenVINO's native ops on the CPU plugin, and dialect ONNX
  models read into OpenVINO.
"""
