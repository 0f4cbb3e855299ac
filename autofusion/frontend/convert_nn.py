"""Converters for convolution, pooling, normalisation, contraction, softmax and reductions.

``auto_pad`` (SAME_UPPER/SAME_LOWER/VALID) is resolved to explicit ``[begin..., end...]``
pads; reduction axes come from the attribute or (opset 13 ReduceSum, opset 18 others) a
constant input, sorted and non-negative; opset < 13 Softmax becomes reshape + softmax +
reshape over the flattened 2-D view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Attribute

from autofusion.dialects import dtypes, nn, shapes
from autofusion.dialects.base import bool_attr, f64_attr, i64_array, int_attr
from autofusion.frontend.context import Const, NodeCtx, Value, value_elem, value_shape
from autofusion.frontend.convert_shape import norm_axes, norm_axis, reshape_to
from autofusion.frontend.registry import converter
from autofusion.interpreter import reduction as interp_reduction


def _float_input(ctx: NodeCtx, i: int) -> Value:
    v = ctx.input(i)
    if not dtypes.is_float(value_elem(v)):
        raise ctx.error(f"input {i} must be a floating-point tensor, got {value_elem(v)}")
    return v


def _check_outputs(ctx: NodeCtx, keep: int) -> None:
    """Error if an output past the first ``keep`` (e.g. MaxPool Indices) has users."""
    used = [o for o, u in zip(list(ctx.node.output)[keep:], ctx.n_outputs_used[keep:]) if o and u]
    if used:
        raise ctx.error(
            f"output(s) {', '.join(used)} are not supported (only the first "
            f"{keep} output(s) may be used)"
        )


def resolve_pads(
    ctx: NodeCtx,
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> list[int]:
    """Explicit ``[begin..., end...]`` pads from ``pads`` or ``auto_pad``."""
    n = len(spatial)
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = [int(p) for p in ctx.attr("pads", [0] * 2 * n)]
        if len(pads) != 2 * n:
            raise ctx.error(f"pads {pads} must have {2 * n} entries")
        return pads
    if auto == "VALID":
        return [0] * 2 * n
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.error(f"unknown auto_pad {auto!r}")
    begin, end = [], []
    for i in range(n):
        out = -(-spatial[i] // strides[i])
        k = dilations[i] * (kernel[i] - 1) + 1
        total = max(0, (out - 1) * strides[i] + k - spatial[i])
        small, big = total // 2, total - total // 2
        if auto == "SAME_UPPER":
            begin.append(small)
            end.append(big)
        else:
            begin.append(big)
            end.append(small)
    return begin + end


@converter("Conv")
def _conv(ctx: NodeCtx) -> list[Value]:
    """C: 1-d, 2-d and 3-d (3-d: ``afrt_conv3d_f32``, fp32 only); Ascend C: 2-d, 3-d on the host."""
    x, w = _float_input(ctx, 0), ctx.input(1)
    b = ctx.opt_input(2)
    xs, ws = value_shape(x), value_shape(w)
    if len(xs) not in (3, 4, 5) or len(ws) != len(xs):
        raise ctx.error(f"only 1-d/2-d/3-d convolution is supported (input {xs}, weight {ws})")
    nsp = len(xs) - 2
    strides = [int(v) for v in ctx.attr("strides", [1] * nsp)]
    dilations = [int(v) for v in ctx.attr("dilations", [1] * nsp)]
    group = int(ctx.attr("group", 1))
    kernel = [int(v) for v in ctx.attr("kernel_shape", ws[2:])]
    if list(kernel) != list(ws[2:]):
        raise ctx.error(f"kernel_shape {kernel} differs from the weight shape {ws}")
    pads = resolve_pads(ctx, xs[2:], kernel, strides, dilations)
    try:
        out = shapes.conv_out(xs, ws, strides, pads, dilations, group)
    except ValueError as e:
        raise ctx.error(str(e)) from None
    if b is not None and value_shape(b) != (ws[0],):
        raise ctx.error(f"bias shape {value_shape(b)} should be ({ws[0]},)")
    return [
        ctx.emit1(
            nn.ConvOp,
            [x, w, b],
            out,
            value_elem(x),
            {
                "strides": i64_array(strides),
                "pads": i64_array(pads),
                "dilations": i64_array(dilations),
                "group": int_attr(group),
            },
        )
    ]


@dataclass(frozen=True)
class _PoolGeometry:
    """A pooling node's input and window, its attributes read and checked once."""

    x: Value
    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    ceil_mode: bool
    pads: list[int]
    out: tuple[int, ...]


