"""Per-op lowerings of the non-elementwise ``nn`` ops (used by ``lower-nn-to-loops``).

Each ``lower_<op>(L, op, outs)`` appends loops (or a ``clib`` library call) to ``L.e`` that
write the op's results into the buffers ``outs``; operands come from ``L.buffer_of``.
Reductions, softmax and normalisations are row loops over merged dims (contiguous inner
loops where the layout allows); the outermost loop of a big nest is marked parallel.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from typing import cast

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerType,
    Signedness,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from autofusion import symbolic
from autofusion.dialects import clib, dtypes, nn
from autofusion.dialects.attrs import (
    BLOCKED_LAYOUT,
    LAYOUT_X,
    LAYOUT_Y,
    is_blocked,
    origin_names,
    string_list,
)
from autofusion.lowering.c.builder import (
    Emitter,
    Index,
    Lowering,
    parallel_worth,
    shape,
    unravel,
)
from autofusion.lowering.c.resize import lower_resize

PASS = "lower-nn-to-loops"


def elem(v: SSAValue) -> Attribute:
    return v.type.element_type  # type: ignore[attr-defined]


def prod(xs: tuple[int, ...] | list[int]) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def fail(op: Operation, why: str) -> PassFailedException:
    names = origin_names(op)
    where = f" ({', '.join(names)})" if names else ""
    return PassFailedException(f"{PASS}: {op.name}{where}: {why}")


def need_float(op: Operation, *vals: SSAValue) -> None:
    for v in vals:
        if not dtypes.is_float(elem(v)):
            raise fail(op, f"needs a floating-point tensor, got {elem(v)}")


def need_f32(op: Operation, *vals: SSAValue) -> None:
    for v in vals:
        if elem(v) != dtypes.f32:
            raise fail(op, f"only f32 is supported by the C backend here, got {elem(v)}")


def lowest(t: Attribute) -> float | int:
    if dtypes.is_float(t):
        return -pymath.inf
    assert isinstance(t, IntegerType)
    if t.width.data == 1 or t.signedness.data == Signedness.UNSIGNED:
        return 0
    return -(1 << (t.width.data - 1))


def highest(t: Attribute) -> float | int:
    if dtypes.is_float(t):
        return pymath.inf
    assert isinstance(t, IntegerType)
    if t.width.data == 1:
        return 1
    if t.signedness.data == Signedness.UNSIGNED:
        return (1 << t.width.data) - 1
    return (1 << (t.width.data - 1)) - 1


def fop(t: Attribute, f: type, i: type) -> type:
    return f if dtypes.is_float(t) else i


# ---------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------


def merge_reduced_axes(
    xs: tuple[int, ...], axes: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``xs`` with each run of adjacent reduced axes as one axis, and the reduced axes of
    that shape (a static shape only; else unchanged). Adjacent axes of a row-major buffer
    are one axis of their product, summed in the same order: GlobalAveragePool over a 13x13
    map is one loop of 169 (``omp simd``, 16 lanes) instead of 13 loops of 13 that stayed
    scalar (docs/runtime.md, *SqueezeNet at one thread*)."""
    if not all(isinstance(d, int) for d in xs):
        return xs, axes
    dims: list[int] = []
    red: list[int] = []
    for i, d in enumerate(xs):
        if i in axes and i - 1 in axes and red and red[-1] == len(dims) - 1:
            dims[-1] *= d
            continue
        if i in axes:
            red.append(len(dims))
        dims.append(d)
    return tuple(dims), tuple(red)


def _reduce(L: Lowering, x: SSAValue, out: SSAValue, axes: tuple[int, ...], kind: str) -> None:
    e = L.e
    xs0 = shape(x)
    t = elem(x)
    count = prod([xs0[a] for a in axes])
    xs, axes = merge_reduced_axes(xs0, axes)
    keep = [1 if i in axes else d for i, d in enumerate(xs)]
    xb = L.buffer_of(x)
    if xs != xs0:
        xb = e.view(xb, xs)
    ob = e.view(out, keep)
    red_dims = [a for a in axes if xs[a] != 1]
    isf = dtypes.is_float(t)
    init = {
        "sum": 0,
        "mean": 0,
        "l2": 0,
        "prod": 1,
        "max": lowest(t),
        "min": highest(t),
    }[kind]

    def body(e1: Emitter, idx: list[Index]) -> None:
        acc0 = e1.const(init, t)

        def rec(e2: Emitter, k: int, full: list[Index], acc: SSAValue) -> SSAValue:
            if k == len(red_dims):
                v = e2.load(xb, full)
                if kind in ("sum", "mean"):
                    return e2.add(fop(t, arith.AddfOp, arith.AddiOp)(acc, v))
                if kind == "l2":
                    return e2.add(
                        fop(t, arith.AddfOp, arith.AddiOp)(
                            acc, e2.add(fop(t, arith.MulfOp, arith.MuliOp)(v, v))
                        )
                    )
                if kind == "prod":
                    return e2.add(fop(t, arith.MulfOp, arith.MuliOp)(acc, v))
                if kind == "max":
                    return e2.add(fop(t, arith.MaximumfOp, arith.MaxSIOp)(acc, v))
                return e2.add(fop(t, arith.MinimumfOp, arith.MinSIOp)(acc, v))
            d = red_dims[k]

            def inner(e3: Emitter, iv: SSAValue, it: list[SSAValue]) -> list[SSAValue]:
                f2 = list(full)
                f2[d] = iv
                return [rec(e3, k + 1, f2, it[0])]

            return e2.loop(0, xs[d], inner, inits=[acc])[0]

        acc = rec(e1, 0, list(idx), acc0)
        # The mean of an empty axis is 0 (onnxruntime's result): the sum, undivided, so that
        # no 1/0 is formed here and no integer division by zero reaches the C.
        if kind == "mean" and not isinstance(count, int):  # a run-time count (never 0)
            n = e1.add(arith.IndexCastOp(e1.index(count), i64))
            if isf:
                acc = e1.add(arith.DivfOp(acc, e1.add(arith.SIToFPOp(n, cast(AnyFloat, t)))))
            else:
                if t != i64:
                    n = e1.add(arith.TruncIOp(n, cast(IntegerType, t)))
                acc = e1.add(arith.DivSIOp(acc, n))
        elif kind == "mean" and count:
            if isf:
                acc = e1.add(arith.MulfOp(acc, e1.const(1.0 / count, t)))
            else:
                acc = e1.add(arith.DivSIOp(acc, e1.const(count, t)))
        elif kind == "l2":
            if not isf:
                raise PassFailedException(f"{PASS}: reduce_l2 on integers is not supported")
            acc = e1.add(math.SqrtOp(acc))
        e1.store(acc, ob, idx)

    e.nest(keep, body, parallel=parallel_worth(prod(xs)))


_REDUCE_KIND = {
    nn.ReduceSumOp: "sum",
    nn.ReduceMeanOp: "mean",
    nn.ReduceMaxOp: "max",
    nn.ReduceMinOp: "min",
    nn.ReduceProdOp: "prod",
    nn.ReduceL2Op: "l2",
}


