"""Attention (opset 23 to 25) as a decomposition into ``nn`` matmuls, elementwise ops and a
softmax, so the interpreter and every backend get it without an op of their own.

For 3-D inputs ``(batch, seq, heads * head_size)`` Q, K and V are split into
``q_num_heads`` / ``kv_num_heads`` heads first (reshape + transpose) and the output is merged
back. ``past_key`` / ``past_value`` are concatenated in front of K / V along the sequence axis
and are the ``present_*`` outputs. With fewer kv heads than q heads (grouped-query attention)
each kv head is repeated for its group of q heads (an expand of an inserted axis).

``scores = softcap(Q @ K^T * scale) + bias`` where the bias is the additive float mask, or
the bool mask as ``0 / -inf`` (a mask shorter than the kv sequence is padded with ``-inf``),
plus the ``-inf`` upper triangle of ``is_causal`` (aligned at the past length) and opset 25's
sliding window (a query at absolute position ``p = past + i`` sees key ``j`` only if
``p - left_window_size <= j <= p + right_window_size``; ``-1`` leaves a side unbounded), both
one constant ``0 / -inf`` matrix. Rows whose bias is ``-inf`` everywhere give zero
probabilities (ONNX's fully-masked-row rule), not the NaN of a plain softmax.
The optional 4th output follows ``qk_matmul_output_mode``: 0 and 1 the (softcapped) scores
before the bias, 2 with the bias, 3 the probabilities.

Refused: non-float inputs, ``softmax_precision`` other than the input type, and opset 24's
``nonpad_kv_seqlen`` input.
"""

from __future__ import annotations

import numpy as np

from autofusion.dialects import dtypes, nn, shapes
from autofusion.dialects.base import bool_attr, i64_array, int_attr
from autofusion.frontend.context import Const, NodeCtx, Value, value_elem, value_shape
from autofusion.frontend.convert_shape import reshape_to
from autofusion.frontend.registry import converter


def _heads(ctx: NodeCtx, x: Value, heads: int, what: str) -> Value:
    """``(B, S, heads * D) -> (B, heads, S, D)``."""
    b, s, hidden = value_shape(x)
    if heads <= 0 or hidden % heads:
        raise ctx.error(f"{what} hidden size {hidden} is not a multiple of {heads} heads")
    d = hidden // heads
    x4 = reshape_to(ctx, x, [b, s, heads, d])
    perm = i64_array([0, 2, 1, 3])
    return ctx.emit1(nn.TransposeOp, [x4], [b, heads, s, d], value_elem(x), {"perm": perm})


def _concat_seq(ctx: NodeCtx, past: Value, cur: Value, what: str) -> Value:
    ps, cs = value_shape(past), value_shape(cur)
    if len(ps) != 4 or ps[:2] != cs[:2] or ps[3] != cs[3]:
        raise ctx.error(f"{what} shape {list(ps)} does not match the new {what[5:]} {list(cs)}")
    out = [cs[0], cs[1], ps[2] + cs[2], cs[3]]
    return ctx.emit1(nn.ConcatOp, [[past, cur]], out, value_elem(cur), {"axis": int_attr(2)})


