"""Einsum as a decomposition onto ``nn`` transposes, reshapes, reductions and batched MatMuls.

The equation is parsed into one label list per operand (``...`` becomes generated labels for
the broadcast dims; ONNX requires every ``...`` to stand for the same number of dims, and
their sizes broadcast) and the output labels (explicit after
``->``, or implicitly the ellipsis dims followed by the labels that occur once, sorted).
Then, as ``numpy.einsum`` would compute it without ``optimize``:

1. a label repeated inside one operand takes the diagonal (the two axes are moved last,
   flattened, and every ``n + 1``-th element gathered);
2. a label that no other operand and not the output uses is summed out at once;
3. operands are contracted left to right: labels in both operands and still needed later are
   batch dims (kept apart, so a size-1 dim broadcasts as in MatMul), labels in both and not
   needed later are the contraction ``K``, the rest are ``M`` (left) and ``N`` (right); the
   pair becomes one ``[batch..., M, K] x [batch..., K, N]`` MatMul;
4. the remaining labels not in the output are summed and the result transposed to the
   output's order.

A contracted label of size 1 in one operand and ``n`` in the other (a broadcast) is summed on
the ``n`` side first, which is the same sum. Everything lowers through existing ops, so the
interpreter, C and Ascend C need nothing new.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from autofusion.dialects import dtypes, nn, shapes
from autofusion.dialects.base import bool_attr, i64_array, int_attr
from autofusion.frontend.context import NodeCtx, Value, value_elem, value_shape
from autofusion.frontend.convert_shape import reshape_to
from autofusion.frontend.registry import converter

#: Labels generated for ellipsis dims: characters an equation cannot contain.
_ELLIPSIS_LABELS = "0123456789"


def parse_equation(
    ctx: NodeCtx, equation: str, ranks: Sequence[int]
) -> tuple[list[list[str]], list[str]]:
    """Per-operand label lists and the output labels of ``equation`` for operands of ``ranks``."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ctx.error(f"equation '{equation}' has {len(terms)} operand(s), the node {len(ranks)}")

    def split(term: str, what: str) -> tuple[str, bool, str]:
        head, dots, tail = term.partition("...")
        if any(c not in string.ascii_letters for c in head + tail):
            raise ctx.error(f"equation '{equation}': {what} '{term}' is not letters and '...'")
        return head, bool(dots), tail

    parts = [split(t, f"term {i}") for i, t in enumerate(terms)]
    n_ells: list[int] = []
    for i, ((head, dots, tail), rank) in enumerate(zip(parts, ranks, strict=True)):
        n_ell = rank - len(head) - len(tail)
        if n_ell < 0 or (not dots and n_ell != 0):
            raise ctx.error(
                f"equation '{equation}': term '{terms[i]}' does not match input {i} of rank {rank}"
            )
        n_ells.append(n_ell)
    ell_rank = max(n_ells, default=0)
    with_dots = {n for (_, dots, _), n in zip(parts, n_ells, strict=True) if dots}
    if len(with_dots) > 1:
        raise ctx.error(
            f"equation '{equation}': every '...' must stand for the same number of dims, "
            f"got {sorted(with_dots)}"
        )
    if ell_rank > len(_ELLIPSIS_LABELS):
        raise ctx.error(f"equation '{equation}': more than {len(_ELLIPSIS_LABELS)} ellipsis dims")
    ell = list(_ELLIPSIS_LABELS[len(_ELLIPSIS_LABELS) - ell_rank :])
    # each operand's ellipsis dims are right-aligned with the broadcast ellipsis
    labels = [
        [*head, *ell[len(ell) - n :], *tail]
        for (head, _, tail), n in zip(parts, n_ells, strict=True)
    ]
    if arrow:
        head, dots, tail = split(rhs, "output")
        out = [*head, *(ell if dots else []), *tail]
        seen = {lbl for lb in labels for lbl in lb}
        for lbl in out:
            if lbl not in seen:
                raise ctx.error(f"equation '{equation}': output label '{lbl}' is in no input")
        if len(set(out)) != len(out):
            raise ctx.error(f"equation '{equation}': an output label is repeated")
    else:
        counts: dict[str, int] = {}
        for lb in labels:
            for lbl in lb:
                if lbl not in ell:
                    counts[lbl] = counts.get(lbl, 0) + 1
        out = [*ell, *sorted(lbl for lbl, c in counts.items() if c == 1)]
    return labels, out


class _Term:
    """One operand during the contraction: its value and one label per dim."""

    def __init__(self, value: Value, labels: list[str]) -> None:
        self.value = value
        self.labels = labels

    @property
    def shape(self) -> tuple[int, ...]:
        return value_shape(self.value)

    def size(self, label: str) -> int:
        return self.shape[self.labels.index(label)]


def _transpose(ctx: NodeCtx, t: _Term, order: Sequence[str]) -> _Term:
    perm = [t.labels.index(lbl) for lbl in order]
    if perm == list(range(len(perm))):
        return _Term(t.value, list(order))
    s = t.shape
    v = ctx.emit1(
        nn.TransposeOp,
        [t.value],
        [s[p] for p in perm],
        value_elem(t.value),
        {"perm": i64_array(perm)},
    )
    return _Term(v, list(order))


def _sum(ctx: NodeCtx, t: _Term, drop: Sequence[str], keepdims: bool = False) -> _Term:
    if not drop:
        return t
    axes = sorted(t.labels.index(lbl) for lbl in drop)
    out = shapes.reduce_out(t.shape, axes, keepdims)
    v = ctx.emit1(
        nn.ReduceSumOp,
        [t.value],
        out,
        value_elem(t.value),
        {"axes": i64_array(axes), "keepdims": bool_attr(keepdims)},
    )
    labels = t.labels if keepdims else [lbl for lbl in t.labels if lbl not in drop]
    return _Term(v, list(labels))