def lower_reduce(L: Lowering, op: nn.ReduceOp, outs: list[SSAValue]) -> None:
    axes = op.axes
    if not axes:
        L.e.add(_copy(L, op.x, outs[0]))
        return
    _reduce(L, op.x, outs[0], axes, _REDUCE_KIND[type(op)])


def _copy(L: Lowering, src: SSAValue, dst: SSAValue) -> Operation:
    from xdsl.dialects import memref

    return memref.CopyOp(L.e.view(L.buffer_of(src), shape(dst)), dst)


def lower_global_pool(L: Lowering, op: nn.GlobalPoolOp, outs: list[SSAValue]) -> None:
    rank = len(shape(op.x))
    kind = "mean" if isinstance(op, nn.GlobalAvgPoolOp) else "max"
    _reduce(L, op.x, outs[0], tuple(range(2, rank)), kind)


def lower_arg_max(L: Lowering, op: nn.ArgMaxOp, outs: list[SSAValue]) -> None:
    e = L.e
    xs = shape(op.x)
    axis = op.axis
    t = elem(op.x)
    keep = [1 if i == axis else d for i, d in enumerate(xs)]
    xb = L.buffer_of(op.x)
    ob = e.view(outs[0], keep)

    def body(e1: Emitter, idx: list[Index]) -> None:
        def step(e2: Emitter, iv: SSAValue, it: list[SSAValue]) -> list[SSAValue]:
            full = list(idx)
            full[axis] = iv
            v = e2.load(xb, full)
            if dtypes.is_float(t):
                better = e2.add(arith.CmpfOp(v, it[0], "ogt"))
            else:
                better = e2.add(arith.CmpiOp(v, it[0], "sgt"))
            iv64 = e2.add(arith.IndexCastOp(iv, i64))
            return [e2.select(better, v, it[0]), e2.select(better, iv64, it[1])]

        first = list(idx)
        first[axis] = 0
        v0 = e1.load(xb, first)
        res = e1.loop(1, xs[axis], step, inits=[v0, e1.const(0, i64)])
        e1.store(res[1], ob, idx)

    e.nest(keep, body)


# ---------------------------------------------------------------------------------------
# Softmax and normalisations (row loops)
# ---------------------------------------------------------------------------------------


def lower_softmax(L: Lowering, op: nn.SoftmaxBase, outs: list[SSAValue]) -> None:
    e = L.e
    need_float(op, op.x)
    xs = shape(op.x)
    axis = op.axis
    o, a, i = prod(xs[:axis]), xs[axis], prod(xs[axis + 1 :])
    t = elem(op.x)
    xb = e.view(L.buffer_of(op.x), [o, a, i])
    yb = e.view(outs[0], [o, a, i])
    log = isinstance(op, nn.LogSoftmaxOp)
    # f16 sums the exponentials in f32 (as numpy's float16 reductions do).
    acc_t = dtypes.f32 if t == dtypes.f16 else t

    def row(e1: Emitter, idx: list[Index]) -> None:
        oi, ii = idx[0], idx[2]

        def mx(e2: Emitter, k: SSAValue, it: list[SSAValue]) -> list[SSAValue]:
            return [e2.add(arith.MaximumfOp(it[0], e2.load(xb, [oi, k, ii])))]

        m = e1.loop(0, a, mx, inits=[e1.const(-pymath.inf, t)])[0]

        def ex(e2: Emitter, k: SSAValue, it: list[SSAValue]) -> list[SSAValue]:
            d = e2.add(arith.SubfOp(e2.load(xb, [oi, k, ii]), m))
            v = e2.add(math.ExpOp(d))
            if not log:
                e2.store(v, yb, [oi, k, ii])
            if acc_t != t:
                v = e2.add(arith.ExtFOp(v, acc_t))
            return [e2.add(arith.AddfOp(it[0], v))]

        s = e1.loop(0, a, ex, inits=[e1.const(0.0, acc_t)])[0]
        if acc_t != t:
            s = e1.add(arith.TruncFOp(s, t))
        if log:
            ls = e1.add(arith.AddfOp(m, e1.add(math.LogOp(s))))

            def wr(e2: Emitter, k: SSAValue, _: list[SSAValue]) -> None:
                e2.store(e2.add(arith.SubfOp(e2.load(xb, [oi, k, ii]), ls)), yb, [oi, k, ii])

        elif acc_t != t:
            # f16: y / sum, one rounding (as numpy), not y * (1 / sum) with two.
            def wr(e2: Emitter, k: SSAValue, _: list[SSAValue]) -> None:
                e2.store(e2.add(arith.DivfOp(e2.load(yb, [oi, k, ii]), s)), yb, [oi, k, ii])

        else:
            inv = e1.add(arith.DivfOp(e1.const(1.0, t), s))

            def wr(e2: Emitter, k: SSAValue, _: list[SSAValue]) -> None:
                e2.store(e2.add(arith.MulfOp(e2.load(yb, [oi, k, ii]), inv)), yb, [oi, k, ii])

        e1.loop(0, a, wr)

    e.nest([o, 1, i], row, parallel=parallel_worth(prod(xs)))


def _param_view(L: Lowering, op: Operation, v: SSAValue | None, n: int) -> SSAValue | None:
    if v is None:
        return None
    numel = prod(shape(v))
    if numel not in (1, n):
        raise fail(op, f"parameter shape {shape(v)} is not supported (need {n} or 1 elements)")
    return L.e.view(L.buffer_of(v), [numel])


def _row_norm(
    L: Lowering,
    x: SSAValue,
    out: SSAValue,
    rows: int,
    cols: int,
    eps: float,
    scale: Callable[[Emitter, SSAValue, SSAValue], SSAValue] | None,
    bias: Callable[[Emitter, SSAValue, SSAValue], SSAValue] | None,
) -> None:
    """y[r, c] = (x - mean_r) / sqrt(var_r + eps) * scale(r, c) + bias(r, c)."""
    e = L.e
    t = elem(x)
    xb = e.view(L.buffer_of(x), [rows, cols])
    yb = e.view(out, [rows, cols])

    def row(e1: Emitter, r: SSAValue, _: list[SSAValue]) -> None:
        def sm(e2: Emitter, c: SSAValue, it: list[SSAValue]) -> list[SSAValue]:
            return [e2.add(arith.AddfOp(it[0], e2.load(xb, [r, c])))]

        s = e1.loop(0, cols, sm, inits=[e1.const(0.0, t)])[0]
        mean = e1.add(arith.MulfOp(s, e1.const(1.0 / cols, t)))

        def vs(e2: Emitter, c: SSAValue, it: list[SSAValue]) -> list[SSAValue]:
            d = e2.add(arith.SubfOp(e2.load(xb, [r, c]), mean))
            return [e2.add(arith.AddfOp(it[0], e2.add(arith.MulfOp(d, d))))]

        v = e1.loop(0, cols, vs, inits=[e1.const(0.0, t)])[0]
        var = e1.add(arith.MulfOp(v, e1.const(1.0 / cols, t)))
        inv = e1.add(math.RsqrtOp(e1.add(arith.AddfOp(var, e1.const(eps, t)))))

        def wr(e2: Emitter, c: SSAValue, _: list[SSAValue]) -> None:
            y = e2.add(arith.MulfOp(e2.add(arith.SubfOp(e2.load(xb, [r, c]), mean)), inv))
            if scale is not None:
                y = e2.add(arith.MulfOp(y, scale(e2, r, c)))
            if bias is not None:
                y = e2.add(arith.AddfOp(y, bias(e2, r, c)))
            e2.store(y, yb, [r, c])

        e1.loop(0, cols, wr)

    e.loop(0, rows, row, parallel=parallel_worth(rows, 2) and parallel_worth(rows * cols))


