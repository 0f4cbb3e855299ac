"""The interpreter's engine: a per-op registry and block evaluation with early freeing.

An implementation is ``impl(op, args) -> array | sequence of arrays``: it receives the op
(to read properties and result types) and the numpy values of its operands, in order, and
returns one array per result. Implementations must not modify their arguments: arrays may
be read-only views of constants or of other values.

After each op the engine checks the result count and shapes against the op's declared
result types and casts to the declared element type (numpy may widen, e.g. ``mean`` of an
integer tensor). A value is dropped as soon as its last user in the block has run, so
intermediates of large models do not accumulate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import TypeAlias, TypeVar, cast

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from autofusion import symbolic
from autofusion.dialects.attrs import ONNX_NAME, ORIGINS
from autofusion.dialects.base import symbol_ranges, type_dims
from autofusion.dialects.dtypes import to_numpy_dtype
from autofusion.errors import AutofusionError

#: Symbol values of the run in progress (a symbolic module's sizes, bound from the feeds).
_BINDINGS: ContextVar[dict[str, int]] = ContextVar("symbol_values", default={})


def concrete(d: int) -> int:
    """A dim (``int`` or ``symbolic.Size``) under the run's symbol values."""
    return symbolic.evaluate(d, _BINDINGS.get())


def concrete_shape(value: SSAValue) -> tuple[int, ...]:
    """The value's tensor shape with the run's symbol values substituted."""
    return tuple(concrete(d) for d in type_dims(value.type))


Impl: TypeAlias = Callable[[Operation, Sequence[np.ndarray]], "np.ndarray | Sequence[np.ndarray]"]

IMPLS: dict[type[Operation], Impl] = {}
"""Operation class -> numpy implementation. Add entries to support more ops."""


_OpT = TypeVar("_OpT", bound=Operation)
_ResultT = TypeVar("_ResultT", bound="np.ndarray | Sequence[np.ndarray]")
_TypedImpl: TypeAlias = Callable[[_OpT, Sequence[np.ndarray]], _ResultT]


def register(
    *op_types: type[_OpT],
) -> Callable[[_TypedImpl[_OpT, _ResultT]], _TypedImpl[_OpT, _ResultT]]:
    """Decorator registering ``impl`` for each of ``op_types``.

    Generic in the op class so an implementation can annotate its ``op`` parameter with the
    concrete class it is registered for (and read its operand/property accessors typed).
    """

    def wrap(impl: _TypedImpl[_OpT, _ResultT]) -> _TypedImpl[_OpT, _ResultT]:
        for t in op_types:
            # ``_run_op`` looks implementations up by ``type(op)``, so ``impl`` only ever
            # receives instances of ``t``: storing it under the wider ``Impl`` is sound.
            IMPLS[t] = cast(Impl, impl)
        return impl

    return wrap


def describe(op: Operation) -> str:
    """``nn.conv (origins: /conv1/Conv)`` — how errors name an op."""
    origins = op.attributes.get(ORIGINS)
    if origins is None:
        origins = op.properties.get("origins")
    if isinstance(origins, ArrayAttr) and origins.data:
        names = ", ".join(o.data for o in origins.data if isinstance(o, StringAttr))
        return f"'{op.name}' (origins: {names})"
    return f"'{op.name}'"


def _numpy_type(value: SSAValue) -> tuple[np.dtype, tuple[int, ...]]:
    t = value.type
    if not isinstance(t, TensorType):
        raise AutofusionError(f"interpreter: value of type {t} is not a tensor")
    return to_numpy_dtype(t.element_type), concrete_shape(value)


