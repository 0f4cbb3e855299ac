"""Row-wise reductions -> Ascend C vector kernels: LayerNorm, Softmax/LogSoftmax over the
last axis, GlobalAveragePool and Reduce{Mean,Sum,Max} over trailing axes.

The input is viewed as ``rows x D`` (D = product of the reduced / normalised trailing dims).
A tile is ``tileLength`` whole rows moved with one 2-d ``DataCopyPad`` (each row padded to
``rowStride`` = D rounded up to 32 bytes in UB); the compute stage loops over the tile's rows
and uses ``ReduceSum``/``ReduceMax`` into a one-block scalar buffer whose element 0 feeds
``Adds``/``Muls`` (``GetValue(0)``). Per row:

* layer_norm: mean = sum/D; c = x - mean; var = sum(c*c)/D; y = c * 1/sqrt(var+eps) * scale + bias
* softmax: m = max; y = exp(x - m); y *= 1/sum(y)   (log_softmax: y = x - m - ln(sum exp))
* mean/sum/max, global_avg_pool: one value per row (``store_row_value``)
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import IntegerAttr, StringAttr, f32
from xdsl.ir import Block, Operation, Region, SSAValue

from autofusion.dialects import ascendc as ac
from autofusion.dialects import nn
from autofusion.dialects.base import shape_of, value_index
from autofusion.dialects.shapes import numel
from autofusion.lowering.ascendc import tiling as tl
from autofusion.lowering.ascendc.vector import Unsupported

ROW_OPS: tuple[type[Operation], ...] = (
    nn.LayerNormOp,
    nn.SoftmaxOp,
    nn.LogSoftmaxOp,
    nn.GlobalAvgPoolOp,
    nn.GlobalMaxPoolOp,
    nn.ReduceMeanOp,
    nn.ReduceSumOp,
    nn.ReduceMaxOp,
)


def row_shape(op: Operation) -> tuple[int, int]:
    """(rows, D) of the op's input, or raises Unsupported."""
    k = row_axis(op)
    xs = tuple(shape_of(op.operands[0]))
    return numel(xs[:k]), numel(xs[k:])


def row_axis(op: Operation) -> int:
    """The first reduced / normalised axis: the dims before it are the rows."""
    xs = tuple(shape_of(op.operands[0]))
    if isinstance(op, nn.LayerNormOp):
        k = op.axis
    elif isinstance(op, nn.SoftmaxOp | nn.LogSoftmaxOp):
        k = op.axis
        if k != len(xs) - 1:
            raise Unsupported(f"{op.name} over axis {k} (only the last axis is lowered)")
    elif isinstance(op, nn.GlobalAvgPoolOp | nn.GlobalMaxPoolOp):
        k = 2
    else:
        axes = op.axes  # type: ignore[attr-defined]
        k = len(xs) - len(axes)
        if not axes or tuple(axes) != tuple(range(k, len(xs))):
            raise Unsupported(f"{op.name} over axes {axes} (only trailing axes are lowered)")
    return k if k >= 0 else k + len(xs)


def _i(v: int) -> IntegerAttr:
    return IntegerAttr(int(v), 64)


