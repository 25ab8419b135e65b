"""One op, one place: every dialect op is a unit (custom_ops.unit) with every piece present or declared
Absent with a reason, and the generic modules name no dialect op (they iterate over the units)."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import custom_ops
from custom_ops.ops import unit_modules
from custom_ops.unit import Absent, DialectUnit, present

ROOT = Path(__file__).resolve().parents[1]
UNITS = custom_ops.units()
OPTIONAL = ("cases", "bad_cases", "lowering", "raising", "torch", "divergences", "benchmark")

#: Modules that still name dialect ops, each with the reason. Shrinking this list is the way forward;
#: a module that no longer names an op must leave it (test_allow_list_is_current).
NOT_YET_OP_AGNOSTIC = {
    "converters/openvino_ir/rules/selection.py": "the standard rule of OpenVINO's ROIAlign (a standard OpenVINO op "
                                                 "of the same name), which imports the configurations ONNX "
                                                 "RoiAlign does not match as the ROIAlign unit, and of NonMaxSuppression "
                                                 "(soft NMS as the NonMaxSuppression unit)",
}


def _unit_files() -> set[str]:
    """Files allowed to name ops: the unit modules and the lowering/raising/torch modules they point to."""
    files = {str(Path(*name.split(".")).with_suffix(".py")) for name in unit_modules()}
    files |= {str(p.relative_to(ROOT)) for p in (ROOT / "custom_ops" / "ops").rglob("*.py")}
    for unit in UNITS:
        for pointer in (unit.lowering, unit.raising, unit.torch):
            if present(pointer):
                files.add(str(Path(*pointer.split(".")).with_suffix(".py")))
    return files


def named_ops(source: str, ops) -> set[str]:
    """Dialect op names used in code (identifiers, and string constants that are not docstrings or
    comments) of a module's source."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    standard = set()  # ("", "Name"): the standard ONNX op Name (default domain), not the dialect op
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple) and len(node.elts) == 2 and \
                all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts) and \
                node.elts[0].value == "":
            standard.add(id(node.elts[1]))
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings | standard:
            words |= set(re.findall(r"[A-Za-z0-9_]+", node.value))
        elif isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
    return words & set(ops)


def _generic_sources():
    allowed = _unit_files()
    for package in ("custom_ops", "converters", "onnx_bridge", "benchmarks"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = str(path.relative_to(ROOT))
            if relative not in allowed:
                yield relative, path.read_text()


OPS = [unit.op_type for unit in UNITS]


def test_every_module_defines_a_unit_and_every_op_is_one():
    assert len(unit_modules()) == len(UNITS) >= 5
    assert set(OPS) == set(custom_ops.op_types())
    for name in unit_modules():
        unit = importlib.import_module(name).UNIT
        assert isinstance(unit, DialectUnit)
        assert name.split(".")[-2] == unit.family, name
        assert name.rsplit(".", 1)[1].replace("_", "") == unit.op_type.lower(), name  # <op_snake>.py


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.op_type)
def test_unit_has_every_piece(unit):
    assert unit.specs and all(spec.op_type == unit.op_type for spec in unit.specs)
    for spec in unit.specs:
        assert callable(spec.kernel) and callable(spec.infer), spec.since_version
        for port in spec.inputs + spec.outputs:
            assert port.type_constraint in spec.type_constraints, port.name
    side = unit.openvino
    assert side.type_name and side.versions and callable(side.factory)
    assert set(side.constant_inputs) <= {port.name for port in unit.newest.inputs}
    assert {m.name for m in side.attributes} == {a.name for a in unit.newest.attributes}
    assert present(side.output_shapes) or (isinstance(side.output_shapes, Absent) and side.output_shapes.reason)
    for piece in OPTIONAL:
        value = getattr(unit, piece)
        assert present(value) or (isinstance(value, Absent) and len(value.reason) > 10), piece


def _rule_modules(registry) -> set[str]:
    return {registry.lookup(domain, op, version)[1].__module__ for domain, op, version in registry.entries()}


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.op_type)
def test_lowering_and_raising_pointers_register_rules(unit):
    from converters.registry import LOWERING, RAISING
    from custom_ops.config import DOMAIN
    if present(unit.lowering):
        assert LOWERING.handles(DOMAIN, unit.op_type) and unit.lowering in _rule_modules(LOWERING)
    else:
        assert not LOWERING.handles(DOMAIN, unit.op_type), "a lowering its unit does not name"
    if present(unit.raising):
        assert unit.raising in _rule_modules(RAISING), unit.raising


def test_import_rules_and_backend_cover_every_unit():
    from converters.openvino_ir import rules  # noqa: F401
    from converters.openvino_ir._registry import load_all
    RULES = load_all()
    from onnx_bridge.backends import openvino as backend
    for unit in UNITS:
        for version in unit.openvino.versions:
            assert (unit.openvino.type_name, version) in RULES
    assert set(backend.OPS) == set(OPS)


