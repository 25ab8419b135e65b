"""A caller's SessionOptions is copied, never changed; failing runs say the OpError and nothing else;
the lowered and custom-op paths give the same answer on invalid inputs too."""
import subprocess
import sys
import textwrap

import numpy as np
import onnxruntime as ort
import pytest

import onnx_bridge
from tests.helpers.models import dialect_model


def seu(reduction="mean", bad=False):
    return dialect_model("ScatterElementsUpdate", dict(
        data=np.zeros(4, np.float32), indices=np.array([1, 9 if bad else 2]), updates=np.ones(2, np.float32),
        axis=np.array(0)), {"reduction": reduction})


def user_options(with_library=False):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.add_session_config_entry("session.disable_prepacking", "1")
    if with_library:
        options.register_custom_ops_library(onnx_bridge.get_library_path())
    return options


def _state(options):
    return (options.intra_op_num_threads, options.graph_optimization_level, options.log_severity_level,
            options.execution_mode, options.get_session_config_entry("session.disable_prepacking"))


@pytest.mark.parametrize("with_library", [False, True], ids=["plain", "already has the library"])
def test_options_reused_for_many_sessions_and_unchanged(with_library):
    options = user_options(with_library)
    before = _state(options)
    for reduction, lower in [("mean", True), ("sum", True), ("mean", False), ("sum", False)] * 2:
        model, feeds = seu(reduction)
        session = onnx_bridge.InferenceSession(model, options, lower=lower)
        session.run(None, feeds)
    assert _state(options) == before
    # The options still work for a plain onnxruntime session of the prepared model.
    if with_library:
        model, feeds = seu()
        plain = ort.InferenceSession(onnx_bridge.prepare_model(model).SerializeToString(), options)
        assert plain.run(None, feeds)[0].shape == (4,)


def test_settings_are_carried_to_the_copy():
    options = user_options()
    model, _ = seu()
    session = onnx_bridge.InferenceSession(model, options)
    carried = session.get_session_options()
    assert carried.intra_op_num_threads == 1
    assert carried.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    assert carried.get_session_config_entry("session.disable_prepacking") == "1"


def test_fully_lowered_session_does_not_load_the_library(monkeypatch):
    from onnx_bridge import session as session_module
    loaded = []
    monkeypatch.setattr(session_module, "get_library_path", lambda: loaded.append(1) or "/nonexistent")
    model, feeds = seu("sum")
    session = onnx_bridge.InferenceSession(model)
    assert not session._uses_pyops and loaded == []
    np.testing.assert_array_equal(session.run(None, feeds)[0], [0, 1, 1, 0])


@pytest.mark.parametrize("with_options", [False, True])
@pytest.mark.parametrize("reduction, lower", [("sum", True), ("mean", True), ("mean", False)])
def test_failing_run_raises_op_error_and_prints_nothing(reduction, lower, with_options):
    """Whatever options: the OpError (not ModelError, not onnxruntime's message) and no log line."""
    body = f"""
        import numpy as np, onnxruntime as ort, onnx_bridge
        from tests.helpers.models import dialect_model
        model, feeds = dialect_model("ScatterElementsUpdate", dict(
            data=np.zeros(4, np.float32), indices=np.array([1, 9]), updates=np.ones(2, np.float32),
            axis=np.array(0)), {{"reduction": {reduction!r}}})
        model.graph.node.append(__import__("onnx").helper.make_node("Relu", ["output"], ["relu"]))
        options = ort.SessionOptions() if {with_options} else None
        session = onnx_bridge.InferenceSession(model, options, lower={lower})
        for _ in range(2):
            try:
                session.run(None, feeds)
            except onnx_bridge.BridgeError as error:
                print(type(error).__name__, error.value)
    """
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(body)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == ["OpError 9"] * 2
    assert "VerifyOutputSizes" not in result.stderr and "[W:" not in result.stderr \
        and "[E:" not in result.stderr, result.stderr


# Differential: lowered (native where exact) vs lower=False (custom ops), valid and invalid inputs ----

def _outcome(session, feeds):
    try:
        return ("value", [o.tolist() for o in session.run(None, feeds)])
    except onnx_bridge.OpError as error:
        return ("OpError", error.subject, error.problem, error.value)


def _cases():
    f = np.float32
    yield "ReduceL2", dict(data=np.arange(6, dtype=f).reshape(2, 3), axes=np.array([[1]])), {}, ("axes",)
    yield "ReduceL2", dict(data=np.arange(6, dtype=f).reshape(2, 3), axes=np.array(1)), {}, ("axes",)
    yield "ReduceL2", dict(data=np.arange(6, dtype=f).reshape(2, 3), axes=np.array([2])), {}, ("axes",)
    yield "ReduceL2", dict(data=np.arange(6, dtype=f).reshape(2, 3), axes=np.array([0, 0])), {}, ("axes",)
    yield "ReduceL2", dict(data=np.arange(6, dtype=f).reshape(2, 3), axes=np.array([[1]])), {}, ()
    for reduction in ("none", "sum", "prod", "min", "max", "mean"):
        for indices in ([1, 3], [4, 0], [-5], [[1]]):
            yield "ScatterElementsUpdate", dict(
                data=np.arange(4, dtype=f), indices=np.array(indices),
                updates=np.ones(np.array(indices).shape, f), axis=np.array(0)), {"reduction": reduction}, ()
        yield "ScatterElementsUpdate", dict(
            data=np.arange(4, dtype=f), indices=np.array([1]), updates=np.ones(1, f),
            axis=np.array(1)), {"reduction": reduction}, ("axis",)
    for axis in (np.array(0), np.array([0]), np.array([[0]]), np.array(3), np.array([0, 0])):
        for reduction in ("sum", "mean"):  # axis fed at run time
            yield "ScatterElementsUpdate", dict(
                data=np.arange(4, dtype=f), indices=np.array([1]), updates=np.ones(1, f), axis=axis), \
                {"reduction": reduction}, ()
    for indices, axis in (([0, 2], 0), ([3], 0), ([0], 2), ([-1], 0)):
        yield "ScatterUpdate", dict(data=np.zeros((3, 2), f), indices=np.array(indices),
                                    updates=np.ones((len(indices), 2), f), axis=np.array(axis)), {}, ("axis",)
    for axis in (0, 1, 2, -3):
        yield "Unique", dict(data=np.array([[1, 1], [2, 1]], f), axis=np.array(axis)), {}, ("axis",)


CASES = list(_cases())


@pytest.mark.parametrize("case", range(len(CASES)))
def test_lowered_and_custom_paths_agree(case):
    op_type, inputs, attributes, constants = CASES[case]
    model, feeds = dialect_model(op_type, inputs, attributes, constants=constants)
    lowered = _outcome(onnx_bridge.InferenceSession(model), feeds)
    custom = _outcome(onnx_bridge.InferenceSession(model, lower=False), feeds)
    assert lowered == custom


def test_reduce_l2_two_dimensional_axes_raise_on_both_paths():
    model, feeds = dialect_model("ReduceL2", dict(data=np.ones((2, 3), np.float32), axes=np.array([[1]])),
                                 constants=())
    for lower in (True, False):
        with pytest.raises(onnx_bridge.OpError, match="axes"):
            onnx_bridge.InferenceSession(model, lower=lower).run(None, feeds)
