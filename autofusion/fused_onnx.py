"""The fused graph as ONNX: each fused group an ONNX local function (``--save-fused-onnx``).

After the tensor-level passes every ``fusion.kernel`` names the ONNX nodes it came from
(``origins``). This module rewrites the *original* model so that the nodes of each kernel
become one call of a model-local function in the domain ``autofusion.fused`` whose body is
those nodes, unchanged. Netron shows the groups as boxes one can open; onnxruntime inlines
the functions, so the saved model computes exactly what the original does (a test checks
that against the original's onnxruntime outputs).

A node joins a group only when its nn ops all landed in that one kernel. It stays a plain
node when:

- it was folded at import (no op but constants carries its name), or left unfused;
- its nn ops were split across kernels, or some stayed outside any kernel;
- its name is shared with another node (origins name nodes by ``node_label``);
- it holds a subgraph (If, Loop, Scan: a function body cannot capture outer values).

A group whose contraction would create a cycle among the remaining nodes (the kernel was
convex in the nn IR, but the ONNX nodes behind it need not be: decompositions and folds
change the graph) is not exported as a function; the summary counts it as ``cyclic``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import onnx
from xdsl.dialects.builtin import ModuleOp

from autofusion.analysis.order import stable_topological_order
from autofusion.dialects.attrs import origin_names
from autofusion.dialects.fusion import KernelOp
from autofusion.errors import AutofusionError
from autofusion.frontend.loader import Loaded, node_label

DOMAIN = "autofusion.fused"
#: Models over this many bytes of weights are saved with their weights in ``FILE.data``
#: beside the .onnx (protobuf cannot serialise more than 2 GiB).
EXTERNAL_DATA_BYTES = 1 << 30


@dataclass
class Group:
    """One fused kernel as the model sees it."""

    function: str  # the function's name (op_type of its call)
    pattern: str
    origins: list[str]  # the kernel's origins, as the IR lists them
    nodes: list[int] = field(default_factory=list)  # indices into graph.node


@dataclass
class FusedSummary:
    """What the export did: groups written as functions, and why others were not."""

    functions: int = 0
    nodes_in_functions: int = 0
    plain_nodes: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> groups

    def as_dict(self) -> dict[str, object]:
        return {
            "functions": self.functions,
            "nodes_in_functions": self.nodes_in_functions,
            "plain_nodes": self.plain_nodes,
            "groups_not_exported": dict(sorted(self.skipped.items())),
        }


def full_model(loaded: Loaded) -> onnx.ModelProto:
    """A copy of the loaded model with the weights the loader cut out put back."""
    model = onnx.ModelProto()
    model.CopyFrom(loaded.model)
    for i, raw in enumerate(loaded.raws):
        if raw is not None:
            model.graph.initializer[i].raw_data = raw
    return model


def _kernel_groups(module: ModuleOp) -> tuple[list[Group], dict[str, set[int]]]:
    """The kernels in program order, and per ONNX label the kernels claiming it (-1: an
    op outside any kernel)."""
    groups: list[Group] = []
    claims: dict[str, set[int]] = {}
    for op in module.walk():
        if isinstance(op, KernelOp):
            k = len(groups)
            groups.append(Group(f"{op.pattern_name}_{k}", op.pattern_name, op.origin_names))
            for name in op.origin_names:
                claims.setdefault(name, set()).add(k)
            for inner in op.body.walk():
                for name in origin_names(inner):
                    claims.setdefault(name, set()).add(k)
            continue
        if _inside_kernel(op) or not op.operands:
            continue  # constants (weights, folded BatchNorm scales) are not computation
        for name in origin_names(op):
            claims.setdefault(name, set()).add(-1)
    return groups, claims


def _inside_kernel(op: object) -> bool:
    parent = getattr(op, "parent_op", lambda: None)()
    while parent is not None:
        if isinstance(parent, KernelOp):
            return True
        parent = parent.parent_op()
    return False


def _has_subgraph(node: onnx.NodeProto) -> bool:
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in node.attribute)  # fmt: skip


def _subgraph_names(node: onnx.NodeProto) -> set[str]:
    """Every value name a node's subgraphs read (they may read outer-scope values)."""
    names: set[str] = set()
    for a in node.attribute:
        graphs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
        for g in graphs:
            for n in g.node:
                names.update(i for i in n.input if i)
                names.update(_subgraph_names(n))
    return names


def _assign(graph: onnx.GraphProto, groups: list[Group], claims: dict[str, set[int]],
            summary: FusedSummary) -> list[int]:  # fmt: skip
    """Per node, the group it joins (-1: stays plain)."""
    labels = [node_label(n, i) for i, n in enumerate(graph.node)]
    counts = Counter(labels)
    owner = [-1] * len(graph.node)
    for i, (node, label) in enumerate(zip(graph.node, labels)):
        who = claims.get(label, set())
        if counts[label] == 1 and len(who) == 1 and -1 not in who and not _has_subgraph(node):
            owner[i] = next(iter(who))
    for i, g in enumerate(owner):
        if g >= 0:
            groups[g].nodes.append(i)
    for g in groups:
        if not g.nodes:
            summary.skipped["no_whole_onnx_node"] += 1
    return owner


def _producers(graph: onnx.GraphProto) -> dict[str, int]:
    return {o: i for i, n in enumerate(graph.node) for o in n.output if o}


