"""``fold-batchnorm``: fold inference BatchNormalization into the preceding Conv/Gemm/MatMul.

Effect: ``bn(conv(x, W, b))`` becomes ``conv(x, W', b')`` with, per output channel ``c``,
``s = scale / sqrt(var + eps)``, ``W'[c] = W[c] * s``, ``b' = (b - mean) * s + bias``
(computed in float64, stored float32, as bytes-backed constants). For ``nn.gemm`` with a
constant B the columns of op(B) are scaled and C becomes the folded bias (``beta = 1``);
for a 2-d ``nn.matmul`` with a constant B the result is ``matmul(A, B') + b'`` (an
``nn.add`` that ``fuse`` later takes as an epilogue). The BN's channel axis (dim 1) must be
the contraction op's output-channel axis, so MatMul/Gemm outputs must be 2-d.

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
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from autofusion.dialects import nn
from autofusion.dialects.base import shape_of
from autofusion.dialects.dtypes import dense_from_numpy, numpy_from_dense
from autofusion.policy.engine import FusionPolicy
from autofusion.policy.reasons import RefusalLog, merge_origins, origins_of

FAMILY = "fold_batchnorm"


def constant_array(v: SSAValue | None) -> np.ndarray | None:
    """The numpy value of a (non-elided) nn.constant, else None."""
    if v is None:
        return None
    op = v.owner
    if isinstance(op, nn.ConstantOp) and isinstance(op.value, DenseIntOrFPElementsAttr):
        return numpy_from_dense(op.value)
    return None


def make_constant(arr: np.ndarray, origins: list[str]) -> nn.ConstantOp:
    c = nn.ConstantOp(dense_from_numpy(np.ascontiguousarray(arr.astype(np.float32))))
    if origins:
        c.attributes["onnx.origins"] = ArrayAttr([StringAttr(o) for o in origins])
    return c


def set_origins(op: Operation, origins: list[str]) -> None:
    op.attributes["onnx.origins"] = ArrayAttr([StringAttr(o) for o in origins])


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
        stats = [constant_array(v) for v in (bn.scale, bn.bias, bn.mean, bn.var)]
        if any(s is None for s in stats):
            self.log.add(
                "not-a-constant",
                "BatchNormalization scale/bias/mean/var are not all constants",
                pair,
            )
            return
        scale, beta, mean, var = (np.asarray(s, dtype=np.float64) for s in stats)  # type: ignore[arg-type]
        s = scale / np.sqrt(var + bn.float_prop("epsilon"))
        shift = beta - mean * s
        origins = merge_origins(pair)
        stat_ops = [v.owner for v in (bn.scale, bn.bias, bn.mean, bn.var)]
        if isinstance(prod, nn.ConvOp):
            self.fold_conv(prod, bn, s, shift, origins, rewriter)
        elif isinstance(prod, nn.GemmOp):
            self.fold_gemm(prod, bn, s, shift, origins, rewriter)
        else:
            self.fold_matmul(prod, bn, s, shift, origins, rewriter)
        if bn.parent is None:  # folded: drop statistics nothing else reads
            for c in dict.fromkeys(stat_ops):
                if isinstance(c, nn.ConstantOp) and c.parent is not None and not c.y.uses:
                    rewriter.erase(c)

    def _weights(self, v: SSAValue, pair: list[Operation], what: str) -> np.ndarray | None:
        w = constant_array(v)
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
        b = np.zeros(w.shape[0]) if conv.bias is None else constant_array(conv.bias)
        if b is None:
            self.log.add("not-a-constant", "convolution bias is not a constant", pair)
            return
        w2 = w.astype(np.float64) * s.reshape((-1,) + (1,) * (w.ndim - 1))
        b2 = b.astype(np.float64) * s + shift
        wc = make_constant(w2, [*origins_of(conv.w.owner), *origins_of(bn)])  # type: ignore[arg-type]
        bc = make_constant(b2, [*origins_of(bn)])
        new = nn.ConvOp.build(
            operands=[conv.x, wc.y, bc.y],
            result_types=[bn.y.type],
            properties=dict(conv.properties),
            attributes=dict(conv.attributes),
        )
        set_origins(new, origins)
        rewriter.insert([wc, bc], _before(conv))
        rewriter.replace(bn, new)
        _erase_dead(rewriter, conv)

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
        if gemm.c is None:
            c = np.zeros(n)
        else:
            c0 = constant_array(gemm.c)
            if c0 is None:
                self.log.add("not-a-constant", "Gemm C is not a constant", pair)
                return
            c = c0.astype(np.float64) * gemm.float_prop("beta")
        w64 = w.astype(np.float64)
        w2 = w64 * s[:, None] if gemm.bool_prop("trans_b") else w64 * s[None, :]
        c2 = c * s + shift
        wc = make_constant(w2, [*origins_of(gemm.b.owner), *origins_of(bn)])  # type: ignore[arg-type]
        cc = make_constant(c2, [*origins_of(bn)])
        props = dict(gemm.properties)
        props["beta"] = FloatAttr(1.0, gemm.beta.type)
        new = nn.GemmOp.build(
            operands=[gemm.a, wc.y, cc.y],
            result_types=[bn.y.type],
            properties=props,
            attributes=dict(gemm.attributes),
        )
        set_origins(new, origins)
        rewriter.insert([wc, cc], _before(gemm))
        rewriter.replace(bn, new)
        _erase_dead(rewriter, gemm)

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
        wc = make_constant(w2, [*origins_of(mm.b.owner), *origins_of(bn)])  # type: ignore[arg-type]
        bc = make_constant(shift, [*origins_of(bn)])
        new_mm = nn.MatMulOp.build(
            operands=[mm.a, wc.y], result_types=[mm.out.type], attributes=dict(mm.attributes)
        )
        set_origins(new_mm, origins)
        add = nn.AddOp.build(operands=[new_mm.out, bc.y], result_types=[bn.y.type])
        set_origins(add, origins)
        rewriter.insert([wc, bc], _before(mm))
        rewriter.replace(bn, [new_mm, add], [add.out])
        _erase_dead(rewriter, mm)


def _before(op: Operation):  # type: ignore[no-untyped-def]
    from xdsl.rewriter import InsertPoint

    return InsertPoint.before(op)


def _erase_dead(rewriter: PatternRewriter, op: Operation) -> None:
    """Erase ``op`` and then its constant operands, once nothing reads them."""
    if any(r.uses for r in op.results):
        return
    consts = [v.owner for v in op.operands if isinstance(v.owner, nn.ConstantOp)]
    rewriter.erase(op)
    for c in consts:
        if isinstance(c, nn.ConstantOp) and not c.y.uses and c.parent is not None:
            rewriter.erase(c)


@dataclass(frozen=True)
class FoldBatchNorm(ModulePass):
    """Fold BatchNormalization into Conv / Gemm / MatMul with constant weights."""

    name: ClassVar[str] = "fold-batchnorm"

    config: str = ""
    aggressiveness: int = -1

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        policy = FusionPolicy.resolve(self.config or None, self.aggressiveness)
        pattern = FoldBatchNormIntoProducer(policy)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([pattern], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
        pattern.log.flush(op)
