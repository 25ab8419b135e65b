"""Fake conformance backends (loaded by name in worker processes): crash, hang, lie, fail, be missing."""
from __future__ import annotations

import os
import time

import numpy as np

from onnx_bridge.conformance.cases import spec_of
from onnx_bridge.errors import OpError


def kernel(case) -> tuple:
    return tuple(spec_of(case.op).run(case.input_list(), case.attributes))


class Kernel:
    """Returns the contract's own value: every cell matches."""
    name, title = "fake-kernel", "the kernels again"

    @staticmethod
    def missing():
        return None

    def run(self, case):
        return kernel(case)


class AbortOnBoom(Kernel):
    """os.abort()s on cases whose id ends with 'boom' (like OpenVINO on indices below -d)."""
    name = "fake-abort"

    def run(self, case):
        if case.id.endswith("boom"):
            os.abort()
        return kernel(case)


class HangOnBoom(Kernel):
    name = "fake-hang"

    def run(self, case):
        if case.id.endswith("boom"):
            time.sleep(3600)
        return kernel(case)


class OffByOne(Kernel):
    """Adds one to the first element of the first output (data where the contract rejects the input)."""
    name = "fake-off-by-one"

    def run(self, case):
        try:
            outputs = [np.array(x, copy=True) for x in kernel(case)]
        except OpError:
            return (case.data.copy(),)
        if outputs[0].size:
            flat = outputs[0].reshape(-1)
            flat[0] = flat[0] + 1 if flat.dtype != bool else not flat[0]
        return tuple(outputs)


class Raises(Kernel):
    name = "fake-raises"

    def run(self, case):
        raise RuntimeError("fake backend failure\nsecond line")


class Missing(Kernel):
    name = "fake-missing"

    @staticmethod
    def missing():
        return "fake-missing is not installed"


class TorchLike(Kernel):
    """Named like the torch column: rejects negative indices like torch's scatter_reduce (a declared
    known divergence, torch-scatter-negative-indices)."""
    name = "torch"

    def run(self, case):
        indices = case.inputs.get("indices")
        if indices is not None and indices.size and int(indices.min()) < 0:
            raise RuntimeError(f"index {int(indices.min())} is out of bounds")
        return kernel(case)


class _OpenVinoLike(Kernel):
    """Named like the openvino column, so the table's openvino-cpu entries apply. Returns the contract's value
    except on float16/bfloat16 use_init_val=0 min/max positions whose updates are all -inf (max) / +inf (min),
    where it writes `neutral_as` (the divergence ov-seu-init0-half-neutral-isa depends on the CPU)."""
    name, neutral_as = "openvino", None

    def run(self, case):
        outputs = kernel(case)
        if self.neutral_as is None or case.op != "ScatterElementsUpdate":
            return outputs
        from custom_ops.ops._divergence import Call
        from custom_ops.ops.scatter import _divergences as rows
        call = Call(case.op, case.inputs, case.attributes)
        if not rows._half_init0_all_infinite(call):
            return outputs
        sign = 1.0 if case.attributes["reduction"] == "min" else -1.0
        output = np.array(outputs[0], copy=True)
        output.reshape(-1)[rows._init0_infinite_positions(call)] = sign * self.neutral_as
        return (output,)


class OpenVinoAvx512(_OpenVinoLike):
    """The outcome measured on an AVX-512 Xeon: the contract's lowest/max(T)."""


class OpenVinoAvx2(_OpenVinoLike):
    """The outcome measured on an AVX2-only EPYC: the infinity itself."""
    neutral_as = np.inf


class OpenVinoOther(_OpenVinoLike):
    """Neither measured outcome (0): must stay an unexpected mismatch."""
    neutral_as = 0.0
