"""Every validation of the four kernels raises OpError naming the op, the input or attribute, the value
seen and what is allowed -- before anything is written."""
import numpy as np
import pytest

from custom_ops import resolve
from custom_ops.ops.reduction.reduce_l2 import reduce_l2 as reduce_l2_kernel
from custom_ops.ops.scatter.scatter_elements_update import scatter_elements_update as scatter_elements_update_kernel
from custom_ops.ops.scatter.scatter_update import scatter_update as scatter_update_kernel
from custom_ops.ops.set.unique import unique as unique_kernel
from onnx_bridge import OpError
from onnx_bridge.divergences import Case

A = np.array
F32 = np.float32
SEU, SU, L2, UNIQUE = "ScatterElementsUpdate", "ScatterUpdate", "ReduceL2", "Unique"
KERNELS = {SEU: scatter_elements_update_kernel, SU: scatter_update_kernel, L2: reduce_l2_kernel,
           UNIQUE: unique_kernel}
INTEGERS = "int8, uint8, int16, uint16, int32, uint32, int64, uint64"
Z4, Z34 = np.zeros(4, F32), np.zeros((3, 4), F32)


def seu(**values):
    return Case.of(SEU, **{"data": Z4, "indices": A([0]), "updates": A([1], F32), "axis": A(0), **values})


def su(**values):
    return Case.of(SU, **{"data": Z4, "indices": A([0]), "updates": A([1], F32), "axis": A(0), **values})


def l2(**values):
    return Case.of(L2, **{"data": Z34, "axes": A([1]), **values})


def unique(**values):
    return Case.of(UNIQUE, **{"data": Z34, **values})


