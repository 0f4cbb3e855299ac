"""Data movement: reshape, transpose, concat, split, slice, pad, gathers, expand, tile.

Results may be views of their inputs (reshape, transpose, expand); the engine never
writes into values, so sharing is safe. Gather indices may be negative (counted from the
end of the axis); an index outside the axis is an error naming the op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
from xdsl.ir import Operation

from autofusion.dialects import nn
from autofusion.errors import AutofusionError
from autofusion.interpreter.core import concrete, concrete_shape, describe, register

Arrays = Sequence[np.ndarray]


@register(nn.ReshapeOp)
def _reshape(op: nn.ReshapeOp, args: Arrays) -> np.ndarray:
    return args[0].reshape(concrete_shape(op.y))


@register(nn.TransposeOp)
def _transpose(op: nn.TransposeOp, args: Arrays) -> np.ndarray:
    return np.transpose(args[0], op.perm)


@register(nn.ConcatOp)
def _concat(op: nn.ConcatOp, args: Arrays) -> np.ndarray:
    return np.concatenate(list(args), axis=op.axis)


@register(nn.SplitOp)
def _split(op: nn.SplitOp, args: Arrays) -> list[np.ndarray]:
    axis = op.axis
    sizes = [concrete_shape(r)[axis] for r in op.outputs]
    bounds = np.cumsum(sizes)[:-1]
    return np.split(args[0], bounds, axis=axis)


def slice_index(dim: int, start: int, end: int, step: int) -> slice:
    """Python slice for one normalised (start, end, step); ``end = -1`` with a negative
    step means through index 0. The element count follows ``shapes.slice_out``."""
    if step > 0:
        count = max(0, -(-(end - start) // step))
    else:
        count = max(0, -(-(start - end) // -step))
    if count == 0:
        return slice(0, 0)
    last = start + (count - 1) * step
    if not (0 <= start < dim and 0 <= last < dim):
        raise ValueError(f"slice {start}:{end}:{step} reads outside dimension {dim}")
    stop = last + (1 if step > 0 else -1)
    return slice(start, stop if stop >= 0 else None, step)


@register(nn.SliceOp)
def _slice(op: nn.SliceOp, args: Arrays) -> np.ndarray:
    x = args[0]
    index = tuple(
        slice_index(d, s, concrete(e), st)
        for d, s, e, st in zip(x.shape, op.starts, op.ends, op.steps)
    )
    return x[index]


@register(nn.PadOp)
def _pad(op: nn.PadOp, args: Arrays) -> np.ndarray:
    x = args[0]
    pads = op.pads
    r = x.ndim
    widths = [(pads[i], pads[r + i]) for i in range(r)]
    mode = op.mode
    if mode == "constant":
        value = op.value
        fill = x.dtype.type(int(value) if x.dtype.kind in "iub" else value)
        return np.pad(x, widths, mode="constant", constant_values=fill)
    if mode == "reflect" and any(
        p > 0 and d < 2 for d, (b, e) in zip(x.shape, widths) for p in (b, e)
    ):
        raise AutofusionError(f"interpreter: {describe(op)}: reflect pad of a dimension < 2")
    # verify_ admits only the nn.PadMode spellings.
    return np.pad(x, widths, mode=cast(nn.PadMode, mode))


def _normalise_indices(op: Operation, idx: np.ndarray, dim: int) -> np.ndarray:
    idx = idx.astype(np.int64, copy=False)
    if idx.size and (idx.min() < -dim or idx.max() >= dim):
        raise AutofusionError(
            f"interpreter: {describe(op)}: index out of range [{-dim}, {dim - 1}]"
        )
    return np.where(idx < 0, idx + dim, idx)


@register(nn.GatherOp)
def _gather(op: nn.GatherOp, args: Arrays) -> np.ndarray:
    data, idx = args
    axis = op.axis
    return np.take(data, _normalise_indices(op, idx, data.shape[axis]), axis=axis)


@register(nn.GatherElementsOp)
def _gather_elements(op: nn.GatherElementsOp, args: Arrays) -> np.ndarray:
    data, idx = args
    axis = op.axis
    return np.take_along_axis(data, _normalise_indices(op, idx, data.shape[axis]), axis=axis)


@register(nn.GatherNDOp)
def _gather_nd(op: nn.GatherNDOp, args: Arrays) -> np.ndarray:
    data, idx = args
    b = op.batch_dims
    depth = idx.shape[-1]
    batch = int(np.prod(data.shape[:b], dtype=np.int64))
    data_b = data.reshape(batch, *data.shape[b:])
    idx_b = idx.astype(np.int64, copy=False).reshape(batch, -1, depth)
    coords = []
    for j in range(depth):
        coords.append(_normalise_indices(op, idx_b[:, :, j], data.shape[b + j]))
    rows = np.arange(batch, dtype=np.int64)[:, None]
    picked = data_b[(rows, *coords)]
    return picked.reshape(*idx.shape[:-1], *data.shape[b + depth :])


@register(nn.ExpandOp)
def _expand(op: nn.ExpandOp, args: Arrays) -> np.ndarray:
    return np.broadcast_to(args[0], concrete_shape(op.y))


@register(nn.TileOp)
def _tile(op: nn.TileOp, args: Arrays) -> np.ndarray:
    return np.tile(args[0], op.repeats)
