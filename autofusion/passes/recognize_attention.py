"""``recognize-attention``: MatMul -> scale -> mask Add -> Softmax -> MatMul -> ``nn.attention``.

Matches scaled dot-product attention as exporters emit it::

    s = matmul(q, kT)            kT: [..., D, T] (usually transpose(k) swapping the last two dims)
    s = s / c   or   s = s * c   (optional; scale = 1/c or c, a scalar constant)
    s = s + mask                 (optional; mask broadcasts to [..., S, T])
    p = softmax(s, axis = last)
    o = matmul(p, v)

and replaces ``o`` by ``nn.attention(q, k, v[, mask]) {scale}``. If ``kT`` is not a
last-two-dims transpose, an ``nn.transpose`` is inserted to give ``k``. Every intermediate
must have one reader. Place: before fuse. Option: ``config`` (a fusion config;
``patterns: {attention: false}`` turns the pass off).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from autofusion.dialects import nn
from autofusion.dialects.base import f64_attr, i64_array, shape_of
from autofusion.dialects.dtypes import tensor_type
from autofusion.passes._match import (
    const_scalar,
    in_block_order,
    replace_match,
    rewrite_if_enabled,
    sole_user,
)


def _swap_last(rank: int) -> list[int]:
    return [*range(rank - 2), rank - 1, rank - 2]


@dataclass
class RecognizeScaledDotProductAttention(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, sm: nn.SoftmaxOp, rewriter: PatternRewriter) -> None:
        rank = len(shape_of(sm.x))
        if rank < 2 or sm.int_prop("axis") != rank - 1:
            return
        out = sole_user(sm.y)
        if not isinstance(out, nn.MatMulOp) or out.a is not sm.y:
            return
        ops: list[Operation] = [sm, out]
        s = sm.x
        mask: SSAValue | None = None
        scale = 1.0
        op = s.owner
        if isinstance(op, nn.AddOp) and s.has_one_use():
            # the scores side is the one computed by a (scaled) matmul
            for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
                if isinstance(a.owner, nn.MatMulOp | nn.MulOp | nn.DivOp):
                    s, mask = a, b
                    break
            else:
                return
            ops.append(op)
            op = s.owner
        if isinstance(op, nn.MulOp | nn.DivOp) and s.has_one_use():
            c = const_scalar(op.rhs)
            base = op.lhs
            if c is None and isinstance(op, nn.MulOp):
                c, base = const_scalar(op.lhs), op.rhs
            if c is None or c == 0.0:
                return
            scale = 1.0 / c if isinstance(op, nn.DivOp) else c
            ops.append(op)
            s = base
            op = s.owner
        if not isinstance(op, nn.MatMulOp) or not s.has_one_use():
            return
        ops.append(op)
        q, kt, v = op.a, op.b, out.b
        if len(shape_of(q)) < 2 or len(shape_of(kt)) < 2 or len(shape_of(v)) < 2:
            return
        ktr = kt.owner
        krank = len(shape_of(kt))
        if isinstance(ktr, nn.TransposeOp) and list(ktr.ints("perm")) == _swap_last(krank):
            k = ktr.x
        else:
            ks = shape_of(kt)
            tr = nn.TransposeOp.build(
                operands=[kt],
                result_types=[tensor_type(kt.type.element_type, (*ks[:-2], ks[-1], ks[-2]))],  # type: ignore[union-attr]
                properties={"perm": i64_array(_swap_last(krank))},
            )
            rewriter.insert(tr, InsertPoint.before(out))
            k = tr.y
        att = nn.AttentionOp.build(
            operands=[q, k, v, mask],
            result_types=[out.out.type],
            properties={"scale": f64_attr(scale)},
        )
        also_dead = [ktr] if isinstance(ktr, nn.TransposeOp) else []
        replace_match(rewriter, out, att, in_block_order(ops), also_dead)


@dataclass(frozen=True)
class RecognizeAttention(ModulePass):
    """MatMul/scale/mask/Softmax/MatMul -> nn.attention."""

    name: ClassVar[str] = "recognize-attention"

    config: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_if_enabled(op, self.config, "attention", [RecognizeScaledDotProductAttention()])
