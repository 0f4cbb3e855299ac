"""Static memory planning: intermediate tensors -> byte offsets in one arena.

Input: the live intervals of ``autofusion.analysis.liveness``. Steps:

1. **In-place merging.** A single-result pure elementwise step (an ``nn`` elementwise op, or
   a ``fusion.kernel`` whose body is only elementwise ops) may write its result over one of
   its operands when that operand is an intermediate of the same shape and element size
   whose last use is this very step. Operand and result then form one *buffer* (a chain of
   such reuses is one buffer too). An operand still read later is never reused (that would
   be an alias of a live value). A top-level ``nn.reshape`` is a *view*: it joins its
   operand's buffer, which stays reserved until the last reader of either. A top-level
   ``nn.concat`` whose operand slices are contiguous in its result (every dim before the
   axis is 1) takes the buffers of the operands that may alias (``_concat_in_place``) as
   members at their slices' byte offsets: their producers write straight into the
   concat's output and the concat copies nothing for them. An operand's buffer moves as
   one piece; a split piece brings its sibling pieces along when they fall just before or
   just after the concat's bytes (the merged buffer then starts before the concat's
   result, which sits at a nonzero offset in it). The merged buffer lives from
   its first member's definition to the last read of any member. A ``fusion.kernel`` that
   is one Conv/MatMul/Gemm whose epilogue adds a residual (``residual_operand``: Add, then
   at most one Relu/Clip) writes its result over that residual under the same conditions as
   an elementwise step (the residual dies there, same shape and element size, a whole
   buffer of its own): the C backend's GEMM core reads each residual element just before it
   stores the output element over it (``docs/runtime.md``, "In-place residual").
2. **Offset assignment.** Buffers are placed one at a time at the lowest (first-fit) or
   tightest (best-fit) gap among already placed buffers whose lifetimes intersect theirs.
   Several orders are tried -- size descending, lifetime order, longest lifetime first,
   TFLite-style "greedy by breadth" (busiest step first) -- and the smallest arena wins.
   If it is above the lower bound, ``promote`` improves the best few orders by iterated
   greedy (move a buffer that ends above the bound earlier in the order -- just before a
   conflicting buffer placed before it, or to the front -- and place again).
3. **Report.** ``naive_bytes`` is the sum of all (aligned) intermediates, as if none were
   reused; ``lower_bound_bytes`` is the maximum over steps of the aligned bytes of the
   buffers live at that step (an aliased concat operand is inside its concat's buffer,
   so its bytes count once): no placement of these buffers can use less, so
   ``arena_bytes >= lower_bound_bytes`` always holds.

All sizes are rounded up to ``alignment`` (64 bytes by default) and every offset is a
multiple of it.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, TensorType, f32
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from autofusion import symbolic
from autofusion.analysis.liveness import (
    Interval,
    element_bytes,
    liveness,
    tensor_bytes,
    view_offsets,
)
from autofusion.dialects import nn
from autofusion.dialects.attrs import MEMORY_CONCAT_INPLACE, MEMORY_OFFSETS
from autofusion.dialects.base import type_dims
from autofusion.dialects.fusion import KernelOp, YieldOp

if TYPE_CHECKING:
    from autofusion.analysis.pw_chain import Half

DEFAULT_ALIGNMENT = 64


def align(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


@dataclass
class Buffer:
    """One arena slot: a tensor, or a chain of tensors computed in place over each other."""

    members: list[Interval]
    start: int
    end: int
    size: int  # aligned bytes
    offset: int = -1
    rel: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])
    """Member -> byte offset inside the buffer (0 when absent): concat operands sit at
    their slice of the concat's output."""

    def overlaps(self, other: Buffer) -> bool:
        return self.start <= other.end and other.start <= self.end


@dataclass
class MemoryPlan:
    """The result of planning ``@main``."""

    offsets: dict[SSAValue, int]
    arena_bytes: int
    naive_bytes: int
    lower_bound_bytes: int
    heuristic: str
    alignment: int
    buffers: list[Buffer]
    intervals: list[Interval]
    inplace: list[tuple[OpResult, OpResult]] = field(default_factory=list)
    """(operand, result) pairs where the result overwrites the dying operand."""
    views: dict[SSAValue, SSAValue] = field(default_factory=dict)
    """reshape result -> its operand: same bytes, no copy, no ``memory.offsets``."""
    candidates: dict[str, int] = field(default_factory=dict)
    """Arena size reached by each heuristic."""
    concat_aliases: dict[SSAValue, tuple[SSAValue, int]] = field(default_factory=dict)
    """Concat operand -> (concat result, byte offset of its slice): written in place."""
    concat_inplace: dict[SSAValue, list[bool]] = field(default_factory=dict)
    """Concat result -> per operand, whether it is written in place (no copy)."""
    residual_inplace: dict[SSAValue, int] = field(default_factory=dict)
    """Kernel result -> index of the residual operand it is written over."""
    concat_plan: str = ""
    """``plan_memory_choosing_concats``'s choice: ``"in-place"`` or ``"copies"`` ("" when
    no choice was made: no concat could be written in place, or the caller fixed it)."""


