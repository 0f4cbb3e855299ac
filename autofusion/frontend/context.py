"""Values and per-node context shared by the importer, the folder and the converters.

During import every ONNX value name maps to either

* a :class:`Const`: a numpy array known at import time (initializers, ``Constant`` nodes,
  folded subgraphs, ``Shape`` of a statically shaped value). It becomes an ``nn.constant``
  only when a run-time op or a graph output needs it, so shape subgraphs and weights that
  only feed folded nodes never reach the IR;
* an ``SSAValue`` of a static ``tensor<...>`` type: a run-time value.

Converters receive a :class:`NodeCtx` and return one entry per ONNX output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import onnx
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.irdl import IRDLOperation

from autofusion import symbolic
from autofusion.analysis.static_shapes import MAX_TENSOR_BYTES
from autofusion.dialects import dtypes
from autofusion.dialects.attrs import ORIGINS
from autofusion.dialects.base import shape_of, str_array, tensor_of
from autofusion.dialects.nn import ConstantOp, SizesOp
from autofusion.errors import AutofusionError

FOLD_LIMIT = 64 << 20
"""Largest result (bytes) an import-time fold materialises: a bigger one stays a run-time op
where the op has a lowering (so a tiny model cannot make the importer allocate gigabytes of
constants), else it is an import error."""


def nbytes_of(shape: Sequence[int], dtype: np.dtype) -> int:
    """Bytes of a dense ``shape`` tensor of ``dtype``, exact (Python ints never overflow)."""
    n = int(np.dtype(dtype).itemsize)
    for d in shape:
        n *= int(d)
    return n


def virtual_nbytes(c: Const) -> int:
    """Bytes ``c`` would take once materialised (a splat view holds one element only)."""
    return nbytes_of(c.shape, c.array.dtype)


class Const:
    """An import-time constant: a numpy array plus where it came from.

    ``raw`` (optional) is the little-endian byte buffer the array views, so materialising
    a weight wraps those bytes in a ``BytesAttr`` without another copy.
    """

    __slots__ = ("_op", "array", "origin", "raw")

    def __init__(self, array: np.ndarray, origin: str, raw: bytes | None = None):
        self.array = array
        self.origin = origin
        self.raw = raw
        self._op: ConstantOp | SizesOp | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.array.shape)

    @property
    def elem(self) -> dtypes.ElemType:
        if self.is_symbolic:
            return dtypes.i64
        return dtypes.from_numpy_dtype(self.array.dtype)

    @property
    def is_symbolic(self) -> bool:
        """Holds symbolic sizes (``symbolic.Size``; an object array, logically int64): the
        folded shape arithmetic of a symbolic import (``frontend/symfold.py``)."""
        return self.array.dtype == object

    @property
    def is_splat(self) -> bool:
        """A broadcast view of one value (e.g. ConstantOfShape): stored as one element."""
        a = self.array
        return a.size > 1 and all(s == 0 for s in a.strides)

    def dense(self) -> DenseIntOrFPElementsAttr:
        if self.is_symbolic:
            shown = ", ".join(str(x) for x in self.array.reshape(-1)[:8])
            raise symbolic.SymbolicError(
                f"a shape value holding symbolic sizes ([{shown}]) is used as run-time data; "
                "a symbolic import supports shape values only where they give shapes"
            )
        ttype = dtypes.tensor_type(self.elem, self.array.shape)
        if self.is_splat:
            one = self.array.reshape(-1)[:1]
            data = one.astype(np.int8) if one.dtype == np.bool_ else one
            return DenseIntOrFPElementsAttr(ttype, BytesAttr(data.tobytes()))
        if self.raw is not None and self.array.dtype != np.bool_:
            return DenseIntOrFPElementsAttr(ttype, BytesAttr(self.raw))
        return dtypes.dense_from_numpy(self.array)


Value = Const | SSAValue


def value_shape(v: Value) -> tuple[int, ...]:
    return v.shape if isinstance(v, Const) else shape_of(v)


def value_elem(v: Value) -> Attribute:
    return v.elem if isinstance(v, Const) else tensor_of(v).element_type


def value_np_dtype(v: Value) -> np.dtype:
    return v.array.dtype if isinstance(v, Const) else dtypes.to_numpy_dtype(value_elem(v))


@dataclass
class Emitter:
    """Appends ops to the body of ``@main`` and materialises constants once each."""

    block: Block

    def materialise(self, c: Const) -> SSAValue:
        if c._op is None:
            op = (
                SizesOp(list(c.array.reshape(-1)), c.shape, c.elem)
                if c.is_symbolic
                else ConstantOp(c.dense())
            )
            op.attributes[ORIGINS] = str_array([c.origin])
            self.block.add_op(op)
            c._op = op
        return c._op.results[0]


_A = onnx.AttributeProto
#: How an attribute kind reads in a message.
KIND_WORDS: dict[int, str] = {
    _A.INT: "an integer", _A.INTS: "a list of integers", _A.FLOAT: "a float",
    _A.FLOATS: "a list of floats", _A.STRING: "a string", _A.STRINGS: "a list of strings",
    _A.TENSOR: "a tensor", _A.TENSORS: "a list of tensors", _A.GRAPH: "a graph",
    _A.GRAPHS: "a list of graphs", _A.SPARSE_TENSOR: "a sparse tensor",
    _A.TYPE_PROTO: "a type", _A.UNDEFINED: "an attribute of undefined type",
}  # fmt: skip


def kind_text(kind: int) -> str:
    """``INTS (a list of integers)``: the ONNX name and what it means."""
    name = _A.AttributeType.Name(kind) if kind in _A.AttributeType.values() else str(kind)
    return f"{name} ({KIND_WORDS.get(kind, 'unknown kind')})"


@cache
def schema_attr_kind(op_type: str, domain: str, opset: int, name: str) -> int | None:
    """The attribute kind the ONNX schema of ``op_type`` (at ``opset``) declares for
    ``name``, or None when there is no schema or it does not declare the attribute."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, "" if domain == "ai.onnx" else domain)
    except onnx.defs.SchemaError:
        return None
    a = schema.attributes.get(name)
    # The stub omits the enum's __int__ (at runtime AttrType is an int-valued enum).
    return None if a is None else int(a.type)  # pyright: ignore[reportArgumentType]


