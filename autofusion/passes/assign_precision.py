"""``assign-precision``: per-op storage precision of MatMul/Gemm/Conv weights (fp16 / bf16).

Two steps, so a later decision can override an earlier one per op or per fused group:

1. *Decide*: every ``nn.matmul`` / ``nn.gemm`` / ``nn.conv`` whose ONNX op type is listed in
   ``fp16_ops`` or ``bf16_ops`` and that has no ``precision`` attribute yet gets
   ``precision = "fp16"`` / ``"bf16"``. An op that already carries ``precision`` keeps it, so
   a validation pass can set ``precision = "fp32"`` on the ops of a group it rolls back and
   run this pass again.
2. *Derive*: a constant weight (the ``b`` operand of matmul/gemm, ``w`` of conv) gets
   ``precision.storage = "fp16" | "bf16"`` when every reader uses it as that weight and all
   readers agree on the type; any other constant loses a stale ``precision.storage``.

The C target stores such a weight in ``weights.bin`` as 16-bit values (half the bytes) and
widens it to fp32 when the model loads (F16C ``vcvtph2ps`` for fp16 where the build CPU has
it, a shift for bf16, portable C otherwise); the GEMM/conv accumulate in fp32. The Ascend C
target declares those weights ``half`` / ``bfloat16_t``. Activations, LayerNorm, Softmax and
GroupNorm statistics stay fp32.

Options: ``config`` (a fusion config; its ``precision`` mapping), or ``fp16_ops`` /
``bf16_ops`` given directly (``-p 'assign-precision{bf16_ops=MatMul,Conv}'``). Place: after
fold-batchnorm and the recognize-* passes (they build new weights), before fusion.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from autofusion.dialects import nn
from autofusion.dialects.attrs import PRECISION_STORAGE
from autofusion.passes.options import CheckedPass

#: The attribute holding an op's decided precision (``fp32`` | ``fp16`` | ``bf16``).
PRECISION_ATTR = "precision"
#: The attribute on an ``nn.constant`` giving its storage type in the weights file.
STORAGE_ATTR = PRECISION_STORAGE
#: ONNX op types whose weights can be stored in 16 bits.
REDUCED_OPS = ("Conv", "Gemm", "MatMul")
PRECISIONS = ("fp32", "fp16", "bf16")


def _onnx_type(op: Operation) -> str | None:
    if isinstance(op, nn.MatMulOp):
        return "MatMul"
    if isinstance(op, nn.GemmOp):
        return "Gemm"
    if isinstance(op, nn.ConvOp):
        return "Conv"
    return None


def _weight_operand(op: Operation) -> SSAValue | None:
    if isinstance(op, nn.MatMulOp | nn.GemmOp):
        return op.b
    if isinstance(op, nn.ConvOp):
        return op.w
    return None


def precision_of(op: Operation) -> str:
    """The decided precision of ``op`` (``fp32`` without an attribute)."""
    attr = op.attributes.get(PRECISION_ATTR)
    return attr.data if isinstance(attr, StringAttr) else "fp32"


def decide(module: ModuleOp, table: dict[str, str]) -> None:
    """Step 1: ``precision`` on each listed contraction that has none yet."""
    for op in module.walk():
        kind = _onnx_type(op)
        if kind is None or PRECISION_ATTR in op.attributes:
            continue
        if kind in table:
            op.attributes[PRECISION_ATTR] = StringAttr(table[kind])


def derive_storage(module: ModuleOp) -> None:
    """Step 2: ``precision.storage`` on the constants read only as reduced-precision weights."""
    for op in module.walk():
        if not isinstance(op, nn.ConstantOp):
            continue
        kinds: set[str] = set()
        for use in op.y.uses:
            reader = use.operation
            if _weight_operand(reader) is not op.y or reader.operands.count(op.y) != 1:
                kinds.add("fp32")
            else:
                kinds.add(precision_of(reader))
        if len(kinds) == 1 and (kind := kinds.pop()) != "fp32":
            op.attributes[STORAGE_ATTR] = StringAttr(kind)
        elif STORAGE_ATTR in op.attributes:
            del op.attributes[STORAGE_ATTR]


@dataclass(frozen=True)
class AssignPrecision(CheckedPass):
    """Decide fp16/bf16 storage of MatMul/Gemm/Conv weights; see the module docstring."""

    name: ClassVar[str] = "assign-precision"

    config: str = ""
    fp16_ops: tuple[str, ...] = ()
    bf16_ops: tuple[str, ...] = ()

    def table(self) -> dict[str, str]:
        """ONNX op type -> precision, from the config and the direct options."""
        from autofusion.policy.base import canonical_op_type

        lists: dict[str, tuple[str, ...]] = {"fp16": self.fp16_ops, "bf16": self.bf16_ops}
        if self.config:
            from autofusion.policy.config import load_config

            cfg = load_config(self.config)
            lists["fp16"] = (*lists["fp16"], *cfg.precision.get("fp16_ops", ()))
            lists["bf16"] = (*lists["bf16"], *cfg.precision.get("bf16_ops", ()))
        out: dict[str, str] = {}
        for prec, names in lists.items():
            for raw in names:
                name = canonical_op_type(raw)
                if name not in REDUCED_OPS:
                    raise PassFailedException(
                        f"{self.name}: {prec}_ops lists {raw!r}; only the weights of "
                        f"{', '.join(REDUCED_OPS)} are stored in reduced precision"
                    )
                if out.get(name, prec) != prec:
                    raise PassFailedException(
                        f"{self.name}: {name} is listed in both fp16_ops and bf16_ops"
                    )
                out[name] = prec
        return out

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        del ctx
        decide(op, self.table())
        derive_storage(op)
