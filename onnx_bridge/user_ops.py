"""Users' own Python ops, on the machinery that runs the dialect ops (custom_ops.pyops).

    @onnx_bridge.custom_op("SoftShrink", domain="ai.example")      # outputs default ["T"]: input 0's type
    def soft_shrink(x, *, lambd=0.5):
        return np.where(np.abs(x) > lambd, x - np.sign(x) * lambd, 0).astype(x.dtype)

Positional parameters are the node's inputs (numpy arrays), keyword parameters its attributes (float,
int, string or lists of them; a parameter without default is a required attribute). `inputs` and
`outputs` give each port a type: a type name ("float32", "int64", "bool", "float16", ...) or a type
variable (a name starting with an upper-case letter: every port with the same variable has the same
type, which may be any numeric type). Inputs default to "T" for input 0 and a variable of their own for
each other input; outputs default to ["T"].

float16 and bfloat16 (which onnxruntime-extensions cannot carry) are widened to float32 by Casts around the
node (exact) and reach the function as float16 / ml_dtypes.bfloat16 arrays; outputs of those types are
narrowed back the same way. See docs/custom_ops.md.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import json
import re
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto, helper

from custom_ops.element_types import DATA_TYPES, WIDENED_TYPES, dtype_from_name, type_name

from .errors import BridgeError, ModelError, OpError

#: Most registrations one op may need (one per input type signature onnxruntime-extensions dispatches on).
MAX_SIGNATURES = 2048
_VARIABLE = re.compile(r"^[A-Z][A-Za-z0-9_]*$")
_OPS: dict[tuple[str, str], "UserOp"] = {}


def _ort():
    from custom_ops import pyops as _ort
    return _ort


def _parse_type(op, port, text):
    if _VARIABLE.match(text):
        return text
    try:
        return dtype_from_name(text)
    except KeyError:
        raise BridgeError(f"custom op {op}: {port} type {text!r} is neither a type name "
                          f"({', '.join(type_name(t) for t in DATA_TYPES)}) nor a type variable "
                          f"(a name starting with an upper-case letter)") from None


@functools.lru_cache(maxsize=None)
def _logical_types(names: str) -> tuple:
    return tuple(dtype_from_name(name) for name in names.split(","))


def _carried(dtype: np.dtype) -> np.dtype:
    return WIDENED_TYPES.get(dtype, dtype)


@dataclass
class UserOp:
    """One registered user op: its function, ports and attributes."""
    domain: str
    op_type: str
    function: object
    inputs: tuple      # per input: np.dtype or type variable name
    outputs: tuple     # per output: np.dtype or type variable name
    attributes: tuple  # keyword parameter names
    signature: inspect.Signature

    @property
    def name(self) -> str:
        return f"{self.domain}::{self.op_type}"

    def output_types(self, input_types) -> list[np.dtype]:
        """Logical output types for the given logical input types (checked against the declaration)."""
        bound = {}
        for index, (declared, actual) in enumerate(zip(self.inputs, input_types)):
            if isinstance(declared, str):
                if bound.setdefault(declared, actual) != actual:
                    raise OpError(self.name, f"input {index}", f"type variable {declared} is "
                                  f"{type_name(bound[declared])} for an earlier input",
                                  value=type_name(actual))
            elif declared != actual:
                raise OpError(self.name, f"input {index}", "unexpected element type",
                              value=type_name(actual), allowed=type_name(declared))
        return [bound[t] if isinstance(t, str) else t for t in self.outputs]

    def signatures(self):
        """Every carried (input dtypes, output dtypes) combination onnxruntime-extensions may dispatch."""
        variables = sorted({t for t in self.inputs if isinstance(t, str)})
        carried = _ort().CARRIED_TYPES
        for values in itertools.product(carried, repeat=len(variables)):
            binding = dict(zip(variables, values))
            yield (tuple(binding[t] if isinstance(t, str) else _carried(t) for t in self.inputs),
                   tuple(binding[t] if isinstance(t, str) else _carried(t) for t in self.outputs))

    def check_attributes(self, given: dict, node: str) -> None:
        try:
            self.signature.bind(*([None] * len(self.inputs)), **given)
        except TypeError as error:
            raise OpError(self.name, "attributes", str(error), value=sorted(given),
                          allowed=list(self.attributes) or "none", node=node) from None

    # Called by custom_ops.pyops' invocation hook once per node (attributes: the hidden strings).
    def prepare(self, attributes) -> "_UserCall":
        node = attributes.get("_node") or None
        logical = _logical_types(attributes["_types"])
        try:
            keywords = json.loads(attributes["_attrs"])
        except Exception as error:
            raise self._failure(error, node) from error
        return _UserCall(node, logical, _ort().CallKeywords(keywords))

    def _failure(self, error: Exception, node) -> OpError:
        return OpError(self.name, "function", f"{type(error).__name__}: {error}", node=node)

    # Called by custom_ops.pyops' invocation hook (feed: carried arrays; call: prepare's for the node).
    def __call__(self, feed, call: "_UserCall", carried_outputs):
        node, logical = call.node, call.logical
        inputs = [x.astype(t) if x.dtype != t else x for x, t in zip(feed, logical)]
        try:
            result = self.function(*inputs, **call.keywords.fresh())
        except Exception as error:
            raise self._failure(error, node) from error
        values = result if isinstance(result, tuple) else (result,)
        expected = self.output_types(logical)
        if len(values) != len(expected):
            raise OpError(self.name, "outputs", "wrong number of outputs returned", value=len(values),
                          allowed=len(expected), node=node)
        outputs = []
        for index, (value, dtype, carried) in enumerate(zip(values, expected, carried_outputs)):
            if not isinstance(value, (np.ndarray, np.generic)) or value.dtype != dtype:
                got = type_name(value.dtype) if hasattr(value, "dtype") else type(value).__name__
                raise OpError(self.name, f"output {index}", "wrong element type returned", value=got,
                              allowed=type_name(dtype), node=node)
            # np.require keeps 0-D results 0-D (np.ascontiguousarray would make them shape (1,)).
            outputs.append(np.require(value, dtype=carried, requirements="C"))
        return outputs


@dataclass(frozen=True)
class _UserCall:
    """A user-op node's hidden attributes, decoded once (UserOp.prepare)."""
    node: str | None
    logical: tuple     # the inputs' logical types
    keywords: object   # the function's keyword arguments (custom_ops.pyops.CallKeywords)