def default_kind(default: Any) -> tuple[int, ...]:
    """Kinds a converter's default value admits (for attributes without a schema); an int
    is acceptable where a float is expected, as ONNX writers often emit ``alpha=1``."""
    if isinstance(default, bool):
        return ()
    if isinstance(default, int):
        return (_A.INT,)
    if isinstance(default, float):
        return (_A.FLOAT, _A.INT)
    if isinstance(default, str):
        return (_A.STRING,)
    if isinstance(default, (list, tuple)) and default:
        if all(isinstance(x, int) and not isinstance(x, bool) for x in default):
            return (_A.INTS,)
        if all(isinstance(x, float) for x in default):
            return (_A.FLOATS, _A.INTS)
    return ()


@dataclass
class NodeCtx:
    """What a converter sees: the node, its inputs and helpers to emit ops."""

    node: onnx.NodeProto
    origin: str
    opset: int
    inputs: list[Value | None]
    emitter: Emitter
    filename: str
    attrs: dict[str, Any] = field(default_factory=dict)
    n_outputs_used: list[bool] = field(default_factory=list)
    #: the AttributeProto kind of each attribute in ``attrs`` (None: not checked)
    attr_kinds: dict[str, int] | None = None

    # ---- errors ------------------------------------------------------------------------
    def error(self, msg: str) -> AutofusionError:
        return AutofusionError(
            f"{self.filename}: node '{self.origin}' ({self.node.op_type}): {msg}"
        )

    def check_size(self, shape: Sequence[int], dtype: np.dtype, what: str = "output") -> int:
        """The byte size of a ``shape`` result of ``dtype``; over :data:`MAX_TENSOR_BYTES` it
        is an error naming the node, raised before anything is allocated. Returns the size
        (of a symbolic shape: at its symbols' upper bounds)."""
        shape = [symbolic.upper_bound(d) for d in shape]
        n = nbytes_of(shape, dtype)
        if n > MAX_TENSOR_BYTES:
            raise self.error(
                f"{what} shape {list(map(int, shape))} of {np.dtype(dtype)} holds "
                f"{n} bytes, over the limit of 2^48 bytes (256 TiB) per tensor"
            )
        return n

    def fold_fits(self, shape: Sequence[int], dtype: np.dtype) -> bool:
        """Whether a fold may materialise a ``shape`` result (at most :data:`FOLD_LIMIT`
        bytes); a result over the per-tensor byte limit is an error (:meth:`check_size`)."""
        return self.check_size(shape, dtype) <= FOLD_LIMIT

    # ---- attributes --------------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute's value, or ``default`` when the node has none. The value's kind is
        checked against the ONNX schema (or, for ops without one, the kind of ``default``),
        so no converter sees a string ``strides`` or a float ``axis``."""
        if name not in self.attrs:
            return default
        if self.attr_kinds is not None and name in self.attr_kinds:
            actual = self.attr_kinds[name]
            want = schema_attr_kind(self.node.op_type, self.node.domain, self.opset, name)
            allowed = (want,) if want is not None else default_kind(default)
            if allowed and actual not in allowed:
                raise self.error(
                    f"attribute '{name}' must be {kind_text(allowed[0])}, got {kind_text(actual)}"
                )
        return self.attrs[name]

    def has_attr(self, name: str) -> bool:
        return name in self.attrs

    # ---- inputs ------------------------------------------------------------------------
    def input(self, i: int) -> Value:
        v = self.inputs[i] if i < len(self.inputs) else None
        if v is None:
            raise self.error(f"input {i} is required")
        return v

    def opt_input(self, i: int) -> Value | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def const_input(self, i: int, what: str) -> np.ndarray | None:
        """The import-time value of optional input ``i`` (None if absent); error if run-time."""
        v = self.opt_input(i)
        if v is None:
            return None
        if not isinstance(v, Const):
            raise self.error(f"{what} (input {i}) must be a constant computable at import time")
        return v.array

    def shape(self, i: int) -> tuple[int, ...]:
        return value_shape(self.input(i))

    def elem(self, i: int) -> Attribute:
        return value_elem(self.input(i))

    def all_const(self) -> bool:
        return all(v is None or isinstance(v, Const) for v in self.inputs)

    # ---- emitting ----------------------------------------------------------------------
    def value(self, v: Value) -> SSAValue:
        return self.emitter.materialise(v) if isinstance(v, Const) else v

    def const(self, array: np.ndarray) -> Const:
        return Const(np.asarray(array), self.origin)

    def emit(
        self,
        op_cls: type[IRDLOperation],
        operands: Sequence[Value | Sequence[Value] | None],
        result_types: Sequence[Attribute | Sequence[Attribute]],
        properties: dict[str, Attribute] | None = None,
    ) -> Operation:
        resolved: list[Any] = []
        for o in operands:
            if o is None:
                resolved.append([])
            elif isinstance(o, Const | SSAValue):
                resolved.append(self.value(o))
            else:
                resolved.append([self.value(x) for x in o])
        op = op_cls.build(
            operands=resolved, result_types=list(result_types), properties=properties or {}
        )
        op.attributes[ORIGINS] = str_array([self.origin])
        self.emitter.block.add_op(op)
        return op

    def emit1(
        self,
        op_cls: type[IRDLOperation],
        operands: Sequence[Value | Sequence[Value] | None],
        shape: Sequence[int],
        elem: Attribute,
        properties: dict[str, Attribute] | None = None,
    ) -> SSAValue:
        op = self.emit(op_cls, operands, [dtypes.tensor_type(elem, shape)], properties)
        return op.results[0]


Converter = Callable[[NodeCtx], Sequence[Value | None]]


__all__ = [
    "FOLD_LIMIT",
    "Const",
    "Converter",
    "Emitter",
    "NodeCtx",
    "Value",
    "nbytes_of",
    "value_elem",
    "value_np_dtype",
    "value_shape",
    "virtual_nbytes",
]
