"""Recurrent ops: LSTMSequence-5, GRUSequence-5, RNNSequence-5 and the cells LSTMCell-1/4, GRUCell-3,
RNNCell-0 (OpenVINO records it as opset1) -> ONNX LSTM / GRU / RNN.

Layouts: OpenVINO is batch-major (X [B, T, I], states [B, D, H], Y [B, D, T, H]); ONNX's layout 0 is
sequence-major (X [T, B, I], states [D, B, H], Y [T, D, B, H]): Transposes around the ONNX node (onnxruntime
implements layout 0 only). A cell is a one-step sequence ([B, I] -> [1, B, I], Y_h [1, B, H] -> [B, H]).

Weights: W [D, G*H, I], R [D, G*H, H] keep their layout; the gates are reordered (OpenVINO LSTM f, i, c, o
-> ONNX i, o, f, c; GRU z, r, h is the same in both) at import time for Constants, by Split + Concat
otherwise. OpenVINO has one bias [D, G*H] (the sum of the input and recurrent biases): it becomes ONNX's
input bias Wb, with a zero recurrent bias Rb; GRU with linear_before_reset has [D, 4*H] =
(z, r, h input bias, h recurrent bias), the last one being ONNX's Rb_h (inside the reset gate product).

Sequence lengths: past a batch entry's length OpenVINO's spec and ONNX write zeros to Y and take Ho/Co
from its last valid step (the reverse direction starts at its last valid step). OpenVINO's CPU plugin does
so on static shapes, or with clip or other activations; its default kernel on dynamic shapes ignores
seq_lengths (runs all T steps): a CPU deviation, the import follows the spec.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from .._registry import Unsupported, rule

#: ONNX gate k is OpenVINO gate ORDER[kind][k].
ORDER = {"LSTM": (1, 3, 0, 2), "GRU": (0, 1, 2), "RNN": (0,)}
#: OpenVINO activation name -> ONNX's (the recurrent ops accept these three only).
ACTIVATIONS = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu"}
_FLOAT_ONLY = "data other than f32: onnxruntime's LSTM/GRU/RNN kernels take float (and double for LSTM/GRU)"


def _attributes(ctx, node, kind: str, directions: int) -> dict:
    """ONNX attributes of the recurrent node (activations repeated per direction, clip, hidden_size)."""
    if ctx.elem(node, 0) != TensorProto.FLOAT:
        raise Unsupported(_FLOAT_ONLY)
    attributes = node.get_attributes()
    # activations_alpha/beta are dropped: OpenVINO's sigmoid, tanh and relu take no parameters (ignored)
    names = [str(a).lower() for a in attributes["activations"]]
    unknown = [a for a in names if a not in ACTIVATIONS]
    if unknown:
        raise Unsupported(f"activation(s) {unknown}: OpenVINO's recurrent ops support sigmoid, tanh, relu")
    onnx = {"hidden_size": int(attributes["hidden_size"]), "activations": [ACTIVATIONS[a] for a in names] * directions}
    clip = float(attributes.get("clip", 0.0))
    if clip < 0:
        raise Unsupported(f"clip={clip}: a negative clip threshold has no meaning")
    if clip > 0:  # OpenVINO's 0 means no clipping; both clip the activations' inputs to [-clip, clip]
        onnx["clip"] = clip
    if kind == "GRU":
        onnx["linear_before_reset"] = int(bool(attributes.get("linear_before_reset", False)))
    return onnx


def _constant(ctx, node, index: int) -> np.ndarray | None:
    """Input `index` when it is a Constant, or a Convert of an f16 Constant (compressed weights: the f16
    values, converted by _concat after the reordering)."""
    value = ctx.const_value(node, index)
    producer = node.input_value(index).get_node()
    if value is None and producer.get_type_name() == "Convert":
        value = ctx.const_value(producer, 0)
        if value is not None and value.dtype != np.float16:
            value = None
    return value


def _chunks(ctx, node, index: int, count: int, cell: bool) -> tuple[list, bool]:
    """Input `index` as [D, ...] split into `count` equal parts along axis 1: numpy arrays for a Constant
    (True), ONNX names otherwise (False). A cell's input [G*H, ...] gets the direction axis first."""
    value = _constant(ctx, node, index)
    if value is not None:
        value = value[None] if cell else value
        return np.split(value, count, axis=1), True
    name = ctx.inp(node, index)
    if cell:
        name = ctx.emit("Unsqueeze", [name, ctx.const(np.array([0], np.int64), "axes")])
    if count == 1:
        return [name], False
    parts = [ctx.temp(f"gate{k}") for k in range(count)]
    ctx.emit("Split", [name], parts, axis=1, num_outputs=count)
    return parts, False


