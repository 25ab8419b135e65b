"""Packages of the wheel (metadata is in pyproject.toml). The model gallery, models/ (a few KB), ships as
the package onnx_bridge.gallery so that `onnx-bridge demo` works from an installed wheel."""
from setuptools import find_packages, setup

GALLERY_FILES = ["*.onnx", "*.xml", "*.bin", "*.npz", "README.md"]  # models, inputs, recorded outputs

setup(
    packages=find_packages(include=["onnx_bridge*", "custom_ops*", "converters*"]) + ["onnx_bridge.gallery"],
    package_dir={"onnx_bridge.gallery": "models"},
    package_data={"onnx_bridge.gallery": GALLERY_FILES},
)
