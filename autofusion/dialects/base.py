"""Shared machinery for the tensor-level dialects: one generic textual syntax and
small helpers for reading properties.

Every ``nn`` op prints as::

    %r = nn.op %a, %b {prop = value, ...} : (tensor<..>, tensor<..>) -> tensor<..>

Properties and (discardable) attributes share the dictionary; on parsing, keys that name a
property of the op become properties. At most one operand group and one result group of an
op may be optional/variadic, so the operand count alone tells how the groups split.
"""

from __future__ import annotations

from collections.abc import Sequence

from typing_extensions import Self
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, BlockArgument, OpResult, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    OptOperandDef,
    OptResultDef,
    VarOperandDef,
    VarResultDef,
)
from xdsl.parser import Parser
from xdsl.parser.core import UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def f64_attr(value: float) -> FloatAttr:
    from xdsl.dialects.builtin import f64

    return FloatAttr(float(value), f64)


def int_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def bool_attr(value: bool) -> IntegerAttr:
    return BoolAttr.from_bool(bool(value))


def str_attr(value: str) -> StringAttr:
    return StringAttr(value)


def str_array(values: Sequence[str]) -> ArrayAttr[StringAttr]:
    return ArrayAttr([StringAttr(v) for v in values])


def _split_groups(count: int, defs: Sequence[object], what: str, op_name: str) -> list[int]:
    """Sizes of each operand/result group, given the total count."""
    flexible = [i for i, d in enumerate(defs) if isinstance(d, (VarOperandDef, VarResultDef))]
    fixed = len(defs) - len(flexible)
    if not flexible:
        if count != fixed:
            raise VerifyException(f"{op_name}: expected {fixed} {what}, got {count}")
        return [1] * len(defs)
    if len(flexible) > 1:
        raise VerifyException(f"{op_name}: ambiguous {what} groups")
    rest = count - fixed
    idx = flexible[0]
    is_opt = isinstance(defs[idx], (OptOperandDef, OptResultDef))
    if rest < 0 or (is_opt and rest > 1):
        raise VerifyException(f"{op_name}: unexpected number of {what} ({count})")
    return [rest if i == idx else 1 for i in range(len(defs))]


class TensorOp(IRDLOperation):
    """Base of ops written in the uniform ``operands {dict} : (types) -> types`` syntax."""

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        pos = parser.pos
        unresolved: list[UnresolvedOperand] = []
        first = parser.parse_optional_unresolved_operand()
        if first is not None:
            unresolved.append(first)
            while parser.parse_optional_punctuation(","):
                unresolved.append(parser.parse_unresolved_operand())
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ftype = parser.parse_function_type()
        if len(ftype.inputs.data) != len(unresolved):
            parser.raise_error(
                f"{cls.name}: {len(unresolved)} operands but {len(ftype.inputs.data)} types",
                pos,
                parser.pos,
            )
        operands = [parser.resolve_operand(u, t) for u, t in zip(unresolved, ftype.inputs.data)]
        op_def = cls.get_irdl_definition()
        props = {k: v for k, v in attrs.items() if k in op_def.properties}
        others = {k: v for k, v in attrs.items() if k not in op_def.properties}
        try:
            sizes = _split_groups(
                len(operands), [d for _, d in op_def.operands], "operands", cls.name
            )
            rsizes = _split_groups(
                len(ftype.outputs.data), [d for _, d in op_def.results], "results", cls.name
            )
        except VerifyException as e:
            parser.raise_error(str(e), pos, parser.pos)
        groups: list[SSAValue | Sequence[SSAValue]] = []
        it = iter(operands)
        for (_, d), n in zip(op_def.operands, sizes):
            vals = [next(it) for _ in range(n)]
            groups.append(vals if isinstance(d, VarOperandDef) else vals[0])
        rgroups: list[Attribute | Sequence[Attribute]] = []
        rit = iter(ftype.outputs.data)
        for (_, d), n in zip(op_def.results, rsizes):
            vals = [next(rit) for _ in range(n)]
            rgroups.append(vals if isinstance(d, VarResultDef) else vals[0])
        return cls.build(operands=groups, result_types=rgroups, properties=props, attributes=others)

    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        merged = {**self.properties, **self.attributes}
        merged.pop("operandSegmentSizes", None)
        merged.pop("resultSegmentSizes", None)
        if merged:
            printer.print_string(" ")
            printer.print_attr_dict(merged)
        printer.print_string(" : ")
        printer.print_function_type([o.type for o in self.operands], [r.type for r in self.results])

    def fail(self, msg: str) -> VerifyException:
        return VerifyException(f"'{self.name}': {msg}")


def tensor_of(value: SSAValue) -> TensorType[Attribute]:
    t = value.type
    assert isinstance(t, TensorType)
    return t


def dense_ints(attr: Attribute) -> list[int]:
    """The elements of an integer ``DenseArrayBase`` as Python ints.

    Takes ``Attribute`` and narrows: a ``prop_def(DenseArrayBase)`` is typed with the union
    element type, which ``get_values``' per-element-type overloads reject.
    """
    assert isinstance(attr, DenseArrayBase)
    return [int(v) for v in attr.get_values()]


def value_index(value: SSAValue) -> int:
    """``value.index``: its position among its block's arguments or its op's results.

    ``SSAValue`` itself has no ``index``; lowering reads it off kernel-body arguments, which
    the checker cannot tell apart from other values.
    """
    assert isinstance(value, BlockArgument | OpResult)
    return value.index


def shape_of(value: SSAValue) -> tuple[int, ...]:
    return tuple(tensor_of(value).get_shape())


def is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1
