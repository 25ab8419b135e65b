"""onnxruntime-extensions adapter: the only module that imports onnxruntime_extensions.

The registration core for every Python op the bridge runs in onnxruntime: the dialect ops (registered
here, from their specs) and users' own ops (onnx_bridge.custom_op) go through `register_pyop`.

- One PyOp registration per input type signature (same op name, onnxruntime-extensions dispatches by
  input types).
- A replacement of onnxruntime-extensions' invocation hook that returns C-contiguous numpy arrays instead
  of `ndarray.tolist()` (its C++ side memcpys array data; PyOps registered elsewhere still get the stock
  hook), and that never lets an exception escape into C++ (which calls std::terminate): the error is
  recorded, empty outputs are returned and the caller raises the error.
- A node's attributes are decoded and checked once, not per call: the C++ side passes the same strings
  every call, and the hook keeps what the op's `prepare` made of them (_Signature.attributes).
- The error channel is per run, never process-wide. onnxruntime-extensions calls the hook with the GIL
  held on the thread that executes the node, which in sequential execution mode is the thread that called
  run() (checked in tests/test_concurrency.py). `collecting_errors()` (used by
  onnx_bridge.InferenceSession.run) installs a run-local record on that thread; outside such a run (a
  user's own onnxruntime session built with prepare_model) errors go to a per-thread list that
  `take_errors()` empties. Recorded errors keep their traceback lines but not the frames' locals, so the
  failing inputs are never retained. No lock: the GIL serializes the Python parts, native work runs free.
- Registrations are appended to a per-domain std::vector inside onnxruntime-extensions, and every
  session that loaded the library holds pointers into it: a domain must not grow once a session has
  loaded it (`seal()`), new domains may still be added.
"""
from __future__ import annotations

import itertools
import json
import threading
import traceback

import numpy as np

from ._ortx_compat import check as _check_ortx

_check_ortx()  # the onnxruntime-extensions internals used below, or one ImportError naming the range

from onnxruntime_extensions import PyCustomOpDef, _ocos, onnx_op  # noqa: E402
from onnxruntime_extensions import get_library_path as _extensions_library_path  # noqa: E402

from .config import DOMAIN
from .errors import BridgeError, OpError


from .ops import units
from ._types import STRING, dtype_from_name

#: numpy dtype -> onnxruntime-extensions PyOp type code (float16/bfloat16 cannot be carried).
PYOP_TYPES = {
    np.dtype(np.bool_): PyCustomOpDef.dt_bool,
    np.dtype(np.int8): PyCustomOpDef.dt_int8, np.dtype(np.uint8): PyCustomOpDef.dt_uint8,
    np.dtype(np.int16): PyCustomOpDef.dt_int16, np.dtype(np.uint16): PyCustomOpDef.dt_uint16,
    np.dtype(np.int32): PyCustomOpDef.dt_int32, np.dtype(np.uint32): PyCustomOpDef.dt_uint32,
    np.dtype(np.int64): PyCustomOpDef.dt_int64, np.dtype(np.uint64): PyCustomOpDef.dt_uint64,
    np.dtype(np.float32): PyCustomOpDef.dt_float, np.dtype(np.float64): PyCustomOpDef.dt_double,
    STRING: PyCustomOpDef.dt_string,   # Python str in, str out (onnxruntime-extensions: UTF-8, up to a NUL)
}
CARRIED_TYPES = tuple(PYOP_TYPES)
HIDDEN_ATTRIBUTES = {"_node": PyCustomOpDef.dt_string, "_dtype": PyCustomOpDef.dt_string}
#: Hidden attribute of the dialect ops: indices of absent optional inputs (placeholders), comma-separated.
ABSENT = "_absent"


# The error channel -------------------------------------------------------------------------------

_thread = threading.local()  # .run: the record of the run in progress on this thread; .pending


