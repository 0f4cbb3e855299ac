"""Convolution, matrix products, attention and normalisations.

Products accumulate in float32 through numpy's BLAS-backed ``matmul``, as onnxruntime's
CPU kernels do. Convolution is im2col over a zero-copy strided window view; grouped
convolutions with few input channels per group (depthwise) accumulate one kernel tap at a
time instead, which keeps them vectorised.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

import numpy as np
from numpy.lib.stride_tricks import as_strided

from autofusion.dialects import nn
from autofusion.interpreter.core import concrete_shape, register

Arrays = Sequence[np.ndarray]

# Grouped convolutions with at most this many (input channel x kernel tap) products per
# output element are computed tap by tap rather than as per-group matrix products.
_TAPWISE_LIMIT = 64


def windows(
    xp: np.ndarray,
    out_spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> np.ndarray:
    """Read-only view ``(N, C, *out_spatial, *kernel)`` of sliding windows over ``xp``.

    ``xp`` is already padded; window ``o`` along dim ``i`` starts at ``o * strides[i]`` and
    reads every ``dilations[i]``-th element.
    """
    nsp = len(kernel)
    sp_strides = xp.strides[2:]
    shape = (*xp.shape[:2], *out_spatial, *kernel)
    strides_ = (
        *xp.strides[:2],
        *(sp_strides[i] * strides[i] for i in range(nsp)),
        *(sp_strides[i] * dilations[i] for i in range(nsp)),
    )
    return as_strided(xp, shape=shape, strides=strides_, writeable=False)


def pad_spatial(x: np.ndarray, begin: Sequence[int], end: Sequence[int], fill: float) -> np.ndarray:
    if not any(begin) and not any(end):
        return x
    widths = [(0, 0), (0, 0), *zip(begin, end)]
    return np.pad(x, widths, mode="constant", constant_values=fill)


def _compute_dtype(x: np.ndarray) -> np.dtype:
    return x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float32)


def conv(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    group: int,
    out_shape: Sequence[int],
) -> np.ndarray:
    """ONNX Conv (N-d, NCHW) producing ``out_shape``."""
    dt = _compute_dtype(x)
    x, w = x.astype(dt, copy=False), w.astype(dt, copy=False)
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    kernel = w.shape[2:]
    nsp = len(kernel)
    out_sp = tuple(out_shape[2:])
    length = int(np.prod(out_sp, dtype=np.int64))
    ksize = int(np.prod(kernel, dtype=np.int64))
    mg = m // group

    if ksize == 1 and all(s == 1 for s in strides) and not any(pads):
        # Pointwise: one matrix product per group, no window copy.
        xs = x.reshape(n, group, cg, length)
        y = matmul(w.reshape(group, mg, cg), xs)
    else:
        xp = pad_spatial(x, pads[:nsp], pads[nsp:], 0.0)
        win = windows(xp, out_sp, kernel, strides, dilations)
        if group == 1:
            # (N, *O, C, *K) rows: one big GEMM.
            axes = (0, *range(2, 2 + nsp), 1, *range(2 + nsp, 2 + 2 * nsp))
            cols = win.transpose(axes).reshape(n * length, c * ksize)
            y = (cols @ w.reshape(m, c * ksize).T).reshape(n, length, m).transpose(0, 2, 1)
        elif cg * ksize <= _TAPWISE_LIMIT:
            win_g = win.reshape(n, group, cg, *out_sp, *kernel)
            wg = w.reshape(group, mg, cg, ksize)
            y = np.zeros((n, group, mg, *out_sp), dtype=dt)
            bshape = (1, group, mg) + (1,) * nsp
            for ci in range(cg):
                for t, tap in enumerate(product(*(range(k) for k in kernel))):
                    patch = win_g[(slice(None), slice(None), ci, *([slice(None)] * nsp), *tap)]
                    y += patch[:, :, None] * wg[:, :, ci, t].reshape(bshape)
        else:
            win_g = win.reshape(n, group, cg, *out_sp, *kernel)
            axes = (0, 1, *range(3, 3 + nsp), 2, *range(3 + nsp, 3 + 2 * nsp))
            cols = win_g.transpose(axes).reshape(n, group, length, cg * ksize)
            wt = w.reshape(group, mg, cg * ksize).transpose(0, 2, 1)
            y = matmul(cols, wt).transpose(0, 1, 3, 2)
    y = y.reshape(n, m, *out_sp)
    if bias is not None:
        y = y + bias.astype(dt, copy=False).reshape((1, m) + (1,) * nsp)
    return y


@register(nn.ConvOp)
def _conv(op: nn.ConvOp, args: Arrays) -> np.ndarray:
    x, w, *rest = args
    return conv(
        x,
        w,
        rest[0] if rest else None,
        op.strides,
        op.pads,
        op.dilations,
        op.group,
        concrete_shape(op.y),
    )


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.matmul`` semantics, computed as 2-d or 3-d BLAS products.

    numpy's stacked matmul reaches BLAS only for one batch dimension of contiguous
    matrices (a 4-d attention product is ~100x slower otherwise), so batch dimensions are
    broadcast and flattened first; ``x @ W`` with a 2-d ``W`` becomes one large GEMM.
    """
    if a.dtype == np.float16:
        # Accumulate half precision in float32 (numpy's float16 matmul has no BLAS path).
        return matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    if a.ndim <= 2 and b.ndim <= 2:
        return np.matmul(a, b)
    squeeze_m, squeeze_n = a.ndim == 1, b.ndim == 1
    if squeeze_m:
        a = a[None, :]
    if squeeze_n:
        b = b[:, None]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if b.ndim == 2:
        a2 = np.broadcast_to(a, (*batch, m, k)).reshape(-1, k)
        out = np.matmul(a2, b).reshape(*batch, m, n)
    else:
        a3 = np.ascontiguousarray(np.broadcast_to(a, (*batch, m, k))).reshape(-1, m, k)
        b3 = np.ascontiguousarray(np.broadcast_to(b, (*batch, k, n))).reshape(-1, k, n)
        out = np.matmul(a3, b3).reshape(*batch, m, n)
    if squeeze_m:
        out = out[..., 0, :]
    if squeeze_n:
        out = out[..., 0]
    return out


