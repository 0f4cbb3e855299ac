"""GridSample (opsets 16 to 22) as a decomposition onto elementwise ``nn`` ops and guarded
``nn.gather_elements``.

For every spatial dim ``d`` of ``X [N, C, *S]`` the grid's component (the grid lists them in
reverse: ``x`` first) is unnormalised (``align_corners``: ``(g + 1) / 2 * (L - 1)``, otherwise
``((g + 1) * L - 1) / 2``) and rounded half to even for ``nearest``. For nearest and linear,
a coordinate outside the borders (``[0, L-1]`` or ``[-0.5, L-0.5]``) is clamped (``border``)
or reflected (``reflection``); cubic pads only its taps, as onnxruntime does (onnx's
reference pads the coordinate too, which differs near the borders).

Each interpolation tap (1 for nearest, 2 for linear, 4 for cubic with ``a = -0.75``, per dim)
gives an integer index, mapped by the padding mode (``zeros``: a validity mask; ``border``:
clamped; ``reflection``: reflected, then truncated), and a weight. Every combination of taps
is one ``gather_elements`` of ``X`` flattened to ``[N, C, prod(S)]`` at the linear index,
masked to 0 where a ``zeros`` tap is outside, and weighted. The indices are clamped into
range before the gather, so hostile grids (huge, inf or NaN coordinates) never read out of
bounds."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import i64
from xdsl.ir import Attribute

from autofusion.dialects import dtypes, nn, shapes
from autofusion.dialects.base import f64_attr, int_attr
from autofusion.frontend.context import NodeCtx, Value, value_elem, value_shape
from autofusion.frontend.convert_elementwise import emit_binary
from autofusion.frontend.convert_shape import reshape_to
from autofusion.frontend.registry import converter

_MODES = {"bilinear": "linear", "linear": "linear", "nearest": "nearest", "bicubic": "cubic",
          "cubic": "cubic"}  # fmt: skip
_CUBIC_A = -0.75


class _Ops:
    """Terse elementwise emitters over one node (float ``elem`` unless said otherwise)."""

    def __init__(self, ctx: NodeCtx, elem: Attribute) -> None:
        self.ctx = ctx
        self.elem = elem
        self.npd = dtypes.to_numpy_dtype(elem)

    def c(self, v: float) -> Value:
        return self.ctx.const(np.array(v, self.npd))

    def bin(self, op: type, a: Value, b: Value | float) -> Value:
        return emit_binary(self.ctx, op, a, self.c(b) if isinstance(b, float | int) else b)

    def un(self, op: type, a: Value) -> Value:
        return self.ctx.emit1(op, [a], value_shape(a), value_elem(a))

    def where(self, cond: Value, a: Value, b: Value) -> Value:
        shape = shapes.broadcast(
            shapes.broadcast(value_shape(cond), value_shape(a)), value_shape(b)
        )
        return self.ctx.emit1(nn.WhereOp, [cond, a, b], shape, value_elem(a))

    def clip(self, a: Value, lo: float, hi: float) -> Value:
        props: dict[str, Attribute] = {"min": f64_attr(lo), "max": f64_attr(hi)}
        return self.ctx.emit1(nn.ClipOp, [a], value_shape(a), value_elem(a), props)

    def reflect(self, x: Value, lo: float, hi: float) -> Value:
        """Fold ``x`` back into ``[lo, hi]`` by reflecting at the nearer border, repeatedly."""
        rng = hi - lo
        out = x
        for side in ("below", "above"):
            dx = self.bin(nn.SubOp, self.c(lo), x) if side == "below" else self.bin(nn.SubOp, x, hi)
            n = self.un(nn.FloorOp, self.bin(nn.DivOp, dx, rng))
            r = self.bin(nn.SubOp, dx, self.bin(nn.MulOp, n, rng))
            half = self.un(nn.FloorOp, self.bin(nn.MulOp, n, 0.5))
            even = self.bin(nn.EqualOp, self.bin(nn.MulOp, half, 2.0), n)
            near, far = (self.bin(nn.AddOp, r, lo), self.bin(nn.SubOp, self.c(hi), r))
            folded = self.where(even, near, far) if side == "below" else self.where(even, far, near)
            outside = (
                self.bin(nn.LessOp, x, lo) if side == "below" else self.bin(nn.GreaterOp, x, hi)
            )
            out = self.where(outside, folded, out)
        return out


def _cubic_weights(o: _Ops, t: Value) -> list[Value]:
    a = _CUBIC_A

    def outer(u: Value) -> Value:  # |u| in [1, 2]
        p = o.bin(nn.SubOp, o.bin(nn.MulOp, u, a), 5 * a)
        p = o.bin(nn.AddOp, o.bin(nn.MulOp, p, u), 8 * a)
        return o.bin(nn.SubOp, o.bin(nn.MulOp, p, u), 4 * a)

    def inner(u: Value) -> Value:  # |u| in [0, 1]
        p = o.bin(nn.SubOp, o.bin(nn.MulOp, u, a + 2), a + 3)
        return o.bin(nn.AddOp, o.bin(nn.MulOp, o.bin(nn.MulOp, p, u), u), 1.0)

    one_minus = o.bin(nn.SubOp, o.c(1.0), t)
    return [
        outer(o.bin(nn.AddOp, t, 1.0)),
        inner(t),
        inner(one_minus),
        outer(o.bin(nn.SubOp, o.c(2.0), t)),
    ]


def _taps(
    o: _Ops, x: Value, mode: str, padding: str, length: int, lo: float, hi: float
) -> list[tuple[Value, Value | None, Value | None]]:
    """Per tap of one dim: (int64 index in range, validity mask or None, weight or None)."""
    base = o.un(nn.FloorOp, x)
    if mode == "nearest":
        offsets, weights = [0], [None]
    else:
        t = o.bin(nn.SubOp, x, base)
        if mode == "linear":
            offsets, weights = [0, 1], [o.bin(nn.SubOp, o.c(1.0), t), t]
        else:
            offsets, weights = [-1, 0, 1, 2], _cubic_weights(o, t)
    out: list[tuple[Value, Value | None, Value | None]] = []
    for k, w in zip(offsets, weights, strict=True):
        i = o.bin(nn.AddOp, base, float(k)) if k else base
        valid = None
        if padding == "zeros":
            valid = emit_binary(
                o.ctx,
                nn.AndOp,
                o.bin(nn.GreaterEqualOp, i, 0.0),
                o.bin(nn.LessEqualOp, i, length - 1.0),
            )
        elif padding == "reflection":
            i = o.reflect(i, lo, hi)
        # clamped in float first, so inf/NaN/huge values never reach the integer cast
        i = o.clip(o.where(o.bin(nn.EqualOp, i, i), i, o.c(0.0)), 0.0, length - 1.0)
        idx = o.ctx.emit1(nn.CastOp, [i], value_shape(i), i64)
        out.append((idx, valid, w))
    return out


@converter("GridSample")
def _grid_sample(ctx: NodeCtx) -> list[Value]:
    x, grid = ctx.input(0), ctx.input(1)
    xs, gs = value_shape(x), value_shape(grid)
    elem = value_elem(x)
    if not dtypes.is_float(elem):
        raise ctx.error(f"input X must be a floating-point tensor, got {elem}")
    r = len(xs) - 2
    if r < 1 or len(gs) != len(xs) or gs[0] != xs[0] or gs[-1] != r:
        raise ctx.error(f"grid shape {list(gs)} does not fit X {list(xs)} (want [N, *out, {r}])")
    mode_attr = ctx.attr("mode", "bilinear")
    mode_name = mode_attr.decode() if isinstance(mode_attr, bytes) else str(mode_attr)
    if mode_name not in _MODES:
        raise ctx.error(f"mode '{mode_name}' is not one of {sorted(_MODES)}")
    mode = _MODES[mode_name]
    pad_attr = ctx.attr("padding_mode", "zeros")
    padding = pad_attr.decode() if isinstance(pad_attr, bytes) else str(pad_attr)
    if padding not in ("zeros", "border", "reflection"):
        raise ctx.error(f"padding_mode '{padding}' is not zeros, border or reflection")
    align = bool(ctx.attr("align_corners", 0))
    g = grid if value_elem(grid) == elem else ctx.emit1(nn.CastOp, [grid], gs, elem)
    o = _Ops(ctx, elem)
    n, c, spatial = xs[0], xs[1], xs[2:]
    out_sp = gs[1:-1]
    q = shapes.numel(out_sp)
    per_dim: list[list[tuple[Value, Value | None, Value | None]]] = []
    for d, length in enumerate(spatial):
        comp = ctx.emit1(
            nn.GatherOp, [g, ctx.const(np.array(r - 1 - d, np.int64))], gs[:-1], elem,
            {"axis": int_attr(len(gs) - 1)},
        )  # fmt: skip
        comp = reshape_to(ctx, comp, [n, 1, q])
        if align:
            xd = o.bin(nn.MulOp, o.bin(nn.AddOp, comp, 1.0), (length - 1) / 2.0)
            lo, hi = 0.0, length - 1.0
        else:
            xd = o.bin(
                nn.MulOp,
                o.bin(nn.SubOp, o.bin(nn.MulOp, o.bin(nn.AddOp, comp, 1.0), float(length)), 1.0),
                0.5,
            )
            lo, hi = -0.5, length - 0.5
        if mode == "nearest":
            xd = o.un(nn.RoundOp, xd)
        # cubic taps are padded one by one (as onnxruntime and PyTorch do); the other modes
        # first pad the coordinate itself
        if mode != "cubic" and padding == "border":
            outside = emit_binary(
                ctx, nn.OrOp, o.bin(nn.LessOp, xd, lo), o.bin(nn.GreaterOp, xd, hi)
            )
            xd = o.where(outside, o.clip(xd, 0.0, length - 1.0), xd)
        elif mode != "cubic" and padding == "reflection":
            xd = o.reflect(xd, lo, hi)
        per_dim.append(_taps(o, xd, mode, padding, length, lo, hi))
    strides = [shapes.numel(spatial[d + 1 :]) for d in range(r)]
    flat = reshape_to(ctx, x, [n, c, shapes.numel(spatial)])
    acc: Value | None = None
    for combo in itertools.product(*per_dim):
        lin = _linear_index(ctx, [t[0] for t in combo], strides)
        lin = ctx.emit1(nn.ExpandOp, [lin], [n, c, q], i64)
        v = ctx.emit1(nn.GatherElementsOp, [flat, lin], [n, c, q], elem, {"axis": int_attr(2)})
        masks = [t[1] for t in combo if t[1] is not None]
        if masks:
            valid = masks[0]
            for m in masks[1:]:
                valid = emit_binary(ctx, nn.AndOp, valid, m)
            v = o.where(valid, v, o.c(0.0))
        weights = [t[2] for t in combo if t[2] is not None]
        if weights:
            w = weights[0]
            for extra in weights[1:]:
                w = o.bin(nn.MulOp, w, extra)
            v = o.bin(nn.MulOp, v, w)
        acc = v if acc is None else o.bin(nn.AddOp, acc, v)
    assert acc is not None
    return [reshape_to(ctx, acc, [n, c, *out_sp])]


def _linear_index(ctx: NodeCtx, idx: Sequence[Value], strides: Sequence[int]) -> Value:
    lin: Value | None = None
    for i, s in zip(idx, strides, strict=True):
        term = i if s == 1 else emit_binary(ctx, nn.MulOp, i, ctx.const(np.array(s, np.int64)))
        lin = term if lin is None else emit_binary(ctx, nn.AddOp, lin, term)
    assert lin is not None
    return lin
