"""``recognize-attention``: MatMul -> scale -> mask Add -> Softmax -> MatMul -> ``nn.attention``.

Matches scaled dot-product attention as exporters emit it::

    s = matmul(q, kT)            kT: [..., D, T] (usually transpose(k) swapping the last two dims)
    s = s / c   or   s = s * c   (optional; scale = 1/c or c, a scalar constant)
    s = s + mask                 (optional; mask broadcasts to [..., S, T])
    s = s + mask2 ...            (more constant masks, e.g. Swin's position bias then its
                                  window mask: summed into one constant at compile time)
    p = softmax(s, axis = last)
    o = matmul(p, v)

and replaces ``o`` by ``nn.attention(q, k, v[, mask]) {scale}``. If ``kT`` is not a
last-two-dims transpose, an ``nn.transpose`` is inserted to give ``k``; when ``kT`` is another
transpose (BERT's ``transpose(x, [0, 2, 3, 1])``), that one transpose of ``x`` with the
composed permutation, not two in a row. Every intermediate
must have one reader. Place: before fuse. Option: ``config`` (a fusion config;
``patterns: {attention: false}`` turns the pass off).

Also the form torch's exporters write for ``scaled_dot_product_attention``::

    s = matmul(q * c1, kT * c2)  (√scale on each side; scale = c1 * c2)
    ...                          (mask, softmax as above)
    p = where(not(equal(p, p)), 0, p)   (IsNaN guard: a fully masked row gives 0, not NaN)
    o = matmul(p, v)

which becomes ``nn.attention {scale, nan_to_zero = 1}``.

torchvision's shifted-window attention (``swin_t`` and its kin) adds its window mask
through a view that splits the windows from the batch::

    s5 = reshape(s, [B, nW, H, N, N]);  s5 = s5 + mask;  s = reshape(s5, [B*nW, H, N, N])

``FoldMaskThroughReshape`` first rewrites such a sandwich to ``s + mask'`` (the constant
mask broadcast over the two split dims and merged like them, at compile time), so the
shifted blocks become one ``nn.attention`` like the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from autofusion.dialects import nn
from autofusion.dialects.base import shape_of, tensor_of
from autofusion.dialects.dtypes import dense_from_numpy
from autofusion.passes._match import (
    const_scalar,
    const_value,
    in_block_order,
    replace_match,
    rewrite_if_enabled,
    set_merged_origins,
    sole_user,
)
from autofusion.passes.options import CheckedPass


def _swap_last(rank: int) -> list[int]:
    return [*range(rank - 2), rank - 1, rank - 2]


def _nan_guard(p: SSAValue) -> tuple[nn.WhereOp, list[Operation]] | None:
    """``where(not(equal(p, p)), 0, p)`` reading softmax output ``p`` (its only readers)."""
    users = {u.operation for u in p.uses}
    eqs = [o for o in users if isinstance(o, nn.EqualOp) and o.lhs is p and o.rhs is p]
    wheres = [o for o in users if isinstance(o, nn.WhereOp) and o.y is p and o.cond is not p]
    if len(users) != 2 or len(eqs) != 1 or len(wheres) != 1:
        return None
    eq, wh = eqs[0], wheres[0]
    nt = sole_user(eq.out)
    if not isinstance(nt, nn.NotOp) or wh.cond is not nt.y or not nt.y.has_one_use():
        return None
    if const_scalar(wh.x) != 0.0 or wh.out.type != p.type:
        return None
    return wh, [eq, nt, wh]


def _scaled(v: SSAValue) -> tuple[SSAValue, float, Operation | None]:
    """``v = x * c`` or ``x / c`` (scalar constant c, v read once, same type as x) ->
    (x, factor, the op); otherwise (v, 1.0, None)."""
    op = v.owner
    if not isinstance(op, nn.MulOp | nn.DivOp) or not v.has_one_use():
        return v, 1.0, None
    sides = [(op.lhs, const_scalar(op.rhs))]
    if isinstance(op, nn.MulOp):  # a product may have the constant on either side
        sides.append((op.rhs, const_scalar(op.lhs)))
    for base, c in sides:
        if c is not None and c != 0.0 and base.type == v.type:
            return base, (1.0 / c if isinstance(op, nn.DivOp) else c), op
    return v, 1.0, None


#: At most this many additive masks in a row (Swin's relative-position bias then its
#: shifted-window mask; T5-style position bias then the padding mask).
MAX_MASKS = 4
#: Largest mask (elements) that several constant masks are folded into: Swin-T's first
#: shifted stage sums a [3, 49, 49] bias and a [64, 1, 49, 49] mask into [64, 3, 49, 49]
#: (461k elements, 1.8 MB); past this the masks stay apart and the attention is not matched.
FOLD_LIMIT = 1 << 21


def _masked(v: SSAValue) -> tuple[SSAValue, list[SSAValue], list[Operation]]:
    """``v = ((scores + m1) + m2) ...``: (scores, [m1, m2, ...], the Adds). The scores side of
    each Add is the one computed by a (scaled) matmul or by the Add before it, read only
    there and of the sum's own shape (the masks broadcast into it)."""
    masks: list[SSAValue] = []
    adds: list[Operation] = []
    op = v.owner
    while isinstance(op, nn.AddOp) and v.has_one_use() and len(masks) < MAX_MASKS:
        for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if isinstance(a.owner, nn.MatMulOp | nn.MulOp | nn.DivOp | nn.AddOp) and (
                a.type == v.type
            ):
                break
        else:
            break
        masks.insert(0, b)
        adds.append(op)
        v = a
        op = v.owner
    return v, masks, adds


