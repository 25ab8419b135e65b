"""ONNX schemas (onnx.defs) for every dialect op version, with type and shape inference.

After register_schemas(), onnx.checker.check_model(model, full_check=True) validates dialect nodes and
onnx.shape_inference infers their output types (and shapes where they follow from the inputs).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.defs import OpSchema

from ._spec import OpSpec, all_specs
from ._types import NUMPY_TO_ONNX

_DONE = False


def _type_string(dtype) -> str:
    return f"tensor({TensorProto.DataType.Name(NUMPY_TO_ONNX[np.dtype(dtype)]).lower()})"


_ATTRIBUTE_TYPES = {"int": onnx.AttributeProto.INT, "float": onnx.AttributeProto.FLOAT,
                    "string": onnx.AttributeProto.STRING, "ints": onnx.AttributeProto.INTS,
                    "floats": onnx.AttributeProto.FLOATS}


def _attribute(spec_attribute) -> OpSchema.Attribute:
    kind = _ATTRIBUTE_TYPES[spec_attribute.kind]
    allowed = f" One of {', '.join(map(str, spec_attribute.allowed))}." if spec_attribute.allowed else ""
    if spec_attribute.default is None:  # required
        return OpSchema.Attribute(spec_attribute.name, kind, f"Required.{allowed}", required=True)
    default = helper.make_attribute(spec_attribute.name, spec_attribute.default, attr_type=kind)
    return OpSchema.Attribute(spec_attribute.name, default, f"Default {spec_attribute.default!r}.{allowed}")


def _schema(spec: OpSpec) -> OpSchema:
    def port(p):
        option = OpSchema.FormalParameterOption.Optional if p.optional else \
            OpSchema.FormalParameterOption.Single
        return OpSchema.FormalParameter(p.name, p.type_constraint, "", param_option=option)

    schema = OpSchema(
        spec.op_type, spec.domain, spec.since_version, spec.doc,
        inputs=[port(p) for p in spec.inputs], outputs=[port(p) for p in spec.outputs],
        type_constraints=[(name, [_type_string(t) for t in types], "")
                          for name, types in spec.type_constraints.items()],
        attributes=[_attribute(a) for a in spec.attributes])
    if spec.infer is None:
        raise TypeError(f"{spec.op_type}-{spec.since_version}: the spec has no shape inference (OpSpec.infer)")
    schema.set_type_and_shape_inference_function(spec.infer)
    return schema


def register_schemas() -> None:
    """Register every dialect op schema with onnx.defs (idempotent)."""
    global _DONE
    if _DONE:
        return
    # onnx.reference builds its op table from onnx.defs on first import and rejects an op name that
    # exists in two domains (ours and ai.onnx): let it load before our schemas join the registry.
    import onnx.reference  # noqa: F401
    for spec in all_specs():
        if not onnx.defs.has(spec.op_type, spec.since_version, spec.domain) or \
                onnx.defs.get_schema(spec.op_type, spec.since_version, spec.domain).since_version \
                != spec.since_version:
            onnx.defs.register_schema(_schema(spec))
    _DONE = True
