"""The per-call path of the dialect PyOps (custom_ops._ort): a node's attributes are decoded and checked once,
not on every call, with the same results and the same errors as before."""
import dataclasses

import numpy as np
import onnxruntime as ort
import pytest

import custom_ops
import onnx_bridge
from custom_ops import _ort
from custom_ops._spec import OpSpec
from tests.helpers.models import dialect_model


def _reduce_l2(name, keep_dims):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    return dialect_model("ReduceL2", dict(data=data, axes=np.array([1])), {"keep_dims": keep_dims}, name=name)


def _counting_attribute_values(monkeypatch):
    calls = []
    original = OpSpec.attribute_values

    def counting(self, given=None):
        calls.append(self.op_type)
        return original(self, given)

    monkeypatch.setattr(OpSpec, "attribute_values", counting)
    return calls


def test_attributes_are_decoded_once_per_node(monkeypatch):
    sessions = {keep: onnx_bridge.InferenceSession(_reduce_l2(f"once_{keep}", keep)[0], lower=False)
                for keep in (0, 1)}
    _, feeds = _reduce_l2("unused", 0)
    wants = {keep: custom_ops.resolve("ReduceL2", 12).run([feeds["data"], np.array([1])], {"keep_dims": keep})[0]
             for keep in sessions}
    calls = _counting_attribute_values(monkeypatch)
    for _ in range(3):
        for keep, session in sessions.items():
            got, want = session.run(None, feeds)[0], wants[keep]
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    assert calls == ["ReduceL2", "ReduceL2"]  # one per node, none for the later runs


def test_bad_attributes_fail_every_call_naming_the_node():
    """prepare_model checks attributes; an attribute spoilt after it reaches the PyOp, whose error is
    not cached away: each run reports it again, naming op, node and attribute."""
    model, feeds = _reduce_l2("spoilt", 0)
    prepared = onnx_bridge.prepare_model(model)
    node = next(n for n in prepared.graph.node if n.op_type == "ReduceL2")
    next(a for a in node.attribute if a.name == "keep_dims").i = 7
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.register_custom_ops_library(onnx_bridge.get_library_path())
    session = ort.InferenceSession(prepared.SerializeToString(), options)
    onnx_bridge.take_errors()
    for _ in range(2):
        session.run(None, feeds)
        errors = onnx_bridge.take_errors()
        assert [str(e) for e in errors] == ["ReduceL2 (node 'spoilt'): attribute 'keep_dims': must be 0 or 1; "
                                            "got 7; allowed: 0, 1"]


def test_list_attributes_are_fresh_on_every_call():
    """The decoded attributes are shared by a node's calls: a kernel that changes a list attribute must
    not change what the next call gets."""
    seen = []

    def kernel(*inputs, width, **rest):
        seen.append(list(width))
        width.append(99.0)
        return np.zeros(1, np.float32)

    spec = dataclasses.replace(custom_ops.unit_of("PriorBoxClustered").newest, kernel=kernel)
    op = _ort._DialectOp(spec, inplace_first=False)
    call = op.prepare({"_node": "n", "_dtype": "", _ort.ABSENT: "", "width": "[1.0, 2.0]", "height": "[3.0]", "offset": 0.5})
    for _ in range(2):
        op([np.zeros(2, np.int64), np.zeros(2, np.int64)], call, (np.dtype(np.float32),))
    assert seen == [[1.0, 2.0], [1.0, 2.0]]


class _Preparing:
    def __init__(self):
        self.prepared = []

    def prepare(self, attributes):
        if attributes["bad"] == "1":
            raise ValueError("bad attributes")
        self.prepared.append(attributes)
        return dict(attributes)


def _signature(op):
    return _ort._Signature(op, (np.dtype(np.float32),), {})


def _with_k_id(monkeypatch):
    """A registration id whose cast_attributes keeps the strings."""
    opdef = type("Opdef", (), {"cast_attributes": lambda self, raw: {k: str(v) for k, v in raw.items()}})()
    monkeypatch.setitem(_ort._ocos.Opdef._odlist, -1, opdef)
    return -1


def test_prepared_once_per_distinct_attributes_and_not_on_failure(monkeypatch):
    k_id = _with_k_id(monkeypatch)
    op = _Preparing()
    signature = _signature(op)
    first = signature.attributes(k_id, {"bad": "0", "x": "1"})
    assert signature.attributes(k_id, {"bad": "0", "x": "1"}) is first
    assert signature.attributes(k_id, {"bad": "0", "x": "2"}) == {"bad": "0", "x": "2"}
    for _ in range(2):
        with pytest.raises(ValueError, match="bad attributes"):
            signature.attributes(k_id, {"bad": "1", "x": "1"})
    assert len(op.prepared) == 2


def test_prepared_cache_is_bounded(monkeypatch):
    k_id = _with_k_id(monkeypatch)
    monkeypatch.setattr(_ort, "PREPARED_PER_OP", 3)
    signature = _signature(_Preparing())
    for x in range(7):
        signature.attributes(k_id, {"bad": "0", "x": str(x)})
        assert len(signature.prepared) <= 3


def test_ops_without_prepare_get_cast_attributes_every_call(monkeypatch):
    k_id = _with_k_id(monkeypatch)
    signature = _signature(lambda feed, attributes, dtypes: None)
    first = signature.attributes(k_id, {"a": "1"})
    assert first == {"a": "1"} and signature.attributes(k_id, {"a": "1"}) is not first
    assert signature.prepared == {}


@pytest.mark.parametrize("value, dtype, same", [
    (np.arange(6, dtype=np.float32).reshape(2, 3), np.float32, True),
    (np.array(2.5, np.float32), np.float32, True),                          # 0-D stays 0-D
    (np.arange(6, dtype=np.float32).reshape(2, 3).T, np.float32, False),    # not C-contiguous: copied
    (np.arange(3, dtype=np.int32), np.int64, False),                        # other dtype: converted
    (np.float32(1.5), np.float32, False),                                   # numpy scalar: a 0-D array
])
def test_c_array_is_np_require(value, dtype, same):
    got, want = _ort._c_array(value, np.dtype(dtype)), np.require(value, dtype=dtype, requirements="C")
    assert (got is value) == same
    assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)