def lower_layer_norm(L: Lowering, op: nn.LayerNormOp, outs: list[SSAValue]) -> None:
    """f32: one ``afrt_layernorm_f32`` call (its sums in several vector accumulators; the
    row loop's single accumulator was a serial chain of adds); other types: the row loop."""
    need_float(op, op.x)
    xs = shape(op.x)
    axis = op.axis
    rows, cols = prod(xs[:axis]), prod(xs[axis:])
    sv = _param_view(L, op, op.scale, cols)
    bv = _param_view(L, op, op.bias, cols)
    if elem(op.x) == dtypes.f32:
        e = L.e
        x = L.buffer_of(op.x)
        # each parameter and its count: cols, 1 (broadcast) or 0 (none; the pointer unread)
        sb = [a for v in (sv, bv) for a in ((v, e.index(shape(v)[0])) if v else (x, e.index(0)))]
        args = [x, *sb, outs[0], e.index(rows), e.index(cols), e.const(op.epsilon, dtypes.f32)]
        e.add(clib.CallOp("afrt_layernorm_f32", args, writes=[1 + len(sb)]))  # y
        return

    def by_col(v: SSAValue | None) -> Callable[[Emitter, SSAValue, SSAValue], SSAValue] | None:
        if v is None:
            return None
        return lambda e, r, c: e.load(v, [c if shape(v)[0] != 1 else 0])

    _row_norm(L, op.x, outs[0], rows, cols, op.epsilon, by_col(sv), by_col(bv))


def lower_instance_norm(L: Lowering, op: nn.InstanceNormOp, outs: list[SSAValue]) -> None:
    need_float(op, op.x)
    xs = shape(op.x)
    n, c = xs[0], xs[1]
    sv = L.e.view(L.buffer_of(op.scale), [c])
    bv = L.e.view(L.buffer_of(op.bias), [c])

    def by_row(v: SSAValue) -> Callable[[Emitter, SSAValue, SSAValue], SSAValue]:
        return lambda e, r, col: e.load(v, [e.irem(r, c)])

    _row_norm(L, op.x, outs[0], n * c, prod(xs[2:]), op.epsilon, by_row(sv), by_row(bv))


def lower_batch_norm(L: Lowering, op: nn.BatchNormOp, outs: list[SSAValue]) -> None:
    e = L.e
    xs = shape(op.x)
    t = elem(op.x)
    if not dtypes.is_float(t):
        raise fail(op, "batch_norm needs a float tensor")
    n, c, s = xs[0], xs[1], prod(xs[2:])
    xb = e.view(L.buffer_of(op.x), [n, c, s])
    yb = e.view(outs[0], [n, c, s])
    p = [e.view(L.buffer_of(v), [c]) for v in (op.scale, op.bias, op.mean, op.var)]
    eps = op.epsilon

    def body(e1: Emitter, idx: list[Index]) -> None:
        ci = idx[1]
        sc, bi, mu, var = (e1.load(v, [ci]) for v in p)
        k = e1.add(
            arith.MulfOp(sc, e1.add(math.RsqrtOp(e1.add(arith.AddfOp(var, e1.const(eps, t))))))
        )
        off = e1.add(arith.SubfOp(bi, e1.add(arith.MulfOp(mu, k))))

        def inner(e2: Emitter, si: SSAValue, _: list[SSAValue]) -> None:
            v = e2.load(xb, [idx[0], ci, si])
            e2.store(e2.add(arith.AddfOp(e2.add(arith.MulfOp(v, k)), off)), yb, [idx[0], ci, si])

        e1.loop(0, s, inner)

    e.nest([n, c, 1], body, parallel=parallel_worth(prod(xs)))


def lower_lrn(L: Lowering, op: nn.LRNOp, outs: list[SSAValue]) -> None:
    e = L.e
    need_float(op, op.x)
    xs = shape(op.x)
    t = elem(op.x)
    n, c, s = xs[0], xs[1], prod(xs[2:])
    size = op.size
    alpha, beta, bias = op.alpha, op.beta, op.bias
    lo_off, hi_off = (size - 1) // 2, (size - 1) - (size - 1) // 2
    xb = e.view(L.buffer_of(op.x), [n, c, s])
    yb = e.view(outs[0], [n, c, s])

    def body(e1: Emitter, idx: list[Index]) -> None:
        ni, ci, si = idx
        lo = e1.imax(e1.isub(ci, lo_off), 0)
        hi = e1.imin(e1.iadd(ci, hi_off + 1), c)

        def acc(e2: Emitter, k: SSAValue, it: list[SSAValue]) -> list[SSAValue]:
            v = e2.load(xb, [ni, k, si])
            return [e2.add(arith.AddfOp(it[0], e2.add(arith.MulfOp(v, v))))]

        sq = e1.loop(lo, hi, acc, inits=[e1.const(0.0, t)])[0]
        d = e1.add(
            arith.AddfOp(e1.const(bias, t), e1.add(arith.MulfOp(sq, e1.const(alpha / size, t))))
        )
        den = e1.add(math.PowFOp(d, e1.const(beta, t)))
        e1.store(e1.add(arith.DivfOp(e1.load(xb, [ni, ci, si]), den)), yb, idx)

    e.nest([n, c, s], body)


# ---------------------------------------------------------------------------------------
# Library calls: conv, matmul/gemm, pooling, attention
# ---------------------------------------------------------------------------------------


def split_sizes(e: Emitter, values: list[int]) -> tuple[list[int], list[SSAValue]]:
    """A library call's integer params and its ``dyn`` operands: a run-time size
    (``symbolic.Size``) is ``clib.DYNAMIC`` in the list and its value, computed here once
    per distinct size, in ``dyn`` (so equal sizes are the same value, as ``clib.dwpw``'s
    verifier wants)."""
    memo: dict[object, SSAValue] = {}

    def value(v: int) -> int | SSAValue:
        if isinstance(v, int):
            return v
        if v not in memo:
            memo[v] = e.index(v)
        return memo[v]

    return clib.split_params([value(v) for v in values])


