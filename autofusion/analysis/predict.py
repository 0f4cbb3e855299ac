"""Predicted kernel time: a roofline over FLOPs, memory bytes and L2 bytes, plus a call cost.

For one kernel (a ``fusion.kernel`` or an unfused top-level nn op) the model counts

- *FLOPs*, split into contraction FLOPs (Conv / MatMul / Gemm / Attention, which run on the
  GEMM core) and vector FLOPs (everything else; ``cost.op_flops`` weights transcendentals);
- *memory bytes*: every value crossing the kernel boundary is read or written once
  (inputs, weights and the results read outside); one larger than L2
  (``Hardware.fused_cache_bytes``) comes from memory, a smaller one from L2, where its
  producer left it;
- *L2 bytes* from the tiling, as the C lowering runs the kernel: the memory bytes; an
  intermediate that is evaluated inline (elementwise into elementwise) or is a contraction's
  fused-epilogue input costs nothing; any other intermediate is a buffer written and read
  once (``2·bytes``), at L2 when it fits ``Hardware.fused_cache_bytes``, else also at memory
  (the L2 rule of ``cost``); plus the GEMM's re-reads of its left operand, once per
  resident block of the right operand (``Hardware.gemm_block_bytes``);
- *duplicated work*: an inline op read by several loop roots is computed once per root,
  the one way a fused kernel can be slower than its parts;
- *vector width* ``w`` (fp32 lanes): vector loops run at the share of lanes their innermost
  extent fills (``n / (ceil(n / w)·w)``); a contraction of (M, N, K) at
  ``min(1, N/2w)·min(1, K/2w)`` of the GEMM roof, at least ``1/w`` (depthwise convolutions
  and skinny GEMMs run far below the roof);

and predicts ``max(contraction/gemm_roof + vector/vector_roof, mem/mem_bw, l2/l2_bw) +
overhead``. The roofs (:class:`Roofs`) come from this machine's measurements
(:func:`measured_roofs`, cached per machine) for the validation table
(``benchmarks/cost_validation.py``, docs/cost-model.md), or from the recorded
:class:`~autofusion.analysis.hardware.Hardware` figures (:meth:`Roofs.of`) for the fusion
decisions, which must stay deterministic. :func:`join_times` is the profitability test
``fuse`` applies: fuse when the predicted fused kernel is faster than its parts.
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import weakref
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from xdsl.ir import Attribute, Operation, SSAValue

from autofusion.analysis import cost
from autofusion.analysis.hardware import Hardware
from autofusion.dialects import nn
from autofusion.dialects.fusion import KernelOp, YieldOp


def _type_shape(t: Attribute) -> tuple[int, ...]:
    """``t``'s shape (symbolic dims at their upper bounds), cached: ``cost.type_shape``."""
    return cost.type_shape(t)


def _bytes(v: SSAValue) -> int:
    return cost.type_bytes(v.type)


def _shape(v: SSAValue) -> tuple[int, ...]:
    return _type_shape(v.type)


_SKIP, _ANCHOR, _ELEMENTWISE, _HEAD = 1, 2, 4, 8


@functools.cache
def _kind(cls: type) -> int:
    """Classification flags of an op class (``isinstance`` on IRDL classes is slow: the
    analysis asks it for every op of every candidate, so it is asked once per class)."""
    k = 0
    if issubclass(cls, nn.ConstantOp | YieldOp):
        k |= _SKIP
    if issubclass(cls, cost.ANCHORS):
        k |= _ANCHOR
    if issubclass(cls, nn.ELEMENTWISE):
        k |= _ELEMENTWISE
    if issubclass(cls, nn.ConvOp | nn.MatMulOp | nn.GemmOp):
        k |= _HEAD
    return k


#: Bumped when what :func:`measured_roofs` measures changes (invalidates cached files).
ROOFS_VERSION = 2  # 2: the GEMM roof is the caller's (the runtime's core), not OpenBLAS's


