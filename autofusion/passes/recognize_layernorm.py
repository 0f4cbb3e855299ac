"""``recognize-layernorm``: decomposed LayerNorm -> ``nn.layer_norm``.

Matches what exporters emit for ``LayerNorm`` over the trailing dims ``[axis, rank)``::

    m = reduce_mean(x, axes = [axis..rank-1], keepdims = 1)
    d = x - m
    v = reduce_mean(pow(d, 2), same axes, keepdims = 1)      (or d * d)
    n = d / sqrt(v + eps)
    y = n * gamma + beta                                      (each optional, constants)

``d`` must have exactly the two readers shown and every other intermediate one reader;
``gamma``/``beta`` must broadcast to the normalised shape. Without ``gamma`` a constant
of ones is supplied. Origins of all matched ops are kept on the new op. Place: before
fuse (after canonicalize-nn). Option: ``config`` (``patterns: {layernorm: false}`` turns it off).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from autofusion import symbolic
from autofusion.dialects import nn, shapes
from autofusion.dialects.base import shape_of
from autofusion.dialects.dtypes import dense_from_numpy, to_numpy_dtype
from autofusion.passes._match import (
    close,
    const_scalar,
    const_value,
    other_operand,
    replace_match,
    rewrite_if_enabled,
    sole_user,
)
from autofusion.passes.options import CheckedPass


def _trailing_axes(op: nn.ReduceMeanOp) -> int | None:
    """First axis if ``op`` reduces exactly the trailing dims with keepdims, else None."""
    rank = len(shape_of(op.x))
    axes = list(op.axes)
    if not axes or not op.keepdims or axes != list(range(axes[0], rank)):
        return None
    return axes[0]


def _square_of(v: SSAValue, d: SSAValue) -> bool:
    op = v.owner
    if isinstance(op, nn.PowOp):
        return op.lhs is d and close(const_scalar(op.rhs), 2.0)
    return isinstance(op, nn.MulOp) and op.lhs is d and op.rhs is d


def _affine_param(
    op: Operation | None, v: SSAValue, cls: type[Operation], norm: tuple[int, ...]
) -> SSAValue | None:
    if not isinstance(op, cls):
        return None
    p = other_operand(op, v)
    if p is None or const_value(p) is None:
        return None
    try:
        if shapes.broadcast(shape_of(p), norm) != norm:
            return None
    except ValueError:
        return None
    return p


@dataclass
class RecognizeDecomposedLayerNorm(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, div: nn.DivOp, rewriter: PatternRewriter) -> None:
        d, sd = div.lhs, div.rhs
        sub, sqrt = d.owner, sd.owner
        if not isinstance(sub, nn.SubOp) or not isinstance(sqrt, nn.SqrtOp):
            return
        x, m = sub.lhs, sub.rhs
        mean = m.owner
        if not isinstance(mean, nn.ReduceMeanOp) or mean.x is not x:
            return
        axis = _trailing_axes(mean)
        if axis is None:
            return
        add_eps = sqrt.x.owner
        if not isinstance(add_eps, nn.AddOp):
            return
        var = add_eps.lhs.owner
        eps = const_scalar(add_eps.rhs)
        if not isinstance(var, nn.ReduceMeanOp):
            var, eps = add_eps.rhs.owner, const_scalar(add_eps.lhs)
        if not isinstance(var, nn.ReduceMeanOp) or eps is None or _trailing_axes(var) != axis:
            return
        sq = var.x
        if not _square_of(sq, d):
            return
        # every intermediate is private to the pattern
        if d.uses.get_length() != 2 or not all(
            v.has_one_use() for v in (m, sq, var.y, add_eps.out, sd)
        ):
            return
        ops: list[Operation] = [mean, sub, sq.owner, var, add_eps, sqrt, div]  # type: ignore[list-item]
        norm = shape_of(x)[axis:]
        root: Operation = div
        gamma = _affine_param(sole_user(div.out), div.out, nn.MulOp, norm)
        beta = None
        if gamma is not None:
            root = sole_user(div.out)  # type: ignore[assignment]
            ops.append(root)
            beta = _affine_param(sole_user(root.results[0]), root.results[0], nn.AddOp, norm)
            if beta is not None:
                root = sole_user(root.results[0])  # type: ignore[assignment]
                ops.append(root)
        if root.results[0].type != x.type:
            return  # a broadcasting scale or bias widened the result
        if gamma is None:
            if not symbolic.is_static(norm):
                return  # the unit scale would be a constant of symbolic shape
            elem = to_numpy_dtype(div.out.type.element_type)
            one = nn.ConstantOp(dense_from_numpy(np.ones(norm, dtype=elem)))
            rewriter.insert(one, InsertPoint.before(root))
            gamma = one.y
        ln = nn.LayerNormOp(x, gamma, beta, axis=axis, epsilon=eps)
        replace_match(rewriter, root, ln, ops)


@dataclass(frozen=True)
class RecognizeLayerNorm(CheckedPass):
    """Decomposed ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div(/Mul/Add) -> nn.layer_norm."""

    name: ClassVar[str] = "recognize-layernorm"
    symbolic: ClassVar[bool] = True  # docs/dynamic.md, "Symbolic import"

    config: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_if_enabled(op, self.config, "layernorm", [RecognizeDecomposedLayerNorm()])