def _bias(
    ctx: NodeCtx,
    mask: Value | None,
    causal: bool,
    window: tuple[int, int],
    sq: int,
    skv: int,
    past: int,
    elem,
) -> Value | None:
    """The additive bias of the scores (broadcastable to ``(B, H, sq, skv)``), None if none."""
    npd = dtypes.to_numpy_dtype(elem)
    bias: Value | None = None
    if mask is not None:
        ms = list(value_shape(mask))
        melem = value_elem(mask)
        is_bool = melem == dtypes.i1
        if not is_bool and melem != elem:
            raise ctx.error(f"attn_mask must be bool or {elem}, got {melem}")
        if not ms or ms[-1] > skv:
            raise ctx.error(f"attn_mask shape {ms} does not fit the kv sequence length {skv}")
        if ms[-1] < skv:
            pad_shape = [*ms[:-1], skv - ms[-1]]
            fill = np.zeros(pad_shape, np.bool_) if is_bool else np.full(pad_shape, -np.inf, npd)
            ms = [*ms[:-1], skv]
            mask = ctx.emit1(nn.ConcatOp, [[mask, ctx.const(fill)]], ms, melem,
                             {"axis": int_attr(len(ms) - 1)})  # fmt: skip
        if is_bool:
            zero, ninf = ctx.const(np.array(0, npd)), ctx.const(np.array(-np.inf, npd))
            mask = ctx.emit1(nn.WhereOp, [mask, zero, ninf], ms, elem)
        bias = mask
    left, right = window
    if causal or left >= 0 or right >= 0:
        # diff = absolute query position - key position (queries sit after the past).
        diff = np.arange(sq)[:, None] + past - np.arange(skv)[None, :]
        allowed = np.ones((sq, skv), np.bool_)
        if causal:
            allowed &= diff >= 0
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
        tri = ctx.const(np.where(allowed, 0, -np.inf).astype(npd))
        if bias is None:
            bias = tri
        else:
            try:
                out = shapes.broadcast(value_shape(bias), (sq, skv))
            except ValueError:
                raise ctx.error(f"attn_mask shape {list(value_shape(bias))} does not "
                                f"broadcast to ({sq}, {skv})") from None  # fmt: skip
            bias = ctx.emit1(nn.AddOp, [bias, tri], out, elem)
    return bias