# ---------------------------------------------------------------------------------------
# In-place legality
# ---------------------------------------------------------------------------------------


def _is_elementwise_body(kernel: KernelOp) -> bool:
    for op in kernel.body.block.ops:
        if isinstance(op, YieldOp | nn.ConstantOp):
            continue
        if not isinstance(op, nn.ELEMENTWISE) or len(op.results) != 1:
            return False
    return True


def is_inplace_capable(op: Operation) -> bool:
    """Pure elementwise single-result steps: out[i] depends only on operands at index i."""
    if len(op.results) != 1:
        return False
    if isinstance(op, nn.ELEMENTWISE):
        return True
    return isinstance(op, KernelOp) and _is_elementwise_body(op)


def residual_operand(op: Operation) -> int | None:
    """The operand a fused contraction may write its result over, or None.

    ``op`` must be a single-result ``fusion.kernel`` whose body is one f32 Conv (the C
    backend's GEMM-core kinds: 1x1 or im2col, per ``clib.conv_algo``), MatMul or Gemm
    (without C), then ``Add(head, r)`` and at most one Relu or Clip on it, yielded: the form
    of the built-in clamp epilogue. ``r`` must be a kernel argument of the result's shape
    and element type read only by that Add (not by the contraction, which reads all of its
    inputs before any output is final).

    A ``fuse-pw-chain`` kernel (two results) may write its first result over the first
    conv's residual the same way (``_chain_residual``); its second result never.
    """
    if isinstance(op, KernelOp) and len(op.results) == 2:
        return _chain_residual(op)
    if not isinstance(op, KernelOp) or len(op.results) != 1:
        return None
    body = [o for o in op.body.block.ops if not isinstance(o, nn.ConstantOp)]
    if len(body) not in (3, 4) or not isinstance(body[-1], YieldOp):
        return None
    head, add, *rest = body[:-1]
    if not isinstance(head, nn.ConvOp | nn.MatMulOp | nn.GemmOp) or not isinstance(add, nn.AddOp):
        return None
    if isinstance(head, nn.GemmOp) and head.c is not None and head.beta != 0.0:
        return None
    if rest and not isinstance(rest[0], nn.ReluOp | nn.ClipOp):
        return None
    final = rest[0] if rest else add
    if rest and rest[0].operands[0] is not add.results[0]:
        return None
    hv = head.results[0]
    yielded = body[-1].operands
    if len(yielded) != 1 or yielded[0] is not final.results[0]:
        return None
    if not hv.has_one_use() or not add.results[0].has_one_use():
        return None
    res = add.rhs if add.lhs is hv else add.lhs if add.rhs is hv else None
    if res is None or res is hv or not res.has_one_use() or res.owner is not op.body.block:
        return None
    if not _same_layout(res, hv) or not _same_layout(hv, op.results[0]):
        return None
    ht = hv.type
    if not isinstance(ht, TensorType) or ht.element_type != f32:
        return None  # other types compute through casts: not the built-in clamp's form
    if isinstance(head, nn.ConvOp):
        from autofusion.dialects import clib
        from autofusion.lowering.c.ops import conv_params

        if len(ht.get_shape()) not in (3, 4):
            return None
        try:
            algo = clib.conv_algo(conv_params(head))
        except Exception:  # a conv the C backend cannot run: not this plan's business
            return None
        if algo not in ("gemm_1x1", "im2col_gemm"):
            return None
    assert isinstance(res, BlockArgument)
    return res.index


def _pw_chain_halves(op: Operation) -> tuple[Half, Half] | None:
    """The two halves of a ``fuse-pw-chain`` kernel (``pw_chain.body_pw_chain``) yielding
    the first half's value, then the second's; else None."""
    from autofusion.analysis.pw_chain import body_pw_chain

    if not isinstance(op, KernelOp) or len(op.results) != 2:
        return None
    ops = [o for o in op.body.block.ops if not isinstance(o, nn.ConstantOp | YieldOp)]
    got = body_pw_chain(ops)
    last = op.body.block.last_op
    if got is None or not isinstance(last, YieldOp):
        return None
    return got if list(last.operands) == [got[0].value, got[1].value] else None


