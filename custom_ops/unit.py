"""The unit API: everything op-specific about one org.openvinotoolkit op, in one object found in one registry.

A dialect op is one module `custom_ops/ops/<family>/<op_snake>.py` defining `UNIT = DialectUnit(...)`
(discovered by custom_ops.ops; no import list to edit). The unit holds:

- `specs`: one OpSpec per dialect version (ports, attributes with defaults, type constraints, the pure
  numpy kernel raising OpError, ONNX shape inference in `infer`);
- `openvino`: the OpenVINO side (type name, opset versions imported, attribute map both ways, the native
  node factory, inputs OpenVINO wants as Constants, expected output shapes);
- the optional pieces, each a value or `Absent(reason)`: lowering, raising (module names in converters),
  generated and invalid cases, torch adapter, divergences (Divergence rows), benchmark case.

Layering: a unit imports only custom_ops. Higher layers find units through the registry
(custom_ops.units(), custom_ops.unit_of(op_type)) and pass their own tools in: the `openvino` package to the
node factory, the graph builder to a lowering. Generic machinery then derives the IR import rule, the
onnxruntime PyOp signatures, the prepare_model rewrite, the ONNX schema, the reference-evaluator op and the
export back to IR (docs/architecture.md, "How to add a dialect op").
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ._spec import REQUIRED, Attribute, OpSpec, Port  # noqa: F401  (re-exported for unit modules)


@dataclass(frozen=True)
class Absent:
    """An optional piece a unit does not have, and why (a test requires the reason)."""
    reason: str

    def __bool__(self) -> bool:
        return False


def present(piece) -> bool:
    """Whether a unit piece is there (not None, not Absent)."""
    return piece is not None and not isinstance(piece, Absent)


#: Attribute kinds of the OpenVINO <-> ONNX attribute map.
ATTRIBUTE_KINDS = ("bool", "int", "float", "ints", "floats", "string", "lower")


@dataclass(frozen=True)
class AttributeMap:
    """One attribute, both ways: `name` (the dialect's ONNX attribute) <-> `ov_name` (OpenVINO's).

    kind: "bool" (OpenVINO bool <-> INT 0/1), "int", "float", "ints", "floats" (lists <-> INTS/FLOATS),
    "string" (as is), "lower" (an OpenVINO enum printed in any case <-> lower-case STRING)."""
    name: str
    kind: str
    ov_name: str = ""

    def __post_init__(self):
        if self.kind not in ATTRIBUTE_KINDS:
            raise ValueError(f"attribute {self.name!r}: kind {self.kind!r} not in {ATTRIBUTE_KINDS}")
        if not self.ov_name:
            object.__setattr__(self, "ov_name", self.name)

    def to_onnx(self, value):
        """OpenVINO attribute value (node.get_attributes()) -> the dialect's ONNX attribute value."""
        if self.kind == "bool":
            return int(bool(value))
        value = _plain(self.kind, value)
        return value.lower() if self.kind == "lower" else value

    def to_openvino(self, value):
        """The dialect's ONNX attribute value -> the value OpenVINO's opset builder takes."""
        return bool(value) if self.kind == "bool" else _plain(self.kind, value)


def _plain(kind: str, value):
    """`value` as the Python type of an attribute kind (strings decoded)."""
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "ints":
        return [int(v) for v in value]
    if kind == "floats":
        return [float(v) for v in value]
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class OpenVINO:
    """The OpenVINO side of a unit.

    factory(ov, inputs, attributes) -> node: the native node, built with the `openvino` package passed in
    (e.g. ov.opset1.gather_tree); `inputs` are OpenVINO outputs in the dialect's port order (None for an
    absent optional input), `attributes` are keyed by OpenVINO name with OpenVINO values (defaults filled
    in, mapped by `attributes`). Used for export to IR (ConversionExtension) and the OpenVINO backend.
    output_shapes(inputs, attributes) -> one shape (or None: not checked) per output, from the numpy inputs
    by port name and the dialect attributes: the backend checks OpenVINO's outputs against it (with one
    inference thread the CPU plugin returns empty outputs instead of raising)."""
    type_name: str
    versions: tuple[int, ...]          # OpenVINO opset versions imported into this op
    factory: Callable
    attributes: tuple[AttributeMap, ...] = ()
    constant_inputs: tuple[str, ...] = ()  # ports OpenVINO needs as Constants (initializers in ONNX)
    output_shapes: Callable | Absent | None = None
    notes: str = ""                    # the import rule's notes (op table, docs/openvino_ir.md)
    refuses: tuple[str, ...] = ()      # configurations the import refuses, each with its reason
    #: refuse(inputs, attributes): raise OpError for inputs that endanger the process in OpenVINO's CPU
    #: plugin (crash, heap corruption), inputs by port name; run before the backend runs the op.
    refuse: Callable | None = None
    #: False: no import rule of its own; a standard rule imports the op and emits this unit's node only in
    #: the configurations standard ONNX does not match (converters.openvino_ir.rules.dialect.import_as_unit).
    import_rule: bool = True

    def ov_attributes(self, attributes: dict) -> dict:
        """Dialect attribute values -> OpenVINO names and values, for the factory."""
        by_name = {m.name: m for m in self.attributes}
        return {by_name[name].ov_name: by_name[name].to_openvino(value)
                for name, value in attributes.items() if name in by_name}


