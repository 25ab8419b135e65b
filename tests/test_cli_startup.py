"""Start-up of `onnx-bridge convert`: what a fresh process imports to convert an OpenVINO IR without dialect
ops, and the declarations that let it skip the rest (checked against what they stand for)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Loaded by other commands or by models that need them, never by converting a plain IR to standard ONNX.
HEAVY = ("onnxruntime", "onnxruntime_extensions", "onnx.reference", "custom_ops.ops", "custom_ops.pyops",
         "custom_ops.reference", "converters.lowering", "converters.raising", "onnx_bridge.divergences",
         "onnx_bridge.session", "hypothesis", "torch", "scipy")


def _modules(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def _loaded(modules: set[str], names) -> list[str]:
    return sorted(name for name in names if any(m == name or m.startswith(name + ".") for m in modules))


def test_cli_import_loads_no_numpy_onnx_or_units():
    modules = _modules("import onnx_bridge.cli")
    assert not _loaded(modules, ("numpy", "onnx", "openvino", *HEAVY))


def test_convert_of_a_plain_ir_loads_only_what_it_uses(tmp_path):
    openvino = pytest.importorskip("openvino")
    from openvino import opset13 as ops
    x = ops.parameter([1, 4], openvino.Type.f32, name="x")
    model = openvino.Model([ops.relu(ops.add(x, ops.constant([[1.0, 2.0, 3.0, 4.0]], openvino.Type.f32)))], [x])
    openvino.save_model(model, str(tmp_path / "m.xml"))
    modules = _modules(f"from onnx_bridge.cli import main\n"
                       f"assert main(['convert', {str(tmp_path / 'm.xml')!r}, '-o', {str(tmp_path / 'm.onnx')!r}]) == 0")
    assert (tmp_path / "m.onnx").is_file()
    assert not _loaded(modules, HEAVY)


def test_dialect_rules_load_on_demand():
    """A lookup the eager rules do not answer, and every listing, runs the deferred registrations."""
    code = ("from converters.openvino_ir import _registry, supported_ops\n"
            "before = len(_registry.RULES)\n"
            "ops = supported_ops()\n"
            "print(before, len(_registry.RULES), len(ops))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    before, after, listed = map(int, out.stdout.split())
    assert before < after == listed


def test_convert_help_names_the_units_ops():
    """Its help text, filled in when printed, names the ops of the units (loaded then)."""
    out = subprocess.run([sys.executable, "-m", "onnx_bridge.cli", "convert", "--help"], capture_output=True,
                         text=True, cwd=ROOT, check=True, env={**os.environ, "COLUMNS": "400"}).stdout
    assert "raise standard ONNX into the dialect ops ReduceL2/ScatterElementsUpdate/Unique;" in out
    assert "(float rounding of ReduceL2;" in out


def test_lazy_registries_answer_as_before():
    """custom_ops' and converters' registries fill on first use: specs, units, lowering and raising rules."""
    code = ("import custom_ops, converters\n"
            "from converters.registry import LOWERING, RAISING\n"
            "from custom_ops.config import DOMAIN\n"
            "print(len(custom_ops.op_types()), len(custom_ops.units()), custom_ops.resolve('Unique', 15).op_type,\n"
            "      LOWERING.handles(DOMAIN, 'Unique'), RAISING.handles('', 'Unique'), len(LOWERING.entries()) > 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    specs, units, op, lowers, raises, entries = out.stdout.split()
    assert int(specs) == int(units) > 10 and op == "Unique"
    assert (lowers, raises, entries) == ("True", "True", "True")


def test_first_use_from_many_threads_sees_whole_registries():
    """Threads that all trigger the first load: none of them reads a registry still filling."""
    code = ("import threading, custom_ops\n"
            "from converters.registry import LOWERING\n"
            "from converters.openvino_ir import _registry\n"
            "from custom_ops.config import DOMAIN\n"
            "results, barrier = [], threading.Barrier(8)\n"
            "def work():\n"
            "    barrier.wait()\n"
            "    results.append((len(custom_ops.op_types()), LOWERING.handles(DOMAIN, 'Unique'),\n"
            "                    len(_registry.load_all())))\n"
            "threads = [threading.Thread(target=work) for _ in range(8)]\n"
            "[t.start() for t in threads]; [t.join() for t in threads]\n"
            "print(len(results), len(set(results)), *results[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    count, distinct, specs, lowers, rules = out.stdout.split()
    assert (count, distinct, lowers) == ("8", "1", "True") and int(specs) > 10 and int(rules) > 100


def test_a_failed_unit_load_is_not_left_half_done():
    """A unit module that fails to import: every use raises (not a registry missing the later units), and
    once it imports the registry is whole."""
    code = ("import custom_ops, custom_ops.ops as ops\n"
            "real = ops.unit_modules\n"
            "ops.unit_modules = lambda: real()[:3] + ['custom_ops.ops.no_such_unit'] + real()[3:]\n"
            "for _ in range(2):\n"
            "    try:\n"
            "        custom_ops.op_types(); print('answered')\n"
            "    except ImportError:\n"
            "        print('raised')\n"
            "ops.unit_modules = real\n"
            "print(len(custom_ops.op_types()) == len(custom_ops.units()) == len(real()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["raised", "raised", "True"]


def test_custom_ops_lists_its_lazy_names():
    """dir(custom_ops) and `from custom_ops import *` see the lazily imported names; none loads the units."""
    code = ("import sys, custom_ops\n"
            "names = set(dir(custom_ops))\n"
            "namespace = {}\n"
            "exec('from custom_ops import *', namespace)\n"
            "print(set(custom_ops.__all__) <= names, set(custom_ops.__all__) <= set(namespace),\n"
            "      any(m.startswith('custom_ops.ops.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["True", "True", "False"]


def test_uncommon_rule_modules_load_on_the_first_op_they_answer(tmp_path):
    """Converting an IR of common ops imports only rules.COMMON (and their helpers); an op of another module
    (If) imports the rest, and converts."""
    openvino = pytest.importorskip("openvino")
    from openvino import opset13 as ops
    x = ops.parameter([1, 4], openvino.Type.f32, name="x")
    plain = openvino.Model([ops.relu(ops.add(x, ops.constant([[1.0, 2.0, 3.0, 4.0]], openvino.Type.f32)))], [x])
    openvino.save_model(plain, str(tmp_path / "plain.xml"))
    code = (f"import sys\n"
            f"from converters.openvino_ir import import_ir, rules\n"
            f"import_ir({str(tmp_path / 'plain.xml')!r})\n"
            f"prefix = rules.__name__ + '.'\n"
            f"loaded = {{m[len(prefix):] for m in sys.modules if m.startswith(prefix)}}\n"
            f"print(sorted(set(rules.COMMON) - loaded), 'control_flow' in loaded, len(loaded) < len(rules.all_modules()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["[]", "False", "True"]

    condition = ops.parameter([], openvino.Type.boolean, name="c")
    branch_x = ops.parameter([1, 4], openvino.Type.f32)
    then_body = openvino.Model([ops.result(ops.relu(branch_x))], [branch_x])
    else_x = ops.parameter([1, 4], openvino.Type.f32)
    else_body = openvino.Model([ops.result(else_x)], [else_x])
    choose = ops.if_op(condition)
    choose.set_then_body(then_body)
    choose.set_else_body(else_body)
    choose.set_input(x.output(0), branch_x, else_x)
    choose.set_output(then_body.get_results()[0], else_body.get_results()[0])
    openvino.save_model(openvino.Model([choose.output(0)], [condition, x]), str(tmp_path / "if.xml"))
    code = (f"import sys\n"
            f"from converters.openvino_ir import import_ir, rules\n"
            f"model = import_ir({str(tmp_path / 'if.xml')!r})\n"
            f"prefix = rules.__name__ + '.'\n"
            f"print([n.op_type for n in model.graph.node], all(prefix + m in sys.modules for m in rules.all_modules()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert "'If'" in out.stdout and out.stdout.split()[-1] == "True"


def test_a_failed_rule_module_import_is_not_left_half_done():
    """A rule module that fails to import on demand: every lookup raises (not a registry missing the rules of
    the modules imported before it), and once it imports the registry is whole."""
    code = ("from converters.openvino_ir import _registry, rules\n"
            "real = rules.all_modules\n"
            "rules.all_modules = lambda: real()[:5] + ['no_such_rules'] + real()[5:]\n"
            "for _ in range(2):\n"
            "    try:\n"
            "        _registry.load_all(); print('answered')\n"
            "    except ImportError:\n"
            "        print('raised')\n"
            "rules.all_modules = real\n"
            "print(len(_registry.load_all()), ('If', 8) in _registry.RULES)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    base = subprocess.run([sys.executable, "-c", "from converters.openvino_ir import supported_ops\n"
                           "print(len(supported_ops()))"], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["raised", "raised", base.stdout.strip(), "True"]


def test_convert_runs_with_cycle_collection_paused(monkeypatch):
    """`convert` (its module imports included) runs with the cyclic collector off, turned on again after it;
    other commands keep it on; an error inside leaves it on too."""
    import gc

    from onnx_bridge import cli
    from onnx_bridge.commands import convert, run

    seen = {}
    monkeypatch.setattr(convert, "main", lambda args: seen.setdefault("convert", gc.isenabled()) and 0)
    monkeypatch.setattr(run, "main", lambda args: seen.setdefault("run", gc.isenabled()) and 0)
    assert gc.isenabled()
    cli.main(["convert", "in.xml", "-o", "out.onnx"])
    cli.main(["run", "model.onnx"])
    assert seen == {"convert": False, "run": True} and gc.isenabled()
    with pytest.raises(SystemExit):
        cli.main(["convert", "--no-such-option"])
    assert gc.isenabled()


def test_a_paused_collection_nests():
    """A pause inside a pause leaves the collector off until the outer one ends; pause=False changes nothing."""
    import gc

    from custom_ops.cycles import cycle_collection_paused

    with cycle_collection_paused():
        with cycle_collection_paused():
            pass
        assert not gc.isenabled()
        with cycle_collection_paused(False):
            assert not gc.isenabled()
    assert gc.isenabled()
    with cycle_collection_paused(False):
        assert gc.isenabled()


def _plain_ir(directory: Path) -> Path:
    openvino = pytest.importorskip("openvino")
    from openvino import opset13 as ops
    x = ops.parameter([1, 4], openvino.Type.f32, name="x")
    openvino.save_model(openvino.Model([ops.relu(x)], [x]), str(directory / "m.xml"))
    return directory / "m.xml"


#: A child process that registers an exit handler, then runs the console script on its arguments.
_CONSOLE = ("import atexit, sys\n"
            "atexit.register(lambda: print('teardown ran'))\n"
            "from onnx_bridge import cli\n"
            "cli.console()\n")


def test_console_convert_ends_the_process_without_teardown(tmp_path):
    """The console script's `convert` ends its process once stdout is flushed (written to a file: fully buffered):
    its whole output and exit code are there, Python's exit handlers do not run; an error keeps its exit code."""
    xml = _plain_ir(tmp_path)
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with open(tmp_path / "stdout", "w") as stdout:
        done = subprocess.run([sys.executable, "-c", _CONSOLE, "convert", str(xml), "-o", str(tmp_path / "m.onnx")],
                              stdout=stdout, cwd=ROOT, env=buffered)
    text = (tmp_path / "stdout").read_text()
    assert done.returncode == 0 and (tmp_path / "m.onnx").is_file()
    assert text.rstrip().endswith(f"wrote {tmp_path / 'm.onnx'}") and "teardown ran" not in text
    missing = subprocess.run([sys.executable, "-c", _CONSOLE, "convert", str(tmp_path / "no.xml"), "-o",
                              str(tmp_path / "no.onnx")], capture_output=True, text=True, cwd=ROOT)
    assert missing.returncode == 3 and "does not exist" in missing.stderr and "teardown ran" not in missing.stdout


