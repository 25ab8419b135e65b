"""custom_ops._ortx_compat: the onnxruntime-extensions internals the PyOp hook relies on are all checked,
and a mismatch is one ImportError naming the supported range."""
import pytest

from custom_ops import _ortx_compat


def test_installed_release_fits():
    assert _ortx_compat.problems() == []
    _ortx_compat.check()


@pytest.mark.parametrize("owner, name", [
    ("_ocos", "_on_pyop_invocation"),
    ("Opdef", "_odlist"),
    ("Opdef", "cast_attributes"),
    ("PyCustomOpDef", "install_hooker"),
    ("PyCustomOpDef", "dt_uint64"),
    ("ortx", "onnx_op"),
])
def test_each_missing_internal_is_named(monkeypatch, owner, name):
    import onnxruntime_extensions as ortx
    from onnxruntime_extensions import _ocos
    target = {"_ocos": _ocos, "Opdef": _ocos.Opdef, "PyCustomOpDef": _FakePyOp(_ocos.PyCustomOpDef),
              "ortx": ortx}[owner]
    if owner == "PyCustomOpDef":  # a pybind11 class: swap in a stand-in without the attribute
        monkeypatch.setattr(_ocos, "PyCustomOpDef", target)
    monkeypatch.delattr(target, name)
    with pytest.raises(ImportError, match=rf"onnxruntime-extensions >= 0\.12 .*{name}"):
        _ortx_compat.check()


def test_too_old_a_release_is_refused(monkeypatch):
    monkeypatch.setattr(_ortx_compat.metadata, "version", lambda name: "0.11.0")
    with pytest.raises(ImportError, match=r"needs onnxruntime-extensions >= 0\.12.*installed: 0\.11\.0.*older"):
        _ortx_compat.check()


def _FakePyOp(real):
    return type("PyCustomOpDef", (), {k: getattr(real, k) for k in dir(real) if not k.startswith("__")})