def test_no_generic_module_names_a_dialect_op():
    offenders = {}
    for relative, source in _generic_sources():
        names = named_ops(source, OPS)
        if names and relative not in NOT_YET_OP_AGNOSTIC:
            offenders[relative] = sorted(names)
    assert not offenders, f"generic modules naming dialect ops (iterate over custom_ops.units()): {offenders}"


def test_allow_list_is_current():
    naming = {relative for relative, source in _generic_sources() if named_ops(source, OPS)}
    stale = set(NOT_YET_OP_AGNOSTIC) - naming
    assert not stale, f"no longer name an op, drop them from NOT_YET_OP_AGNOSTIC: {sorted(stale)}"


def test_the_scan_finds_an_op_named_in_code():
    """Self-test: code naming an op is found; docstrings and comments are not code."""
    code = 'def f(node):\n    """Unique is documented here."""\n    # ReduceL2 in a comment\n' \
           '    return node.op_type == "ScatterUpdate"\n'
    assert named_ops(code, OPS) == {"ScatterUpdate"}
    assert named_ops("table = {'GatherTree': 1}\n", OPS) == {"GatherTree"}
    assert named_ops("x = unit.op_type\n", OPS) == set()
    assert named_ops('if (domain, op) == ("", "Unique"):\n    pass\n', OPS) == set()  # the standard op
    assert named_ops('if (domain, op) == ("x", "Unique"):\n    pass\n', OPS) == {"Unique"}


_PROBE = """
'''A synthetic unit with ints/floats/float attributes and an optional middle input, registered before any
session: prepare_model + PyOp path end to end.'''
import numpy as np
import custom_ops.ops as registry
from custom_ops.unit import Absent, Attribute, DialectUnit, OpenVINO, OpSpec, Port, same_as_input
from custom_ops._types import FLOAT_TYPES, INTEGER_TYPES

def kernel(data, offset=None, scale=None, shifts=(0,), weights=(1.0,), bias=0.0):
    out = data.astype(np.float64) * sum(weights) + bias + sum(shifts)
    if offset is not None:
        out = out + offset
    if scale is not None:
        out = out * scale
    return (out.astype(data.dtype),)

spec = OpSpec("ProbeOp", 1, (Port("data", "T"), Port("offset", "T", optional=True), Port("scale", "T", optional=True)),
              (Port("y", "T"),),
              (Attribute("shifts", "ints", [0]), Attribute("weights", "floats", [1.0]), Attribute("bias", "float", 0.0)),
              {"T": (np.dtype(np.float32), np.dtype(np.float16))}, kernel, infer=same_as_input(0))
unit = DialectUnit("ProbeOp", "linalg", (spec,), OpenVINO("ProbeOp", (1,), factory=lambda ov, i, a: None,
                   output_shapes=Absent("probe")), cases=Absent("probe"), bad_cases=Absent("probe"))
registry.load()
registry._register(unit, "probe")

import onnx
from onnx import helper, TensorProto
import onnx_bridge
node = helper.make_node("ProbeOp", ["x", "", "s"], ["y"], domain="org.openvinotoolkit", shifts=[1, 2], weights=[0.5, 0.25], bias=0.5)
for dt, code in ((np.float32, TensorProto.FLOAT), (np.float16, TensorProto.FLOAT16)):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", code, [3]), helper.make_tensor_value_info("s", code, [3])],
                          [helper.make_tensor_value_info("y", code, [3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("org.openvinotoolkit", 12)], ir_version=10)
    x = np.array([1, 2, 3], dt); s = np.array([2, 2, 2], dt)
    got = onnx_bridge.InferenceSession(m.SerializeToString()).run(None, {"x": x, "s": s})[0]
    want = kernel(x, None, s, [1, 2], [0.5, 0.25], 0.5)[0]
    assert got.dtype == want.dtype and np.array_equal(got, want)
from custom_ops._schemas import register_schemas
register_schemas(); onnx.checker.check_model(m, full_check=True)
print("ok")
"""


def test_generic_machinery_runs_a_new_unit_with_list_attributes_and_an_absent_middle_input():
    """A unit with ints/floats/float attributes and an absent optional middle input, registered before any
    session (in a fresh process: onnxruntime-extensions domains cannot grow once a session loaded them),
    runs through prepare_model and the PyOps, float16 widened, and passes onnx.checker."""
    import os
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]


def test_open_order_comes_from_the_units_and_the_standard_table_names_no_unit():
    """Whole-model compare's tie-dependent ops: the units that declare `open_order`, plus a table of
    standard OpenVINO ops that must not name a unit (a unit says it in its own `open_order`)."""
    from onnx_bridge.compare_models import STANDARD_TIE_OPS, tie_ops
    declared = {unit.openvino.type_name for unit in UNITS if unit.open_order}
    assert declared and declared | STANDARD_TIE_OPS == tie_ops()
    assert not STANDARD_TIE_OPS & {unit.openvino.type_name for unit in UNITS}
