"""``fuse-conv-pool``: a blocked stem conv (+ Relu / Clip) and the max pool reading it, one kernel.

Effect: for each 2-d ``nn.max_pool`` whose input is the output of a stem conv kernel that
``assign-layout`` made write 16-channel blocks from the NCHW image (``layout.y`` NCHW16c,
no ``layout.x``: ``direct_smallc_b``) and whose pool it made read them (``layout.x``), the
conv kernel (the conv alone or with one ``nn.relu`` / ``nn.clip``; bias inside the conv) and
the pool become one ``fusion.kernel`` named ``convpool_`` + its ops
(``convpool_conv_relu_max_pool``) when the conv's output has no other reader and
``clib.convpool_fits`` takes the pair (the window spans at most ``clib.CONVPOOL_MAX_ROWS``
rows; any stride, pads, dilation and ceil-mode size). The C backend runs it as
``afrt_convpool_nc_f32`` (afrt_convchain.h): each thread computes the stem's rows in order
into a ring of a few rows and pools every pool row as soon as its window's last row is done,
so the stem's output (3 MB for SqueezeNet-1.1's 64 x 111 x 111) is never written; the buffer
plan gives it no arena slot.

The decision is a rule (``decided_by = rules``, or ``policy`` with a user policy), measured
rather than modelled: SqueezeNet-1.1's stem and pool took 0.88-0.90 of their time apart
(docs/runtime.md, "The stem and its pool as one kernel"). Refusals: ``multi-consumer`` (the
conv's output has other readers), ``unsupported`` (the conv kernel's epilogue is not one
Relu / Clip, or the pool window spans more rows than the ring holds), ``dtype`` (a 16-bit
conv), and the policy codes of family ``conv_pool`` (aggressiveness, ``patterns: {conv_pool:
false}``, blacklists such as ``"Relu->MaxPool"``, user policies asked for the conv -> pool
edge).

Place: after ``assign-layout`` (it needs that pass's marks, so it forms nothing without
them: no AVX-512, ``conv_layout`` not ``auto`` or a memory limit); target c only. Options:
``config``, ``aggressiveness``, ``policy``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation

from autofusion.analysis.conv_chain import CLAMPS, clamp_of, conv_pool_unit, pool_fields
from autofusion.dialects import clib, nn
from autofusion.dialects.attrs import LAYOUT_X, LAYOUT_Y, is_blocked
from autofusion.passes.assign_precision import precision_of
from autofusion.passes.fuse import join_each, outer_value
from autofusion.passes.fuse_conv_chain import Unit
from autofusion.passes.options import PolicyPass
from autofusion.policy.engine import FusionPolicy
from autofusion.policy.reasons import RefusalLog

FAMILY = "conv_pool"


def _candidate(top: Operation, block: Block) -> tuple[Operation, nn.MaxPoolOp] | None:
    """(the stem's top-level op, the pool) when ``top`` is a max pool (bare or alone in a
    kernel) on blocks reading a blocked stem conv's kernel of this block; else None."""
    ops = Unit.of(top).ops
    if len(ops) != 1 or not isinstance(ops[0], nn.MaxPoolOp) or len(top.results) != 1:
        return None
    pool = ops[0]
    if not is_blocked(pool, LAYOUT_X) or pool_fields(pool) is None:
        return None
    prod = outer_value(top, pool.x).owner
    if not isinstance(prod, Operation) or prod.parent_block() is not block:
        return None
    conv = Unit.of(prod).ops[0] if Unit.of(prod).ops else None
    if not isinstance(conv, nn.ConvOp) or is_blocked(conv, LAYOUT_X):
        return None
    if not is_blocked(conv, LAYOUT_Y):
        return None
    return prod, pool


def _decide(
    prod: Operation, top: Operation, pool: nn.MaxPoolOp, policy: FusionPolicy, log: RefusalLog
) -> str | None:
    """``decided_by`` of a legal, allowed join of stem ``prod`` and ``pool``; else None (the
    refusal logged)."""
    ops = list(Unit.of(prod).ops)
    conv, act = ops[0], (ops[1] if len(ops) == 2 else None)
    assert isinstance(conv, nn.ConvOp)
    v = outer_value(top, pool.x)
    readers = [u.operation for u in v.uses]
    if len(prod.results) != 1 or len(readers) != 1:
        log.add("multi-consumer", f"the conv's output has {len(readers)} readers; the fused "
                "kernel never stores it", [ops[-1], *readers])  # fmt: skip
        return None
    clamp = act is None or (isinstance(act, CLAMPS) and act.operands[0] is conv.y)
    if len(ops) > 2 or not clamp or any(map(math.isnan, clamp_of(act))):
        log.add("unsupported", "the conv kernel's epilogue is not one Relu/Clip with numeric "
                "bounds (the fused kernel clamps in registers)", [*ops, pool])  # fmt: skip
        return None
    if precision_of(conv) != "fp32":
        log.add("dtype", f"the conv computes in {precision_of(conv)} (config precision); the "
                "fused kernel computes in fp32", [conv, pool])  # fmt: skip
        return None
    if conv_pool_unit(conv, act, pool) is None:
        k, d = pool.kernel[0], pool.dilations[0]
        log.add("unsupported", f"the max pool's window spans {(k - 1) * d + 1} rows; the fused "
                f"kernel keeps at most {clib.CONVPOOL_MAX_ROWS}", [conv, pool])  # fmt: skip
        return None
    r = policy.check(ops[-1], pool, FAMILY, ops, [(*ops, pool)])
    if r is not None:
        log.add_refusal(r)
        return None
    return policy.approver(False)  # a measured rule: no cost model asked


def _propose(
    top: Operation, block: Block, log: RefusalLog, policy: FusionPolicy
) -> tuple[tuple[Operation, Operation], str] | None:
    got = _candidate(top, block)
    if got is None:
        return None
    prod, pool = got
    layer = _decide(prod, top, pool, policy, log)
    return None if layer is None else ((prod, top), layer)


def fuse_conv_pools(module: ModuleOp, policy: FusionPolicy) -> int:
    """Form the stem + max pool kernels; returns how many were formed."""
    return join_each(module, "convpool_", lambda t, b, log: _propose(t, b, log, policy))


@dataclass(frozen=True)
class FuseConvPool(PolicyPass):
    """Blocked stem conv (+ clamp) -> max pool kernels (``afrt_convpool_nc_f32``)."""

    name: ClassVar[str] = "fuse-conv-pool"

    policy: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_conv_pools(op, self.fusion_policy())
