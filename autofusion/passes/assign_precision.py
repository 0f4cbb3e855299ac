"""``assign-precision``: per-op compute precision of MatMul/Gemm/Conv (fp16 / bf16).

Three steps, so a later decision can override an earlier one per op or per fused group:

1. *Decide*: every f32 ``nn.matmul`` / ``nn.gemm`` / ``nn.conv`` whose ONNX op type is listed
   in ``fp16_ops`` or ``bf16_ops`` and that has no ``precision`` attribute yet gets
   ``precision = "fp16"`` / ``"bf16"``. An op that already carries ``precision`` keeps it, so
   a validation pass can set ``precision = "fp32"`` on the ops of a group it rolls back and
   run this pass again.
2. *Derive storage*: a constant weight (the ``b`` operand of matmul/gemm, ``w`` of conv) gets
   ``precision.storage = "fp16" | "bf16"`` when every reader uses it as that weight and all
   readers agree on the type; any other constant loses a stale ``precision.storage``.
3. *Casts at the boundaries*: each 16-bit contraction gets ``precision.casts``, the names of
   its inputs (``a``/``b``, ``x``/``w``) that arrive in fp32 and are converted to its type
   there (an activation from an fp32 producer, or a constant kept fp32 by step 2). An input
   not listed is already stored in that type. fp32 contractions carry no casts. Bias and
   Gemm ``c`` operands are added in fp32 after the fp32 accumulation and are never cast.

The C target keeps stored weights 16-bit in memory and computes these ops in the 16-bit GEMM
core of ``afrt.h`` (``afrt_matmul_lp`` / ``afrt_conv2d_lp``): inputs listed in
``precision.casts`` are rounded to the type while they are packed, products are accumulated
in fp32, and the result (and everything downstream) is fp32. Ascend C refuses such models.

Options: ``config`` (a fusion config; its ``precision`` mapping), or ``fp16_ops`` /
``bf16_ops`` given directly (``-p 'assign-precision{bf16_ops=MatMul,Conv}'``). Place: after
fold-batchnorm and the recognize-* passes (they build new weights), before fusion.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from autofusion.dialects import dtypes, fusion, nn
from autofusion.dialects.attrs import PRECISION_CASTS, PRECISION_STORAGE, string_list
from autofusion.passes.options import CheckedPass

#: The attribute holding an op's decided precision (``fp32`` | ``fp16`` | ``bf16``).
PRECISION_ATTR = "precision"
#: The attribute on an ``nn.constant`` giving its storage type in the weights file.
STORAGE_ATTR = PRECISION_STORAGE
#: The attribute on a 16-bit contraction naming its inputs cast to that type.
CASTS_ATTR = PRECISION_CASTS
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


def lp_inputs(op: Operation) -> list[tuple[str, SSAValue]]:
    """The inputs a 16-bit contraction computes with in its type: (name, value)."""
    if isinstance(op, nn.MatMulOp | nn.GemmOp):
        return [("a", op.a), ("b", op.b)]
    if isinstance(op, nn.ConvOp):
        return [("x", op.x), ("w", op.w)]
    return []


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
        out = op.results[0].type
        if not isinstance(out, TensorType) or out.element_type != dtypes.f32:
            continue  # f16/f64 contractions keep their own type
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


def _stored_as(value: SSAValue) -> str:
    """The 16-bit storage type of a constant (``fp32`` for anything else)."""
    owner = value.owner
    if isinstance(owner, nn.ConstantOp):
        attr = owner.attributes.get(STORAGE_ATTR)
        if isinstance(attr, StringAttr):
            return attr.data
    return "fp32"


def mark_casts(module: ModuleOp) -> None:
    """Step 3: ``precision.casts`` on each 16-bit contraction (removed from the others)."""
    for op in module.walk():
        if _onnx_type(op) is None:
            continue
        prec = precision_of(op)
        if prec == "fp32":
            if CASTS_ATTR in op.attributes:
                del op.attributes[CASTS_ATTR]
            continue
        casts = [name for name, v in lp_inputs(op) if _stored_as(v) != prec]
        op.attributes[CASTS_ATTR] = ArrayAttr([StringAttr(n) for n in casts])


def stored_inputs(op: Operation) -> list[str]:
    """Inputs of a 16-bit contraction stored in its type (not in ``precision.casts``)."""
    if precision_of(op) == "fp32":
        return []
    casts = string_list(op.attributes.get(CASTS_ATTR))
    return [name for name, _ in lp_inputs(op) if name not in casts]


def check_stored_readers(value: SSAValue, storage: str) -> str | None:
    """Why a constant stored ``storage`` (16-bit in memory) has a reader that does not read
    it as a stored input of that type, following it into fusion.kernel bodies; None if
    every reader does."""
    for use in value.uses:
        reader = use.operation
        if isinstance(reader, fusion.KernelOp):
            inner = reader.body.block.args[use.index]
            if (why := check_stored_readers(inner, storage)) is not None:
                return why
            continue
        names = [n for n, v in lp_inputs(reader) if v is value]
        if (
            precision_of(reader) != storage
            or not names
            or not set(names) <= set(stored_inputs(reader))
        ):
            return f"{reader.name} reads it without {storage} storage"
    return None


@dataclass(frozen=True)
class AssignPrecision(CheckedPass):
    """Decide fp16/bf16 MatMul/Gemm/Conv, their weights' storage and the casts at their inputs;
    see the module docstring."""

    name: ClassVar[str] = "assign-precision"
    #: symbolic sizes: decisions read op types and element types only, never sizes
    symbolic: ClassVar[bool] = True

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
        mark_casts(op)
