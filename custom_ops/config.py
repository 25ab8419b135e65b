"""Versions and names every part of onnx-bridge agrees on."""

DOMAIN = "org.openvinotoolkit"
#: Domain opset written by default: OpenVINO opset 15 holds the newest version of every dialect op
#: (Inverse-14, NMSRotated-13, ...; the older ops are unchanged since opset 12).
DIALECT_OPSET = 15
#: IR version written into every model we emit (onnx 1.23 writes 14; onnxruntime 1.31 reads at most 13).
IR_VERSION = 10
#: Default-domain opset of lowered models (ScatterElements-18, ReduceL2-18 are the targets).
TARGET_OPSET = 18
#: Highest default-domain opset onnxruntime 1.31 accepts.
MAX_ORT_OPSET = 26
