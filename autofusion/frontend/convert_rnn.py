"""Converters for the recurrent ops LSTM, GRU and RNN: expanded at import time into ``nn`` ops.

The input projection ``X · W^T + (Wb + Rb)`` of every time step and every direction is one
MatMul over the whole sequence (``[seq*batch, input] x [input, dirs*gates*hidden]``); the
recurrence is unrolled per step (the sequence length is static) into a small
``h · R^T`` MatMul plus elementwise gate ops, which the ordinary fusion passes fuse. So the
interpreter, C and Ascend C need no kernel of their own.

Limits: W, R, B and P must be constants (exporters write initializers); ``sequence_lens``
must be a constant, and lengths shorter than the sequence are supported for the forward
direction only; at most :data:`MAX_STEPS` steps are unrolled. Activations: Relu, Tanh,
Sigmoid, Affine, LeakyRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import helper

from autofusion.dialects import dtypes
from autofusion.frontend.context import Const, NodeCtx, Value, value_elem, value_shape
from autofusion.frontend.convert_shape import reshape_to, slice_value
from autofusion.frontend.registry import CONVERTERS, FOLDERS, SEMANTICS_OPSET, converter

#: Longest sequence the importer unrolls (each step becomes a handful of ops).
MAX_STEPS = 512

#: ``name -> (default alpha, default beta)``; None: the activation takes no such parameter.
ACTIVATIONS: dict[str, tuple[float | None, float | None]] = {
    "relu": (None, None),
    "tanh": (None, None),
    "sigmoid": (None, None),
    "affine": (1.0, 0.0),
    "leakyrelu": (0.01, None),
    "scaledtanh": (1.0, 1.0),
    "hardsigmoid": (0.2, 0.5),
    "elu": (1.0, None),
    "softsign": (None, None),
    "softplus": (None, None),
}

DEFAULT_ACTIVATIONS = {
    "LSTM": ["Sigmoid", "Tanh", "Tanh"],
    "GRU": ["Sigmoid", "Tanh"],
    "RNN": ["Tanh"],
}
N_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _op(ctx: NodeCtx, op_type: str, inputs: Sequence[Value], **attrs: Any) -> Value:
    """One ONNX ``op_type`` node through its registered converter (folded when all constant)."""
    node = helper.make_node(op_type, [f"in{k}" for k in range(len(inputs))], ["out"], **attrs)
    sub = NodeCtx(
        node=node,
        origin=ctx.origin,
        opset=SEMANTICS_OPSET,
        inputs=list(inputs),
        emitter=ctx.emitter,
        filename=ctx.filename,
        attrs=dict(attrs),
        n_outputs_used=[True],
    )
    if all(isinstance(v, Const) for v in inputs) and op_type in FOLDERS:
        return ctx.const(FOLDERS[op_type](sub)[0])
    out = CONVERTERS[op_type](sub)[0]
    assert out is not None
    return out


def _scalar(ctx: NodeCtx, v: float) -> Const:
    return ctx.const(np.array(v, dtype=np.float32))


@dataclass
class _Act:
    kind: str
    alpha: float | None
    beta: float | None

    def apply(self, ctx: NodeCtx, x: Value, clip: float | None) -> Value:
        if clip is not None:
            x = _op(ctx, "Clip", [x, _scalar(ctx, -clip), _scalar(ctx, clip)])
        k, a, b = self.kind, self.alpha, self.beta
        if k in ("relu", "tanh", "sigmoid", "softplus"):
            return _op(ctx, {"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid",
                             "softplus": "Softplus"}[k], [x])  # fmt: skip
        if k == "leakyrelu":
            return _op(ctx, "LeakyRelu", [x], alpha=a)
        if k == "elu":
            return _op(ctx, "Elu", [x], alpha=a)
        if k == "hardsigmoid":
            return _op(ctx, "HardSigmoid", [x], alpha=a, beta=b)
        if k == "affine":
            assert a is not None and b is not None
            return _op(ctx, "Add", [_op(ctx, "Mul", [x, _scalar(ctx, a)]), _scalar(ctx, b)])
        if k == "scaledtanh":
            assert a is not None and b is not None
            t = _op(ctx, "Tanh", [_op(ctx, "Mul", [x, _scalar(ctx, b)])])
            return _op(ctx, "Mul", [t, _scalar(ctx, a)])
        assert k == "softsign"
        den = _op(ctx, "Add", [_op(ctx, "Abs", [x]), _scalar(ctx, 1.0)])
        return _op(ctx, "Div", [x, den])


def _activations(ctx: NodeCtx, op: str, n_dirs: int) -> list[list[_Act]]:
    per_dir = len(DEFAULT_ACTIVATIONS[op])
    names = [str(s) for s in ctx.attr("activations", DEFAULT_ACTIVATIONS[op] * n_dirs)]
    if len(names) != per_dir * n_dirs:
        raise ctx.error(
            f"attribute 'activations' has {len(names)} entries; {op} with {n_dirs} "
            f"direction(s) needs {per_dir * n_dirs}"
        )
    alphas = [float(v) for v in ctx.attr("activation_alpha", [])]
    betas = [float(v) for v in ctx.attr("activation_beta", [])]
    acts: list[_Act] = []
    for name in names:
        kind = name.lower()
        if kind not in ACTIVATIONS:
            raise ctx.error(
                f"attribute 'activations': {name!r} is not supported (supported: "
                + ", ".join(sorted(ACTIVATIONS))
                + ")"
            )
        da, db = ACTIVATIONS[kind]
        a = (alphas.pop(0) if alphas else da) if da is not None else None
        b = (betas.pop(0) if betas else db) if db is not None else None
        acts.append(_Act(kind, a, b))
    return [acts[d * per_dir : (d + 1) * per_dir] for d in range(n_dirs)]


def _weight(ctx: NodeCtx, i: int, what: str, shape: tuple[int, ...]) -> np.ndarray | None:
    arr = ctx.const_input(i, what)
    if arr is None:
        return None
    if tuple(arr.shape) != shape:
        raise ctx.error(f"{what} (input {i}) has shape {list(arr.shape)}, expected {list(shape)}")
    return arr.astype(np.float32)


def _cols(ctx: NodeCtx, x: Value, lo: int, hi: int) -> Value:
    """Columns ``lo:hi`` of a 2-D value."""
    rows, _ = value_shape(x)
    return slice_value(ctx, x, [0, lo], [rows, hi], [1, 1])


def _matmul(ctx: NodeCtx, a: Value, b: Const) -> Value:
    if isinstance(a, Const):
        return ctx.const((a.array @ b.array).astype(np.float32))
    return _op(ctx, "MatMul", [a, b])


def _state(ctx: NodeCtx, i: int, name: str, n_dirs: int, batch: int, hidden: int, layout: int):
    """Per-direction ``[batch, hidden]`` slices of initial_h / initial_c (None: zeros)."""
    v = ctx.opt_input(i)
    if v is None:
        return [None] * n_dirs
    want = (n_dirs, batch, hidden) if layout == 0 else (batch, n_dirs, hidden)
    if value_shape(v) != want:
        raise ctx.error(
            f"{name} (input {i}) has shape {list(value_shape(v))}, expected {list(want)}"
        )
    if layout == 1:
        v = _op(ctx, "Transpose", [v], perm=[1, 0, 2])
    return [
        reshape_to(ctx, slice_value(ctx, v, [d, 0, 0], [d + 1, batch, hidden], [1, 1, 1]),
                   (batch, hidden))
        for d in range(n_dirs)
    ]  # fmt: skip


def _blend(ctx: NodeCtx, mask: Const | None, new: Value, old: Value | None) -> Value:
    """``new`` where the step is inside the sequence, else ``old`` (zeros when None)."""
    if mask is None:
        return new
    kept = _op(ctx, "Mul", [new, mask])
    if old is None:
        return kept
    inv = ctx.const((1.0 - mask.array).astype(np.float32))
    return _op(ctx, "Add", [kept, _op(ctx, "Mul", [old, inv])])


def _recurrent(ctx: NodeCtx) -> list[Value | None]:
    op = ctx.node.op_type
    x = ctx.input(0)
    if not dtypes.is_float(value_elem(x)) or dtypes.to_numpy_dtype(value_elem(x)) != np.float32:
        raise ctx.error(f"input X must be a float32 tensor, got {value_elem(x)}")
    layout = int(ctx.attr("layout", 0))
    if layout not in (0, 1):
        raise ctx.error(f"attribute 'layout' must be 0 or 1, got {layout}")
    xs = value_shape(x)
    if len(xs) != 3:
        raise ctx.error(f"input X must have rank 3, got shape {list(xs)}")
    if layout == 1:
        x = _op(ctx, "Transpose", [x], perm=[1, 0, 2])
    seq, batch, n_in = value_shape(x)
    if seq > MAX_STEPS:
        raise ctx.error(
            f"sequence length {seq} is over the unroll limit of {MAX_STEPS} steps "
            "(the recurrence is unrolled at import time)"
        )
    direction = str(ctx.attr("direction", "forward"))
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ctx.error(
            f"attribute 'direction' must be forward, reverse or bidirectional, got {direction!r}"
        )
    n_dirs = 2 if direction == "bidirectional" else 1
    hidden = int(ctx.attr("hidden_size", 0))
    if hidden <= 0:
        raise ctx.error("attribute 'hidden_size' must be given and positive")
    g = N_GATES[op]
    gh = g * hidden
    w = _weight(ctx, 1, "W", (n_dirs, gh, n_in))
    r = _weight(ctx, 2, "R", (n_dirs, gh, hidden))
    assert w is not None and r is not None
    b = _weight(ctx, 3, "B", (n_dirs, 2 * gh))
    b = np.zeros((n_dirs, 2 * gh), np.float32) if b is None else b
    clip_attr = ctx.attr("clip")
    clip = None if clip_attr is None else float(clip_attr)
    if clip is not None and clip <= 0:
        raise ctx.error(f"attribute 'clip' must be positive, got {clip}")
    acts = _activations(ctx, op, n_dirs)
    lbr = int(ctx.attr("linear_before_reset", 0)) if op == "GRU" else 0
    input_forget = int(ctx.attr("input_forget", 0)) if op == "LSTM" else 0
    p = _weight(ctx, 7, "P", (n_dirs, 3 * hidden)) if op == "LSTM" else None

    lens = ctx.const_input(4, "sequence_lens")
    masks: list[Const | None] = [None] * seq
    if lens is not None:
        lens = lens.reshape(-1).astype(np.int64)
        if lens.shape != (batch,) or (lens < 1).any() or (lens > seq).any():
            raise ctx.error(
                f"sequence_lens (input 4) {lens.tolist()} must hold {batch} lengths in 1..{seq}"
            )
        if (lens != seq).any():
            if direction != "forward":
                raise ctx.error(
                    f"sequence_lens {lens.tolist()} shorter than the sequence ({seq}) are "
                    f"supported for direction 'forward' only, not {direction!r}"
                )
            for t in range(seq):
                masks[t] = ctx.const((t < lens).astype(np.float32).reshape(batch, 1))

    # The input projection of every step and direction: one MatMul.
    wt = np.concatenate([w[d].T for d in range(n_dirs)], axis=1)  # [input, dirs*gh]
    bias = np.concatenate([_input_bias(op, b[d], hidden) for d in range(n_dirs)])
    x2 = reshape_to(ctx, x, (seq * batch, n_in))
    xw = _op(ctx, "Add", [_op(ctx, "MatMul", [x2, ctx.const(wt)]), ctx.const(bias)])

    h0 = _state(ctx, 5, "initial_h", n_dirs, batch, hidden, layout)
    c0 = _state(ctx, 6, "initial_c", n_dirs, batch, hidden, layout) if op == "LSTM" else []
    ys: list[list[Value]] = []
    y_h: list[Value] = []
    y_c: list[Value] = []
    for d in range(n_dirs):
        reverse = direction == "reverse" or d == 1
        steps = range(seq - 1, -1, -1) if reverse else range(seq)
        rt = ctx.const(np.ascontiguousarray(r[d].T))
        h, c = h0[d], (c0[d] if op == "LSTM" else None)
        out: dict[int, Value] = {}
        for t in steps:
            xt = slice_value(ctx, xw, [t * batch, d * gh], [(t + 1) * batch, (d + 1) * gh], [1, 1])
            if op == "LSTM":
                h_new, c_new = _lstm_step(ctx, xt, h, c, rt, p, d, hidden, acts[d], clip,
                                          input_forget)  # fmt: skip
                c = _blend(ctx, masks[t], c_new, c)
            elif op == "GRU":
                h_new = _gru_step(ctx, xt, h, rt, b[d], hidden, acts[d], clip, lbr)
            else:
                h_new = _rnn_step(ctx, xt, h, rt, acts[d], clip)
            out[t] = _blend(ctx, masks[t], h_new, None)
            h = _blend(ctx, masks[t], h_new, h)
        assert h is not None
        ys.append([out[t] for t in range(seq)])
        y_h.append(h)
        if c is not None:
            y_c.append(c)

    return _outputs(ctx, ys, y_h, y_c, seq, batch, hidden, layout)


def _input_bias(op: str, b: np.ndarray, hidden: int) -> np.ndarray:
    """The bias added to the input projection: Wb + Rb, except GRU's Rbh (applied inside r)."""
    gh = N_GATES[op] * hidden
    wb, rb = b[:gh], b[gh:].copy()
    if op == "GRU":
        rb[2 * hidden :] = 0.0
    return (wb + rb).astype(np.float32)