def _written_over(op: Operation, v: SSAValue | None, result: int) -> int | None:
    """``v``'s operand index when ``op``'s ``result`` may be written over it: a kernel
    argument read once, of the result's layout."""
    if not isinstance(v, BlockArgument) or v.owner is not op.regions[0].block:
        return None
    if not v.has_one_use() or not _same_layout(v, op.results[result]):
        return None
    return v.index


def _chain_residual(op: KernelOp) -> int | None:
    """The operand a ``fuse-pw-chain`` kernel may write its first result over: the first
    half's residual, read only by its Add. ``afrt_conv1x1_chain_f32`` finishes each element
    of the first conv before its only store, as the single conv does, and the second conv
    reads only finished columns."""
    got = _pw_chain_halves(op)
    if got is None or not _same_layout(got[0].value, op.results[0]):
        return None
    return _written_over(op, got[0].residual, 0)


def chain_input_operand(op: Operation) -> int | None:
    """The operand a ``fuse-pw-chain`` kernel may write its second result over: the first
    conv's input, read by nothing else. ``afrt_conv1x1_chain_f32`` writes each column block
    of the second conv after the first conv has read that block of its input, which no
    other block reads."""
    got = _pw_chain_halves(op)
    if got is None or not _same_layout(got[1].value, op.results[1]):
        return None
    return _written_over(op, got[0].conv.x, 1)


def _written_over_operand(iv: Interval) -> int | None:
    """The operand ``iv``'s value may be written over by its fused contraction: the
    residual for a kernel's first result (``residual_operand``), the chain's input for a
    ``fuse-pw-chain`` kernel's second (``chain_input_operand``)."""
    results = list(iv.op.results)
    if results and iv.value is results[0]:
        return residual_operand(iv.op)
    if len(results) == 2 and iv.value is results[1]:
        return chain_input_operand(iv.op)
    return None


def _same_layout(a: SSAValue, b: SSAValue) -> bool:
    ta, tb = a.type, b.type
    if not isinstance(ta, TensorType) or not isinstance(tb, TensorType):
        return False
    return type_dims(ta) == type_dims(tb) and element_bytes(ta.element_type) == element_bytes(
        tb.element_type
    )


# ---------------------------------------------------------------------------------------
# Buffers
# ---------------------------------------------------------------------------------------


@dataclass
class Buffers:
    buffers: list[Buffer]
    inplace: list[tuple[OpResult, OpResult]]
    views: dict[SSAValue, SSAValue]
    intervals: list[Interval]
    concat_aliases: dict[SSAValue, tuple[SSAValue, int]] = field(
        default_factory=dict[SSAValue, tuple[SSAValue, int]]
    )
    concat_inplace: dict[SSAValue, list[bool]] = field(default_factory=dict[SSAValue, list[bool]])
    residual_inplace: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])


def concat_slices(op: nn.ConcatOp, operands: Sequence[SSAValue]) -> list[int] | None:
    """Byte offset of each operand's slice in the result, or None when the slices are not
    contiguous ranges of the result (a dim before the axis is not 1)."""
    out = op.y.type
    assert isinstance(out, TensorType)
    axis = op.axis
    if any(d != 1 for d in out.get_shape()[:axis]):
        return None
    if not all(symbolic.is_static(type_dims(v.type)) for v in (*operands, op.y)):
        return None  # a slice's start would depend on the symbols: planned at upper bounds

    starts: list[int] = []
    at = 0
    for v in operands:
        starts.append(at)
        at += tensor_bytes(v.type)
    return starts


def planned_offset(value: SSAValue) -> int | None:
    """The arena byte offset ``plan-buffers`` gave ``value`` (its owner's ``memory.offsets``;
    -1 for a result the plan made a view), or None where it gave none."""
    owner = value.owner
    if not isinstance(owner, Operation):
        return None
    attr = owner.attributes.get(MEMORY_OFFSETS)
    if not isinstance(attr, DenseArrayBase):
        return None
    return int(attr.get_values()[list(owner.results).index(value)])  # type: ignore[arg-type]


def planned_view_offsets(op: Operation) -> list[int] | None:
    """The byte offsets into its operand at which the top-level ``op``'s results are views
    (``liveness.view_offsets``: a reshape, a contiguous slice, split piece or one-index
    gather), when plan-buffers made them views (no offsets of their own, or each its
    operand's offset plus its own) or did not run; else None (the op computes)."""
    offsets = view_offsets(op)
    if offsets is None or MEMORY_OFFSETS not in op.attributes:
        return offsets
    src = planned_offset(op.operands[0])
    mine = [planned_offset(r) for r in op.results]
    if src is None or any(m != src + o for m, o in zip(mine, offsets, strict=True)):
        return None
    return offsets


