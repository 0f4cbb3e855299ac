"""``legalize-contractions``: compute each Conv/MatMul/Gemm in f32 where the library has no
kernel for its own element type.

The C runtime (``afrt.h``) has f32 conv and GEMM only. An f16 Conv/MatMul/Gemm, and an f64
Conv/Gemm, is rebuilt on f32 tensors: its operands are widened (a constant operand is
converted at compile time, anything else through ``nn.cast``), and its result is cast back
once to the original element type. f64 MatMul keeps its exact plain loops and integer MatMul
its loops too, so they are left alone, as is every f32 contraction.

Tensor level (nn ops, wherever they are: in ``@main``, in ``fusion.kernel`` bodies or in the
kernel functions made by ``convert-nn-to-buffers``). In the default pipeline it runs between
``convert-nn-to-buffers`` and ``lower-nn-to-loops``; the latter refuses a contraction this pass
would have rewritten. Because the cast-back result is not f32, ``lower-nn-to-loops`` does not
fuse the contraction's elementwise users into the library call: they run as loops.

Example (f16 MatMul with a constant right operand)::

    %y = "nn.matmul"(%a, %w) : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
  becomes
    %a32 = "nn.cast"(%a) : (tensor<2x3xf16>) -> tensor<2x3xf32>
    %w32 = "nn.constant"() <{value = dense<...> : tensor<3x4xf32>}>
    %y32 = "nn.matmul"(%a32, %w32) : (...) -> tensor<2x4xf32>
    %y = "nn.cast"(%y32) : (tensor<2x4xf32>) -> tensor<2x4xf16>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from autofusion.dialects import dtypes, nn
from autofusion.dialects.base import type_dims
from autofusion.passes.options import CheckedPass

CONTRACTIONS = (nn.ConvOp, nn.MatMulOp, nn.GemmOp)


def needs_f32_compute(op: Operation) -> bool:
    """A Conv/Gemm/MatMul the library cannot run in its own element type (see module doc)."""
    if not isinstance(op, CONTRACTIONS):
        return False
    t = op.results[0].type
    if not isinstance(t, TensorType):
        return False
    if t.element_type == dtypes.f16:
        return True
    return t.element_type == dtypes.f64 and not isinstance(op, nn.MatMulOp)


def _f32_tensor(v: SSAValue) -> TensorType:
    t = v.type
    assert isinstance(t, TensorType)
    return dtypes.tensor_type(dtypes.f32, type_dims(t))


def _as_f32(v: SSAValue) -> Operation:
    """An op giving ``v`` as an f32 tensor: a converted constant or an ``nn.cast``."""
    owner = v.owner
    if isinstance(owner, nn.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        arr = dtypes.numpy_from_dense(owner.value).astype(np.float32)
        return nn.ConstantOp.create(
            result_types=[dtypes.tensor_type(dtypes.f32, arr.shape)],
            properties={"value": dtypes.dense_from_numpy(arr)},
            attributes=dict(owner.attributes),
        )
    return nn.CastOp.create(operands=[v], result_types=[_f32_tensor(v)])


class ComputeContractionInF32(RewritePattern):
    """Widen the operands of a contraction of ``needs_f32_compute``, cast its result back."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not needs_f32_compute(op):
            return
        old_consts = [v.owner for v in op.operands if isinstance(v.owner, nn.ConstantOp)]
        widened = [_as_f32(v) for v in op.operands]
        res = op.results[0]
        f32_op = type(op).create(
            operands=[w.results[0] for w in widened],
            result_types=[_f32_tensor(res)],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        back = nn.CastOp.create(operands=[f32_op.results[0]], result_types=[res.type])
        rewriter.replace(op, [*widened, f32_op, back], [back.results[0]])
        for c in old_consts:
            if c.parent is not None and not c.results[0].uses:
                rewriter.erase(c)


@dataclass(frozen=True)
class LegalizeContractions(CheckedPass):
    """Rebuild f16 (and f64 Conv/Gemm) contractions on f32 tensors with casts around them."""

    name: ClassVar[str] = "legalize-contractions"
    #: symbolic sizes: the widened tensors keep the operands' sizes
    symbolic: ClassVar[bool] = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([ComputeContractionInF32()], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