def _foldable(masks: list[SSAValue]) -> bool:
    """Several masks can become one constant: all constant, of static shapes, same element
    type, and their broadcast sum is at most ``FOLD_LIMIT`` elements."""
    arrays = [const_value(m) for m in masks]
    if any(a is None or a.dtype.kind != "f" for a in arrays):
        return False
    if len({str(tensor_of(m).element_type) for m in masks}) != 1:
        return False
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays if a is not None))
    except ValueError:
        return False
    return math.prod(shape) <= FOLD_LIMIT


def _fold_masks(masks: list[SSAValue], adds: list[Operation]) -> nn.ConstantOp:
    """The masks' sum, added in the graph's order, as one constant (origins: the Adds)."""
    arrays = [const_value(m) for m in masks]
    total = arrays[0]
    for a in arrays[1:]:
        total = total + a  # type: ignore[operator]
    dtype = arrays[0].dtype  # type: ignore[union-attr]
    c = nn.ConstantOp(dense_from_numpy(np.ascontiguousarray(np.asarray(total, dtype=dtype))))
    set_merged_origins(c, adds[::-1])
    return c


def _static(v: SSAValue) -> tuple[int, ...] | None:
    dims = shape_of(v)
    return tuple(dims) if all(isinstance(d, int) for d in dims) else None  # type: ignore[arg-type]