def test_console_of_other_commands_exits_as_python_does(tmp_path):
    """Commands outside FAST_EXIT, and `convert` under a tracer or with coverage loaded (they write their data
    at exit), end through Python's own exit: its exit handlers run."""
    from onnx_bridge import cli

    assert "run" not in cli.FAST_EXIT
    done = subprocess.run([sys.executable, "-c", _CONSOLE, "run", str(tmp_path / "no.onnx")], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode != 0 and "teardown ran" in done.stdout
    for prefix in ("import sys; sys.settrace(lambda *a: None)\n",
                   "import sys, types; sys.modules['coverage'] = types.ModuleType('coverage')\n"):
        kept = subprocess.run([sys.executable, "-c", prefix + _CONSOLE, "convert", str(tmp_path / "no.xml"), "-o",
                               str(tmp_path / "no.onnx")], capture_output=True, text=True, cwd=ROOT)
        assert kept.returncode == 3 and "teardown ran" in kept.stdout


def test_convert_limits_openblas_to_one_thread_before_numpy_loads(monkeypatch):
    """SINGLE_THREADED_BLAS: set for `convert` when numpy is not loaded yet; a user's value, other commands and a
    process where numpy is loaded already are left alone."""
    from onnx_bridge import cli

    variable = cli.BLAS_THREADS_VARIABLE
    monkeypatch.delenv(variable, raising=False)
    cli.limit_blas_threads("convert")  # numpy is loaded in this test process: too late, nothing set
    assert variable not in os.environ
    monkeypatch.delitem(sys.modules, "numpy")
    for command in ("run", None):
        cli.limit_blas_threads(command)
        assert variable not in os.environ
    cli.limit_blas_threads("convert")
    assert os.environ[variable] == "1"
    monkeypatch.setenv(variable, "4")
    cli.limit_blas_threads("convert")
    assert os.environ[variable] == "4"


def test_a_fresh_convert_starts_numpy_with_one_blas_thread(tmp_path):
    """In a fresh `convert`, numpy loads after the limit is set: OpenBLAS runs on one thread (on more than one
    core it would start one a core)."""
    pytest.importorskip("threadpoolctl")
    xml = _plain_ir(tmp_path)
    code = (f"from onnx_bridge.cli import main\n"
            f"assert main(['convert', {str(xml)!r}, '-o', {str(tmp_path / 'm.onnx')!r}]) == 0\n"
            f"from threadpoolctl import threadpool_info\n"
            f"print(sorted(pool['num_threads'] for pool in threadpool_info() if pool['internal_api'] == 'openblas'))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True, env=env)
    assert out.stdout.split("\n")[-2] == "[1]"
