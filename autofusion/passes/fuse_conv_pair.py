"""``fuse-conv-pair``: two 1x1 convs whose outputs are added, then clamped, as one kernel.

Effect: for each kernel of one ``nn.conv`` + ``nn.add`` + one ``nn.relu`` / ``nn.clip``
(``fuse``'s ``conv_add_relu``) whose Add's other operand is the output of a bare conv (or a
kernel holding the conv alone) read by nothing else, the two become one ``fusion.kernel``
named ``convpair_`` + its ops (``convpair_conv_conv_add_relu``) when
``clib.conv_pair_applies`` takes the two convs: both 1x1, unpadded, group 1, fp32, static
sizes, onto one output map, one of them stride 1 on it, the other any stride (ResNet's conv3
and the downsample of each stage's first block). The C backend runs it as
``afrt_conv1x1_pair_f32``: one GEMM over both inputs' channels with the weights side by side
and the biases summed, so the second conv's output is never stored (ResNet-50's stage-1
downsample: 3.2 MB written and read back) and the buffer plan gives it no slot.

The decision is a measured rule (``decided_by = rules``, or ``policy`` with a user policy):
ResNet-50's four pairs took 0.83-0.89, 0.94-0.98, 0.95-0.98 and 0.95-1.01 of their two
kernels' time (``benchmarks/conv_pair.py --cold``, docs/history/fusion-efficiency.md).
Refusals:
``multi-consumer`` (the other conv's output has other readers, or the kernel's conv output
or sum also leaves it), ``unsupported`` (the kernel's epilogue is not the Add and one Relu /
Clip with numeric bounds; the convs are not such a pair; a conv ``assign-layout``
blocked), ``dtype`` (a 16-bit conv), and the policy codes of family ``conv_pair``
(aggressiveness, ``patterns: {conv_pair: false}``, blacklists such as ``"Conv->Add"``, user
policies asked for the conv -> Add edge).

Place: after ``assign-layout`` and ``fuse-conv-pool``; target c only, and not with a memory
limit (``tile-fusion`` slices convs; the pipeline leaves the pass out then). Ascend C: the
pipeline leaves it out (its lowering has no two-source conv; docs/fusion.md). Options:
``config``, ``aggressiveness``, ``policy``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from autofusion.analysis.conv_pair import numeric_clamp, pair_params
from autofusion.dialects import nn
from autofusion.dialects.attrs import LAYOUT_X, LAYOUT_Y
from autofusion.dialects.fusion import KernelOp
from autofusion.passes.assign_precision import precision_of
from autofusion.passes.fuse import join_each, outer_value
from autofusion.passes.fuse_conv_chain import Unit
from autofusion.passes.options import PolicyPass
from autofusion.policy.engine import FusionPolicy
from autofusion.policy.reasons import RefusalLog

FAMILY = "conv_pair"


@dataclass(frozen=True)
class _Candidate:
    top: Operation  # the conv + Add + clamp kernel
    prod: Operation  # the other conv (bare, or alone in a kernel)
    ops: tuple[Operation, ...]  # the kernel's body ops
    add: nn.AddOp
    other: nn.ConvOp  # the conv inside prod
    value: SSAValue  # prod's output, at top level


def _candidate(top: Operation, block: Block) -> _Candidate | None:
    """``top`` as a candidate: a kernel starting with a conv whose output one Add reads,
    the Add's other operand the output of a conv unit of this block; else None."""
    ops = Unit.of(top).ops
    if not isinstance(top, KernelOp) or len(ops) < 2 or not isinstance(ops[0], nn.ConvOp):
        return None
    add = ops[1]
    if not isinstance(add, nn.AddOp) or ops[0].y not in add.operands:
        return None
    inner = add.rhs if add.lhs is ops[0].y else add.lhs
    value = outer_value(top, inner)
    prod = value.owner
    if inner is ops[0].y or not isinstance(prod, Operation) or prod.parent_block() is not block:
        return None
    unit = Unit.of(prod).ops
    if len(unit) != 1 or not isinstance(unit[0], nn.ConvOp) or len(prod.results) != 1:
        return None
    return _Candidate(top, prod, tuple(ops), add, unit[0], value)


def _decide(c: _Candidate, policy: FusionPolicy, log: RefusalLog) -> str | None:
    """``decided_by`` of a legal, allowed join; else None (the refusal logged)."""
    conv = c.ops[0]
    assert isinstance(conv, nn.ConvOp)
    inner = [u.operation for u in conv.y.uses]
    if len(c.top.results) != 1 or inner != [c.add]:
        log.add("multi-consumer", f"the kernel's {conv.name} output or its sum leaves the "
                "kernel; the joined kernel stores only the clamped sum",
                [c.other, *c.ops])  # fmt: skip
        return None
    readers = [u.operation for u in c.value.uses]
    if len(readers) != 1:
        log.add("multi-consumer", f"the {c.other.name} output added in has {len(readers)} "
                "readers; the joined kernel never stores it", [c.other, *readers])  # fmt: skip
        return None
    if len(c.ops) != 3 or not numeric_clamp(c.ops[2]) or c.ops[2].operands[0] is not c.add.out:
        log.add("unsupported", "the kernel's epilogue is not the Add and one Relu/Clip with "
                "numeric bounds (the joined GEMM clamps in registers)",
                [c.other, *c.ops])  # fmt: skip
        return None
    for op in (conv, c.other):
        if precision_of(op) != "fp32":
            log.add("dtype", f"a conv computes in {precision_of(op)} (config precision); the "
                    "joined kernel computes in fp32", [c.other, *c.ops])  # fmt: skip
            return None
    if any(k in op.attributes for op in (conv, c.other) for k in (LAYOUT_X, LAYOUT_Y)):
        log.add("unsupported", "assign-layout blocked a conv of the pair; the joined kernel "
                "reads and writes NCHW", [c.other, *c.ops])  # fmt: skip
        return None
    if pair_params(conv, c.other) is None and pair_params(c.other, conv) is None:
        log.add("unsupported", "not two 1x1 unpadded group-1 convs of static sizes onto one "
                "output map, one of them stride 1 on it (afrt_conv1x1_pair_f32)",
                [c.other, *c.ops])  # fmt: skip
        return None
    r = policy.check(c.other, c.add, FAMILY, [c.other, *c.ops], [(c.other, c.add)])
    if r is not None:
        log.add_refusal(r)
        return None
    return policy.approver(False)  # a measured rule: no cost model asked


def _propose(
    top: Operation, block: Block, log: RefusalLog, policy: FusionPolicy
) -> tuple[tuple[Operation, Operation], str] | None:
    c = _candidate(top, block)
    if c is None:
        return None
    layer = _decide(c, policy, log)
    return None if layer is None else ((c.prod, c.top), layer)


def fuse_conv_pairs(module: ModuleOp, policy: FusionPolicy) -> int:
    """Form the conv pair kernels; returns how many were formed."""
    return join_each(module, "convpair_", lambda t, b, log: _propose(t, b, log, policy))


@dataclass(frozen=True)
class FuseConvPair(PolicyPass):
    """1x1 conv + 1x1 conv -> Add -> Relu kernels (``afrt_conv1x1_pair_f32``)."""

    name: ClassVar[str] = "fuse-conv-pair"

    policy: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_conv_pairs(op, self.fusion_policy())
