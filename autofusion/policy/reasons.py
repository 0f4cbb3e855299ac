"""Stable reason codes for fusion refusals, and their record on the module.

A refusal is fusion that a pass considered and did not do. Each one carries a *code* from
:data:`REASON_CODES` (stable: tests, reports and users key on it), a human *reason*
sentence, and the ONNX origins of the *nodes* involved. Passes append refusals to the
discardable module attribute ``fusion.refusals`` (see docs/internals.md), so they survive
printing and reparsing::

    builtin.module attributes {fusion.refusals = [{code = "multi-consumer",
        reason = "...", nodes = ["conv1", "relu1"]}]} { ... }
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Operation

from autofusion.dialects.attrs import FUSION_REFUSALS, origin_names

REFUSALS_ATTR = FUSION_REFUSALS

#: code -> one-line meaning (documented in docs/fusion.md).
REASON_CODES: dict[str, str] = {
    "not-a-constant": "a value that must be a compile-time constant (weights, BN statistics) "
    "is computed",
    "multi-consumer": "an intermediate has users outside the candidate group",
    "blacklisted": "the op-type chain matches a blacklist entry of the policy",
    "disabled": "the pattern family is disabled in the policy's `patterns` table",
    "aggressiveness": "the configured aggressiveness level does not allow this fusion",
    "policy": "a user policy's should_fuse() returned False",
    "cost": "the cost model found the fusion unprofitable",
    "shape-mismatch": "shapes do not allow the fusion (broadcast into the anchor, wrong axis, ...)",
    "dtype": "element types do not allow the fusion",
    "cycle": "fusing would create a dependence cycle through an op outside the group",
    "unsupported": "the op cannot be placed in this kind of kernel",
    "precision": "validate-precision measured the group's generated C above the tolerance "
    "against the fp32 reference; the group was rolled back",
}


#: The decision layers, as the report's ``decided_by`` names them (docs/fusion.md):
#: ``structure`` (legality), ``cost`` (the cost model), ``rules`` (aggressiveness, pattern
#: switches, black/whitelists, precision validation), ``learned`` (the learned strategy)
#: and ``policy`` (a user ``BasePolicy``).
LAYERS = ("structure", "cost", "rules", "learned", "policy")

#: The layer a refusal code belongs to unless the refusal names another one (``Refusal``'s
#: ``decided_by``; e.g. ``multi-consumer`` is ``rules`` when ``fuse`` refuses a value's other
#: readers because materialise/recompute are switched off, ``structure`` in fold-batchnorm).
LAYER_OF_CODE: dict[str, str] = {
    "not-a-constant": "structure",
    "multi-consumer": "structure",
    "blacklisted": "rules",
    "disabled": "rules",
    "aggressiveness": "rules",
    "policy": "policy",
    "cost": "cost",
    "shape-mismatch": "structure",
    "dtype": "structure",
    "cycle": "structure",
    "unsupported": "structure",
    "precision": "rules",
}


#: A group whose joins were approved by different layers is reported under the first of
#: these that approved one of them (the most specific judgement that let it form).
_GROUP_PRECEDENCE = ("learned", "cost", "policy", "rules", "structure")


def group_layer(layers: Iterable[str]) -> str:
    """``decided_by`` of a group from the layers that approved its joins."""
    got = set(layers)
    return next((layer for layer in _GROUP_PRECEDENCE if layer in got), "structure")


@dataclass(frozen=True)
class Refusal:
    """One refused fusion: stable ``code``, readable ``reason``, ONNX ``nodes`` involved,
    and the layer that refused (``decided_by``; default: the code's layer)."""

    code: str
    reason: str
    nodes: tuple[str, ...]
    decided_by: str = ""

    def __post_init__(self) -> None:
        if self.code not in REASON_CODES:
            raise ValueError(f"unknown refusal code {self.code!r}")
        if not self.decided_by:
            object.__setattr__(self, "decided_by", LAYER_OF_CODE[self.code])
        if self.decided_by not in LAYERS:
            raise ValueError(f"unknown decision layer {self.decided_by!r}")

    def to_attr(self) -> DictionaryAttr:
        return DictionaryAttr(
            {
                "code": StringAttr(self.code),
                "reason": StringAttr(self.reason),
                "nodes": ArrayAttr([StringAttr(n) for n in self.nodes]),
                "decided_by": StringAttr(self.decided_by),
            }
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "reason": self.reason,
            "nodes": list(self.nodes),
            "decided_by": self.decided_by,
        }


def origins_of(op: Operation) -> list[str]:
    """ONNX origins of an op: ``onnx.origins`` for nn ops, ``origins`` for fusion.kernel."""
    from autofusion.dialects.fusion import KernelOp

    if isinstance(op, KernelOp):
        return op.origin_names
    return origin_names(op)


def merge_origins(ops: Iterable[Operation]) -> list[str]:
    """Concatenated origins, in order, without duplicates (docs/internals.md)."""
    seen: dict[str, None] = {}
    for op in ops:
        for o in origins_of(op):
            seen.setdefault(o, None)
    return list(seen)


def nodes_of(ops: Sequence[Operation]) -> tuple[str, ...]:
    """Names to cite in a refusal: the origins, or the op names when there are none."""
    names = merge_origins(ops)
    if not names:
        names = [op.name for op in ops]
    return tuple(names)


def read_refusals(module: ModuleOp) -> list[Refusal]:
    attr = module.attributes.get(REFUSALS_ATTR)
    out: list[Refusal] = []
    if not isinstance(attr, ArrayAttr):
        return out
    for entry in attr.data:
        if not isinstance(entry, DictionaryAttr):
            continue
        d = entry.data
        code = d.get("code")
        reason = d.get("reason")
        nodes = d.get("nodes")
        layer = d.get("decided_by")
        name = layer.data if isinstance(layer, StringAttr) else ""
        out.append(
            Refusal(
                code.data if isinstance(code, StringAttr) else "unsupported",
                reason.data if isinstance(reason, StringAttr) else "",
                tuple(n.data for n in nodes.data if isinstance(n, StringAttr))
                if isinstance(nodes, ArrayAttr)
                else (),
                name if name in LAYERS else "",
            )
        )
    return out


class RefusalLog:
    """Collects a pass's refusals (deduplicated) and writes them to the module once."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, tuple[str, ...]], Refusal] = {}

    def add(self, code: str, reason: str, ops: Sequence[Operation]) -> Refusal:
        r = Refusal(code, reason, nodes_of(ops))
        self._items.setdefault((r.code, r.nodes), r)
        return r

    def add_refusal(self, r: Refusal) -> None:
        self._items.setdefault((r.code, r.nodes), r)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Refusal]:
        return iter(self._items.values())

    def flush(self, module: ModuleOp) -> None:
        """Append the collected refusals to ``fusion.refusals`` (existing entries kept)."""
        if not self._items:
            return
        old = module.attributes.get(REFUSALS_ATTR)
        entries: list[Attribute] = list(old.data) if isinstance(old, ArrayAttr) else []
        known = {(r.code, r.nodes) for r in read_refusals(module)}
        for key, r in self._items.items():
            if key not in known:
                entries.append(r.to_attr())
        module.attributes[REFUSALS_ATTR] = ArrayAttr(entries)
        self._items.clear()
