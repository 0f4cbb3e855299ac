"""RMSNormalization (opset 23) as a decomposition into ``nn`` elementwise ops and a mean.

``Y = X / sqrt(mean(X * X over axes axis..rank-1) + epsilon) * scale``; the mean is an
``nn.reduce_mean`` with ``keepdims``, so the usual elementwise fusion groups the rest.
``stash_type`` 1 (the default) computes in float32: a float16 input is cast up and the result
cast back; stash_type 0 keeps the input's type. Other stash types are refused.
"""

from __future__ import annotations

import numpy as np

from autofusion.dialects import dtypes, nn, shapes
from autofusion.dialects.base import bool_attr, i64_array
from autofusion.frontend.context import NodeCtx, Value, value_elem, value_shape
from autofusion.frontend.convert_elementwise import cast_value
from autofusion.frontend.convert_shape import norm_axis
from autofusion.frontend.registry import converter


@converter("RMSNormalization", version=23)
def _rms_norm(ctx: NodeCtx) -> list[Value]:
    x, scale = ctx.input(0), ctx.input(1)
    elem = value_elem(x)
    if not dtypes.is_float(elem):
        raise ctx.error(f"input 0 must be a floating-point tensor, got {elem}")
    xs = value_shape(x)
    axis = norm_axis(ctx, int(ctx.attr("axis", -1)), len(xs))
    norm = xs[axis:]
    try:
        ok = shapes.broadcast(value_shape(scale), norm) == norm
    except ValueError:
        ok = False
    if not ok:
        raise ctx.error(f"scale shape {value_shape(scale)} does not broadcast to {norm}")
    stash = int(ctx.attr("stash_type", 1))
    if stash not in (0, 1):
        raise ctx.error(f"stash_type {stash} is not supported (0 or 1: float32)")
    work = dtypes.f32 if stash == 1 else elem
    xw = cast_value(ctx, x, work) if work != elem else x
    sw = cast_value(ctx, scale, work) if value_elem(scale) != work else scale
    axes = {"axes": i64_array(range(axis, len(xs))), "keepdims": bool_attr(True)}
    stat = (*xs[:axis], *([1] * (len(xs) - axis)))
    sq = ctx.emit1(nn.MulOp, [xw, xw], xs, work)
    ms = ctx.emit1(nn.ReduceMeanOp, [sq], stat, work, axes)
    eps = ctx.const(np.array(float(ctx.attr("epsilon", 1e-5)), dtype=dtypes.to_numpy_dtype(work)))
    rms = ctx.emit1(nn.SqrtOp, [ctx.emit1(nn.AddOp, [ms, eps], stat, work)], stat, work)
    y = ctx.emit1(nn.MulOp, [ctx.emit1(nn.DivOp, [xw, rms], xs, work), sw], xs, work)
    return [cast_value(ctx, y, elem) if work != elem else y]