def _params(e: Emitter, values: list[int]) -> tuple[DenseArrayBase, list[SSAValue]]:
    """A library call's ``params`` and ``dyn`` operands (:func:`split_sizes`)."""
    static, dyn = split_sizes(e, values)
    return DenseArrayBase.from_list(i64, static), dyn


def _bounds(values: list[int]) -> dict[str, Attribute]:
    """``clib.conv2d``'s ``bounds`` (the params at the symbols' upper bounds) when some param
    is a run-time size; empty otherwise."""
    if symbolic.is_static(values):
        return {}
    return {"bounds": DenseArrayBase.from_list(i64, [symbolic.upper_bound(v) for v in values])}


conv_params = clib.conv_params  # the conv's CONV_FIELDS (defined with them in clib)


def _matmul_call(
    L: Lowering,
    a: SSAValue,
    b: SSAValue,
    c: SSAValue,
    batch: int,
    m: int,
    n: int,
    k: int,
    stride_a: int,
    stride_b: int,
    trans_a: bool,
    trans_b: bool,
    alpha: float,
    beta: float,
    ep: SSAValue | None,
    ctx: SSAValue | None,
    lp: dict[str, Attribute] | None = None,
) -> None:
    lda = m if trans_a else k
    ldb = k if trans_b else n
    params = [batch, m, n, k, lda, stride_a, int(trans_a), ldb, stride_b, int(trans_b), n, m * n]
    props, dyn = _params(L.e, params)
    operands: list[SSAValue | list[SSAValue]] = [
        a,
        b,
        c,
        [ep] if ep else [],
        [ctx] if ctx else [],
        dyn,
    ]
    L.e.add(
        clib.MatmulOp.build(
            operands=operands,
            properties={
                "params": props,
                "alpha": FloatAttr(alpha, f64),
                "beta": FloatAttr(beta, f64),
                **(lp or {}),
            },
        )
    )


def _lp_props(op: Operation) -> dict[str, Attribute]:
    """``precision`` / ``stored`` of the library call for a contraction that
    ``assign-precision`` made 16-bit (empty for fp32)."""
    from autofusion.passes.assign_precision import precision_of, stored_inputs

    prec = precision_of(op)
    if prec == "fp32":
        return {}
    return {
        "precision": StringAttr(prec),
        "stored": ArrayAttr([StringAttr(n) for n in stored_inputs(op)]),
    }


def precision_of_call(props: dict[str, Attribute]) -> str | None:
    """The ``precision`` of a library call's properties from :func:`_lp_props` (None: fp32)."""
    prec = props.get("precision")
    return prec.data if isinstance(prec, StringAttr) else None


def matmul_rows_fold(sa: tuple[int, ...], sb: tuple[int, ...]) -> bool:
    """Whether a MatMul of A ``[*batch, m, k]`` by one matrix B (``[k, n]``, or with leading
    1s only) runs as one GEMM of ``prod(batch) * m`` rows: A's and C's rows are contiguous, so
    the batch is more rows of the same B. A batched call would stream B once per batch index
    in short row blocks: Swin's MLPs on ``[1, 7, 7, 768]`` tokens were 7 GEMMs of 7 rows, each
    reading the 9 MB weight matrix again, at under half the GEMM core's rate. The epilogue
    (``contraction_groups``) sees the same rows."""
    return 3 <= len(sa) and 2 <= len(sb) <= len(sa) and all(d == 1 for d in sb[:-2])


def _batch_stride(bshape: tuple[int, ...], full: tuple[int, ...], mat: int, op: Operation) -> int:
    """Stride of one operand over the output batch: full batch or broadcast."""
    padded = (1,) * (len(full) - len(bshape)) + bshape
    if padded == full:
        return mat
    if all(d == 1 for d in padded):
        return 0
    raise fail(op, f"batch broadcast {bshape} -> {full} is not supported")


def conv_layouts(op: nn.ConvOp) -> dict[str, Attribute]:
    """``clib.conv2d``'s ``x_layout`` / ``y_layout`` from ``assign-layout``'s marks on the
    conv (``layout.x`` / ``layout.y``); empty when both are NCHW."""
    keys = ((LAYOUT_X, "x_layout"), (LAYOUT_Y, "y_layout"))
    return {prop: StringAttr(BLOCKED_LAYOUT) for key, prop in keys if is_blocked(op, key)}


def _layout_algo(params: list[int], layouts: dict[str, Attribute]) -> str:
    """The algorithm of a conv with a blocked side (``assign-layout``): for a 1x1 conv writing
    blocks ``direct_1x1_b`` from blocked x or with at most ``clib.D1X1B_MAX_K`` output
    channels (a fire module's squeeze and expands), else ``gemm_1x1_b`` (an expand conv
    feeding a blocked conv chain); a 1x1 conv from blocks into NCHW ``gemm_1x1_xb`` (the
    classifier after the last fire, a squeeze into an NCHW fire); a stem writing blocks
    (``clib.smallc_b_fits``) ``direct_smallc_b``; any other conv the blocked direct kernel."""
    f: dict[str, int] = dict(zip(clib.CONV_FIELDS, params, strict=True))
    if set(layouts) == {"y_layout"} and clib.smallc_b_fits(f):
        return "direct_smallc_b"
    if set(layouts) == {"x_layout"} and clib.gemm_1x1_b_fits(f):
        return "gemm_1x1_xb"
    if "y_layout" in layouts and clib.gemm_1x1_b_fits(f):
        if "x_layout" in layouts or f["K"] <= clib.D1X1B_MAX_K:
            return "direct_1x1_b"
    if set(layouts) == {"y_layout"} and clib.gemm_1x1_b_fits(f):
        return "gemm_1x1_b"
    return "direct_nchwc"


def _conv3d_call(
    L: Lowering,
    op: nn.ConvOp,
    out: SSAValue,
    bias: list[SSAValue],
    ep: SSAValue | None,
    ctx: SSAValue | None,
) -> None:
    """``clib.conv3d`` for a 3-d conv (fp32 only: the 16-bit core has no 3-d im2col)."""
    if _lp_props(op):
        raise fail(op, "16-bit 3-d convolutions are not supported (keep them fp32_ops)")
    props, dyn = _params(L.e, clib.conv3d_params(op))
    operands = _conv_operands(L, op, out, bias, ep, ctx, dyn)
    L.e.add(clib.Conv3DOp.build(operands=operands, properties={"params": props}))


def _conv_operands(
    L: Lowering,
    op: nn.ConvOp,
    out: SSAValue,
    bias: list[SSAValue],
    ep: SSAValue | None,
    ctx: SSAValue | None,
    dyn: Sequence[SSAValue],
) -> list[SSAValue | Sequence[SSAValue]]:
    """The operand groups of ``clib.conv2d`` / ``clib.conv3d``: x, w, out, the optional bias,
    epilogue and context, the run-time sizes."""
    return [
        L.buffer_of(op.x),
        L.buffer_of(op.w),
        out,
        bias,
        [ep] if ep else [],
        [ctx] if ctx else [],
        dyn,
    ]