def _pool_geometry(ctx: NodeCtx) -> _PoolGeometry:
    x = _float_input(ctx, 0)
    xs = value_shape(x)
    nsp = len(xs) - 2
    if nsp < 1:
        raise ctx.error(f"input must have rank >= 3, got {xs}")
    kernel = [int(v) for v in ctx.attr("kernel_shape", [])]
    if len(kernel) != nsp:
        raise ctx.error(f"kernel_shape {kernel} must have {nsp} entries")
    strides = [int(v) for v in ctx.attr("strides", [1] * nsp)]
    dilations = [int(v) for v in ctx.attr("dilations", [1] * nsp)]
    ceil_mode = bool(ctx.attr("ceil_mode", 0))
    pads = resolve_pads(ctx, xs[2:], kernel, strides, dilations)
    try:
        out = shapes.pool_out(xs, kernel, strides, pads, dilations, ceil_mode)
    except ValueError as e:
        raise ctx.error(str(e)) from None
    return _PoolGeometry(x, kernel, strides, dilations, ceil_mode, list(pads), tuple(out))


def _pool(ctx: NodeCtx, op_cls: type, extra: dict) -> list[Value]:
    g = _pool_geometry(ctx)
    props = {
        "kernel": i64_array(g.kernel),
        "strides": i64_array(g.strides),
        "pads": i64_array(g.pads),
        "dilations": i64_array(g.dilations),
        "ceil_mode": bool_attr(g.ceil_mode),
        **extra,
    }
    return [ctx.emit1(op_cls, [g.x], g.out, value_elem(g.x), props)]


