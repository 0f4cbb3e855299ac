"""``fuse``: the general fusion engine (structure -> cost -> policy), and kernel outlining.

Effect: groups the top-level nn ops of ``@main`` into ``fusion.kernel`` ops —
elementwise/broadcast chains into one kernel; epilogues (bias, residual add, activation,
and at aggressiveness >= 2 last-axis LayerNorm/Softmax) into the kernel of the producing
Conv/MatMul/Gemm/Attention; values with several readers are materialised (yielded as an
extra kernel result) or, at aggressiveness >= 2 when the cost model agrees, recomputed in
each reader's kernel. Refusals go to the module attribute ``fusion.refusals``.

Preconditions: static or symbolic shapes (symbolic ones are compared structurally for
legality and taken at their upper bounds by the cost model: docs/dynamic.md); run after
canonicalize-nn, fold-batchnorm, the recognize-* passes and fuse-conv-bn-relu (existing
kernels are left as they are). Kernels hold only nn ops; small constants (<= 16 elements)
are cloned inside, larger ones are kernel inputs. After outlining, top-level ops are
re-sorted topologically (stable).

Options: ``config`` (JSON/YAML file), ``aggressiveness`` (-1 = config/env/default 1),
``policy`` (``module:Class`` or ``@token``), ``window_size`` (0 = whole graph, -1 = the
config's ``analysis_window``, default whole graph),
``hardware`` (cpu | ascend910b; empty = the config's).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from autofusion.analysis import cost, predict, structure
from autofusion.analysis.hardware import Hardware, hardware_for
from autofusion.analysis.order import stable_topological_order
from autofusion.dialects import nn
from autofusion.dialects.attrs import FUSION_DECIDED_BY, FUSION_POLICY
from autofusion.dialects.fusion import FAST_MATH_ATTR, KernelOp, YieldOp
from autofusion.passes.options import PolicyPass
from autofusion.policy import learned
from autofusion.policy.base import onnx_op_type
from autofusion.policy.engine import FusionPolicy
from autofusion.policy.reasons import (
    Refusal,
    RefusalLog,
    group_layer,
    merge_origins,
    nodes_of,
)

SMALL_CONSTANT = 16

_SHORT = {
    "nn.batch_norm": "bn",
    "nn.layer_norm": "layernorm",
    "nn.leaky_relu": "leakyrelu",
    "nn.hard_sigmoid": "hardsigmoid",
    "nn.hard_swish": "hardswish",
}


def short_name(op: Operation) -> str:
    if isinstance(op, nn.ClipOp) and op.min == 0.0 and op.max == 6.0:
        return "relu6"
    return _SHORT.get(op.name, op.name.split(".", 1)[-1])


def pattern_name(ops: Sequence[Operation], anchor: Operation | None) -> str:
    names = [short_name(o) for o in ops if not isinstance(o, nn.ConstantOp)]
    if anchor is None:
        names = ["ew", *names]
    if len(names) > 8:
        names = [*names[:7], f"x{len(names) - 7}"]
    return "_".join(names)


def main_funcs(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp)]


def topo_sort_block(block: Block) -> None:
    """Stable topological re-sort of a block's ops (terminator stays last)."""
    ops = list(block.ops)
    if len(ops) < 2:
        return
    term = ops[-1]
    body = ops[:-1]
    index = {op: i for i, op in enumerate(body)}
    deps = [
        {index[v.owner] for v in op.operands if isinstance(v.owner, Operation) and v.owner in index}
        for op in body
    ]
    order = stable_topological_order(deps)
    if len(order) != len(body):
        raise AssertionError("fusion produced a dependence cycle")
    if order == list(range(len(body))):
        return
    for op in body:
        op.detach()
    for i in order:
        block.insert_op_before(body[i], term)


def unfuse(kernel: KernelOp) -> None:
    """Put the kernel's ops back at the top level, each to be its own kernel again."""
    block = kernel.body.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, kernel.inputs))
    results = []
    for inner in block.ops:
        if isinstance(inner, YieldOp):
            results = [mapping.get(v, v) for v in inner.values]
            break
        Rewriter.insert_op(inner.clone(value_mapper=mapping), InsertPoint.before(kernel))
    for old, new in zip(kernel.results, results):
        old.replace_all_uses_with(new)
    kernel.detach()
    kernel.erase()


def outer_value(top: Operation, v: SSAValue) -> SSAValue:
    """The top-level value a kernel's body value ``v`` stands for (``v`` itself where
    ``top`` is a bare op)."""
    if isinstance(top, KernelOp):
        for arg, outer in zip(top.body.block.args, top.inputs):
            if arg is v:
                return outer
    return v


