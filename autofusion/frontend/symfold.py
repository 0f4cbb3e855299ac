"""Folding exporters' shape arithmetic over symbolic sizes (issue 12, symbolic import).

In symbolic mode (``import_onnx(..., symbols=...)``) ``Shape(x)`` of a tensor with symbolic
dims is an import-time constant whose elements are ``symbolic.Size`` objects (a numpy array of
dtype ``object``, logically int64). The exporters' shape subgraphs (Shape -> Gather ->
Unsqueeze -> Concat -> Reshape, with Add/Mul/Div on the way) then fold to constant shape
vectors holding sizes such as ``seq`` or ``12*seq``, and the converters that take a shape
(Reshape, Expand, ConstantOfShape) build symbolic result types from them.

The data-movement converters (Gather, Unsqueeze, Concat, Slice, ...) already fold constants
with numpy, which works on object arrays. This module folds the arithmetic and logic ops
numpy applies elementwise to object arrays through the sizes' operators, and Cast between
integer types. Anything else that meets a symbolic constant is refused with the node named.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from autofusion import symbolic
from autofusion.frontend.context import Const, NodeCtx

_INT_ONNX = {6, 7}  # int32, int64: a size stays a size


def has_symbolic(ctx: NodeCtx) -> bool:
    """Whether a constant input of the node holds symbolic sizes."""
    return any(isinstance(v, Const) and v.is_symbolic for v in ctx.inputs)


def _binary(fn: Callable[[object, object], object]) -> Callable[[NodeCtx], list[np.ndarray]]:
    def fold(ctx: NodeCtx) -> list[np.ndarray]:
        a, b = (_array(ctx, 0), _array(ctx, 1))
        return [_tidy(np.frompyfunc(fn, 2, 1)(a, b))]

    return fold


def _array(ctx: NodeCtx, i: int) -> np.ndarray:
    v = ctx.input(i)
    assert isinstance(v, Const)
    if v.array.dtype.kind == "f":
        raise symbolic.SymbolicError(
            f"input {i} is floating point; symbolic shape arithmetic is on integers only"
        )
    return v.array.astype(object)


def _tidy(arr: object) -> np.ndarray:
    """An object array whose elements are all ints becomes int64 again (bool stays bool)."""
    a = np.asarray(arr, dtype=object)
    flat = list(a.reshape(-1))
    if all(isinstance(x, (bool, np.bool_)) for x in flat):
        return a.astype(np.bool_)
    if all(not isinstance(x, symbolic.Size) for x in flat):
        return a.astype(np.int64)
    return a


def _div(a: object, b: object) -> object:
    # ONNX integer Div truncates; sizes are positive, so floor and truncation agree
    return a // b  # type: ignore[operator]


def _where(ctx: NodeCtx) -> list[np.ndarray]:
    c = ctx.input(0)
    assert isinstance(c, Const)
    return [_tidy(np.where(c.array.astype(np.bool_), _array(ctx, 1), _array(ctx, 2)))]


def _cast(ctx: NodeCtx) -> list[np.ndarray]:
    to = int(ctx.attr("to", 0))
    if to not in _INT_ONNX:
        raise symbolic.SymbolicError(
            "a symbolic size is cast to a non-integer type; only int32/int64 keep it symbolic"
        )
    return [_array(ctx, 0)]


def _variadic(pick: Callable[[object, object], object]) -> Callable[[NodeCtx], list[np.ndarray]]:
    """Max / Min over any number of inputs, pairwise with ``pick``."""

    def fold(ctx: NodeCtx) -> list[np.ndarray]:
        out = _array(ctx, 0)
        for i in range(1, len(ctx.inputs)):
            out = np.frompyfunc(pick, 2, 1)(out, _array(ctx, i))
        return [_tidy(out)]

    return fold


FOLDERS: dict[str, Callable[[NodeCtx], list[np.ndarray]]] = {
    "Add": _binary(lambda a, b: a + b),  # type: ignore[operator]
    "Sub": _binary(lambda a, b: a - b),  # type: ignore[operator]
    "Mul": _binary(lambda a, b: a * b),  # type: ignore[operator]
    "Div": _binary(_div),
    "Equal": _binary(lambda a, b: a == b),
    "Less": _binary(lambda a, b: a < b),  # type: ignore[operator]
    "Greater": _binary(lambda a, b: a > b),  # type: ignore[operator]
    "LessOrEqual": _binary(lambda a, b: a <= b),  # type: ignore[operator]
    "GreaterOrEqual": _binary(lambda a, b: a >= b),  # type: ignore[operator]
    "Where": _where,
    "Cast": _cast,
    "Max": _variadic(lambda a, b: a if a >= b else b),  # type: ignore[operator]
    "Min": _variadic(lambda a, b: a if a <= b else b),  # type: ignore[operator]
}


def fold(ctx: NodeCtx) -> list[np.ndarray]:
    """The node's outputs over symbolic constant inputs; a ``SymbolicError`` (a
    ``ValueError``, so the importer names the node) when the op cannot fold them."""
    f = FOLDERS.get(ctx.node.op_type)
    if f is None:
        raise symbolic.SymbolicError(
            f"{ctx.node.op_type} of a symbolic shape value cannot be folded symbolically "
            f"(symbolic folding covers {', '.join(sorted(FOLDERS))} and the data-movement ops)"
        )
    return f(ctx)


__all__ = ["FOLDERS", "fold", "has_symbolic"]
