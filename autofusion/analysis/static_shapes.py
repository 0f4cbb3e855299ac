"""The shapes the memory plan and the C backend can compile: static, empty-free where it
matters, and of a byte size that no size computation can overflow.

- **Dynamic dimensions** (``?`` in IR text) are not supported yet: xDSL stores them as
  ``INT64_MIN``, which would otherwise flow into byte sizes, offsets and the C shape tables.
- **Byte sizes** are limited to :data:`MAX_TENSOR_BYTES` = 2^48 bytes (256 TiB) per tensor,
  the virtual address space of x86-64 and AArch64: a larger tensor could never be
  allocated, and the limit keeps every size, offset and index the plan and the generated C
  compute (``int64_t``, ``size_t``, sums of many tensors) far from overflow.
- **Zero-sized tensors** are fine (``convert-nn-to-buffers`` gives a step whose results
  are all empty a kernel with an empty body).

Every check raises an :class:`AutofusionError` naming the op (with its ONNX origins) or
the argument, the type and the dimension.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, StringAttr, TensorType
from xdsl.ir import Attribute, Operation

from autofusion import symbolic as sym
from autofusion.dialects import dtypes
from autofusion.dialects.attrs import ONNX_NAME, origin_names
from autofusion.dialects.base import SymShapeAttr, bound_dims
from autofusion.errors import AutofusionError

MAX_TENSOR_BYTES = 1 << 48
"""Largest byte size of one tensor (2^48 bytes, 256 TiB)."""


def type_problem(t: Attribute, symbolic: bool = False) -> str | None:
    """Why a tensor or memref type cannot be planned or compiled to C, or None.
    ``symbolic``: symbolic dims (``#nn.shape``, issue 12) are fine, as in the importer's
    symbolic mode; the byte-size limit is then checked at the symbols' upper bounds."""
    if not isinstance(t, TensorType | MemRefType):
        return None
    shape = tuple(t.get_shape())
    if symbolic and isinstance(t, TensorType) and isinstance(t.encoding, SymShapeAttr):
        try:
            shape = bound_dims(t)
        except sym.SymbolicError:
            return None  # unbounded: the importer's symbols always have ranges
    if symbolic and isinstance(t, MemRefType):
        # a buffer of a symbolic module: `?` where the sizes are symbols (they stay off the
        # buffer type; the storage behind it is planned at the upper bounds)
        shape = tuple(d for d in shape if d >= 0)
    for i, d in enumerate(shape):
        if d < 0:
            return f"dimension {i} is dynamic; dynamic shapes are not supported yet"
    n = 1
    for d in shape:
        n *= d
    try:
        item = int(dtypes.to_numpy_dtype(t.element_type).itemsize)
    except (ValueError, KeyError, TypeError):
        item = 8  # an element type the C backend rejects elsewhere; size it generously
    nbytes = n * item
    if nbytes > MAX_TENSOR_BYTES:
        return f"it holds {nbytes} bytes, over the limit of 2^48 bytes (256 TiB) per tensor"
    return None


def describe(op: Operation) -> str:
    """``nn.relu (Relu_0)``: the op and the ONNX nodes it came from."""
    names = origin_names(op)
    origin = getattr(op, "origin_names", None)
    if not names and isinstance(origin, list):
        names = [str(o) for o in origin]
    return f"{op.name} ({', '.join(names)})" if names else op.name


def _arg_name(fn: func.FuncOp, i: int) -> str:
    attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
    label = f"@{fn.sym_name.data} argument {i}"
    if i < len(attrs):
        name = attrs[i].data.get(ONNX_NAME)
        if isinstance(name, StringAttr):
            return f"{label} ({name.data})"
    return label


def check_static_shapes(fn: func.FuncOp, where: str, symbolic: bool = False) -> None:
    """Raise on the first argument or op result of ``fn`` (nested ones included) whose
    type :func:`type_problem` refuses; ``where`` prefixes the message (a pass name).
    ``symbolic``: symbolic sizes are accepted (checked at their upper bounds)."""
    if not fn.body.blocks:
        return
    for i, arg in enumerate(fn.body.block.args):
        problem = type_problem(arg.type, symbolic)
        if problem:
            raise AutofusionError(f"{where}: {_arg_name(fn, i)} has type {arg.type}: {problem}")
    for op in fn.walk():
        for k, res in enumerate(op.results):
            problem = type_problem(res.type, symbolic)
            if problem:
                raise AutofusionError(
                    f"{where}: {describe(op)} result {k} has type {res.type}: {problem}"
                )