def custom_op(op_type: str, domain: str, *, inputs=None, outputs=("T",)):
    """Decorator registering `function` as op `op_type` of `domain` for onnx_bridge.InferenceSession.

    Register every op of a domain before creating the first session that uses that domain. Defining
    the same op again with the same ports replaces its function (e.g. in a notebook).
    """
    if not domain or domain in ("", "ai.onnx", "ai.onnx.ml"):
        raise BridgeError(f"custom op {op_type}: give a domain of your own, not {domain!r}")
    from .config import DOMAIN
    if domain == DOMAIN:
        raise BridgeError(f"custom op {op_type}: domain {DOMAIN!r} is the dialect's")

    def decorate(function):
        name = f"{domain}::{op_type}"
        signature = inspect.signature(function)
        positional, attributes = [], []
        for parameter in signature.parameters.values():
            if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
                if parameter.default is not parameter.empty:
                    raise BridgeError(f"custom op {name}: input {parameter.name!r} has a default; inputs "
                                      f"are positional parameters without default, attributes keyword-only")
                positional.append(parameter.name)
            elif parameter.kind == parameter.KEYWORD_ONLY:
                attributes.append(parameter.name)
            else:
                raise BridgeError(f"custom op {name}: *{parameter.name} is not supported (an op has a "
                                  f"fixed number of inputs; attributes are keyword-only parameters)")
        if not positional:
            raise BridgeError(f"custom op {name}: the function takes no input")
        declared_inputs = list(inputs) if inputs is not None else \
            ["T"] + [f"T{i}" for i in range(1, len(positional))]
        if len(declared_inputs) != len(positional):
            raise BridgeError(f"custom op {name}: {len(declared_inputs)} input types for "
                              f"{len(positional)} inputs ({', '.join(positional)})")
        in_types = tuple(_parse_type(name, f"input {i}", t) for i, t in enumerate(declared_inputs))
        out_types = tuple(_parse_type(name, f"output {i}", t) for i, t in enumerate(outputs))
        unbound = [t for t in out_types if isinstance(t, str) and t not in in_types]
        if unbound or not out_types:
            raise BridgeError(f"custom op {name}: output types {unbound or '[]'} name no input's type "
                              f"variable; give outputs as type names or variables of the inputs")
        op = UserOp(domain, op_type, function, in_types, out_types, tuple(attributes), signature)
        existing = _OPS.get((domain, op_type))
        if existing is not None:
            if (existing.inputs, existing.outputs) != (in_types, out_types):
                raise BridgeError(f"custom op {name} is already registered with other port types")
            existing.function, existing.attributes, existing.signature = function, op.attributes, signature
            return function
        variables = {t for t in in_types if isinstance(t, str)}
        if len(_ort().CARRIED_TYPES) ** len(variables) > MAX_SIGNATURES:
            raise BridgeError(f"custom op {name}: {len(variables)} independent input type variables need "
                              f"more than {MAX_SIGNATURES} registrations; give `inputs=` types (names or "
                              f"shared variables)")
        string = _ort().PyCustomOpDef.dt_string
        _ort().register_pyop(op, domain, op_type, list(op.signatures()),
                             {"_node": string, "_types": string, "_attrs": string})
        _OPS[(domain, op_type)] = op
        return function

    return decorate