@dataclass(frozen=True)
class Case:
    """One generated case of a unit: inputs in port order (None: absent optional input), attributes."""
    id: str
    inputs: tuple
    attributes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Example:
    """A documented example of the op (its specification's, ONNX's ...): the case, the outputs the source
    documents (None: none documented), where it comes from."""
    case: Case
    expected: tuple | None = None
    description: str = ""


@dataclass(frozen=True)
class Outcome:
    """One measured result of a runtime whose result depends on the machine (e.g. the CPU's instruction set).

    where: on what it was measured (CPU, instruction set, date, how); outputs(inputs, attributes) -> tuple:
    the runtime's outputs there, modelled exactly from the measurement (inputs by port name)."""
    where: str
    outputs: Callable


@dataclass(frozen=True)
class Divergence:
    """A known divergence of another runtime from the contract on this unit's op; onnx_bridge.divergences
    adds it to its one table (docs/divergences.md). backend: "openvino-cpu", "onnxruntime",
    "onnx-reference" or "torch"; kind: "value", "rejects", "accepts", "nondeterministic" or "crashes";
    predicate(inputs, attributes) -> bool on the inputs by port name and the attributes (defaults filled);
    example: a Case on which it applies. Several units may declare one row (same id and text, each with
    its own predicate and example): the table shows it once, naming every op. outcomes: non-empty for a
    result that depends on the machine, every measured outcome (the row then explains only those)."""
    id: str
    backend: str
    kind: str
    title: str
    reason: str
    predicate: Callable
    example: Case
    outcomes: tuple = ()  # of Outcome


@dataclass(frozen=True)
class BenchmarkCase:
    """One benchmarked configuration of a unit's op (a row of a benchmark table). inputs(rng) -> {port name:
    array} at the benchmark size (absent optional ports left out); `constants`: ports given as constants
    (initializers, OpenVINO Constants) besides the unit's constant inputs; `outputs`: the outputs timed and
    compared (None: all; e.g. an output whose tail OpenVINO leaves uninitialised is left out)."""
    id: str                          # stable key, e.g. "seu-sum-init1"
    label: str                       # what the table shows
    inputs: Callable
    attributes: dict = field(default_factory=dict)
    constants: tuple[str, ...] = ()
    outputs: tuple[int, ...] | None = None
    stock: bool = False              # also timed through stock onnxruntime-extensions marshaling (slow: tolist)
    note: str = ""
    scales_from: str = ""            # id of the same case on smaller data: predicts which columns are too slow
    op: str = ""                     # the unit's op_type (filled in by Benchmark.all_cases)


@dataclass(frozen=True)
class Benchmark:
    """A unit's benchmark piece (benchmarks/): its cases and the counterparts it is compared with.

    cases(mode) -> list[BenchmarkCase] at the sizes of mode "full", "quick" or "tiny". `table`: the op is a
    row group of `onnx-bridge bench`'s column table (benchmarks/run.py: bridge, stock marshaling, lowered,
    native, OpenVINO, torch, numpy, kernel); otherwise benchmarks/ir_ops.py times it imported from OpenVINO IR
    against OpenVINO CPU. The counterparts, each None when there is none: native(case, inputs) -> (onnx
    nodes, feeds, initializers, label, to_contract) raising NotImplementedError(reason) where none applies;
    torch(case, inputs) and numpy(case, inputs) -> (run, note) with run() giving the dialect's outputs (None
    for an output not given). targets(cases) -> rows (target, (case id, column), (case id, column), limit,
    options dict: speedup, strict, note) of the performance targets; memory_limit: peak memory of a run, in
    multiples of its first input, reported and checked."""
    cases: Callable
    table: bool = False
    native: Callable | None = None
    torch: Callable | None = None
    numpy: Callable | None = None
    targets: Callable | None = None
    memory_limit: float | None = None
    #: OpenVINO's CPU plugin is timed only up to this many rows of the first input (None: no limit); beyond,
    #: the benchmark times it on a prefix and reports that instead (too slow to run whole).
    openvino_rows: int | None = None

    def all_cases(self, op_type: str, mode: str) -> list:
        return [replace(case, op=op_type) for case in self.cases(mode)]