def makes_no_kernel(op: Operation) -> bool:
    """Whether the top-level compute ``op`` becomes no kernel function in the lowering: a view
    (:func:`planned_view_offsets`) or a concat planned in place (``memory.concat_inplace``:
    its producers wrote its slices; operands they did not are copied in)."""
    if isinstance(op, nn.ConcatOp) and MEMORY_CONCAT_INPLACE in op.attributes:
        return True
    return planned_view_offsets(op) is not None


def _extent(buf: Buffer) -> int:
    """The bytes ``buf``'s members occupy from its start (unaligned: the last member's
    padding is never written)."""
    return max((buf.rel.get(m.value, 0) + m.size for m in buf.members), default=0)


def _concat_in_place(
    iv: Interval,
    operands: Sequence[SSAValue],
    by_value: dict[SSAValue, Interval],
    buffer_of: dict[SSAValue, Buffer],
    alignment: int,
    placed: Container[SSAValue],
) -> list[bool]:
    """Which operands of the concat ``iv`` may be written straight into their slice.

    An operand qualifies when it is an intermediate of the plan (not an argument, weight
    or function result), occurs once among the operands, shares its buffer with no other
    operand, is not empty, is not in place in an earlier concat already (``placed``: one
    slice per operand), and its slice starts at a multiple of ``alignment``. Its whole
    buffer moves, as one piece, so that the operand lands on its slice; every other byte of
    that buffer must then fall outside the concat's result. Usually the buffer is the
    operand's alone (or an earlier concat's whose result it is) and lands exactly on the
    slice. A split piece (``merge-sibling-convs``' 1x1 branch) brings the other pieces of
    its source along: allowed when the piece is the first slice and the last bytes of its
    source (the rest sits just before the concat's result) or the last slice and the first
    bytes of its source (the rest sits just after). An operand already inside an earlier
    concat's slice brings that concat's other bytes along the same way.
    """
    assert isinstance(iv.op, nn.ConcatOp)
    starts = concat_slices(iv.op, operands)
    if starts is None:
        return [False] * len(operands)
    owners = [buffer_of.get(v) for v in operands]
    flags: list[bool] = []
    for v, start, buf in zip(operands, starts, owners):
        src = by_value.get(v)
        ok = (
            buf is not None
            and src is not None
            and src.size > 0
            and operands.count(v) == 1
            and sum(b is buf for b in owners) == 1
            and v not in placed
            and start % alignment == 0
        )
        if ok and buf is not None and src is not None:
            rel = buf.rel.get(v, 0)
            before = rel > 0  # bytes of the buffer before the operand
            after = _extent(buf) > rel + src.size
            ok = (not before or start == 0) and (not after or start + src.size == iv.size)
        flags.append(ok)
    return flags