def join_each(
    module: ModuleOp,
    prefix: str,
    propose: Callable[[Operation, Block, RefusalLog], tuple[Sequence[Operation], str] | None],
) -> int:
    """In each main function, outline as one kernel (``outline_joined``, named ``prefix`` ...)
    the top-level ops ``propose(top, block, log)`` returns with their ``decided_by`` for each
    top-level op ``top`` (None: no join there, any refusal logged); the refusal log is
    flushed into ``module``. Returns how many kernels were formed. ``fuse-conv-pool``,
    ``fuse-conv-pair`` and ``fuse-conv-chain`` are this driver and their own ``propose``
    (the chain's keeps a finder and the ops already taken per block)."""
    log = RefusalLog()
    formed = 0
    for f in main_funcs(module):
        block = f.body.block
        joins = [j for top in list(block.ops) if (j := propose(top, block, log)) is not None]
        formed += len(outline_joined(block, joins, prefix))
    log.flush(module)
    return formed


def outline_joined(
    block: Block, pairs: Sequence[tuple[Sequence[Operation], str]], prefix: str
) -> list[KernelOp]:
    """Outline each ``(top-level ops, decided_by)`` of ``pairs`` as one kernel named ``prefix``
    plus its compute ops' short names: kernels among the ops are first taken apart (their
    bodies rejoin the graph), so the new kernel holds their ops, not nested kernels.
    ``fuse-conv-chain`` and ``fuse-conv-pool`` join already-fused kernels this way."""
    groups: list[tuple[Sequence[Operation], set[Operation], str]] = []
    for tops, _ in pairs:
        members: list[Operation] = []
        for top in tops:
            if isinstance(top, KernelOp):
                before = set(block.ops)
                unfuse(top)
                members += [o for o in block.ops if o not in before]
            else:
                members.append(top)
        ops = [o for o in members if not isinstance(o, nn.ConstantOp)]
        groups.append((members, set[Operation](), prefix + "_".join(map(short_name, ops))))
    return outline(block, groups, [layer for _, layer in pairs])


def outline(
    block: Block,
    groups: Sequence[tuple[Sequence[Operation], set[Operation], str]],
    decided_by: Sequence[str] | None = None,
) -> list[KernelOp]:
    """Replace each group ``(ops in block order, recomputed ops, pattern)`` by one kernel.

    A group's results are the values of its owned ops read outside it, except by groups
    that recompute that op. Recomputed ops stay (or die) in the graph. ``decided_by`` (one
    layer name per group) is recorded on each kernel as ``fusion.decided_by``.
    """
    recomputed_by: dict[Operation, list[set[Operation]]] = {}
    for ops, rec, _ in groups:
        for o in rec:
            recomputed_by.setdefault(o, []).append(set(ops))

    plans: list[tuple[list[Operation], KernelOp, list[SSAValue]]] = []
    position = {op: i for i, op in enumerate(block.ops)}
    for gi, (unordered, rec, pattern) in enumerate(groups):
        ops = sorted(unordered, key=position.__getitem__)  # block order = dependence order
        members = set(ops)
        inputs: list[SSAValue] = []
        cloned_consts: list[Operation] = []
        for o in ops:
            for v in o.operands:
                p = v.owner
                if isinstance(p, Operation) and p in members:
                    continue
                if isinstance(p, nn.ConstantOp) and cost.numel(v) <= SMALL_CONSTANT:
                    if p not in cloned_consts:  # small constants are cloned, not passed
                        cloned_consts.append(p)
                elif v not in inputs:
                    inputs.append(v)
        outputs: list[SSAValue] = []
        for o in ops:
            if o in rec:
                continue
            for r in o.results:
                for u in r.uses:
                    user = u.operation
                    if user in members:
                        continue
                    if any(user in g for g in recomputed_by.get(o, [])):
                        continue
                    outputs.append(r)
                    break
        if not outputs:
            continue  # nothing outside reads it: the ops are dead code, leave them to DCE
        body = Block(arg_types=[v.type for v in inputs])
        mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args))
        for c in cloned_consts:
            body.add_op(c.clone(mapping))
        for o in ops:
            body.add_op(o.clone(mapping))
        body.add_op(YieldOp(*[mapping[r] for r in outputs]))
        kernel = KernelOp(
            inputs,
            [r.type for r in outputs],
            Region(body),
            pattern,
            merge_origins([*(o for o in ops if not isinstance(o, nn.ConstantOp)), *cloned_consts]),
        )
        if decided_by is not None:
            kernel.attributes[FUSION_DECIDED_BY] = StringAttr(decided_by[gi])
        plans.append((list(ops), kernel, outputs))

    for ops, kernel, outputs in plans:
        block.insert_op_before(kernel, ops[-1])
        for old, new in zip(outputs, kernel.results):
            old.replace_all_uses_with(new)

    to_erase: set[Operation] = set()
    for ops, _, _ in plans:
        to_erase.update(ops)
    # erase in reverse block order; an op still read by a survivor stays (recompute source)
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.ops)):
            if op in to_erase and all(not r.uses for r in op.results):
                to_erase.discard(op)
                Rewriter.erase_op(op)
                changed = True
    # sources that every reader recomputed are dead now
    for op in reversed(list(block.ops)):
        if op in recomputed_by and all(not r.uses for r in op.results):
            Rewriter.erase_op(op)
    for op in list(block.ops):  # constants now cloned into every reader
        if isinstance(op, nn.ConstantOp) and not op.y.uses:
            Rewriter.erase_op(op)
    topo_sort_block(block)
    return [k for _, k, _ in plans]


