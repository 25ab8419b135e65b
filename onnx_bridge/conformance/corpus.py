"""The corpus: seed examples, ONNX backend node cases raised into the dialect, generated cases, user models.

build_corpus() assembles it; each part can be asked for alone. Cases keep a stable id, so a case seen in a
report can be rerun with `--only ID`.
"""
from __future__ import annotations

import fnmatch
import importlib
from pathlib import Path

import numpy as np
import onnx

import custom_ops

from custom_ops.element_types import BFLOAT16, ONNX_TO_NUMPY
from custom_ops.unit import present
from converters.model_io import load_model
from onnx_bridge.config import DOMAIN
from onnx_bridge.errors import BridgeError, ModelError

from .cases import MODEL, Case, full_attributes
from .generate import SIZES, generated_cases, values
from .tags import auto_tags

SOURCES = ("seed", "onnx", "generated", "model")
A = np.array
F32 = np.float32


def _case(name, op, inputs, attributes=None, expected=None, source="seed", description="") -> Case:
    case = Case(f"{source}/{name}", op, inputs, full_attributes(op, attributes), source, description,
                expected=expected)
    case.tags = auto_tags(case)
    return case


# ------------------------------------------------------------------------------------------------------
# Seed examples: the units' documented examples (unit.examples)


def seed_cases(large: bool = False) -> list[Case]:
    """Every unit's documented examples with their documented outputs (the large ones only if asked)."""
    cases = []
    for unit in custom_ops.units():
        if unit.examples is None:
            continue
        ports = [port.name for port in unit.newest.inputs]
        for example in unit.examples(large):
            inputs = {port: None if value is None else np.asarray(value)
                      for port, value in zip(ports, example.case.inputs)}
            cases.append(_case(example.case.id, unit.op_type, inputs, example.case.attributes,
                               example.expected, description=example.description))
    return cases


# ------------------------------------------------------------------------------------------------------
# ONNX backend node cases (onnx's own test data), raised into the dialect by the converter

def _raised_standard_ops() -> list[str]:
    """The standard ONNX op types raised into the dialect (the units' raising rules)."""
    from converters.registry import RAISING
    for unit in custom_ops.units():
        if present(unit.raising):
            importlib.import_module(unit.raising)
    return sorted({op for domain, op, _ in RAISING.entries() if domain == ""})


def onnx_backend_cases(notes: list | None = None) -> list[Case]:
    """ONNX's node test cases for the standard ops raised into the dialect (ScatterElements, ReduceL2, Unique,
    ...), raised with converters.convert(to="openvino"); the ONNX expected outputs become the documented
    values. An axes/axis input fed at run time is also tried as a constant."""
    try:
        from converters import convert
        raised_ops = _raised_standard_ops()
    except ImportError as exc:
        _note(notes, f"ONNX backend cases left out: the converter is not available ({exc})")
        return []
    import onnx.backend.test.case.node as node_cases
    collected = node_cases._NodeTestCases
    for op in raised_ops:  # importing a module runs its exporters, which append their cases
        try:
            importlib.import_module(f"onnx.backend.test.case.node.{op.lower()}")
        except ImportError:
            _note(notes, f"{op}: onnx has no backend node cases module {op.lower()}")
    cases = []
    for test in collected:
        if test.name.endswith("_expanded") or "_expanded_" in test.name:
            continue
        node = test.model.graph.node[0]
        if node.op_type not in raised_ops:
            continue
        inputs, outputs = test.data_sets[0]
        variants = [(test.name, test.model, inputs)]
        axes = _axes_positions(node)
        if axes and len(axes) == len(test.model.graph.input) - 1 == len(inputs) - 1:  # axes fed at run time
            frozen = _freeze(test.model, list(test.model.graph.input)[1:], inputs[1:])
            variants = [(test.name, frozen, inputs[:1]), (f"{test.name}/runtime-axes", test.model, inputs)]
        for name, model, feeds in variants:
            try:
                raised, _ = convert(model, to="openvino")
                cases.append(_from_model(f"onnx/{name}", raised, feeds, outputs))
            except (BridgeError, ValueError) as exc:
                _note(notes, f"{name}: not raised into the dialect ({exc})")
    return cases