def build_buffers(
    intervals: list[Interval],
    alignment: int,
    inplace: bool,
    rename: dict[SSAValue, SSAValue] | None = None,
    concat_inplace: bool = True,
    residual_inplace: bool = True,
) -> Buffers:
    """Group intervals into buffers: in-place chains, views and in-place concats share one
    buffer.

    A top-level ``nn.reshape`` is a view (the C lowering makes it one when it carries no
    offset), and so is a slice, split piece or gather that is one contiguous run of its
    operand (``liveness.view_offset``): its result joins its operand's buffer at that offset,
    and the buffer then lives as long as any of them.
    A reshape of a value outside the arena (argument, weight) is a view of that value and
    is dropped from the plan. A top-level ``nn.concat`` whose operand slices are contiguous
    absorbs the buffers of the operands that qualify (``_concat_in_place``): they become
    members at their slice's offset and the merged buffer lives from the first member's
    definition to the last read of any member. A fused contraction with a residual
    (``residual_operand``) joins the residual's buffer when ``inplace`` and
    ``residual_inplace`` allow and the residual qualifies as an elementwise step's operand
    would. ``rename`` maps operands of a not-yet-made rewrite.
    """
    rename = rename or {}
    aliases: dict[SSAValue, tuple[SSAValue, int]] = {}
    concat_flags: dict[SSAValue, list[bool]] = {}
    absorbed: set[int] = set()
    by_value: dict[SSAValue, Interval] = {iv.value: iv for iv in intervals}
    buffer_of: dict[SSAValue, Buffer] = {}
    buffers: list[Buffer] = []
    pairs: list[tuple[OpResult, OpResult]] = []
    views: dict[SSAValue, SSAValue] = {}
    kept: list[Interval] = []
    residual: dict[SSAValue, int] = {}

    def dying_operand(operand: SSAValue, iv: Interval) -> Buffer | None:
        """The buffer ``iv`` may take over from ``operand``, which dies at ``iv``'s step."""
        src = by_value.get(operand)
        if (
            src is None
            or operand not in buffer_of
            or src.end != iv.start
            or not _same_layout(operand, iv.value)
        ):
            return None
        buf = buffer_of[operand]
        if buf.end != iv.start:  # a view of it (or it) is still read later
            return None
        if buf.rel.get(operand, 0) != 0 or buf.size != align(max(src.size, 1), alignment):
            return None  # a slice of an in-place concat: the rest of the buffer is still live
        return buf

    for iv in intervals:
        target: Buffer | None = None
        res_index = _written_over_operand(iv) if inplace and residual_inplace else None
        offsets = view_offsets(iv.op)
        if offsets is not None and all(o % alignment == 0 for o in offsets):
            at = offsets[list(iv.op.results).index(iv.value)]  # type: ignore[arg-type]
            source = rename.get(iv.op.operands[0], iv.op.operands[0])
            if source not in buffer_of:
                continue
            target = buffer_of[source]
            views[iv.value] = source
            if source in target.rel or at:
                target.rel[iv.value] = target.rel.get(source, 0) + at
        elif inplace and is_inplace_capable(iv.op):
            for operand in iv.op.operands:
                operand = rename.get(operand, operand)
                buf = dying_operand(operand, iv)
                if buf is None:
                    continue
                target = buf
                pairs.append((by_value[operand].value, iv.value))
                break
        elif res_index is not None:
            operand = iv.op.operands[res_index]
            operand = rename.get(operand, operand)
            if list(iv.op.operands).count(operand) == 1 and (buf := dying_operand(operand, iv)):
                target = buf
                pairs.append((by_value[operand].value, iv.value))
                residual[iv.value] = res_index
        elif concat_inplace and isinstance(iv.op, nn.ConcatOp):
            operands = [rename.get(v, v) for v in iv.op.inputs]
            flags = _concat_in_place(iv, operands, by_value, buffer_of, alignment, aliases)
            if any(flags):
                starts = concat_slices(iv.op, operands) or []
                moved = [
                    (v, start - buffer_of[v].rel.get(v, 0), buffer_of[v])
                    for v, start, flag in zip(operands, starts, flags)
                    if flag
                ]
                # A part placed before the result's first byte shifts everything up.
                base = min(0, *(at for _, at, _ in moved))
                high = max(iv.size, *(at + _extent(part) for _, at, part in moved))
                target = Buffer([], iv.start, iv.end, align(max(high - base, 1), alignment))
                buffers.append(target)
                if base:
                    target.rel[iv.value] = -base
                for v, at, part in moved:
                    absorbed.add(id(part))
                    for m in part.members:
                        target.rel[m.value] = at - base + part.rel.get(m.value, 0)
                        buffer_of[m.value] = target
                    target.members.extend(part.members)
                    target.start = min(target.start, part.start)
                    target.end = max(target.end, part.end)
                    aliases[v] = (iv.value, starts[operands.index(v)])
                concat_flags[iv.value] = flags
        if target is None:
            target = Buffer([iv], iv.start, iv.end, align(max(iv.size, 1), alignment))
            buffers.append(target)
        else:
            target.members.append(iv)
            target.end = max(target.end, iv.end)
            target.size = max(target.size, align(max(iv.size, 1), alignment))
        buffer_of[iv.value] = target
        kept.append(iv)
    buffers = [b for b in buffers if id(b) not in absorbed]
    return Buffers(buffers, pairs, views, kept, aliases, concat_flags, residual)


# ---------------------------------------------------------------------------------------
# Placement
# ---------------------------------------------------------------------------------------


def conflicts(buffers: Sequence[Buffer]) -> list[list[int]]:
    """For each buffer, the indices of the buffers whose lifetimes intersect its own."""
    out: list[list[int]] = [[] for _ in buffers]
    by_start = sorted(range(len(buffers)), key=lambda i: buffers[i].start)
    for x, i in enumerate(by_start):
        end = buffers[i].end
        for j in by_start[x + 1 :]:
            if buffers[j].start > end:
                break
            out[i].append(j)
            out[j].append(i)
    return out


def place(
    buffers: Sequence[Buffer],
    order: Sequence[int],
    best_fit: bool,
    conflict: list[list[int]] | None = None,
) -> list[int]:
    """Offsets for ``buffers`` placed in ``order``; returns one offset per buffer."""
    if conflict is None:
        conflict = conflicts(buffers)
    offsets = [-1] * len(buffers)
    for i in order:
        b = buffers[i]
        busy = sorted(
            (offsets[j], offsets[j] + buffers[j].size) for j in conflict[i] if offsets[j] >= 0
        )
        best: int | None = None
        best_gap: int | None = None
        cursor = 0
        for lo, hi in busy:
            gap = lo - cursor
            if gap >= b.size:
                if not best_fit:
                    best = cursor
                    break
                if best_gap is None or gap < best_gap:
                    best, best_gap = cursor, gap
            cursor = max(cursor, hi)
        offsets[i] = cursor if best is None else best
    return offsets


