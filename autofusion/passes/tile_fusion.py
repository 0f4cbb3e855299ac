"""``tile-fusion``: cut fused regions into tiles until the arena fits a memory limit.

Effect: while the planned arena (``plan-buffers``) is larger than ``memory-limit-mb``
(MiB, 2**20 bytes), find the step where most intermediate bytes are live, choose a region of
consecutive top-level ops around it that has a single escaping result ``Y``, and rewrite it
into ``N`` pieces along a batch/spatial/sequence dimension of ``Y`` followed by a concat
(``autofusion.analysis.memory_tiling``: per-piece halos for convolutions and pools, the
pads kept only at the borders). The region's intermediates then exist one piece at a time.
Candidates are ranked by an estimate of the peak they leave, the best few are tried on a
copy and re-planned, and the one that fits with the fewest tiles wins. At the end the
module is planned (the ``memory.*`` attributes of ``plan-buffers``).

With ``memory-limit-mb=0`` (the default) it only plans. If no tiling reaches the limit it
raises ``AutofusionError`` naming the smallest limit it could reach.

Run it after fusion, instead of (or before) ``plan-buffers``. Python entry point for the
compile API: ``apply_memory_limit(module, limit_mb)``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from autofusion.analysis.liveness import (
    find_main,
    last_uses,
    liveness,
    returned_values,
    schedule,
    schedule_liveness,
)
from autofusion.analysis.memory_plan import (
    DEFAULT_ALIGNMENT,
    Buffer,
    Buffers,
    MemoryPlan,
    build_buffers,
    live_bytes,
    lower_bound,
    plan_memory,
    plan_memory_choosing_concats,
)
from autofusion.analysis.memory_tiling import (
    TILE_ATTR,
    NotTileable,
    build_tiles,
    is_tileable_kind,
    propagate,
    tile_bounds,
    tile_region,
    trial_schedule,
)
from autofusion.analysis.static_shapes import check_static_shapes
from autofusion.dialects import nn
from autofusion.dialects.base import shape_of, value_index
from autofusion.dialects.fusion import KernelOp
from autofusion.errors import AutofusionError
from autofusion.passes.options import CheckedPass
from autofusion.passes.plan_buffers import annotate

MIB = 1 << 20
WINDOW = 80
TILE_COUNTS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
TRIALS = 6
MAX_ROUNDS = 200


@dataclass(frozen=True)
class _Candidate:
    start: int
    end: int
    y_step: int
    y_index: int
    dim: int
    count: int
    estimate: float


def _regions(
    steps: list[Operation], last: dict[SSAValue, int], peak: int
) -> list[tuple[int, int, SSAValue]]:
    """(start, end, Y) for runs of tileable steps around ``peak`` with one escaping value."""

    def ok(op: Operation) -> bool:
        return isinstance(op, nn.ConstantOp) or (
            TILE_ATTR not in op.attributes and is_tileable_kind(op)
        )

    if not ok(steps[peak]) or isinstance(steps[peak], nn.ConstantOp):
        return []
    found: list[tuple[int, int, SSAValue]] = []
    b = peak
    while b < len(steps) and b < peak + WINDOW and ok(steps[b]):
        escaping: list[SSAValue] = []
        a = b
        while a >= 0 and a > peak - WINDOW and ok(steps[a]):
            op = steps[a]
            if not isinstance(op, nn.ConstantOp):
                escaping.extend(r for r in op.results if last[r] > b)
            if len(escaping) > 1:
                break
            if a <= peak and len(escaping) == 1:
                found.append((a, b, escaping[0]))
            a -= 1
        b += 1
    return found


def _dims(y: SSAValue) -> list[int]:
    shape = shape_of(y)
    order = [0, *range(2, len(shape)), 1] if len(shape) > 2 else list(range(len(shape)))
    return [d for d in order if d < len(shape) and shape[d] >= 2]


def _rank(c: _Candidate, limit: int) -> tuple[float, ...]:
    """Fits first, then fewer tiles, then the lower estimate; else the lower estimate."""
    return (0, c.count, c.estimate) if c.estimate <= limit else (1, c.estimate)


def _candidates(main: func.FuncOp, plan: Buffers, limit: int, alignment: int) -> list[_Candidate]:
    """Tiling candidates around the busiest step, best first.

    Regions are visited shortest first; for each, the smallest tile count whose estimated
    peak fits ``limit`` is kept. The estimate propagates the rows of one tile through the
    region (so deep regions pay for their growing halos): at each step, bytes live from
    outside the region, plus the region's live values scaled to the rows one tile needs,
    plus the finished pieces of ``Y``; and at the concat, ``2 * |Y|`` plus what passes by.
    """
    steps = schedule(main)
    n = len(steps)
    live: list[list[tuple[SSAValue, int, int]]] = [[] for _ in range(n + 1)]
    size: dict[SSAValue, int] = {
        iv.value: -(-iv.size // alignment) * alignment for iv in plan.intervals
    }
    for iv in plan.intervals:
        for s in range(iv.start, iv.end + 1):
            live[s].append((iv.value, iv.start, size[iv.value]))
    load = [sum(sz for _, _, sz in lv) for lv in live]
    last = last_uses(main, steps)
    index = {op: i for i, op in enumerate(steps)}
    # The busiest step that is not already a tile piece and can start a region (a model
    # often has the same peak in every layer: each round removes one).
    regions: list[tuple[int, int, SSAValue]] = []
    busiest = sorted((s for s in range(n) if load[s] > limit), key=lambda s: -load[s])
    for peak in busiest[:8]:
        regions = [
            r
            for r in _regions(steps, last, peak)
            if not isinstance(steps[r[0]], nn.ConstantOp)
            and not isinstance(steps[r[1]], nn.ConstantOp)
        ]
        if regions:
            break
    regions.sort(key=lambda r: (r[1] - r[0], r[0]))
    fits: list[_Candidate] = []
    fallback: list[_Candidate] = []
    for a, b, y in regions:
        region = steps[a : b + 1]
        ext = [sum(sz for _, st, sz in live[s] if st < a) for s in range(a, b + 1)]
        through = sum(sz for v, st, sz in live[a] if st < a and last.get(v, n) > b)
        ysize = size.get(y, 0)
        owner = y.owner
        assert isinstance(owner, Operation)
        if max(max(ext, default=0) + ysize, through + 2 * ysize) > limit and fits:
            continue
        region_best: _Candidate | None = None
        for dim in _dims(y):
            rows = shape_of(y)[dim]
            for count in TILE_COUNTS:
                if count > rows:
                    break
                # An interior tile: it carries the full halo on both sides.
                lo, hi = tile_bounds(rows, count)[count // 2]
                try:
                    piece = propagate(region, y, (dim, lo, hi))
                except NotTileable:
                    break
                frac = {v: (r[2] - r[1]) / shape_of(v)[r[0]] for v, r in piece.reqs.items()}
                inner = max(
                    ext[s - a] + sum(sz * frac.get(v, 1.0) for v, st, sz in live[s] if st >= a)
                    for s in range(a, b + 1)
                )
                est = max(inner + ysize, through + 2 * ysize)
                cand = _Candidate(a, b, index[owner], value_index(y), dim, count, est)
                better = region_best is None or _rank(cand, limit) < _rank(region_best, limit)
                if better:
                    region_best = cand
                if est <= limit:
                    break
        if region_best is not None:
            (fits if region_best.estimate <= limit else fallback).append(region_best)
        if len(fits) >= TRIALS:
            break
    fallback.sort(key=lambda c: c.estimate)
    return fits + fallback[:TRIALS]


def _apply(module: ModuleOp, c: _Candidate, verify: bool = True) -> None:
    steps = schedule(find_main(module))
    y = steps[c.y_step].results[c.y_index]
    tile_region(steps[c.start : c.end + 1], y, c.dim, c.count, verify)


def _trial(
    main: func.FuncOp, c: _Candidate, alignment: int, concat_inplace: bool = True
) -> list[Buffer]:
    """The slots the module would have after tiling ``c``, without changing it."""
    steps = schedule(main)
    y = steps[c.y_step].results[c.y_index]
    new_ops = build_tiles(steps[c.start : c.end + 1], y, c.dim, c.count, verify=False)
    rename: dict[SSAValue, SSAValue] = {y: new_ops[-1].results[0]}
    outputs = {rename.get(v, v) for v in returned_values(main)}
    virtual = trial_schedule(steps, c.start, c.end, new_ops)
    ivs = schedule_liveness(virtual, outputs, rename)
    slots = build_buffers(ivs, alignment, True, rename, concat_inplace).buffers
    for op in new_ops:  # detached, but their operands would keep uses of real values
        op.drop_all_references()
    return slots


def _op_key(op: Operation) -> str:
    return f"{op.name}:{op.pattern_name}" if isinstance(op, KernelOp) else op.name


def _repeat(
    main: func.FuncOp, last: _Candidate, signature: tuple[str, ...], slots: Buffers, limit: int
) -> _Candidate | None:
    """The same tiling as ``last`` on another copy of its region (the next layer of a
    model built from identical layers) that still lies over the limit, if there is one."""
    steps = schedule(main)
    keys = [_op_key(op) for op in steps]
    n, length = len(steps), len(signature)
    load = [0] * (n + 1)
    for b in slots.buffers:
        for t in range(b.start, min(b.end, n - 1) + 1):
            load[t] += b.size
    lasts: dict[SSAValue, int] | None = None
    for a in range(n - length + 1):
        if tuple(keys[a : a + length]) != signature:
            continue
        region = steps[a : a + length]
        if any(TILE_ATTR in op.attributes for op in region):
            continue
        if max(load[a : a + length]) <= limit:
            continue
        if lasts is None:
            lasts = last_uses(main, steps)
        y_step = a + (last.y_step - last.start)
        escaping = [
            r
            for op in region
            if not isinstance(op, nn.ConstantOp)
            for r in op.results
            if lasts[r] > a + length - 1
        ]
        if escaping != [steps[y_step].results[last.y_index]]:
            continue
        return dataclasses.replace(last, start=a, end=a + length - 1, y_step=y_step)
    return None


def excess(buffers: Sequence[Buffer], limit: int) -> int:
    """Bytes over ``limit`` summed over the steps: falls with every peak tiled away, even
    while other, equal peaks still set the arena size."""
    return sum(max(0, live - limit) for live in live_bytes(buffers))


def tile_to_limit(
    module: ModuleOp,
    limit_bytes: int,
    alignment: int = DEFAULT_ALIGNMENT,
    limit_mb: float | None = None,
    concat_inplace: bool = True,
    concat_auto: bool = False,
) -> MemoryPlan:
    """Tile ``module`` in place until its arena fits ``limit_bytes``; plan and annotate it.

    With ``concat_auto``, a model whose concats ``plan_memory_choosing_concats`` would copy
    is planned and tiled with concat copies.

    Concats written in place reserve their whole output from the first operand on, which
    can cost memory; a copy is much cheaper than tiling, so when the plan with concats in
    place does not fit but the plan with concat copies does, that one is taken, untiled.
    Otherwise tiling proceeds with concats in place (in the tiles too)."""
    main = find_main(module)
    if concat_inplace and concat_auto:
        auto = plan_memory_choosing_concats(main, alignment=alignment)
        concat_inplace = auto.concat_plan != "copies"
    plan = plan_memory(main, alignment=alignment, concat_inplace=concat_inplace)
    if concat_inplace and plan.arena_bytes > limit_bytes:
        copies = plan_memory(main, alignment=alignment, concat_inplace=False)
        if copies.arena_bytes <= limit_bytes:
            annotate(main, copies)
            return copies
    best_seen = plan.arena_bytes
    slots = build_buffers(liveness(main), alignment, True, concat_inplace=concat_inplace)
    last: _Candidate | None = None
    signature: tuple[str, ...] = ()
    for _ in range(MAX_ROUNDS):
        bound_now = lower_bound(slots.buffers)
        if bound_now <= limit_bytes:
            plan = plan_memory(main, alignment=alignment, concat_inplace=concat_inplace)
            best_seen = min(best_seen, plan.arena_bytes)
            if plan.arena_bytes <= limit_bytes:
                break
        chosen: _Candidate | None = None
        chosen_key: tuple[int, ...] = (1, excess(slots.buffers, limit_bytes), bound_now)
        again = _repeat(main, last, signature, slots, limit_bytes) if last else None
        if again is not None:
            try:
                trial_slots = _trial(main, again, alignment, concat_inplace)
                if excess(trial_slots, limit_bytes) < chosen_key[1]:
                    chosen = again
            except NotTileable:
                pass
        for first in [] if chosen else _candidates(main, slots, limit_bytes, alignment):
            # The estimate can be optimistic; a few more tiles may still fit.
            counts = [c for c in TILE_COUNTS if c >= first.count][:4]
            for count in counts:
                cand = dataclasses.replace(first, count=count)
                try:
                    trial_slots = _trial(main, cand, alignment, concat_inplace)
                except NotTileable:
                    break
                bound = lower_bound(trial_slots)
                # Fitting beats not fitting; among fits, fewer tiles and shorter regions
                # are cheaper to run; otherwise the least excess over the limit.
                key = (
                    (0, cand.count, cand.end - cand.start, bound)
                    if bound <= limit_bytes
                    else (1, excess(trial_slots, limit_bytes), bound)
                )
                if key < chosen_key:
                    chosen, chosen_key = cand, key
                if bound <= limit_bytes:
                    break
        if chosen is None:
            break
        steps = schedule(main)
        last, signature = chosen, tuple(_op_key(op) for op in steps[chosen.start : chosen.end + 1])
        _apply(module, chosen)
        slots = build_buffers(liveness(main), alignment, True, concat_inplace=concat_inplace)
    plan = plan_memory(main, alignment=alignment, concat_inplace=concat_inplace)
    best_seen = min(best_seen, plan.arena_bytes)
    if plan.arena_bytes > limit_bytes:
        reach = math.ceil(best_seen / MIB * 1e4) / 1e4
        raise AutofusionError(
            f"tile-fusion: the intermediates do not fit in "
            f"{limit_mb if limit_mb is not None else limit_bytes / MIB:g} MB "
            f"({limit_bytes} bytes); the smallest memory limit autofusion can meet for this "
            f"model is {reach:g} MB ({best_seen} bytes)"
        )
    annotate(main, plan)
    return plan


def apply_memory_limit(
    module: ModuleOp,
    limit_mb: float | None,
    concat_inplace: bool = True,
    concat_auto: bool = False,
) -> MemoryPlan:
    """Plan ``module`` (tiling it first when ``limit_mb`` is a positive number of MiB).

    This is what ``autofusion.compile(memory_limit_mb=...)``, ``set_memory_limit`` and the
    config key ``memory_limit_mb`` call. Raises ``AutofusionError`` if the limit cannot be met,
    or for a shape the plan cannot size (``autofusion.analysis.static_shapes``).
    """
    unlimited = limit_mb is None or limit_mb == 0
    check_static_shapes(find_main(module), "plan-buffers" if unlimited else "tile-fusion")
    if unlimited:
        main = find_main(module)
        if concat_inplace and concat_auto:
            plan = plan_memory_choosing_concats(main)
        else:
            plan = plan_memory(main, concat_inplace=concat_inplace)
        annotate(main, plan)
        return plan
    assert limit_mb is not None  # None is unlimited
    if limit_mb < 0 or not math.isfinite(limit_mb):
        raise AutofusionError(f"memory limit must be a positive number of MB, got {limit_mb}")
    return tile_to_limit(
        module,
        int(limit_mb * MIB),
        limit_mb=limit_mb,
        concat_inplace=concat_inplace,
        concat_auto=concat_auto,
    )


@dataclass(frozen=True)
class TileFusion(CheckedPass):
    """Tile fused regions so the arena fits ``memory-limit-mb`` MiB (0: just plan).

    ``concat-inplace`` and ``concat-auto`` (default true) are ``plan-buffers``' options of
    those names, for the plans made while tiling and the final one."""

    name: ClassVar[str] = "tile-fusion"
    memory_limit_mb: float | int = 0.0
    concat_inplace: bool = True
    concat_auto: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_memory_limit(op, self.memory_limit_mb, self.concat_inplace, self.concat_auto)
