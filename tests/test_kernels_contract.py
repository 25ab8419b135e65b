"""The kernels on the contract's cases (docs/dialect.md section 2 and values measured on OpenVINO CPU), each checked
against its literal expected value and against the independent oracle (tests/oracle.py); then the
kernels against the oracle on the whole generated grid (no OpenVINO needed)."""
import math

import ml_dtypes
import numpy as np
import pytest

import generated_cases
import oracle
from custom_ops._types import FLOAT_TYPES, INTEGER_TYPES, type_name
from onnx_bridge.divergences import Case

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN arithmetic in the kernels
A = np.array
F32, BF16 = np.float32, ml_dtypes.bfloat16
SEU, SU, L2, UNIQUE = "ScatterElementsUpdate", "ScatterUpdate", "ReduceL2", "Unique"
NAN, INF = math.nan, math.inf
NUMERIC = INTEGER_TYPES + FLOAT_TYPES


def check(case: Case, *expected):
    """The kernel gives `expected` (dtypes, shapes, values; -0.0 distinct from 0.0), and so does the oracle
    (float ReduceL2: the oracle's exact float64 value rounds to `expected`, within oracle.l2_tolerance)."""
    assert case.valid, case.contract
    oracle.assert_identical(case.contract, expected, f"kernel {case}")
    if oracle.is_float_l2(case):
        oracle.assert_l2_close(np.asarray(expected[0]), oracle.run(case)[0], case.inputs["data"].dtype,
                               oracle.l2_terms(case), f"oracle {case}")
    else:
        oracle.assert_identical(oracle.run(case), expected, f"oracle {case}")


def seu(data, indices, updates, dtype, axis=0, **attributes):
    return Case.of(SEU, data=A(data, dtype), indices=A(indices), updates=A(updates, dtype), axis=A(axis),
                   **attributes)


# ------------------------------------------------------------------------------------------------------
# ScatterElementsUpdate

# OpenVINO CPU, measured: data [5,5,5,5], idx [0,0,1], upd [3,7,9] -> (use_init_val=1, =0).
USE_INIT_VAL = {"none": ([7, 9, 5, 5], [7, 9, 5, 5]), "sum": ([15, 14, 5, 5], [10, 9, 5, 5]),
                "prod": ([105, 45, 5, 5], [21, 9, 5, 5]), "min": ([3, 5, 5, 5], [3, 9, 5, 5]),
                "max": ([7, 9, 5, 5], [7, 9, 5, 5]), "mean": ([5, 7, 5, 5], [5, 9, 5, 5])}


@pytest.mark.parametrize("dtype", NUMERIC, ids=type_name)
@pytest.mark.parametrize("reduction", USE_INIT_VAL)
@pytest.mark.parametrize("init", [1, 0])
def test_use_init_val_table(reduction, init, dtype):
    expected = USE_INIT_VAL[reduction][1 - init]
    check(seu([5, 5, 5, 5], [0, 0, 1], [3, 7, 9], dtype, reduction=reduction, use_init_val=init),
          A(expected, dtype))


# data [F,F,T,T], idx [0,0,1,2,3,3], upd [T,F,F,F,T,F]: sum = max = OR, prod = min = AND.
T, F = True, False
BOOL_TABLE = {"none": ([F, F, F, F], [F, F, F, F]), "sum": ([T, F, T, T], [T, F, F, T]),
              "prod": ([F, F, F, F], [F, F, F, F]), "min": ([F, F, F, F], [F, F, F, F]),
              "max": ([T, F, T, T], [T, F, F, T])}


@pytest.mark.parametrize("reduction", BOOL_TABLE)
@pytest.mark.parametrize("init", [1, 0])
def test_bool_table(reduction, init):
    check(seu([F, F, T, T], [0, 0, 1, 2, 3, 3], [T, F, F, F, T, F], bool, reduction=reduction,
              use_init_val=init), A(BOOL_TABLE[reduction][1 - init]))


def test_bool_or_and():
    check(seu([T], [0, 0, 0], [T, T, T], bool, reduction="sum"), A([T]))
    check(seu([F, T], [0, 0, 1, 1], [T, T, T, F], bool, reduction="prod", use_init_val=0), A([T, F]))


