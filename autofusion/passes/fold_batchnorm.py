"""``fold-batchnorm``: fold inference BatchNormalization into the preceding Conv/Gemm/MatMul.

Effect: ``bn(conv(x, W, b))`` becomes ``conv(x, W', b')`` with, per output channel ``c``,
``s = scale / sqrt(var + eps)``, ``W'[c] = W[c] * s``, ``b' = (b - mean) * s + bias``
(computed in float64, stored float32, as bytes-backed constants). For ``nn.gemm`` with a
constant B the columns of op(B) are scaled and C becomes the folded bias (``beta = 1``);
for a 2-d ``nn.matmul`` with a constant B the result is ``matmul(A, B') + b'`` (an
``nn.add`` that ``fuse`` later takes as an epilogue). The BN's channel axis (dim 1) must be
the contraction op's output-channel axis, so MatMul/Gemm outputs must be 2-d.

A BatchNormalization with constant statistics that no contraction produces (DenseNet's
pre-activation ``BN -> ReLU -> Conv`` on a Concat, a BN after a pool or an input) becomes
``x * s + shift`` (``nn.mul``, ``nn.add`` with ``[C, 1, ...]`` constants, float64 math as
above), so ``fuse`` puts it in one elementwise kernel with the activation that follows
instead of a BN kernel and a second pass over the tensor (f32 only; its ``not-a-constant``
refusal names the BN alone). A BN produced by a Conv / Gemm / MatMul that cannot be folded
is left for ``fuse-conv-bn-relu``.

Refusals (in ``fusion.refusals``): ``not-a-constant`` when the BN statistics, the weights
or the bias are computed (or elided); ``multi-consumer`` when the conv output has other
readers; ``shape-mismatch`` when dim 1 is not the output-channel axis; plus the policy
codes (family ``fold_batchnorm``).

Place: first tensor-level pass after canonicalize-nn. Options: ``config``,
``aggressiveness``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType, f32
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from autofusion import symbolic
from autofusion.dialects import nn
from autofusion.dialects.attrs import ORIGINS
from autofusion.dialects.base import shape_of
from autofusion.dialects.dtypes import dense_from_numpy
from autofusion.passes._match import const_value, constant_operands, erase_dead
from autofusion.passes.options import PolicyPass
from autofusion.policy.engine import FusionPolicy
from autofusion.policy.reasons import RefusalLog, merge_origins, origins_of

FAMILY = "fold_batchnorm"


def make_constant(arr: np.ndarray, origins: list[str]) -> nn.ConstantOp:
    c = nn.ConstantOp(dense_from_numpy(np.ascontiguousarray(arr.astype(np.float32))))
    if origins:
        c.attributes[ORIGINS] = ArrayAttr([StringAttr(o) for o in origins])
    return c


def set_origins(op: Operation, origins: list[str]) -> None:
    op.attributes[ORIGINS] = ArrayAttr([StringAttr(o) for o in origins])


def folded_constants(
    weight: SSAValue, bn: nn.BatchNormOp, w2: np.ndarray, b2: np.ndarray
) -> tuple[nn.ConstantOp, nn.ConstantOp]:
    """The folded weight (origins: the old weight's and the BN's) and bias (the BN's)."""
    wc = make_constant(w2, [*origins_of(weight.owner), *origins_of(bn)])  # type: ignore[arg-type]
    bc = make_constant(b2, [*origins_of(bn)])
    return wc, bc


def scale_shift(
    bn: nn.BatchNormOp, log: RefusalLog, ops: list[Operation]
) -> tuple[np.ndarray, np.ndarray] | None:
    """The per-channel ``(s, shift)`` with ``bn(x) = x * s + shift`` (float64), or None (a
    ``not-a-constant`` refusal on ``ops`` logged) when a statistic is not a constant."""
    stats = [const_value(v) for v in (bn.scale, bn.bias, bn.mean, bn.var)]
    if any(st is None for st in stats):
        log.add("not-a-constant", "BatchNormalization scale/bias/mean/var are not all constants",
                ops)  # fmt: skip
        return None
    scale, beta, mean, var = (np.asarray(st, dtype=np.float64) for st in stats)
    s = scale / np.sqrt(var + bn.epsilon)
    return s, beta - mean * s


def replace_pair(
    rewriter: PatternRewriter,
    prod: Operation,
    bn: nn.BatchNormOp,
    consts: tuple[nn.ConstantOp, nn.ConstantOp],
    new_ops: list[Operation],
    origins: list[str],
) -> None:
    """Replace ``bn(prod)`` by ``new_ops`` (the last gives the result; all take
    ``origins``), the folded ``consts`` placed before ``prod``; then erase ``prod`` and
    the old weights and statistics once nothing reads them."""
    for new in new_ops:
        set_origins(new, origins)
    stats = constant_operands(bn)
    rewriter.insert(list(consts), InsertPoint.before(prod))
    rewriter.replace(bn, new_ops, [new_ops[-1].results[0]])
    erase_dead(rewriter, [prod], root_constants=stats)


@dataclass
class FoldBatchNormIntoProducer(RewritePattern):
    """bn(conv|gemm|matmul) -> conv|gemm|matmul(+add) with folded constants."""

    policy: FusionPolicy
    log: RefusalLog = field(default_factory=RefusalLog)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: nn.BatchNormOp, rewriter: PatternRewriter) -> None:
        prod = bn.x.owner
        if not isinstance(prod, nn.ConvOp | nn.GemmOp | nn.MatMulOp):
            return
        pair: list[Operation] = [prod, bn]
        if (r := self.policy.family_refusal(FAMILY, pair)) is not None:
            self.log.add_refusal(r)
            return
        if not bn.x.has_one_use():
            self.log.add(
                "multi-consumer",
                f"{prod.name} result is also read outside the BatchNormalization",
                pair,
            )
            return
        got = scale_shift(bn, self.log, pair)
        if got is None:
            return
        s, shift = got
        origins = merge_origins(pair)
        if isinstance(prod, nn.ConvOp):
            self.fold_conv(prod, bn, s, shift, origins, rewriter)
        elif isinstance(prod, nn.GemmOp):
            self.fold_gemm(prod, bn, s, shift, origins, rewriter)
        else:
            self.fold_matmul(prod, bn, s, shift, origins, rewriter)

    def _weights(self, v: SSAValue, pair: list[Operation], what: str) -> np.ndarray | None:
        w = const_value(v)
        if w is None:
            self.log.add("not-a-constant", f"{what} is not a constant (or is elided)", pair)
        return w

    def fold_conv(
        self,
        conv: nn.ConvOp,
        bn: nn.BatchNormOp,
        s: np.ndarray,
        shift: np.ndarray,
        origins: list[str],
        rewriter: PatternRewriter,
    ) -> None:
        pair: list[Operation] = [conv, bn]
        w = self._weights(conv.w, pair, "convolution weight")
        if w is None:
            return
        b = np.zeros(w.shape[0]) if conv.bias is None else const_value(conv.bias)
        if b is None:
            self.log.add("not-a-constant", "convolution bias is not a constant", pair)
            return
        w2 = w.astype(np.float64) * s.reshape((-1,) + (1,) * (w.ndim - 1))
        b2 = b.astype(np.float64) * s + shift
        wc, bc = folded_constants(conv.w, bn, w2, b2)
        new = nn.ConvOp(
            conv.x,
            wc.y,
            bc.y,
            strides=conv.strides,
            pads=conv.pads,
            dilations=conv.dilations,
            group=conv.group,
            result_type=bn.y.type,
            attributes=conv.attributes,
        )
        replace_pair(rewriter, conv, bn, (wc, bc), [new], origins)

    def fold_gemm(
        self,
        gemm: nn.GemmOp,
        bn: nn.BatchNormOp,
        s: np.ndarray,
        shift: np.ndarray,
        origins: list[str],
        rewriter: PatternRewriter,
    ) -> None:
        pair: list[Operation] = [gemm, bn]
        if len(shape_of(gemm.out)) != 2:
            return
        w = self._weights(gemm.b, pair, "Gemm B")
        if w is None:
            return
        n = shape_of(gemm.out)[1]
        if isinstance(n, symbolic.Size):
            return  # a symbolic column count: no constant bias of that length
        if gemm.c is None:
            c = np.zeros(n)
        else:
            c0 = const_value(gemm.c)
            if c0 is None:
                self.log.add("not-a-constant", "Gemm C is not a constant", pair)
                return
            c = c0.astype(np.float64) * gemm.beta
        w64 = w.astype(np.float64)
        w2 = w64 * s[:, None] if gemm.trans_b else w64 * s[None, :]
        c2 = c * s + shift
        wc, cc = folded_constants(gemm.b, bn, w2, c2)
        new = nn.GemmOp(
            gemm.a,
            wc.y,
            cc.y,
            alpha=gemm.alpha,
            beta=1.0,
            trans_a=gemm.trans_a,
            trans_b=gemm.trans_b,
            result_type=bn.y.type,
            attributes=gemm.attributes,
        )
        replace_pair(rewriter, gemm, bn, (wc, cc), [new], origins)

    def fold_matmul(
        self,
        mm: nn.MatMulOp,
        bn: nn.BatchNormOp,
        s: np.ndarray,
        shift: np.ndarray,
        origins: list[str],
        rewriter: PatternRewriter,
    ) -> None:
        pair: list[Operation] = [mm, bn]
        if len(shape_of(mm.out)) != 2 or len(shape_of(mm.b)) != 2:
            self.log.add(
                "shape-mismatch",
                "BatchNormalization channel axis is not the MatMul's output axis",
                pair,
            )
            return
        w = self._weights(mm.b, pair, "MatMul B")
        if w is None:
            return
        w2 = w.astype(np.float64) * s[None, :]
        wc, bc = folded_constants(mm.b, bn, w2, shift)
        new_mm = nn.MatMulOp.build(
            operands=[mm.a, wc.y], result_types=[mm.out.type], attributes=dict(mm.attributes)
        )
        add = nn.AddOp.build(operands=[new_mm.out, bc.y], result_types=[bn.y.type])
        replace_pair(rewriter, mm, bn, (wc, bc), [new_mm, add], origins)


