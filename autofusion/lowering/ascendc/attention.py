"""``nn.attention`` -> one cube kernel per model op: two Matmul API calls around a row
softmax in UB (``ascendc.attention``; semantics on the op's docstring).

Work units are batch entries (``prod(batch)``, e.g. batch x heads); each core takes units
``blockIdx, blockIdx + blockNum, ...`` and keeps the unit's ``[S, T]`` scores in its own
slice of the user workspace. Requires q, k, v with equal batch shapes, f32, and a float
(additive) mask broadcasting to ``[*batch, S, T]``.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, f32
from xdsl.ir import Block, Region

from autofusion.dialects import ascendc as ac
from autofusion.dialects import nn
from autofusion.dialects.base import dense_ints, i64_array, shape_of, value_index
from autofusion.dialects.shapes import numel
from autofusion.lowering.ascendc import tiling as tl
from autofusion.lowering.ascendc.vector import Unsupported, bcast_strides


def build_attention(lowering, op: nn.AttentionOp) -> ac.KernelOp:
    if op.nan_to_zero:
        raise Unsupported("attention with nan_to_zero (the exporters' IsNaN guard)")
    qs, ks, vs = shape_of(op.q), shape_of(op.k), shape_of(op.v)
    if not (qs[:-2] == ks[:-2] == vs[:-2]):
        raise Unsupported(f"attention with broadcast batch dims {qs}, {ks}, {vs}")
    batch = tuple(qs[:-2])
    s_, d = qs[-2:]
    t_, e = vs[-2:]
    units = numel(batch)
    lowering.static_reason = "attention's Matmul tilings are computed for compile-time S, T, D, E"
    sizes = {"units": units, "S": s_, "T": t_, "D": d, "E": e}
    tiling = lowering._tiling(tl.TilingKind.ATTENTION, sizes)
    at = tiling.field_values()
    block, gms = lowering._kernel_block(at["workspaceElems"])
    n_in = len(lowering.kop.inputs)
    operands = [
        gms[value_index(op.q)],
        gms[value_index(op.k)],
        gms[value_index(op.v)],
        gms[n_in],
        gms[n_in + 1],
    ]
    props = {
        "sizes": i64_array([s_, t_, d, e]),
        "strides": i64_array([s_ * d, t_ * d, t_ * e, s_ * e]),
        "scale": FloatAttr(op.scale, 64),
        "batch_shape": i64_array(batch),
    }
    mask = []
    if op.mask is not None:
        ms = tuple(shape_of(op.mask))
        strides = bcast_strides(ms, (*batch, s_, t_))
        if strides is None:
            raise Unsupported(f"attention mask {ms} does not broadcast to the scores")
        mask = [gms[value_index(op.mask)]]
        props["mask_strides"] = i64_array(strides)
    qin = ac.QueueOp("VECIN", tl.BUFFER_NUM, at["tileLength"] * at["rowStride"] * 4)
    qin.properties["size"] = StringAttr("tile_rows")
    qout = ac.QueueOp("VECOUT", tl.BUFFER_NUM, at["tileLength"] * at["rowStride"] * 4)
    qout.properties["size"] = StringAttr("tile_rows")
    bufs = []
    for size in ("row", "row", "block"):
        b = ac.TBufOp(32 if size == "block" else at["rowStride"] * 4)
        b.properties["size"] = StringAttr(size)
        bufs.append(b)
    block.add_ops([qin, qout, *bufs])
    body = Block()
    body.add_ops([ac.AttentionOp.build(operands=[*operands, mask], properties=props), ac.YieldOp()])
    block.add_op(ac.WorkLoopOp(units, Region(body)))
    return lowering._finish("cube", block, tiling)


def print_attention(p, op: ac.AttentionOp) -> list[str]:
    """The unit body (inside the work loop) of an attention kernel."""
    s_, t_, d, e = dense_ints(op.sizes)
    qst, kst, vst, ost = dense_ints(op.strides)
    n = p.n
    scale = float(op.scale.value.data)
    queues = [name for v, name in n.names.items() if isinstance(v.type, ac.QueueType)]
    qin, qout = queues[0], queues[1]
    bufs = [name for v, name in n.names.items() if isinstance(v.type, ac.TBufType)]
    mrow, wrow, sbuf = bufs
    lines = [
        "            const uint32_t b = u;",
        "            AscendC::GlobalTensor<float> scores = "
        f"{n[op.workspace]}[static_cast<uint64_t>(AscendC::GetBlockIdx()) * {s_ * t_}u];",
        "            // 1. scores = q k^T (Matmul API, B transposed)",
        f"            mm0.SetTensorA({n[op.q]}[b * {qst}u], false);",
        f"            mm0.SetTensorB({n[op.k]}[b * {kst}u], true);",
        "            mm0.IterateAll(scores);",
        "            AscendC::PipeBarrier<PIPE_ALL>();",
        "            // 2. scale, mask, softmax over each score row, in UB tiles of whole rows",
        f"            for (uint32_t r0 = 0; r0 < {s_}u; r0 += td.tileLength) {{",
        f"                const uint32_t len = {s_}u - r0 < td.tileLength ? {s_}u - r0 : "
        "td.tileLength;",
        f"                AscendC::LocalTensor<float> xin = {qin}.AllocTensor<float>();",
        f"                AfCopyRowsIn(xin, scores[r0 * {t_}u], len, {t_}u);",
        f"                {qin}.EnQue(xin);",
        f"                AscendC::LocalTensor<float> x = {qin}.DeQue<float>();",
        f"                AscendC::LocalTensor<float> y = {qout}.AllocTensor<float>();",
        f"                AscendC::LocalTensor<float> maskRow = {mrow}.Get<float>();",
        f"                AscendC::LocalTensor<float> work = {wrow}.Get<float>();",
        f"                AscendC::LocalTensor<float> sc = {sbuf}.Get<float>();",
        "                (void)maskRow;",
        "                for (uint32_t r = 0; r < len; r++) {",
        "                    AscendC::LocalTensor<float> xr = x[r * td.rowStride];",
        "                    AscendC::LocalTensor<float> yr = y[r * td.rowStride];",
        f"                    AscendC::Muls(yr, xr, {scale!r}f, {t_});",
    ]
    if op.mask is not None:
        shape = [*dense_ints(op.batch_shape), s_, t_]
        assert op.mask_strides is not None  # set together with the mask (see above)
        strides = dense_ints(op.mask_strides)
        ostr = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            ostr[i] = ostr[i + 1] * shape[i + 1]
        terms = []
        for dd, st in enumerate(strides):
            if st:
                idx = f"(i / {ostr[dd]})" if ostr[dd] != 1 else "i"
                terms.append(f"({idx} % {shape[dd]}) * {st}")
        lines += [
            "                    AscendC::PipeBarrier<PIPE_ALL>();",
            f"                    for (uint32_t j = 0; j < {t_}u; j++) {{  // gather the mask row",
            f"                        const int64_t i = (static_cast<int64_t>(b) * {s_} + r0 + r) "
            f"* {t_} + j;",
            "                        maskRow.SetValue(j, "
            f"{n[op.mask]}.GetValue(static_cast<uint64_t>({' + '.join(terms) or '0'})));",
            "                    }",
            "                    AscendC::PipeBarrier<PIPE_ALL>();",
            f"                    AscendC::Add(yr, yr, maskRow, {t_});",
        ]
    lines += [
        f"                    AscendC::ReduceMax(sc, yr, work, {t_});",
        "                    AscendC::PipeBarrier<PIPE_ALL>();",
        f"                    AscendC::Adds(yr, yr, -sc.GetValue(0), {t_});",
        f"                    AscendC::Exp(yr, yr, {t_});",
        f"                    AscendC::ReduceSum(sc, yr, work, {t_});",
        "                    AscendC::Reciprocal(sc, sc, 1);",
        "                    AscendC::PipeBarrier<PIPE_ALL>();",
        f"                    AscendC::Muls(yr, yr, sc.GetValue(0), {t_});",
        "                }",
        f"                {qout}.EnQue(y);",
        f"                {qin}.FreeTensor(x);",
        f"                AscendC::LocalTensor<float> yo = {qout}.DeQue<float>();",
        f"                AfCopyRowsOut(scores[r0 * {t_}u], yo, len, {t_}u);",
        f"                {qout}.FreeTensor(yo);",
        "            }",
        "            AscendC::PipeBarrier<PIPE_ALL>();",
        "            // 3. out = softmax(scores) v",
        "            mm1.SetTensorA(scores, false);",
        f"            mm1.SetTensorB({n[op.v]}[b * {vst}u], false);",
        f"            mm1.IterateAll({n[op.out]}[b * {ost}u]);",
    ]
    del d, e
    return lines


def attention_matmul_tiling(t: dict[str, int]) -> list[str]:
    """Host code filling the two Matmul API tilings (``td->mm0``, ``td->mm1``) of an attention
    kernel with tiling values ``t``; ``platform`` is in scope."""
    mm = []
    for i, (m, n_, k, trans_b) in enumerate(
        ((t["S"], t["T"], t["D"], True), (t["S"], t["E"], t["T"], False))
    ):
        mm += [
            "    {",
            "        matmul_tiling::MultiCoreMatmulTiling mmTiling(*platform);"
            f"  // mm{i}: [{m} x {k}] x [{k} x {n_}]",
            "        mmTiling.SetDim(1);",
            "        mmTiling.SetAType(matmul_tiling::TPosition::GM, "
            "matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);",
            "        mmTiling.SetBType(matmul_tiling::TPosition::GM, "
            "matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT"
            + (", true);" if trans_b else ");"),
            "        mmTiling.SetCType(matmul_tiling::TPosition::GM, "
            "matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);",
            f"        mmTiling.SetOrgShape({m}, {n_}, {k});",
            f"        mmTiling.SetShape({m}, {n_}, {k});",
            "        mmTiling.EnableBias(false);",
            "        mmTiling.SetBufferSpace(-1, -1, -1);",
            f"        if (mmTiling.GetTiling(td->mm{i}) == -1) return 0;",
            "    }",
        ]
    return mm


__all__ = ["IntegerAttr", "attention_matmul_tiling", "build_attention", "f32", "print_attention"]
