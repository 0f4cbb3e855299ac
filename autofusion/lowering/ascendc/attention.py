"""``nn.attention`` -> one streaming (flash-style) cube kernel per model op
(``ascendc.attention``; semantics on the op's docstring).

Work units are (batch entry, block of ``blockQ`` query rows); each core takes units
``blockIdx, blockIdx + blockNum, ...``. Per unit the keys are walked in blocks of ``blockT``
with an online softmax (running max, running sum, rescaled output accumulator in UB), so the
``[S, T]`` score matrix is never stored: the core's workspace slice holds one score block
(``wsPerCore`` elements, independent of S and T); each key block's ``p v`` product lands in
the unit's own output rows (free until the final ``acc / l`` overwrites them). Requires f32
q, k, v whose batch dims broadcast to the output's (k and v may be shared by heads) and a
float (additive) mask broadcasting to ``[*batch, S, T]``.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr
from xdsl.ir import Block, Region

from autofusion.dialects import ascendc as ac
from autofusion.dialects import nn
from autofusion.dialects.base import dense_ints, i64_array, shape_of, value_index
from autofusion.dialects.shapes import numel
from autofusion.lowering.ascendc import tiling as tl
from autofusion.lowering.ascendc.vector import Unsupported, bcast_strides


def build_attention(lowering, op: nn.AttentionOp) -> ac.KernelOp:
    qs, ks, vs = (tuple(shape_of(x)) for x in (op.q, op.k, op.v))
    batch = tuple(shape_of(op.out)[:-2])
    s_, d = qs[-2:]
    t_, e = vs[-2:]
    # per batch dim of the output, the element stride of q, k and v (0 where broadcast)
    operand_strides: list[int] = []
    for shape, rows, cols in ((qs, s_, d), (ks, t_, d), (vs, t_, e)):
        st = bcast_strides(shape, (*batch, rows, cols))
        if st is None:
            raise Unsupported(f"attention batch dims {qs}, {ks}, {vs} do not broadcast")
        operand_strides += st[:-2]
    lowering.static_reason = "attention's Matmul tilings are computed for compile-time S, T, D, E"
    sizes = {"batch": numel(batch), "S": s_, "T": t_, "D": d, "E": e}
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
    if (qs[:-2], ks[:-2], vs[:-2]) != (batch, batch, batch):
        props["batch_strides"] = i64_array(operand_strides)
    if op.nan_to_zero:
        props["nan_to_zero"] = IntegerAttr(1, 64)
    mask = []
    if op.mask is not None:
        ms = tuple(shape_of(op.mask))
        strides = bcast_strides(ms, (*batch, s_, t_))
        if strides is None:
            raise Unsupported(f"attention mask {ms} does not broadcast to the scores")
        mask = [gms[value_index(op.mask)]]
        props["mask_strides"] = i64_array(strides)
    bq, bt, ep = at["blockQ"], at["blockT"], at["rowStrideE"]
    queues = [
        ("VECIN", "score_block", bq * bt * 4),  # score block in
        ("VECOUT", "score_block", bq * bt * 4),  # p block out
        ("VECIN", "acc_block", bq * ep * 4),  # p v block in
    ]
    ops: list[ac.QueueOp | ac.TBufOp] = []
    for pos, size, nbytes in queues:
        q = ac.QueueOp(pos, tl.BUFFER_NUM, nbytes)
        q.properties["size"] = StringAttr(size)
        ops.append(q)
    bufs = [
        ("acc_block", bq * ep * 4),  # output accumulator
        ("query_stats", 3 * tl.round_up_int(bq, tl.ALIGN) * 4),  # m, l, alpha per row
        ("key_row", bt * 4),  # mask row
        ("key_row", bt * 4),  # reduction work row
        ("block", 32),  # scalar
    ]
    for size, nbytes in bufs:
        b = ac.TBufOp(nbytes)
        b.properties["size"] = StringAttr(size)
        ops.append(b)
    block.add_ops(ops)
    body = Block()
    body.add_ops([ac.AttentionOp.build(operands=[*operands, mask], properties=props), ac.YieldOp()])
    block.add_op(ac.WorkLoopOp(at["units"], Region(body)))
    return lowering._finish("cube", block, tiling)


def _mask_lines(p, op: ac.AttentionOp, s_: int, t_: int) -> list[str]:
    """Load the mask's values for this row's key block into ``maskRow`` and add them: one
    ``DataCopyPad`` when the mask is contiguous along the keys, else a scalar gather."""
    assert op.mask is not None and op.mask_strides is not None  # set together (see above)
    shape = [*dense_ints(op.batch_shape), s_]
    strides = dense_ints(op.mask_strides)
    # offset of the mask row of flat score row i = b * S + q0 + r in [*batch, S]
    terms = []
    ostr = 1
    for dd in range(len(shape) - 1, -1, -1):
        if strides[dd]:
            idx = f"(i / {ostr}u)" if ostr != 1 else "i"
            terms.append(f"({idx} % {shape[dd]}u) * {strides[dd]}u")
        ostr *= shape[dd]
    mask = p.n[op.mask]
    lines = [f"                    const uint32_t i = b * {s_}u + q0 + r;"] if terms else []
    lines.append(
        f"                    const uint64_t mrow = {' + '.join(reversed(terms)) or '0u'};"
    )
    if strides[-1] == 1:
        lines.append(f"                    AfCopyIn(maskRow, {mask}[mrow + j0], cols);")
    else:
        lines += [
            "                    AscendC::PipeBarrier<PIPE_ALL>();",
            "                    for (uint32_t j = 0; j < cols; j++) {  // gather the mask values",
            f"                        maskRow.SetValue(j, {mask}.GetValue(mrow + "
            f"static_cast<uint64_t>(j0 + j) * {strides[-1]}u));",
            "                    }",
        ]
    lines += [
        "                    AscendC::PipeBarrier<PIPE_ALL>();",
        "                    AscendC::Add(yr, yr, maskRow, cols);",
    ]
    del t_
    return lines


def _operand_offsets(op: ac.AttentionOp, per_unit: tuple[int, ...]) -> list[str]:
    """C++ offsets of batch entry ``b``'s q, k and v matrices: ``b * stride``, or with
    ``batch_strides`` (broadcast batch dims) the sum over the batch dims of
    ``(b / inner) % size * stride``."""
    if op.batch_strides is None:
        return [f"b * {st}u" for st in per_unit]
    shape = dense_ints(op.batch_shape)
    strides = dense_ints(op.batch_strides)
    nb = len(shape)
    out = []
    for j in range(3):
        terms = []
        inner = 1
        for dd in range(nb - 1, -1, -1):
            st = strides[j * nb + dd]
            if st:
                idx = f"(b / {inner}u)" if inner != 1 else "b"
                terms.append(f"({idx} % {shape[dd]}u) * {st}u")
            inner *= shape[dd]
        out.append("(" + " + ".join(reversed(terms)) + ")" if terms else "0u")
    return out


def print_attention(p, op: ac.AttentionOp) -> list[str]:
    """The unit body (inside the work loop) of a streaming attention kernel."""
    s_, t_, d, e = dense_ints(op.sizes)
    qst, kst, vst, ost = dense_ints(op.strides)
    n = p.n
    scale = float(op.scale.value.data)
    ntz = op.nan_to_zero is not None and op.nan_to_zero.value.data == 1
    qoff, koff, voff = _operand_offsets(op, (qst, kst, vst))
    queues = [name for v, name in n.names.items() if isinstance(v.type, ac.QueueType)]
    qin, qout, qpv = queues
    bufs = [name for v, name in n.names.items() if isinstance(v.type, ac.TBufType)]
    accb, statb, mrowb, workb, sbuf = bufs
    lines = [
        "            const uint32_t b = u / td.qBlocks;",
        "            const uint32_t q0 = (u % td.qBlocks) * td.blockQ;",
        f"            const uint32_t rows = {s_}u - q0 < td.blockQ ? {s_}u - q0 : td.blockQ;",
        "            const uint32_t statStride = (td.blockQ + 7u) / 8u * 8u;",
        "            // this core's workspace: one score block",
        "            AscendC::GlobalTensor<float> scores = "
        f"{n[op.workspace]}[static_cast<uint64_t>(AscendC::GetBlockIdx()) * td.wsPerCore];",
        "            // the unit's output rows hold each key block's p v until the final write",
        f"            AscendC::GlobalTensor<float> outRows = {n[op.out]}[b * {ost}u + q0 * {e}u];",
        f"            AscendC::LocalTensor<float> acc = {accb}.Get<float>();",
        f"            AscendC::LocalTensor<float> stats = {statb}.Get<float>();",
        "            AscendC::LocalTensor<float> rowMax = stats;",
        "            AscendC::LocalTensor<float> rowSum = stats[statStride];",
        "            AscendC::LocalTensor<float> alpha = stats[2u * statStride];",
        f"            AscendC::LocalTensor<float> maskRow = {mrowb}.Get<float>();",
        f"            AscendC::LocalTensor<float> work = {workb}.Get<float>();",
        f"            AscendC::LocalTensor<float> sc = {sbuf}.Get<float>();",
        "            (void)maskRow;",
        "            AscendC::Duplicate(acc, 0.0f, static_cast<int32_t>(rows * td.rowStrideE));",
        "            AscendC::Duplicate(rowMax, -INFINITY, static_cast<int32_t>(rows));",
        "            AscendC::Duplicate(rowSum, 0.0f, static_cast<int32_t>(rows));",
        "            AscendC::PipeBarrier<PIPE_ALL>();",
        f"            for (uint32_t j0 = 0; j0 < {t_}u; j0 += td.blockT) {{",
        f"                const uint32_t cols = {t_}u - j0 < td.blockT ? {t_}u - j0 : td.blockT;",
        "                // 1. score block = q k^T (Matmul API, B transposed)",
        f"                mm0.SetTensorA({n[op.q]}[{qoff} + q0 * {d}u], false);",
        f"                mm0.SetTensorB({n[op.k]}[{koff} + j0 * {d}u], true);",
        f"                mm0.SetTail(static_cast<int>(rows), static_cast<int>(cols), {d});",
        "                mm0.IterateAll(scores);",
        "                AscendC::PipeBarrier<PIPE_ALL>();",
        "                // 2. scale, mask, online softmax of each row of the block in UB",
        f"                AscendC::LocalTensor<float> xin = {qin}.AllocTensor<float>();",
        "                AfCopyRowsStridedIn(xin, scores, rows, cols, td.blockT, td.blockT);",
        f"                {qin}.EnQue(xin);",
        f"                AscendC::LocalTensor<float> x = {qin}.DeQue<float>();",
        f"                AscendC::LocalTensor<float> y = {qout}.AllocTensor<float>();",
        "                for (uint32_t r = 0; r < rows; r++) {",
        "                    AscendC::LocalTensor<float> xr = x[r * td.blockT];",
        "                    AscendC::LocalTensor<float> yr = y[r * td.blockT];",
        f"                    AscendC::Muls(yr, xr, {scale!r}f, static_cast<int32_t>(cols));",
    ]
    if op.mask is not None:
        lines += _mask_lines(p, op, s_, t_)
    lines += [
        "                    AscendC::ReduceMax(sc, yr, work, static_cast<int32_t>(cols));",
        "                    AscendC::PipeBarrier<PIPE_ALL>();",
        "                    const float blockMax = sc.GetValue(0);",
        "                    const float mOld = rowMax.GetValue(r);",
        "                    // NaN-propagating max of the running and the block maximum",
        "                    const float mNew = (mOld != mOld || blockMax != blockMax) ? "
        "mOld + blockMax : (blockMax > mOld ? blockMax : mOld);",
        "                    if (mNew == -INFINITY) {  // every score so far is -inf: p = 0",
        "                        AscendC::Duplicate(yr, 0.0f, static_cast<int32_t>(cols));",
        "                        alpha.SetValue(r, 1.0f);",
        "                        continue;",
        "                    }",
        "                    // alpha = exp(mOld - mNew) rescales what the row has so far "
        "(0 at the first finite block)",
        "                    AscendC::Duplicate(sc, mOld - mNew, 1);",
        "                    AscendC::Exp(sc, sc, 1);",
        "                    AscendC::PipeBarrier<PIPE_ALL>();",
        "                    const float a = sc.GetValue(0);",
        "                    AscendC::Adds(yr, yr, -mNew, static_cast<int32_t>(cols));",
        "                    AscendC::Exp(yr, yr, static_cast<int32_t>(cols));",
        "                    AscendC::ReduceSum(sc, yr, work, static_cast<int32_t>(cols));",
        "                    AscendC::PipeBarrier<PIPE_ALL>();",
        "                    rowSum.SetValue(r, rowSum.GetValue(r) * a + sc.GetValue(0));",
        "                    rowMax.SetValue(r, mNew);",
        "                    alpha.SetValue(r, a);",
        "                }",
        f"                {qout}.EnQue(y);",
        f"                {qin}.FreeTensor(x);",
        f"                AscendC::LocalTensor<float> yo = {qout}.DeQue<float>();",
        "                AfCopyRowsStridedOut(scores, yo, rows, cols, td.blockT, td.blockT);",
        f"                {qout}.FreeTensor(yo);",
        "                AscendC::PipeBarrier<PIPE_ALL>();",
        "                // 3. p v block (Matmul API), then acc = acc * alpha + p v",
        "                mm1.SetTensorA(scores, false);",
        f"                mm1.SetTensorB({n[op.v]}[{voff} + j0 * {e}u], false);",
        f"                mm1.SetTail(static_cast<int>(rows), {e}, static_cast<int>(cols));",
        "                mm1.IterateAll(outRows);",
        "                AscendC::PipeBarrier<PIPE_ALL>();",
        f"                AscendC::LocalTensor<float> pin = {qpv}.AllocTensor<float>();",
        f"                AfCopyRowsStridedIn(pin, outRows, rows, {e}u, {e}u, td.rowStrideE);",
        f"                {qpv}.EnQue(pin);",
        f"                AscendC::LocalTensor<float> pvb = {qpv}.DeQue<float>();",
        "                for (uint32_t r = 0; r < rows; r++) {",
        "                    AscendC::LocalTensor<float> ar = acc[r * td.rowStrideE];",
        f"                    AscendC::Muls(ar, ar, alpha.GetValue(r), {e});",
        f"                    AscendC::Add(ar, ar, pvb[r * td.rowStrideE], {e});",
        "                }",
        f"                {qpv}.FreeTensor(pvb);",
        "            }",
        "            // 4. out = acc / l per row",
        "            for (uint32_t r = 0; r < rows; r++) {",
        "                AscendC::LocalTensor<float> ar = acc[r * td.rowStrideE];",
        "                const float l = rowSum.GetValue(r);",
    ]
    if ntz:
        lines += [
            "                const float m = rowMax.GetValue(r);",
            "                if (!(l > 0.0f) || m != m) {  // NaN probabilities -> 0 (nan_to_zero)",
            f"                    AscendC::Duplicate(ar, 0.0f, {e});",
            "                    continue;",
            "                }",
        ]
    else:
        lines += [
            "                if (!(l > 0.0f)) {  // every score -inf: 0/0, or NaN scores",
            f"                    AscendC::Duplicate(ar, NAN, {e});",
            "                    continue;",
            "                }",
        ]
    lines += [
        "                AscendC::Duplicate(sc, l, 1);",
        "                AscendC::Reciprocal(sc, sc, 1);",
        "                AscendC::PipeBarrier<PIPE_ALL>();",
        f"                AscendC::Muls(ar, ar, sc.GetValue(0), {e});",
        "            }",
        "            AscendC::PipeBarrier<PIPE_ALL>();",
        f"            AfCopyRowsStridedOut(outRows, acc, rows, {e}u, {e}u, td.rowStrideE);",
        "            AscendC::PipeBarrier<PIPE_ALL>();",
    ]
    return lines


def attention_matmul_tiling(t: dict[str, int]) -> list[str]:
    """Host code filling the two Matmul API tilings (``td->mm0``, ``td->mm1``) of an attention
    kernel with tiling values ``t``; ``platform`` is in scope. Both are per block: ``mm0``
    ``[blockQ x D] x [D x blockT]`` into the score block (row stride ``blockT``), ``mm1``
    ``[blockQ x blockT] x [blockT x E]`` into the unit's output rows; the kernel's ``SetTail``
    shrinks them for the last query and key blocks."""
    mm = []
    for i, (m, n_, k, trans_b) in enumerate(
        (
            ("td->blockQ", "td->blockT", "td->D", True),
            ("td->blockQ", "td->E", "td->blockT", False),
        )
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
    del t
    return mm


__all__ = ["attention_matmul_tiling", "build_attention", "print_attention"]