@dataclass
class BatchNormToScaleShift(RewritePattern):
    """bn(x) -> x * s + shift, when no contraction produces x (nothing to fold into).

    Only for f32 tensors (the constants are f32; other types keep the BN op)."""

    policy: FusionPolicy
    log: RefusalLog = field(default_factory=RefusalLog)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: nn.BatchNormOp, rewriter: PatternRewriter) -> None:
        if isinstance(bn.x.owner, nn.ConvOp | nn.GemmOp | nn.MatMulOp):
            return  # FoldBatchNormIntoProducer's case, or fuse-conv-bn-relu's if it refused
        xt = bn.x.type
        if not isinstance(xt, TensorType) or xt.element_type != f32:
            return
        if (r := self.policy.family_refusal(FAMILY, [bn])) is not None:
            self.log.add_refusal(r)
            return
        got = scale_shift(bn, self.log, [bn])
        if got is None:
            return
        s, shift = got
        bcast = (-1,) + (1,) * (len(shape_of(bn.x)) - 2)
        origins = origins_of(bn)
        sc = make_constant(s.reshape(bcast), origins)
        sh = make_constant(shift.reshape(bcast), origins)
        mul = nn.MulOp.build(operands=[bn.x, sc.y], result_types=[bn.y.type])
        add = nn.AddOp.build(operands=[mul.out, sh.y], result_types=[bn.y.type])
        for new in (mul, add):
            set_origins(new, origins)
        old = constant_operands(bn)
        rewriter.insert([sc, sh], InsertPoint.before(bn))
        rewriter.replace(bn, [mul, add], [add.out])
        erase_dead(rewriter, [], root_constants=old)


@dataclass(frozen=True)
class FoldBatchNorm(PolicyPass):
    """Fold BatchNormalization into Conv / Gemm / MatMul with constant weights; turn one
    with nothing to fold into into ``x * s + shift``."""

    name: ClassVar[str] = "fold-batchnorm"
    symbolic: ClassVar[bool] = True  # docs/dynamic.md, "Symbolic import"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        policy = self.fusion_policy()
        pattern = FoldBatchNormIntoProducer(policy)
        scale_shift = BatchNormToScaleShift(policy, pattern.log)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([pattern, scale_shift], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
        pattern.log.flush(op)