@register(nn.MatMulOp)
def _matmul(op: nn.MatMulOp, args: Arrays) -> np.ndarray:
    return matmul(args[0], args[1])


@register(nn.GemmOp)
def _gemm(op: nn.GemmOp, args: Arrays) -> np.ndarray:
    a, b, *rest = args
    if op.trans_a:
        a = a.T
    if op.trans_b:
        b = b.T
    y = matmul(a, b)
    alpha, beta = op.alpha, op.beta
    if alpha != 1.0:
        y = y * y.dtype.type(alpha)
    if rest:
        c = rest[0]
        y = y + (c if beta == 1.0 else c * c.dtype.type(beta))
    return y


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """Numerically stable softmax (max subtracted first)."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@register(nn.AttentionOp)
def _attention(op: nn.AttentionOp, args: Arrays) -> np.ndarray:
    q, k, v, *rest = args
    s = matmul(q, np.swapaxes(k, -1, -2)) * q.dtype.type(op.scale)
    if rest:
        mask = rest[0]
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask
    p = softmax(s, -1)
    if op.nan_to_zero:
        p = np.where(np.isnan(p), p.dtype.type(0), p)
    return matmul(p, v)


def _channel_shape(x: np.ndarray) -> tuple[int, ...]:
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


@register(nn.BatchNormOp)
def _batch_norm(op: nn.BatchNormOp, args: Arrays) -> np.ndarray:
    x, scale, bias, mean, var = args
    cs = _channel_shape(x)
    inv = scale / np.sqrt(var + var.dtype.type(op.epsilon))
    return x * inv.reshape(cs) + (bias - mean * inv).reshape(cs)


def _normalise(x: np.ndarray, axes: tuple[int, ...], eps: float) -> np.ndarray:
    mean = np.mean(x, axis=axes, keepdims=True)
    d = x - mean
    var = np.mean(d * d, axis=axes, keepdims=True)
    return d / np.sqrt(var + x.dtype.type(eps))


@register(nn.InstanceNormOp)
def _instance_norm(op: nn.InstanceNormOp, args: Arrays) -> np.ndarray:
    x, scale, bias = args
    cs = _channel_shape(x)
    y = _normalise(x, tuple(range(2, x.ndim)), op.epsilon)
    return y * scale.reshape(cs) + bias.reshape(cs)


@register(nn.LayerNormOp)
def _layer_norm(op: nn.LayerNormOp, args: Arrays) -> np.ndarray:
    x, scale, *rest = args
    y = _normalise(x, tuple(range(op.axis, x.ndim)), op.epsilon)
    y = y * scale
    if rest:
        y = y + rest[0]
    return y


@register(nn.LRNOp)
def _lrn(op: nn.LRNOp, args: Arrays) -> np.ndarray:
    x = args[0]
    size = op.size
    c = x.shape[1]
    lo = (size - 1) // 2
    hi = size - 1 - lo
    sq = np.pad(x * x, [(0, 0), (lo, hi)] + [(0, 0)] * (x.ndim - 2))
    acc = np.zeros_like(x)
    for j in range(size):
        acc += sq[:, j : j + c]
    t = x.dtype.type
    denom = (t(op.bias) + t(op.alpha / size) * acc) ** t(op.beta)
    return x / denom
