"""CTCLoss-4 (OpenVINO): the CTC negative log-likelihood of each batch's label sequence.

logits [N, T, C] (float), logit_length [N], labels [N, T], label_length [N] (int32/int64, same type),
optional blank_index (scalar; default C-1). Per batch: the first label_length labels, reduced by unique
(first occurrences) or else preprocess_collapse_repeated (runs merged); log-probabilities are the log-softmax
of the first logit_length steps (exp summed in double); the loss is -log of the summed probability of
every alignment: blanks anywhere, each label on one or more consecutive steps with ctc_merge_repeated
(a blank between equal labels) or on exactly one step without it. Computed with the backward recursion
(Graves et al. 2006, (10)), log-sum-exp as OpenVINO's CPU plugin does it (log1p(exp(smaller - larger)); exp
and log1p correctly rounded, glibc's expf and log1pf on the CPU plugin are not: a declared divergence),
in float32 for every float type (the CPU plugin's precision; the specification's reference enumerates every
alignment instead, exponential in the length, and is not followed), the loss rounded to the logits' type.
Lengths must satisfy 0 <= label_length <= logit_length <= T.
"""
from __future__ import annotations

import numpy as np

from custom_ops import _checks as check
from custom_ops._types import FLOAT_TYPES
from custom_ops.errors import OpError
from custom_ops.ops._libm import changes_with_c_libm, expf, log, log1pf
from custom_ops.unit import (Absent, Attribute, AttributeMap, Benchmark, BenchmarkCase, Case, DialectUnit, Divergence,
                             OpSpec, OpenVINO, Port)

OP = "CTCLoss"
INDEX_TYPES = (np.dtype(np.int32), np.dtype(np.int64))
_NEG = np.float32(-np.inf)



def _sum_logs(a, b):
    """log(exp(a) + exp(b)) elementwise in float32, the larger first."""
    big, small = np.maximum(a, b), np.minimum(a, b)
    with np.errstate(all="ignore"):
        both = big + log1pf(expf(small - big))
    return np.where(a == _NEG, b, np.where(b == _NEG, a, both))


def _decode(target, unique, collapse):
    if unique:
        return list(dict.fromkeys(target.tolist()))
    if collapse:
        return [int(v) for k, v in enumerate(target) if k == 0 or v != target[k - 1]]
    return target.tolist()


def _log_exp_sums(logits) -> np.ndarray:
    """log of the sum of exp over the classes of logits [N, T, C] (float32), the sum in double class by class
    (the CPU plugin's order), for every batch and step at once: [N, T] float64."""
    exps = expf(logits).astype(np.float64)
    exp_sum = np.zeros(logits.shape[:2], np.float64)
    for c in range(logits.shape[2]):
        exp_sum += exps[:, :, c]
    return log(exp_sum)


def _prepare(logits, log_sums, labels, blank, merge):
    """One batch's log-probabilities [T', S] of the extended labels (blank between and around them), which
    extended positions may skip to the one after next, and which may stay; logits [T', C] and their
    _log_exp_sums [T']."""
    extended = [blank]
    for label in labels:
        extended += [label, blank]
    size = len(extended)
    target = np.asarray(extended)
    logp = (logits[:, target].astype(np.float64) - log_sums[:, None]).astype(np.float32)      # [T', S]
    is_blank = target == blank
    skip = np.zeros(size, bool)
    skip[:-2] = ~is_blank[:-2] & (~merge | (target[:-2] != target[2:]))
    stay = np.ones(size, bool) if merge else is_blank
    return logp, skip, stay


