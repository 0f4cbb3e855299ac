"""Liveness of intermediate tensors over the scheduled kernel order of ``@main``.

The schedule is the list of top-level ops of ``@main`` in program order (the terminator
excluded); a ``fusion.kernel`` is one step, whatever its body holds. Step ``i`` reads its
operands and writes its results, so a tensor defined at step ``d`` and last read at step
``u`` occupies storage during the closed interval ``[d, u]``; two tensors whose intervals
intersect must not share bytes (unless one is computed in place over the other, which the
planner decides, see ``autofusion.analysis.memory_plan``). A result nobody reads lives
``[d, d]``: it is still written.

Intermediates are results of top-level ops that are neither function results nor
``nn.constant`` results. Function arguments, outputs and weights stay outside the arena
(``docs/internals.md``, "Memory plan").

A top-level ``nn.reshape`` is a *view*: the C lowering gives it its operand's bytes; so is
a slice, split piece or one-index gather that is one contiguous run of its operand
(:func:`view_offset`), at an offset into them. The
bytes are therefore in use for as long as any view of them (or a view of a view) is read,
and up to the end of the schedule when a view is a function result (the result is copied
out after the last kernel). The intervals include this: an intermediate's end is the
latest last use over it and all its views, so no later kernel may reuse (or compute in
place over) bytes a view still shows.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, OpResult, SSAValue

from autofusion import symbolic
from autofusion.dialects import dtypes
from autofusion.dialects.base import bound_dims, type_dims
from autofusion.dialects.nn import ConstantOp, GatherOp, ReshapeOp, SliceOp, SplitOp
from autofusion.dialects.shapes import numel
from autofusion.errors import AutofusionError


@dataclass(frozen=True)
class Interval:
    """The live range of one intermediate tensor, in schedule steps (both ends included)."""

    value: OpResult
    start: int
    end: int
    size: int  # bytes, unaligned

    @property
    def op(self) -> Operation:
        return self.value.op

    def overlaps(self, other: Interval) -> bool:
        return self.start <= other.end and other.start <= self.end


def find_main(module: ModuleOp | func.FuncOp) -> func.FuncOp:
    """The ``func.func @main`` of a module (or the function itself)."""
    if isinstance(module, func.FuncOp):
        return module
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise AutofusionError("module has no func.func @main")


def schedule(main: func.FuncOp) -> list[Operation]:
    """Top-level ops of ``@main`` in execution order, without the terminator."""
    ops = list(main.body.block.ops)
    if ops and isinstance(ops[-1], func.ReturnOp):
        ops.pop()
    return ops


def element_bytes(elem: Attribute) -> int:
    return int(dtypes.to_numpy_dtype(elem).itemsize)


def tensor_bytes(t: Attribute) -> int:
    """Storage size of a tensor type in bytes (``i1`` takes one byte); a symbolic type
    (``#nn.shape``) at its symbols' upper bounds, the most it holds at run time."""
    if not isinstance(t, TensorType):
        raise AutofusionError(f"expected a tensor type, got {t}")
    return numel(bound_dims(t)) * element_bytes(t.element_type)


def returned_values(main: func.FuncOp) -> set[SSAValue]:
    last = main.body.block.last_op
    return set(last.operands) if isinstance(last, func.ReturnOp) else set()


def top_level_user(user: Operation, main: func.FuncOp) -> Operation:
    """The op of ``@main``'s block that contains ``user`` (itself when top level)."""
    block = main.body.block
    op: Operation | None = user
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    if op is None:
        raise AutofusionError(f"use of a tensor outside @main by {user.name}")
    return op


def is_planned_op(op: Operation) -> bool:
    return not isinstance(op, ConstantOp)


#: A sub-block view starts at a multiple of this many bytes of its operand (the arena's slot
#: alignment, ``memory_plan.DEFAULT_ALIGNMENT``), so a kernel reading it sees what it would
#: see in a slot of its own.
VIEW_ALIGN = 64


def _static(t: Attribute) -> tuple[int, ...] | None:
    if not isinstance(t, TensorType):
        return None
    try:
        dims = bound_dims(t)
    except symbolic.SymbolicError:  # a symbol without its range yet (an import's census)
        return None
    return dims if dims == tuple(type_dims(t)) else None  # symbolic dims: no sub-block views


def _block_offset(xs: Sequence[int], starts: Sequence[int], ys: Sequence[int]) -> int | None:
    """The element offset of the block ``starts`` + ``ys`` (step 1) of a row-major ``xs``
    tensor when the block is one contiguous run of it: past its last cut dim (the last where
    ``ys`` differs from ``xs``) every dim is whole, and before that dim the block is one
    index wide."""
    cut = max((d for d in range(len(xs)) if ys[d] != xs[d]), default=-1)
    if any(ys[d] != 1 for d in range(cut)):
        return None
    off, stride = 0, 1
    for d in reversed(range(len(xs))):
        off += starts[d] * stride
        stride *= xs[d]
    return off


def view_offset(op: Operation, result: SSAValue) -> int | None:
    """The byte offset at which ``result`` of the top-level ``op`` can be a view of its
    (first) operand's bytes, or None: a reshape (0, any shape); static shapes only: a slice
    of step 1, a split piece, a gather of one constant index, when the result is one
    contiguous run of the operand (``_block_offset``) starting at a multiple of
    :data:`VIEW_ALIGN` bytes. Swin's and ViT's q / k / v picked out of the fused qkv tensor
    are such runs. The C lowering gives these results no kernel (``clib.view``)."""
    if isinstance(op, ReshapeOp):
        return 0
    if not isinstance(op, SliceOp | SplitOp | GatherOp) or not op.operands:
        return None
    xs, ys = _static(op.operands[0].type), _static(result.type)
    if xs is None or ys is None:
        return None
    if isinstance(op, SliceOp):
        if any(st != 1 for st in op.steps):
            return None
        off = _block_offset(xs, op.starts, ys)
    elif isinstance(op, SplitOp):
        a = op.axis
        pieces = list(op.outputs)
        before = sum(type_dims(r.type)[a] for r in pieces[: pieces.index(result)])  # type: ignore[arg-type]
        off = _block_offset(xs, [before if d == a else 0 for d in range(len(xs))], ys)
    else:
        idx = op.indices.owner
        if not (isinstance(idx, ConstantOp) and isinstance(idx.value, DenseIntOrFPElementsAttr)):
            return None
        values = dtypes.numpy_from_dense(idx.value).reshape(-1)
        a = op.axis
        if values.size != 1 or not -xs[a] <= int(values[0]) < xs[a]:
            return None
        i = int(values[0]) % xs[a]
        picked = [1 if d == a else n for d, n in enumerate(xs)]
        off = _block_offset(xs, [i if d == a else 0 for d in range(len(xs))], picked)
    if off is None:
        return None
    assert isinstance(result.type, TensorType)
    nbytes = off * element_bytes(result.type.element_type)
    return nbytes if nbytes % VIEW_ALIGN == 0 else None


def view_offsets(op: Operation) -> list[int] | None:
    """The byte offsets (:func:`view_offset`) of each of the top-level ``op``'s results into
    its operand, or None unless every result is a view."""
    offsets: list[int] = []
    for r in op.results:
        if (at := view_offset(op, r)) is None:
            return None
        offsets.append(at)
    return offsets or None


def is_view_op(op: Operation) -> bool:
    """A top-level op whose results alias its operand's bytes (:func:`view_offsets`): the C
    lowering makes them views, and every ONNX reshape-like op imports as a reshape."""
    return view_offsets(op) is not None


def extend_through_views(
    steps: Sequence[Operation],
    last: dict[SSAValue, int],
    rename: dict[SSAValue, SSAValue] | None = None,
) -> dict[SSAValue, int]:
    """``last`` (value -> last step its bytes are read) with each view's last use
    folded into its source's, transitively (a view of a view reaches the root).

    Views come after their sources in the schedule, so one backwards walk suffices.
    ``rename`` maps operands of a not-yet-made rewrite, as in ``schedule_liveness``.
    """
    rename = rename or {}
    for op in reversed(steps):
        if not is_view_op(op):
            continue
        source = rename.get(op.operands[0], op.operands[0])
        for r in op.results:
            view_end = last.get(r)
            if source in last and view_end is not None:
                last[source] = max(last[source], view_end)
    return last


def _intermediates(
    steps: Sequence[Operation], outputs: Container[SSAValue]
) -> Iterator[tuple[int, OpResult]]:
    """(defining step, value) of each intermediate of ``steps``, in definition order."""
    for i, op in enumerate(steps):
        if not is_planned_op(op):
            continue
        for res in op.results:
            if res not in outputs and isinstance(res.type, TensorType):
                yield i, res


def last_uses(main: func.FuncOp, steps: Sequence[Operation]) -> dict[SSAValue, int]:
    """For every result of ``steps`` (the schedule of ``main``), the last step that reads
    it: its own step if nothing does, ``len(steps)`` for a function result."""
    index = {op: i for i, op in enumerate(steps)}
    end_step = len(steps)
    outputs = returned_values(main)
    last: dict[SSAValue, int] = {}
    for i, op in enumerate(steps):
        for r in op.results:
            end = end_step if r in outputs else i
            for use in r.uses:
                end = max(end, index.get(top_level_user(use.operation, main), end_step))
            last[r] = end
    return last


def liveness(main: func.FuncOp) -> list[Interval]:
    """Live intervals of all intermediates of ``@main``, in definition order."""
    steps = schedule(main)
    last = extend_through_views(steps, last_uses(main, steps))
    return [
        Interval(res, i, last[res], tensor_bytes(res.type))
        for i, res in _intermediates(steps, returned_values(main))
    ]


def schedule_liveness(
    steps: list[Operation], outputs: set[SSAValue], rename: dict[SSAValue, SSAValue]
) -> list[Interval]:
    """Intervals for a schedule given as a list of (possibly detached) top-level ops.

    Reads are the ops' operands, seen through ``rename`` (old value -> the value that
    replaces it), so a rewrite can be evaluated before it is made (``tile-fusion``).
    ``outputs`` are the (renamed) function results; they are read after the last step,
    which matters for the sources of views that are outputs.
    """
    last: dict[SSAValue, int] = {}
    for i, op in enumerate(steps):
        for r in op.results:
            last[r] = i
        for v in op.operands:
            last[rename.get(v, v)] = i
    for v in outputs:
        last[v] = len(steps)
    extend_through_views(steps, last, rename)
    return [
        Interval(res, i, max(i, last.get(res, i)), tensor_bytes(res.type))
        for i, res in _intermediates(steps, outputs)
    ]