def fusible_ops(block: Block) -> list[Operation]:
    return [op for op in block.ops if not isinstance(op, func.ReturnOp)]


@dataclass
class Decision:
    """Wires the cost and policy layers into the structure layer's ``decide`` callback.

    ``approved_by`` records, per consumer op that joined a group, the layer whose verdict
    let it in (``FusionPolicy.approver``): the report's ``decided_by`` of the group."""

    policy: FusionPolicy
    hw: Hardware
    approved_by: dict[Operation, str] = field(default_factory=dict[Operation, str])
    #: the layer whose yes the last verdict was ("cost" or "learned")
    _deciding: str = "cost"
    #: group work computed in this analysis (the IR does not change while it decides)
    memo: predict.WorkMemo = field(
        default_factory=dict[tuple[int, ...], tuple[tuple[Operation, ...], predict.Work]]
    )

    @functools.cached_property
    def roofs(self) -> predict.Roofs:
        return predict.Roofs.of(self.hw)

    @property
    def model(self) -> learned.LearnedModel:
        return learned.default_model()

    def learned_applies(self, cluster_ops: Sequence[Operation]) -> bool:
        """Whether the learned model decides joins into a cluster of ``cluster_ops``: always
        with ``strategy: learned``; with ``hybrid`` once the cluster would have more than
        ``learned.LEARNED_MIN_OPS`` ops; never with ``rules``."""
        s = self.policy.config.strategy
        return s == "learned" or (s == "hybrid" and len(cluster_ops) + 1 > learned.LEARNED_MIN_OPS)

    def rank(self, consumer: Operation, clusters: Sequence[structure.Cluster]) -> list[int]:
        """Order in which ``consumer`` tries to join ``clusters`` (indices): the structure
        layer's order, unless the learned model applies to one of them; then by the model's
        predicted time saved, largest first (ties keep the structure layer's order)."""
        order = list(range(len(clusters)))
        if len(clusters) < 2 or not any(self.learned_applies(c.ops) for c in clusters):
            return order

        def saved(i: int) -> float:
            fused, parts = self.model.join_times(clusters[i].ops, consumer, self.hw)
            return parts - fused

        gains = {i: saved(i) for i in order}
        return sorted(order, key=lambda i: -gains[i])

    def group_decided_by(self, ops: Iterable[Operation]) -> str:
        return group_layer(self.approved_by[o] for o in ops if o in self.approved_by)

    def __call__(
        self,
        producer: Operation,
        consumer: Operation,
        family: str,
        cluster: structure.Cluster,
        value: SSAValue,
        mode: str,
        readers: int,
    ) -> Refusal | None:
        self._deciding = "cost"
        r = self.verdict(producer, consumer, family, cluster, value, mode, readers)
        if r is None:
            applied = self.policy.cost_applies(consumer, cluster.ops)
            self.approved_by[consumer] = self._deciding if applied else self.policy.approver(False)
        return r

    def verdict(
        self,
        producer: Operation,
        consumer: Operation,
        family: str,
        cluster: structure.Cluster,
        value: SSAValue,
        mode: str,
        readers: int,
    ) -> Refusal | None:
        r = self.policy.check(producer, consumer, family, cluster.ops)
        if r is not None:
            return r
        if mode != "single":
            r = self.policy.family_refusal(
                "recompute" if mode == "recompute" else "materialize", [producer, consumer]
            )
            if r is not None:
                return Refusal(
                    "multi-consumer",
                    f"the value has {readers - 1} other reader(s) and {r.reason}",
                    r.nodes,
                    "rules",
                )
        if not self.policy.cost_applies(consumer, cluster.ops):
            return None
        est = cost.estimate_join(cluster.ops, consumer, value, self.hw, mode, readers)
        if not est.profitable:
            return Refusal("cost", est.why, nodes_of([producer, consumer]))
        if mode != "recompute" and self.learned_applies(cluster.ops):
            self._deciding = "learned"
            fused, parts = self.model.join_times(cluster.ops, consumer, self.hw)
            if fused >= parts:
                return Refusal(
                    "cost",
                    f"learned kernel-time model: fused {1e6 * fused:.2f} us is not below "
                    f"the parts' {1e6 * parts:.2f} us",
                    nodes_of([producer, consumer]),
                    "learned",
                )
        elif mode != "recompute":
            why = predict.slower_when_fused(cluster.ops, consumer, self.hw, self.roofs, self.memo)
            if why is not None:
                return Refusal("cost", why, nodes_of([producer, consumer]))
        if mode == "recompute":
            mat = cost.estimate_join(cluster.ops, consumer, value, self.hw, "materialize", readers)
            if est.bytes_saved <= mat.bytes_saved:
                return Refusal(
                    "cost",
                    f"recompute saves {est.bytes_saved} B, materialising saves {mat.bytes_saved} B",
                    nodes_of([producer, consumer]),
                )
        return None