MEAN_DATA = ([0, 1, 1, 1, -7, 0, 5], [0, 0, 1, 1, 2, 3, 4, 4, 5, 5], [-1, -1, 1, 2, -4, -2, 2, 2, -3, -4])


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("init, expected", [(1, [-1, 1, -2, -1, -1, -3, 5]), (0, [-1, 1, -4, -2, 2, -4, 5])])
def test_integer_mean_rounds_toward_minus_infinity(dtype, init, expected):
    check(seu(*MEAN_DATA, dtype, reduction="mean", use_init_val=init), A(expected, dtype))


@pytest.mark.parametrize("data, updates, expected", [([2, 4], [3, 3], [2, 3]), ([-2, -4], [-3, -3], [-3, -4])])
def test_integer_mean_half_way(data, updates, expected):
    check(seu(data, [0, 1], updates, np.int32, reduction="mean"), A(expected, np.int32))


@pytest.mark.parametrize("init, sums, counts", [(1, [-2, 4, -3, -1, -3, -7, 5], [3, 3, 2, 2, 3, 3, 1]),
                                                (0, [-2, 3, -4, -2, 4, -7, 5], [2, 2, 1, 1, 2, 2, 1])])
def test_float_mean_is_a_division(init, sums, counts):
    check(seu(*MEAN_DATA, F32, reduction="mean", use_init_val=init), A(sums, F32) / A(counts, F32))


@pytest.mark.parametrize("data, indices, updates, dtype, init, expected", [
    ([10], [0], [255], np.uint8, 1, [132]),  # 265 / 2: no wrap in 8 bits
    ([100], [0, 0], [100, 100], np.int8, 1, [100]),
    ([-100], [0, 0], [-100, -100], np.int8, 1, [-100]),
    ([30000], [0], [30000], np.int16, 1, [30000]),
    ([0], [0, 0], [2**30, 2**30], np.int32, 0, [2**30]),
    ([2**32 - 1], [0, 0], [2**32 - 1, 2**32 - 2], np.uint32, 1, [2**32 - 2]),
    ([2**62], [0, 0], [2**62, 2**62], np.int64, 1, [2**62]),
    ([0], [0, 0], [-2**63, -2**63], np.int64, 0, [-2**63]),
    ([2**64 - 1], [0], [2**64 - 1], np.uint64, 1, [2**64 - 1]),
    ([60000], [0], [60000], np.float16, 1, [60000]),  # f16 accumulated in f32
], ids=lambda v: str(v) if isinstance(v, int) else None)
def test_mean_accumulates_exactly(data, indices, updates, dtype, init, expected):
    check(seu(data, indices, updates, dtype, reduction="mean", use_init_val=init), A(expected, dtype))


@pytest.mark.parametrize("data, indices, updates, dtype, reduction, expected", [
    ([100], [0], [100], np.int8, "sum", [-56]),
    ([120], [0, 0], [5, 5], np.int8, "sum", [-126]),
    ([16], [0], [16], np.uint8, "prod", [0]),
    ([2**31 - 1], [0], [1], np.int32, "sum", [-2**31]),
    ([2**64 - 1], [0], [2], np.uint64, "sum", [1]),
    ([2**62], [0], [4], np.int64, "prod", [0]),
])
def test_integer_sum_and_prod_wrap(data, indices, updates, dtype, reduction, expected):
    check(seu(data, indices, updates, dtype, reduction=reduction), A(expected, dtype))


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=type_name)
@pytest.mark.parametrize("reduction", ["min", "max"])
def test_min_max_propagate_nan(dtype, reduction):
    # A NaN update and a NaN in data both win (numpy.minimum/maximum).
    check(seu([1, NAN, 3], [0, 1], [NAN, 5], dtype, reduction=reduction), A([NAN, NAN, 3], dtype))
    check(seu([1, 2], [0, 0], [NAN, 5], dtype, reduction=reduction, use_init_val=0), A([NAN, 2], dtype))
    check(seu([1, 2], [0], [INF if reduction == "max" else -INF], dtype, reduction=reduction),
          A([INF if reduction == "max" else -INF, 2], dtype))


@pytest.mark.parametrize("reduction, data, updates, expected", [
    ("min", [0.0], [-0.0], [-0.0]), ("min", [-0.0], [0.0], [0.0]),  # a tie takes the later value
    ("max", [0.0], [-0.0], [-0.0]), ("max", [-0.0], [0.0], [0.0]),
])
def test_min_max_signed_zero_tie(reduction, data, updates, expected):
    check(seu(data, [0], updates, F32, reduction=reduction), A(expected, F32))


