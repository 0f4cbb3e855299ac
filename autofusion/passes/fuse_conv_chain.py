"""``fuse-conv-chain``: a depthwise conv (+ Relu / Clip) and the 1x1 conv reading it, one kernel.

Effect: for each depthwise ``nn.conv`` (one input channel per group) whose kernel is the conv
alone or the conv and one ``nn.relu`` / ``nn.clip`` (``fuse-conv-bn-relu``'s ``conv_relu6``),
and whose result has exactly one reader, a 1x1 stride-1 unpadded group-1 ``nn.conv`` over
exactly that result (bare, or heading a kernel with its epilogue), the two become one
``fusion.kernel`` named ``chain_`` + its ops (``chain_conv_relu6_conv_add``). The C
backend runs it as ``afrt_dwpw_f32`` (afrt_convchain.h): per band of output rows the
depthwise rows go to a per-thread tile that stays in L2 and the pointwise GEMM runs on it at
once, so the depthwise output (4.8 MB for MobileNet-V2's 96 x 112 x 112) never goes to
memory. A 1x1 reader needs no halo: no row is computed twice.

In front of a chain on the blocked band (AVX-512), an expand 1x1 conv (+ one Relu / Clip)
whose output only the chain's depthwise conv reads joins the kernel too when it has at most
``clib.EDWPW_MAX_C`` input channels (``clib.edwpw_algo``: ``expand_dwpw_blocked``) on a map
of more than ``assign_layout.EXPAND_MAX_HW`` positions (smaller maps are ``assign-layout``'s
expand chains: ``gemm_1x1_b`` writing blocks). MobileNet-V2's 16 -> 96 at 112x112, 24 ->
144 at 56x56 and 32 -> 192 at 28x28 join; the C backend
runs the three as ``afrt_edwpw_f32``, each band computing the expand's rows straight into
the depthwise conv's lane tiles, so the expand's output (the model's largest tensor) never
exists whole. Measured, not modelled (docs/runtime.md, "The expand inside the conv chain").

The decision is the cost model's (``predict.conv_chain_times``): the join must save memory
traffic -- the intermediate round-trips memory when apart, i.e. it does not fit in L2 with
as much traffic again around it (``2·bytes > L2``) -- and the fused kernel's predicted time
must be below the two kernels'. Refusals: ``multi-consumer`` (the intermediate has other
readers), ``unsupported`` (the depthwise kernel's epilogue is not one clamp), ``cost``, and
the policy codes of family ``conv_chain`` (aggressiveness, ``patterns: {conv_chain:
false}``, blacklists such as ``"Conv->Conv"``, user policies). Formed kernels record
``fusion.decided_by``.

Place: after ``fuse`` (it merges the kernels that ``fuse-conv-bn-relu`` and ``fuse`` made);
target c only (the pipeline leaves it out for other targets). Options as for ``fuse``:
``config``, ``aggressiveness``, ``policy``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from autofusion.analysis import predict
from autofusion.analysis.conv_chain import CLAMPS, conv_fields, is_dwpw
from autofusion.analysis.hardware import hardware_for
from autofusion.dialects import clib, nn
from autofusion.dialects.fusion import KernelOp, YieldOp
from autofusion.passes.assign_layout import EXPAND_MAX_HW
from autofusion.passes.assign_precision import precision_of
from autofusion.passes.fuse import join_each
from autofusion.passes.options import PolicyPass
from autofusion.policy.engine import FusionPolicy
from autofusion.policy.reasons import Refusal, RefusalLog, nodes_of

FAMILY = "conv_chain"


@dataclass(frozen=True)
class Unit:
    """A top-level op of the graph: a kernel (its body ops) or a bare nn op."""

    top: Operation
    ops: tuple[Operation, ...]  # variadic: a bare op is a 1-tuple

    @staticmethod
    def of(op: Operation) -> Unit:
        if isinstance(op, KernelOp):
            body = (o for o in op.body.block.ops if not isinstance(o, nn.ConstantOp | YieldOp))
            return Unit(op, tuple(body))
        return Unit(op, (op,))

    def inner(self, v: SSAValue) -> SSAValue:
        """The body value standing for the top-level input ``v``."""
        if isinstance(self.top, KernelOp):
            for arg, outer in zip(self.top.body.block.args, self.top.inputs):
                if outer is v:
                    return arg
        return v


def _producer(op: Operation) -> tuple[nn.ConvOp, Operation | None] | None:
    """(depthwise conv, clamp or None) when ``op`` is a depthwise conv kernel; the clamp is
    whatever single op follows it (checked by the caller)."""
    ops = list(Unit.of(op).ops)
    if not ops or not isinstance(ops[0], nn.ConvOp) or len(ops) > 2:
        return None
    conv = ops[0]
    f = conv_fields(conv)
    if f is None or f[1] != f[17] or len(op.results) != 1:  # C == group: depthwise
        return None
    return conv, (ops[1] if len(ops) == 2 else None)


def _consumer(op: Operation, v: SSAValue) -> nn.ConvOp | None:
    """The 1x1 conv of ``op`` that reads ``v`` first in its body, if any."""
    u = Unit.of(op)
    if not u.ops or not isinstance(u.ops[0], nn.ConvOp):
        return None
    conv = u.ops[0]
    if conv.x is not u.inner(v) or any(isinstance(o, nn.ConvOp) for o in u.ops[1:]):
        return None
    return conv


class _ChainFinder:
    def __init__(self, policy: FusionPolicy, log: RefusalLog, blocked: bool = False) -> None:
        self.policy = policy
        self.log = log
        self.blocked = blocked
        self.hw = hardware_for(policy.config.hardware)
        self.roofs = predict.Roofs.of(self.hw)

    def blocked_pays(self, dw: nn.ConvOp, pw: nn.ConvOp) -> bool:
        d, p = conv_fields(dw), conv_fields(pw)
        return d is not None and p is not None and clib.dwpw_blocked_pays(d, p, self.blocked)

    def expand_of(self, prod: Operation, cons: Operation, used: set[Operation]) -> Operation | None:
        """The unit (an expand 1x1 conv, + one clamp) whose output only the chain's depthwise
        conv reads, to join in front of it: where ``clib.edwpw_algo`` computes it inside the
        blocked band (``expand_dwpw_blocked``: AVX-512, at most ``clib.EDWPW_MAX_C`` input
        channels) and the policy allows the join; else None."""
        got = _producer(prod)
        if got is None:
            return None
        dw = got[0]
        v: SSAValue = dw.x
        if isinstance(prod, KernelOp):
            args = list(prod.body.block.args)
            if v not in args:
                return None
            v = prod.inputs[args.index(v)]  # type: ignore[arg-type]
        eop = v.owner
        if not isinstance(eop, Operation) or eop in used or len(eop.results) != 1:
            return None
        if eop.parent_block() is not prod.parent_block() or not v.has_one_use():
            return None
        ops = list(Unit.of(eop).ops)
        if not ops or not isinstance(ops[0], nn.ConvOp) or len(ops) > 2:
            return None
        ex, act = ops[0], (ops[1] if len(ops) == 2 else None)
        if act is not None and (not isinstance(act, CLAMPS) or act.operands[0] is not ex.y):
            return None
        pw = _consumer(cons, prod.results[0])
        e, d = conv_fields(ex), conv_fields(dw)
        p = conv_fields(pw) if pw is not None else None
        if e is None or d is None or p is None or precision_of(ex) != "fp32":
            return None
        if not clib.edwpw_applies(e, d, p):
            return None
        if clib.edwpw_algo(e, d, p, self.blocked) != "expand_dwpw_blocked":
            return None
        if e[clib.CONV_FIELDS.index("OH")] * e[clib.CONV_FIELDS.index("OW")] <= EXPAND_MAX_HW:
            return None  # assign-layout's gemm_1x1_b writes it in blocks for the chain
        r = self.policy.check(ops[-1], dw, FAMILY, [*ops, dw], [(*ops, dw)])
        if r is not None:
            self.log.add_refusal(r)
            return None
        return eop

    def decide(self, prod: Operation, cons: Operation) -> str | None:
        """``decided_by`` of a legal pair, or None (refusal logged)."""
        got = _producer(prod)
        v = prod.results[0]
        if got is None:
            return None
        dw, act = got
        readers = [u.operation for u in v.uses]
        conv = _consumer(cons, v)
        if conv is None or not is_dwpw(dw, conv):
            return None
        low = [c for c in (dw, conv) if precision_of(c) != "fp32"]
        if low:
            self.log.add("dtype", f"a conv computes in {precision_of(low[0])} (config "
                         "precision); the chain kernel computes in fp32", [dw, conv])  # fmt: skip
            return None
        if len(readers) != 1:
            self.log.add("multi-consumer", f"the depthwise output has {len(readers)} readers; "
                         "the chain would drop it from the others", [dw, *readers])  # fmt: skip
            return None
        if act is not None and (not isinstance(act, CLAMPS) or act.operands[0] is not dw.y):
            self.log.add("unsupported", f"the depthwise kernel's epilogue {act.name} is not "
                         "one Relu/Clip (the chain kernel clamps its tile)", [dw, act])  # fmt: skip
            return None
        p_ops, c_ops = list(Unit.of(prod).ops), list(Unit.of(cons).ops)
        # the kernel's body ops are not wired to ``conv``: give the rules the path itself
        paths = [(*p_ops, conv)]
        r = self.policy.check(p_ops[-1], conv, FAMILY, p_ops, paths)
        applies = r is None and self.policy.cost_applies(conv, p_ops, paths)
        # on the blocked band the chain saves the depthwise output's transposes, not traffic
        if applies and not self.blocked_pays(dw, conv):
            t = predict.conv_chain_times(p_ops, c_ops, self.hw, self.roofs)
            if t.mem_saved <= 0:
                r = Refusal("cost", f"the intermediate ({t.mid_bytes // 1024} KiB) stays in L2 "
                            "between the two kernels: no memory traffic to save",
                            nodes_of([p_ops[-1], conv]))  # fmt: skip
            elif t.fused >= t.parts:
                r = Refusal("cost", f"predicted fused time {1e6 * t.fused:.2f} us is not "
                            f"below the parts' {1e6 * t.parts:.2f} us",
                            nodes_of([p_ops[-1], conv]))  # fmt: skip
        if r is not None:
            self.log.add_refusal(r)
            return None
        return self.policy.approver(applies)


def fuse_dwpw_chains(module: ModuleOp, policy: FusionPolicy, blocked: bool = False) -> int:
    """Form the chain kernels; returns how many were formed. ``blocked``: the C build has
    ``afrt_dwpw_f32``'s blocked band (AVX-512; ``clib.dwpw_blocked_pays``)."""
    # per block: its finder (which caches per block) and the ops already in a chain
    state: dict[Block, tuple[_ChainFinder, set[Operation]]] = {}

    def propose(
        op: Operation, block: Block, log: RefusalLog
    ) -> tuple[tuple[Operation, ...], str] | None:
        finder, used = state.setdefault(block, (_ChainFinder(policy, log, blocked), set()))
        if op in used or _producer(op) is None or len(op.results) != 1:
            return None
        v = op.results[0]
        convs = [(u.operation, c) for u in v.uses if (c := _consumer(u.operation, v))]
        if not convs:
            return None
        cons, conv = convs[0]
        if cons in used or cons.parent_block() is not block:
            return None
        if policy.level == 0 or not policy.config.family_enabled(FAMILY):
            if v.has_one_use():
                r = policy.family_refusal(FAMILY, [Unit.of(op).ops[0], conv])
                if r is not None:
                    log.add_refusal(r)
            return None
        layer = finder.decide(op, cons)
        if layer is None:
            return None
        ex = finder.expand_of(op, cons, used)
        tops = (op, cons) if ex is None else (ex, op, cons)
        used.update(tops)
        return tops, layer

    return join_each(module, "chain_", propose)


@dataclass(frozen=True)
class FuseConvChain(PolicyPass):
    """Depthwise conv (+ clamp) -> 1x1 conv (+ epilogue) kernels, decided by the cost model."""

    name: ClassVar[str] = "fuse-conv-chain"
    symbolic: ClassVar[bool] = True  # docs/dynamic.md, "Symbolic import"

    policy: str = ""
    #: the build has AVX-512 and the config's ``conv_layout`` is ``auto`` (the pipeline sets
    #: it, as for ``lower-nn-to-loops``): pairs on the blocked band chain by the measured
    #: rule ``clib.dwpw_blocked_pays`` instead of the memory-traffic model
    blocked_convs: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_dwpw_chains(op, self.fusion_policy(), self.blocked_convs)