@converter("LpPool")
def _lp_pool(ctx: NodeCtx) -> list[Value]:
    """``(sum over the window of |x|^p)^(1/p)``. The window sum of ``|x|^p`` is an average pool
    that counts pads, times the window size; where ``ceil_mode`` lets a window overhang the
    padded input (which the average pool would not count), it is a depthwise convolution with
    a kernel of ones and the overhang widened into the end pads (1-d and 2-d: the C target has
    no 3-d convolution). Pads and overhang contribute zeros, as in onnxruntime."""
    g = _pool_geometry(ctx)
    x, xs = g.x, value_shape(g.x)
    nsp = len(xs) - 2
    kernel, strides, dilations, pads, out = g.kernel, g.strides, g.dilations, g.pads, g.out
    p = int(ctx.attr("p", 2))
    if p < 1:
        raise ctx.error(f"p must be a positive integer, got {p}")
    conv_pads = list(pads)
    for i in range(nsp):
        reach = (out[2 + i] - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1
        conv_pads[nsp + i] += max(0, reach - (xs[2 + i] + pads[i] + pads[nsp + i]))
    elem = value_elem(x)
    npd = dtypes.to_numpy_dtype(elem)
    if p == 2:
        powered = ctx.emit1(nn.MulOp, [x, x], xs, elem)
    else:
        powered = ctx.emit1(nn.AbsOp, [x], xs, elem)
        if p != 1:
            powered = ctx.emit1(nn.PowOp, [powered, ctx.const(np.array(p, npd))], xs, elem)
    props: dict[str, Attribute] = {"strides": i64_array(strides), "dilations": i64_array(dilations)}
    if conv_pads == pads:
        props |= {
            "kernel": i64_array(kernel),
            "pads": i64_array(pads),
            "ceil_mode": bool_attr(g.ceil_mode),
            "count_include_pad": bool_attr(True),
        }
        mean = ctx.emit1(nn.AvgPoolOp, [powered], out, elem, props)
        window = ctx.const(np.array(float(np.prod(kernel)), npd))
        total = ctx.emit1(nn.MulOp, [mean, window], out, elem)
    elif nsp > 2:
        raise ctx.error("ceil_mode windows that overhang the padded input are 1-d/2-d only")
    else:
        ones = ctx.const(np.ones((xs[1], 1, *kernel), dtype=npd))
        props |= {"pads": i64_array(conv_pads), "group": int_attr(xs[1])}
        total = ctx.emit1(nn.ConvOp, [powered, ones, None], out, elem, props)
    if p == 1:
        return [total]
    if p == 2:
        return [ctx.emit1(nn.SqrtOp, [total], out, elem)]
    return [ctx.emit1(nn.PowOp, [total, ctx.const(np.array(1.0 / p, npd))], out, elem)]


@converter("MaxPool")
def _max_pool(ctx: NodeCtx) -> list[Value]:
    """C: any spatial rank (3-d and beyond as loops); Ascend C: 2-d, others on the host."""
    _check_outputs(ctx, 1)
    if int(ctx.attr("storage_order", 0)) != 0:
        raise ctx.error("storage_order=1 is not supported")
    return _pool(ctx, nn.MaxPoolOp, {})


@converter("AveragePool")
def _avg_pool(ctx: NodeCtx) -> list[Value]:
    """C: any spatial rank (3-d and beyond as loops); Ascend C: 2-d, others on the host."""
    cip = bool(ctx.attr("count_include_pad", 0))
    return _pool(ctx, nn.AvgPoolOp, {"count_include_pad": bool_attr(cip)})


def _global_pool(ctx: NodeCtx, op_cls: type) -> list[Value]:
    x = _float_input(ctx, 0)
    xs = value_shape(x)
    if len(xs) < 3:
        raise ctx.error(f"input must have rank >= 3, got {xs}")
    return [ctx.emit1(op_cls, [x], (*xs[:2], *([1] * (len(xs) - 2))), value_elem(x))]


@converter("GlobalAveragePool")
def _gap(ctx: NodeCtx) -> list[Value]:
    return _global_pool(ctx, nn.GlobalAvgPoolOp)


@converter("GlobalMaxPool")
def _gmp(ctx: NodeCtx) -> list[Value]:
    return _global_pool(ctx, nn.GlobalMaxPoolOp)


def _channel_params(ctx: NodeCtx, first: int, count: int, c: int) -> list[Value]:
    params = [ctx.input(i) for i in range(first, first + count)]
    for i, p in enumerate(params):
        if value_shape(p) != (c,):
            raise ctx.error(f"input {first + i} has shape {value_shape(p)}, expected ({c},)")
        if value_elem(p) != value_elem(ctx.input(0)):
            raise ctx.error(f"input {first + i} element type differs from the data's")
    return params


@converter("BatchNormalization")
def _batch_norm(ctx: NodeCtx) -> list[Value]:
    _check_outputs(ctx, 1)
    if int(ctx.attr("training_mode", 0)):
        raise ctx.error("training_mode=1 is not supported (inference only)")
    x = _float_input(ctx, 0)
    xs = value_shape(x)
    if len(xs) < 2:
        raise ctx.error(f"input must have rank >= 2, got {xs}")
    params = _channel_params(ctx, 1, 4, xs[1])
    return [
        ctx.emit1(
            nn.BatchNormOp,
            [x, *params],
            xs,
            value_elem(x),
            {"epsilon": f64_attr(ctx.attr("epsilon", 1e-5))},
        )
    ]


@converter("InstanceNormalization")
def _instance_norm(ctx: NodeCtx) -> list[Value]:
    x = _float_input(ctx, 0)
    xs = value_shape(x)
    if len(xs) < 3:
        raise ctx.error(f"input must have rank >= 3, got {xs}")
    params = _channel_params(ctx, 1, 2, xs[1])
    return [
        ctx.emit1(
            nn.InstanceNormOp,
            [x, *params],
            xs,
            value_elem(x),
            {"epsilon": f64_attr(ctx.attr("epsilon", 1e-5))},
        )
    ]


@converter("LayerNormalization")
def _layer_norm(ctx: NodeCtx) -> list[Value]:
    x = _float_input(ctx, 0)
    xs = value_shape(x)
    axis = norm_axis(ctx, int(ctx.attr("axis", -1)), len(xs))
    scale, bias = ctx.input(1), ctx.opt_input(2)
    norm = xs[axis:]
    for p in (scale, bias):
        if p is None:
            continue
        try:
            ok = shapes.broadcast(value_shape(p), norm) == norm
        except ValueError:
            ok = False
        if not ok:
            raise ctx.error(f"parameter shape {value_shape(p)} does not broadcast to {norm}")
    eps = float(ctx.attr("epsilon", 1e-5))
    y = ctx.emit1(
        nn.LayerNormOp,
        [x, scale, bias],
        xs,
        value_elem(x),
        {
            "axis": int_attr(axis),
            "epsilon": f64_attr(eps),
        },
    )
    if not any(ctx.n_outputs_used[1:]):
        return [y]
    # Mean and InvStdDev outputs (rarely used): recomputed with reductions.
    elem = value_elem(x)
    axes = {"axes": i64_array(range(axis, len(xs))), "keepdims": bool_attr(True)}
    stat = (*xs[:axis], *([1] * (len(xs) - axis)))
    mean = ctx.emit1(nn.ReduceMeanOp, [x], stat, elem, axes)
    d = ctx.emit1(nn.SubOp, [x, mean], xs, elem)
    var = ctx.emit1(nn.ReduceMeanOp, [ctx.emit1(nn.MulOp, [d, d], xs, elem)], stat, elem, axes)
    eps_c = ctx.const(np.array(eps, dtype=dtypes.to_numpy_dtype(elem)))
    std = ctx.emit1(nn.SqrtOp, [ctx.emit1(nn.AddOp, [var, eps_c], stat, elem)], stat, elem)
    return [y, mean, ctx.emit1(nn.ReciprocalOp, [std], stat, elem)]


@converter("LRN")
def _lrn(ctx: NodeCtx) -> list[Value]:
    x = _float_input(ctx, 0)
    if "size" not in ctx.attrs:
        raise ctx.error("attribute 'size' is required")
    return [
        ctx.emit1(
            nn.LRNOp,
            [x],
            value_shape(x),
            value_elem(x),
            {
                "size": int_attr(ctx.attr("size")),
                "alpha": f64_attr(ctx.attr("alpha", 1e-4)),
                "beta": f64_attr(ctx.attr("beta", 0.75)),
                "bias": f64_attr(ctx.attr("bias", 1.0)),
            },
        )
    ]


@converter("MatMul")
def _matmul(ctx: NodeCtx) -> list[Value]:
    a, b = ctx.input(0), ctx.input(1)
    if value_elem(a) != value_elem(b):
        raise ctx.error(f"operand element types differ: {value_elem(a)} vs {value_elem(b)}")
    try:
        out = shapes.matmul_out(value_shape(a), value_shape(b))
    except ValueError as e:
        raise ctx.error(str(e)) from None
    return [ctx.emit1(nn.MatMulOp, [a, b], out, value_elem(a))]


@converter("Gemm")
def _gemm(ctx: NodeCtx) -> list[Value]:
    a, b, c = ctx.input(0), ctx.input(1), ctx.opt_input(2)
    sa, sb = value_shape(a), value_shape(b)
    if len(sa) != 2 or len(sb) != 2:
        raise ctx.error(f"operands must be 2-d, got {sa} and {sb}")
    ta, tb = bool(ctx.attr("transA", 0)), bool(ctx.attr("transB", 0))
    m, k = (sa[1], sa[0]) if ta else sa
    k2, n = (sb[1], sb[0]) if tb else sb
    if k != k2:
        raise ctx.error(f"contraction sizes differ: {k} vs {k2}")
    if c is not None:
        try:
            ok = shapes.broadcast(value_shape(c), (m, n)) == (m, n)
        except ValueError:
            ok = False
        if not ok:
            raise ctx.error(f"C shape {value_shape(c)} does not broadcast to {(m, n)}")
    return [
        ctx.emit1(
            nn.GemmOp,
            [a, b, c],
            (m, n),
            value_elem(a),
            {
                "alpha": f64_attr(ctx.attr("alpha", 1.0)),
                "beta": f64_attr(ctx.attr("beta", 1.0)),
                "trans_a": bool_attr(ta),
                "trans_b": bool_attr(tb),
            },
        )
    ]


def _softmax(ctx: NodeCtx, op_cls: type) -> list[Value]:
    x = _float_input(ctx, 0)
    xs = value_shape(x)
    rank = max(len(xs), 1)
    default = -1 if ctx.opset >= 13 else 1
    axis = norm_axis(ctx, int(ctx.attr("axis", default)), rank)
    if ctx.opset >= 13 or axis == len(xs) - 1:
        return [ctx.emit1(op_cls, [x], xs, value_elem(x), {"axis": int_attr(axis)})]
    # Opset < 13: softmax over the flattened trailing block [axis, rank).
    flat = reshape_to(ctx, x, (shapes.numel(xs[:axis]), shapes.numel(xs[axis:])))
    y = ctx.emit1(op_cls, [flat], value_shape(flat), value_elem(x), {"axis": int_attr(1)})
    return [reshape_to(ctx, y, xs)]


@converter("Softmax")
def _softmax_cv(ctx: NodeCtx) -> list[Value]:
    return _softmax(ctx, nn.SoftmaxOp)


@converter("LogSoftmax")
def _log_softmax(ctx: NodeCtx) -> list[Value]:
    return _softmax(ctx, nn.LogSoftmaxOp)


REDUCE_OPS: dict[str, tuple[type, int]] = {
    # op type -> (nn op, first opset taking axes as an input)
    "ReduceMean": (nn.ReduceMeanOp, 18),
    "ReduceSum": (nn.ReduceSumOp, 13),
    "ReduceMax": (nn.ReduceMaxOp, 18),
    "ReduceMin": (nn.ReduceMinOp, 18),
    "ReduceProd": (nn.ReduceProdOp, 18),
    "ReduceL2": (nn.ReduceL2Op, 18),
}


def _reduce_params(ctx: NodeCtx, axes_opset: int) -> tuple[list[int] | None, bool]:
    """(sorted non-negative axes, keepdims); axes None means "no-op" (empty axes with
    ``noop_with_empty_axes``)."""
    xs = ctx.shape(0)
    keepdims = bool(ctx.attr("keepdims", 1))
    if ctx.opset >= axes_opset:
        arr = ctx.const_input(1, "axes")
        axes = None if arr is None else [int(a) for a in arr.reshape(-1)]
    else:
        raw = ctx.attr("axes")
        axes = None if raw is None else [int(a) for a in raw]
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0) and ctx.opset >= axes_opset:
            return None, keepdims
        axes = list(range(len(xs)))
    return norm_axes(ctx, axes, len(xs)), keepdims