@dataclass(frozen=True)
class DialectUnit:
    """One dialect op, defined once. Optional pieces are a value or Absent(reason), never left out."""
    op_type: str
    family: str
    specs: tuple[OpSpec, ...]
    openvino: OpenVINO
    #: cases(rng) -> list[Case]: generated cases (differential tests against OpenVINO, conformance); an
    #: open-ended generator takes `count` too (cases(rng, count)) and may include a few invalid inputs.
    cases: Callable | Absent
    #: bad_cases() -> list[(Case, substring of the OpError message)]: invalid inputs the kernel refuses.
    bad_cases: Callable | Absent
    lowering: object = Absent("no standard-ONNX lowering written")
    raising: object = Absent("no standard ONNX pattern raised to this op")
    #: the module of onnx_bridge.torch exporting torch ops to this op (translations(aten), symbolics(),
    #: SYMBOLIC_NAMES), imported by onnx_bridge.torch: a name, so the unit imports no torch
    torch: object = Absent("no torch adapter")
    divergences: tuple | Absent = Absent("no divergence of another runtime known")  # of Divergence
    benchmark: Benchmark | Absent = Absent("no benchmark case")
    #: onnxruntime PyOp: the kernel may write its first input in place (the PyOp owns its inputs).
    inplace_first: bool = False
    #: onnxruntime PyOp: output dtypes for the input dtypes, where an output's type constraint is not bound
    #: by an input's (None: every output type follows from the inputs).
    pyop_outputs: Callable | None = None
    #: onnxruntime PyOp: pyop_casts(attributes) -> (attributes the PyOp runs with, {output index: numpy
    #: dtype}): outputs the PyOp computes in its registered type and prepare_model Casts to the asked one
    #: (e.g. int64 indices cast to an int32 asked for by an attribute). None: no cast.
    pyop_casts: Callable | None = None
    #: prefer_custom_op(node, constants) -> reason or None: why an InferenceSession keeps `node` (an
    #: onnx.NodeProto) as the custom op although an exact lowering exists (`constants`: names of the
    #: model's constant values, or None when unknown). None: lower whenever exact.
    prefer_custom_op: Callable | None = None
    #: (index input, data input, axis input) port numbers where index values address data along the axis
    #: given by another input (`onnx-bridge run` draws random indices in range); None: no such input.
    index_input: tuple[int, int, int] | None = None
    #: accumulation_ulps(inputs, attributes) -> ulps allowed on the first output, for float work whose
    #: summation order is each runtime's own (inputs by port name, attributes with defaults); None: exact.
    accumulation_ulps: Callable | None = None
    #: accumulation_bound(inputs, attributes) -> the largest |Δ| allowed on any element of the first output,
    #: for float sums whose order is each runtime's own and whose terms may cancel (an error bound in the
    #: output's units, from the sums' length and the terms' magnitudes; -0.0 vs 0.0 is forgiven); None: exact.
    accumulation_bound: Callable | None = None
    #: examples(large) -> list[Example]: documented examples with their documented outputs (conformance
    #: seeds); large: also those of tens of MB.
    examples: Callable | None = None
    #: case_tags(inputs, attributes) -> set of conformance tags only the op can tell (e.g. "duplicates":
    #: several updates reach one position), inputs by port name; None: none.
    case_tags: Callable | None = None
    #: Why the order of the op's outputs among equal scores is open (whole-model compare matches outputs
    #: downstream of it order-insensitively); "": the order is defined.
    open_order: str = ""
    doc: str = ""

    @property
    def accumulates(self) -> bool:
        """Float results depend on summation order: an ulp or absolute allowance is declared."""
        return self.accumulation_ulps is not None or self.accumulation_bound is not None

    @property
    def newest(self) -> OpSpec:
        return max(self.specs, key=lambda spec: spec.since_version)

    def spec(self, since_version: int) -> OpSpec:
        return next(s for s in self.specs if s.since_version == since_version)


# Helpers for unit modules ------------------------------------------------------------------------

def same_as_input(index: int = 0) -> Callable:
    """ONNX shape inference: output 0 has the type (and shape) of input `index`."""
    def infer(ctx) -> None:
        known = ctx.get_input_type(index)
        if known is not None:  # None: the input's type is unknown (e.g. inside a function body)
            ctx.set_output_type(0, known)
    return infer


def expected_shape_of(port: str) -> Callable:
    """OpenVINO output_shapes: one output shaped like input `port`."""
    def output_shapes(inputs: dict, attributes: dict) -> list:
        return [np.shape(inputs[port])]
    return output_shapes
