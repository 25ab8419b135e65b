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

from custom_ops._types import BFLOAT16, ONNX_TO_NUMPY
from converters.model_io import load_model
from onnx_bridge.config import DOMAIN
from onnx_bridge.errors import BridgeError, ModelError

from .cases import MODEL, SHORT, Case, full_attributes
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
# Seed examples (DIALECT.md section 3)


def seed_cases(large: bool = False) -> list[Case]:
    seu = "ScatterElementsUpdate"
    data = np.arange(15, dtype=F32).reshape(3, 5)
    su_expected = data.copy()
    su_expected[:, 0], su_expected[:, 2] = 1, [1, 1, 2]
    cases = [
        _case("seu-sum-init1", seu, dict(data=A([2, 3, 4, 6], F32), indices=A([1, 0, 0, -2, -1, 2]),
                                         updates=A([10, 20, 30, 40, 70, 60], F32), axis=A(0)),
              {"reduction": "sum", "use_init_val": 1}, (A([52, 13, 104, 76], F32),),
              description="OpenVINO spec: sum with use_init_val=1, negative indices"),
        _case("seu-sum-init0", seu, dict(data=A([2, 3, 4, 6], F32), indices=A([1, 0, 0, 2, 3, 2]),
                                         updates=A([10, 20, 30, 40, 70, 60], F32), axis=A(0)),
              {"reduction": "sum", "use_init_val": 0}, (A([50, 10, 100, 70], F32),),
              description="OpenVINO spec: sum with use_init_val=0"),
        _case("seu-none-axis1", seu, dict(data=np.zeros((3, 4), F32), indices=A([[1, 2], [0, 3]]),
                                          updates=A([[11, 12], [13, 14]], F32), axis=A(1)),
              {"reduction": "none"}, (A([[0, 11, 12, 0], [13, 0, 0, 14], [0, 0, 0, 0]], F32),),
              description="OpenVINO spec: reduction none along axis 1"),
        _case("seu-sum-axis1", seu, dict(data=np.ones((3, 4), F32), indices=A([[1, 1], [0, 3]]),
                                         updates=A([[11, 12], [13, 14]], F32), axis=A(1)),
              {"reduction": "sum"}, (A([[1, 24, 1, 1], [14, 1, 1, 15], [1, 1, 1, 1]], F32),),
              description="OpenVINO spec: sum along axis 1 with a duplicate"),
        _case("seu-prod-axis1", seu, dict(data=np.full((3, 4), 2, F32), indices=A([[1, 1], [0, 3]]),
                                          updates=A([[11, 12], [13, 14]], F32), axis=A(1)),
              {"reduction": "prod"}, (A([[2, 264, 2, 2], [26, 2, 2, 28], [2, 2, 2, 2]], F32),),
              description="OpenVINO spec: prod along axis 1 with a duplicate"),
        _case("su-axis1", "ScatterUpdate", dict(data=data, indices=A([0, 2]),
                                                updates=A([[1, 1], [1, 1], [1, 2]], F32), axis=A(1)),
              expected=(su_expected,), description="OpenVINO spec: columns 0 and 2 replaced"),
        _case("onnx-example1", seu, dict(data=np.zeros((3, 3), F32), indices=A([[1, 0, 2], [0, 2, 1]]),
                                         updates=A([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], F32), axis=A(0)),
              expected=(A([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]], F32),),
              description="ONNX ScatterElements example 1 in the dialect"),
        _case("onnx-example2", seu, dict(data=A([[1.0, 2.0, 3.0, 4.0, 5.0]], F32), indices=A([[1, 3]]),
                                         updates=A([[1.1, 2.1]], F32), axis=A(1)),
              expected=(A([[1.0, 1.1, 3.0, 2.1, 5.0]], F32),),
              description="ONNX ScatterElements example 2 in the dialect"),
        _case("l2-perf-shape", "ReduceL2",
              dict(data=np.random.default_rng(0).standard_normal((6, 12, 10, 24)).astype(F32),
                   axes=A([1, 3])), {"keep_dims": 1},
              description="ReduceL2 on the seeds' performance shape 6x12x10x24"),
    ]
    if large:  # ~50 MB of data; the ScatterUpdate performance shape (1.5 GB of updates) is left out
        rng = np.random.default_rng(1)
        cases.append(_case(
            "seu-perf-shape", seu,
            dict(data=rng.standard_normal((1000, 256, 7, 7)).astype(F32),
                 indices=rng.integers(-1000, 1000, (125, 20, 7, 6)),
                 updates=rng.standard_normal((125, 20, 7, 6)).astype(F32), axis=A(0)),
            {"reduction": "sum"}, description="ScatterElementsUpdate on the seeds' performance shape"))
    return cases


# ------------------------------------------------------------------------------------------------------
# ONNX backend node cases (onnx's own test data), raised into the dialect by the converter

BACKEND_MODULES = ("scatterelements", "reducel2", "unique")


def onnx_backend_cases(notes: list | None = None) -> list[Case]:
    """ONNX's node test cases for ScatterElements, ReduceL2 and Unique, raised into the dialect with
    converters.convert(to="openvino"); the ONNX expected outputs become the documented values."""
    try:
        from converters import convert
    except ImportError as exc:
        _note(notes, f"ONNX backend cases left out: the converter is not available ({exc})")
        return []
    import onnx.backend.test.case.node as node_cases
    collected = node_cases._NodeTestCases
    for name in BACKEND_MODULES:  # importing a module runs its exporters, which append their cases
        importlib.import_module(f"onnx.backend.test.case.node.{name}")
    cases = []
    for test in collected:
        if test.name.endswith("_expanded") or "_expanded_" in test.name:
            continue
        if test.model.graph.node[0].op_type not in ("ScatterElements", "ReduceL2", "Unique"):
            continue
        inputs, outputs = test.data_sets[0]
        variants = [(test.name, test.model, inputs)]
        if test.model.graph.node[0].op_type == "ReduceL2":  # axes are a graph input: also as a constant
            frozen = _freeze(test.model, list(test.model.graph.input)[1:], inputs[1:])
            variants = [(test.name, frozen, inputs[:1]), (f"{test.name}/runtime-axes", test.model, inputs)]
        for name, model, feeds in variants:
            try:
                raised, _ = convert(model, to="openvino")
                cases.append(_from_model(f"onnx/{name}", raised, feeds, outputs))
            except (BridgeError, ValueError) as exc:
                _note(notes, f"{name}: not raised into the dialect ({exc})")
    return cases


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
    """graph input name -> size of the dimension it indexes (scatter indices with a static target)."""
    from custom_ops._schemas import register_schemas
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
        if node.domain != DOMAIN or node.op_type not in ("ScatterElementsUpdate", "ScatterUpdate"):
            continue
        data, indices, axis = node.input[0], node.input[1], node.input[3]
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
    keys = [case.id, case.op, SHORT.get(case.op, case.op), *case.tags]
    return any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns for key in keys)