# name: (case, subject, value, allowed)
ERRORS = {
    # index values
    "seu index = d": (seu(indices=A([4])), "input 'indices'", 4, "[-4, 3]"),
    "seu index < -d": (seu(indices=A([-5])), "input 'indices'", -5, "[-4, 3]"),
    "seu index along axis 1": (seu(data=Z34, indices=A([[0, 4]]), updates=A([[1, 2]], F32), axis=A(1)),
                               "input 'indices'", 4, "[-4, 3]"),
    "seu uint64 huge index": (seu(indices=A([2**64 - 1], np.uint64)), "input 'indices'", 2**64 - 1, "[-4, 3]"),
    "scatter_update negative index": (su(indices=A([-1])), "input 'indices'", -1, "[0, 3]"),
    "scatter_update index = d": (su(indices=A([4])), "input 'indices'", 4, "[0, 3]"),
    "scatter_update uint64 huge index": (su(indices=A([2**64 - 1], np.uint64)), "input 'indices'", 2**64 - 1,
                                         "[0, 3]"),
    # shapes
    "seu updates shape != indices shape": (seu(indices=A([0, 1])), "input 'updates'", (1,), (2,)),
    "seu indices rank != data rank": (seu(data=Z34, indices=A([0, 1]), updates=A([1, 2], F32)),
                                      "input 'indices'", (2,), "rank 2"),
    "seu non-axis dim larger than data": (seu(data=Z34, indices=np.zeros((2, 5), np.int64),
                                              updates=np.zeros((2, 5), F32)),
                                          "input 'indices'", (2, 5), "<= (3, 4) except on axis 0"),
    "seu 0-D data": (seu(data=A(1, F32), indices=A(0), updates=A(1, F32)), "input 'data'", (), "rank >= 1"),
    "scatter_update updates shape": (su(data=Z34, indices=A([0, 1]), updates=np.zeros((2, 3), F32)),
                                     "input 'updates'", (2, 3), (2, 4)),
    "scatter_update updates rank": (su(data=Z34, indices=A([[0, 1]]), updates=np.zeros((2, 4), F32)),
                                    "input 'updates'", (2, 4), (1, 2, 4)),
    "scatter_update 0-D data": (su(data=A(1, F32), indices=A(0), updates=A(1, F32)), "input 'data'", (),
                                "rank >= 1"),
    # axis
    "seu axis = rank": (seu(axis=A(1)), "input 'axis'", 1, "[-1, 0]"),
    "seu axis < -rank": (seu(axis=A(-2)), "input 'axis'", -2, "[-1, 0]"),
    "seu axis of 2 elements": (seu(data=Z34, indices=A([[0]]), updates=A([[1]], F32), axis=A([0, 1])),
                               "input 'axis'", [0, 1], "shape [] or [1]"),
    "seu float axis": (seu(axis=A(0.0)), "input 'axis'", "float64", INTEGERS),
    "scatter_update axis out of range": (su(axis=A(3, np.uint8)), "input 'axis'", 3, "[-1, 0]"),
    "scatter_update float axis": (su(axis=A(0.0, F32)), "input 'axis'", "float32", INTEGERS),
    "unique axis out of range": (unique(axis=A(2)), "input 'axis'", 2, "[-2, 1]"),
    "unique axis on 0-D data": (unique(data=A(1.0, F32), axis=A(0)), "input 'axis'", 0, "no axis"),
    "unique float axis": (unique(axis=A(0.0)), "input 'axis'", "float64", INTEGERS),
    # ReduceL2 axes
    "reduce_l2 duplicate axes": (l2(axes=A([1, -1])), "input 'axes'", [1, -1], "each axis once"),
    "reduce_l2 axis = rank": (l2(axes=A([2])), "input 'axes'", 2, "[-2, 1]"),
    "reduce_l2 axis < -rank": (l2(axes=A([-3], np.int8)), "input 'axes'", -3, "[-2, 1]"),
    "reduce_l2 axis on 0-D data": (l2(data=A(1.0, F32), axes=A([0])), "input 'axes'", 0,
                                   "no axes for a scalar"),
    "reduce_l2 2-D axes": (l2(axes=A([[1]])), "input 'axes'", (1, 1), "shape [] or [n]"),
    "reduce_l2 float axes": (l2(axes=A([1.0])), "input 'axes'", "float64", INTEGERS),
    # attributes
    "seu unknown reduction": (seu(reduction="avg"), "attribute 'reduction'", "avg",
                              "none, sum, prod, min, max, mean"),
    "seu reduction is case-sensitive": (seu(reduction="SUM"), "attribute 'reduction'", "SUM",
                                        "none, sum, prod, min, max, mean"),
    "seu use_init_val 2": (seu(use_init_val=2), "attribute 'use_init_val'", 2, "0, 1"),
    "seu use_init_val -1": (seu(use_init_val=-1), "attribute 'use_init_val'", -1, "0, 1"),
    "seu mean on bool": (seu(data=np.zeros(4, bool), updates=A([True]), reduction="mean"),
                         "attribute 'reduction'", "mean", "none, sum, prod, min, max"),
    "reduce_l2 keep_dims 2": (l2(keep_dims=2), "attribute 'keep_dims'", 2, "0, 1"),
    "unique sorted 2": (unique(sorted=2), "attribute 'sorted'", 2, "0, 1"),
    "unique index_element_type i16": (unique(index_element_type="i16"), "attribute 'index_element_type'",
                                      "i16", "i64, i32"),
    "unique count_element_type u64": (unique(count_element_type="u64"), "attribute 'count_element_type'",
                                      "u64", "i64, i32"),
    # element types
    "seu float indices": (seu(indices=A([0.0])), "input 'indices'", "float64", INTEGERS),
    "seu bool indices": (seu(indices=A([True])), "input 'indices'", "bool", INTEGERS),
    "scatter_update float indices": (su(indices=A([0.0], np.float16)), "input 'indices'", "float16", INTEGERS),
    "seu updates dtype != data dtype": (seu(updates=A([1.0])), "input 'updates'", "float64", "float32"),
    "scatter_update updates dtype != data dtype": (su(updates=A([1])), "input 'updates'", "int64", "float32"),
    "seu complex data": (seu(data=np.zeros(4, np.complex64), updates=np.zeros(1, np.complex64)),
                         "input 'data'", "complex64", "bool, int8"),
    "reduce_l2 bool data": (l2(data=np.zeros((3, 4), bool)), "input 'data'", "bool", "int8, uint8"),
    "unique string data": (unique(data=A(["a"])), "input 'data'", "str32", "bool, int8"),
}


@pytest.mark.parametrize("name", ERRORS)
def test_kernel_error(name):
    case, subject, value, allowed = ERRORS[name]
    with pytest.raises(OpError) as info:
        KERNELS[case.op](*case.args, **case.attributes)
    error = info.value
    assert isinstance(error, ValueError)
    assert (error.op, error.subject) == (case.op, subject)
    assert error.value == value
    assert str(allowed) in str(error.allowed)
    message = str(error)
    assert message.startswith(f"{case.op}: {subject}: ")
    assert f"got {value!r}" in message and f"allowed: {error.allowed}" in message


@pytest.mark.parametrize("name", ["seu index < -d", "seu unknown reduction", "unique sorted 2"])
def test_spec_run_names_the_node(name):
    case = ERRORS[name][0]
    with pytest.raises(OpError, match=rf"^{case.op} \(node 'n7'\): "):
        resolve(case.op, 12).run(case.args, case.attributes, node="n7")


@pytest.mark.parametrize("kernel, updates", [(scatter_elements_update_kernel, A([[1, 2], [3, 4]], F32)),
                                             (scatter_update_kernel, A([[1, 2, 3, 4], [5, 6, 7, 8]], F32))])
def test_validation_happens_before_any_write(kernel, updates):
    data = np.zeros((3, 4), F32)
    indices = A([[0, 1], [2, 3]]) if kernel is scatter_elements_update_kernel else A([0, 3])
    with pytest.raises(OpError, match="index out of range"):
        kernel(data, indices, updates, A(0), inplace=True)  # the last index is out of range
    assert not data.any()