def _add_rec(ctx: NodeCtx, xt: Value, h: Value | None, rt: Const) -> Value:
    """``xt + h · R^T`` (just ``xt`` for a zero initial state)."""
    return xt if h is None else _op(ctx, "Add", [xt, _matmul(ctx, h, rt)])


def _lstm_step(
    ctx: NodeCtx,
    xt: Value,
    h: Value | None,
    c: Value | None,
    rt: Const,
    p: np.ndarray | None,
    d: int,
    hidden: int,
    acts: list[_Act],
    clip: float | None,
    input_forget: int,
) -> tuple[Value, Value]:
    f_act, g_act, h_act = acts
    gates = _add_rec(ctx, xt, h, rt)
    gi, go, gf, gc = (_cols(ctx, gates, k * hidden, (k + 1) * hidden) for k in range(4))

    def peep(gate: Value, k: int, cell: Value | None) -> Value:
        if p is None or cell is None:
            return gate
        pk = ctx.const(np.ascontiguousarray(p[d, k * hidden : (k + 1) * hidden]))
        return _op(ctx, "Add", [gate, _op(ctx, "Mul", [cell, pk])])

    i = f_act.apply(ctx, peep(gi, 0, c), clip)
    if input_forget:
        f = _op(ctx, "Sub", [_scalar(ctx, 1.0), i])
    else:
        f = f_act.apply(ctx, peep(gf, 2, c), clip)
    cand = g_act.apply(ctx, gc, clip)
    c_new = _op(ctx, "Mul", [i, cand])
    if c is not None:
        c_new = _op(ctx, "Add", [_op(ctx, "Mul", [f, c]), c_new])
    o = f_act.apply(ctx, peep(go, 1, c_new), clip)
    h_new = _op(ctx, "Mul", [o, h_act.apply(ctx, c_new, None)])
    return h_new, c_new