def _axes_positions(node) -> list[int]:
    """Input positions of `node` (a standard op) that its schema names axes or axis."""
    try:
        schema = onnx.defs.get_schema(node.op_type, domain="")
    except onnx.defs.SchemaError:
        return []
    names = [formal.name for formal in schema.inputs]
    return [i for i, name in enumerate(names[:len(node.input)]) if name in ("axes", "axis") and node.input[i]]


def _freeze(model: onnx.ModelProto, graph_inputs, arrays) -> onnx.ModelProto:
    """A copy of `model` with the given graph inputs turned into initializers holding `arrays`."""
    frozen = onnx.ModelProto()
    frozen.CopyFrom(model)
    names = {value.name for value in graph_inputs}
    kept = [value for value in frozen.graph.input if value.name not in names]
    del frozen.graph.input[:]
    frozen.graph.input.extend(kept)
    for value, array in zip(graph_inputs, arrays):
        frozen.graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(array), value.name))
    return frozen


def _note(notes, text: str) -> None:
    if notes is not None:
        notes.append(text)


def _from_model(case_id: str, model: onnx.ModelProto, inputs, outputs) -> Case:
    """An op case when the model is one dialect node whose tensors are graph inputs and whose axis/axes
    are constants; a model case otherwise."""
    graph = model.graph
    names = [i.name for i in graph.input]
    feeds = {name: np.asarray(value) for name, value in zip(names, inputs)}
    constants = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.domain == "":
            constants[node.output[0]] = onnx.numpy_helper.to_array(node.attribute[0].t)
    dialect = [n for n in graph.node if n.domain == DOMAIN]
    others = [n for n in graph.node if n.domain != DOMAIN and n.op_type != "Constant"]
    expected = tuple(np.asarray(o) for o in outputs)
    if len(dialect) == 1 and not others and list(dialect[0].output) == [o.name for o in graph.output]:
        node = dialect[0]
        from .cases import spec_of
        spec = spec_of(node.op_type)
        case_inputs = {}
        for port, name in zip(spec.inputs, list(node.input) + [""] * len(spec.inputs)):
            case_inputs[port.name] = feeds.get(name, constants.get(name)) if name else None
        attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        attributes = {k: v.decode() if isinstance(v, bytes) else v for k, v in attributes.items()}
        name = case_id.split("/", 1)[1]
        return _case(name, node.op_type, case_inputs, attributes, expected, "onnx",
                     f"ONNX backend case {name}, raised into the dialect")
    name = case_id.split("/", 1)[1]
    group = f"{dialect[0].op_type} (graph)" if dialect else "graph"
    return Case(case_id, MODEL, feeds, source="onnx", model=model, expected=expected, group=group,
                description=f"ONNX backend case {name}, raised into the dialect ({len(graph.node)} nodes)")


# ------------------------------------------------------------------------------------------------------
# User models


def model_cases(paths, inputs_path=None, seed: int = 0) -> list[Case]:
    """One case per model file; inputs from `inputs_path` (.npz by input name), or `<stem>_inputs.npz`
    next to the model, or generated from the model's input types."""
    cases = []
    for path in paths:
        path = Path(path)
        model = load_model(path)
        feeds_path = Path(inputs_path) if inputs_path else path.with_name(f"{path.stem}_inputs.npz")
        given = _load_npz(feeds_path) if inputs_path or feeds_path.is_file() else {}
        feeds, generated = model_inputs(model, given, seed)
        origin = f"inputs from {feeds_path.name}" if given else "generated inputs"
        if generated and given:
            origin += f" (generated: {', '.join(generated)})"
        case_id = f"model/{path.stem}"
        if any(c.id == case_id for c in cases):
            case_id = f"model/{path.stem}-{len(cases)}"
        case = Case(case_id, MODEL, feeds, source="model", model=model, group=path.name,
                    description=f"{path.name}: {len(model.graph.node)} nodes, "
                                f"{_dialect_count(model)} dialect; {origin}")
        cases.append(case)
    return cases