def _concat(ctx, parts: list, constant: bool, hint: str) -> str:
    if constant:
        value = ctx.const(np.ascontiguousarray(np.concatenate(parts, axis=1)), hint)
        return value if parts[0].dtype == np.float32 else ctx.emit("Cast", [value], to=TensorProto.FLOAT)
    if len(parts) == 1:
        return parts[0]
    return ctx.emit("Concat", parts, axis=1)


def _weights(ctx, node, index: int, kind: str, cell: bool, hint: str) -> str:
    order = ORDER[kind]
    parts, constant = _chunks(ctx, node, index, len(order), cell)
    return _concat(ctx, [parts[k] for k in order], constant, hint)


def _bias(ctx, node, index: int, kind: str, cell: bool, linear_before_reset: bool) -> str:
    """OpenVINO's bias as ONNX's [D, 2*G*H] (Wb, Rb)."""
    order = ORDER[kind]
    parts, constant = _chunks(ctx, node, index, len(order) + int(linear_before_reset), cell)
    if constant:
        zero = np.zeros_like(parts[0])
    else:
        zero = ctx.emit("ConstantOfShape", [ctx.emit("Shape", [parts[0]])],
                        value=helper.make_tensor("zero", TensorProto.FLOAT, [1], [0.0]))
    recurrent = [zero] * len(order)
    if linear_before_reset:
        recurrent[-1] = parts[-1]
    return _concat(ctx, [parts[k] for k in order] + recurrent, constant, "bias")


def _transpose(ctx, name: str, perm, outputs=None) -> str:
    return ctx.emit("Transpose", [name], outputs, perm=list(perm))


def _sequence(ctx, node, kind: str):
    """LSTMSequence / GRUSequence / RNNSequence: inputs X, H0, (C0), seq_lengths, W, R, B."""
    direction = str(node.get_attributes()["direction"]).lower()
    directions = 2 if direction == "bidirectional" else 1
    attributes = _attributes(ctx, node, kind, directions)
    lstm = kind == "LSTM"
    first_weight = 4 if lstm else 3
    lengths = first_weight - 1
    lbr = bool(attributes.get("linear_before_reset"))
    states = [_transpose(ctx, ctx.inp(node, k), (1, 0, 2)) for k in range(1, lengths)]  # [D, B, H]
    sequence_lens = ctx.inp(node, lengths)
    if ctx.elem(node, lengths) != TensorProto.INT32:
        sequence_lens = ctx.emit("Cast", [sequence_lens], to=TensorProto.INT32)
    inputs = [_transpose(ctx, ctx.inp(node, 0), (1, 0, 2)),
              _weights(ctx, node, first_weight, kind, False, "W"),
              _weights(ctx, node, first_weight + 1, kind, False, "R"),
              _bias(ctx, node, first_weight + 2, kind, False, lbr),
              sequence_lens] + states
    outputs = [ctx.temp("Y"), ctx.temp("Y_h")] + ([ctx.temp("Y_c")] if lstm else [])
    ctx.emit(kind, inputs, outputs, direction=direction, **attributes)
    _transpose(ctx, outputs[0], (2, 1, 0, 3), [ctx.out(node, 0)])
    for k, state in enumerate(outputs[1:], start=1):
        _transpose(ctx, state, (1, 0, 2), [ctx.out(node, k)])


