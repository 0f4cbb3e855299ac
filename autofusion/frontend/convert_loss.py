"""NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, Trilu, Hardmax and CumProd as
decompositions into ``nn`` ops, so the interpreter and every backend get them without a
dedicated op.

NLL: ``loss[n, d] = -input[n, t[n, d], d] * w[t[n, d]]`` with ``w`` the class weights (1 when
absent). The picked log-probability is an ``nn.gather_elements`` on the class axis with the
target unsqueezed there. The target is run-time data: positions equal to ``ignore_index`` are
replaced by class 0 (``nn.where``) before any gather, so they never index out of range, and
their weight is zeroed. Any other out-of-range target reaches the gathers, whose generated C
checks the index and reports ``AF_ERR_INDEX``. Reductions: ``none``, ``sum``, and ``mean`` =
``sum(w * loss) / sum(w)`` over the non-ignored positions.

SCE is ``log_softmax`` over the class axis followed by the NLL above; its optional second
output is that log-probability.

Trilu keeps the upper (``upper=1``) or lower triangle of the last two axes relative to the
diagonal ``k`` (an import-time constant): a constant boolean mask and ``nn.where`` with zero.

Hardmax (opset 13) compares an ``nn.argmax`` with a constant iota; CumProd reduces a
triangularly masked [..., n, n] block with ``nn.reduce_prod`` (see their converters).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i1, i32, i64

from autofusion.dialects import dtypes, nn
from autofusion.dialects.base import bool_attr, i64_array, int_attr
from autofusion.frontend.context import NodeCtx, Value, value_elem, value_shape
from autofusion.frontend.convert_shape import norm_axis
from autofusion.frontend.registry import converter

_REDUCTIONS = ("none", "sum", "mean")


def _reduction(ctx: NodeCtx) -> str:
    red = ctx.attr("reduction", "mean")
    red = red.decode() if isinstance(red, bytes) else str(red)
    if red not in _REDUCTIONS:
        raise ctx.error(f"reduction '{red}' is not one of none, sum, mean")
    return red


def _nll(ctx: NodeCtx, logp: Value, target: Value, weight: Value | None, red: str) -> Value:
    """The NLL of log-probabilities ``logp`` [N, C, d...] at integer ``target`` [N, d...]."""
    ls, ts = value_shape(logp), value_shape(target)
    elem = value_elem(logp)
    if not dtypes.is_float(elem):
        raise ctx.error(f"input 0 must be a floating-point tensor, got {elem}")
    telem = value_elem(target)
    if telem not in (i32, i64):
        raise ctx.error(f"target must be int32 or int64, got {telem}")
    if len(ls) < 2:
        raise ctx.error(f"input 0 must have shape [N, C, d1, ...], got {list(ls)}")
    want = (ls[0], *ls[2:])
    if tuple(ts) != want:
        raise ctx.error(f"target shape {list(ts)} does not match input shape {list(ls)}")
    n_class = ls[1]
    if weight is not None:
        if tuple(value_shape(weight)) != (n_class,):
            raise ctx.error(f"weight shape {list(value_shape(weight))} is not [{n_class}]")
        if value_elem(weight) != elem:
            raise ctx.error(f"weight element type {value_elem(weight)} differs from {elem}")
    np_t = dtypes.to_numpy_dtype(telem)
    np_e = dtypes.to_numpy_dtype(elem)
    ignore = ctx.attr("ignore_index", None)
    keep: Value | None = None  # i1 [N, d...]: the position is not ignored
    idx = target
    if ignore is not None:
        ii = ctx.const(np.array(int(ignore), dtype=np_t))
        hit = ctx.emit1(nn.EqualOp, [target, ii], ts, i1)
        keep = ctx.emit1(nn.NotOp, [hit], ts, i1)
        idx = ctx.emit1(nn.WhereOp, [hit, ctx.const(np.array(0, dtype=np_t)), target], ts, telem)
    picked_shape = (ls[0], 1, *ls[2:])
    idx_u = ctx.emit1(nn.ReshapeOp, [idx], picked_shape, telem)
    picked = ctx.emit1(
        nn.GatherElementsOp, [logp, idx_u], picked_shape, elem, {"axis": int_attr(1)}
    )
    loss = ctx.emit1(nn.NegOp, [ctx.emit1(nn.ReshapeOp, [picked], ts, elem)], ts, elem)
    zero = ctx.const(np.array(0, dtype=np_e))
    w: Value | None = None
    if weight is not None:
        w = ctx.emit1(nn.GatherOp, [weight, idx], ts, elem, {"axis": int_attr(0)})
        if keep is not None:
            w = ctx.emit1(nn.WhereOp, [keep, w, zero], ts, elem)
    elif keep is not None:
        w = ctx.emit1(nn.WhereOp, [keep, ctx.const(np.array(1, dtype=np_e)), zero], ts, elem)
    if w is not None:
        loss = ctx.emit1(nn.MulOp, [loss, w], ts, elem)
    if red == "none":
        return loss
    axes = {"axes": i64_array(range(len(ts))), "keepdims": bool_attr(False)}
    total = ctx.emit1(nn.ReduceSumOp, [loss], (), elem, axes)
    if red == "sum":
        return total
    if w is None:
        count = ctx.const(np.array(int(np.prod(ts, dtype=np.int64)), dtype=np_e))
        return ctx.emit1(nn.DivOp, [total, count], (), elem)
    wsum = ctx.emit1(nn.ReduceSumOp, [w], (), elem, axes)
    return ctx.emit1(nn.DivOp, [total, wsum], (), elem)


@converter("NegativeLogLikelihoodLoss")
def _nll_loss(ctx: NodeCtx) -> list[Value]:
    red = _reduction(ctx)
    return [_nll(ctx, ctx.input(0), ctx.input(1), ctx.opt_input(2), red)]


@converter("SoftmaxCrossEntropyLoss")
def _sce_loss(ctx: NodeCtx) -> list[Value]:
    red = _reduction(ctx)
    scores = ctx.input(0)
    ss = value_shape(scores)
    elem = value_elem(scores)
    if not dtypes.is_float(elem):
        raise ctx.error(f"scores must be a floating-point tensor, got {elem}")
    if len(ss) < 2:
        raise ctx.error(f"scores must have shape [N, C, d1, ...], got {list(ss)}")
    logp = ctx.emit1(nn.LogSoftmaxOp, [scores], ss, elem, {"axis": int_attr(1)})
    return [_nll(ctx, logp, ctx.input(1), ctx.opt_input(2), red), logp]


@converter("Trilu")
def _trilu(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    xs = value_shape(x)
    if len(xs) < 2:
        raise ctx.error(f"input must have rank >= 2, got shape {list(xs)}")
    k_arr = ctx.const_input(1, "k")
    k = 0
    if k_arr is not None:
        if k_arr.size != 1:
            raise ctx.error(f"k must hold one value, got shape {list(k_arr.shape)}")
        k = int(k_arr.reshape(-1)[0])
    upper = bool(ctx.attr("upper", 1))
    rows, cols = xs[-2], xs[-1]
    i, j = np.indices((rows, cols))
    mask = (j - i >= k) if upper else (j - i <= k)
    elem = value_elem(x)
    zero = ctx.const(np.array(0, dtype=dtypes.to_numpy_dtype(elem)))
    return [ctx.emit1(nn.WhereOp, [ctx.const(mask), x, zero], xs, elem)]


@converter("Hardmax")
def _hardmax(ctx: NodeCtx) -> list[Value]:
    """1 at the first maximum along ``axis`` (an ``nn.argmax``), 0 elsewhere (opset 13 form)."""
    if ctx.opset < 13:
        raise ctx.error(
            f"Hardmax before opset 13 (here {ctx.opset}) flattens to 2-D; not implemented"
        )
    x = ctx.input(0)
    xs = value_shape(x)
    elem = value_elem(x)
    if not dtypes.is_float(elem):
        raise ctx.error(f"input must be a floating-point tensor, got {elem}")
    if not xs:
        raise ctx.error("input must have rank >= 1")
    axis = norm_axis(ctx, int(ctx.attr("axis", -1)), len(xs))
    kept = (*xs[:axis], 1, *xs[axis + 1 :])
    arg = ctx.emit1(
        nn.ArgMaxOp, [x], kept, i64, {"axis": int_attr(axis), "keepdims": bool_attr(True)}
    )
    iota = np.arange(xs[axis], dtype=np.int64).reshape(
        [xs[axis] if d == axis else 1 for d in range(len(xs))]
    )
    hit = ctx.emit1(nn.EqualOp, [arg, ctx.const(iota)], xs, i1)
    np_e = dtypes.to_numpy_dtype(elem)
    one, zero = ctx.const(np.array(1, dtype=np_e)), ctx.const(np.array(0, dtype=np_e))
    return [ctx.emit1(nn.WhereOp, [hit, one, zero], xs, elem)]


# The largest CumProd axis: the form below materialises an n*n block per prefix row.
CUMPROD_MAX_AXIS = 256


@converter("CumProd", version=26)
def _cumprod(ctx: NodeCtx) -> list[Value]:
    """Prefix products: the axis moved last, ``where(mask[j, i], x[..., i], 1)`` broadcast to
    [..., n, n] with a constant triangular mask, then ``nn.reduce_prod`` over ``i``.

    ``exclusive`` and ``reverse`` pick the triangle; the axis must be an import-time constant
    and at most :data:`CUMPROD_MAX_AXIS` long."""
    x = ctx.input(0)
    xs = value_shape(x)
    if not xs:
        raise ctx.error("input x must have rank >= 1")
    elem = value_elem(x)
    if not (dtypes.is_float(elem) or elem in (i32, i64)):
        raise ctx.error(f"element type {elem} is not supported (float, int32, int64)")
    axis_arr = ctx.const_input(1, "axis")
    if axis_arr is None:
        raise ctx.error("input 1 (axis) is required")
    if axis_arr.size != 1:
        raise ctx.error(f"axis must hold one value, got shape {list(axis_arr.shape)}")
    axis = norm_axis(ctx, int(axis_arr.reshape(-1)[0]), len(xs))
    n = xs[axis]
    if n > CUMPROD_MAX_AXIS:
        raise ctx.error(f"CumProd over an axis of {n} elements (at most {CUMPROD_MAX_AXIS})")
    exclusive, reverse = bool(ctx.attr("exclusive", 0)), bool(ctx.attr("reverse", 0))
    j, i = np.indices((n, n))  # y[..., j] = prod over i with keep[j, i] of x[..., i]
    keep = (i > j if exclusive else i >= j) if reverse else (i < j if exclusive else i <= j)
    last = len(xs) - 1
    perm = list(range(len(xs)))
    perm[axis], perm[last] = last, axis
    moved = x
    if axis != last:
        shape = [xs[p] for p in perm]
        moved = ctx.emit1(nn.TransposeOp, [x], shape, elem, {"perm": i64_array(perm)})
    ms = value_shape(moved)
    row = ctx.emit1(nn.ReshapeOp, [moved], (*ms[:-1], 1, n), elem)
    one = ctx.const(np.array(1, dtype=dtypes.to_numpy_dtype(elem)))
    block = ctx.emit1(nn.WhereOp, [ctx.const(keep), row, one], (*ms[:-1], n, n), elem)
    axes = {"axes": i64_array([len(ms)]), "keepdims": bool_attr(False)}
    y = ctx.emit1(nn.ReduceProdOp, [block], ms, elem, axes)
    if axis != last:
        y = ctx.emit1(nn.TransposeOp, [y], xs, elem, {"perm": i64_array(perm)})
    return [y]