def contraction_call(
    L: Lowering,
    op: Operation,
    out: SSAValue,
    ep: SSAValue | None,
    ctx: SSAValue | None,
    pool: list[int] | None = None,
) -> None:
    """The library call computing conv/matmul/gemm ``op`` into ``out`` (with an epilogue);
    ``pool``: a conv's fused max pool (``clib.POOL_FIELDS``, ``fuse-conv-pool``), ``out``
    then the pool's output."""
    e = L.e
    if isinstance(op, nn.ConvOp):
        need_f32(op, op.x, op.w)
        bias = [L.buffer_of(op.bias)] if op.bias is not None else []
        if len(shape(op.x)) == 5:
            _conv3d_call(L, op, out, bias, ep, ctx)
            return
        if len(shape(op.x)) not in (3, 4):
            raise fail(op, "only 1-d, 2-d and 3-d convolutions are supported")
        params = conv_params(op)
        lp = _lp_props(op)
        layouts = conv_layouts(op) if not lp else {}  # assign-layout marks fp32 convs only
        algo = clib.conv_algo(params, precision_of_call(lp), L.blocked_convs)
        props, dyn = _params(e, params)
        e.add(
            clib.Conv2DOp.build(
                operands=_conv_operands(L, op, out, bias, ep, ctx, dyn),
                properties={
                    "params": props,
                    **_bounds(params),
                    "algo": StringAttr(_layout_algo(params, layouts) if layouts else algo),
                    **layouts,
                    **lp,
                    **({"pool": DenseArrayBase.from_list(i64, pool)} if pool else {}),
                },
            )
        )
        return
    if isinstance(op, nn.GemmOp):
        need_f32(op, op.a, op.b)
        ta, tb = op.trans_a, op.trans_b
        sa, sb = shape(op.a), shape(op.b)
        m, k = (sa[1], sa[0]) if ta else sa
        n = sb[0] if tb else sb[1]
        beta = op.beta
        if op.c is not None and beta != 0.0:
            _broadcast_into(L, op.c, out)
        else:
            beta = 0.0
        _matmul_call(
            L,
            L.buffer_of(op.a),
            L.buffer_of(op.b),
            out,
            1,
            m,
            n,
            k,
            0,
            0,
            ta,
            tb,
            op.alpha,
            beta,
            ep,
            ctx,
            _lp_props(op),
        )
        return
    assert isinstance(op, nn.MatMulOp)
    if elem(op.a) != dtypes.f32:
        _matmul_loops(L, op, out)
        return
    sa, sb = shape(op.a), shape(op.b)
    a2 = sa if len(sa) > 1 else (1, *sa)
    b2 = sb if len(sb) > 1 else (*sb, 1)
    m, k, n = a2[-2], a2[-1], b2[-1]
    if matmul_rows_fold(sa, sb):
        rows = prod(list(sa[:-1]))
        _matmul_call(
            L, L.buffer_of(op.a), L.buffer_of(op.b), out, 1, rows, n, k, 0, 0, False, False,
            1.0, 0.0, ep, ctx, _lp_props(op),
        )  # fmt: skip
        return
    from autofusion.dialects import shapes

    batch_shape = shapes.broadcast(a2[:-2], b2[:-2])
    batch = prod(batch_shape)
    a = L.buffer_of(op.a)
    b = L.buffer_of(op.b)
    lp = _lp_props(op)
    stored = string_list(lp.get("stored"))
    try:
        stride_a = _batch_stride(a2[:-2], batch_shape, m * k, op)
    except PassFailedException:
        if "a" in stored:
            raise fail(op, "a 16-bit weight cannot be broadcast over this batch") from None
        a = _expand_batch(L, a, a2, batch_shape)
        stride_a = m * k
    try:
        stride_b = _batch_stride(b2[:-2], batch_shape, k * n, op)
    except PassFailedException:
        if "b" in stored:
            raise fail(op, "a 16-bit weight cannot be broadcast over this batch") from None
        b = _expand_batch(L, b, b2, batch_shape)
        stride_b = k * n
    _matmul_call(
        L, a, b, out, batch, m, n, k, stride_a, stride_b, False, False, 1.0, 0.0, ep, ctx, lp
    )


def _matmul_loops(L: Lowering, op: nn.MatMulOp, out: SSAValue) -> None:
    """Plain loops for element types the GEMM library does not cover (f64, f16, ints)."""
    e = L.e
    sa, sb = shape(op.a), shape(op.b)
    a2 = sa if len(sa) > 1 else (1, *sa)
    b2 = sb if len(sb) > 1 else (*sb, 1)
    from autofusion.dialects import shapes

    batch = shapes.broadcast(a2[:-2], b2[:-2])
    full = (*batch, a2[-2], b2[-1])
    av, bv = e.view(L.buffer_of(op.a), a2), e.view(L.buffer_of(op.b), b2)
    ov = e.view(out, full)
    t = elem(op.a)
    pa = (1,) * (len(full) - len(a2)) + a2
    pb = (1,) * (len(full) - len(b2)) + b2
    nb = len(batch)

    def body(e1: Emitter, idx: list[Index]) -> None:
        def step(e2: Emitter, k: SSAValue, it: list[SSAValue]) -> list[SSAValue]:
            ai = [i if d != 1 else 0 for i, d in zip(idx[:nb], pa[:nb])][nb - (len(a2) - 2) :]
            bi = [i if d != 1 else 0 for i, d in zip(idx[:nb], pb[:nb])][nb - (len(b2) - 2) :]
            x = e2.load(av, [*ai, idx[nb], k])
            y = e2.load(bv, [*bi, k, idx[nb + 1]])
            mul = fop(t, arith.MulfOp, arith.MuliOp)(x, y)
            return [e2.add(fop(t, arith.AddfOp, arith.AddiOp)(it[0], e2.add(mul)))]

        acc = e1.loop(0, a2[-1], step, inits=[e1.const(0, t)])[0]
        e1.store(acc, ov, idx)

    e.nest(full, body)


def _expand_batch(
    L: Lowering, buf: SSAValue, s: tuple[int, ...], batch: tuple[int, ...]
) -> SSAValue:
    e = L.e
    full = (*batch, *s[-2:])
    src = e.view(buf, s)
    dst = e.alloc(elem(buf), full)
    L.allocs.append(dst)
    padded = (1,) * (len(full) - len(s)) + s

    def body(e1: Emitter, idx: list[Index]) -> None:
        sidx = [i if d != 1 else 0 for i, d in zip(idx, padded)][len(full) - len(s) :]
        e1.store(e1.load(src, sidx), dst, idx)

    e.nest(full, body)
    return dst


def _broadcast_into(L: Lowering, src: SSAValue, out: SSAValue) -> None:
    e = L.e
    os_ = shape(out)
    sb = L.buffer_of(src)
    ss = shape(src)
    padded = (1,) * (len(os_) - len(ss)) + ss
    sv = e.view(sb, padded)

    def body(e1: Emitter, idx: list[Index]) -> None:
        e1.store(e1.load(sv, [i if d != 1 else 0 for i, d in zip(idx, padded)]), out, idx)

    e.nest(os_, body)