@pytest.mark.parametrize("reduction", ["sum", "prod", "mean"])
def test_nan_in_arithmetic_reductions(reduction):
    check(seu([1, 2], [0, 0], [NAN, 5], F32, reduction=reduction), A([NAN, 2], F32))


@pytest.mark.parametrize("dtype", [F32, np.float64, np.float16, BF16], ids=type_name)
def test_use_init_val_0_neutral_values(dtype):
    # Only touched positions start from the neutral value (lowest/highest finite value of T for max/min).
    lowest = float(-(ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)).max)
    check(seu([7, 7], [0], [-INF], dtype, reduction="max", use_init_val=0), A([lowest, 7], dtype))
    check(seu([7, 7], [0], [INF], dtype, reduction="min", use_init_val=0), A([-lowest, 7], dtype))


def test_float_sums_are_sequential_and_rounded_once():
    check(seu([0], [0] * 5, [1e8, 1, -1e8, 1, 1], F32, reduction="sum"), A([2], F32))
    check(seu([2048], [0, 0], [1, 1], np.float16, reduction="sum"), A([2050], np.float16))  # in f32
    # bf16 rounded once to nearest: 1 + 0.005859375 = 1.005859375 -> 1.0078125
    check(seu([1], [0], [0.005859375], BF16, reduction="sum"), A([1.0078125], BF16))


def test_duplicates_last_wins():
    n = 100_000
    check(seu([0, 0], np.zeros(n, np.int64), np.arange(1, n + 1), np.int32), A([n, 0], np.int32))
    check(Case.of(SEU, data=np.zeros((2, 3), F32), indices=A([[0, 0, 0], [1, 1, 1]]),
                  updates=A([[1, 2, 3], [4, 5, 6]], F32), axis=A(1)), A([[3, 0, 0], [0, 6, 0]], F32))


@pytest.mark.parametrize("index_type", INTEGER_TYPES, ids=type_name)
def test_negative_indices_and_index_types(index_type):
    signed = np.dtype(index_type).kind == "i"
    indices = A([-1, -4] if signed else [3, 0], index_type)
    check(Case.of(SEU, data=np.zeros(4, np.int16), indices=indices, updates=A([1, 2], np.int16),
                  axis=A([0], index_type)), A([2, 0, 0, 1], np.int16))


@pytest.mark.parametrize("reduction", generated_cases.REDUCTIONS)
@pytest.mark.parametrize("init", [1, 0])
@pytest.mark.parametrize("shape", [(0, 2), (2, 0)])
def test_empty_indices_return_data(reduction, init, shape):
    data = A([[1, 2], [3, 4]], np.int32)
    check(Case.of(SEU, data=data, indices=np.zeros(shape, np.int64), updates=np.zeros(shape, np.int32),
                  axis=A(0), reduction=reduction, use_init_val=init), data)


@pytest.mark.parametrize("case, expected", [
    # updates smaller than data on non-axis dims
    (seu(np.zeros((3, 4)), [[2, 1], [0, 2]], [[1, 2], [3, 4]], F32),
     A([[3, 0, 0, 0], [0, 2, 0, 0], [1, 4, 0, 0]], F32)),
    # the axis dim of indices may exceed data's (duplicates)
    (seu(np.zeros((2, 2)), [[0], [1], [0], [1], [1]], [[1], [2], [3], [4], [5]], F32, reduction="sum"),
     A([[4, 0], [11, 0]], F32)),
    # seed: none along axis 1, negative axis
    (seu(np.zeros((3, 4)), [[1, 2], [0, 3]], [[11, 12], [13, 14]], F32, axis=-1),
     A([[0, 11, 12, 0], [13, 0, 0, 14], [0, 0, 0, 0]], F32)),
    # empty data
    (seu(np.zeros((0, 3)), np.zeros((0, 3), np.int64), np.zeros((0, 3)), F32), np.zeros((0, 3), F32)),
], ids=["smaller updates", "longer axis", "negative axis", "empty data"])
def test_seu_shapes(case, expected):
    check(case, expected)


# ------------------------------------------------------------------------------------------------------
# ScatterUpdate


def su(data, indices, updates, axis, dtype=F32):
    return Case.of(SU, data=A(data, dtype), indices=A(indices), updates=A(updates, dtype), axis=A(axis))