def _losses(prepared) -> np.ndarray:
    """Losses of the batches (each prepared by _prepare, with T' > 0): the backward recursion run for all
    batches at once, aligned on their last step and padded with -inf (each batch's values are those of
    its own recursion: the same float32 operations, position by position)."""
    count = len(prepared)
    steps = np.array([logp.shape[0] for logp, _, _ in prepared])
    sizes = np.array([logp.shape[1] for logp, _, _ in prepared])
    width = int(sizes.max()) + 2                         # two padding positions: s + 1, s + 2 always exist
    # logp with two -inf columns (its shifts by one and two positions are views), every step's row at once
    logp = np.full((count, int(steps.max()), width + 2), _NEG, np.float32)
    skip, stay = np.zeros((count, width), bool), np.zeros((count, width), bool)
    for b, (lp, sk, st) in enumerate(prepared):
        logp[b, :lp.shape[0], :lp.shape[1]], skip[b, :sk.size], stay[b, :st.size] = lp, sk, st
    s = np.arange(width)[None, :]
    rows = np.arange(count)
    last = np.maximum(0, sizes - 2)[:, None]
    bwd = np.where((s >= last) & (s < sizes[:, None]), np.float32(0), _NEG).astype(np.float32)
    step_one, step_two = s + 1 < sizes[:, None], (s + 2 < sizes[:, None]) & skip
    backs = np.arange(2, int(steps.max()) + 1)[:, None]    # t = steps - back, per batch: [B', N]
    t = steps[None, :] - backs
    active = t >= 0
    windows = ((s >= np.maximum(0, sizes[None, :] - 2 * backs)[..., None])
               & (s < np.minimum(sizes[None, :], 2 * (t + 1))[..., None]) & active[..., None])   # [B', N, S]
    following_logp = logp[rows, np.maximum(t + 1, 0)]                  # [B', N, S + 2]
    padded = np.full((count, width + 2), _NEG, np.float32)             # bwd and two -inf: its shifts are views
    padded[:, :width] = bwd
    bwd, nxt1, nxt2 = padded[:, :width], padded[:, 1:width + 1], padded[:, 2:]
    for k in range(backs.shape[0]):
        following = following_logp[k]
        current = np.where(stay, bwd + following[:, :width], _NEG)       # -inf (+) x is x
        current = np.where(step_one, _sum_logs(current, nxt1 + following[:, 1:width + 1]), current)
        current = np.where(step_two, _sum_logs(current, nxt2 + following[:, 2:]), current)
        bwd[...] = np.where(windows[k], current, np.where(active[k][:, None], _NEG, bwd))
    first = bwd[:, 0] + logp[:, 0, 0]
    second = np.where(sizes > 1, bwd[:, 1] + logp[:, 0, 1], _NEG)
    return -_sum_logs(first.astype(np.float32), second.astype(np.float32))


def ctc_loss(logits, logit_length, labels, label_length, blank_index=None, preprocess_collapse_repeated=0,
             ctc_merge_repeated=1, unique=0):
    logits = check.as_array(OP, "logits", logits)
    check.data_type(OP, "logits", logits, FLOAT_TYPES)
    if logits.ndim != 3:
        raise OpError(OP, "input 'logits'", "must have shape [N, T, C]", value=logits.shape)
    batch, steps, classes = logits.shape
    dtype = logits.dtype
    ints = {}
    for name, value, shape in (("logit_length", logit_length, (batch,)), ("labels", labels, (batch, steps)),
                               ("label_length", label_length, (batch,))):
        value = check.as_array(OP, name, value)
        check.data_type(OP, name, value, INDEX_TYPES)
        if value.shape != shape:
            raise OpError(OP, f"input '{name}'", f"must have shape {list(shape)}", value=value.shape)
        ints[name] = value
    if len({v.dtype for v in ints.values()}) > 1:
        raise OpError(OP, "input 'labels'", "logit_length, labels and label_length must have one element type",
                      value=[str(v.dtype) for v in ints.values()])
    blank = classes - 1
    if blank_index is not None:
        blank_index = check.as_array(OP, "blank_index", blank_index)
        check.data_type(OP, "blank_index", blank_index, INDEX_TYPES)
        if blank_index.size != 1 or blank_index.ndim > 1:
            raise OpError(OP, "input 'blank_index'", "must be a scalar", value=blank_index.shape)
        blank = int(blank_index.reshape(()))
    if not 0 <= blank < classes:
        raise OpError(OP, "input 'blank_index'", f"out of range for {classes} classes", value=blank,
                      allowed=f"[0, {classes - 1}]")
    lengths, label_lengths = ints["logit_length"].astype(np.int64), ints["label_length"].astype(np.int64)
    bad = (lengths < 0) | (lengths > steps) | (label_lengths < 0) | (label_lengths > lengths)
    if bad.any():
        b = int(np.flatnonzero(bad)[0])
        raise OpError(OP, "input 'label_length'", "needs 0 <= label_length <= logit_length <= T",
                      value=(int(label_lengths[b]), int(lengths[b])), allowed=f"T = {steps}")
    merge = bool(check.flag(OP, "ctc_merge_repeated", ctc_merge_repeated))
    unique = check.flag(OP, "unique", unique)
    collapse = check.flag(OP, "preprocess_collapse_repeated", preprocess_collapse_repeated)
    out = np.zeros(batch, np.float32)
    logits = logits.astype(np.float32)
    log_sums = _log_exp_sums(logits)
    prepared, running = [], []
    for b in range(batch):
        target = ints["labels"][b, :label_lengths[b]].astype(np.int64)
        if ((target < 0) | (target >= classes)).any():
            raise OpError(OP, "input 'labels'", f"label out of range for {classes} classes",
                          value=int(target[(target < 0) | (target >= classes)][0]), allowed=f"[0, {classes - 1}]")
        decoded = _decode(target, unique, collapse)
        if lengths[b] == 0:
            out[b] = np.float32(0 if not decoded else np.inf)
        else:
            prepared.append(_prepare(logits[b, :lengths[b]], log_sums[b, :lengths[b]], decoded, blank, merge))
            running.append(b)
    if prepared:
        out[running] = _losses(prepared)
    return out.astype(dtype)


