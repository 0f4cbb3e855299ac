"""``merge-sibling-convs``: sibling 1x1 convs over one input as one conv and a split.

Effect: the 1x1 convs that read the same value ``x`` with equal strides, pads and dilations,
group 1, each read by exactly one ``nn.relu`` (an Inception module's 1x1 branch, 3x3-reduce
and 5x5-reduce), become one ``nn.conv`` with their weights and biases stacked along the
output channels (new constants built at compile time), one ``nn.relu`` and one ``nn.split``
along the channels whose pieces replace the Relus' results, in the siblings' block order
(except for a piece a concat takes first or last, below).
``x`` is read once, by one GEMM with N = the sum of the output channels instead of GEMMs with
N of 16-48. With batch 1 the pieces are contiguous, so the buffer plan makes them views of
the joined output (``planned_view_offsets``). A piece that a concat takes as its first
operand is put last in the joined output (one taken last, first), and the buffer plan puts
the joined output so that piece lands on its slice of the concat and the other pieces sit
just outside it: the GEMM writes that piece straight into the concat. A piece in the middle
of a concat is copied into it (docs/history/fusion-efficiency.md, "Sibling 1x1 convs as one
GEMM").

The joined conv carries ``sibling.pieces`` (output channels per piece) and
``sibling.decided_by`` (``rules``: a measured rule, no cost model asked); the report lists them
under ``sibling_convs``. Refusals (in ``fusion.refusals``, one per conv that shares its input
with another 1x1 conv and does not join): ``not-a-constant`` (weights or bias computed),
``multi-consumer`` (the conv output is read by anything but one Relu), ``dtype`` (a 16-bit
conv under the config's precision), ``unsupported`` (group > 1, batch > 1: the pieces would
not be contiguous; or no sibling left with the same strides/pads/dilations), and the family
codes of ``sibling_convs`` (``aggressiveness: 0``, ``patterns: {sibling_convs: false}``).

Place: after ``assign-precision``, before ``fuse-conv-bn-relu`` and ``fuse``, so the joined
conv and its Relu become one ``conv_relu`` kernel. Target c only (the pipeline leaves it out
for Ascend C, not measured there) and not with a memory limit (as ``fuse-conv-pair``). A
symbolic module skips it (the pass does not declare ``symbolic``). Options: ``config``,
``aggressiveness`` (no user policy: ``should_fuse`` asks about a producer -> consumer edge,
and siblings have none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, StringAttr, TensorType, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from autofusion.dialects import nn
from autofusion.dialects.attrs import SIBLING_DECIDED_BY, SIBLING_PIECES
from autofusion.dialects.base import int_attr, shape_of
from autofusion.passes._match import const_value, set_merged_origins
from autofusion.passes.assign_precision import precision_of
from autofusion.passes.fold_batchnorm import make_constant
from autofusion.passes.fuse import main_funcs
from autofusion.passes.options import PolicyPass
from autofusion.policy.engine import FusionPolicy
from autofusion.policy.reasons import RefusalLog, origins_of

FAMILY = "sibling_convs"


@dataclass(frozen=True)
class _Sibling:
    conv: nn.ConvOp
    relu: nn.ReluOp
    w: np.ndarray
    b: np.ndarray


def _is_1x1(conv: nn.ConvOp) -> bool:
    ws = shape_of(conv.w)
    return len(ws) == 4 and ws[2:] == (1, 1)


def _sibling(conv: nn.ConvOp, log: RefusalLog) -> _Sibling | None:
    """``conv`` as a sibling that may join, else None (the refusal logged)."""
    ops: list[Operation] = [conv]
    uses = [u.operation for u in conv.y.uses]
    if len(uses) != 1 or not isinstance(uses[0], nn.ReluOp):
        log.add("multi-consumer", "the conv output is read by other than one Relu; the "
                "joined conv keeps one epilogue, the Relu, for all pieces", ops)  # fmt: skip
        return None
    relu = uses[0]
    ops.append(relu)
    if conv.group != 1:
        log.add("unsupported", f"group {conv.group}: stacking output channels needs group 1",
                ops)  # fmt: skip
        return None
    if shape_of(conv.x)[0] != 1:
        log.add("unsupported", f"batch {shape_of(conv.x)[0]}: the channel pieces of the joined "
                "output would not be contiguous (copies, not views)", ops)  # fmt: skip
        return None
    if precision_of(conv) != "fp32":
        log.add("dtype", f"the conv computes in {precision_of(conv)} (config precision); the "
                "joined conv is fp32", ops)  # fmt: skip
        return None
    w = const_value(conv.w)
    b = np.zeros(shape_of(conv.w)[0], np.float32) if conv.bias is None else const_value(conv.bias)
    if w is None or b is None:
        log.add("not-a-constant", "the conv weights or bias are computed (or elided); the "
                "stacked weights are built at compile time", ops)  # fmt: skip
        return None
    return _Sibling(conv, relu, w, b)


def _key(conv: nn.ConvOp) -> tuple[tuple[int, ...], ...]:
    return (conv.strides, conv.pads, conv.dilations)


def _concat_end(sib: _Sibling) -> int:
    """Where ``sib``'s piece goes in the joined output: 0 (first) when its only reader is a
    concat that takes it last, 2 (last) when a concat takes it first, else 1. The buffer plan
    then puts the joined output so that piece lands on its slice of the concat, the other
    pieces just outside the concat's bytes (``memory_plan._concat_in_place``): the concat
    copies nothing for it."""
    uses = list(sib.relu.y.uses)
    if len(uses) != 1 or not isinstance(concat := uses[0].operation, nn.ConcatOp):
        return 1
    if concat.axis != 1 or list(concat.inputs).count(sib.relu.y) != 1:
        return 1
    if uses[0].index == 0:
        return 2
    return 0 if uses[0].index == len(concat.inputs) - 1 else 1


def _join(sibs: Sequence[_Sibling], decided_by: str) -> None:
    """Replace ``sibs`` by one conv, one Relu and one split (block order, except that a piece
    a concat takes first goes last and one it takes last goes first: ``_concat_end``)."""
    first = sibs[0].conv
    sibs = sorted(sibs, key=_concat_end)
    pieces = [int(s.w.shape[0]) for s in sibs]
    wc = make_constant(np.concatenate([s.w for s in sibs]),
                       [o for s in sibs for o in origins_of(s.conv.w.owner)])  # type: ignore[arg-type]  # fmt: skip
    bc = make_constant(np.concatenate([s.b.astype(np.float32) for s in sibs]),
                       [o for s in sibs if s.conv.bias is not None
                        for o in origins_of(s.conv.bias.owner)])  # type: ignore[arg-type]  # fmt: skip
    yt = tensor_type(sibs[0].conv.y, sum(pieces))
    conv = nn.ConvOp(first.x, wc.y, bc.y, strides=first.strides, pads=first.pads,
                     dilations=first.dilations, group=1, result_type=yt)  # fmt: skip
    set_merged_origins(conv, [s.conv for s in sibs])
    conv.attributes[SIBLING_PIECES] = DenseArrayBase.from_list(i64, pieces)
    conv.attributes[SIBLING_DECIDED_BY] = StringAttr(decided_by)
    relu = nn.ReluOp.build(operands=[conv.y], result_types=[yt])
    set_merged_origins(relu, [s.relu for s in sibs])
    split = nn.SplitOp.build(operands=[relu.y], result_types=[[s.relu.y.type for s in sibs]],
                             properties={"axis": int_attr(1)})  # fmt: skip
    set_merged_origins(split, [s.relu for s in sibs])
    Rewriter.insert_op([wc, bc, conv, relu, split], InsertPoint.before(first))
    old_consts: list[Operation] = []
    for s, piece in zip(sibs, split.outputs, strict=True):
        s.relu.y.replace_all_uses_with(piece)
        old_consts += [v.owner for v in s.conv.operands[1:] if isinstance(v.owner, nn.ConstantOp)]
        Rewriter.erase_op(s.relu)
        Rewriter.erase_op(s.conv)
    for c in dict.fromkeys(old_consts):
        if isinstance(c, nn.ConstantOp) and c.parent is not None and not c.y.uses:
            Rewriter.erase_op(c)


def tensor_type(like: SSAValue, channels: int) -> TensorType:
    t = like.type
    assert isinstance(t, TensorType)
    dims = list(shape_of(like))
    dims[1] = channels
    return TensorType(t.element_type, dims)


def merge_block(block: Block, policy: FusionPolicy, log: RefusalLog) -> int:
    """Join the sibling sets of ``block``; returns how many sets were joined."""
    readers: dict[SSAValue, list[nn.ConvOp]] = {}
    for op in block.ops:
        if isinstance(op, nn.ConvOp) and _is_1x1(op):
            readers.setdefault(op.x, []).append(op)
    joined = 0
    for convs in readers.values():
        if len(convs) < 2:
            continue
        if (r := policy.family_refusal(FAMILY, convs)) is not None:
            log.add_refusal(r)
            continue
        by_key: dict[tuple[tuple[int, ...], ...], list[_Sibling]] = {}
        for c in convs:
            s = _sibling(c, log)
            if s is not None:
                by_key.setdefault(_key(c), []).append(s)
        for sibs in by_key.values():
            if len(sibs) < 2:
                log.add("unsupported", "no other 1x1 conv of this input with the same "
                        "strides, pads and dilations and one Relu to join",
                        [sibs[0].conv, sibs[0].relu])  # fmt: skip
                continue
            _join(sibs, policy.approver(False))
            joined += 1
    return joined


@dataclass(frozen=True)
class MergeSiblingConvs(PolicyPass):
    """Sibling 1x1 convs (+ Relu) over one input -> one conv + Relu + split."""

    name: ClassVar[str] = "merge-sibling-convs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        policy = self.fusion_policy()
        log = RefusalLog()
        for f in main_funcs(op):
            merge_block(f.body.block, policy, log)
        log.flush(op)