@pytest.mark.parametrize("case, expected", [
    (su(np.zeros((3, 2)), [[0, 2], [1, 1]], [[[1, 2], [3, 4]], [[5, 6], [7, 8]]], 0),
     A([[1, 2], [7, 8], [3, 4]], F32)),  # row 1 gets the later [7, 8]
    (su(np.zeros((2, 5)), [[4], [0]], [[[1], [2]], [[3], [4]]], 1), A([[2, 0, 0, 0, 1], [4, 0, 0, 0, 3]], F32)),
    (su(np.zeros((3, 5)), 1, np.arange(5), 0), A([[0] * 5, [0, 1, 2, 3, 4], [0] * 5], F32)),  # 0-D indices
    (su(np.zeros(3), [1, 1, 1], [10, 20, 30], 0), A([0, 30, 0], F32)),
    (su(np.arange(15).reshape(3, 5), [0, 2], [[1, 1], [1, 1], [1, 2]], -1),
     A([[1, 1, 1, 3, 4], [1, 6, 1, 8, 9], [1, 11, 2, 13, 14]], F32)),
    (su([[1, 2], [3, 4]], np.zeros(0, np.int64), np.zeros((0, 2)), 0), A([[1, 2], [3, 4]], F32)),
    (su([F, F, F], [2, 0], [T, T], 0, bool), A([T, F, T])),
    (su(np.zeros((0, 3)), [1], np.zeros((0, 1)), 1), np.zeros((0, 3), F32)),
], ids=["2-D indices", "axis 1", "0-D indices", "duplicates", "negative axis", "empty indices", "bool",
        "empty data"])
def test_scatter_update(case, expected):
    check(case, expected)


# ------------------------------------------------------------------------------------------------------
# ReduceL2


def l2(data, axes, dtype, keep_dims=0):
    return Case.of(L2, data=A(data, dtype), axes=A(axes, np.int64 if not np.size(axes) else None),
                   keep_dims=keep_dims)


# |x| rounded half away from zero: 5, 1.41, 2.24, 3.61, 0, 16.28, 7.81, 6.48, 7.48
ROWS = [[3, 4, 0, 0], [1, 1, 0, 0], [1, 2, 0, 0], [2, 3, 0, 0], [0, 0, 0, 0], [16, 3, 0, 0], [6, 5, 0, 0],
        [6, 2, 1, 1], [7, 2, 1, 1]]
ROUNDED = [5, 1, 2, 4, 0, 16, 8, 6, 7]


@pytest.mark.parametrize("dtype", INTEGER_TYPES, ids=type_name)
def test_integer_l2_rounds_half_away_from_zero(dtype):
    signs = -1 if np.dtype(dtype).kind == "i" else 1
    check(l2(np.array(ROWS) * signs, [1], dtype), A(ROUNDED, dtype))


@pytest.mark.parametrize("data, dtype, expected", [
    ([40000, 40000], np.int32, 56569), ([50000, 50000], np.int32, 70711), ([40000, 40000], np.uint16, 56569),
    ([200, 200], np.int16, 283), ([3 * 10**9, 4 * 10**9], np.int64, 5 * 10**9), ([2**31 + 1], np.int64, 2**31 + 1),
    ([3037000499, 3037000499], np.int64, 4294967295), ([2**62, 2**62], np.int64, 6521908912666391106),
    ([2**64 - 1], np.uint64, 2**64 - 1),
    ([100, 100], np.int8, 141 - 256),  # 141 does not fit: cast back to T wraps
    ([200, 200], np.uint8, 283 - 256),
])
def test_integer_l2_sums_without_overflow(data, dtype, expected):
    check(l2([data], [1], dtype), A([expected], dtype))


@pytest.mark.parametrize("dtype", [F32, np.int32, np.float16, BF16, np.int8], ids=type_name)
@pytest.mark.parametrize("keep", [0, 1])
def test_empty_axes_is_abs(dtype, keep):
    data = A([[-3, 4, 0], [1, -2, 2]], dtype)
    check(Case.of(L2, data=data, axes=np.zeros(0, np.int64), keep_dims=keep), A([[3, 4, 0], [1, 2, 2]], dtype))


@pytest.mark.parametrize("data, expected", [([-0.0, NAN, -INF, 2.5], [0.0, NAN, INF, 2.5])])
def test_empty_axes_specials(data, expected):
    check(l2(data, [], F32), A(expected, F32))
    check(l2(-2.5, [], F32), A(2.5, F32))  # 0-D data
    check(l2([-128], [], np.int8), A([-128], np.int8))  # |-128| = 128 cast back to int8


