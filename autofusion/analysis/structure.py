"""The structure layer: which ops *may* form one kernel (legality only).

``find_clusters`` walks the top-level ops of a block in topological order and grows
clusters greedily:

- a Conv / MatMul / Gemm / Attention op starts an *anchor* cluster (one anchor per kernel);
- an elementwise op joins the cluster of one of its producers when the producer's value has
  the cluster's iteration shape and the op's result has it too (other operands may
  broadcast into it), and joining creates no dependence cycle through an outside op;
  otherwise it starts an elementwise cluster;
- a last-axis LayerNorm / Softmax may join as a row epilogue under the same rules;
- a value with readers outside the cluster is handled explicitly: *materialise* (the
  kernel also yields it) or, for cheap pure-elementwise clusters whose every reader could
  absorb them, *recompute* (each reader's cluster gets its own copy).

Every candidate join that is legal is put to a ``decide`` callback (the cost and policy
layers, wired by the ``fuse`` pass); its refusal, or a legality refusal, goes to the log.

Windowed incremental mode (``window_size > 0``) analyses consecutive windows of that many
ops independently: clusters never cross a window boundary and the cycle search never looks
before the window start, which bounds analysis time on very large graphs at the cost of
kernels split at window edges (agreement with the whole-graph result: docs/fusion.md,
printed by ``python -m autofusion.tools.analysis_report structure MODEL``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion.dialects import nn
from autofusion.dialects.base import type_dims
from autofusion.dialects.dtypes import is_float
from autofusion.policy.reasons import Refusal, RefusalLog, nodes_of
from autofusion.symbolic import shape_text

ANCHOR_TYPES = (nn.ConvOp, nn.MatMulOp, nn.GemmOp, nn.AttentionOp)
ANCHOR_FAMILY = {
    nn.ConvOp: "conv_epilogue",
    nn.MatMulOp: "matmul_epilogue",
    nn.GemmOp: "gemm_epilogue",
    nn.AttentionOp: "attention_epilogue",
}

#: decide(producer, consumer, family, cluster, value, mode, readers) -> refusal or None
Decider = Callable[[Operation, Operation, str, "Cluster", SSAValue, str, int], Refusal | None]
#: rank(consumer, candidate clusters) -> the order (indices) in which to try them
Ranker = Callable[[Operation, Sequence["Cluster"]], Sequence[int]]


@dataclass(eq=False)
class Cluster:
    """A candidate kernel: ``ops`` in block order; ``recomputed`` ones are copies of ops
    that another cluster (or the plain graph) also computes."""

    ops: list[Operation]
    anchor: Operation | None = None
    recomputed: set[Operation] = field(default_factory=set)

    @property
    def owned(self) -> list[Operation]:
        return [o for o in self.ops if o not in self.recomputed]

    def family(self) -> str:
        if self.anchor is not None:
            return ANCHOR_FAMILY[type(self.anchor)]
        return "elementwise"

    def iteration_shape(self) -> tuple[int, ...]:
        op = self.anchor or self.ops[0]
        return _shape(op.results[0])


#: ``id(type) -> (type, dims)``, as ``cost._TYPE_SIZES`` (the entry keeps the type alive).
_DIMS: dict[int, tuple[Attribute, tuple[int, ...]]] = {}


def _shape(v: SSAValue) -> tuple[int, ...]:
    """The value's shape for legality: symbolic dims as ``symbolic.Size``, compared
    structurally (``[batch, seq]`` never equals ``[seq, batch]``, whatever the ranges)."""
    t = v.type
    hit = _DIMS.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    dims = type_dims(t) if isinstance(t, TensorType) else ()
    if len(_DIMS) > 200_000:
        _DIMS.clear()
    _DIMS[id(t)] = (t, dims)
    return dims


@functools.cache
def _elementwise_class(cls: type) -> bool:
    return issubclass(cls, nn.ELEMENTWISE)


def is_elementwise(op: Operation) -> bool:
    # once per op class: isinstance against IRDL classes is slow and asked for every op
    return _elementwise_class(type(op))


def is_row_epilogue(op: Operation) -> bool:
    """LayerNorm / Softmax normalising over the last axis only (whole rows per tile)."""
    if isinstance(op, nn.LayerNormOp | nn.SoftmaxOp):
        rank = len(_shape(op.results[0]))
        return op.axis == rank - 1
    return False


def row_family(op: Operation) -> str:
    return "layernorm_epilogue" if isinstance(op, nn.LayerNormOp) else "softmax_epilogue"


@dataclass
class StructureResult:
    clusters: list[Cluster]
    seconds: float
    window_size: int

    def partition(self) -> list[frozenset[Operation]]:
        """Owned-op sets of the clusters with at least two ops (the kernels to be formed)."""
        return [frozenset(c.owned) for c in self.clusters if len(c.ops) >= 2]


class _Analysis:
    def __init__(
        self,
        ops: Sequence[Operation],
        decide: Decider,
        log: RefusalLog,
        allow_recompute: bool,
        window_size: int,
        rank: Ranker | None = None,
    ) -> None:
        self.ops = list(ops)
        self.rank = rank
        self.pos = {op: i for i, op in enumerate(self.ops)}
        self.decide = decide
        self.log = log
        self.allow_recompute = allow_recompute
        self.window = window_size
        self.cluster_of: dict[Operation, Cluster] = {}
        self.clusters: list[Cluster] = []
        self.recompute_values: dict[SSAValue, Cluster] = {}

    def window_start(self, i: int) -> int:
        return (i // self.window) * self.window if self.window > 0 else 0

    def same_window(self, a: Operation, b: Operation) -> bool:
        if self.window <= 0:
            return True
        return self.pos[a] // self.window == self.pos[b] // self.window

    def depends_on(self, start: Operation, cluster: Cluster, floor: int) -> bool:
        """Would the kernel of ``start`` (an op outside ``cluster``) read ``cluster``'s results?

        The search runs over the graph of *kernels to be*: reaching an op that belongs to
        another multi-op cluster continues from every op of that cluster, because once
        outlined that kernel waits for all of its inputs. Ops (clusters) that end before the
        cluster's first op, or before ``floor``, cannot depend on it and are not explored.
        """
        members = set(cluster.ops)
        lowest = max(min(self.pos[o] for o in cluster.ops), floor)
        stack = [start]
        seen: set[Operation] = {start}
        while stack:
            op = stack.pop()
            group = self.cluster_of.get(op)
            expand = [op] if group is None or len(group.ops) < 2 else group.owned
            for o in expand:
                if o is not op:
                    if o in seen:
                        continue
                    seen.add(o)
                for v in o.operands:
                    p = v.owner
                    if not isinstance(p, Operation) or p not in self.pos or p in seen:
                        continue
                    if p in members:
                        return True
                    seen.add(p)
                    if self.last_pos(p) >= lowest:
                        stack.append(p)
        return False

    def last_pos(self, op: Operation) -> int:
        """Position of the last op of ``op``'s cluster (of ``op`` itself when unclustered)."""
        group = self.cluster_of.get(op)
        if group is None or not group.ops:
            return self.pos[op]
        return max(self.pos[o] for o in group.ops)

    def legality(self, cluster: Cluster, consumer: Operation, value: SSAValue) -> Refusal | None:
        nodes = nodes_of([value.owner, consumer])  # type: ignore[list-item]
        shape = cluster.iteration_shape()
        if _shape(value) != shape or _shape(consumer.results[0]) != shape:
            return Refusal(
                "shape-mismatch",
                f"{consumer.name} result {shape_text(_shape(consumer.results[0]))} / operand "
                f"{shape_text(_shape(value))} do not match the kernel's iteration shape "
                f"{shape_text(shape)}",
                nodes,
            )
        if cluster.anchor is not None:
            t = consumer.results[0].type
            if not (isinstance(t, TensorType) and is_float(t.element_type)):
                return Refusal("dtype", f"{consumer.name} epilogue must be floating point", nodes)
        if is_row_epilogue(consumer) and consumer.operands[0] is not value:
            return Refusal(
                "unsupported", f"{consumer.name} may only normalise the kernel's value", nodes
            )
        floor = self.window_start(self.pos[consumer])
        for w in consumer.operands:
            q = w.owner
            if w is value or not isinstance(q, Operation) or q not in self.pos:
                continue
            if q in cluster.ops or isinstance(q, nn.ConstantOp):
                continue
            if self.depends_on(q, cluster, floor):
                return Refusal(
                    "cycle",
                    f"operand of {consumer.name} is computed from the kernel's own results",
                    nodes,
                )
        return None

    def readers_outside(
        self, value: SSAValue, cluster: Cluster, consumer: Operation
    ) -> list[Operation]:
        members = set(cluster.ops)
        out: list[Operation] = []
        for u in value.uses:
            o = u.operation
            if o is consumer or o in members or o in out:
                continue
            out.append(o)
        return out

    def can_recompute(self, cluster: Cluster, value: SSAValue, readers: list[Operation]) -> bool:
        if not self.allow_recompute or cluster.anchor is not None:
            return False
        if not all(is_elementwise(o) for o in cluster.ops):
            return False
        shape = _shape(value)
        return all(
            is_elementwise(r) and r in self.pos and _shape(r.results[0]) == shape for r in readers
        )

    def try_join(self, consumer: Operation) -> bool:
        cands: list[tuple[int, int, SSAValue, Cluster]] = []
        for v in consumer.operands:
            p = v.owner
            if not isinstance(p, Operation) or p not in self.cluster_of:
                continue
            if not self.same_window(p, consumer):
                continue
            c = self.cluster_of[p]
            if any(c is x for _, _, _, x in cands):
                continue
            cands.append((0 if c.anchor is not None else 1, -self.pos[p], v, c))
        cands.sort(key=lambda t: (t[0], t[1]))
        if self.rank is not None and len(cands) > 1:
            cands = [cands[i] for i in self.rank(consumer, [c for *_, c in cands])]
        for _, _, v, cluster in cands:
            producer = v.owner
            assert isinstance(producer, Operation)
            r = self.legality(cluster, consumer, v)
            if r is not None:
                self.log.add_refusal(r)
                continue
            family = row_family(consumer) if is_row_epilogue(consumer) else cluster.family()
            readers = self.readers_outside(v, cluster, consumer)
            modes = ["single"]
            if readers:
                modes = (["recompute"] if self.can_recompute(cluster, v, readers) else []) + [
                    "materialize"
                ]
            last: Refusal | None = None
            for mode in modes:
                last = self.decide(producer, consumer, family, cluster, v, mode, len(readers) + 1)
                if last is None:
                    self.join(cluster, consumer, mode, v)
                    return True
            if last is not None:
                self.log.add_refusal(last)
        return False

    def join(
        self, cluster: Cluster, consumer: Operation, mode: str, value: SSAValue | None = None
    ) -> None:
        if mode == "recompute":
            assert value is not None
            self.recompute_values[value] = cluster
            copy = Cluster([], None, set())
            self.clusters.append(copy)
            self.add_member(copy, consumer)
            return
        self.add_member(cluster, consumer)

    def add_member(self, cluster: Cluster, op: Operation) -> None:
        """Add ``op``; first copy in any recompute-marked cluster it reads, so that the
        marked value is recomputed by every reader and never materialised. ``ops`` stays
        in block order (a valid dependence order for the outliner)."""
        for w in op.operands:
            src = self.recompute_values.get(w)
            if src is None or src is cluster:
                continue
            members = set(src.ops)
            slice_: set[Operation] = set()
            stack = [w.owner]
            while stack:  # the ops of src that compute w
                o = stack.pop()
                if isinstance(o, Operation) and o in members and o not in slice_:
                    slice_.add(o)
                    stack.extend(v.owner for v in o.operands)
            missing = [o for o in src.ops if o in slice_ and o not in cluster.ops]
            if not missing:
                continue
            if cluster.ops and _shape(w) != cluster.iteration_shape():
                continue
            floor = self.window_start(self.pos[op])
            ins = [
                v.owner
                for o in missing
                for v in o.operands
                if isinstance(v.owner, Operation) and v.owner in self.pos and v.owner not in slice_
            ]
            if cluster.ops and any(
                q not in cluster.ops and self.depends_on(q, cluster, floor) for q in ins
            ):
                continue
            cluster.ops.extend(missing)
            cluster.recomputed.update(missing)
        cluster.ops.append(op)
        cluster.ops.sort(key=self.pos.__getitem__)
        self.cluster_of[op] = cluster

    def run(self) -> list[Cluster]:
        for op in self.ops:
            if isinstance(op, nn.ConstantOp):
                continue
            if isinstance(op, ANCHOR_TYPES):
                c = Cluster([op], op)
                self.clusters.append(c)
                self.cluster_of[op] = c
            elif is_elementwise(op) or is_row_epilogue(op):
                if self.try_join(op):
                    continue
                if is_elementwise(op) and len(op.results) == 1:
                    c = Cluster([])
                    self.clusters.append(c)
                    self.add_member(c, op)
        return self.clusters