def _diagonal(ctx: NodeCtx, t: _Term) -> _Term:
    """Take the diagonal of every label that ``t`` holds more than once."""
    while True:
        dup = next((lbl for lbl in t.labels if t.labels.count(lbl) > 1), None)
        if dup is None:
            return t
        i = t.labels.index(dup)
        j = t.labels.index(dup, i + 1)
        n, m = t.shape[i], t.shape[j]
        if n != m:
            raise ctx.error(f"label '{dup}' has sizes {n} and {m} in one input")
        rest = [k for k in range(len(t.labels)) if k not in (i, j)]
        perm = [*rest, i, j]
        s = t.shape
        moved: Value = t.value
        if perm != list(range(len(perm))):
            moved = ctx.emit1(
                nn.TransposeOp, [t.value], [s[p] for p in perm], value_elem(t.value),
                {"perm": i64_array(perm)},
            )  # fmt: skip
        lead = [s[k] for k in rest]
        flat = reshape_to(ctx, moved, [*lead, n * n])
        idx = ctx.const(np.arange(n, dtype=np.int64) * (n + 1))
        v = ctx.emit1(
            nn.GatherOp, [flat, idx], [*lead, n], value_elem(t.value), {"axis": int_attr(len(lead))}
        )
        t = _Term(v, [*(t.labels[k] for k in rest), dup])


def _contract(ctx: NodeCtx, a: _Term, b: _Term, keep: set[str]) -> _Term:
    """``a`` and ``b`` as one batched MatMul; labels outside ``keep`` in both are summed."""
    shared = [lbl for lbl in a.labels if lbl in b.labels]
    batch = [lbl for lbl in shared if lbl in keep]
    k_lbls = [lbl for lbl in shared if lbl not in keep]
    # a contracted dim broadcast from size 1 on one side: sum the other side first
    for lbl in k_lbls:
        sa, sb = a.size(lbl), b.size(lbl)
        if sa != sb:
            if sa == 1:
                b = _sum(ctx, b, [lbl], keepdims=True)
            elif sb == 1:
                a = _sum(ctx, a, [lbl], keepdims=True)
            else:
                raise ctx.error(f"label '{lbl}' has sizes {sa} and {sb} in two inputs")
    for lbl in batch:
        sa, sb = a.size(lbl), b.size(lbl)
        if sa != sb and 1 not in (sa, sb):
            raise ctx.error(f"label '{lbl}' has sizes {sa} and {sb} in two inputs")
    m_lbls = [lbl for lbl in a.labels if lbl not in b.labels]
    n_lbls = [lbl for lbl in b.labels if lbl not in a.labels]
    a = _transpose(ctx, a, [*batch, *m_lbls, *k_lbls])
    b = _transpose(ctx, b, [*batch, *k_lbls, *n_lbls])
    ab = [a.size(lbl) for lbl in batch]
    bb = [b.size(lbl) for lbl in batch]
    m_sz = [a.size(lbl) for lbl in m_lbls]
    n_sz = [b.size(lbl) for lbl in n_lbls]
    k = shapes.numel([a.size(lbl) for lbl in k_lbls])
    m, n = shapes.numel(m_sz), shapes.numel(n_sz)
    av = reshape_to(ctx, a.value, [*ab, m, k])
    bv = reshape_to(ctx, b.value, [*bb, k, n])
    out_b = [max(x, y) for x, y in zip(ab, bb, strict=True)]
    elem = value_elem(a.value)
    prod = ctx.emit1(nn.MatMulOp, [av, bv], [*out_b, m, n], elem)
    return _Term(reshape_to(ctx, prod, [*out_b, *m_sz, *n_sz]), [*batch, *m_lbls, *n_lbls])


@converter("Einsum")
def _einsum(ctx: NodeCtx) -> list[Value]:
    equation = ctx.attr("equation")
    if not isinstance(equation, str | bytes):
        raise ctx.error("attribute 'equation' is required")
    if isinstance(equation, bytes):
        equation = equation.decode()
    vals = [ctx.input(i) for i in range(len(ctx.inputs))]
    if not vals:
        raise ctx.error("needs at least one input")
    elem = value_elem(vals[0])
    for i, v in enumerate(vals):
        if value_elem(v) != elem:
            raise ctx.error(f"input {i} is {value_elem(v)}, input 0 is {elem}")
    if dtypes.to_numpy_dtype(elem).kind not in "fiu":
        raise ctx.error(f"expects numeric tensors, got {elem}")
    labels, out = parse_equation(ctx, equation, [len(value_shape(v)) for v in vals])
    terms = [_diagonal(ctx, _Term(v, lb)) for v, lb in zip(vals, labels, strict=True)]
    # 2. labels used by one operand only (and not by the output) are summed out at once
    for i, t in enumerate(terms):
        others = {lbl for j, u in enumerate(terms) if j != i for lbl in u.labels}
        terms[i] = _sum(
            ctx, t, [lbl for lbl in dict.fromkeys(t.labels) if lbl not in others and lbl not in out]
        )
    acc = terms[0]
    for i in range(1, len(terms)):
        later = {lbl for t in terms[i + 1 :] for lbl in t.labels} | set(out)
        acc = _contract(ctx, acc, terms[i], later)
    acc = _sum(ctx, acc, [lbl for lbl in acc.labels if lbl not in out])
    return [_transpose(ctx, acc, out).value]