@pytest.mark.parametrize("data, dtype, expected", [
    ([300, 400], np.float16, 500), ([300, 400], BF16, 500), ([3, 4], F32, 5), ([NAN, 1], F32, NAN),
    ([INF, 1], F32, INF), ([-INF, NAN], F32, NAN), ([65504, 65504], np.float16, INF),
])
def test_float_l2_exact_cases(data, dtype, expected):
    check(l2([data], [1], dtype), A([expected], dtype))


@pytest.mark.parametrize("data, dtype", [([300, 300], np.float16), ([1e-4, 1e-4], np.float16),
                                         ([0.1, 0.2], np.float64), ([0.1, 0.2, 0.3], F32), ([0.1, 1e-3], BF16)])
def test_float_l2_accumulates_wide(data, dtype):
    # float16 accumulates in float32: [300, 300] -> 424.25, not inf
    case = l2([data], [1], dtype)
    oracle.assert_l2_close(case.contract[0], oracle.run(case)[0], np.dtype(dtype), len(data))


@pytest.mark.parametrize("axes, keep, expected", [
    ([1], 0, [5, 3]), ([-1], 0, [5, 3]), (1, 0, [5, 3]), (1, 1, [[5], [3]]), ([-2], 1, [[3, 5]]),
    ([0, 1], 0, math.sqrt(34)), ([1, 0], 1, [[math.sqrt(34)]]), ([0, -1], 1, [[math.sqrt(34)]]),
])
def test_l2_axes(axes, keep, expected):
    for axes_type in (np.int64, np.uint8, np.int8):
        if np.dtype(axes_type).kind == "u" and np.min(axes) < 0:
            continue
        case = Case.of(L2, data=A([[3, 4], [0, 3]], F32), axes=A(axes, axes_type), keep_dims=keep)
        check(case, A(expected, F32))


@pytest.mark.parametrize("shape, axes, keep, expected_shape", [
    ((2, 0), [1], 0, (2,)), ((2, 0), [0], 1, (1, 0)), ((0, 3), [0], 0, (3,)), ((0, 3), [1], 1, (0, 1))])
def test_l2_empty_dims(shape, axes, keep, expected_shape):
    check(l2(np.zeros(shape), axes, F32, keep), np.zeros(expected_shape, F32))


# ------------------------------------------------------------------------------------------------------
# Unique


def uq(data, dtype, axis=None, **attributes):
    return Case.of(UNIQUE, data=A(data, dtype), axis=None if axis is None else A(axis), **attributes)


I64 = np.int64
ROWS_5 = [[3, 1, 2], [1, 9, 9], [3, 1, 2], [1, 2, 3], [1, 9, 0]]


@pytest.mark.parametrize("case, expected", [
    (uq(ROWS_5, np.int32, 0), (A([[1, 2, 3], [1, 9, 0], [1, 9, 9], [3, 1, 2]], np.int32), A([3, 4, 1, 0]),
                               A([3, 2, 3, 0, 1]), A([1, 1, 1, 2]))),
    (uq(ROWS_5, np.int32, 0, sorted=0), (A([[3, 1, 2], [1, 9, 9], [1, 2, 3], [1, 9, 0]], np.int32),
                                         A([0, 1, 3, 4]), A([0, 1, 0, 2, 3]), A([2, 1, 1, 1]))),
    (uq([[1, 1, 1], [3, 2, 2]], np.int32, 1), (A([[1, 1], [2, 3]], np.int32), A([1, 0]), A([1, 0, 0]), A([2, 1]))),
    (uq([[1, 1, 1], [3, 2, 2]], np.int32, -1, sorted=0),
     (A([[1, 1], [3, 2]], np.int32), A([0, 1]), A([0, 1, 1]), A([1, 2]))),
    (uq([3, 1, 3, 2], np.int8, 0, sorted=0), (A([3, 1, 2], np.int8), A([0, 1, 3]), A([0, 1, 0, 2]), A([2, 1, 1]))),
    (uq([T, F, T], bool), (A([F, T]), A([1, 0]), A([1, 0, 1]), A([1, 2]))),
], ids=["rows sorted", "rows unsorted", "columns sorted", "columns unsorted", "1-D with axis", "bool"])
def test_unique_ordering(case, expected):
    check(case, *expected)


