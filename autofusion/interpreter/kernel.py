"""``fusion.kernel``: its body evaluated with the block arguments bound to the inputs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from autofusion.dialects.fusion import KernelOp
from autofusion.interpreter.core import evaluate_block, register


@register(KernelOp)
def _kernel(op: KernelOp, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    return evaluate_block(op.body.block, args)