def _order_size(bufs: Sequence[Buffer]) -> list[int]:
    return sorted(
        range(len(bufs)),
        key=lambda i: (-bufs[i].size, -(bufs[i].end - bufs[i].start), bufs[i].start),
    )


def _order_lifetime(bufs: Sequence[Buffer]) -> list[int]:
    return sorted(range(len(bufs)), key=lambda i: (bufs[i].start, -bufs[i].size))


def _order_longest(bufs: Sequence[Buffer]) -> list[int]:
    return sorted(range(len(bufs)), key=lambda i: (-(bufs[i].end - bufs[i].start), -bufs[i].size))


def _order_breadth(bufs: Sequence[Buffer]) -> list[int]:
    """Busiest step first; within a step, biggest buffer first (TFLite greedy by breadth)."""
    n_steps = max((b.end for b in bufs), default=-1) + 1
    live: list[list[int]] = [[] for _ in range(n_steps)]
    load = [0] * n_steps
    for i, b in enumerate(bufs):
        for s in range(b.start, b.end + 1):
            live[s].append(i)
            load[s] += b.size
    seen: set[int] = set()
    order: list[int] = []
    for s in sorted(range(n_steps), key=lambda s: -load[s]):
        for i in sorted(live[s], key=lambda i: -bufs[i].size):
            if i not in seen:
                seen.add(i)
                order.append(i)
    return order


def _order_longest_k(k: int) -> Callable[[Sequence[Buffer]], list[int]]:
    """The ``k`` longest-lived buffers first (they conflict with the most), then by size.

    Pure size order can leave a long-lived buffer stacked above a whole phase of large
    short-lived ones; pinning it first lets those alternate in the space beside it.
    """

    def order(bufs: Sequence[Buffer]) -> list[int]:
        first = _order_longest(bufs)[:k]
        chosen = set(first)
        return first + [i for i in _order_size(bufs) if i not in chosen]

    return order


def _order_conflicts(bufs: Sequence[Buffer]) -> list[int]:
    """Most conflicting (bytes of overlapping buffers) first."""
    weight = [sum(bufs[j].size for j in c) for c in conflicts(bufs)]
    return sorted(range(len(bufs)), key=lambda i: (-weight[i] * bufs[i].size, -bufs[i].size))


HEURISTICS: dict[str, tuple[Callable[[Sequence[Buffer]], list[int]], bool]] = {
    "size-best-fit": (_order_size, True),
    "size-first-fit": (_order_size, False),
    "breadth-best-fit": (_order_breadth, True),
    "lifetime-first-fit": (_order_lifetime, False),
    "longest-best-fit": (_order_longest, True),
    "conflicts-best-fit": (_order_conflicts, True),
    **{f"longest{k}-then-size": (_order_longest_k(k), True) for k in (1, 2, 3, 4, 6, 8, 12, 16)},
}


#: Placements ``promote`` may try in all, per plan (a few ms each on the zoo's models),
#: and from each starting order (every heuristic's, best first).
PROMOTE_BUDGET = 128
PROMOTE_PER_START = 16


def _arena(buffers: Sequence[Buffer], offsets: Sequence[int]) -> int:
    return max((o + b.size for o, b in zip(offsets, buffers)), default=0)


def _excess(buffers: Sequence[Buffer], offsets: Sequence[int], target: int) -> int:
    """Bytes placed above ``target``, summed over buffers: a move that lowers one of several
    buffers sticking out does not shrink the arena yet but is progress."""
    return sum(max(0, o + b.size - target) for o, b in zip(offsets, buffers))


def _earlier_slots(order: Sequence[int], i: int, conflict: list[list[int]]) -> list[int]:
    """Where ``promote`` tries to reinsert buffer ``i``: the front, then just before each
    buffer it conflicts with that is placed before it, nearest first (the smaller changes of
    the order: ``i`` claims its space before that neighbour does, the rest keeps its turn)."""
    pos = {j: k for k, j in enumerate(order)}
    slots = sorted({pos[j] for j in conflict[i] if pos[j] < pos[i]}, reverse=True)
    return [0, *(s for s in slots if s != 0)]


