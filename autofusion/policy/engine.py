"""The rule layer: aggressiveness, pattern switches, black/whitelists and user policies.

``FusionPolicy.check`` answers "may this producer -> consumer edge be fused, by the rules?"
and returns ``None`` or a :class:`~autofusion.policy.reasons.Refusal`. It knows nothing of
shapes or bytes: legality lives in ``autofusion.analysis.structure``, profitability in
``autofusion.analysis.cost``. ``cost_applies`` says whether the cost model may still veto
(it may not at aggressiveness 3 or for a whitelisted chain).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from xdsl.ir import Operation

from autofusion.errors import AutofusionError
from autofusion.policy.base import (
    BasePolicy,
    OpView,
    exception_text,
    load_policy,
    onnx_op_type,
    policy_name,
)
from autofusion.policy.config import FAMILIES, FusionConfig, config_from_dict, load_config
from autofusion.policy.reasons import Refusal, nodes_of


def _chain_matches(chain: Sequence[str], types: Sequence[str]) -> bool:
    return len(chain) == len(types) and all(c in ("*", t) for c, t in zip(chain, types))


#: Op types the importer removes in inference (they never reach the IR).
REMOVED_AT_IMPORT = frozenset({"Dropout", "Identity"})


def effective_chain(chain: tuple[str, ...]) -> tuple[str, ...]:
    """``chain`` as matched against IR op paths: op types removed at import are skipped
    (their producer feeds their consumers directly), and a chain left with one op type is
    padded with ``*`` on the removed side, so ``LayerNorm->Dropout`` keeps LayerNorm out of
    every fusion with the ops after it (conservative: it may refuse more, never less)."""
    kept = tuple(c for c in chain if c not in REMOVED_AT_IMPORT)
    if len(kept) >= 2 or len(kept) == len(chain):
        return kept
    if not kept:
        return ()
    return (*kept, "*") if chain[-1] in REMOVED_AT_IMPORT else ("*", *kept)


def chains_ending_at(
    consumer: Operation, members: Iterable[Operation], max_len: int
) -> list[tuple[Operation, ...]]:
    """Producer paths (oldest first) of length 2..max_len that end at ``consumer`` and run
    through ``members`` (the group the consumer would join)."""
    inside = set(members)
    out: list[tuple[Operation, ...]] = []

    def walk(path: tuple[Operation, ...]) -> None:
        head = path[0]  # read before len() checks, which pyright widens to include ()
        if len(path) >= 2:
            out.append(path)
        if len(path) >= max_len:
            return
        seen: set[int] = set()
        for v in head.operands:
            p = v.owner
            if isinstance(p, Operation) and p in inside and id(p) not in seen:
                seen.add(id(p))
                walk((p, *path))

    walk((consumer,))
    return out


@dataclass
class FusionPolicy:
    """Rules from a :class:`FusionConfig` plus an optional user :class:`BasePolicy`."""

    config: FusionConfig
    user: BasePolicy | None = None
    #: how the user policy was named (``module:Class`` / ``@token``), for messages
    user_spec: str = ""

    @staticmethod
    def resolve(
        config: str | None = None,
        aggressiveness: int = -1,
        policy: str = "",
    ) -> FusionPolicy:
        """Build from pass options: a config path, a level (-1: config/env/default) and a
        policy spec (``module:Class`` / ``@token``; overrides the config's ``policy``)."""
        cfg = load_config(config) if config else config_from_dict({}, "<defaults>")
        if aggressiveness >= 0:
            if aggressiveness > 3:
                raise AutofusionError(f"aggressiveness={aggressiveness}: expected 0..3")
            cfg = replace(cfg, aggressiveness=aggressiveness)
        spec = policy or cfg.policy
        user = load_policy(spec, cfg.policy_options) if spec else None
        return FusionPolicy(cfg, user, spec or "")

    @property
    def level(self) -> int:
        return self.config.aggressiveness

    @property
    def max_chain(self) -> int:
        lens = [len(c) for c in (*self.config.blacklist, *self.config.whitelist)]
        return max(lens, default=2)

    def family_refusal(self, family: str, ops: Sequence[Operation]) -> Refusal | None:
        """Refusal for a whole pattern family (aggressiveness level, ``patterns`` switch)."""
        need = FAMILIES.get(family, 1)
        if self.level < need:
            return Refusal(
                "aggressiveness",
                f"{family} needs aggressiveness >= {need} (configured {self.level})",
                nodes_of(ops),
            )
        if not self.config.family_enabled(family):
            return Refusal(
                "disabled",
                f"pattern family {family} is disabled in {self.config.source}",
                nodes_of(ops),
            )
        return None

    def _matching(
        self, lists: tuple[tuple[str, ...], ...], paths: Sequence[tuple[Operation, ...]]
    ) -> tuple[tuple[str, ...], tuple[Operation, ...]] | None:
        for path in paths:
            types = [onnx_op_type(op) for op in path]
            for chain in lists:
                eff = effective_chain(chain)
                if eff and _chain_matches(eff, types[-len(eff) :]):
                    return chain, path[-len(eff) :]
        return None

    def check(
        self,
        producer: Operation,
        consumer: Operation,
        family: str,
        members: Iterable[Operation] = (),
        paths: Sequence[tuple[Operation, ...]] | None = None,
    ) -> Refusal | None:
        """Rule verdict on fusing ``consumer`` into the group (``members``) of ``producer``.
        ``paths`` (producer -> consumer op paths ending at ``consumer``) replaces the walk
        through ``members`` when the group is not wired to ``consumer`` directly (the body
        ops of a kernel that ``fuse-conv-chain`` joins)."""
        members = list(members) or [producer]
        pair = [producer, consumer]
        if (r := self.family_refusal(family, pair)) is not None:
            return r
        hit = None
        if self.config.blacklist:
            if paths is None:
                paths = chains_ending_at(consumer, members, self.max_chain)
            hit = self._matching(self.config.blacklist, paths)
        if hit is not None:
            chain, path = hit
            return Refusal(
                "blacklisted",
                f"chain {'->'.join(chain)} is blacklisted in {self.config.source}",
                nodes_of(list(path)),
            )
        if self.user is not None and not self.user_should_fuse(producer, consumer):
            return Refusal(
                "policy", f"user policy {self.describe_user()} refused this fusion",
                nodes_of(pair),
            )  # fmt: skip
        return None

    def _user_where(self, method: str) -> str:
        assert self.user is not None
        spec = f" ({self.user_spec!r})" if self.user_spec else ""
        return f"user policy {policy_name(self.user)}{spec}: {method}"

    def describe_user(self) -> str:
        """The user policy's ``describe()``, its failure reported as the policy's error."""
        assert self.user is not None
        try:
            text = self.user.describe()
        except Exception as e:  # user code
            raise AutofusionError(f"{self._user_where('describe()')} raised "
                                  f"{exception_text(e)}") from None  # fmt: skip
        if not isinstance(text, str):
            raise AutofusionError(f"{self._user_where('describe()')} returned "
                                  f"{type(text).__name__}, expected a string")  # fmt: skip
        return text

    def user_should_fuse(self, producer: Operation, consumer: Operation) -> bool:
        """The user policy's verdict; an exception in it, or an answer that is not a bool,
        is an error naming the policy, the method and both nodes."""
        assert self.user is not None
        p, c = OpView.of(producer), OpView.of(consumer)

        def node(v: OpView) -> str:
            return f"'{', '.join(v.origins) or '?'}' ({v.op_type})"

        where = self._user_where(f"should_fuse(producer {node(p)}, consumer {node(c)})")
        try:
            verdict = self.user.should_fuse(p, c)
        except AutofusionError:
            raise
        except Exception as e:  # user code
            raise AutofusionError(f"{where} raised {exception_text(e)}") from None
        if not isinstance(verdict, bool) and type(verdict).__name__ != "bool_":
            raise AutofusionError(
                f"{where} returned {verdict!r} ({type(verdict).__name__}), expected True or False"
            )
        return bool(verdict)

    def approver(self, cost_applied: bool) -> str:
        """The layer reported as deciding a join the layers allowed (``decided_by``): the
        cost model when it was asked, else the user policy if there is one, else the rules
        (aggressiveness 3 or a whitelisted chain bypass the cost model)."""
        if cost_applied:
            return "cost"
        return "policy" if self.user is not None else "rules"

    def cost_applies(
        self,
        consumer: Operation,
        members: Iterable[Operation],
        paths: Sequence[tuple[Operation, ...]] | None = None,
    ) -> bool:
        """False when the cost model must not veto: aggressiveness 3 or a whitelisted chain
        (``paths`` as in :meth:`check`)."""
        if self.level >= 3:
            return False
        if not self.config.whitelist:
            return True
        if paths is None:
            paths = chains_ending_at(consumer, list(members), self.max_chain)
        return self._matching(self.config.whitelist, paths) is None