def find_clusters(
    ops: Sequence[Operation],
    decide: Decider,
    log: RefusalLog | None = None,
    *,
    allow_recompute: bool = False,
    window_size: int = 0,
    rank: Ranker | None = None,
) -> StructureResult:
    """Candidate clusters over ``ops`` (top-level ops of one block, in order). ``rank``
    reorders a consumer's candidate clusters (the learned strategy); by default they are
    tried anchor-first, then most recent producer first."""
    t0 = time.perf_counter()
    analysis = _Analysis(
        ops, decide, log if log is not None else RefusalLog(), allow_recompute, window_size, rank
    )
    clusters = analysis.run()
    return StructureResult(clusters, time.perf_counter() - t0, window_size)


def agreement(a: StructureResult, b: StructureResult) -> dict[str, float]:
    """How far two results agree: share of ``a``'s kernels reproduced exactly by ``b``, and
    share of fused ops that ``b`` places with exactly the same kernel-mates."""
    pa, pb = a.partition(), b.partition()
    sb = set(pb)
    exact = sum(1 for g in pa if g in sb) / max(len(pa), 1)
    mate_a = {op: g for g in pa for op in g}
    mate_b = {op: g for g in pb for op in g}
    ops = set(mate_a) | set(mate_b)
    same = sum(1 for op in ops if mate_a.get(op) == mate_b.get(op))
    return {
        "kernels_a": float(len(pa)),
        "kernels_b": float(len(pb)),
        "exact_kernel_agreement": exact,
        "op_agreement": same / max(len(ops), 1),
    }
