"""The depthwise -> pointwise conv chains ``fuse-conv-chain`` forms, as structure: which
ops make one, and what ``afrt_dwpw_f32`` takes; and the stem + max pool units of
``fuse-conv-pool`` (``afrt_scb_maxpool_f32``). Shared by the passes, the cost model
(``predict``) and the C lowering (``lower-nn-to-loops``), so neither of the last two imports
a pass."""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from autofusion.dialects import clib, dtypes, nn
from autofusion.dialects.attrs import LAYOUT_X, LAYOUT_Y, is_blocked

CLAMPS = (nn.ReluOp, nn.ClipOp)


def conv_fields(op: nn.ConvOp) -> list[int] | None:
    """The conv's ``clib.CONV_FIELDS`` (a 2-d f32 conv), else None."""
    t = op.y.type
    if not isinstance(t, TensorType) or len(t.get_shape()) != 4 or t.element_type != dtypes.f32:
        return None
    return clib.conv_params(op)


def clamp_of(act: Operation | None) -> tuple[float, float]:
    """The ``[lo, hi]`` clamp a depthwise epilogue op applies (none: unbounded)."""
    if isinstance(act, nn.ClipOp):
        return act.min, act.max
    if isinstance(act, nn.ReluOp):
        return 0.0, math.inf
    return -math.inf, math.inf


def is_dwpw(dw: nn.ConvOp, pw: nn.ConvOp) -> bool:
    """Whether ``afrt_dwpw_f32`` takes ``dw`` then ``pw`` (``clib.dwpw_applies``)."""
    d, p = conv_fields(dw), conv_fields(pw)
    return d is not None and p is not None and clib.dwpw_applies(d, p)


def body_chain(ops: Sequence[Operation]) -> tuple[nn.ConvOp, Operation | None, nn.ConvOp] | None:
    """(depthwise conv, clamp or None, pointwise conv) when a kernel body (nn ops, constants
    left out) starts with a chain this pass forms; the lowering runs it as ``clib.dwpw``."""
    if len(ops) < 2 or not isinstance(ops[0], nn.ConvOp):
        return None
    dw = ops[0]
    act = ops[1] if isinstance(ops[1], CLAMPS) and ops[1].operands[0] is dw.y else None
    i = 2 if act is not None else 1
    pw = ops[i] if i < len(ops) else None
    if not isinstance(pw, nn.ConvOp):
        return None
    mid = act.results[0] if act is not None else dw.y
    if pw.x is not mid or not mid.has_one_use() or (act is not None and not dw.y.has_one_use()):
        return None
    return (dw, act, pw) if is_dwpw(dw, pw) else None


def is_expand(ex: nn.ConvOp, dw: nn.ConvOp, pw: nn.ConvOp) -> bool:
    """Whether ``afrt_edwpw_f32`` takes ``ex`` in front of the pair (``clib.edwpw_applies``)."""
    e, d, p = conv_fields(ex), conv_fields(dw), conv_fields(pw)
    return e is not None and d is not None and p is not None and clib.edwpw_applies(e, d, p)


ExpandChain = tuple[nn.ConvOp | None, Operation | None, nn.ConvOp, Operation | None, nn.ConvOp]


def body_expand_chain(ops: Sequence[Operation]) -> ExpandChain | None:
    """(expand conv or None, its clamp or None, depthwise conv, clamp, pointwise conv) when a
    kernel body starts with a chain (``body_chain``) or with an expand 1x1 conv (+ clamp)
    whose output only that chain's depthwise conv reads (``fuse-conv-chain``'s three-conv
    kernels)."""
    got = body_chain(ops)
    if got is not None:
        return (None, None, *got)
    if len(ops) < 3 or not isinstance(ops[0], nn.ConvOp):
        return None
    ex = ops[0]
    eact = ops[1] if isinstance(ops[1], CLAMPS) and ops[1].operands[0] is ex.y else None
    i = 2 if eact is not None else 1
    got = body_chain(ops[i:])
    if got is None:
        return None
    dw, act, pw = got
    mid = eact.results[0] if eact is not None else ex.y
    if dw.x is not mid or not mid.has_one_use() or (eact is not None and not ex.y.has_one_use()):
        return None
    return (ex, eact, dw, act, pw) if is_expand(ex, dw, pw) else None


def pool_fields(op: nn.MaxPoolOp) -> list[int] | None:
    """The 2-d f32 max pool's ``clib.POOL_FIELDS`` (static sizes only), else None."""
    xt, yt = op.x.type, op.y.type
    if not isinstance(xt, TensorType) or not isinstance(yt, TensorType):
        return None
    xs, ys = xt.get_shape(), yt.get_shape()
    if len(xs) != 4 or xt.element_type != dtypes.f32 or min(*xs, *ys) < 0:
        return None
    k, st, pd, dl = op.kernel, op.strides, op.pads, op.dilations
    return [*xs, k[0], k[1], ys[2], ys[3], st[0], st[1], *pd, dl[0], dl[1], 0]


def conv_pool_unit(
    conv: nn.ConvOp, act: Operation | None, pool: nn.MaxPoolOp
) -> tuple[list[int], list[int]] | None:
    """(conv fields, pool fields) when ``afrt_scb_maxpool_f32`` runs ``conv`` (+ ``act``, one
    Relu / Clip without NaN bounds on its output) and ``pool`` over that as one call: the conv is
    ``assign-layout``'s blocked stem (``layout.y`` NCHW16c, x NCHW; ``direct_smallc_b``), the
    pool runs on those blocks (``layout.x``) and ``clib.convpool_fits`` takes the pair."""
    f = conv_fields(conv)
    q = pool_fields(pool)
    if f is None or q is None:
        return None
    if act is not None and (not isinstance(act, CLAMPS) or any(map(math.isnan, clamp_of(act)))):
        return None  # the tile's clamp has no NaN bounds
    stem = is_blocked(conv, LAYOUT_Y) and not is_blocked(conv, LAYOUT_X)
    if not stem or not is_blocked(pool, LAYOUT_X):
        return None
    if any(not isinstance(v, int) or v == clib.DYNAMIC for v in f):  # static sizes only
        return None
    fd: dict[str, int] = dict(zip(clib.CONV_FIELDS, f, strict=True))
    qd: dict[str, int] = dict(zip(clib.POOL_FIELDS, q, strict=True))
    return (f, q) if clib.convpool_fits(fd, qd) else None


ConvPool = tuple[nn.ConvOp, Operation | None, nn.MaxPoolOp]


def body_conv_pool(ops: Sequence[Operation]) -> ConvPool | None:
    """(conv, clamp or None, max pool) when a kernel body (nn ops, constants left out) is
    exactly ``fuse-conv-pool``'s unit (:func:`conv_pool_unit`), its intermediates private."""
    if len(ops) not in (2, 3) or not isinstance(ops[0], nn.ConvOp):
        return None
    conv, pool = ops[0], ops[-1]
    act = ops[1] if len(ops) == 3 else None
    if not isinstance(pool, nn.MaxPoolOp) or not conv.y.has_one_use():
        return None
    if act is not None and (not isinstance(act, CLAMPS) or act.operands[0] is not conv.y):
        return None
    mid = act.results[0] if act is not None else conv.y
    if pool.x is not mid or not mid.has_one_use():
        return None
    return (conv, act, pool) if conv_pool_unit(conv, act, pool) is not None else None