def _acyclic(graph: onnx.GraphProto, owner: Sequence[int], producer: dict[str, int]) -> bool:
    """Whether contracting every group of ``owner`` into one node leaves a DAG."""
    unit = {}  # node index -> unit id
    ids: dict[tuple[str, int], int] = {}
    for i, g in enumerate(owner):
        key = ("g", g) if g >= 0 else ("n", i)
        unit[i] = ids.setdefault(key, len(ids))
    deps: list[set[int]] = [set() for _ in ids]
    for i, n in enumerate(graph.node):
        reads = [x for x in n.input if x] + sorted(_subgraph_names(n))
        for name in reads:
            p = producer.get(name)
            if p is not None and unit[p] != unit[i]:
                deps[unit[i]].add(unit[p])
    return len(stable_topological_order(deps)) == len(deps)


def _drop_cyclic(graph: onnx.GraphProto, groups: list[Group], owner: list[int],
                 summary: FusedSummary) -> None:  # fmt: skip
    """Keep groups in program order while the contracted graph stays acyclic."""
    producer = _producers(graph)
    trial = [-1] * len(owner)
    for k, g in enumerate(groups):
        if not g.nodes:
            continue
        for i in g.nodes:
            trial[i] = k
        if not _acyclic(graph, trial, producer):
            for i in g.nodes:
                trial[i] = -1
            g.nodes = []
            summary.skipped["cyclic"] += 1
    owner[:] = trial


def _function(group: Group, graph: onnx.GraphProto, used_outside: set[str],
              opsets: Iterable[onnx.OperatorSetIdProto]) -> onnx.FunctionProto:  # fmt: skip
    nodes = [graph.node[i] for i in group.nodes]
    produced = {o for n in nodes for o in n.output if o}
    inputs: list[str] = []
    for n in nodes:
        for x in n.input:
            if x and x not in produced and x not in inputs:
                inputs.append(x)
    outputs = [o for n in nodes for o in n.output if o and o in used_outside]
    return onnx.helper.make_function(
        DOMAIN, group.function, inputs, outputs, nodes, list(opsets),
        doc_string=f"autofusion pattern {group.pattern}; ONNX nodes: {', '.join(group.origins)}",
    )  # fmt: skip


def fused_model(model: onnx.ModelProto, module: ModuleOp) -> tuple[onnx.ModelProto, FusedSummary]:
    """``model`` (the original, weights included; not modified) with each kernel of
    ``module`` (after the tensor-level passes) as a call of a local function."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    summary = FusedSummary()
    groups, claims = _kernel_groups(module)
    owner = _assign(graph, groups, claims, summary)
    _drop_cyclic(graph, groups, owner, summary)

    outer: set[str] = {o.name for o in graph.output}
    for n in graph.node:
        outer.update(_subgraph_names(n))
    for i, n in enumerate(graph.node):
        if owner[i] < 0:
            outer.update(x for x in n.input if x)
    # a value read by another group is "outside" its producer's group too
    producer = _producers(graph)
    for i, n in enumerate(graph.node):
        for x in n.input:
            p = producer.get(x)
            if p is not None and owner[i] >= 0 and owner[p] != owner[i]:
                outer.add(x)

    opsets = [o for o in out.opset_import if o.domain != DOMAIN]
    units: list[onnx.NodeProto] = []
    deps: list[set[int]] = []
    unit_of: dict[int, int] = {}
    emitted: set[int] = set()
    for i, n in enumerate(graph.node):
        g = owner[i]
        if g < 0:
            unit_of[i] = len(units)
            units.append(n)
            continue
        if g in emitted:
            unit_of[i] = unit_of[groups[g].nodes[0]]
            continue
        emitted.add(g)
        fn = _function(groups[g], graph, outer, opsets)
        out.functions.append(fn)
        call = onnx.helper.make_node(fn.name, list(fn.input), list(fn.output),
                                     name=f"fused_{g}", domain=DOMAIN)  # fmt: skip
        unit_of[i] = len(units)
        units.append(call)
        summary.functions += 1
        summary.nodes_in_functions += len(groups[g].nodes)
    for i in range(len(graph.node)):
        unit_of.setdefault(i, unit_of[groups[owner[i]].nodes[0]])
    unit_producer = {o: unit_of[p] for o, p in producer.items()}
    for u in units:
        reads = [x for x in u.input if x] + sorted(_subgraph_names(u))
        deps.append({unit_producer[x] for x in reads if x in unit_producer} - {len(deps)})
    order = stable_topological_order(deps)
    assert len(order) == len(units), "contracted graph has a cycle"
    summary.plain_nodes = sum(1 for g in owner if g < 0)

    del graph.node[:]
    graph.node.extend(units[k] for k in order)
    visible = {o for u in units for o in u.output} | {i.name for i in graph.input}
    kept = [vi for vi in graph.value_info if vi.name in visible]
    del graph.value_info[:]
    graph.value_info.extend(kept)
    if summary.functions:
        out.opset_import.append(onnx.helper.make_opsetid(DOMAIN, 1))
        out.ir_version = max(out.ir_version, 8)  # model-local functions need IR version 8
    return out, summary


def save_fused_onnx(model: onnx.ModelProto, path: str | os.PathLike[str]) -> list[Path]:
    """Write ``model`` to ``path`` (weights over :data:`EXTERNAL_DATA_BYTES` into
    ``PATH.data`` beside it); returns the files written."""
    target = Path(path)
    weights = sum(len(t.raw_data) for t in model.graph.initializer)
    try:
        if weights > EXTERNAL_DATA_BYTES:
            data = target.with_name(target.name + ".data")
            onnx.save_model(model, target, save_as_external_data=True,
                            all_tensors_to_one_file=True, location=data.name)  # fmt: skip
            return [target, data]
        onnx.save_model(model, target)
    except OSError as e:
        raise AutofusionError(f"--save-fused-onnx {target}: cannot write: {e.strerror}") from None
    return [target]
