"""The 1x1 -> 1x1 conv chains ``fuse-pw-chain`` forms, as structure: which ops make one and
what ``afrt_conv1x1_chain_f32`` takes. Shared by the pass, the buffer plan (the first conv's
residual written in place) and the C lowering, so neither of the last two imports a pass.

A *half* is a 1x1 conv and its built-in clamp epilogue: the conv, then optionally
``Add(conv, r)`` with ``r`` of the conv output's shape and not a constant (a residual), then
optionally one Relu / Clip with numeric bounds, each intermediate read only by the next op.
A chain is two halves, the second conv reading the first half's last value."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from autofusion.analysis.conv_chain import CLAMPS, conv_fields
from autofusion.analysis.conv_pair import numeric_clamp
from autofusion.dialects import clib, nn
from autofusion.dialects.attrs import LAYOUT_X, LAYOUT_Y
from autofusion.dialects.base import type_dims


@dataclass(frozen=True)
class Half:
    """A 1x1 conv with its epilogue: the optional residual Add and clamp."""

    conv: nn.ConvOp
    add: nn.AddOp | None
    clamp: Operation | None

    @property
    def ops(self) -> tuple[Operation, ...]:
        return tuple(o for o in (self.conv, self.add, self.clamp) if o is not None)

    @property
    def last(self) -> Operation:
        return self.ops[-1]

    @property
    def value(self) -> SSAValue:
        """The half's result (what the kernel stores)."""
        return self.last.results[0]

    @property
    def residual(self) -> SSAValue | None:
        if self.add is None:
            return None
        y = self.conv.y
        return self.add.rhs if self.add.lhs is y else self.add.lhs


def _only_reader(v: SSAValue, reader: Operation) -> bool:
    return v.has_one_use() and next(iter(v.uses)).operation is reader


def half_at(ops: Sequence[Operation], i: int) -> Half | None:
    """The half starting at ``ops[i]`` (nn ops of a body, constants left out), taking as many
    of the following ops as form its epilogue; None when ``ops[i]`` is not a conv."""
    conv = ops[i] if i < len(ops) else None
    if not isinstance(conv, nn.ConvOp):
        return None
    v: SSAValue = conv.y
    add: nn.AddOp | None = None
    clamp: Operation | None = None
    j = i + 1
    cand = ops[j] if j < len(ops) else None
    if isinstance(cand, nn.AddOp) and v in cand.operands:
        other = cand.rhs if cand.lhs is v else cand.lhs
        # a tensor of the output's shape, not a constant (a splat one would be a scalar to
        # the lowering, which the built-in clamp does not take as its residual)
        full = type_dims(other.type) == type_dims(v.type) and not isinstance(
            other.owner, nn.ConstantOp
        )
        if other is not v and full and _only_reader(v, cand):
            add, v, j = cand, cand.results[0], j + 1
    act = ops[j] if j < len(ops) else None
    if isinstance(act, CLAMPS) and act.operands[0] is v:
        if numeric_clamp(act) and _only_reader(v, act):
            clamp = act
    return Half(conv, add, clamp)


def chain_params(a: nn.ConvOp, b: nn.ConvOp) -> tuple[list[int], list[int]] | None:
    """The two convs' ``CONV_FIELDS`` when ``afrt_conv1x1_chain_f32`` runs ``a`` then ``b``
    (``clib.pw_chain_applies``; NCHW f32, no ``assign-layout`` blocks); else None."""
    if any(k in c.attributes for c in (a, b) for k in (LAYOUT_X, LAYOUT_Y)):
        return None
    fa, fb = conv_fields(a), conv_fields(b)
    if fa is None or fb is None or not clib.pw_chain_applies(fa, fb):
        return None
    return fa, fb


def body_pw_chain(ops: Sequence[Operation]) -> tuple[Half, Half] | None:
    """The two halves when a kernel body (nn ops, constants left out) is exactly a chain:
    a half, then a half whose conv reads the first's value, every intermediate private,
    and ``chain_params`` takes the convs."""
    first = half_at(ops, 0)
    if first is None:
        return None
    second = half_at(ops, len(first.ops))
    if second is None or len(first.ops) + len(second.ops) != len(ops):
        return None
    if second.conv.x is not first.value or chain_params(first.conv, second.conv) is None:
        return None
    return first, second
