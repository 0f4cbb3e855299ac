"""``plan-buffers``: give every intermediate tensor of ``@main`` an offset in one arena.

Effect (the contract of ``docs/internals.md``, "Memory plan"):

- each top-level op with at least one intermediate result gets
  ``memory.offsets = array<i64: ...>``, one byte offset per result; ``-1`` marks a result
  that is not in the arena (a function result);
- ``@main`` gets ``memory.arena_bytes``, ``memory.naive_bytes``, ``memory.lower_bound_bytes``
  (i64) and ``memory.heuristic`` (the placement order that won).

A result computed in place over a dying operand has that operand's offset. A top-level
``nn.reshape`` gets no offset: it is a view of its operand (whose slot stays reserved as
long as the view is read). A top-level ``nn.concat`` whose operands' slices are contiguous
in its result (every dim before the axis is 1) gets ``memory.concat_inplace = array<i64:
...>``, 1 per operand written in place: that operand's offset is the concat's offset plus
its slice's byte offset, and the lowering copies only the operands marked 0. By default
(``concat-auto``) the pass plans with concats in place and with copies and keeps the copies
plan when the in-place arena is more than ``CONCAT_COPIES_ARENA_RATIO`` times larger; the
choice goes on ``@main`` as ``memory.concat_plan`` (``in-place`` / ``copies``). A
``fusion.kernel`` computing a Conv/MatMul/Gemm plus a residual Add (and at most one Relu/Clip)
whose residual dies there gets ``memory.residual_inplace = array<i64: I>``: its result has
the offset of its operand ``I`` and overwrites it (the C backend reads each residual element
just before storing the output element over it). A ``fuse-pw-chain`` kernel gets one entry
per result (-1: none): the first result over the first conv's residual, the second over the
first conv's input when that dies there (``memory_plan.chain_input_operand``). Run it after
fusion (and after ``tile-fusion``, which runs it itself); running it again re-plans.
Algorithms: ``autofusion.analysis.memory_plan``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64

from autofusion import symbolic
from autofusion.analysis.liveness import find_main, schedule
from autofusion.analysis.memory_plan import (
    DEFAULT_ALIGNMENT,
    MemoryPlan,
    plan_memory,
    plan_memory_choosing_concats,
)
from autofusion.analysis.static_shapes import check_static_shapes
from autofusion.dialects.attrs import (
    MEMORY_ARENA_BYTES,
    MEMORY_CONCAT_INPLACE,
    MEMORY_CONCAT_PLAN,
    MEMORY_HEURISTIC,
    MEMORY_LOWER_BOUND_BYTES,
    MEMORY_NAIVE_BYTES,
    MEMORY_OFFSETS,
    MEMORY_RESIDUAL_INPLACE,
)
from autofusion.dialects.base import i64_array, symbol_ranges
from autofusion.passes.options import CheckedPass

OFFSETS = MEMORY_OFFSETS
ARENA = MEMORY_ARENA_BYTES
NAIVE = MEMORY_NAIVE_BYTES
LOWER_BOUND = MEMORY_LOWER_BOUND_BYTES
HEURISTIC = MEMORY_HEURISTIC


def annotate(main: func.FuncOp, plan: MemoryPlan) -> None:
    """Write ``plan`` onto the ops of ``main`` as the ``memory.*`` attributes."""
    for op in schedule(main):
        op.attributes.pop(OFFSETS, None)
        op.attributes.pop(MEMORY_CONCAT_INPLACE, None)
        op.attributes.pop(MEMORY_RESIDUAL_INPLACE, None)
        offs = [-1 if r in plan.views else plan.offsets.get(r, -1) for r in op.results]
        if any(o >= 0 for o in offs):
            op.attributes[OFFSETS] = i64_array(offs)
        flags = plan.concat_inplace.get(op.results[0]) if len(op.results) == 1 else None
        if flags is not None:
            op.attributes[MEMORY_CONCAT_INPLACE] = i64_array([int(f) for f in flags])
        # per result, the operand it is written over (-1: none); a fuse-pw-chain kernel's
        # second result may be written over the first conv's input
        indices = [plan.residual_inplace.get(r, -1) for r in op.results]
        if any(i >= 0 for i in indices):
            op.attributes[MEMORY_RESIDUAL_INPLACE] = i64_array(indices)
    main.attributes[ARENA] = IntegerAttr(plan.arena_bytes, i64)
    main.attributes[NAIVE] = IntegerAttr(plan.naive_bytes, i64)
    main.attributes[LOWER_BOUND] = IntegerAttr(plan.lower_bound_bytes, i64)
    main.attributes[HEURISTIC] = StringAttr(plan.heuristic or "none")
    main.attributes.pop(MEMORY_CONCAT_PLAN, None)
    if plan.concat_plan:
        main.attributes[MEMORY_CONCAT_PLAN] = StringAttr(plan.concat_plan)


def plan_module(
    module: ModuleOp,
    alignment: int = DEFAULT_ALIGNMENT,
    inplace: bool = True,
    concat_inplace: bool = True,
    residual_inplace: bool = True,
    concat_auto: bool = False,
) -> MemoryPlan:
    """Plan and annotate ``module``'s ``@main``; returns the plan.

    With ``concat_auto`` (and ``concat_inplace``), concats are in place or copies as
    ``plan_memory_choosing_concats`` decides.

    Refuses (``AutofusionError``) a dynamic dimension or a tensor over the byte limit of
    ``autofusion.analysis.static_shapes``: byte sizes and offsets would be meaningless. A
    symbolic size (``#nn.shape``) is planned at its upper bound: every offset is static and
    a buffer never holds more at run time; a concat whose slices would start at symbolic
    offsets is not placed in place.
    """
    main = find_main(module)
    check_static_shapes(main, "plan-buffers", symbolic=True)
    with symbolic.scope(symbol_ranges(module)):  # upper bounds need the declared ranges
        if concat_auto and concat_inplace:
            plan = plan_memory_choosing_concats(
                main, alignment=alignment, inplace=inplace, residual_inplace=residual_inplace
            )
        else:
            plan = plan_memory(
                main,
                alignment=alignment,
                inplace=inplace,
                concat_inplace=concat_inplace,
                residual_inplace=residual_inplace,
            )
    annotate(main, plan)
    return plan


def memory_report(module: ModuleOp) -> dict[str, int]:
    """``arena_bytes``, ``naive_bytes``, ``lower_bound_bytes`` of a planned module."""
    main = find_main(module)
    out: dict[str, int] = {}
    for key, attr in (
        (ARENA, "arena_bytes"),
        (NAIVE, "naive_bytes"),
        (LOWER_BOUND, "lower_bound_bytes"),
    ):
        val = main.attributes.get(key)
        if isinstance(val, IntegerAttr):
            out[attr] = int(val.value.data)
    return out


@dataclass(frozen=True)
class PlanBuffers(CheckedPass):
    """Assign arena offsets to intermediates, with in-place reuse for elementwise steps.

    Options: ``alignment`` (bytes, default 64), ``inplace`` (default true: elementwise
    steps over dying operands), ``concat-inplace`` (default true: concat operands written
    straight into their slice of the result, no copy), ``residual-inplace`` (default true:
    a fused conv/matmul writes its output over the residual its epilogue adds).
    """

    name: ClassVar[str] = "plan-buffers"
    #: symbolic sizes are planned at their upper bounds (offsets static)
    symbolic: ClassVar[bool] = True
    alignment: int = DEFAULT_ALIGNMENT
    inplace: bool = True
    concat_inplace: bool = True
    concat_auto: bool = True
    residual_inplace: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.alignment < 1 or self.alignment & (self.alignment - 1):
            from xdsl.utils.exceptions import PassFailedException

            raise PassFailedException(
                f"plan-buffers: alignment must be a power of two, got {self.alignment}"
            )
        plan_module(
            op,
            self.alignment,
            self.inplace,
            self.concat_inplace,
            self.residual_inplace,
            concat_auto=self.concat_auto,
        )
