"""``canonicalize-nn``: small clean-ups that make fusion patterns match more often.

- ``reshape(reshape(x))`` -> ``reshape(x)``; a reshape to its input's own type disappears
  (also ``transpose`` with the identity permutation).
- ``reshape(transpose(reshape(x)))`` -> ``transpose(reshape(x))`` (one transpose, its
  reshape gone when it would not change x's shape) where the last reshape splits each
  transposed dim into a run of dims: the dynamo exporter writes attention's K^T so, [B, H,
  T, D] -> [B*H, T, D] -> [B*H, D, T] -> [B, H, D, T], which is ``transpose(k, [0, 1, 3,
  2])``, the form ``recognize-attention`` reads K from without a copy.
- ``concat(a, b, c, d)`` where ``concat(a, b, c)`` (same axis) was computed before becomes
  ``concat(concat(a, b, c), d)``: torchvision's DenseNet concatenates every earlier feature
  map again in each layer; as a chain, ``plan-buffers`` writes each map once, in place, and
  every layer's concat is the prefix of the next (docs/memory.md, "Concat in place").
- Elementwise ``add/sub/mul/div`` (and ``neg/sqrt/reciprocal``) of constants with at most
  ``fold_limit`` result elements are evaluated (numpy, in the constants' dtype) into one
  ``nn.constant``.

- Common subexpressions: an op that computes what an earlier op of the same block computes
  (same op and attributes, same operands -- a constant operand of at most ``fold_limit``
  elements counted by its value -- same result types) is replaced by that earlier op, which
  takes its origins. Exporters repeat per layer what depends only on the model's inputs:
  transformers' BERT writes the attention mask's ``Where(mask, 0, -inf)`` once per layer,
  each with its own pair of constants, which wrote 12 copies of the mask; now one. The
  constants themselves are never merged (a pass may rewrite one constant for its one user).

Ops whose results nothing reads are erased (an ONNX node that reaches no graph output).
Origins of removed ops are carried to the op that replaces them. Place: first, right after
import. Option: ``fold_limit`` (default 65536 elements).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import Pure

from autofusion.analysis.cost import numel
from autofusion.dialects import nn
from autofusion.dialects.attrs import ORIGINS
from autofusion.dialects.base import shape_of, tensor_of
from autofusion.dialects.dtypes import dense_from_numpy, tensor_type
from autofusion.interpreter import elementwise as interp
from autofusion.passes._match import const_value, set_merged_origins
from autofusion.passes.options import CheckedPass

# The ops folded here, evaluated with the interpreter's implementation (one meaning per op).
_BINARY = {t: interp.BINARY[t] for t in (nn.AddOp, nn.SubOp, nn.MulOp, nn.DivOp)}
_UNARY = {t: interp.UNARY[t] for t in (nn.NegOp, nn.SqrtOp, nn.ReciprocalOp)}


class CollapseReshapes(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.x.type == op.y.type:
            rewriter.replace(op, [], [op.x])
            return
        inner = op.x.owner
        if isinstance(inner, nn.ReshapeOp):
            new = nn.ReshapeOp.build(operands=[inner.x], result_types=[op.y.type])
            set_merged_origins(new, [inner, op])
            rewriter.replace(op, new)
            if not inner.y.uses:
                rewriter.erase(inner)


def _merged_runs(src: list[int], dst: list[int]) -> list[list[int]] | None:
    """How a reshape from ``src`` to ``dst`` merges runs of consecutive dims: for each dst dim
    the src dims it is the product of (a run of 1-dims for a dst 1; size-1 src dims left at
    the end join the last run), or None if some dst dim is not such a product."""
    runs: list[list[int]] = []
    i = 0
    for m in dst:
        run: list[int] = []
        if m == 1:
            while i < len(src) and src[i] == 1:
                run.append(i)
                i += 1
        else:
            prod = 1
            while i < len(src) and prod < m:
                prod *= src[i]
                run.append(i)
                i += 1
            if prod != m:
                return None
        runs.append(run)
    rest = list(range(i, len(src)))
    if any(src[j] != 1 for j in rest) or (rest and not runs):
        return None
    if rest:
        runs[-1].extend(rest)
    return runs


class TransposeThroughReshapes(RewritePattern):
    """``reshape(transpose(reshape(x, M), p), O)`` -> ``transpose(reshape(x, Y), q)`` (the
    reshape left out when ``Y`` is x's own shape) when O splits each dim of the transposed
    ``M`` into a run of dims: Y is O's runs in M's order and q moves them as blocks, the
    same element order (static shapes; the transpose read only here). The dynamo
    exporter's K^T, [B, H, T, D] -> [B*H, T, D] -> [B*H, D, T] -> [B, H, D, T], becomes
    ``transpose(k, [0, 1, 3, 2])``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ReshapeOp, rewriter: PatternRewriter) -> None:
        t = op.x.owner
        if not isinstance(t, nn.TransposeOp) or not t.y.has_one_use():
            return
        inner = t.x.owner
        if not isinstance(inner, nn.ReshapeOp):
            return
        dims = [shape_of(v) for v in (inner.x, t.y, op.y)]
        if not all(isinstance(d, int) for ds in dims for d in ds):
            return
        src, moved, out = ([int(d) for d in ds] for ds in dims)
        runs = _merged_runs(out, moved)  # runs[j]: the dims of O that moved dim j splits into
        if runs is None:
            return
        block = {k: runs[j] for j, k in enumerate(t.perm)}  # M's dim k -> its run of O
        y_dims = [out[o] for k in range(len(t.perm)) for o in block[k]]
        first: dict[int, int] = {}
        for k in range(len(t.perm)):
            first[k] = sum(len(block[i]) for i in range(k))
        perm = [first[k] + n for k in t.perm for n in range(len(block[k]))]
        ops: list[Operation] = []
        y = inner.x
        if y_dims != src:
            r = nn.ReshapeOp.build(
                operands=[inner.x],
                result_types=[tensor_type(tensor_of(inner.x).element_type, y_dims)],
            )
            set_merged_origins(r, [inner])
            ops.append(r)
            y = r.y
        new = nn.TransposeOp(y, perm=perm)
        if new.y.type != op.y.type:
            return
        set_merged_origins(new, [inner, t, op])
        for o in ops:
            rewriter.insert(o, InsertPoint.before(op))
        rewriter.replace(op, new)
        rewriter.erase(t)
        if not inner.y.uses:
            rewriter.erase(inner)