def _reduce(ctx: NodeCtx) -> list[Value]:
    op_cls, axes_opset = REDUCE_OPS[ctx.node.op_type]
    x = ctx.input(0)
    xs = value_shape(x)
    axes, keepdims = _reduce_params(ctx, axes_opset)
    if axes is None:
        return [x]
    out = shapes.reduce_out(xs, axes, keepdims)
    if isinstance(x, Const):
        # Folded with the interpreter's reduction: one meaning per op.
        with np.errstate(all="ignore"):
            y = interp_reduction.reduce(op_cls, x.array, axes, keepdims)
        return [ctx.const(np.asarray(y).astype(x.array.dtype))]
    if ctx.node.op_type in ("ReduceMean", "ReduceL2") and not dtypes.is_float(value_elem(x)):
        raise ctx.error(f"expects a floating-point tensor, got {value_elem(x)}")
    return [
        ctx.emit1(
            op_cls,
            [x],
            out,
            value_elem(x),
            {
                "axes": i64_array(axes),
                "keepdims": bool_attr(keepdims),
            },
        )
    ]


for _name in REDUCE_OPS:
    converter(_name, folds=True)(_reduce)


@converter("ReduceL1")
@converter("ReduceSumSquare")
@converter("ReduceLogSum")
@converter("ReduceLogSumExp")
def _reduce_composite(ctx: NodeCtx) -> list[Value]:
    """Reductions built from others: L1 = sum|x|, SumSquare = sum x*x, LogSum = log sum x,
    LogSumExp = log(sum exp(x - max)) + max (the max shift keeps exp from overflowing)."""
    op_type = ctx.node.op_type
    x = ctx.input(0)
    xs, elem = value_shape(x), value_elem(x)
    axes, keepdims = _reduce_params(ctx, 18)
    if axes is None:
        raise ctx.error("noop_with_empty_axes with empty axes is not supported for this op")
    if op_type in ("ReduceLogSum", "ReduceLogSumExp") and not dtypes.is_float(elem):
        raise ctx.error(f"expects a floating-point tensor, got {elem}")
    out = shapes.reduce_out(xs, axes, keepdims)
    kept = shapes.reduce_out(xs, axes, True)

    def reduce(op_cls: type, v: Value, keep: bool) -> Value:
        shape = kept if keep else out
        return ctx.emit1(
            op_cls,
            [v],
            shape,
            elem,
            {
                "axes": i64_array(axes),
                "keepdims": bool_attr(keep),
            },
        )

    if op_type == "ReduceL1":
        return [reduce(nn.ReduceSumOp, ctx.emit1(nn.AbsOp, [x], xs, elem), keepdims)]
    if op_type == "ReduceSumSquare":
        return [reduce(nn.ReduceSumOp, ctx.emit1(nn.MulOp, [x, x], xs, elem), keepdims)]
    if op_type == "ReduceLogSum":
        s = reduce(nn.ReduceSumOp, x, keepdims)
        return [ctx.emit1(nn.LogOp, [s], out, elem)]
    m = reduce(nn.ReduceMaxOp, x, True)
    e = ctx.emit1(nn.ExpOp, [ctx.emit1(nn.SubOp, [x, m], xs, elem)], xs, elem)
    log_s = ctx.emit1(nn.LogOp, [reduce(nn.ReduceSumOp, e, keepdims)], out, elem)
    return [ctx.emit1(nn.AddOp, [log_s, reshape_to(ctx, m, out)], out, elem)]