def _cell(ctx, node, kind: str, weights_format: str | None = None):
    """LSTMCell / GRUCell / RNNCell: inputs X, H, (C), W, R, B -> a one-step ONNX sequence."""
    attributes = _attributes(ctx, node, kind, 1)
    lstm = kind == "LSTM"
    first_weight = 3 if lstm else 2
    lbr = bool(attributes.get("linear_before_reset"))
    axes = ctx.const(np.array([0], np.int64), "axes")
    unsqueezed = [ctx.emit("Unsqueeze", [ctx.inp(node, k), axes]) for k in range(first_weight)]
    inputs = [unsqueezed[0], _weights(ctx, node, first_weight, kind, True, "W"),
              _weights(ctx, node, first_weight + 1, kind, True, "R"),
              _bias(ctx, node, first_weight + 2, kind, True, lbr), ""] + unsqueezed[1:]
    outputs = [ctx.temp("Y"), ctx.temp("Y_h")] + ([ctx.temp("Y_c")] if lstm else [])
    ctx.emit(kind, inputs, outputs, direction="forward", **attributes)
    for k, state in enumerate(outputs[1:]):
        ctx.emit("Squeeze", [state, axes], [ctx.out(node, k)])


_NOTES = ("batch-major OpenVINO tensors transposed to ONNX layout 0 around the node; weights' gates "
          "reordered (LSTM fico -> iofc; GRU zrh as is), Constants (and f16 ones behind a decompression "
          "Convert: reordered in f16, then a Cast) at import, Split + Concat otherwise; "
          "OpenVINO's single bias is ONNX's Wb with Rb = 0 (GRU linear_before_reset: the 4th part is Rb_h); "
          "clip 0 = none; direction and activations (sigmoid, tanh, relu) as named; activations_alpha/beta "
          "dropped (those three ignore them)")
_REFUSES = (_FLOAT_ONLY,)


_LENGTHS = ("; seq_lengths cast to i32: past a length Y is 0 (the spec; OpenVINO's CPU plugin ignores "
            "seq_lengths on dynamic shapes with the default activations and no clip)")


_KIND = {"LSTMSequence": "LSTM", "GRUSequence": "GRU", "RNNSequence": "RNN",
         "LSTMCell": "LSTM", "GRUCell": "GRU", "RNNCell": "RNN"}


@rule("LSTMSequence", "GRUSequence", "RNNSequence", versions=(5,), onnx="LSTM / GRU / RNN (+ Transpose)",
      notes=_NOTES + _LENGTHS, refuses=_REFUSES)
def sequence(ctx, node):
    _sequence(ctx, node, _KIND[node.get_type_name()])


_CELL = dict(onnx="LSTM / GRU / RNN (one step: Unsqueeze, Squeeze)", notes=_NOTES, refuses=_REFUSES)


@rule("LSTMCell", versions=(4,), **_CELL)
@rule("GRUCell", versions=(3,), **_CELL)
@rule("RNNCell", versions=(1,), **_CELL)
def cell(ctx, node):
    _cell(ctx, node, _KIND[node.get_type_name()])


@rule("LSTMCell", versions=(1,), onnx="LSTM (one step: Unsqueeze, Squeeze)",
      notes=_NOTES + "; LSTMCell-1's defaults (weights_format fico, input_forget false, no peepholes) only",
      refuses=_REFUSES + ("weights_format other than fico, input_forget=true, peepholes (7th input) other than "
                          "a Constant 0: OpenVINO's CPU plugin ignores them (measured: the outputs of fico, "
                          "input_forget=false, no peepholes), so the spec's meaning has no runtime to check "
                          "against",))
def lstm_cell_1(ctx, node):
    attributes = node.get_attributes()
    if str(attributes.get("weights_format", "fico")).lower() != "fico" or attributes.get("input_forget"):
        raise Unsupported("weights_format other than fico or input_forget=true: OpenVINO's CPU plugin ignores "
                          "them, so the spec's meaning has no runtime to check against")
    if node.get_input_size() > 6:
        peepholes = ctx.const_value(node, 6)
        if peepholes is None or peepholes.any():
            raise Unsupported("peepholes (input 6) other than a Constant 0: OpenVINO's CPU plugin ignores them, "
                              "so the spec's meaning has no runtime to check against")
    _cell(ctx, node, "LSTM")