def _load_npz(path: Path) -> dict:
    if not path.is_file():
        raise ModelError(f"inputs file not found: {path}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except Exception as exc:
        raise ModelError(f"{path} is not a readable .npz of input arrays: {exc}") from None


def _dialect_count(model) -> int:
    return sum(1 for node in model.graph.node if node.domain == DOMAIN)


def model_inputs(model: onnx.ModelProto, given: dict, seed: int = 0) -> tuple[dict, list[str]]:
    """Feeds for every graph input: `given` ones, the others generated (returns feeds, generated names).

    Dimensions without a value get 3 (one size per symbolic name). Integer inputs that index a scatter
    get values valid for the target dimension when its size is known, small non-negative numbers otherwise.
    """
    rng = np.random.default_rng(seed)
    initializers = {t.name for t in model.graph.initializer}
    limits = _index_limits(model)
    feeds, generated, symbols = {}, [], {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        if value.name in given:
            feeds[value.name] = given[value.name]
            continue
        tensor = value.type.tensor_type
        if tensor.elem_type not in ONNX_TO_NUMPY:
            raise ModelError(f"input {value.name!r} has an element type the conformance runner cannot "
                             f"generate ({onnx.TensorProto.DataType.Name(tensor.elem_type)}); give --inputs")
        dtype = ONNX_TO_NUMPY[tensor.elem_type]
        shape = tuple(d.dim_value if d.HasField("dim_value") else symbols.setdefault(d.dim_param or id(d), 3)
                      for d in tensor.shape.dim)
        if dtype.kind in "iu" and dtype != BFLOAT16:
            high = limits.get(value.name, 3)
            feeds[value.name] = rng.integers(0, max(high, 1), shape).astype(dtype)
        else:
            feeds[value.name] = values(rng, dtype, shape)
        generated.append(value.name)
    unknown = sorted(set(given) - set(feeds))
    if unknown:
        raise ModelError(f"inputs file has arrays for no graph input: {', '.join(unknown)}; "
                         f"the model's inputs are {', '.join(v.name for v in model.graph.input)}")
    return feeds, generated


def _index_limits(model: onnx.ModelProto) -> dict[str, int]:
    """graph input name -> size of the dimension it indexes (index inputs of the units that declare
    index_input, with a static target)."""
    from custom_ops.schemas import register_schemas
    register_schemas()
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001  (shapes are a help here)
        inferred = model
    shapes = {}
    for value in list(inferred.graph.input) + list(inferred.graph.value_info):
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
    constants = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    limits = {}
    for node in model.graph.node:
        unit = custom_ops.unit_of(node.op_type) if node.domain == DOMAIN else None
        if unit is None or unit.index_input is None:  # (index, data, axis) input numbers of the unit
            continue
        indices, data, axis = (node.input[i] if i < len(node.input) else "" for i in unit.index_input)
        shape = shapes.get(data)
        if axis in constants and shape:
            a = int(constants[axis].reshape(-1)[0]) % len(shape)
            if shape[a]:
                limits[indices] = shape[a]
    return limits


# ------------------------------------------------------------------------------------------------------
# The whole corpus


def build_corpus(size: str = "medium", cases: int | None = None, seed: int = 0, models=(), inputs=None,
                 sources=("seed", "onnx", "generated"), only=(), notes: list | None = None) -> list[Case]:
    """Seeds + ONNX backend cases + generated cases (`cases` in all, or the per-op count of `size`) +
    one case per model file. `only`: glob patterns on case ids, ops or tags (any may match)."""
    if size not in SIZES:
        raise BridgeError(f"unknown size {size!r}; choose one of {', '.join(SIZES)}")
    corpus: list[Case] = []
    if "seed" in sources:
        corpus += seed_cases(large=size == "large")
    if "onnx" in sources:
        corpus += onnx_backend_cases(notes)
    if "generated" in sources:
        corpus += generated_cases(per_op=None if cases is not None else SIZES[size], total=cases, seed=seed)
    corpus += model_cases(models, inputs, seed)
    if only:
        corpus = [c for c in corpus if _selected(c, only)]
    return corpus


def _selected(case: Case, patterns) -> bool:
    keys = [case.id, case.op, *case.tags]
    return any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns for key in keys)