class DropIdentityTranspose(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.TransposeOp, rewriter: PatternRewriter) -> None:
        if list(op.perm) == list(range(len(op.perm))):
            rewriter.replace(op, [], [op.x])


class ReuseConcatPrefix(RewritePattern):
    """``concat(xs + ys)`` -> ``concat(concat(xs), ys)`` when ``concat(xs)`` (at least two
    operands, same axis) is computed earlier in the same block; the longest such prefix."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ConcatOp, rewriter: PatternRewriter) -> None:
        ins = list(op.inputs)
        if len(ins) < 3:
            return
        best: nn.ConcatOp | None = None
        for use in ins[0].uses:
            c = use.operation
            if (
                isinstance(c, nn.ConcatOp)
                and c is not op
                and c.axis == op.axis
                and 2 <= len(c.inputs) < len(ins)
                and list(c.inputs) == ins[: len(c.inputs)]
                and c.parent_block() is op.parent_block()
                and c.is_before_in_block(op)
                and (best is None or len(c.inputs) > len(best.inputs))
            ):
                best = c
        if best is None:
            return
        new = nn.ConcatOp([best.y, *ins[len(best.inputs) :]], axis=op.axis, result_type=op.y.type)
        set_merged_origins(new, [op])
        rewriter.replace(op, new)


@dataclass
class FoldConstantArithmetic(RewritePattern):
    limit: int

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        fn = _BINARY.get(type(op)) or _UNARY.get(type(op))  # type: ignore[call-overload]
        if fn is None or numel(op.results[0]) > self.limit:
            return
        args = [const_value(v) for v in op.operands]
        if any(a is None for a in args) or args[0].dtype.kind != "f":  # type: ignore[union-attr]
            return
        with np.errstate(all="ignore"):
            val = np.asarray(fn(*args)).astype(args[0].dtype)  # type: ignore[union-attr]
        c = nn.ConstantOp(dense_from_numpy(val))
        if c.y.type != op.results[0].type:
            return
        set_merged_origins(c, [op])
        rewriter.replace(op, c)


@dataclass(frozen=True)
class CanonicalizeNN(CheckedPass):
    """Reshape/transpose clean-up and small constant folding."""

    name: ClassVar[str] = "canonicalize-nn"
    symbolic: ClassVar[bool] = True  # docs/dynamic.md, "Symbolic import"

    fold_limit: int = 65536

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # last concat first: each one finds the earlier ones still flat, so it takes the
        # longest prefix (walking forward, the earlier ones are already chains)
        PatternRewriteWalker(
            ReuseConcatPrefix(), apply_recursively=False, walk_reverse=True
        ).rewrite_module(op)
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    CollapseReshapes(),
                    TransposeThroughReshapes(),
                    DropIdentityTranspose(),
                    FoldConstantArithmetic(self.fold_limit),
                ],
                dce_enabled=False,
            ),
            apply_recursively=False,
        ).rewrite_module(op)
        bodies = [b for f in op.ops for region in f.regions for b in region.blocks]
        for block in bodies:
            _eliminate_common_subexpressions(block, self.fold_limit)
        # ops nothing reads (constants left by folding, ONNX nodes whose results reach no
        # graph output), in the bodies of the module's functions, last first so chains go.
        # A dead reshape of a graph input would otherwise leave that input's pointer unused
        # in the C (-Werror=unused-variable), and a dead kernel would still run.
        for block in bodies:
            for o in reversed(list(block.ops)):
                if _is_dead_nn(o):
                    Rewriter.erase_op(o)


def _is_pure_nn(o: Operation) -> bool:
    """A side-effect-free ``nn`` op with results."""
    return o.name.startswith("nn.") and o.has_trait(Pure) and bool(o.results)


def _is_dead_nn(o: Operation) -> bool:
    """A side-effect-free ``nn`` op none of whose results is used."""
    return _is_pure_nn(o) and not any(r.uses for r in o.results)


def _cse_key(o: Operation, limit: int) -> Hashable | None:
    """What ``o`` computes, for :func:`_eliminate_common_subexpressions`; None for an op
    that is not merged (a constant, an op with regions or effects, a non-``nn`` op). Not
    xDSL's ``cse``: that merges the constants too (hashing every weight) and compares a
    constant operand by identity, so each layer's own copy of 0 kept its ops apart."""
    if isinstance(o, nn.ConstantOp) or not _is_pure_nn(o) or o.regions or o.successors:
        return None
    operands: list[Hashable] = []
    for v in o.operands:
        c = v.owner
        if isinstance(c, nn.ConstantOp) and not c.is_elided and numel(c.y) <= limit:
            operands.append((c.y.type, c.value))  # by value: each layer's own copy of 0
        else:
            operands.append(v)
    attrs = tuple(sorted((k, a) for k, a in o.attributes.items() if k != ORIGINS))
    props = tuple(sorted(o.properties.items()))
    key = (o.name, tuple(operands), tuple(r.type for r in o.results), attrs, props)
    try:
        hash(key)
    except TypeError:  # an attribute that cannot be hashed: left as it is, not a crash
        return None
    return key


def _eliminate_common_subexpressions(block: Block, limit: int) -> None:
    """Replace each op of ``block`` that an earlier op computes again by that op (in block
    order, so an op whose operands were merged meets its twin next); the earlier op takes
    the later one's origins. The later op's constants are left to the dead-op erasure."""
    seen: dict[Hashable, Operation] = {}
    for o in list(block.ops):
        key = _cse_key(o, limit)
        if key is None:
            continue
        first = seen.setdefault(key, o)
        if first is o:
            continue
        set_merged_origins(first, [first, o])
        for old, new in zip(o.results, first.results, strict=True):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(o)
