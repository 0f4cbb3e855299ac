"""``fuse-pw-chain``: a 1x1 conv kernel and the 1x1 conv kernel reading its output, one kernel
that runs them column block by column block.

Effect: for each kernel (or bare conv) that is one 1x1 conv with its built-in clamp epilogue
(``pw_chain.Half``: the conv, an optional residual Add, an optional Relu / Clip), whose
result is read by a kernel of the same form whose conv reads that result, and by something
else too (the value stays a result: in ResNet it is the next block's residual), the two
become one ``fusion.kernel`` named ``pwchain_`` + its ops (``pwchain_conv_add_relu_conv_relu``)
with two results, when ``clib.pw_chain_applies`` takes the convs (both 1x1, stride 1,
unpadded, group 1, fp32, NCHW, static sizes, on one map). The C backend runs it as
``afrt_conv1x1_chain_f32``: per column block of the map, the first conv's GEMM tile and at
once the second's on the columns just written, which are still in L2; apart, the second conv
read the whole first output back from L3. ``plan-buffers`` writes the first result over the
first conv's residual as before (``memory_plan.residual_operand``) and the second over the
chain's input (``memory_plan.chain_input_operand``).

Why (docs/history/fusion-efficiency.md, "the 1x1 -> 1x1 chain"): in ResNet-50 the fused 1x1
convs on 56 x 56 maps read their 3.2 MB inputs from L3 and kept time fusion had saved
elsewhere; as a chain, layer1's conv3 and the next block's conv1 took 50-60 us less than the
two kernels.

The decision is the cost layer's (``decided_by = cost``): the first output must be larger
than twice L2 (measured: a 1.6 MB output on a 1 MiB L2 gained nothing), and the second
output must be able to take the chain input's bytes (an intermediate that only the chain
reads, of its type): with a slot of its own the arena grew and the next kernel, writing on
bytes last touched a run earlier, lost what the chain saved. Refusals: ``cost``, ``dtype``
(a 16-bit conv) and the policy codes of family ``conv_chain`` (aggressiveness, ``patterns:
{conv_chain: false}``, blacklists such as ``"Relu->Conv"``, user policies); aggressiveness
3 joins every legal pair (``decided_by = rules``). Pairs of other convs (3x3, strided, an
``assign-layout`` block) are not candidates and log nothing.

Place: after ``fuse-conv-pair`` (whose pairs it leaves alone: a pair kernel is not a half)
and ``assign-layout``; target c only and not with a memory limit, as ``fuse-conv-pair``. A
symbolic module skips it. Options: ``config``, ``aggressiveness``, ``policy``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from autofusion.analysis.cost import value_bytes
from autofusion.analysis.hardware import hardware_for
from autofusion.analysis.pw_chain import Half, chain_params, half_at
from autofusion.dialects import nn
from autofusion.dialects.fusion import KernelOp
from autofusion.passes.assign_precision import precision_of
from autofusion.passes.fuse import join_each, outer_value
from autofusion.passes.fuse_conv_chain import Unit
from autofusion.passes.options import PolicyPass
from autofusion.policy.engine import FusionPolicy
from autofusion.policy.reasons import Refusal, RefusalLog, nodes_of

FAMILY = "conv_chain"


def unit_half(top: Operation) -> Half | None:
    """The half ``top`` is (a kernel whose body is exactly one, or a bare conv), with one
    result: the half's value; else None."""
    u = Unit.of(top)
    h = half_at(u.ops, 0)
    if h is None or len(h.ops) != len(u.ops) or len(top.results) != 1:
        return None
    if isinstance(top, KernelOp):
        yielded = top.body.block.last_op
        if yielded is None or list(yielded.operands) != [h.value]:
            return None
    return h


def _reaches(top: Operation, v: SSAValue, pos: dict[Operation, int]) -> bool:
    """Whether ``v`` depends on ``top`` through ops of its block (``pos``: their positions):
    then a kernel joining ``top`` with a reader of ``v`` would be its own ancestor."""
    start = pos[top]
    seen: set[Operation] = set()
    todo = [v]
    while todo:
        owner = todo.pop().owner
        if not isinstance(owner, Operation) or owner in seen or owner not in pos:
            continue
        if owner is top:
            return True
        seen.add(owner)
        if pos[owner] > start:
            todo.extend(owner.operands)
    return False


def _takes_input_bytes(x: SSAValue, cons: Operation) -> bool:
    """Whether the chain's second output can be written over its input ``x`` (``plan-buffers``:
    ``memory_plan.chain_input_operand``): ``x`` an intermediate (not an argument or a
    weight) that only the chain reads, of the second output's type. Measured on ResNet-50:
    with the second output in a slot of its own the arena grew 5.2 -> 5.6 MB and the 3x3
    conv after the chain, writing into the new bytes, took 45 us more than apart, as much as
    the chain saved (docs/history/fusion-efficiency.md, "the 1x1 -> 1x1 chain")."""
    owner = x.owner
    if not isinstance(owner, Operation) or isinstance(owner, nn.ConstantOp):
        return False
    return x.has_one_use() and x.type == cons.results[0].type