@converter("Attention", version=25)
def _attention(ctx: NodeCtx) -> list[Value]:
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    elem = value_elem(q)
    if not dtypes.is_float(elem):
        raise ctx.error(f"Q must be a floating-point tensor, got {elem}")
    for i, name in ((1, "K"), (2, "V")):
        if ctx.elem(i) != elem:
            raise ctx.error(f"{name} must have the element type of Q ({elem}), got {ctx.elem(i)}")
    if ctx.opt_input(6) is not None:
        raise ctx.error("input nonpad_kv_seqlen is not supported")
    sp = ctx.attr("softmax_precision", None)
    if sp is not None and dtypes.from_onnx_elem(int(sp)) != elem:
        raise ctx.error(f"softmax_precision {sp} differs from the input type {elem}; "
                        "only the input type is supported")  # fmt: skip
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        raise ctx.error(f"qk_matmul_output_mode {mode} is not 0, 1, 2 or 3")
    rank = len(value_shape(q))
    if rank != len(value_shape(k)) or rank != len(value_shape(v)) or rank not in (3, 4):
        raise ctx.error("Q, K and V must all be 3-D or all be 4-D, got shapes "
                        f"{[list(ctx.shape(i)) for i in range(3)]}")  # fmt: skip
    if rank == 3:
        if not ctx.has_attr("q_num_heads") or not ctx.has_attr("kv_num_heads"):
            raise ctx.error("3-D inputs need the q_num_heads and kv_num_heads attributes")
        hq, hkv = int(ctx.attr("q_num_heads")), int(ctx.attr("kv_num_heads"))
        q = _heads(ctx, q, hq, "Q")
        k = _heads(ctx, k, hkv, "K")
        v = _heads(ctx, v, hkv, "V")
    past_k, past_v = ctx.opt_input(4), ctx.opt_input(5)
    if (past_k is None) != (past_v is None):
        raise ctx.error("past_key and past_value must be given together")
    past = 0
    if past_k is not None and past_v is not None:
        past = value_shape(past_k)[2] if len(value_shape(past_k)) == 4 else 0
        k = _concat_seq(ctx, past_k, k, "past_key")
        v = _concat_seq(ctx, past_v, v, "past_value")
    present_k, present_v = k, v
    b, hq, sq, d = value_shape(q)
    bk, hkv, skv, dk = value_shape(k)
    bv, hv, sv, dv = value_shape(v)
    if bk != b or bv != b or dk != d or hv != hkv or sv != skv:
        raise ctx.error(f"Q {list(value_shape(q))}, K {list(value_shape(k))} and "
                        f"V {list(value_shape(v))} (as heads) do not agree")  # fmt: skip
    if hkv != hq:
        if hkv <= 0 or hq % hkv:
            raise ctx.error(f"q heads {hq} are not a multiple of kv heads {hkv}")
        reps = hq // hkv

        def repeat(x: Value, dd: int) -> Value:
            x5 = reshape_to(ctx, x, [b, hkv, 1, skv, dd])
            x5 = ctx.emit1(nn.ExpandOp, [x5], [b, hkv, reps, skv, dd], elem)
            return reshape_to(ctx, x5, [b, hq, skv, dd])

        k, v = repeat(k, d), repeat(v, dv)
    npd = dtypes.to_numpy_dtype(elem)
    scale = ctx.attr("scale", None)
    scale = 1.0 / np.sqrt(d) if scale is None else float(scale)
    kt = ctx.emit1(nn.TransposeOp, [k], [b, hq, d, skv], elem, {"perm": i64_array([0, 1, 3, 2])})
    st = [b, hq, sq, skv]
    qk = ctx.emit1(nn.MatMulOp, [q, kt], st, elem)
    qk = ctx.emit1(nn.MulOp, [qk, ctx.const(np.array(scale, npd))], st, elem)
    softcap = float(ctx.attr("softcap", 0.0))
    if softcap > 0:
        cap = ctx.const(np.array(softcap, npd))
        t = ctx.emit1(nn.TanhOp, [ctx.emit1(nn.DivOp, [qk, cap], st, elem)], st, elem)
        qk = ctx.emit1(nn.MulOp, [t, cap], st, elem)
    causal = bool(int(ctx.attr("is_causal", 0)))
    window = (int(ctx.attr("left_window_size", -1)), int(ctx.attr("right_window_size", -1)))
    bias = _bias(ctx, ctx.opt_input(3), causal, window, sq, skv, past, elem)
    scores = qk
    if bias is not None:
        try:
            if shapes.broadcast(value_shape(bias), st) != tuple(st):
                raise ValueError
        except ValueError:
            raise ctx.error(f"attn_mask shape {list(value_shape(bias))} does not broadcast "
                            f"to the scores {st}") from None  # fmt: skip
        scores = ctx.emit1(nn.AddOp, [qk, bias], st, elem)
    probs = ctx.emit1(nn.SoftmaxOp, [scores], st, elem, {"axis": int_attr(3)})
    if bias is not None:
        # Fully-masked rows (bias -inf everywhere) get zero probabilities, not NaN.
        bs = value_shape(bias)
        if isinstance(bias, Const):
            dead = np.isneginf(np.max(bias.array, axis=-1, keepdims=True))
            row_dead: Value | None = ctx.const(dead) if dead.any() else None
        else:
            rs = (*bs[:-1], 1)
            props = {"axes": i64_array([len(bs) - 1]), "keepdims": bool_attr(True)}
            mx = ctx.emit1(nn.ReduceMaxOp, [bias], rs, elem, props)
            ninf = ctx.const(np.array(-np.inf, npd))
            row_dead = ctx.emit1(nn.EqualOp, [mx, ninf], rs, dtypes.i1)
        if row_dead is not None:
            zero = ctx.const(np.array(0, npd))
            probs = ctx.emit1(nn.WhereOp, [row_dead, zero, probs], st, elem)
    out = ctx.emit1(nn.MatMulOp, [probs, v], [b, hq, sq, dv], elem)
    if rank == 3:
        perm = i64_array([0, 2, 1, 3])
        out = ctx.emit1(nn.TransposeOp, [out], [b, sq, hq, dv], elem, {"perm": perm})
        out = reshape_to(ctx, out, [b, sq, hq * dv])
    qk_out = {0: qk, 1: qk, 2: scores, 3: probs}[mode]
    return [out, present_k, present_v, qk_out]