@converter("ArgMax")
@converter("ArgMin")
def _arg_max(ctx: NodeCtx) -> list[Value]:
    """ArgMin is ArgMax of ``-x``; ``select_last_index`` takes ArgMax of the reversed axis."""
    x = ctx.input(0)
    xs = value_shape(x)
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), len(xs))
    keepdims = bool(ctx.attr("keepdims", 1))
    out = shapes.reduce_out(xs, [axis], keepdims)
    i64 = dtypes.from_numpy_dtype(np.int64)
    if ctx.node.op_type == "ArgMin":
        if dtypes.to_numpy_dtype(value_elem(x)).kind == "u":
            raise ctx.error("ArgMin of unsigned tensors is not supported")
        x = ctx.emit1(nn.NegOp, [x], xs, value_elem(x))
    last = bool(int(ctx.attr("select_last_index", 0)))
    if last:
        starts = [0] * len(xs)
        ends = list(xs)
        steps = [1] * len(xs)
        starts[axis], ends[axis], steps[axis] = xs[axis] - 1, -1, -1
        x = ctx.emit1(
            nn.SliceOp,
            [x],
            xs,
            value_elem(x),
            {
                "starts": i64_array(starts),
                "ends": i64_array(ends),
                "steps": i64_array(steps),
            },
        )
    idx = ctx.emit1(
        nn.ArgMaxOp,
        [x],
        out,
        i64,
        {
            "axis": int_attr(axis),
            "keepdims": bool_attr(keepdims),
        },
    )
    if last:
        top = ctx.const(np.array(xs[axis] - 1, dtype=np.int64))
        idx = ctx.emit1(nn.SubOp, [top, idx], out, i64)
    return [idx]


