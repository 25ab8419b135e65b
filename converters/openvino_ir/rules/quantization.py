"""Quantization: FakeQuantize-1 (placeholder, filled below)."""
