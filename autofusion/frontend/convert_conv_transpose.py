"""ONNX ConvTranspose (1-d/2-d/3-d) expressed with the GEMM-backed ``nn`` ops.

Two formulations, both on the GEMM core:

* **Non-overlapping** (``kernel == strides``, no dilation, pads or output padding, one
  group — the U-Net upsampler): one GEMM ``W^T [Cout*K, Cin] x X [N, Cin, H*W]``, then the
  col2im, which for windows that do not overlap is a pure permutation (``nn.transpose``
  interleaving the kernel offsets with the input positions), then the bias as a broadcast add.
* **General**: ConvTranspose is the convolution of the zero-upsampled input (``s - 1`` zeros
  between elements, built with reshape + pad + slice), padded by ``d * (k - 1) - pad`` on each
  side (``+ output_padding`` at the end; a negative amount is a slice), with the weight's
  in/out channels swapped per group and its spatial dims flipped, stride 1 and the same
  dilation. The bias rides on the ``nn.conv``.

Pads come from ``pads``, or from ``output_shape`` / ``auto_pad`` as the ONNX reference does:
``total = s * (in - 1) + output_padding + d * (k - 1) + 1 - out``, split ``total // 2`` first
for SAME_UPPER and ``total - total // 2`` first otherwise (a negative total appends outputs).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import Attribute

from autofusion.dialects import dtypes, nn
from autofusion.dialects.base import f64_attr, i64_array, int_attr, str_attr
from autofusion.frontend.context import (
    Const,
    NodeCtx,
    Value,
    value_elem,
    value_np_dtype,
    value_shape,
)
from autofusion.frontend.convert_shape import reshape_to
from autofusion.frontend.registry import converter


def _ints(ctx: NodeCtx, name: str, n: int, default: int) -> list[int]:
    vals = [int(v) for v in ctx.attr(name, [default] * n)]
    if len(vals) != n:
        raise ctx.error(f"{name} {vals} must have {n} entries")
    return vals


def transpose_pads(
    ctx: NodeCtx,
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out_pad: Sequence[int],
) -> list[int]:
    """``[begin..., end...]`` pads of a ConvTranspose from pads / output_shape / auto_pad."""
    n = len(spatial)
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto not in ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise ctx.error(f"unknown auto_pad {auto!r}")
    full = [
        strides[i] * (spatial[i] - 1) + out_pad[i] + dilations[i] * (kernel[i] - 1) + 1
        for i in range(n)
    ]
    if ctx.has_attr("output_shape"):
        target = [int(v) for v in ctx.attr("output_shape")]
        if len(target) == n + 2:
            target = target[2:]
        if len(target) != n or min(target) < 1:
            raise ctx.error(f"output_shape {target} must have {n} positive entries")
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        target = [spatial[i] * strides[i] for i in range(n)]
    elif auto == "VALID":
        return [0] * 2 * n
    else:
        pads = _ints(ctx, "pads", 2 * n, 0)
        if min(pads) < 0:
            raise ctx.error(f"pads {pads} must be non-negative")
        return pads
    begin, end = [], []
    for i in range(n):
        total = full[i] - target[i]
        first, second = total // 2, total - total // 2
        if auto == "SAME_UPPER":
            begin.append(first)
            end.append(second)
        else:
            begin.append(second)
            end.append(first)
    return begin + end


def _slice_axes(ctx: NodeCtx, x: Value, cuts: dict[int, tuple[int, int]]) -> Value:
    """Keep ``[lo, hi)`` along each axis in ``cuts`` (other axes whole)."""
    xs = value_shape(x)
    starts = [cuts.get(a, (0, d))[0] for a, d in enumerate(xs)]
    ends = [cuts.get(a, (0, d))[1] for a, d in enumerate(xs)]
    if starts == [0] * len(xs) and ends == list(xs):
        return x
    shape = [e - s for s, e in zip(starts, ends)]
    props: dict[str, Attribute] = {
        "starts": i64_array(starts),
        "ends": i64_array(ends),
        "steps": i64_array([1] * len(xs)),
    }
    return ctx.emit1(nn.SliceOp, [x], shape, value_elem(x), props)


def _pad(ctx: NodeCtx, x: Value, pads: Sequence[int]) -> Value:
    """Zero-pad by ``pads = [begin..., end...]``; negative entries crop instead."""
    xs = value_shape(x)
    r = len(xs)
    pos = [max(0, p) for p in pads]
    if any(pos):
        shape = [d + pos[i] + pos[r + i] for i, d in enumerate(xs)]
        props = {"pads": i64_array(pos), "mode": str_attr("constant"), "value": f64_attr(0.0)}
        x = ctx.emit1(nn.PadOp, [x], shape, value_elem(x), props)
    xs = value_shape(x)
    cuts = {
        a: (max(0, -pads[a]), xs[a] - max(0, -pads[r + a]))
        for a in range(r)
        if pads[a] < 0 or pads[r + a] < 0
    }
    return _slice_axes(ctx, x, cuts)


def _upsample_zeros(ctx: NodeCtx, x: Value, axis: int, s: int) -> Value:
    """Insert ``s - 1`` zeros between neighbours along ``axis`` (length ``(n-1)*s + 1``)."""
    xs = list(value_shape(x))
    n = xs[axis]
    if s == 1 or n == 1:
        return x
    expanded = reshape_to(ctx, x, [*xs[: axis + 1], 1, *xs[axis + 1 :]])
    pads = [0] * 2 * (len(xs) + 1)
    pads[len(xs) + 1 + axis + 1] = s - 1
    spread = _pad(ctx, expanded, pads)
    flat = reshape_to(ctx, spread, [*xs[:axis], n * s, *xs[axis + 1 :]])
    return _slice_axes(ctx, flat, {axis: (0, (n - 1) * s + 1)})


def _conv_weight(ctx: NodeCtx, w: Value, group: int) -> Value:
    """ConvTranspose weight ``[Cin, Cout/g, K...]`` -> Conv weight ``[Cout, Cin/g, K...]``
    (taps flipped)."""
    ws = value_shape(w)
    cin, cog, kernel = ws[0], ws[1], list(ws[2:])
    nsp = len(kernel)
    if isinstance(w, Const):
        a = w.array.reshape(group, cin // group, cog, *kernel).swapaxes(1, 2)
        a = a.reshape(group * cog, cin // group, *kernel)
        return ctx.const(np.ascontiguousarray(np.flip(a, axis=tuple(range(2, 2 + nsp)))))
    g = reshape_to(ctx, w, [group, cin // group, cog, *kernel])
    perm = [0, 2, 1, *range(3, 3 + nsp)]
    gt_shape = [group, cog, cin // group, *kernel]
    g = ctx.emit1(nn.TransposeOp, [g], gt_shape, value_elem(w), {"perm": i64_array(perm)})
    g = reshape_to(ctx, g, [group * cog, cin // group, *kernel])
    shape = list(value_shape(g))
    props: dict[str, Attribute] = {
        "starts": i64_array([0, 0, *[k - 1 for k in kernel]]),
        "ends": i64_array([shape[0], shape[1], *[-1] * nsp]),
        "steps": i64_array([1, 1, *[-1] * nsp]),
    }
    return ctx.emit1(nn.SliceOp, [g], shape, value_elem(w), props)


def _gemm_col2im(ctx: NodeCtx, x: Value, w: Value, b: Value | None) -> Value:
    """Non-overlapping windows: ``W^T x X`` columns, then col2im as one permutation."""
    xs, ws = value_shape(x), value_shape(w)
    n, cin, spatial = xs[0], xs[1], list(xs[2:])
    cout, kernel = ws[1], list(ws[2:])
    nsp, elem = len(spatial), value_elem(x)
    kk, hw = int(np.prod(kernel)), int(np.prod(spatial))
    if isinstance(w, Const):
        wt: Value = ctx.const(np.ascontiguousarray(w.array.reshape(cin, cout * kk).T))
    else:
        w2 = reshape_to(ctx, w, [cin, cout * kk])
        wt = ctx.emit1(nn.TransposeOp, [w2], [cout * kk, cin], elem, {"perm": i64_array([1, 0])})
    cols = ctx.emit1(nn.MatMulOp, [wt, reshape_to(ctx, x, [n, cin, hw])], [n, cout * kk, hw], elem)
    if isinstance(b, Const):
        # A constant bias, repeated per kernel offset, is a row bias of the GEMM: it joins
        # the matmul's epilogue instead of a pass over the permuted output.
        rows = ctx.const(np.repeat(b.array, kk).reshape(cout * kk, 1))
        cols = ctx.emit1(nn.AddOp, [cols, rows], [n, cout * kk, hw], elem)
        b = None
    cols = reshape_to(ctx, cols, [n, cout, *kernel, *spatial])
    perm = [0, 1]
    for i in range(nsp):
        perm += [2 + nsp + i, 2 + i]
    inter = [n, cout]
    for i in range(nsp):
        inter += [spatial[i], kernel[i]]
    y = ctx.emit1(nn.TransposeOp, [cols], inter, elem, {"perm": i64_array(perm)})
    out = [n, cout, *[spatial[i] * kernel[i] for i in range(nsp)]]
    y = reshape_to(ctx, y, out)
    if b is None:
        return y
    bias = reshape_to(ctx, b, [cout, *[1] * nsp])
    return ctx.emit1(nn.AddOp, [y, bias], out, elem)


@converter("ConvTranspose")
def _conv_transpose(ctx: NodeCtx) -> list[Value]:
    x, w = ctx.input(0), ctx.input(1)
    if not dtypes.is_float(value_elem(x)):
        raise ctx.error(f"input 0 must be a floating-point tensor, got {value_elem(x)}")
    b = ctx.opt_input(2)
    xs, ws = value_shape(x), value_shape(w)
    if len(xs) not in (3, 4, 5) or len(ws) != len(xs):
        raise ctx.error(f"only 1-d/2-d/3-d ConvTranspose is supported (input {xs}, weight {ws})")
    nsp = len(xs) - 2
    group = int(ctx.attr("group", 1))
    if group < 1 or xs[1] % group or ws[0] != xs[1]:
        raise ctx.error(
            f"weight {ws} needs {xs[1]} input channels divisible by group {group} (input {xs})"
        )
    cout = ws[1] * group
    kernel = _ints(ctx, "kernel_shape", nsp, 0) if ctx.has_attr("kernel_shape") else list(ws[2:])
    if kernel != list(ws[2:]):
        raise ctx.error(f"kernel_shape {kernel} differs from the weight shape {ws}")
    strides = _ints(ctx, "strides", nsp, 1)
    dilations = _ints(ctx, "dilations", nsp, 1)
    out_pad = _ints(ctx, "output_padding", nsp, 0)
    if min(strides + dilations) < 1 or min(out_pad) < 0:
        raise ctx.error(
            f"strides {strides} and dilations {dilations} must be >= 1, "
            f"output_padding {out_pad} >= 0"
        )
    pads = transpose_pads(ctx, xs[2:], kernel, strides, dilations, out_pad)
    out = [
        strides[i] * (xs[2 + i] - 1)
        + out_pad[i]
        + dilations[i] * (kernel[i] - 1)
        + 1
        - pads[i]
        - pads[nsp + i]
        for i in range(nsp)
    ]
    if min(out) < 1:
        raise ctx.error(f"output spatial size {out} is not positive (pads {pads})")
    if b is not None and value_shape(b) != (cout,):
        raise ctx.error(f"bias shape {value_shape(b)} should be ({cout},)")
    ctx.check_size([xs[0], cout, *out], value_np_dtype(x))
    if (
        group == 1
        and kernel == strides
        and dilations == [1] * nsp
        and not any(pads)
        and not any(out_pad)
    ):
        return [_gemm_col2im(ctx, x, w, b)]
    if isinstance(w, Const) and nsp in (1, 2) and dilations == [1] * nsp and max(strides) > 1:
        return [_sub_pixel(ctx, x, w, b, strides, pads[:nsp], out, group)]
    u = x
    for i in range(nsp):
        u = _upsample_zeros(ctx, u, 2 + i, strides[i])
    begin = [dilations[i] * (kernel[i] - 1) - pads[i] for i in range(nsp)]
    end = [dilations[i] * (kernel[i] - 1) - pads[nsp + i] + out_pad[i] for i in range(nsp)]
    conv_pads = [0, 0, *begin, 0, 0, *end]
    u = _pad(ctx, u, conv_pads)
    wc = _conv_weight(ctx, w, group)
    props = {
        "strides": i64_array([1] * nsp),
        "pads": i64_array([0] * 2 * nsp),
        "dilations": i64_array(dilations),
        "group": int_attr(group),
    }
    if nsp == 3:
        return [_conv3d_by_depth_columns(ctx, u, wc, b, dilations, group, out)]
    y = ctx.emit1(nn.ConvOp, [u, wc, b], [xs[0], cout, *out], value_elem(x), props)
    return [y]


def _conv3d_by_depth_columns(
    ctx: NodeCtx,
    u: Value,
    w: Value,
    b: Value | None,
    dilations: Sequence[int],
    group: int,
    out: Sequence[int],
) -> Value:
    """Stride-1, unpadded 3-d conv as one 2-d conv: depth taps become input channels.

    The ``kd`` depth windows ``u[:, :, j*d : j*d + Dout]`` are stacked after each channel
    (channel ``c * kd + j``, which keeps channels group-major), depth moves into the batch,
    and the weight ``[Cout, C/g, kd, kh, kw]`` is read as ``[Cout, C/g * kd, kh, kw]``.
    """
    n, c = value_shape(u)[:2]
    h, wd = value_shape(u)[3:]
    cout, cg, kd, kh, kw = value_shape(w)
    dout, elem = out[0], value_elem(u)
    taps = []
    for j in range(kd):
        z = _slice_axes(ctx, u, {2: (j * dilations[0], j * dilations[0] + dout)})
        taps.append(reshape_to(ctx, z, [n, c, 1, dout, h, wd]))
    stacked = (
        taps[0]
        if kd == 1
        else ctx.emit1(nn.ConcatOp, [taps], [n, c, kd, dout, h, wd], elem, {"axis": int_attr(2)})
    )
    perm = i64_array([0, 3, 1, 2, 4, 5])
    moved = ctx.emit1(nn.TransposeOp, [stacked], [n, dout, c, kd, h, wd], elem, {"perm": perm})
    x2 = reshape_to(ctx, moved, [n * dout, c * kd, h, wd])
    w2 = reshape_to(ctx, w, [cout, cg * kd, kh, kw])
    props = {
        "strides": i64_array([1, 1]),
        "pads": i64_array([0] * 4),
        "dilations": i64_array(list(dilations[1:])),
        "group": int_attr(group),
    }
    y = ctx.emit1(nn.ConvOp, [x2, w2, b], [n * dout, cout, out[1], out[2]], elem, props)
    y = reshape_to(ctx, y, [n, dout, cout, out[1], out[2]])
    perm = i64_array([0, 2, 1, 3, 4])
    return ctx.emit1(nn.TransposeOp, [y], [n, cout, *out], elem, {"perm": perm})


def _sub_pixel(
    ctx: NodeCtx,
    x: Value,
    w: Const,
    b: Value | None,
    strides: Sequence[int],
    begin: Sequence[int],
    out: Sequence[int],
    group: int,
) -> Value:
    """Strided ConvTranspose as one stride-1 conv of the *un-upsampled* input whose output
    channels stack the ``prod(strides)`` phases, then a depth-to-space interleave and a crop.

    Full-output position ``s*q + r`` only receives taps ``k = r + s*m`` from ``x[q - m]``, so
    phase ``r`` is a correlation with sub-kernel ``W[r + s*(M-1-j)]`` (``M = ceil(k/s)``,
    zero past the kernel) over ``x`` padded by ``M - 1`` in front. Channels are ordered
    (group, phases, channel in group) so the conv's groups stay contiguous.
    """
    xs = value_shape(x)
    n, nsp, elem = xs[0], len(xs) - 2, value_elem(x)
    cin, cog, kernel = w.array.shape[0], w.array.shape[1], list(w.array.shape[2:])
    ci = cin // group
    m = [-(-kernel[i] // strides[i]) for i in range(nsp)]
    q0 = [begin[i] // strides[i] for i in range(nsp)]
    q1 = [-(-(begin[i] + out[i]) // strides[i]) for i in range(nsp)]
    qn = [q1[i] - q0[i] for i in range(nsp)]
    sw = w.array.reshape(group, ci, cog, *kernel).swapaxes(1, 2)  # [g, cog, ci, K...]
    phases = [int(v) for v in strides]
    wn = np.zeros((group, *phases, cog, ci, *m), dtype=w.array.dtype)
    for r in np.ndindex(*phases):
        for j in np.ndindex(*m):
            k = [r[i] + strides[i] * (m[i] - 1 - j[i]) for i in range(nsp)]
            if all(k[i] < kernel[i] for i in range(nsp)):
                wn[(slice(None), *r, slice(None), slice(None), *j)] = sw[
                    (slice(None), slice(None), slice(None), *k)
                ]
    nph = int(np.prod(phases))
    wc = ctx.const(np.ascontiguousarray(wn.reshape(group * nph * cog, ci, *m)))
    conv_b: Value | None = None
    if isinstance(b, Const):
        bb = np.broadcast_to(b.array.reshape(group, *[1] * nsp, cog), (group, *phases, cog))
        conv_b = ctx.const(np.ascontiguousarray(bb.reshape(-1)))
        b = None
    xpad = [0, 0, *[m[i] - 1 - q0[i] for i in range(nsp)], 0, 0]
    xpad += [q1[i] - xs[2 + i] for i in range(nsp)]
    u = _pad(ctx, x, xpad)
    props = {
        "strides": i64_array([1] * nsp),
        "pads": i64_array([0] * 2 * nsp),
        "dilations": i64_array([1] * nsp),
        "group": int_attr(group),
    }
    y = ctx.emit1(nn.ConvOp, [u, wc, conv_b], [n, group * nph * cog, *qn], elem, props)
    y = reshape_to(ctx, y, [n, group, *phases, cog, *qn])
    perm = [0, 1, 2 + nsp]
    inter = [n, group, cog]
    for i in range(nsp):
        perm += [3 + nsp + i, 2 + i]
        inter += [qn[i], phases[i]]
    y = ctx.emit1(nn.TransposeOp, [y], inter, elem, {"perm": i64_array(perm)})
    cout = group * cog
    y = reshape_to(ctx, y, [n, cout, *[qn[i] * phases[i] for i in range(nsp)]])
    lo = [begin[i] - q0[i] * strides[i] for i in range(nsp)]
    y = _slice_axes(ctx, y, {2 + i: (lo[i], lo[i] + out[i]) for i in range(nsp)})
    if b is None:
        return y
    bias = reshape_to(ctx, b, [cout, *[1] * nsp])
    return ctx.emit1(nn.AddOp, [y, bias], [n, cout, *out], elem)