@dataclass(frozen=True)
class Roofs:
    """The machine figures a prediction needs (rates per second, overhead in seconds)."""

    gemm_flops: float  # contraction FLOP/s (sgemm on one thread)
    vector_flops: float  # elementwise FLOP/s (one op per element, L2-resident)
    mem_bandwidth: float  # bytes/s, read + write, out of cache
    l2_bandwidth: float  # bytes/s, read + write, L2-resident
    overhead_s: float  # fixed cost of one kernel call
    vector_lanes: int = 16  # fp32 lanes of the widest SIMD unit (AVX-512: 16)
    source: str = "recorded"

    @staticmethod
    def of(hw: Hardware) -> Roofs:
        """Deterministic roofs from a recorded hardware description (the fusion decisions'):
        the vector roof is taken as 1/8 of the contraction peak (no FMA, no register
        blocking) and a call costs 1 µs (the profiler's smallest kernels)."""
        return Roofs(
            gemm_flops=hw.peak_flops,
            vector_flops=hw.peak_flops / 8,
            mem_bandwidth=hw.dram_bandwidth,
            l2_bandwidth=hw.cache_bandwidth,
            overhead_s=1e-6,
            source=f"recorded:{hw.name}",
        )


@dataclass(frozen=True)
class Work:
    """What one kernel does, in the units :func:`predict_seconds` needs."""

    contraction_flops: int
    vector_flops: int
    mem_bytes: int
    l2_bytes: int
    lane_fill: float  # share of SIMD lanes the vector loops fill, 0 < fill <= 1
    gemm_efficiency: float = 1.0  # share of the GEMM roof the contraction reaches

    @property
    def flops(self) -> int:
        return self.contraction_flops + self.vector_flops


_FLOPS: weakref.WeakKeyDictionary[Operation, int] = weakref.WeakKeyDictionary()


def op_flops(op: Operation) -> int:
    """``cost.op_flops`` plus the window of pooling ops (one compare/add per tap), which
    the byte-oriented cost layer counts as one operation per output. Memoised per op (the
    fusion analysis asks for every member of every candidate)."""
    got = _FLOPS.get(op)
    if got is None:
        got = _FLOPS[op] = _op_flops(op)
    return got


def _op_flops(op: Operation) -> int:
    if isinstance(op, nn.PoolOp):
        taps = 1
        for k in op.kernel:
            taps *= int(k)
        return taps * cost.numel(op.y)
    if isinstance(op, nn.GlobalPoolOp):
        return cost.numel(op.x)
    return cost.op_flops(op)


def _lane_fill(op: Operation, lanes: int) -> float:
    """Share of the SIMD lanes a loop over ``op`` fills: its innermost extent ``n`` (of the
    first operand for reductions and data movement, which loop over their input) in
    ``ceil(n / lanes)`` vectors."""
    v = op.operands[0] if op.operands else (op.results[0] if op.results else None)
    shape = _shape(v) if v is not None else ()
    n = int(shape[-1]) if shape else 1
    if n <= 0:
        return 1.0
    return n / (math.ceil(n / lanes) * lanes)