def build_rows(lowering, op: Operation) -> ac.KernelOp:
    """The kernel for one row-wise op (``lowering`` provides the kernel block helpers)."""
    rows, d = row_shape(op)
    dp = tl.round_up_int(d, tl.ALIGN)
    per_row_out = not isinstance(op, nn.LayerNormOp | nn.SoftmaxOp | nn.LogSoftmaxOp)
    block, gms = lowering._kernel_block()
    args = lowering.kop.body.block.args
    x_idx = value_index(op.operands[0])
    out_g = gms[len(lowering.kop.inputs)]
    params: list[tuple[int, SSAValue]] = []
    if isinstance(op, nn.LayerNormOp):
        for v in op.operands[1:]:
            if numel(shape_of(v)) != d:
                raise Unsupported(
                    f"layer_norm parameter of shape {shape_of(v)} (needs {d} elements)"
                )
            params.append((value_index(v), v))
    del args

    qin = ac.QueueOp("VECIN", tl.BUFFER_NUM, 32)
    qin.properties["size"] = StringAttr("tile_rows")
    qout = ac.QueueOp("VECOUT", tl.BUFFER_NUM, 32)
    qout.properties["size"] = StringAttr("tile_values" if per_row_out else "tile_rows")
    row_tmp = ac.TBufOp(dp * 4)
    row_tmp.properties["size"] = StringAttr("row")
    work = ac.TBufOp(dp * 4)
    work.properties["size"] = StringAttr("row")
    scal = ac.TBufOp(32)
    scal.properties["size"] = StringAttr("block")
    loaded = [ac.LoadOperandOp(gms[i], d, f32) for i, _ in params]
    block.add_ops([qin, qout, row_tmp, work, scal, *loaded])

    cin = Block()
    a = ac.AllocTensorOp(qin.result, f32)
    cin.add_ops(
        [a, ac.CopyInOp(a.result, gms[x_idx]), ac.EnQueOp(qin.result, a.result), ac.YieldOp()]
    )

    comp = Block()
    x = ac.DeQueOp(qin.result, f32)
    y = ac.AllocTensorOp(qout.result, f32)
    t = ac.TBufGetOp(row_tmp.result, f32)
    w = ac.TBufGetOp(work.result, f32)
    s = ac.TBufGetOp(scal.result, f32)
    comp.add_ops([x, y, w, s] if per_row_out else [x, y, t, w, s])
    body = Block()
    xr = ac.RowViewOp(x.result)
    body.add_op(xr)
    X, T, W, S = xr.result, t.result, w.result, s.result
    em = body.add_op
    inv_d = 1.0 / d
    if per_row_out:
        fn = "ReduceMax" if isinstance(op, nn.ReduceMaxOp | nn.GlobalMaxPoolOp) else "ReduceSum"
        em(ac.VecReduceOp(fn, S, X, W))
        if isinstance(op, nn.ReduceMeanOp | nn.GlobalAvgPoolOp):
            em(ac.VecScalarOp("Muls", S, S, inv_d, count=1))
        em(ac.StoreRowValueOp(y.result, S))
    else:
        yr = ac.RowViewOp(y.result)
        em(yr)
        Y = yr.result
        if isinstance(op, nn.LayerNormOp):
            eps = op.epsilon
            em(ac.VecReduceOp("ReduceSum", S, X, W))
            em(ac.VecScalarOp("Muls", S, S, inv_d, count=1))
            em(ac.VecScalarOp("Adds", T, X, 0.0, scalar_src=S, negate=True))  # centred
            em(ac.VecBinaryOp("Mul", Y, T, T))
            em(ac.VecReduceOp("ReduceSum", S, Y, W))
            em(ac.VecScalarOp("Muls", S, S, inv_d, count=1))
            em(ac.VecScalarOp("Adds", S, S, eps, count=1))
            em(ac.VecUnaryOp("Sqrt", S, S, count=1))
            em(ac.VecUnaryOp("Reciprocal", S, S, count=1))
            em(ac.VecScalarOp("Muls", Y, T, 0.0, scalar_src=S))
            if loaded:
                em(ac.VecBinaryOp("Mul", Y, Y, loaded[0].result))
            if len(loaded) > 1:
                em(ac.VecBinaryOp("Add", Y, Y, loaded[1].result))
        else:
            em(ac.VecReduceOp("ReduceMax", S, X, W))
            em(ac.VecScalarOp("Adds", Y, X, 0.0, scalar_src=S, negate=True))
            em(ac.VecUnaryOp("Exp", T, Y))
            em(ac.VecReduceOp("ReduceSum", S, T, W))
            if isinstance(op, nn.SoftmaxOp):
                em(ac.VecUnaryOp("Reciprocal", S, S, count=1))
                em(ac.VecScalarOp("Muls", Y, T, 0.0, scalar_src=S))
            else:
                em(ac.VecUnaryOp("Ln", S, S, count=1))
                em(ac.VecScalarOp("Adds", Y, Y, 0.0, scalar_src=S, negate=True))
    em(ac.YieldOp())
    comp.add_ops(
        [
            ac.RowLoopOp(Region(body)),
            ac.EnQueOp(qout.result, y.result),
            ac.FreeTensorOp(qin.result, x.result),
            ac.YieldOp(),
        ]
    )

    cout = Block()
    r = ac.DeQueOp(qout.result, f32)
    cout.add_ops(
        [r, ac.CopyOutOp(out_g, r.result), ac.FreeTensorOp(qout.result, r.result), ac.YieldOp()]
    )

    loop = ac.TileLoopOp("rows", rows, [Region(cin), Region(comp), Region(cout)])
    loop.properties["row_length"] = _i(d)
    loop.properties["out_row_length"] = _i(1 if per_row_out else d)
    block.add_op(loop)
    sizes = {"rows": rows, "d": d, "perRowOut": int(per_row_out), "nloaded": len(loaded)}
    runtime: tuple[str, ...] = ()
    if lowering.opts.runtime_sizes:
        # the row count is a run-time size: x and the result are sized from the tiling
        sizes.update(rowsMax=rows, lead=row_axis(op))
        runtime = ("rows",)
        ac.set_runtime_length(gms[x_idx], "total_rows")
        ac.set_runtime_length(out_g, "total" if per_row_out else "total_rows")
    rt = lowering._tiling(tl.TilingKind.ROWS, sizes, runtime)
    tile = rt.field_values()["tileLength"]
    qin.properties["bytes"] = _i(tile * dp * 4)
    qout.properties["bytes"] = _i(
        (tl.round_up_int(tile, tl.ALIGN) if per_row_out else tile * dp) * 4
    )
    return lowering._finish("vector", block, rt)


