"""Small matching helpers shared by the recognize-*, canonicalize-nn and fold-batchnorm
passes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, DenseIntOrFPElementsAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from autofusion.dialects import nn
from autofusion.dialects.attrs import ORIGINS
from autofusion.policy.config import load_config
from autofusion.policy.reasons import merge_origins


def const_value(v: SSAValue | None) -> np.ndarray | None:
    if v is None:
        return None
    op = v.owner
    if isinstance(op, nn.ConstantOp) and isinstance(op.value, DenseIntOrFPElementsAttr):
        from autofusion.dialects.dtypes import numpy_from_dense

        return numpy_from_dense(op.value)
    return None


def const_scalar(v: SSAValue | None) -> float | None:
    """The value of a constant whose elements are all equal (a scalar or splat)."""
    arr = const_value(v)
    if arr is None or arr.size == 0 or arr.dtype.kind != "f":
        return None
    first = float(arr.reshape(-1)[0])
    if arr.size > 1 and not np.all(arr == first):
        return None
    return first


def close(a: float | None, b: float, rel: float = 1e-3) -> bool:
    return a is not None and abs(a - b) <= rel * max(abs(b), 1e-12)


def sole_user(v: SSAValue) -> Operation | None:
    if not v.has_one_use():
        return None
    return next(iter(v.uses)).operation


def other_operand(op: Operation, v: SSAValue) -> SSAValue | None:
    """For a binary op reading ``v``, its other operand."""
    if len(op.operands) != 2:
        return None
    a, b = op.operands
    if a is v:
        return b
    if b is v:
        return a
    return None


def set_merged_origins(new: Operation, old: Sequence[Operation]) -> None:
    names = merge_origins(old)
    if names:
        new.attributes[ORIGINS] = ArrayAttr([StringAttr(n) for n in names])


def erase_dead(
    rewriter: PatternRewriter,
    ops: Sequence[Operation],
    keep: Operation | None = None,
    root_constants: Sequence[Operation] = (),
) -> None:
    """Erase the matched ``ops`` that nothing reads any more (readers first), then the
    constants they read that became unused. ``keep`` (the root, already replaced) is not
    erased again; ``root_constants`` are its constant operands, taken before replacing."""
    consts: list[Operation] = []
    consts.extend(root_constants)
    pending = [o for o in ops if o is not keep]
    changed = True
    while changed:
        changed = False
        for o in list(pending):
            if o.parent is None:
                pending.remove(o)
                continue
            if all(not r.uses for r in o.results):
                consts.extend(v.owner for v in o.operands if isinstance(v.owner, nn.ConstantOp))
                rewriter.erase(o)
                pending.remove(o)
                changed = True
    for c in dict.fromkeys(consts):
        if isinstance(c, nn.ConstantOp) and c.parent is not None and not c.y.uses:
            rewriter.erase(c)


def replace_match(
    rewriter: PatternRewriter,
    root: Operation,
    new: Operation,
    matched: Sequence[Operation],
    also_dead: Sequence[Operation] = (),
) -> None:
    """Replace a recognised pattern by ``new``: ``new`` takes the merged origins of the
    ``matched`` (non-constant) ops, ``root`` (their last op) is replaced by it, and the
    matched ops, ``also_dead`` and their constants are erased once nothing reads them."""
    set_merged_origins(new, [o for o in matched if not isinstance(o, nn.ConstantOp)])
    root_consts = constant_operands(root)
    rewriter.replace(root, new)
    erase_dead(rewriter, [*matched, *also_dead], keep=root, root_constants=root_consts)


def in_block_order(ops: Sequence[Operation]) -> list[Operation]:
    """``ops`` sorted by their position in their (shared) block."""
    if not ops or ops[0].parent is None:
        return list(ops)
    wanted = set(ops)
    return [o for o in ops[0].parent.ops if o in wanted]


def constant_operands(op: Operation) -> list[Operation]:
    return [v.owner for v in op.operands if isinstance(v.owner, nn.ConstantOp)]


def rewrite_if_enabled(
    module: ModuleOp, config: str, family: str, patterns: Sequence[RewritePattern]
) -> None:
    """One walk of ``patterns`` over ``module`` (no DCE), unless the fusion ``config`` file
    (empty: the default) turns the pattern ``family`` off."""
    if not load_config(config or None).family_enabled(family):
        return
    PatternRewriteWalker(
        GreedyRewritePatternApplier(list(patterns), dce_enabled=False),
        apply_recursively=False,
    ).rewrite_module(module)