def _gru_step(
    ctx: NodeCtx,
    xt: Value,
    h: Value | None,
    rt: Const,
    b: np.ndarray,
    hidden: int,
    acts: list[_Act],
    clip: float | None,
    lbr: int,
) -> Value:
    f_act, g_act = acts
    rbh = ctx.const(np.ascontiguousarray(b[5 * hidden :]))
    xz, xr, xh = (_cols(ctx, xt, k * hidden, (k + 1) * hidden) for k in range(3))
    if h is None:
        z = f_act.apply(ctx, xz, clip)
        # r multiplies a zero state (or a zero h · Rh^T), leaving only Rbh when linear.
        pre = _op(ctx, "Add", [xh, _op(ctx, "Mul", [f_act.apply(ctx, xr, clip), rbh])]) if lbr \
            else _op(ctx, "Add", [xh, rbh])  # fmt: skip
        cand = g_act.apply(ctx, pre, clip)
        return _op(ctx, "Sub", [cand, _op(ctx, "Mul", [z, cand])])
    if lbr:
        hr = _matmul(ctx, h, rt)
        hz, hrr, hh = (_cols(ctx, hr, k * hidden, (k + 1) * hidden) for k in range(3))
        z = f_act.apply(ctx, _op(ctx, "Add", [xz, hz]), clip)
        r = f_act.apply(ctx, _op(ctx, "Add", [xr, hrr]), clip)
        pre = _op(ctx, "Add", [xh, _op(ctx, "Mul", [r, _op(ctx, "Add", [hh, rbh])])])
    else:
        rt_zr = ctx.const(np.ascontiguousarray(rt.array[:, : 2 * hidden]))
        rt_h = ctx.const(np.ascontiguousarray(rt.array[:, 2 * hidden :]))
        hzr = _matmul(ctx, h, rt_zr)
        z = f_act.apply(ctx, _op(ctx, "Add", [xz, _cols(ctx, hzr, 0, hidden)]), clip)
        r = f_act.apply(ctx, _op(ctx, "Add", [xr, _cols(ctx, hzr, hidden, 2 * hidden)]), clip)
        rh = _matmul(ctx, _op(ctx, "Mul", [r, h]), rt_h)
        pre = _op(ctx, "Add", [xh, _op(ctx, "Add", [rh, rbh])])
    cand = g_act.apply(ctx, pre, clip)
    # (1 - z) * cand + z * h  ==  cand + z * (h - cand)
    return _op(ctx, "Add", [cand, _op(ctx, "Mul", [z, _op(ctx, "Sub", [h, cand])])])


