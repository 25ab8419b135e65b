"""A failing dialect op never takes the process down (onnxruntime-extensions would std::terminate).

Each case runs in a fresh interpreter: an abort there fails the test with its exit code instead of
killing pytest.
"""
import subprocess
import sys
import textwrap

import pytest

PRELUDE = textwrap.dedent("""
    import numpy as np
    import onnx_bridge
    from tests.helpers.models import dialect_model
    def seu(indices, dtype=np.float32, **attrs):
        return dialect_model("ScatterElementsUpdate", dict(
            data=np.arange(4).astype(dtype), indices=np.array(indices),
            updates=np.arange(len(indices)).astype(dtype), axis=np.array(0)), attrs)
""")

CASES = {
    "bad index raises, next run works (custom op)": ("""
        model, feeds = seu([1, 9])
        session = onnx_bridge.InferenceSession(model, lower=False)
        try:
            session.run(None, feeds)
        except onnx_bridge.OpError as error:
            print("ERR", error)
        feeds["indices"] = np.array([1, -1])
        print("OK", session.run(None, feeds)[0].tolist())
    """, ["ERR ScatterElementsUpdate (node 'node'): input 'indices': index out of range for axis 0 "
          "of size 4; got 9; allowed: [-4, 3]", "OK [0.0, 0.0, 2.0, 1.0]"]),
    "bad index in a lowered node is replayed for the dialect's error": ("""
        model, feeds = seu([1, 9], reduction="sum")
        session = onnx_bridge.InferenceSession(model)
        assert not session._uses_pyops
        try:
            session.run(None, feeds)
        except onnx_bridge.OpError as error:
            print("ERR", error.node, error.value)
        feeds["indices"] = np.array([1, -1])
        print("OK", session.run(None, feeds)[0].tolist())
    """, ["ERR node 9", "OK [0.0, 1.0, 2.0, 4.0]"]),
    "failure feeding a downstream node": ("""
        import onnx
        from onnx import helper
        model, feeds = seu([5])
        model.graph.node.append(helper.make_node("Relu", ["output"], ["relu"]))
        model.graph.output.append(helper.make_tensor_value_info("relu", onnx.TensorProto.FLOAT, None))
        try:
            onnx_bridge.InferenceSession(model, lower=False).run(None, feeds)
        except onnx_bridge.OpError as error:
            print("ERR", error.op, error.node, error.value)
    """, ["ERR ScatterElementsUpdate node 5"]),
    "float16 and bfloat16 are carried": ("""
        import ml_dtypes
        for dtype in (np.float16, ml_dtypes.bfloat16):
            model, feeds = seu([0, 0], dtype, reduction="max", use_init_val=0)
            print("OK", onnx_bridge.InferenceSession(model).run(None, feeds)[0].tolist())
    """, ["OK [1.0, 1.0, 2.0, 3.0]", "OK [1.0, 1.0, 2.0, 3.0]"]),
    "internal failure becomes OpError": ("""
        import custom_ops.ops.scatter.scatter_elements_update as module
        def broken(*args, **kwargs):
            raise ZeroDivisionError("boom")
        module.scatter_elements_update = broken
        model, feeds = seu([0])
        try:
            onnx_bridge.InferenceSession(model, lower=False).run(None, feeds)
        except onnx_bridge.OpError as error:
            print("ERR", error)
    """, ["ERR ScatterElementsUpdate (node 'node'): kernel: internal failure ZeroDivisionError: boom"]),
    "KeyboardInterrupt inside an op is re-raised": ("""
        import custom_ops.ops.set.unique as module
        def interrupted(*args, **kwargs):
            raise KeyboardInterrupt
        module.unique = interrupted
        model, feeds = dialect_model("Unique", dict(data=np.zeros(3, np.float32)))
        try:
            onnx_bridge.InferenceSession(model, lower=False).run(None, feeds)
        except KeyboardInterrupt:
            print("INTERRUPTED")
    """, ["INTERRUPTED"]),
    "own onnxruntime session: error recorded, no abort": ("""
        import onnxruntime as ort
        from custom_ops import _ort
        model, feeds = seu([7])
        options = ort.SessionOptions()
        options.log_severity_level = 4
        options.register_custom_ops_library(onnx_bridge.get_library_path())
        session = ort.InferenceSession(onnx_bridge.prepare_model(model).SerializeToString(), options)
        print("SHAPE", session.run(None, feeds)[0].shape)
        print("ERR", onnx_bridge.take_errors()[0].value)
    """, ["SHAPE (0,)", "ERR 7"]),
    "type the bridge cannot carry fails at creation": ("""
        import onnx
        from onnx import helper
        model, feeds = seu([0])
        model.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.STRING
        try:
            onnx_bridge.InferenceSession(model)
        except onnx_bridge.BridgeError as error:
            print("ERR", type(error).__name__, "STRING" in str(error))
    """, ["ERR OpError True"]),
}


@pytest.mark.parametrize("name", CASES)
def test_never_aborts(name):
    body, expected = CASES[name]
    result = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stderr[-2000:]}"
    assert result.stdout.splitlines() == expected, result.stderr[-2000:]


def test_other_pyops_keep_the_stock_marshaling():
    """Our invocation hook hands PyOps that are not ours to onnxruntime-extensions' own (string outputs)."""
    body = """
        import onnxruntime as ort
        from onnx import TensorProto, helper
        from onnxruntime_extensions import PyCustomOpDef, onnx_op
        onnx_bridge.register_ops()
        @onnx_op(op_type="user.test::Shout", inputs=[PyCustomOpDef.dt_string],
                 outputs=[PyCustomOpDef.dt_string])
        def shout(x):
            return np.array([s.upper() for s in x.tolist()])
        node = helper.make_node("Shout", ["x"], ["y"], domain="user.test")
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                                  [helper.make_tensor_value_info("y", TensorProto.STRING, [2])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                  helper.make_opsetid("user.test", 1)], ir_version=10)
        options = ort.SessionOptions()
        options.register_custom_ops_library(onnx_bridge.get_library_path())
        session = ort.InferenceSession(model.SerializeToString(), options)
        print(session.run(None, {"x": np.array(["a", "bc"])})[0].tolist())
    """
    result = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == ["['A', 'BC']"]
