"""What the string ops share: OpenVINO's string element type <-> ONNX tensor(string), and the cases.

An OpenVINO string tensor holds byte strings; an ONNX tensor(string) holds UTF-8 text (TensorProto says so),
which onnxruntime hands to Python as str in an object array. The exact mapping is therefore: element i of the
ONNX tensor is the UTF-8 encoding of element i of the OpenVINO tensor, so byte strings that are not UTF-8 have
no ONNX counterpart (StringTensorPack refuses them). onnxruntime-extensions carries a Python op's strings as
C strings: a string with a NUL character would be cut there, so the ops refuse NUL as well.
"""
from __future__ import annotations

import numpy as np

from custom_ops._types import STRING
from custom_ops.errors import OpError

#: Texts of the generated cases: empty, ASCII, 2-, 3- and 4-byte UTF-8, combining marks, an emoji sequence.
TEXTS = ("", "a", "ab", "OpenVINO", " ", "héllo", "日本語", "ß", "e\u0301", "\U0001F600", "👩\u200d💻",
         "x y\tz", "Ω≈ç√", "\u00a0", "long " * 7)


def strings(values, shape=None) -> np.ndarray:
    """An object array of str (what onnxruntime gives for tensor(string)), shaped `shape`."""
    array = np.empty(len(values), STRING)
    array[:] = list(values)
    return array.reshape(shape if shape is not None else (len(values),))


def text_of(op: str, name: str, data: np.ndarray) -> np.ndarray:
    """`data` as an object array of str: str arrays (numpy U) converted, anything else refused."""
    array = np.asarray(data)
    if array.dtype.kind == "U":
        return array.astype(STRING)
    if array.dtype != STRING:
        raise OpError(op, f"input '{name}'", "unsupported element type", value=str(array.dtype),
                      allowed="string")
    return array


def random_strings(r: np.random.Generator, shape) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    return strings([str(TEXTS[int(i)]) for i in r.integers(0, len(TEXTS), count)], tuple(int(d) for d in shape))


def random_shape(index: int, r: np.random.Generator) -> tuple:
    """Rank 0 to 3, sizes 1 to 4 (OpenVINO's CPU plugin rejects empty string tensors of dynamic shape)."""
    return tuple(int(d) for d in r.integers(1, 5, index % 4))


def input_shape(ctx, index: int = 0):
    """ONNX inference: input `index`'s shape as a list (unknown dims None; None: unknown rank)."""
    known = ctx.get_input_type(index).tensor_type
    if not known.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in known.shape.dim]


def case_id(op: str, index: int, shape) -> str:
    return f"{op}_{index}_{'x'.join(map(str, shape)) or 'scalar'}"


__all__ = ["STRING", "TEXTS", "case_id", "input_shape", "random_shape", "random_strings", "strings", "text_of"]