def lower_contraction(L: Lowering, op: Operation, outs: list[SSAValue]) -> None:
    contraction_call(L, op, outs[0], None, None)


def pool_params(op: nn.PoolOp) -> list[int] | None:
    """The pool's ``clib.POOL_FIELDS`` (1-d as 2-d with one row), or None beyond 2-d."""
    xs, ys = shape(op.x), shape(op.y)
    k, st, pd, dl = op.kernel, op.strides, op.pads, op.dilations
    cip = int(isinstance(op, nn.AvgPoolOp) and op.count_include_pad)
    if len(xs) == 3:
        return [xs[0], xs[1], 1, xs[2], 1, k[0], 1, ys[2], 1, st[0], 0, pd[0], 0, pd[1], 1,
                dl[0], cip]  # fmt: skip
    if len(xs) == 4:
        return [xs[0], xs[1], xs[2], xs[3], k[0], k[1], ys[2], ys[3], st[0], st[1], pd[0],
                pd[1], pd[2], pd[3], dl[0], dl[1], cip]  # fmt: skip
    return None


def lower_pool(L: Lowering, op: nn.PoolOp, outs: list[SSAValue]) -> None:
    need_f32(op, op.x)
    params = pool_params(op)
    if params is None:
        _pool_loops(L, op, outs[0])
        return
    kind = "max" if isinstance(op, nn.MaxPoolOp) else "avg"
    props, dyn = _params(L.e, params)
    L.e.add(
        clib.Pool2DOp.build(
            operands=[L.buffer_of(op.x), outs[0], dyn],
            properties={"kind": StringAttr(kind), "params": props, **pool_layout(op)},
        )
    )


def pool_layout(op: nn.PoolOp) -> dict[str, Attribute]:
    """``clib.pool2d``'s ``layout`` from ``assign-layout``'s mark on a max pool
    (``layout.x``: x and y NCHW16c); empty when NCHW."""
    if isinstance(op, nn.MaxPoolOp) and is_blocked(op, LAYOUT_X):
        return {"layout": StringAttr(BLOCKED_LAYOUT)}
    return {}


def _pool_loops(L: Lowering, op: nn.PoolOp, out: SSAValue) -> None:
    """Pooling of any spatial rank as loops (the library covers 1-d and 2-d)."""
    e = L.e
    xs, ys = shape(op.x), shape(op.y)
    nsp = len(xs) - 2
    k, st, pd, dl = op.kernel, op.strides, op.pads, op.dilations
    is_max = isinstance(op, nn.MaxPoolOp)
    cip = isinstance(op, nn.AvgPoolOp) and op.count_include_pad
    t = elem(op.x)
    xb = L.buffer_of(op.x)

    def body(e1: Emitter, idx: list[Index]) -> None:
        def rec(
            e2: Emitter,
            dim: int,
            src: list[Index],
            ok: SSAValue | None,
            pad_ok: SSAValue | None,
            acc: list[SSAValue],
        ) -> list[SSAValue]:
            if dim == nsp:
                v = e2.load(xb, [idx[0], idx[1], *src])
                if is_max:
                    m = e2.add(arith.MaximumfOp(acc[0], v))
                    return [e2.select(ok, m, acc[0]) if ok is not None else m]
                zero = e2.const(0.0, t)
                s_ = e2.add(arith.AddfOp(acc[0], e2.select(ok, v, zero) if ok is not None else v))
                one = e2.index(1)
                counted = ok if not cip else pad_ok
                c_ = e2.iadd(
                    acc[1], e2.select(counted, one, e2.index(0)) if counted is not None else one
                )
                return [s_, e2.index(c_)]

            def inner(e3: Emitter, kv: SSAValue, it: list[SSAValue]) -> list[SSAValue]:
                pos = e3.iadd(
                    e3.isub(e3.imul(idx[2 + dim], st[dim]), pd[dim]), e3.imul(kv, dl[dim])
                )
                valid = e3.add(
                    arith.AndIOp(e3.icmp("sge", pos, 0), e3.icmp("slt", pos, xs[2 + dim]))
                )
                inpad = e3.add(
                    arith.AndIOp(
                        e3.icmp("sge", pos, -pd[dim]),
                        e3.icmp("slt", pos, xs[2 + dim] + pd[nsp + dim]),
                    )
                )
                ok2 = valid if ok is None else e3.add(arith.AndIOp(ok, valid))
                pad2 = inpad if pad_ok is None else e3.add(arith.AndIOp(pad_ok, inpad))
                return rec(e3, dim + 1, [*src, e3.clamp(pos, 0, xs[2 + dim] - 1)], ok2, pad2, it)

            return e2.loop(0, k[dim], inner, inits=acc)

        if is_max:
            res = rec(e1, 0, [], None, None, [e1.const(-pymath.inf, t)])[0]
        else:
            s_, c_ = rec(e1, 0, [], None, None, [e1.const(0.0, t), e1.index(0)])
            cf = e1.add(arith.SIToFPOp(e1.add(arith.IndexCastOp(c_, i64)), cast(AnyFloat, t)))
            res = e1.add(arith.DivfOp(s_, cf))
        e1.store(res, out, idx)

    e.nest(ys, body)


def lower_attention(L: Lowering, op: nn.AttentionOp, outs: list[SSAValue]) -> None:
    """One streamed library call (``afrt_attention_f32``): scores are computed per block of
    query rows and key columns with an online softmax, never stored whole."""
    need_f32(op, op.q, op.k, op.v)
    qs, ks, vs, os_ = shape(op.q), shape(op.k), shape(op.v), shape(op.out)
    batch_shape = os_[:-2]
    if len(batch_shape) > clib.ATTN_MAX_BATCH_DIMS:
        raise fail(op, f"more than {clib.ATTN_MAX_BATCH_DIMS} batch dims are not supported")
    s_, d_, t_, ev = qs[-2], qs[-1], ks[-2], vs[-1]
    mask_bstr = [0] * clib.ATTN_MAX_BATCH_DIMS
    mask_s = mask_t = 0
    if op.mask is not None:
        ms = shape(op.mask)
        mp = (1,) * (len(batch_shape) + 2 - len(ms)) + ms
        strides = [prod(mp[i + 1 :]) if mp[i] != 1 else 0 for i in range(len(mp))]
        mask_bstr[: len(batch_shape)] = strides[:-2]
        mask_s, mask_t = strides[-2], strides[-1]
    bdims = [*batch_shape, *[1] * (clib.ATTN_MAX_BATCH_DIMS - len(batch_shape))]
    fields = {
        "batch": prod(batch_shape),
        "S": s_,
        "T": t_,
        "D": d_,
        "E": ev,
        "q_bstride": _batch_stride(qs[:-2], batch_shape, s_ * d_, op),
        "k_bstride": _batch_stride(ks[:-2], batch_shape, t_ * d_, op),
        "v_bstride": _batch_stride(vs[:-2], batch_shape, t_ * ev, op),
        "nbd": len(batch_shape),
        **{f"bdims{i}": n for i, n in enumerate(bdims)},
        **{f"mask_bstr{i}": n for i, n in enumerate(mask_bstr)},
        "mask_s": mask_s,
        "mask_t": mask_t,
        "nan_to_zero": int(op.nan_to_zero),
    }
    buffers = [L.buffer_of(op.q), L.buffer_of(op.k), L.buffer_of(op.v), outs[0]]
    mask = [L.buffer_of(op.mask)] if op.mask is not None else []
    props, dyn = _params(L.e, [fields[f] for f in clib.ATTN_FIELDS])
    L.e.add(
        clib.AttentionOp.build(
            operands=[*buffers, mask, dyn],
            properties={
                "params": props,
                "scale": FloatAttr(op.scale, f64),
            },
        )
    )