def _kernel_v4(logits, logit_length, labels, label_length, blank_index=None, *, preprocess_collapse_repeated,
               ctc_merge_repeated, unique):
    return (ctc_loss(logits, logit_length, labels, label_length, blank_index, preprocess_collapse_repeated,
                     ctc_merge_repeated, unique),)


def cases(rng: np.random.Generator) -> list:
    out = []
    for index in range(24):
        r = np.random.default_rng([int(rng.integers(1 << 30)), index])
        batch, steps, classes = int(r.integers(1, 4)), int(r.integers(1, 7)), int(r.integers(2, 6))
        itype = (np.int32, np.int64)[index % 2]
        logits = r.normal(size=(batch, steps, classes)).astype(np.float32)
        lengths = r.integers(1, steps + 1, batch)
        label_lengths = np.array([r.integers(1, n + 1) for n in lengths])
        blank = int(r.integers(0, classes)) if index % 3 else None
        labels = r.integers(0, classes, (batch, steps))
        free = classes - 1 if blank is None else blank                   # labels avoid the blank
        labels[labels == free] = (free + 1) % classes
        inputs = (logits, lengths.astype(itype), labels.astype(itype), label_lengths.astype(itype),
                  None if blank is None else np.array(blank, itype))
        out.append(Case(f"ctc_loss_{index}", inputs, {"preprocess_collapse_repeated": int(index % 4 == 1),
                                                      "ctc_merge_repeated": int(index % 5 != 2),
                                                      "unique": int(index % 6 == 3)}))
    return out


def bad_cases() -> list:
    logits = np.zeros((2, 3, 4), np.float32)
    i32 = lambda v: np.asarray(v, np.int32)  # noqa: E731
    labels = i32(np.zeros((2, 3)))
    return [
        (Case("label_longer", (logits, i32([2, 3]), labels, i32([3, 1])), {}), "label_length"),
        (Case("logit_past_end", (logits, i32([4, 3]), labels, i32([1, 1])), {}), "label_length"),
        (Case("labels_shape", (logits, i32([2, 3]), i32(np.zeros((2, 2))), i32([1, 1])), {}), "labels"),
        (Case("label_range", (logits, i32([2, 3]), i32([[5, 0, 0], [0, 0, 0]]), i32([1, 1])), {}), "out of range"),
        (Case("blank_range", (logits, i32([2, 3]), labels, i32([1, 1]), i32(4)), {}), "blank_index"),
        (Case("mixed_types", (logits, np.asarray([2, 3], np.int64), labels, i32([1, 1])), {}), "element type"),
    ]


