"""What a rule gets (RuleContext) and returns (Converted or Keep)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper

from .graph import Builder, ModelInfo, NameScope


@dataclass
class Keep:
    """The node stays as it is, for this reason."""
    reason: str


@dataclass
class Converted:
    """The node is replaced by builder's nodes (which write the node's outputs)."""
    builder: Builder
    action: str  # lowered, decomposed or raised
    reason: str
    #: Set when the new graph is not bit-identical to the old one on every input (e.g. float rounding);
    #: strict=True keeps the node.
    caveat: str | None = None
    #: The caveat is only floating-point summation order (same semantics, last-bit differences):
    #: strict="semantics" converts such nodes anyway.
    rounding_only: bool = False
    #: Domains (other than the default one) the new nodes need, with their minimum opset.
    domains: dict[str, int] = field(default_factory=dict)


@dataclass
class RuleContext:
    info: ModelInfo
    names: NameScope
    #: Default-domain opset the output model will import.
    target_opset: int

    def builder(self, node: onnx.NodeProto) -> Builder:
        return Builder(self.info, self.names, node.name or node.op_type)

    def attributes(self, node: onnx.NodeProto) -> dict:
        values = {}
        for attribute in node.attribute:
            value = helper.get_attribute_value(attribute)
            values[attribute.name] = value.decode() if isinstance(value, bytes) else value
        return values

    def dtype(self, node: onnx.NodeProto, index: int, port: str):
        """numpy dtype of input `index`, or a Keep saying it is unknown."""
        name = node.input[index] if index < len(node.input) else ""
        dtype = self.info.dtype(name) if name else None
        if dtype is None:
            return Keep(f"element type of input '{port}' ({name!r}) is unknown; give the model typed "
                        f"inputs/value_info")
        return dtype

    def constant(self, node: onnx.NodeProto, index: int) -> np.ndarray | None:
        if index >= len(node.input) or not node.input[index]:
            return None
        return self.info.constant(node.input[index])
