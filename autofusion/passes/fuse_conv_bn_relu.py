"""``fuse-conv-bn-relu``: Conv(+BN)(+bias)(+residual Add)(+activation) -> one fusion.kernel.

Effect: starting at each ``nn.conv``, follows the single reader of its result through, in
this order and each optional: ``nn.batch_norm`` (when fold-batchnorm could not fold it), a
per-channel bias ``nn.add`` of a constant, one residual ``nn.add`` of a tensor of the conv
output's shape, and one activation — Relu, Clip (Relu6), LeakyRelu, Sigmoid, Tanh,
HardSigmoid, Gelu. Two or more ops found become one ``fusion.kernel`` named for its parts
(``conv_bn_relu``, ``conv_add_relu``, ``conv_relu6`` ...) with their ONNX origins.

A step is refused (reason recorded in ``fusion.refusals``) when the intermediate has other
readers (``multi-consumer``), the residual does not match the conv's shape
(``shape-mismatch``), or the policy says no (``blacklisted``, ``disabled``,
``aggressiveness``, ``policy``; family ``conv_bn_relu``). The chain then ends there.

Place: after fold-batchnorm, before fuse. Options as for ``fuse``: ``config``,
``aggressiveness``, ``policy``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from autofusion.analysis import cost, predict
from autofusion.analysis.hardware import hardware_for
from autofusion.dialects import nn
from autofusion.dialects.base import shape_of
from autofusion.passes._match import sole_user
from autofusion.passes.fuse import main_funcs, outline, short_name
from autofusion.passes.options import PolicyPass
from autofusion.policy.engine import FusionPolicy
from autofusion.policy.reasons import Refusal, RefusalLog, group_layer, nodes_of
from autofusion.symbolic import shape_text

ACTIVATIONS = (
    nn.ReluOp,
    nn.ClipOp,
    nn.LeakyReluOp,
    nn.SigmoidOp,
    nn.TanhOp,
    nn.HardSigmoidOp,
    nn.GeluOp,
)
FAMILY = "conv_bn_relu"


def _is_channel_bias(op: Operation, v: SSAValue) -> bool:
    if not isinstance(op, nn.AddOp):
        return False
    other = op.rhs if op.lhs is v else op.lhs
    if not isinstance(other.owner, nn.ConstantOp):
        return False
    out = shape_of(v)
    s = shape_of(other)
    if len(out) < 2 or len(s) > len(out):
        return False
    padded = (1,) * (len(out) - len(s)) + s
    return all(d == 1 for i, d in enumerate(padded) if i != 1) and padded[1] in (1, out[1])


def _is_residual(op: Operation, v: SSAValue) -> bool:
    if not isinstance(op, nn.AddOp):
        return False
    other = op.rhs if op.lhs is v else op.lhs
    return not isinstance(other.owner, nn.ConstantOp)


class _ChainBuilder:
    def __init__(self, policy: FusionPolicy, log: RefusalLog) -> None:
        self.policy = policy
        self.log = log
        self.hw = hardware_for(policy.config.hardware)
        self.roofs = predict.Roofs.of(self.hw)
        self.claimed: set[Operation] = set()
        #: the layer that let each joined op in (``decided_by`` of the kernel)
        self.approved_by: dict[Operation, str] = {}

    def step_ok(self, chain: list[Operation], nxt: Operation, v: SSAValue) -> bool:
        r = self.policy.check(chain[-1], nxt, FAMILY, chain)
        applies = r is None and self.policy.cost_applies(nxt, chain)
        if applies:
            est = cost.estimate_join(chain, nxt, v, self.hw)
            if not est.profitable:
                r = Refusal("cost", est.why, nodes_of([chain[-1], nxt]))
            elif (why := predict.slower_when_fused(chain, nxt, self.hw, self.roofs)) is not None:
                r = Refusal("cost", why, nodes_of([chain[-1], nxt]))
        if r is not None:
            self.log.add_refusal(r)
            return False
        self.approved_by[nxt] = self.policy.approver(applies)
        return True

    def build(self, conv: nn.ConvOp) -> list[Operation]:
        chain: list[Operation] = [conv]
        v: SSAValue = conv.y
        stages = ["bn", "bias", "residual", "act"]
        while stages:
            if v.uses.get_length() == 0:
                break
            nxt = sole_user(v)
            if nxt is None:
                readers = [u.operation for u in v.uses]
                if any(self._stage_of(r, v, stages) for r in readers):
                    self.log.add(
                        "multi-consumer",
                        f"{chain[-1].name} result has {len(readers)} readers; "
                        "fusing would drop it from the others",
                        [chain[-1], *readers],
                    )
                break
            stage = self._stage_of(nxt, v, stages)
            if stage is None or nxt in self.claimed:
                break
            if stage == "residual" and shape_of(nxt.results[0]) != shape_of(conv.y):
                self.log.add(
                    "shape-mismatch",
                    f"residual add broadcasts the conv output {shape_text(shape_of(conv.y))} "
                    f"to {shape_text(shape_of(nxt.results[0]))}",
                    [chain[-1], nxt],
                )
                break
            if not self.step_ok(chain, nxt, v):
                break
            chain.append(nxt)
            v = nxt.results[0]
            stages = stages[stages.index(stage) + 1 :]
        if len(chain) >= 2:
            self.claimed.update(chain)
        return chain

    @staticmethod
    def _stage_of(op: Operation, v: SSAValue, stages: list[str]) -> str | None:
        for st in stages:
            if st == "bn" and isinstance(op, nn.BatchNormOp) and op.x is v:
                return st
            if st == "bias" and _is_channel_bias(op, v):
                return st
            if st == "residual" and _is_residual(op, v):
                return st
            if st == "act" and isinstance(op, ACTIVATIONS):
                return st
        return None


def fuse_conv_chains(module: ModuleOp, policy: FusionPolicy) -> int:
    """Form the kernels; returns how many were formed."""
    log = RefusalLog()
    formed = 0
    for f in main_funcs(module):
        block = f.body.block
        convs = [o for o in block.ops if isinstance(o, nn.ConvOp)]
        if not convs:
            continue
        if policy.level == 0 or not policy.config.family_enabled(FAMILY):
            r = policy.family_refusal(FAMILY, convs[:1])
            if r is not None:
                log.add_refusal(r)
            continue
        builder = _ChainBuilder(policy, log)
        groups = []
        for conv in convs:
            chain = builder.build(conv)
            if len(chain) >= 2:
                groups.append((chain, set(), "_".join(short_name(o) for o in chain)))
        layers = [group_layer(builder.approved_by.get(o, "") for o in g[0]) for g in groups]
        formed += len(outline(block, groups, layers))
    log.flush(module)
    return formed


@dataclass(frozen=True)
class FuseConvBnRelu(PolicyPass):
    """Conv + BN + bias + residual + activation chains into one kernel each."""

    name: ClassVar[str] = "fuse-conv-bn-relu"
    symbolic: ClassVar[bool] = True  # docs/dynamic.md, "Symbolic import"

    policy: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_conv_chains(op, self.fusion_policy())