COPY_OPS: tuple[type[nn.ConcatOp], type[nn.SplitOp]] = (nn.ConcatOp, nn.SplitOp)
COPY_ROW_LIMIT = 4096  # elements per UB row of a copy loop


def build_copy(lowering, op: nn.ConcatOp | nn.SplitOp) -> ac.KernelOp:
    """Concat / Split: per piece, a tile loop over the outer rows moving each row's slice of
    the concatenation axis with strided 2-d DataCopyPad (GM strides on the concatenated
    side), through UB (VECIN -> Muls(x, 1) -> VECOUT: exact, keeps -0.0 and NaN)."""
    axis = op.axis
    lowering.static_reason = "concat / split copy loops have compile-time row counts and offsets"
    block, gms = lowering._kernel_block()
    n_in = len(lowering.kop.inputs)
    if isinstance(op, nn.ConcatOp):
        pieces = [shape_of(v) for v in op.operands]
        whole = shape_of(op.results[0])
    else:
        pieces = [shape_of(v) for v in op.results]
        whole = shape_of(op.operands[0])
    outer = numel(whole[:axis])
    inner = numel(whole[axis + 1 :])
    total = whole[axis] * inner
    lengths = [p[axis] * inner for p in pieces]
    chunk = 0  # > 0: outer == 1, each piece copied as rows of `chunk` contiguous elements
    if max(lengths) > COPY_ROW_LIMIT:
        if outer != 1:
            raise Unsupported(f"{op.name} rows of {max(lengths)} elements exceed the UB")
        g = math.gcd(*lengths, total)
        chunk = max(c for c in range(1, min(g, COPY_ROW_LIMIT) + 1) if g % c == 0)
        if chunk < 8 and g > 8:
            raise Unsupported(f"{op.name}: no row split of {g} elements fits the UB")
    dp = (
        tl.round_up_int(chunk, tl.ALIGN)
        if chunk
        else max(tl.round_up_int(n, tl.ALIGN) for n in lengths)
    )
    qin = ac.QueueOp("VECIN", tl.BUFFER_NUM, 32)
    qin.properties["size"] = StringAttr("tile_rows")
    qout = ac.QueueOp("VECOUT", tl.BUFFER_NUM, 32)
    qout.properties["size"] = StringAttr("tile_rows")
    block.add_ops([qin, qout])
    off = 0
    for i, length in enumerate(lengths):
        rows, row_len = outer, length
        if isinstance(op, nn.ConcatOp):
            src = gms[value_index(op.operands[i])]
            dst = gms[n_in]
            strides = (length, total, 0, off)
        else:
            src = gms[value_index(op.operands[0])]
            dst = gms[n_in + i]
            strides = (total, length, off, 0)
        if chunk:
            rows, row_len = length // chunk, chunk
            strides = (chunk, chunk, strides[2], strides[3])
        off += length
        length = row_len
        cin = Block()
        a = ac.AllocTensorOp(qin.result, f32)
        cin.add_ops([a, ac.CopyInOp(a.result, src), ac.EnQueOp(qin.result, a.result), ac.YieldOp()])
        comp = Block()
        x = ac.DeQueOp(qin.result, f32)
        y = ac.AllocTensorOp(qout.result, f32)
        body = Block()
        xr, yr = ac.RowViewOp(x.result), ac.RowViewOp(y.result)
        body.add_ops(
            [xr, yr, ac.VecScalarOp("Muls", yr.result, xr.result, 1.0, count=length), ac.YieldOp()]
        )
        comp.add_ops(
            [
                x,
                y,
                ac.RowLoopOp(Region(body)),
                ac.EnQueOp(qout.result, y.result),
                ac.FreeTensorOp(qin.result, x.result),
                ac.YieldOp(),
            ]
        )
        cout = Block()
        r = ac.DeQueOp(qout.result, f32)
        cout.add_ops(
            [r, ac.CopyOutOp(dst, r.result), ac.FreeTensorOp(qout.result, r.result), ac.YieldOp()]
        )
        loop = ac.TileLoopOp("rows", rows, [Region(cin), Region(comp), Region(cout)])
        for key, val in zip(("row_length", "out_row_length"), (length, length)):
            loop.properties[key] = _i(val)
        for key, val in zip(
            ("in_row_stride", "out_row_stride", "in_offset", "out_offset"), strides
        ):
            loop.properties[key] = _i(val)
        block.add_op(loop)
    rows = outer if not chunk else max(n // chunk for n in lengths)
    sizes = {"rows": rows, "d": dp, "perRowOut": 0, "nloaded": 0}
    rt = lowering._tiling(tl.TilingKind.ROWS, sizes)
    tile = rt.field_values()["tileLength"]
    qin.properties["bytes"] = _i(tile * dp * 4)
    qout.properties["bytes"] = _i(tile * dp * 4)
    return lowering._finish("vector", block, rt)