def registered_domains() -> set[str]:
    return {domain for domain, _ in _OPS}


def lookup(domain: str, op_type: str) -> UserOp:
    op = _OPS.get((domain, op_type))
    if op is None:
        raise ModelError(f"no custom op {op_type!r} is registered in domain {domain!r} (registered: "
                         f"{', '.join(sorted(t for d, t in _OPS if d == domain))})")
    return op


def _attribute_value(op, attribute, node):
    value = helper.get_attribute_value(attribute)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, list) and all(isinstance(v, (int, float, bytes)) for v in value):
        return [v.decode() if isinstance(v, bytes) else v for v in value]
    raise OpError(op.name, f"attribute {attribute.name!r}", "unsupported attribute kind (float, int, "
                  "string and lists of them are)", value=onnx_attribute_kind(attribute), node=node)


def onnx_attribute_kind(attribute) -> str:
    from onnx import AttributeProto
    return AttributeProto.AttributeType.Name(attribute.type)


def rewrite_node(node, label: str, type_of, count: int):
    """The node(s) that run a user-op `node` through onnxruntime-extensions: attributes packed as JSON
    in `_attrs` (with the node name and logical input types), float16/bfloat16 carried as float32.
    `type_of(name, port)` gives an input's ONNX element type. Returns (before, node, after) lists."""
    op = lookup(node.domain, node.op_type)
    if len(node.input) != len(op.inputs) or not all(node.input):
        raise OpError(op.name, "inputs", "wrong number of inputs", value=len([i for i in node.input if i]),
                      allowed=len(op.inputs), node=label)
    from custom_ops.element_types import NUMPY_TO_ONNX, ONNX_TO_NUMPY
    logical = []
    for index, name in enumerate(node.input):
        code = type_of(name, f"input {index}")
        if code not in ONNX_TO_NUMPY:
            raise OpError(op.name, f"input {index}", "unsupported element type",
                          value=TensorProto.DataType.Name(code), node=label)
        logical.append(ONNX_TO_NUMPY[code])
    try:
        output_types = op.output_types(logical)
    except OpError as error:
        raise error.with_node(label)
    if len(node.output) > len(output_types):
        raise OpError(op.name, "outputs", "more outputs than declared", value=len(node.output),
                      allowed=len(output_types), node=label)
    given = {a.name: _attribute_value(op, a, label) for a in node.attribute}
    op.check_attributes(given, label)
    before, after = [], []
    inputs = list(node.input)
    for index, dtype in enumerate(logical):
        if dtype in WIDENED_TYPES:
            wide = f"{inputs[index]}__bridge_f32_{count}_{index}"
            before.append(helper.make_node("Cast", [inputs[index]], [wide], to=TensorProto.FLOAT))
            inputs[index] = wide
    outputs = [name or f"__bridge_unused_{count}_{i}" for i, name in
               enumerate(list(node.output) + [""] * (len(output_types) - len(node.output)))]
    for index, dtype in enumerate(output_types):
        if dtype in WIDENED_TYPES:
            wide = f"{outputs[index]}__bridge_f32"
            after.append(helper.make_node("Cast", [wide], [outputs[index]], to=NUMPY_TO_ONNX[dtype]))
            outputs[index] = wide
    rewritten = helper.make_node(node.op_type, inputs, outputs, name=node.name, domain=node.domain,
                                 _node=label, _types=",".join(type_name(t) for t in logical),
                                 _attrs=json.dumps(given))
    return before + [rewritten] + after
