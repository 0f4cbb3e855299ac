"""The conv pairs ``fuse-conv-pair`` forms, as structure: two 1x1 convs whose outputs are
added, then clamped (ResNet's conv3 and downsample, the first block of every stage), and
what ``afrt_conv1x1_pair_f32`` takes. Shared by the pass and the C lowering
(``lower-nn-to-loops``), so the lowering imports no pass."""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from autofusion.analysis.conv_chain import CLAMPS, clamp_of, conv_fields
from autofusion.dialects import clib, nn

#: (first conv: stride 1 on the output map, second conv, the Add, the Relu / Clip)
ConvPair = tuple[nn.ConvOp, nn.ConvOp, nn.AddOp, Operation]


def pair_params(a: nn.ConvOp, b: nn.ConvOp) -> tuple[list[int], list[int]] | None:
    """(the joined conv's ``CONV_FIELDS``, ``b``'s) when ``afrt_conv1x1_pair_f32`` computes
    ``a(x_a) + b(x_b)`` as one GEMM over ``[x_a; x_b]`` (``clib.conv_pair_applies``)."""
    fa, fb = conv_fields(a), conv_fields(b)
    if fa is None or fb is None:
        return None
    joined = list(fa)
    c = clib.CONV_FIELDS.index("C")
    if not isinstance(fa[c], int) or not isinstance(fb[c], int):
        return None
    joined[c] = fa[c] + fb[c]
    return (joined, fb) if clib.conv_pair_applies(joined, fb) else None


def order_pair(add: nn.AddOp) -> tuple[nn.ConvOp, nn.ConvOp] | None:
    """The Add's two conv producers as (first source, second), or None: the first is the one
    ``pair_params`` takes as the stride-1 conv (the Add's left operand when both are)."""
    convs = [v.owner for v in add.operands]
    if len(convs) != 2 or not all(isinstance(c, nn.ConvOp) for c in convs) or convs[0] is convs[1]:
        return None
    a, b = convs
    assert isinstance(a, nn.ConvOp) and isinstance(b, nn.ConvOp)
    for first, second in ((a, b), (b, a)):
        if pair_params(first, second) is not None:
            return first, second
    return None


def numeric_clamp(act: Operation) -> bool:
    """Whether ``act`` is one Relu / Clip with numeric bounds (the tile clamps in registers)."""
    return isinstance(act, CLAMPS) and not any(map(math.isnan, clamp_of(act)))


def _private(v: SSAValue, reader: Operation) -> bool:
    return v.has_one_use() and next(iter(v.uses)).operation is reader


def body_conv_pair(ops: Sequence[Operation]) -> ConvPair | None:
    """(first conv, second conv, Add, clamp) when a kernel body (nn ops, constants left out)
    is exactly ``fuse-conv-pair``'s unit: two convs ``order_pair`` takes, their Add (read only
    by the clamp) and one numeric Relu / Clip, every intermediate private."""
    if len(ops) != 4 or not isinstance(ops[2], nn.AddOp) or not isinstance(ops[3], CLAMPS):
        return None
    add, act = ops[2], ops[3]
    got = order_pair(add)
    if got is None or set(got) != set(ops[:2]) or not numeric_clamp(act):
        return None
    if act.operands[0] is not add.results[0] or not _private(add.results[0], act):
        return None
    if not all(_private(c.y, add) for c in got):
        return None
    return got[0], got[1], add, act
