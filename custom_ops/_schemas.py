"""ONNX schemas (onnx.defs) for every dialect op version, with type and shape inference.

After register_schemas(), onnx.checker.check_model(model, full_check=True) validates dialect nodes and
onnx.shape_inference infers their output types (and shapes where they follow from the inputs).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
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
    schema.set_type_and_shape_inference_function(spec.infer or _INFERENCE[spec.op_type])
    return schema


def _attr(ctx, name, default):
    proto = ctx.get_attribute(name)
    if proto is None:
        return default
    value = helper.get_attribute_value(proto)
    return value.decode() if isinstance(value, bytes) else value


def _same_as_data(ctx) -> None:
    ctx.set_output_type(0, ctx.get_input_type(0))


def _reduce_l2(ctx) -> None:
    data = ctx.get_input_type(0)
    out = onnx.TypeProto()
    out.tensor_type.elem_type = data.tensor_type.elem_type
    axes = ctx.get_input_data(1) if ctx.get_num_inputs() > 1 else None
    if axes is not None and data.tensor_type.HasField("shape"):
        dims = list(data.tensor_type.shape.dim)
        rank = len(dims)
        reduced = {int(a) % rank for a in numpy_helper.to_array(axes).reshape(-1)} if rank else set()
        keep = _attr(ctx, "keep_dims", 0)
        out.tensor_type.shape.SetInParent()
        for i, dim in enumerate(dims):
            if i in reduced:
                if keep:
                    out.tensor_type.shape.dim.add().dim_value = 1
            else:
                out.tensor_type.shape.dim.add().CopyFrom(dim)
    ctx.set_output_type(0, out)


def _unique(ctx) -> None:
    data = ctx.get_input_type(0)
    values = onnx.TypeProto()
    values.tensor_type.elem_type = data.tensor_type.elem_type
    if ctx.get_num_inputs() < 2 or not ctx.has_input(1):
        values.tensor_type.shape.dim.add()  # 1-D of unknown length
    ctx.set_output_type(0, values)
    kinds = {"i32": TensorProto.INT32, "i64": TensorProto.INT64}
    for index, attr in ((1, "index_element_type"), (2, "index_element_type"), (3, "count_element_type")):
        if index < ctx.get_num_outputs():
            out = onnx.TypeProto()
            out.tensor_type.elem_type = kinds.get(_attr(ctx, attr, "i64"), TensorProto.INT64)
            out.tensor_type.shape.dim.add()
            ctx.set_output_type(index, out)


_INFERENCE = {"ScatterElementsUpdate": _same_as_data, "ScatterUpdate": _same_as_data,
              "ReduceL2": _reduce_l2, "Unique": _unique}


def register_schemas() -> None:
    """Register every dialect op schema with onnx.defs (idempotent)."""
    global _DONE
    if _DONE:
        return
    # onnx.reference builds its op table from onnx.defs on first import and rejects an op name that
    # exists in two domains (ReduceL2): let it load before our schemas join the registry.
    import onnx.reference  # noqa: F401
    for spec in all_specs():
        if not onnx.defs.has(spec.op_type, spec.since_version, spec.domain) or \
                onnx.defs.get_schema(spec.op_type, spec.since_version, spec.domain).since_version \
                != spec.since_version:
            onnx.defs.register_schema(_schema(spec))
    _DONE = True