class _Finder:
    def __init__(self, policy: FusionPolicy, log: RefusalLog, block: Block) -> None:
        self.policy = policy
        self.log = log
        self.l2 = hardware_for(policy.config.hardware).fused_cache_bytes
        self.used: set[Operation] = set()
        # the block is not changed until every pair is proposed (join_each outlines after)
        self.pos = {op: i for i, op in enumerate(block.ops)}

    def consumer(
        self, top: Operation, first: Half, v: SSAValue, block: Block
    ) -> tuple[Operation, Half] | None:
        """The first reader of ``v`` that is a half whose conv reads ``v``, forms a chain
        with ``first`` (``chain_params``: two 1x1 stride-1 convs on one map) and whose other
        inputs do not depend on ``top`` (the joined kernel must not feed itself)."""
        for use in v.uses:
            cons = use.operation
            if cons in self.used or cons.parent_block() is not block:
                continue
            h = unit_half(cons)
            if h is None or h.conv.x is not Unit.of(cons).inner(v):
                continue
            if chain_params(first.conv, h.conv) is None:  # not two such 1x1 convs
                continue
            if list(cons.operands).count(v) != 1:  # also its residual: not a half's form
                continue
            if any(_reaches(top, w, self.pos) for w in cons.operands if w is not v):
                continue
            return cons, h
        return None

    def decide(
        self, first: Half, second: Half, x: SSAValue, v: SSAValue, cons: Operation
    ) -> str | None:
        """``decided_by`` of a legal, allowed chain (``x`` the chain's input, ``v`` the first
        output, ``cons`` the second unit); else None (the refusal logged)."""
        ops = [*first.ops, *second.ops]
        low = [c for c in (first.conv, second.conv) if precision_of(c) != "fp32"]
        if low:
            self.log.add("dtype", f"a conv computes in {precision_of(low[0])} (config "
                         "precision); the chain kernel computes in fp32", ops)  # fmt: skip
            return None
        paths = [(*first.ops, second.conv)]
        r = self.policy.check(first.last, second.conv, FAMILY, list(first.ops), paths)
        applies = r is None and self.policy.cost_applies(second.conv, list(first.ops), paths)
        if applies:
            mid = value_bytes(v)
            if mid <= 2 * self.l2:
                r = Refusal("cost", f"the first conv's output ({mid // 1024} KiB) is not larger "
                            f"than twice L2 ({self.l2 // 1024} KiB): measured, such a chain "
                            "saves nothing", nodes_of(ops))  # fmt: skip
            elif not _takes_input_bytes(x, cons):
                r = Refusal("cost", "the second conv's output cannot be written over the "
                            "chain's input (not an intermediate read only here, of its type): "
                            "the chain would grow the arena, and the next kernel's output "
                            "would land on bytes last touched a run earlier",
                            nodes_of(ops))  # fmt: skip
        if r is not None:
            self.log.add_refusal(r)
            return None
        return self.policy.approver(applies)


def fuse_pw_chains(module: ModuleOp, policy: FusionPolicy) -> int:
    """Form the chain kernels; returns how many were formed."""
    finders: dict[Block, _Finder] = {}

    def propose(
        top: Operation, block: Block, log: RefusalLog
    ) -> tuple[tuple[Operation, ...], str] | None:
        if block not in finders:
            finders[block] = _Finder(policy, log, block)
        finder = finders[block]
        first = unit_half(top) if top not in finder.used else None
        if first is None:
            return None
        v = top.results[0]
        got = finder.consumer(top, first, v, block)
        if got is None or len(list(v.uses)) < 2:  # the first output must stay a result
            return None
        cons, second = got
        if policy.level == 0 or not policy.config.family_enabled(FAMILY):
            r = policy.family_refusal(FAMILY, [first.conv, second.conv])
            if r is not None:
                log.add_refusal(r)
            return None
        layer = finder.decide(first, second, outer_value(top, first.conv.x), v, cons)
        if layer is None:
            return None
        finder.used.update((top, cons))
        return (top, cons), layer

    return join_each(module, "pwchain_", propose)


@dataclass(frozen=True)
class FusePwChain(PolicyPass):
    """1x1 conv (+ residual Add, clamp) -> 1x1 conv (+ epilogue) kernels in column blocks."""

    name: ClassVar[str] = "fuse-pw-chain"

    policy: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_pw_chains(op, self.fusion_policy())