def _forget_locals(error: BaseException) -> BaseException:
    """Drop the frames' local variables (the failing inputs) from `error` and its chained exceptions;
    file, line and function of every frame stay for the traceback."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        traceback.clear_frames(error.__traceback__)
        error = error.__cause__ or error.__context__
    return error


def _record(error: BaseException) -> None:
    _forget_locals(error)
    record = getattr(_thread, "run", None)
    if record is None:
        record = _thread.__dict__.setdefault("pending", [])
    record.append(error)


class collecting_errors:  # noqa: N801 - used as a function: `with collecting_errors() as errors`
    """Record the errors of the Python ops run on this thread inside the block in a list of their own
    (returned by `with`); errors outside any such block go to take_errors(). A class, not a
    contextlib.contextmanager generator: it is entered on every run, and the generator form measured
    10-20 µs more per run of a small op (docs/performance.md, "Per-call cost of the Python ops")."""

    __slots__ = ("record", "previous")

    def __enter__(self) -> list:
        self.previous = getattr(_thread, "run", None)
        _thread.run = self.record = []
        return self.record

    def __exit__(self, *exc_info) -> None:
        _thread.run = self.previous


def take_errors() -> list[BaseException]:
    """Errors raised inside bridge Python ops on this thread, outside onnx_bridge.InferenceSession.run
    (e.g. in a user's own onnxruntime session built with prepare_model), since the last call."""
    errors = _thread.__dict__.get("pending", [])
    _thread.pending = []
    return errors


# Registration core -------------------------------------------------------------------------------

_OURS: dict[int, "_Signature"] = {}
_sealed: set[str] = set()     # domains some session has loaded: they must not grow any more
_registered: set[str] = set()


#: Most distinct attribute sets (nodes) whose prepared form one op keeps; past it the cache starts over.
PREPARED_PER_OP = 4096


class _Signature:
    """One registered input-type signature of one op; `prepared` (shared by the op's signatures) maps a
    node's raw attribute strings to the op's prepared form of them (ops with a `prepare` method)."""

    def __init__(self, op, output_dtypes, prepared: dict):
        self.op, self.output_dtypes, self.prepared = op, output_dtypes, prepared
        self.prepare = getattr(op, "prepare", None)

    def attributes(self, k_id, raw: dict):
        """What the op is called with for a node's `raw` attribute strings. onnxruntime-extensions passes a
        new dict of the same strings on every call of a node, so an op's prepare (attribute decoding and
        validation) runs once per distinct attribute set, not once per call; a failing prepare caches
        nothing (every call raises again, as before)."""
        if self.prepare is None:
            return _ocos.Opdef._odlist[k_id].cast_attributes(raw)
        key = tuple(raw.items())  # std::map order: sorted by name, the same on every call
        prepared = self.prepared.get(key)
        if prepared is None:
            prepared = self.prepare(_ocos.Opdef._odlist[k_id].cast_attributes(raw))
            if len(self.prepared) >= PREPARED_PER_OP:
                self.prepared.clear()
            self.prepared[key] = prepared
        return prepared


def get_library_path() -> str:
    """The onnxruntime-extensions library; whoever asks may load it into a session, so every domain
    registered so far is sealed."""
    _sealed.update(_registered)
    return _extensions_library_path()


def register_pyop(op, domain: str, op_type: str, signatures, attributes: dict) -> None:
    """Register `op` (called as op(inputs, attributes, output dtypes) -> list of output arrays) for every
    (input dtypes, output dtypes) in `signatures`; `attributes` maps name -> PyCustomOpDef type code. An op
    with a `prepare(attributes)` method is called with its result instead of the attributes, prepared once
    per distinct node attributes (_Signature.attributes)."""
    if domain in _sealed:
        raise BridgeError(f"cannot add {domain}::{op_type}: a session has already loaded domain "
                          f"{domain!r} (onnxruntime-extensions keeps pointers into its op list); "
                          f"register every op of a domain before creating sessions that use it")
    prepared = {}
    for input_dtypes, output_dtypes in signatures:
        opdef = onnx_op(op_type=f"{domain}::{op_type}", inputs=[PYOP_TYPES[t] for t in input_dtypes],
                        outputs=[PYOP_TYPES[t] for t in output_dtypes], attrs=dict(attributes))(op)
        _OURS[id(opdef)] = _Signature(op, tuple(output_dtypes), prepared)
    _registered.add(domain)


def _invoke(k_id, feed, attributes):
    signature = _OURS.get(k_id)
    if signature is None:
        return _ocos._on_pyop_invocation(k_id, feed, attributes)
    try:
        outputs = signature.op(feed, signature.attributes(k_id, attributes), signature.output_dtypes)
    except BaseException as error:  # noqa: BLE001 - anything escaping here aborts the process
        # The error's frames keep this one alive (f_back): let go of the inputs it holds.
        feed.clear()
        error.__traceback__ = error.__traceback__.tb_next
        _record(error)
        outputs = [np.zeros((0,), dtype=d) for d in signature.output_dtypes]
    result = [k_id]
    for array in outputs:
        # strings go back as a flat list of str (the C++ side reads Python strings, not an array)
        result += [array.shape, array.reshape(-1).tolist() if array.dtype == STRING else array]
    return tuple(result)


# The dialect ops ---------------------------------------------------------------------------------

class CallKeywords:
    """Keyword arguments prepared once per node (a dialect kernel's, a user op function's); fresh() gives one
    call's: the list values copied, as a kernel or function may change its list."""

    __slots__ = ("kwargs", "lists")

    def __init__(self, kwargs: dict):
        self.kwargs = kwargs
        self.lists = tuple(name for name, value in kwargs.items() if isinstance(value, list))

    def fresh(self) -> dict:
        kwargs = self.kwargs
        return {**kwargs, **{name: list(kwargs[name]) for name in self.lists}} if self.lists else kwargs


class _NodeCall:
    """A dialect node's attributes as its kernel call needs them, decoded and checked once
    (_DialectOp.prepare)."""

    def __init__(self, node, logical, absent, keywords: CallKeywords):
        self.node, self.logical, self.absent = node, logical, absent
        self.keywords = keywords  # the kernel's keyword arguments


class _DialectOp:
    """Runs the spec's kernel and returns arrays of the declared types."""

    def __init__(self, spec, inplace_first: bool):
        self.spec, self.inplace_first = spec, inplace_first

    def prepare(self, attributes) -> _NodeCall:
        """The node's hidden attributes read, list attributes decoded from JSON, every attribute checked
        (an OpError naming the node, as a failing kernel's)."""
        attributes = dict(attributes)
        node = attributes.pop("_node", "") or None
        logical = attributes.pop("_dtype", "")
        absent = frozenset(int(i) for i in attributes.pop(ABSENT, "").split(",") if i)
        for attribute in self.spec.attributes:
            if attribute.kind in JSON_KINDS and attribute.name in attributes:
                attributes[attribute.name] = json.loads(attributes[attribute.name])
        kwargs = self._attributed(node, self.spec.attribute_values, attributes)
        if self.inplace_first and not logical:
            kwargs["inplace"] = True
        return _NodeCall(node, dtype_from_name(logical) if logical else None, absent, CallKeywords(kwargs))

    def _attributed(self, node, function, *args, **kwargs):
        """function(*args, **kwargs); an OpError it raises names the node, any other exception becomes one."""
        try:
            return function(*args, **kwargs)
        except OpError as error:
            raise error.with_node(node)
        except Exception as error:  # a bug of ours: still a clean, attributable exception
            raise OpError(self.spec.op_type, "kernel", f"internal failure {type(error).__name__}: {error}",
                          node=node) from error

    def __call__(self, feed, call: _NodeCall, output_dtypes):
        inputs = feed
        if call.absent:
            inputs = [None if i in call.absent else x for i, x in enumerate(feed)]
            while inputs and inputs[-1] is None:
                inputs.pop()
        if call.logical is not None:  # widened by the session: compute in the logical type (its limits, one rounding)
            inputs = [x.astype(call.logical) if x is not None and x.dtype == np.float32 else x for x in inputs]
        values = self._attributed(call.node, self.spec.kernel, *inputs, **call.keywords.fresh())
        if not isinstance(values, tuple):
            values = (values,)
        return [_c_array(v, d) for v, d in zip(values, output_dtypes)]


def _c_array(value, dtype) -> np.ndarray:
    """`value` as a C-contiguous array of `dtype`: itself when it already is one (np.require's answer,
    without its cost per call), else np.require's copy. np.require, not np.ascontiguousarray: the latter
    turns a 0-D result into shape (1,)."""
    if type(value) is np.ndarray and value.dtype == dtype and value.flags.c_contiguous:
        return value
    return np.require(value, dtype=dtype, requirements="C")


#: Attribute kind -> PyOp attribute type; lists travel as JSON strings (session.prepare_model writes them).
_ATTRIBUTE_CODES = {"int": PyCustomOpDef.dt_int64, "float": PyCustomOpDef.dt_float,
                    "string": PyCustomOpDef.dt_string, "ints": PyCustomOpDef.dt_string,
                    "floats": PyCustomOpDef.dt_string}
JSON_KINDS = ("ints", "floats")


def _attribute_codes(spec) -> dict:
    return {a.name: _ATTRIBUTE_CODES[a.kind] for a in spec.attributes}


def unit_signatures(unit) -> list[tuple[tuple, tuple]]:
    """(input dtypes, output dtypes) of every carried input-type combination of a unit's newest spec: one
    type per type constraint of the inputs (optional inputs included: prepare_model names every input);
    an output's type is its constraint's input type, the constraint's only type, or unit.pyop_outputs'."""
    spec = unit.newest
    constraints = list(dict.fromkeys(port.type_constraint for port in spec.inputs))
    choices = [[t for t in spec.type_constraints[name] if t in PYOP_TYPES] for name in constraints]
    signatures = []
    for combination in itertools.product(*choices):
        bound = dict(zip(constraints, combination))
        inputs = tuple(bound[port.type_constraint] for port in spec.inputs)
        if unit.pyop_outputs is not None:
            outputs = tuple(unit.pyop_outputs(inputs))
        else:
            outputs = []
            for port in spec.outputs:
                allowed = spec.type_constraints[port.type_constraint]
                if port.type_constraint not in bound and len(allowed) != 1:
                    raise BridgeError(f"{unit.op_type}: output {port.name!r} has type constraint "
                                      f"{port.type_constraint} not bound by an input: give pyop_outputs")
                outputs.append(bound.get(port.type_constraint, allowed[0] if allowed else None))
            outputs = tuple(outputs)
        signatures.append((inputs, outputs))
    return signatures


def _register_unit(unit) -> None:
    spec = unit.newest
    attrs = _attribute_codes(spec)
    attrs.update(HIDDEN_ATTRIBUTES)
    attrs[ABSENT] = PyCustomOpDef.dt_string
    register_pyop(_DialectOp(spec, inplace_first=unit.inplace_first), DOMAIN, unit.op_type,
                  unit_signatures(unit), attrs)


def _register_all() -> None:
    # Every registration of one op name must have the same number of inputs: onnxruntime-extensions
    # otherwise fails every later session ("IsCompatible input count does not match"). That is why
    # every input is always given (prepare_model adds a placeholder for an absent optional input and
    # lists it in _absent).
    for unit in units():
        _register_unit(unit)


_register_all()
PyCustomOpDef.install_hooker(_invoke)