def promote(
    buffers: Sequence[Buffer],
    order: Sequence[int],
    best_fit: bool,
    conflict: list[list[int]],
    target: int,
    budget: int,
) -> tuple[list[int], int, int]:
    """Iterated greedy on a placement order: while the arena is above ``target`` (the lower
    bound), move a buffer that ends above the target earlier in the order -- to the front,
    else to just before one of the conflicting buffers placed before it, nearest first --
    and place again; keep the move if it lowers (arena, bytes above the target). Buffers are
    tried from the highest top down; the search stops at the target, when no move helps, or
    after ``budget`` placements.

    A greedy order fails when a buffer that the tight step needs low is placed late, after
    shorter-lived ones have taken the bottom around it (DenseNet's growing concats with
    copies: 1.11x the bound by size order). Moving it to the front fixes some cases but can
    displace the big buffers it was sharing the bottom with; moving it just ahead of the
    neighbour that took its place is the smaller step (DenseNet with its pre-activation
    BatchNorms as scale/shift kernels: 1.056x with front moves only, the bound with both).
    Counting the bytes above the target accepts a move that lowers one of several buffers
    sticking out. On 400 random lifetime sets (20-80 buffers) this reaches the bound in 301
    instead of 288 and averages 1.0061x instead of 1.0074x (``docs/memory.md``).
    Returns (offsets, arena, placements used).
    """
    order = list(order)
    offsets = place(buffers, order, best_fit, conflict)
    best = (_arena(buffers, offsets), _excess(buffers, offsets, target))
    used = 1
    while best[0] > target and used < budget:
        tops = sorted(
            (i for i, b in enumerate(buffers) if offsets[i] + b.size > target),
            key=lambda i: -(offsets[i] + buffers[i].size),
        )
        moved = False
        for i in tops:
            rest = [j for j in order if j != i]
            for at in _earlier_slots(order, i, conflict):
                if used >= budget:
                    break
                trial = [*rest[:at], i, *rest[at:]]
                trial_offsets = place(buffers, trial, best_fit, conflict)
                used += 1
                score = (_arena(buffers, trial_offsets), _excess(buffers, trial_offsets, target))
                if score < best:
                    order, offsets, best, moved = trial, trial_offsets, score, True
                    break
            if moved or used >= budget:
                break
        if not moved:
            break  # no move helps, or the budget is spent
    return offsets, best[0], used


def live_bytes(buffers: Sequence[Buffer]) -> list[int]:
    """Per schedule step, the bytes of the buffers live at that step."""
    n_steps = max((b.end for b in buffers), default=-1) + 2
    delta = [0] * (n_steps + 1)
    for b in buffers:
        delta[b.start] += b.size
        delta[b.end + 1] -= b.size
    profile: list[int] = []
    acc = 0
    for d in delta:
        acc += d
        profile.append(acc)
    return profile


def lower_bound(buffers: Sequence[Buffer]) -> int:
    """Max over steps of the bytes of the buffers live at that step."""
    return max(live_bytes(buffers), default=0)


def plan_memory(
    main: func.FuncOp,
    alignment: int = DEFAULT_ALIGNMENT,
    inplace: bool = True,
    heuristics: Sequence[str] | None = None,
    concat_inplace: bool = True,
    residual_inplace: bool = True,
) -> MemoryPlan:
    """Plan every intermediate of ``@main``; see the module docstring."""
    grouped = build_buffers(
        liveness(main),
        alignment,
        inplace,
        concat_inplace=concat_inplace,
        residual_inplace=residual_inplace,
    )
    buffers, pairs, intervals = grouped.buffers, grouped.inplace, grouped.intervals
    names = list(heuristics) if heuristics is not None else list(HEURISTICS)
    best_name, best_offsets, best_arena = "", [0] * len(buffers), -1
    candidates: dict[str, int] = {}
    conflict = conflicts(buffers)
    tried: list[tuple[int, int, str, list[int], bool]] = []
    for rank, name in enumerate(names):
        order_fn, best_fit = HEURISTICS[name]
        order = order_fn(buffers)
        offsets = place(buffers, order, best_fit, conflict)
        arena = _arena(buffers, offsets)
        candidates[name] = arena
        tried.append((arena, rank, name, order, best_fit))
        if best_arena < 0 or arena < best_arena:
            best_name, best_offsets, best_arena = name, offsets, arena
    bound = lower_bound(buffers)
    budget = PROMOTE_BUDGET
    for _, _, name, order, best_fit in sorted(tried):
        if best_arena <= bound or budget <= 0:
            break
        offsets, arena, used = promote(
            buffers, order, best_fit, conflict, bound, min(budget, PROMOTE_PER_START)
        )
        budget -= used
        candidates[f"{name}+promote"] = arena
        if arena < best_arena:
            best_name, best_offsets, best_arena = f"{name}+promote", offsets, arena
    value_offsets: dict[SSAValue, int] = {}
    for off, b in zip(best_offsets, buffers):
        b.offset = off
        for m in b.members:
            value_offsets[m.value] = off + b.rel.get(m.value, 0)
    return MemoryPlan(
        offsets=value_offsets,
        arena_bytes=max(best_arena, 0),
        naive_bytes=sum(align(max(iv.size, 1), alignment) for iv in intervals),
        lower_bound_bytes=bound,
        heuristic=best_name,
        alignment=alignment,
        buffers=buffers,
        intervals=intervals,
        inplace=pairs,
        views=grouped.views,
        candidates=candidates,
        concat_aliases=grouped.concat_aliases,
        concat_inplace=grouped.concat_inplace,
        residual_inplace=grouped.residual_inplace,
    )