# ---------------------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------------------


#: A transpose whose outermost output loop has fewer iterations than this runs the output
#: dim holding the input's outermost dim first instead, when that has more (below).
TRANSPOSE_MIN_OUTER = 8


def transpose_loop_order(ys: list[int], xs: list[int],
                         perm: tuple[int, ...]) -> list[int]:  # fmt: skip
    """The output dims in loop order for a transpose ``xs`` -> ``ys`` (``perm``): row-major
    over the output, except that when its outermost loop is short (Swin's qkv split
    ``[W, 49, 3, H, 32] -> [3, W, H, 49, 32]``: 3 iterations) the output dim holding the
    input's outermost dim goes first: the one parallel loop then splits evenly over two
    threads, and each iteration reads one contiguous block of the input (measured 1.2-1.4x
    on that copy at one thread, docs/runtime.md, "Small-sequence attention")."""
    order = list(range(len(ys)))
    if not all(isinstance(d, int) for d in (*ys, *xs)):
        return order
    loops = [i for i in order if ys[i] != 1]
    first_in = next((k for k, d in enumerate(xs) if d != 1), None)
    if len(loops) < 2 or first_in is None or ys[loops[0]] >= TRANSPOSE_MIN_OUTER:
        return order
    j = perm.index(first_in)
    if j == len(ys) - 1 or ys[j] <= ys[loops[0]]:  # keep the innermost loop
        return order
    return [j, *(i for i in order if i != j)]


def lower_transpose(L: Lowering, op: nn.TransposeOp, outs: list[SSAValue]) -> None:
    e = L.e
    perm = op.perm
    xb = L.buffer_of(op.x)
    rank = len(perm)
    ys = list(shape(op.y))
    order = transpose_loop_order(ys, list(shape(op.x)), tuple(perm))

    def body(e1: Emitter, loop_idx: list[Index]) -> None:
        idx: list[Index] = [0] * rank
        for pos, d in enumerate(order):
            idx[d] = loop_idx[pos]
        src: list[Index] = [0] * rank
        for oi, p in enumerate(perm):
            src[p] = idx[oi]
        e1.store(e1.load(xb, src), outs[0], idx)

    e.nest([ys[d] for d in order], body)


def lower_concat(L: Lowering, op: nn.ConcatOp, outs: list[SSAValue]) -> None:
    e = L.e
    axis = op.axis
    ys = shape(op.y)
    outer, inner_out = prod(ys[:axis]), prod(ys[axis:])
    yv = e.view(outs[0], [outer, inner_out])
    off = 0
    for v in op.inputs:
        vs = shape(v)
        inner = prod(vs[axis:])
        if inner:
            xv = e.view(L.buffer_of(v), [outer, inner])
            o = off

            def body(e1: Emitter, idx: list[Index], xv: SSAValue = xv, o: int = o) -> None:
                e1.store(e1.load(xv, idx), yv, [idx[0], e1.iadd(idx[1], o)])

            e.nest([outer, inner], body)
        off += inner


def lower_split(L: Lowering, op: nn.SplitOp, outs: list[SSAValue]) -> None:
    e = L.e
    axis = op.axis
    xs = shape(op.x)
    outer, inner_in = prod(xs[:axis]), prod(xs[axis:])
    xv = e.view(L.buffer_of(op.x), [outer, inner_in])
    off = 0
    for r, ob in zip(op.outputs, outs):
        inner = prod(shape(r)[axis:])
        if inner:
            yv = e.view(ob, [outer, inner])

            def body(e1: Emitter, idx: list[Index], yv: SSAValue = yv, o: int = off) -> None:
                e1.store(e1.load(xv, [idx[0], e1.iadd(idx[1], o)]), yv, idx)

            e.nest([outer, inner], body)
        off += inner


def lower_slice(L: Lowering, op: nn.SliceOp, outs: list[SSAValue]) -> None:
    e = L.e
    starts, steps = op.starts, op.steps
    xb = L.buffer_of(op.x)

    def body(e1: Emitter, idx: list[Index]) -> None:
        src = [e1.iadd(st, e1.imul(i, sp)) for i, st, sp in zip(idx, starts, steps)]
        e1.store(e1.load(xb, src), outs[0], idx)

    e.nest(shape(op.y), body)


def lower_pad(L: Lowering, op: nn.PadOp, outs: list[SSAValue]) -> None:
    e = L.e
    xs = shape(op.x)
    r = len(xs)
    pads = op.pads
    mode = op.mode
    t = elem(op.x)
    xb = L.buffer_of(op.x)
    if prod(xs) == 0:
        raise fail(op, "padding an empty tensor is not supported")

    def body(e1: Emitter, idx: list[Index]) -> None:
        src: list[Index] = []
        valid: SSAValue | None = None
        for d in range(r):
            i = e1.isub(idx[d], pads[d])
            n = xs[d]
            if pads[d] == 0 and pads[r + d] == 0:
                src.append(i)
                continue
            if mode == "edge":
                src.append(e1.clamp(i, 0, n - 1))
            elif mode == "reflect":
                if n == 1:
                    src.append(0)
                    continue
                neg = e1.icmp("slt", i, 0)
                a = e1.select(neg, e1.index(e1.isub(0, i)), e1.index(i))
                over = e1.icmp("sge", a, n)
                src.append(e1.select(over, e1.index(e1.isub(2 * (n - 1), a)), a))
            else:
                ok = e1.add(arith.AndIOp(e1.icmp("sge", i, 0), e1.icmp("slt", i, n)))
                valid = ok if valid is None else e1.add(arith.AndIOp(valid, ok))
                src.append(e1.clamp(i, 0, n - 1))
        v = e1.load(xb, src)
        if valid is not None:
            pv = op.value
            v = e1.select(valid, v, e1.const(pv if dtypes.is_float(t) else int(pv), t))
        e1.store(v, outs[0], idx)

    e.nest(shape(op.y), body)