def _infer(ctx) -> None:
    from onnx import helper
    known = ctx.get_input_type(0)
    if known is not None:
        ctx.set_output_type(0, helper.make_tensor_type_proto(known.tensor_type.elem_type, [None]))


def benchmark_cases(mode: str) -> list:
    """Labels of length 30 (tiny 2) avoiding the default blank (the last class)."""
    batch, steps, classes, length = {"full": (8, 100, 40, 30), "quick": (8, 100, 40, 30), "tiny": (2, 6, 4, 2)}[mode]

    def inputs(rng):
        return {"logits": rng.standard_normal((batch, steps, classes)).astype(np.float32),
                "logit_length": np.full(batch, steps, np.int32),
                "labels": rng.integers(0, classes - 1, (batch, steps)).astype(np.int32),
                "label_length": np.full(batch, length, np.int32)}
    return [BenchmarkCase(f"ctc-loss-{steps}", f"N {batch}, T {steps}, C {classes}, labels {length}", inputs)]


def _libm_changes(inputs, attributes) -> bool:
    """Whether the C library's expf, log1pf and log (the CPU plugin's std::exp, std::log1pf, std::log)
    change the loss."""
    try:
        return changes_with_c_libm(lambda: (ctc_loss(
            inputs["logits"], inputs["logit_length"], inputs["labels"], inputs["label_length"],
            inputs.get("blank_index"), **attributes),))
    except OpError:
        return False


# label_length 0 is not generated (the CPU plugin indexes before its lattice there): not measured
DIVERGENCES = (
    Divergence("ov-ctcloss-libm-last-bits", "openvino-cpu", "value", "exp and log1p not correctly rounded",
               "The CPU plugin's std::exp and std::log1pf of float (glibc's expf and log1pf) are not correctly "
               "rounded for some arguments; the contract rounds them correctly: the loss differs in its last "
               "bits (the example: 0.49288884 by the contract, 0.4928888 on the CPU; 58 of 1440 generated cases, "
               "each equal to OpenVINO with the C functions).", _libm_changes,
               Case("example", (np.array([[[2.04, -2.56, 0.42], [-0.57, -0.45, -0.22]]], np.float32),
                                np.array([2], np.int32), np.array([[0, 1]], np.int32), np.array([1], np.int32)),
                    {})),
)


UNIT = DialectUnit(
    op_type=OP, family="sequence",
    specs=(OpSpec(OP, 4, (Port("logits", "T"), Port("logit_length", "I"), Port("labels", "I"),
                          Port("label_length", "I"), Port("blank_index", "I", optional=True)),
                  (Port("loss", "T"),),
                  (Attribute("preprocess_collapse_repeated", "int", 0, (0, 1)),
                   Attribute("ctc_merge_repeated", "int", 1, (0, 1)), Attribute("unique", "int", 0, (0, 1))),
                  {"T": FLOAT_TYPES, "I": INDEX_TYPES}, _kernel_v4,
                  doc="CTC negative log-likelihood per batch (blank index default C-1).", infer=_infer),),
    openvino=OpenVINO(
        "CTCLoss", versions=(4,),
        factory=lambda ov, inputs, a: ov.opset4.ctc_loss(*[i for i in inputs if i is not None], **a),
        attributes=(AttributeMap("preprocess_collapse_repeated", "bool"), AttributeMap("ctc_merge_repeated", "bool"),
                    AttributeMap("unique", "bool")),
        output_shapes=lambda i, a: [np.shape(i["logits"])[:1]]),
    cases=cases, bad_cases=bad_cases,
    lowering=Absent("the backward recursion over the label lattice has no standard ONNX form short of a Loop; "
                    "not written"),
    raising=Absent("no standard ONNX pattern raised"),
    torch=Absent("torch.nn.functional.ctc_loss has no unique / preprocess_collapse_repeated; adapter not written"),
    divergences=DIVERGENCES,
    benchmark=Benchmark(benchmark_cases),
)
