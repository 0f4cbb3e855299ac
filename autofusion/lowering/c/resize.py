"""C lowering of ``nn.resize``: one loop nest per resized axis, reading the tap tables.

Axis after axis (the op's ``axes`` order) the source is resized along one dim into a scratch
buffer (the last axis writes the result). Per output coordinate ``o`` along the axis the loop
reads the ``taps`` indices (clamped into the input dim, so a table can never address outside
the buffer) and weights once, then the inner dims accumulate ``w[o, t] * x[.., idx, ..]``.
When every table has 1 tap (nearest) the whole op is one copy nest with no arithmetic,
each axis's index read once in that axis's loop. Rows marked ``-1`` (outside
a ``tf_crop_and_resize`` crop) store the extrapolation value.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.ir import Attribute, SSAValue
from xdsl.utils.exceptions import PassFailedException

from autofusion.dialects import dtypes, nn
from autofusion.dialects.attrs import origin_names
from autofusion.dialects.base import shape_of
from autofusion.lowering.c.builder import INDEX, Emitter, Index, Lowering, parallel_worth

PASS = "lower-nn-to-loops"


def _fail(op: nn.ResizeOp, why: str) -> PassFailedException:
    names = origin_names(op)
    where = f" ({', '.join(names)})" if names else ""
    return PassFailedException(f"{PASS}: {op.name}{where}: {why}")


def _prod(xs: tuple[int, ...] | list[int]) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def lower_resize(L: Lowering, op: nn.ResizeOp, outs: list[SSAValue]) -> None:
    e = L.e
    t: Attribute = op.x.type.element_type  # type: ignore[attr-defined]
    axes = op.axes
    fill = op.extrapolation_value
    cur = list(shape_of(op.x))
    src = L.buffer_of(op.x)
    if fill is None and all(shape_of(v)[1] == 1 for v in op.tables[::2]):
        tables = dict(zip(axes, (L.buffer_of(v) for v in op.tables[::2])))
        _gather(e, src, outs[0], tables, cur, list(shape_of(op.y)))
        return
    for k, a in enumerate(axes):
        idx_v, w_v = op.tables[2 * k], op.tables[2 * k + 1]
        m, taps = shape_of(idx_v)
        if taps > 1 and t != dtypes.f32:
            raise _fail(op, f"only f32 is supported by the C backend for interpolation, got {t}")
        n = cur[a]
        cur[a] = m
        if k == len(axes) - 1:
            dst = outs[0]
        else:
            dst = e.alloc(t, cur)
            L.allocs.append(dst)
        _axis(e, src, dst, L.buffer_of(idx_v), L.buffer_of(w_v), tuple(cur), a, n, taps, t,
              fill)  # fmt: skip
        src = dst


def _gather(
    e: Emitter,
    src: SSAValue,
    dst: SSAValue,
    tables: dict[int, SSAValue],
    xs: list[int],
    out: list[int],
) -> None:
    """All axes 1-tap (nearest): one pass ``y[o...] = x[idx_a[o_a]...]``, each axis's index
    read (and clamped) once in its own loop, the innermost loop a strided copy."""
    rank = len(out)
    par = parallel_worth(_prod(out))
    first = next((d for d in range(rank) if out[d] != 1), rank)

    def at(e1: Emitter, d: int, o: Index) -> Index:
        if d not in tables:
            return o
        raw = e1.add(arith.IndexCastOp(e1.load(tables[d], [o, 0]), INDEX))
        return e1.clamp(raw, 0, xs[d] - 1)

    def rec(e1: Emitter, d: int, oidx: list[Index], sidx: list[Index]) -> None:
        if d == rank:
            e1.store(e1.load(src, sidx), dst, oidx)
            return
        if out[d] == 1:
            rec(e1, d + 1, [*oidx, 0], [*sidx, at(e1, d, 0)])
            return

        def body(e2: Emitter, iv: SSAValue, _: list[SSAValue]) -> None:
            rec(e2, d + 1, [*oidx, iv], [*sidx, at(e2, d, iv)])

        e1.loop(0, out[d], body, parallel=par and d == first)

    rec(e, 0, [], [])


def _axis(
    e: Emitter,
    src: SSAValue,
    dst: SSAValue,
    ib: SSAValue,
    wb: SSAValue,
    out: tuple[int, ...],
    a: int,
    n: int,
    taps: int,
    t: Attribute,
    fill: float | None,
) -> None:
    lead, tail = out[: a + 1], out[a + 1 :]
    par = parallel_worth(_prod(out))

    def outer(e1: Emitter, oidx: list[Index]) -> None:
        o = oidx[a]
        raw = [e1.add(arith.IndexCastOp(e1.load(ib, [o, j]), INDEX)) for j in range(taps)]
        ks = [e1.clamp(r, 0, n - 1) for r in raw]
        ws = [e1.load(wb, [o, j]) for j in range(taps)] if taps > 1 else []
        outside = e1.icmp("slt", raw[0], 0) if fill is not None else None

        def inner(e2: Emitter, tidx: list[Index]) -> None:
            pre = oidx[:a]
            v = e2.load(src, [*pre, ks[0], *tidx])
            if taps > 1:
                v = e2.add(arith.MulfOp(v, ws[0]))
                for j in range(1, taps):
                    x = e2.load(src, [*pre, ks[j], *tidx])
                    v = e2.add(arith.AddfOp(v, e2.add(arith.MulfOp(x, ws[j]))))
            if outside is not None and fill is not None:
                c = e2.const(fill if dtypes.is_float(t) else int(fill), t)
                v = e2.select(outside, c, v)
            e2.store(v, dst, [*oidx, *tidx])

        e1.nest(tail, inner, parallel=par and all(d == 1 for d in lead))

    e.nest(lead, outer, parallel=par)
