"""onnx-bridge benchmark: every dialect op on the seed shapes and a larger one, timed through the bridge,
stock onnxruntime-extensions marshaling, the lowered standard model, native onnxruntime, OpenVINO, torch
and numpy in one run. Entry point: benchmarks/run.py (also `onnx-bridge bench`)."""
