"""Proposal-4 and Proposal-1 (custom_ops/ops/detection/proposal.py) against OpenVINO CPU. The CPU plugin crashes the
process on some inputs (a declared divergence), so everything that runs it runs in a fresh interpreter:
a crash fails the test instead of killing pytest. There the kernel's centre update is fused as the CPU
plugin does (the declared last-bit divergence); everything else must agree bit for bit."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import custom_ops
from tests.helpers import units as check

pytestmark = pytest.mark.openvino
UNIT = custom_ops.unit_of("Proposal")

SCRIPT = textwrap.dedent("""
    import pathlib, tempfile
    import numpy as np
    import custom_ops
    from custom_ops.ops.detection import proposal as module
    from tests.helpers import units as check
    module.muladd = lambda a, b, c: (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(a.dtype)
    unit = custom_ops.unit_of("Proposal")
    compared = 0
    for seed in range(3):
        for case in check.cases(unit, seed):
            got, want = check.kernel_outputs(unit, case), check.openvino_outputs(unit, case, static=True)
            rois = np.flatnonzero(want[0][:, 0] == -1)
            used = rois[0] if rois.size else len(want[0])
            np.testing.assert_array_equal(got[0], want[0], err_msg=case.id)
            np.testing.assert_array_equal(got[1][:used], want[1][:used], err_msg=case.id)
            compared += 1
    for case in check.cases(unit)[:2]:
        from converters.openvino_ir import import_ir
        import onnx_bridge
        model = import_ir(check.openvino_model(unit, case, static=True))
        got = onnx_bridge.InferenceSession(model.SerializeToString()).run(None, check.feeds(unit, case))
        want = check.openvino_outputs(unit, case, static=True)
        np.testing.assert_array_equal(got[0], want[0], err_msg=case.id)
        check.check_export(unit, case, pathlib.Path(tempfile.mkdtemp()), static=True)
        check.check_reference_and_schema(unit, case, static=True)
    for case in check.cases(unit)[:3]:   # Proposal-1: the same rois, no probs output; imported with rois only
        import onnx, openvino as ov
        from openvino.utils.node_factory import NodeFactory
        from converters.openvino_ir import import_ir, export_ir
        import onnx_bridge
        v4 = check.openvino_model(unit, case, static=True)
        parameters = list(v4.get_parameters())
        attributes = unit.openvino.ov_attributes(unit.newest.attribute_values(case.attributes))
        node = NodeFactory("opset1").create("Proposal", [p.output(0) for p in parameters], attributes)
        v1 = ov.Model(node.outputs(), parameters, case.id)
        want = ov.Core().compile_model(v1, "CPU", check.CONFIG)(check.feeds(unit, case))[0]
        np.testing.assert_array_equal(check.kernel_outputs(unit, case)[0], want, err_msg=case.id)
        model = import_ir(v1)
        assert [(n.op_type, len(n.output)) for n in model.graph.node] == [("Proposal", 1)]
        got = onnx_bridge.InferenceSession(model.SerializeToString()).run(None, check.feeds(unit, case))
        assert len(got) == 1
        np.testing.assert_array_equal(got[0], want, err_msg=case.id)
        xml = export_ir(model, pathlib.Path(tempfile.mkdtemp()) / "proposal1.xml")
        exported = ov.Core().compile_model(str(xml), "CPU", check.CONFIG)(check.feeds(unit, case))
        np.testing.assert_array_equal(exported[0], want, err_msg=case.id)
        compared += 1
    print("COMPARED", compared)
""")


def test_matches_openvino_in_a_subprocess():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    compared = int(result.stdout.split("COMPARED")[1].split()[0])
    assert compared >= 25, result.stdout


def test_anchor_grid_is_cached_read_only_and_a_cached_call_gives_the_same_bytes():
    """Proposal's anchor grid comes from the cache on the second call with the same attributes and sizes (its
    arrays read-only), and both calls give the same rois and probs; another image size is the same grid but
    with tensorflow (which clips the anchors to the image)."""
    import numpy as np

    from custom_ops.ops.detection import proposal as module
    cases = module.cases(np.random.default_rng(3))
    for case, misses in ((next(c for c in cases if c.attributes["framework"] == ""), 1),
                         (next(c for c in cases if c.attributes["framework"] == "tensorflow"), 2)):
        module._anchor_grid.cache_clear()
        first = module.proposal(*case.inputs, **case.attributes)
        second = module.proposal(*case.inputs, **case.attributes)
        assert module._anchor_grid.cache_info().hits == 1
        assert all(a.tobytes() == b.tobytes() for a, b in zip(first, second))
        image = case.inputs[2].copy()
        image[:2] += 16
        module.proposal(case.inputs[0], case.inputs[1], image, **case.attributes)
        assert module._anchor_grid.cache_info().misses == misses
    assert not any(array.flags.writeable for array in module._anchor_grid(16, (1.0,), (1.0,), False, 16, 2, 2, 0, 0))