def contraction_dims(op: Operation) -> tuple[int, int, int]:
    """(M, N, K) of the GEMM a contraction runs (a Conv as implicit GEMM per group:
    M = output pixels, N = output channels per group, K = input channels per group x taps;
    Attention as its score GEMM: N = keys, K = head dim)."""
    if isinstance(op, nn.ConvOp):
        y, w = _shape(op.y), _shape(op.w)
        m = 1
        for d in y[2:]:
            m *= int(d)
        k = 1
        for d in w[1:]:
            k *= int(d)
        groups = max(op.group, 1)
        return m, max(int(w[0]) // groups, 1), k
    if isinstance(op, nn.AttentionOp):
        q, k_ = _shape(op.q), _shape(op.k)
        return int(q[-2]), int(k_[-2]), int(q[-1])
    out = _shape(op.results[0])
    n = int(out[-1]) if out else 1
    m = max(cost.numel(op.results[0]) // max(n, 1), 1)
    a = _shape(op.operands[0])
    if isinstance(op, nn.GemmOp):
        k = int(a[0] if op.trans_a else a[1])
    else:
        k = int(a[-1]) if a else 1
    return m, n, k


def contraction_efficiency(op: Operation, lanes: int) -> float:
    """Share of the GEMM roof a contraction of (M, N, K) reaches: register blocks need
    ``2·lanes`` columns and ``2·lanes`` terms of K to run at speed, and a block with one
    useful lane is scalar code (``1/lanes``). Hand-set constants, not fitted per model."""
    _, n, k = contraction_dims(op)
    full = 2 * lanes
    return max(min(1.0, n / full) * min(1.0, k / full), 1.0 / lanes)


def _gemm_rereads(op: Operation, hw: Hardware) -> int:
    """Extra L2 bytes of a contraction: the left operand is streamed once per block of the
    right operand that stays resident (``gemm_block_bytes``)."""
    if isinstance(op, nn.MatMulOp | nn.GemmOp):
        a, b = op.a, op.b
    elif isinstance(op, nn.ConvOp):
        a, b = op.x, op.w
    else:
        return 0
    blocks = max(1, math.ceil(cost.value_bytes(b) / max(hw.gemm_block_bytes, 1)))
    return (blocks - 1) * cost.value_bytes(a)


def streamed(
    body: Sequence[Operation], members: set[Operation]
) -> tuple[set[Operation], Operation | None]:
    """How the C lowering (``lower-nn-to-loops``) treats a kernel of ``body``: the elementwise
    ops it evaluates inline in their readers' loops (every reader elementwise of the same
    shape, none outside), and the contraction whose result feeds a fused epilogue (one
    Conv/MatMul/Gemm followed only by same-shape elementwise ops), if any."""
    inline: set[Operation] = set()
    for o in body:
        if not _kind(type(o)) & _ELEMENTWISE or len(o.results) != 1:
            continue
        r = o.results[0]
        shape = _shape(r)
        users = [u.operation for u in r.uses]
        if users and all(
            u in members and _kind(type(u)) & _ELEMENTWISE and _shape(u.results[0]) == shape
            for u in users
        ):
            inline.add(o)
    heads = [o for o in body if _kind(type(o)) & _HEAD]
    head = heads[0] if len(heads) == 1 and len(body) >= 2 else None
    if head is not None:
        out = _shape(head.results[0])
        rest = [o for o in body if o is not head]
        if not all(_kind(type(o)) & _ELEMENTWISE and _shape(o.results[0]) == out for o in rest):
            head = None
        elif any(u.operation not in members for u in head.results[0].uses):
            head = None
    return inline, head


def _roots_reaching(body: Sequence[Operation], inline: set[Operation]) -> dict[Operation, int]:
    """How many loop roots evaluate each inline op (each root's loop recomputes the inline
    ops it reads; shared subexpressions are reused only within one root)."""
    count: dict[Operation, int] = {}
    if not inline:
        return count
    for root in body:
        if root in inline or not _kind(type(root)) & _ELEMENTWISE:
            continue
        seen: set[Operation] = set()
        stack = [v.owner for v in root.operands]
        while stack:
            o = stack.pop()
            if isinstance(o, Operation) and o in inline and o not in seen:
                seen.add(o)
                stack.extend(v.owner for v in o.operands)
        for o in seen:
            count[o] = count.get(o, 0) + 1
    return count


def group_work(ops: Sequence[Operation], hw: Hardware, lanes: int = 16) -> Work:
    """The work of one kernel made of ``ops`` (top-level ops, or a kernel's body ops) as the
    C lowering runs it: inline elementwise values and a contraction's epilogue input never
    leave the loop; any other intermediate is a full buffer written and read once, in L2
    when it fits (``Hardware.fused_cache_bytes``), else in memory; an inline op read by
    several loop roots is computed once per root."""
    body = [o for o in ops if not _kind(type(o)) & _SKIP]
    members = set(body)
    inline, head = streamed(body, members)
    times = _roots_reaching(body, inline)
    contraction = vector = 0
    slow = 0.0  # sum of flops / efficiency over the contractions
    anchors: list[Operation] = []
    for o in body:
        if _kind(type(o)) & _ANCHOR:
            f = op_flops(o)
            contraction += f
            anchors.append(o)
            slow += f / contraction_efficiency(o, lanes)
        else:
            vector += op_flops(o) * max(times.get(o, 1), 1)
    tiled = _chain_intermediates(body) if len(anchors) > 1 else set()
    mem, near = _boundary_bytes(body, members, hw)
    l2 = mem + near
    for o in body:
        if o in inline or o is head:
            continue
        for r in o.results:
            if any(u.operation in members for u in r.uses):
                b = _bytes(r)
                if b <= hw.fused_cache_bytes or r in tiled:
                    l2 += 2 * b
                else:
                    mem += 2 * b
                    l2 += 2 * b
    l2 += sum(_gemm_rereads(o, hw) for o in body if _kind(type(o)) & _HEAD)
    fill = _lane_fill(body[-1], lanes) if body else 1.0
    eff = 1.0
    if len(anchors) == 1:
        eff = contraction_efficiency(anchors[0], lanes)
    elif anchors:  # several contractions (a conv chain): their times add up
        eff = contraction / slow if slow > 0 else 1.0
    return Work(contraction, vector, mem, l2, fill, eff)


def _chain_intermediates(body: Sequence[Operation]) -> set[SSAValue]:
    """Values a ``fuse-conv-chain`` kernel keeps in its L2 tile (never in memory)."""
    from autofusion.analysis.conv_chain import body_chain

    got = body_chain([o for o in body if not isinstance(o, nn.ConstantOp)])
    if got is None:
        return set()
    dw, act, _ = got
    return {dw.y, *(act.results if act is not None else ())}


def _boundary_bytes(
    body: Sequence[Operation], members: set[Operation], hw: Hardware
) -> tuple[int, int]:
    """Bytes crossing the boundary of a kernel of ``body`` (operands from outside, small
    constants included, once; results read outside or yielded, once), split into those
    that travel from memory (tensors larger than ``fused_cache_bytes``: they cannot still
    be in L2 from their producer) and those served by L2."""
    mem = l2 = 0
    seen: set[SSAValue] = set()

    def add(v: SSAValue) -> None:
        nonlocal mem, l2
        b = _bytes(v)
        if b > hw.fused_cache_bytes:
            mem += b
        else:
            l2 += b

    for o in body:
        for v in o.operands:
            if v in seen or (isinstance(v.owner, Operation) and v.owner in members):
                continue
            seen.add(v)
            add(v)
        for r in o.results:
            if any(u.operation not in members for u in r.uses):
                add(r)
    return mem, l2


def op_work(op: Operation, hw: Hardware, lanes: int = 16) -> Work:
    """The work of one top-level op: a ``fusion.kernel`` (its body) or an unfused nn op."""
    if isinstance(op, KernelOp):
        return group_work(list(op.body.block.ops), hw, lanes)
    return group_work([op], hw, lanes)


def predict_seconds(work: Work, roofs: Roofs) -> float:
    """Roofline time of ``work``: the slowest of compute, memory and L2, plus the call."""
    fill = max(work.lane_fill, 1e-3)
    compute = (
        work.contraction_flops / (roofs.gemm_flops * max(work.gemm_efficiency, 1e-3))
        + work.vector_flops / (roofs.vector_flops * fill)
    )  # fmt: skip
    memory = work.mem_bytes / roofs.mem_bandwidth
    l2 = work.l2_bytes / roofs.l2_bandwidth
    return max(compute, memory, l2) + roofs.overhead_s


def predict_op(op: Operation, hw: Hardware, roofs: Roofs) -> float:
    return predict_seconds(op_work(op, hw, roofs.vector_lanes), roofs)


@dataclass(frozen=True)
class JoinTimes:
    """Predicted seconds of a candidate join: the fused kernel vs the two kernels apart."""

    fused: float
    parts: float

    @property
    def saved(self) -> float:
        return self.parts - self.fused


#: ``group_work`` results of one analysis, keyed by the ops' ids (the IR does not change
#: while the structure layer decides, so a cluster's work is computed once: its "fused"
#: work of one join is its "group" work of the next).
WorkMemo = dict[tuple[int, ...], tuple[tuple[Operation, ...], Work]]


def _memo_work(ops: Sequence[Operation], hw: Hardware, lanes: int, memo: WorkMemo | None) -> Work:
    if memo is None:
        return group_work(ops, hw, lanes)
    key = tuple(map(id, ops))
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = (tuple(ops), group_work(ops, hw, lanes))  # holds the ops: ids stay
    return hit[1]


def join_times(
    group: Sequence[Operation],
    consumer: Operation,
    hw: Hardware,
    roofs: Roofs,
    memo: WorkMemo | None = None,
) -> JoinTimes:
    """Predicted time of ``group + consumer`` as one kernel against ``group`` and
    ``consumer`` as two (the value between them written by one and read by the other).
    ``memo`` (one per analysis of unchanging IR) reuses the work of groups seen before."""
    lanes = roofs.vector_lanes
    fused = predict_seconds(_memo_work([*group, consumer], hw, lanes, memo), roofs)
    parts = predict_seconds(_memo_work(group, hw, lanes, memo), roofs) + predict_seconds(
        _memo_work([consumer], hw, lanes, memo), roofs
    )
    return JoinTimes(fused, parts)


def slower_when_fused(
    group: Sequence[Operation],
    consumer: Operation,
    hw: Hardware,
    roofs: Roofs,
    memo: WorkMemo | None = None,
) -> str | None:
    """The reason to refuse a join the time model finds unprofitable, or ``None``."""
    t = join_times(group, consumer, hw, roofs, memo)
    if t.fused < t.parts:
        return None
    return (
        f"predicted fused time {1e6 * t.fused:.2f} us is not below the parts' "
        f"{1e6 * t.parts:.2f} us"
    )


def _compute_seconds(work: Work, roofs: Roofs) -> float:
    fill = max(work.lane_fill, 1e-3)
    return work.contraction_flops / (
        roofs.gemm_flops * max(work.gemm_efficiency, 1e-3)
    ) + work.vector_flops / (roofs.vector_flops * fill)


@dataclass(frozen=True)
class ChainTimes:
    """Predicted seconds of a conv chain run in spatial tiles against its two kernels."""

    fused: float
    parts: float
    mid_bytes: int  # the intermediate's size
    mem_saved: int  # memory bytes the tiles save (0: it stays in L2 between the kernels)


def conv_chain_times(
    producer: Sequence[Operation], consumer: Sequence[Operation], hw: Hardware, roofs: Roofs
) -> ChainTimes:
    """The ``fuse-conv-chain`` decision's figures: ``producer`` (a depthwise conv and its
    clamp) and ``consumer`` (a 1x1 conv reading its result, and its epilogue) as two kernels
    or as one run in row bands. Apart, the intermediate is written by one and read by the
    other: from memory unless it fits in L2 with as much traffic again around it (the
    producer's input streaming in while it is written, the consumer's output streaming out
    while it is read; L2 keeps the most recent bytes), i.e. when ``2·bytes > L2``. Measured
    (benchmarks/dwpw_chain.py): 1.2-1.8 MB intermediates gain 12-31%, 0.45-0.6 MB ones
    nothing, even behind a 1.8 MB input.
    Fused, it moves through a per-band tile in L2 (the same L2 bytes) and never through
    memory; a 1x1 consumer needs no halo, so no work is repeated, and the two contractions'
    compute adds up. Memory traffic of the kernels' own inputs and outputs is unchanged."""
    lanes = roofs.vector_lanes
    wp = group_work(producer, hw, lanes)
    wc = group_work(consumer, hw, lanes)
    members = set(producer)
    mid = next(r for o in producer for r in o.results
               if any(u.operation not in members for u in r.uses))  # fmt: skip
    b = _bytes(mid)
    working = 2 * b
    mp, mc = wp.mem_bytes, wc.mem_bytes
    if b <= hw.fused_cache_bytes < working:  # group_work counted it at L2: it is not
        mp, mc = mp + b, mc + b
    saved = 2 * b if working > hw.fused_cache_bytes else 0
    parts = predict_seconds(replace(wp, mem_bytes=mp), roofs) + predict_seconds(
        replace(wc, mem_bytes=mc), roofs
    )
    compute = _compute_seconds(wp, roofs) + _compute_seconds(wc, roofs)
    fused = (
        max(compute, (mp + mc - saved) / roofs.mem_bandwidth,
            (wp.l2_bytes + wc.l2_bytes) / roofs.l2_bandwidth)
        + roofs.overhead_s
    )  # fmt: skip
    return ChainTimes(fused, parts, b, saved)


# ---- measured roofs, cached per machine ---------------------------------------------------


def machine_key() -> str:
    """CPU model, core count and architecture: a cached measurement belongs to one machine."""
    model = platform.processor() or "cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model} x{os.cpu_count()} {platform.machine()}"


def roofs_cache_file() -> Path:
    root = os.environ.get("AUTOFUSION_CACHE_DIR") or str(Path.home() / ".cache" / "autofusion")
    return Path(root) / "roofs.json"


def measure_vector_flops(n: int = 32768, repeats: int = 20) -> float:
    """Elementwise ops per second on an L2-resident float32 array (``np.multiply``, one op
    per element, best of ``repeats``); a lower bound for generated loops, whose rate the
    validation script measures on a compiled kernel instead."""
    import time

    import numpy as np

    a = np.ones(n, dtype=np.float32)
    out = np.empty_like(a)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        np.multiply(a, a, out=out)
        best = min(best, time.perf_counter() - t)
    return n / best


def measured_roofs(gemm_flops: float, refresh: bool = False, **overrides: float) -> Roofs:
    """This machine's roofs: ``gemm_flops`` is the caller's measurement of the GEMM core the
    generated code calls (``runtime.roofs.machine_roofs``: the runtime's own core on a 512^3
    MatMul, the one GEMM roof of the project; analysis imports no runtime, so it is passed in
    as a number); out-of-cache and L2-resident copies (``measure_copy_bandwidth``), an
    L2-resident multiply and 1 µs per call are measured here. ``overrides`` replace fields with
    the caller's measurements (``benchmarks/cost_validation.py`` profiles compiled kernels for
    ``vector_flops`` and ``overhead_s``). The fields measured here are cached in
    ``$AUTOFUSION_CACHE_DIR/roofs.json`` (default ``~/.cache/autofusion``) under
    :func:`machine_key`; ``refresh`` measures again."""
    from autofusion.analysis.hardware import measure_copy_bandwidth

    path = roofs_cache_file()
    key = machine_key()
    data: dict[str, dict[str, object]] = {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    entry = data.get(key)
    if entry is not None and not refresh and entry.get("version") == ROOFS_VERSION:
        fields = {k: v for k, v in entry.items() if k != "version"}
        roofs = Roofs(**{**fields, "gemm_flops": gemm_flops})  # type: ignore[arg-type]
    else:
        roofs = Roofs(
            gemm_flops=gemm_flops,
            vector_flops=measure_vector_flops(),
            mem_bandwidth=max(measure_copy_bandwidth() for _ in range(3)),
            l2_bandwidth=measure_copy_bandwidth(256 * 1024, 50),
            overhead_s=1e-6,
            source=f"measured:{key}",
        )
        data[key] = {**asdict(roofs), "version": ROOFS_VERSION}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        except OSError:
            pass  # a read-only cache: measure again next time
    return replace(roofs, **overrides) if overrides else roofs
