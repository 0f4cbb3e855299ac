"""The strategy layer's learned half: a kernel-time model trained on this machine's profiles.

The rules (``engine``) and the roofline (``analysis.predict``) decide small clusters. For
complex ones — more than :data:`LEARNED_MIN_OPS` ops, where the greedy order and the
hand-set roofline constants matter most — the ``hybrid`` strategy asks this model, and the
``learned`` strategy asks it for every join (config key ``strategy``; docs/fusion.md).

The model is linear in :data:`FEATURES` (all computed by :func:`features` from the
roofline's :class:`~autofusion.analysis.predict.Work` of a candidate kernel), with
non-negative coefficients fitted by least squares on relative error to measured kernel
times: ``seconds = sum(c_i * f_i)``. The training data (``benchmarks/data/strategy_train.csv``:
the profiler's per-kernel times of zoo builds at several fusion levels, with their
features) and the artefact (:data:`MODEL_FILE`, a JSON of coefficients) are in the repo and
are rebuilt by ``python benchmarks/train_strategy.py``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xdsl.ir import Operation

from autofusion.analysis.hardware import Hardware
from autofusion.analysis.predict import Roofs, Work, group_work, predict_seconds
from autofusion.errors import AutofusionError

#: ``hybrid``: clusters of more than this many ops (after the join) are decided by the model.
LEARNED_MIN_OPS = 15
MODEL_FILE = Path(__file__).with_name("strategy_model.json")

#: The features, in order (names stored in the artefact and checked when it is loaded).
FEATURES = (
    "calls",  # 1 per kernel: the call and loop set-up
    "gemm_flops_eff",  # contraction FLOPs / the share of the GEMM roof they reach
    "vector_flops_eff",  # vector FLOPs / the share of SIMD lanes they fill
    "mem_bytes",  # bytes from memory
    "l2_bytes",  # bytes through L2
    "roofline_s",  # the roofline prediction with the recorded roofs
    "buffers",  # intermediates materialised inside the kernel (each one more loop)
)


def features(work: Work, roofs: Roofs, buffers: int) -> list[float]:
    """The feature vector of one kernel (see :data:`FEATURES`)."""
    return [
        1.0,
        work.contraction_flops / max(work.gemm_efficiency, 1e-3),
        work.vector_flops / max(work.lane_fill, 1e-3),
        float(work.mem_bytes),
        float(work.l2_bytes),
        predict_seconds(work, roofs),
        float(buffers),
    ]


def buffers_of(ops: Sequence[Operation]) -> int:
    """Intermediates of a kernel of ``ops`` that the C lowering materialises (not inline,
    not a contraction's epilogue input): each costs one more loop over memory."""
    from autofusion.analysis.predict import streamed

    body = [o for o in ops if o.name not in ("nn.constant", "fusion.yield")]
    members = set(body)
    inline, head = streamed(body, members)
    return sum(
        1
        for o in body
        if o not in inline
        and o is not head
        and any(u.operation in members for r in o.results for u in r.uses)
    )


@dataclass(frozen=True)
class LearnedModel:
    """Non-negative linear coefficients over :data:`FEATURES` (seconds per unit)."""

    coefficients: tuple[float, ...]
    roofs: Roofs
    source: str

    def seconds(self, ops: Sequence[Operation], hw: Hardware) -> float:
        work = group_work(ops, hw, self.roofs.vector_lanes)
        f = features(work, self.roofs, buffers_of(ops))
        return sum(c * x for c, x in zip(self.coefficients, f))

    def join_times(
        self, group: Sequence[Operation], consumer: Operation, hw: Hardware
    ) -> tuple[float, float]:
        """(fused, parts) seconds of fusing ``consumer`` into ``group``."""
        fused = self.seconds([*group, consumer], hw)
        parts = self.seconds(group, hw) + self.seconds([consumer], hw)
        return fused, parts


def load_model(path: Path = MODEL_FILE, hw: Hardware | None = None) -> LearnedModel:
    """Read a trained artefact; a missing or malformed file is an error naming it."""
    try:
        data = json.loads(path.read_text())
        names = tuple(data["features"])
        coef = tuple(float(c) for c in data["coefficients"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise AutofusionError(
            f"{path}: cannot read the learned strategy model ({e}); rebuild it with "
            "`python benchmarks/train_strategy.py`"
        ) from None
    if names != FEATURES or len(coef) != len(FEATURES):
        raise AutofusionError(
            f"{path}: the model's features {list(names)} are not this version's "
            f"{list(FEATURES)}; rebuild it with `python benchmarks/train_strategy.py`"
        )
    from autofusion.analysis.hardware import cpu_this_machine

    return LearnedModel(coef, Roofs.of(hw or cpu_this_machine()), str(path))


@functools.cache
def default_model() -> LearnedModel:
    return load_model()