def run_fusion(
    module: ModuleOp,
    policy: FusionPolicy,
    hw: Hardware,
    window_size: int = 0,
) -> list[structure.StructureResult]:
    """Analyse and outline every function of ``module``; returns the structure results."""
    log = RefusalLog()
    results: list[structure.StructureResult] = []
    for f in main_funcs(module):
        block = f.body.block
        ops = fusible_ops(block)
        if policy.level == 0:
            if any(isinstance(o, (*structure.ANCHOR_TYPES, *nn.ELEMENTWISE)) for o in ops):
                log.add(
                    "aggressiveness",
                    "aggressiveness 0: fusion is disabled",
                    [o for o in ops if not isinstance(o, nn.ConstantOp)][:1],
                )
            continue
        decision = Decision(policy, hw)
        res = structure.find_clusters(
            ops,
            decision,
            log,
            allow_recompute=policy.level >= 2,
            window_size=window_size,
            rank=decision.rank if policy.config.strategy != "rules" else None,
        )
        results.append(res)
        formed = [c for c in res.clusters if len(c.ops) >= 2 and len(c.owned) >= 1]
        groups = [(c.ops, c.recomputed, pattern_name(c.ops, c.anchor)) for c in formed]
        outline(block, groups, [decision.group_decided_by(c.ops) for c in formed])
    log.flush(module)
    record_policy(module, policy)
    return results


def record_policy(module: ModuleOp, policy: FusionPolicy) -> None:
    """Record the effective policy on the module (``fusion.policy``) for the report."""
    from xdsl.dialects.builtin import (
        ArrayAttr,
        DictionaryAttr,
        FloatAttr,
        IntegerAttr,
        StringAttr,
        f64,
        i64,
    )

    cfg = policy.config
    entries: dict[str, Attribute] = {
        "aggressiveness": IntegerAttr(cfg.aggressiveness, i64),
        "source": StringAttr(cfg.source),
        "hardware": StringAttr(cfg.hardware),
        "blacklist": ArrayAttr([StringAttr("->".join(c)) for c in cfg.blacklist]),
        "whitelist": ArrayAttr([StringAttr("->".join(c)) for c in cfg.whitelist]),
    }
    for key in ("fp32_ops", "fp16_ops", "bf16_ops"):
        if key in cfg.precision:
            entries[key] = ArrayAttr([StringAttr(o) for o in cfg.precision[key]])
    if cfg.memory_limit_mb is not None:
        entries["memory_limit_mb"] = FloatAttr(cfg.memory_limit_mb, f64)
    if policy.user is not None:
        entries["user_policy"] = StringAttr(policy.describe_user())
    module.attributes[FUSION_POLICY] = DictionaryAttr(entries)


@dataclass(frozen=True)
class FuseNN(PolicyPass):
    """The general fusion engine; see the module docstring."""

    name: ClassVar[str] = "fuse"
    symbolic: ClassVar[bool] = True  # docs/dynamic.md, "Symbolic import"

    policy: str = ""
    window_size: int = -1
    hardware: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pol = self.fusion_policy()
        hw = hardware_for(self.hardware or pol.config.hardware)
        window = self.window_size if self.window_size >= 0 else pol.config.analysis_window
        run_fusion(op, pol, hw, window)
        mark_fast_math(op, pol.config.fast_math)


def mark_fast_math(module: ModuleOp, op_types: Sequence[str]) -> None:
    """Mark every fused kernel holding one of ``op_types`` (the ``fast_math`` config key)
    with ``fusion.fast_math``: its C uses afrt.h's fast approximate exp/tanh/erf."""
    if not op_types:
        return
    wanted = set(op_types)
    for kernel in list(iter_kernels(module)):
        if any(onnx_op_type(o) in wanted for o in kernel.body.block.ops):
            kernel.attributes[FAST_MATH_ATTR] = UnitAttr()


def iter_kernels(module: ModuleOp) -> Iterable[KernelOp]:
    for f in main_funcs(module):
        for o in f.body.block.ops:
            if isinstance(o, KernelOp):
                yield o