# The largest CumSum axis the triangular-matrix form takes (its constant is n*n elements).
CUMSUM_MAX_AXIS = 2048


@converter("CumSum")
def _cumsum(ctx: NodeCtx) -> list[Value]:
    """Prefix sums as a MatMul with a constant triangular 0/1 matrix (axis moved last).

    ``exclusive`` and ``reverse`` pick the triangle; the axis must be an import-time constant
    and at most :data:`CUMSUM_MAX_AXIS` long."""
    x = ctx.input(0)
    xs = value_shape(x)
    if not xs:
        raise ctx.error("input x must have rank >= 1")
    axis_arr = ctx.const_input(1, "axis")
    if axis_arr is None:
        raise ctx.error("input 1 (axis) is required")
    if axis_arr.size != 1:
        raise ctx.error(f"axis must hold one value, got shape {list(axis_arr.shape)}")
    axis = norm_axis(ctx, int(axis_arr.reshape(-1)[0]), len(xs))
    n = xs[axis]
    if n > CUMSUM_MAX_AXIS:
        raise ctx.error(f"CumSum over an axis of {n} elements (at most {CUMSUM_MAX_AXIS})")
    exclusive, reverse = bool(ctx.attr("exclusive", 0)), bool(ctx.attr("reverse", 0))
    i, j = np.indices((n, n))  # y[..., j] = sum_i x[..., i] * t[i, j]
    keep = (i > j if exclusive else i >= j) if reverse else (i < j if exclusive else i <= j)
    elem = value_elem(x)
    t = ctx.const(keep.astype(dtypes.to_numpy_dtype(elem)))
    last = len(xs) - 1
    perm = list(range(len(xs)))
    perm[axis], perm[last] = last, axis
    moved = x
    if axis != last:
        shape = [xs[p] for p in perm]
        moved = ctx.emit1(nn.TransposeOp, [x], shape, elem, {"perm": i64_array(perm)})
    y = ctx.emit1(nn.MatMulOp, [moved, t], value_shape(moved), elem)
    if axis != last:
        y = ctx.emit1(nn.TransposeOp, [y], xs, elem, {"perm": i64_array(perm)})
    return [y]