#: The concat plan with copies replaces the in-place one when the in-place arena is more
#: than this many times larger (docs/memory.md, "Choosing the concat plan").
CONCAT_COPIES_ARENA_RATIO = 1.5


def plan_memory_choosing_concats(
    main: func.FuncOp,
    alignment: int = DEFAULT_ALIGNMENT,
    inplace: bool = True,
    residual_inplace: bool = True,
) -> MemoryPlan:
    """``plan_memory`` with concats in place, unless copying them shrinks the arena a lot.

    Writing a concat's operands in place saves their copies but reserves the whole output
    from its first operand on, and an operand feeding several concats (torchvision's
    DenseNet concatenates every earlier feature map again in each layer) is in place in
    the first only, so the later ones copy it anyway while the first's big slot stays live:
    there the in-place arena is twice the copies one (14.85 against 7.23 MB) and the copies
    plan ran faster at one and two threads. When the in-place arena exceeds
    ``CONCAT_COPIES_ARENA_RATIO`` times the copies arena, the copies plan is returned;
    otherwise the in-place one. ``concat_plan`` records the choice."""
    placed = plan_memory(
        main, alignment, inplace, concat_inplace=True, residual_inplace=residual_inplace
    )
    if not any(any(flags) for flags in placed.concat_inplace.values()):
        return placed  # no operand in place: both plans are this one
    copies = plan_memory(
        main, alignment, inplace, concat_inplace=False, residual_inplace=residual_inplace
    )
    if placed.arena_bytes > CONCAT_COPIES_ARENA_RATIO * copies.arena_bytes:
        copies.concat_plan = "copies"
        return copies
    placed.concat_plan = "in-place"
    return placed


def check_plan(plan: MemoryPlan) -> list[str]:
    """Violations of the plan's invariants (empty when sound); used by tests and debugging.

    Two intermediates live at the same step may share bytes only if one is a reshape view
    of the other (same data), if one is an operand written in place into the other's slice
    (an in-place concat, transitively), or if the later one is computed in place over the
    earlier one at the step where the earlier one (and every view of it) dies. An in-place
    concat operand must sit exactly at its slice of the result.
    """

    # Views and in-place concat operands share bytes with what they alias; a value can be
    # both (a reshape view of a relu written in place into a concat), so the sharing classes
    # are the connected components of the two relations together (union-find).
    parent: dict[SSAValue, SSAValue] = {}

    def root(v: SSAValue) -> SSAValue:
        while parent.get(v, v) is not v:
            v = parent[v]
        return v

    for a, b in [*plan.views.items(), *((o, r) for o, (r, _) in plan.concat_aliases.items())]:
        ra, rb = root(a), root(b)
        if ra is not rb:
            parent[ra] = rb

    dst = {b for _, b in plan.inplace}
    errors: list[str] = []
    ivs = plan.intervals
    sizes = {iv.value: iv.size for iv in ivs}
    for i, a in enumerate(ivs):
        oa = plan.offsets[a.value]
        if oa % plan.alignment:
            errors.append(f"{a.op.name} result: offset {oa} not a multiple of {plan.alignment}")
        for b in ivs[i + 1 :]:
            if not a.overlaps(b):
                continue
            ob = plan.offsets[b.value]
            if oa < ob + sizes[b.value] and ob < oa + sizes[a.value]:
                first, later = (a, b) if a.start <= b.start else (b, a)
                legal = root(a.value) is root(b.value) or (
                    later.value in dst and first.end == later.start and oa == ob
                )
                if not legal:
                    errors.append(
                        f"{a.op.name} result (steps {a.start}-{a.end}, bytes "
                        f"{oa}+{sizes[a.value]}) overlaps {b.op.name} result (steps "
                        f"{b.start}-{b.end}, bytes {ob}+{sizes[b.value]})"
                    )
    for operand, (result, start) in plan.concat_aliases.items():
        if plan.offsets.get(operand) != plan.offsets[result] + start:
            errors.append(
                f"in-place concat operand at {plan.offsets.get(operand)}, not at its slice "
                f"{plan.offsets[result]}+{start}"
            )
    for iv in ivs:
        if plan.offsets[iv.value] + iv.size > plan.arena_bytes:
            errors.append(f"{iv.op.name} result exceeds the arena")
    return errors