class FoldMaskThroughReshape(RewritePattern):
    """``reshape(reshape(x, [a, b, *r]) + C, [a*b, *r])`` -> ``x + C'`` for a constant ``C``
    that broadcasts into ``[a, b, *r]``; ``C'`` is ``C`` broadcast over ``a`` and ``b`` and
    reshaped to ``[a*b, *C's other dims]``. Only the sole-reader chain is rewritten."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, outer: nn.ReshapeOp, rewriter: PatternRewriter) -> None:
        add = outer.x.owner
        if not isinstance(add, nn.AddOp) or not outer.x.has_one_use():
            return
        for inner_v, c in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
            if isinstance(inner_v.owner, nn.ReshapeOp) and inner_v.has_one_use():
                break
        else:
            return
        inner = inner_v.owner
        assert isinstance(inner, nn.ReshapeOp)
        mask = const_value(c)
        s5, s4 = _static(inner.y), _static(inner.x)
        if mask is None or mask.dtype.kind != "f" or s5 is None or s4 is None:
            return
        # the outer reshape undoes the inner one, which splits the leading dim in two
        if inner.x.type != outer.y.type or add.out.type != inner.y.type or len(s5) < 3:
            return
        if s4 != (s5[0] * s5[1], *s5[2:]) or mask.ndim > len(s5):
            return
        m = mask.reshape((1,) * (len(s5) - mask.ndim) + mask.shape)
        m = np.broadcast_to(m, (*s5[:2], *m.shape[2:])).reshape((s4[0], *m.shape[2:]))
        if m.size > FOLD_LIMIT:
            return
        const = nn.ConstantOp(dense_from_numpy(np.ascontiguousarray(m, dtype=mask.dtype)))
        set_merged_origins(const, [add])
        new = nn.AddOp.build(operands=[inner.x, const.y], result_types=[outer.y.type])
        rewriter.insert(const, InsertPoint.before(outer))
        replace_match(rewriter, outer, new, [inner, add, outer])


@dataclass
class RecognizeScaledDotProductAttention(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, sm: nn.SoftmaxOp, rewriter: PatternRewriter) -> None:
        rank = len(shape_of(sm.x))
        if rank < 2 or sm.axis != rank - 1:
            return
        out = sole_user(sm.y)
        guard: list[Operation] = []
        if out is None:  # the exporters' IsNaN guard between softmax and the second matmul
            g = _nan_guard(sm.y)
            if g is None:
                return
            wh, guard = g
            out = sole_user(wh.out)
            if not isinstance(out, nn.MatMulOp) or out.a is not wh.out:
                return
        elif not isinstance(out, nn.MatMulOp) or out.a is not sm.y:
            return
        ops: list[Operation] = [sm, out, *guard]
        s, masks, adds = _masked(sm.x)
        if len(masks) > 1 and not _foldable(masks):
            return
        ops.extend(adds)
        s, scale, sop = _scaled(s)  # the scores scaled by a scalar, or not
        if sop is not None:
            ops.append(sop)
        op = s.owner
        if not isinstance(op, nn.MatMulOp) or not s.has_one_use():
            return
        ops.append(op)
        q, kt, v = op.a, op.b, out.b
        # √scale applied to q and to kT separately (torch's exporters)
        q, fq, qop = _scaled(q)
        kt, fk, kop = _scaled(kt)
        scale *= fq * fk
        ops.extend(o for o in (qop, kop) if o is not None)
        if len(shape_of(q)) < 2 or len(shape_of(kt)) < 2 or len(shape_of(v)) < 2:
            return
        ktr = kt.owner
        krank = len(shape_of(kt))
        if isinstance(ktr, nn.TransposeOp) and list(ktr.perm) == _swap_last(krank):
            k = ktr.x
        else:
            src, perm = kt, _swap_last(krank)
            if isinstance(ktr, nn.TransposeOp):
                # kT = transpose(x, p1) (BERT exports: [0, 2, 3, 1] of [B, S, H, D]): one
                # transpose of x with the composed permutation instead of two in a row
                src, perm = ktr.x, [list(ktr.perm)[i] for i in perm]
            tr = nn.TransposeOp(src, perm=perm)
            if isinstance(ktr, nn.TransposeOp):
                set_merged_origins(tr, [ktr])
            rewriter.insert(tr, InsertPoint.before(out))
            k = tr.y
        mask = masks[0] if masks else None
        if len(masks) > 1:  # one constant: the masks summed once, at compile time
            total = _fold_masks(masks, adds)
            rewriter.insert(total, InsertPoint.before(out))
            mask = total.y
        att = nn.AttentionOp(
            q, k, v, mask, scale=scale, nan_to_zero=bool(guard), result_type=out.out.type
        )
        also_dead = [ktr] if isinstance(ktr, nn.TransposeOp) else []
        replace_match(rewriter, out, att, in_block_order(ops), also_dead)


@dataclass(frozen=True)
class RecognizeAttention(CheckedPass):
    """MatMul/scale/mask/Softmax/MatMul -> nn.attention."""

    name: ClassVar[str] = "recognize-attention"
    symbolic: ClassVar[bool] = True  # docs/dynamic.md, "Symbolic import"

    config: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_if_enabled(op, self.config, "attention", [FoldMaskThroughReshape()])
        rewrite_if_enabled(op, self.config, "attention", [RecognizeScaledDotProductAttention()])