def _rnn_step(
    ctx: NodeCtx, xt: Value, h: Value | None, rt: Const, acts: list[_Act], clip: float | None
) -> Value:
    return acts[0].apply(ctx, _add_rec(ctx, xt, h, rt), clip)


def _outputs(
    ctx: NodeCtx,
    ys: list[list[Value]],
    y_h: list[Value],
    y_c: list[Value],
    seq: int,
    batch: int,
    hidden: int,
    layout: int,
) -> list[Value | None]:
    n_dirs = len(ys)
    # A named output must get a value even when nothing reads it (dead ops are removed later).
    used = [bool(o) for o in ctx.node.output] + [False] * 3
    y: Value | None = None
    if used[0]:
        parts = [reshape_to(ctx, ys[d][t], (1, 1, batch, hidden))
                 for t in range(seq) for d in range(n_dirs)]  # fmt: skip
        y = parts[0] if len(parts) == 1 else _op(ctx, "Concat", parts, axis=0)
        y = reshape_to(ctx, y, (seq, n_dirs, batch, hidden))
        if layout == 1:
            y = _op(ctx, "Transpose", [y], perm=[2, 0, 1, 3])

    def stack(states: list[Value]) -> Value:
        parts = [reshape_to(ctx, s, (1, batch, hidden)) for s in states]
        v = parts[0] if len(parts) == 1 else _op(ctx, "Concat", parts, axis=0)
        return _op(ctx, "Transpose", [v], perm=[1, 0, 2]) if layout == 1 else v

    res: list[Value | None] = [y, stack(y_h) if used[1] else None]
    if ctx.node.op_type == "LSTM":
        res.append(stack(y_c) if used[2] else None)
    return res


for _name in ("LSTM", "GRU", "RNN"):
    converter(_name)(_recurrent)