def _node(op: Operation, onnx_type: str) -> str:
    """``Gather node 'emb'``: the ONNX op type and node name(s) of ``op``, for messages."""
    names = origin_names(op)
    quoted = ", ".join(f"'{n}'" for n in names)
    return f"{onnx_type} node {quoted}" if names else onnx_type


def _guard(e: Emitter, v: SSAValue, n: Index, site: str) -> SSAValue:
    """An index read from run-time data as a checked ``index`` into a dim of size ``n``.

    Negative values wrap (ONNX); a value outside ``[-n, n-1]`` makes the run fail with a
    message naming ``site`` (``clib.guard_index``) and reads element 0 meanwhile, so no
    access leaves the buffer. One compare and a not-taken branch per index element."""
    return e.add(clib.GuardIndexOp(v, n if isinstance(n, int) else e.index(n), site))


def _need_nonempty(op: Operation, dims: list[int], ds: tuple[int, ...], nout: int) -> None:
    # a run-time size is never 0 (symbols are at least 1)
    if nout != 0 and any(ds[d] == 0 for d in dims):
        raise fail(op, f"indexes an empty dimension of data {list(ds)}: every index is out "
                       "of range")  # fmt: skip


def lower_gather(L: Lowering, op: nn.GatherOp, outs: list[SSAValue]) -> None:
    e = L.e
    axis = op.axis
    ds = shape(op.data)
    ys = shape(op.y)
    ir = len(shape(op.indices))
    db, ib = L.buffer_of(op.data), L.buffer_of(op.indices)
    _need_nonempty(op, [axis], ds, prod(ys))
    site = f"{_node(op, 'Gather')} (axis {axis} of data {list(ds)})"
    # Outer loops up to the index dims read and check each index once; the inner loops copy
    # the slice it selects (contiguous for axis 0, e.g. an embedding row).
    lead, tail = ys[: axis + ir], ys[axis + ir :]
    par = parallel_worth(prod(ys))
    lead_loops = any(d != 1 for d in lead)

    def outer(e1: Emitter, oidx: list[Index]) -> None:
        k = _guard(e1, e1.load(ib, oidx[axis:]), ds[axis], site)

        def inner(e2: Emitter, tidx: list[Index]) -> None:
            src = [*oidx[:axis], k, *tidx]
            e2.store(e2.load(db, src), outs[0], [*oidx, *tidx])

        e1.nest(tail, inner, parallel=par and not lead_loops)

    e.nest(lead, outer, parallel=par)


def lower_gather_elements(L: Lowering, op: nn.GatherElementsOp, outs: list[SSAValue]) -> None:
    e = L.e
    axis = op.axis
    ds = shape(op.data)
    db, ib = L.buffer_of(op.data), L.buffer_of(op.indices)
    _need_nonempty(op, [axis], ds, prod(shape(op.y)))
    site = f"{_node(op, 'GatherElements')} (axis {axis} of data {list(ds)})"

    def body(e1: Emitter, idx: list[Index]) -> None:
        k = e1.load(ib, idx)
        src = list(idx)
        src[axis] = _guard(e1, k, ds[axis], site)
        e1.store(e1.load(db, src), outs[0], idx)

    e.nest(shape(op.y), body)


def lower_gather_nd(L: Lowering, op: nn.GatherNDOp, outs: list[SSAValue]) -> None:
    e = L.e
    b = op.batch_dims
    ds, is_ = shape(op.data), shape(op.indices)
    ys = shape(op.y)
    depth = is_[-1]
    db, ib = L.buffer_of(op.data), L.buffer_of(op.indices)
    nlead = len(is_) - 1
    _need_nonempty(op, list(range(b, b + depth)), ds, prod(ys))
    node = _node(op, "GatherND")
    par = parallel_worth(prod(ys))
    lead_loops = any(d != 1 for d in ys[:nlead])

    def outer(e1: Emitter, lead: list[Index]) -> None:
        ks: list[Index] = []
        for j in range(depth):
            k = e1.load(ib, [*lead, j])
            ks.append(_guard(e1, k, ds[b + j], f"{node} (dim {b + j} of data {list(ds)})"))

        def inner(e2: Emitter, tidx: list[Index]) -> None:
            src = [*lead[:b], *ks, *tidx]
            e2.store(e2.load(db, src), outs[0], [*lead, *tidx])

        e1.nest(ys[nlead:], inner, parallel=par and not lead_loops)

    e.nest(ys[:nlead], outer, parallel=par)


def lower_tile(L: Lowering, op: nn.TileOp, outs: list[SSAValue]) -> None:
    e = L.e
    xs = shape(op.x)
    xb = L.buffer_of(op.x)

    def body(e1: Emitter, idx: list[Index]) -> None:
        src = [e1.irem(i, d) if d != 1 else 0 for i, d in zip(idx, xs)]
        e1.store(e1.load(xb, src), outs[0], idx)

    e.nest(shape(op.y), body)


def lower_sizes(L: Lowering, op: nn.SizesOp, outs: list[SSAValue]) -> None:
    """The run's sizes as integers (``nn.sizes``): each computed from the symbol arguments."""
    e = L.e
    t = elem(op.y)
    ys = shape(op.y)
    for k, size in enumerate(op.sizes):
        idx = unravel(e, k, ys)
        if isinstance(size, int):
            v = e.const(size, t)
        else:
            v = e.add(arith.IndexCastOp(e.index(size), t))
        e.store(v, outs[0], idx)


_TABLE: dict[type, Callable[..., None]] = {
    **{k: lower_reduce for k in _REDUCE_KIND},
    nn.GlobalAvgPoolOp: lower_global_pool,
    nn.GlobalMaxPoolOp: lower_global_pool,
    nn.ArgMaxOp: lower_arg_max,
    nn.SoftmaxOp: lower_softmax,
    nn.LogSoftmaxOp: lower_softmax,
    nn.LayerNormOp: lower_layer_norm,
    nn.InstanceNormOp: lower_instance_norm,
    nn.BatchNormOp: lower_batch_norm,
    nn.LRNOp: lower_lrn,
    nn.ConvOp: lower_contraction,
    nn.MatMulOp: lower_contraction,
    nn.GemmOp: lower_contraction,
    nn.MaxPoolOp: lower_pool,
    nn.AvgPoolOp: lower_pool,
    nn.AttentionOp: lower_attention,
    nn.TransposeOp: lower_transpose,
    nn.ConcatOp: lower_concat,
    nn.SplitOp: lower_split,
    nn.SliceOp: lower_slice,
    nn.PadOp: lower_pad,
    nn.GatherOp: lower_gather,
    nn.GatherElementsOp: lower_gather_elements,
    nn.GatherNDOp: lower_gather_nd,
    nn.TileOp: lower_tile,
    nn.ResizeOp: lower_resize,
    nn.SizesOp: lower_sizes,
}


def lower_op(L: Lowering, op: Operation, outs: list[SSAValue]) -> None:
    fn = _TABLE.get(type(op))
    if fn is None:
        raise fail(op, "no C lowering for this op")
    fn(L, op, outs)