def _run_op(op: Operation, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    impl = IMPLS.get(type(op))
    if impl is None:
        raise AutofusionError(
            f"interpreter: no implementation for op {describe(op)}; "
            "add one to autofusion.interpreter.IMPLS"
        )
    try:
        out = impl(op, args)
    except AutofusionError:
        raise
    except (IndexError, ValueError, TypeError, OverflowError) as e:
        raise AutofusionError(f"interpreter: {describe(op)} failed: {e}") from e
    results = [np.asarray(out)] if isinstance(out, np.ndarray | np.generic) else list(out)
    if len(results) != len(op.results):
        raise AutofusionError(
            f"interpreter: {describe(op)} produced {len(results)} values for "
            f"{len(op.results)} results"
        )
    checked: list[np.ndarray] = []
    for res, value in zip(op.results, results):
        dtype, shape = _numpy_type(res)
        value = np.asarray(value)
        if value.shape != shape:
            raise AutofusionError(
                f"interpreter: {describe(op)} produced shape {value.shape}, "
                f"its result type says {shape}"
            )
        if value.dtype != dtype:
            value = value.astype(dtype)
        checked.append(value)
    return checked


def evaluate_block(block: Block, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run ``block`` with its arguments bound to ``args``; return its terminator's operands.

    The terminator (``func.return``, ``fusion.yield``, or any op with no results that ends
    the block) is not interpreted; its operands are the block's results.
    """
    if len(args) != len(block.args):
        raise AutofusionError(
            f"interpreter: block takes {len(block.args)} arguments, got {len(args)}"
        )
    ops = list(block.ops)
    terminator = ops[-1] if ops and _is_terminator(ops[-1]) else None
    body = ops[:-1] if terminator is not None else ops
    # Index of the last op (len(body) = the terminator) reading each value.
    last_use: dict[SSAValue, int] = {}
    for i, op in enumerate(body):
        for operand in op.operands:
            last_use[operand] = i
    if terminator is not None:
        for operand in terminator.operands:
            last_use[operand] = len(body)

    env: dict[SSAValue, np.ndarray] = dict(zip(block.args, args))
    for i, op in enumerate(body):
        try:
            operands = [env[v] for v in op.operands]
        except KeyError:
            raise AutofusionError(
                f"interpreter: {describe(op)} reads a value defined outside its block"
            ) from None
        for value, array in zip(op.results, _run_op(op, operands)):
            if value in last_use:
                env[value] = array
        for v in op.operands:
            if last_use.get(v) == i:
                env.pop(v, None)
    if terminator is None:
        return []
    return [env[v] for v in terminator.operands]


def _is_terminator(op: Operation) -> bool:
    from xdsl.traits import IsTerminator

    return op.has_trait(IsTerminator)


def evaluate(func_op: func.FuncOp, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Evaluate ``func_op`` on ``args`` (one array per function argument, in order)."""
    if not func_op.body.blocks:
        raise AutofusionError(f"interpreter: function @{func_op.sym_name.data} has no body")
    block = func_op.body.block
    arrays: list[np.ndarray] = []
    for i, (arg, value) in enumerate(zip(block.args, args)):
        arrays.append(_coerce(f"argument {i}", arg, value))
    with np.errstate(all="ignore"):
        return evaluate_block(block, arrays)


def _coerce(what: str, value: SSAValue, given: object) -> np.ndarray:
    dtype, shape = _numpy_type(value)
    arr = np.asarray(given)
    if arr.shape != shape:
        raise AutofusionError(f"interpreter: {what} has shape {arr.shape}, expected {shape}")
    if arr.dtype != dtype:
        if not np.can_cast(arr.dtype, dtype, casting="same_kind"):
            raise AutofusionError(
                f"interpreter: {what} has element type {arr.dtype}, expected {dtype}"
            )
        arr = arr.astype(dtype)
    return arr


def _names(attrs: ArrayAttr[DictionaryAttr] | None, count: int, prefix: str) -> list[str]:
    names = [f"{prefix}{i}" for i in range(count)]
    if attrs is None:
        return names
    for i, d in enumerate(attrs.data[:count]):
        name: Attribute | None = d.data.get(ONNX_NAME)
        if isinstance(name, StringAttr):
            names[i] = name.data
    return names


def main_function(module: ModuleOp) -> func.FuncOp:
    """The module's ``func.func @main``."""
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise AutofusionError("interpreter: module has no func.func @main")


def input_names(func_op: func.FuncOp) -> list[str]:
    """ONNX names of the function's arguments (``arg0``, ... where none is recorded)."""
    return _names(func_op.arg_attrs, len(func_op.function_type.inputs.data), "arg")


def output_names(func_op: func.FuncOp) -> list[str]:
    """ONNX names of the function's results (``result0``, ... where none is recorded)."""
    return _names(func_op.res_attrs, len(func_op.function_type.outputs.data), "result")


def _bind_symbols(
    module: ModuleOp, main: func.FuncOp, names: Sequence[str], feeds: Mapping[str, object]
) -> dict[str, int]:
    """The value of each symbol of a symbolic module (``nn.symbols``) from the feeds'
    shapes, checked against the declared ranges and for agreement between inputs."""
    ranges = symbol_ranges(module)
    if not ranges:
        return {}
    values: dict[str, int] = {}
    with symbolic.scope(ranges):
        for n, arg in zip(names, main.body.block.args):
            shape = np.shape(feeds[n])  # type: ignore[arg-type]
            try:
                symbolic.bind(type_dims(arg.type), shape, values, f"input {n!r}")
            except symbolic.SymbolicError as e:
                raise AutofusionError(f"interpreter: {e}") from None
    for k, v in values.items():
        lo, hi = ranges[k]
        if v < lo or (hi is not None and v > hi):
            raise AutofusionError(
                f"interpreter: symbol '{k}' is {v}, outside its declared range {lo}..{hi}"
            )
    return values


def run_module(module: ModuleOp, feeds: Mapping[str, object]) -> dict[str, np.ndarray]:
    """Interpret ``@main`` of ``module`` on ``feeds`` (ONNX input name -> array).

    Returns ONNX output name -> array (each a fresh, writable, C-contiguous array).
    """
    main = main_function(module)
    names = input_names(main)
    missing = [n for n in names if n not in feeds]
    unknown = [n for n in feeds if n not in names]
    if missing or unknown:
        parts = []
        if missing:
            parts.append("missing inputs " + ", ".join(repr(n) for n in missing))
        if unknown:
            parts.append("unknown inputs " + ", ".join(repr(n) for n in unknown))
        raise AutofusionError(
            f"interpreter: {'; '.join(parts)} (the model takes {', '.join(map(repr, names))})"
        )
    values = _bind_symbols(module, main, names, feeds)
    token = _BINDINGS.set(values)
    try:
        args = [
            _coerce(f"input {n!r}", arg, feeds[n]) for n, arg in zip(names, main.body.block.args)
        ]
        results = evaluate(main, args)
    finally:
        _BINDINGS.reset(token)
    outs: dict[str, np.ndarray] = {}
    for name, value in zip(output_names(main), results):
        flags = value.flags
        if not (flags.c_contiguous and flags.writeable and flags.owndata):
            value = np.array(value, order="C", copy=True)  # keeps rank 0, unlike ascontiguousarray
        outs[name] = value
    return outs