@pytest.mark.parametrize("dtype", [F32, np.float16, BF16, np.float64], ids=type_name)
@pytest.mark.parametrize("data, sorted_, expected", [
    ([-0.0, 0.0], 1, ([-0.0], [0], [0, 0], [2])),  # the first occurrence's zero is kept
    ([0.0, -0.0], 1, ([0.0], [0], [0, 0], [2])),
    ([2, 1, NAN, 1, 2], 1, ([1, 2, NAN], [1, 0, 2], [1, 0, 2, 0, 1], [2, 2, 1])),
    ([2, 1, NAN, 1, 2], 0, ([2, 1, NAN], [0, 1, 2], [0, 1, 2, 1, 0], [2, 2, 1])),
    ([NAN, NAN], 1, ([NAN], [0], [0, 0], [2])),
    ([1, NAN, 0], 1, ([0, 1, NAN], [2, 0, 1], [1, 2, 0], [1, 1, 1])),
    ([NAN, 1, NAN, 2, -INF, INF], 1, ([-INF, 1, 2, INF, NAN], [4, 1, 3, 5, 0], [4, 1, 4, 2, 0, 3], [1, 1, 1, 1, 2])),
])
def test_unique_signed_zero_and_nan(dtype, data, sorted_, expected):
    values, first, inverse, counts = expected
    check(uq(data, dtype, sorted=sorted_), A(values, dtype), A(first), A(inverse), A(counts))


def test_unique_nan_rows():
    check(uq([[NAN, 1], [NAN, 1], [0, 1]], F32, 0), A([[0, 1], [NAN, 1]], F32), A([2, 0]), A([1, 1, 0]), A([1, 2]))
    check(uq([[-0.0, NAN], [0.0, NAN]], F32, 0, sorted=0), A([[-0.0, NAN]], F32), A([0]), A([0, 0]), A([2]))


E = np.zeros(0, I64)


@pytest.mark.parametrize("shape, axis, expected", [
    ((0,), None, (np.zeros(0, F32), E, E, E)),
    ((2, 0), None, (np.zeros(0, F32), E, E, E)),
    ((0, 3), 0, (np.zeros((0, 3), F32), E, E, E)),
    ((0, 3), 1, (np.zeros((0, 1), F32), A([0]), A([0, 0, 0]), A([3]))),  # slices of size 0 are all equal
    ((2, 0), 0, (np.zeros((1, 0), F32), A([0]), A([0, 0]), A([2]))),
])
@pytest.mark.parametrize("sorted_", [1, 0])
def test_unique_empty(shape, axis, expected, sorted_):
    check(uq(np.zeros(shape), F32, axis, sorted=sorted_), *expected)


def test_unique_0d_and_1d_axis():
    check(uq(5.0, F32), A([5.0], F32), A([0]), A([0]), A([1]))
    data = A([3, 1, 3, 0], np.int16)
    assert uq(data, np.int16, 0).contract[0].tolist() == uq(data, np.int16).contract[0].tolist() == [0, 1, 3]


@pytest.mark.parametrize("index_type, count_type", [("i32", "i32"), ("i32", "i64"), ("i64", "i32")])
def test_unique_output_types(index_type, count_type):
    index, count = (np.int32 if t == "i32" else np.int64 for t in (index_type, count_type))
    check(uq([3, 1, 3], np.uint16, index_element_type=index_type, count_element_type=count_type),
          A([1, 3], np.uint16), A([1, 0], index), A([1, 0, 1], index), A([1, 2], count))


def test_unique_matches_numpy_on_2000_integers():
    data = np.random.default_rng(7).integers(-50, 50, size=2000)
    values, first, inverse, counts = uq(data, I64).contract
    expected = np.unique(data, return_index=True, return_inverse=True, return_counts=True)
    for got, want in zip((values, first, inverse, counts), expected):
        np.testing.assert_array_equal(got, want)
    values, first, inverse, counts = uq(data, I64, sorted=0).contract
    assert (np.diff(first) > 0).all() and (values[inverse] == data).all() and counts.sum() == data.size


# ------------------------------------------------------------------------------------------------------
# The generated grid (the same cases test_kernels_vs_openvino.py runs through OpenVINO)


@pytest.mark.parametrize("op", generated_cases.GROUPS)
def test_generated_cases_match_the_oracle(op):
    for _, cases in generated_cases.all_groups(op):
        for case in cases:
            assert case.valid, case.contract
            expected = oracle.run(case)
            if oracle.is_float_l2(case):
                oracle.assert_l2_close(case.contract[0], expected[0], case.inputs["data"].dtype,
                                       oracle.l2_terms(case), str(case))
            else:
                oracle.assert_identical(case.contract, expected, str(case))
