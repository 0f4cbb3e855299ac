"""``recognize-gelu``: decomposed GELU (Erf and Tanh forms) -> ``nn.gelu``.

Erf form (exporters' ``x * 0.5 * (1 + erf(x / sqrt(2)))`` in either association)::

    a = x / 1.41421 (or x * 0.70711);  e = erf(a);  c = e + 1;
    y = (x * c) * 0.5   or   y = (x * 0.5) * c   or   y = x * (c * 0.5)

Tanh form: ``0.5 * x * (1 + tanh(0.79788 * (x + 0.044715 * x^3)))`` with ``x^3`` as
``pow(x, 3)`` or ``x * x * x``; becomes ``nn.gelu {approximate = "tanh"}``.

Constants are matched to 1e-3 relative; every intermediate must have a single reader
(otherwise nothing is rewritten). Place: before fuse. Option: ``config`` (a fusion
config; ``patterns: {gelu: false}`` turns the pass off).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from autofusion.dialects import nn
from autofusion.passes._match import (
    close,
    const_scalar,
    other_operand,
    replace_match,
    rewrite_if_enabled,
    sole_user,
)
from autofusion.passes.options import CheckedPass

INV_SQRT2 = 1.0 / math.sqrt(2.0)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _scaled_by(v: SSAValue, factor: float) -> SSAValue | None:
    """If ``v = x * factor`` or ``v = x / (1/factor)``, return ``x``."""
    op = v.owner
    if isinstance(op, nn.MulOp):
        for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if close(const_scalar(b), factor):
                return a
    if isinstance(op, nn.DivOp) and close(const_scalar(op.rhs), 1.0 / factor):
        return op.lhs
    return None


def _cube_of(v: SSAValue, x: SSAValue) -> list[Operation] | None:
    op = v.owner
    if isinstance(op, nn.PowOp) and op.lhs is x and close(const_scalar(op.rhs), 3.0):
        return [op]
    if isinstance(op, nn.MulOp):
        for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            inner = b.owner
            if a is x and isinstance(inner, nn.MulOp) and inner.lhs is x and inner.rhs is x:
                return [inner, op]
    return None


def _tail(c: SSAValue, x: SSAValue) -> tuple[Operation, list[Operation]] | None:
    """Match ``(x * c) * 0.5`` or ``(x * 0.5) * c``; return (root, ops)."""
    m = sole_user(c)
    if not isinstance(m, nn.MulOp):
        return None
    t = other_operand(m, c)
    if t is x:
        root = sole_user(m.out)
        if isinstance(root, nn.MulOp) and close(const_scalar(other_operand(root, m.out)), 0.5):
            return root, [m, root]
        return None
    if t is not None and t.has_one_use() and _scaled_by(t, 0.5) is x:
        return m, [t.owner, m]
    if t is not None and close(const_scalar(t), 0.5):
        # x * (c * 0.5): the torch dynamo exporter's association
        root = sole_user(m.out)
        if isinstance(root, nn.MulOp) and other_operand(root, m.out) is x:
            return root, [m, root]
    return None


def _one_plus_tail(y: SSAValue, x: SSAValue) -> tuple[Operation, list[Operation]] | None:
    """Match ``c = y + 1`` followed by the ``_tail`` of ``c``; return (root, ops)."""
    add = sole_user(y)
    if not isinstance(add, nn.AddOp) or not close(const_scalar(other_operand(add, y)), 1.0):
        return None
    tail = _tail(add.out, x)
    if tail is None:
        return None
    root, ops = tail
    return root, [add, *ops]


@dataclass
class RecognizeErfGelu(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, erf: nn.ErfOp, rewriter: PatternRewriter) -> None:
        a = erf.x
        x = _scaled_by(a, INV_SQRT2)
        if x is None or not a.has_one_use():
            return
        tail = _one_plus_tail(erf.y, x)
        if tail is None:
            return
        root, ops = tail
        _replace(rewriter, root, x, "none", [a.owner, erf, *ops])  # type: ignore[list-item]


@dataclass
class RecognizeTanhGelu(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, tanh: nn.TanhOp, rewriter: PatternRewriter) -> None:
        s = tanh.x
        r = _scaled_by(s, SQRT_2_OVER_PI)
        if r is None or not s.has_one_use() or not r.has_one_use():
            return
        radd = r.owner
        if not isinstance(radd, nn.AddOp):
            return
        for x, q in ((radd.lhs, radd.rhs), (radd.rhs, radd.lhs)):
            p = _scaled_by(q, 0.044715)
            if p is None or not q.has_one_use() or not p.has_one_use():
                continue
            cube = _cube_of(p, x)
            if cube is None:
                continue
            tail = _one_plus_tail(tanh.y, x)
            if tail is None:
                return
            root, ops = tail
            _replace(rewriter, root, x, "tanh", [*cube, q.owner, radd, s.owner, tanh, *ops])  # type: ignore[list-item]
            return


def _replace(
    rewriter: PatternRewriter, root: Operation, x: SSAValue, approx: str, ops: list[Operation]
) -> None:
    if x.type != root.results[0].type:
        return  # a broadcasting constant widened the result: not a GELU of x alone
    gelu = nn.GeluOp(x, approximate=approx)
    replace_match(rewriter, root, gelu, ops)


@dataclass(frozen=True)
class RecognizeGelu(CheckedPass):
    """Decomposed GELU (Erf and Tanh forms) -> nn.gelu."""

    name: ClassVar[str] = "recognize-gelu"
    symbolic: ClassVar[bool] = True  # docs/dynamic.md, "Symbolic import"

    config: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_if_enabled(op, self.config, "gelu", [RecognizeErfGelu(), RecognizeTanhGelu()])
