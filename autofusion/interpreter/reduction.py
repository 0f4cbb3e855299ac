"""Pooling, reductions, softmax and arg_max.

Pools read a strided window view of the input padded with the op's identity (-inf for
max, 0 for average). Ceil mode adds an overhang at the end that no window count includes;
``count_include_pad`` counts only the explicit pads. Reductions over an empty dimension
give the identity (0 for sum, 1 for prod, -inf/+inf for max/min, as ONNX opset 18).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import Operation

from autofusion.dialects import nn
from autofusion.interpreter.contraction import pad_spatial, softmax, windows
from autofusion.interpreter.core import concrete_shape, register

Arrays = Sequence[np.ndarray]


def _pool_geometry(op: nn.PoolOp, x: np.ndarray) -> tuple[tuple[int, ...], list[int], list[int]]:
    """Output spatial shape, begin pads, end pads (explicit pads + ceil-mode overhang)."""
    kernel, strides = op.kernel, op.strides
    pads, dilations = op.pads, op.dilations
    nsp = len(kernel)
    out_sp = concrete_shape(op.y)[2:]
    begin, end = list(pads[:nsp]), list(pads[nsp:])
    for i in range(nsp):
        need = (out_sp[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
        have = x.shape[2 + i] + begin[i] + end[i]
        end[i] += max(0, need - have)
    return out_sp, begin, end


def _lowest(dtype: np.dtype) -> float | int | bool:
    if dtype.kind == "b":
        return False
    return -np.inf if dtype.kind == "f" else int(np.iinfo(dtype).min)


def _highest(dtype: np.dtype) -> float | int | bool:
    if dtype.kind == "b":
        return True
    return np.inf if dtype.kind == "f" else int(np.iinfo(dtype).max)


@register(nn.MaxPoolOp)
def _max_pool(op: nn.MaxPoolOp, args: Arrays) -> np.ndarray:
    x = args[0]
    out_sp, begin, end = _pool_geometry(op, x)
    xp = pad_spatial(x, begin, end, _lowest(x.dtype))
    win = windows(xp, out_sp, op.kernel, op.strides, op.dilations)
    nsp = len(out_sp)
    return np.max(win, axis=tuple(range(-nsp, 0)))


@register(nn.AvgPoolOp)
def _avg_pool(op: nn.AvgPoolOp, args: Arrays) -> np.ndarray:
    x = args[0]
    out_sp, begin, end = _pool_geometry(op, x)
    kernel, strides, dilations = op.kernel, op.strides, op.dilations
    nsp = len(out_sp)
    pads = op.pads
    axes = tuple(range(-nsp, 0))
    xp = pad_spatial(x, begin, end, 0)
    sums = np.sum(windows(xp, out_sp, kernel, strides, dilations), axis=axes)
    # Window element counts: explicit pads count when count_include_pad, overhang never.
    inside = np.ones((1, 1, *x.shape[2:]), dtype=x.dtype)
    include = op.count_include_pad != 0
    mask = pad_spatial(inside, pads[:nsp], pads[nsp:], 1 if include else 0)
    overhang = [e - p for e, p in zip(end, pads[nsp:])]
    mask = pad_spatial(mask, [0] * nsp, overhang, 0)
    counts = np.sum(windows(mask, out_sp, kernel, strides, dilations), axis=axes)
    return sums / counts


@register(nn.GlobalAvgPoolOp)
def _global_avg_pool(op: Operation, args: Arrays) -> np.ndarray:
    x = args[0]
    return np.mean(x, axis=tuple(range(2, x.ndim)), keepdims=True)


@register(nn.GlobalMaxPoolOp)
def _global_max_pool(op: Operation, args: Arrays) -> np.ndarray:
    x = args[0]
    return np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True)


def reduce(kind: type[nn.ReduceOp], x: np.ndarray, axes: Sequence[int], keep: bool) -> np.ndarray:
    """The reduction ``kind`` (``nn.ReduceSumOp``, ...) of ``x`` over non-negative ``axes``;
    no axes is the identity. Shared by the interpreter and import-time constant folding."""
    if not axes:
        return x
    ax = tuple(axes)
    empty = any(x.shape[a] == 0 for a in ax)
    if kind is nn.ReduceSumOp:
        return np.sum(x, axis=ax, keepdims=keep)
    if kind is nn.ReduceMeanOp:
        if empty:  # 0 (onnxruntime's result, and the C backend's), not numpy's warning + NaN
            return np.sum(x, axis=ax, keepdims=keep)
        return np.mean(x, axis=ax, keepdims=keep)
    if kind is nn.ReduceProdOp:
        return np.prod(x, axis=ax, keepdims=keep)
    if kind is nn.ReduceL2Op:
        return np.sqrt(np.sum(x * x, axis=ax, keepdims=keep))
    if kind is nn.ReduceMaxOp:
        if empty:
            return np.max(x, axis=ax, keepdims=keep, initial=_lowest(x.dtype))
        return np.max(x, axis=ax, keepdims=keep)
    if empty:
        return np.min(x, axis=ax, keepdims=keep, initial=_highest(x.dtype))
    return np.min(x, axis=ax, keepdims=keep)


@register(
    nn.ReduceMeanOp,
    nn.ReduceSumOp,
    nn.ReduceMaxOp,
    nn.ReduceMinOp,
    nn.ReduceProdOp,
    nn.ReduceL2Op,
)
def _reduce_impl(op: nn.ReduceOp, args: Arrays) -> np.ndarray:
    return reduce(type(op), args[0], op.axes, op.keepdims)


@register(nn.SoftmaxOp)
def _softmax(op: nn.SoftmaxOp, args: Arrays) -> np.ndarray:
    x = args[0]
    return softmax(x, op.axis) if x.ndim else np.ones_like(x)


@register(nn.LogSoftmaxOp)
def _log_softmax(op: nn.LogSoftmaxOp, args: Arrays) -> np.ndarray:
    x = args[0]
    if not x.ndim:
        return np.zeros_like(x)
    axis = op.axis
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


@register(nn.ArgMaxOp)
def _arg_max(op: nn.ArgMaxOp, args: Arrays) -> np.ndarray:
    axis = op.axis
    # np.argmax returns the first maximum, as ONNX with select_last_index = 0.
    return np.argmax(args[0], axis=axis, keepdims=op.keepdims).astype(np.int64)
