"""Shared machinery for the tensor-level dialects: one textual syntax and small helpers
for building properties.

Every ``nn`` op (``TensorOp``, declarative assembly format) prints as::

    %r = nn.op %a, %b {attr = v, ..., prop = v, ...} : (tensor<..>, tensor<..>) -> tensor<..>

Discardable attributes print before properties in the one dictionary (xDSL's ``attr-dict``
order); either order parses.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import (
    Attribute,
    BlockArgument,
    Operation,
    OpResult,
    ParametrizedAttribute,
    SSAValue,
)
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict, irdl_attr_definition
from xdsl.utils.exceptions import VerifyException

from autofusion import symbolic
from autofusion.dialects.attrs import SYMBOLS


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


class TensorOp(IRDLOperation):
    """Base of ops written in the uniform ``operands {dict} : (types) -> types`` syntax.

    The syntax is xDSL's declarative assembly format; ``ParsePropInAttrDict`` puts the
    properties into the attribute dictionary, where keys naming a property of the op become
    properties when parsed. At most one operand group and one result group of an op may be
    optional/variadic, so the operand count alone tells how the groups split.
    """

    assembly_format = "operands attr-dict `:` functional-type(operands, results)"
    irdl_options = (ParsePropInAttrDict(),)

    def fail(self, msg: str) -> VerifyException:
        return VerifyException(f"'{self.name}': {msg}")

    def verify(self, verify_nested_ops: bool = True) -> None:
        # symbolic sizes in types are text; their ranges are the module's (``nn.symbols``)
        with symbolic.scope(symbol_ranges(self)):
            super().verify(verify_nested_ops)


def symbol_ranges(op: Operation) -> dict[str, tuple[int, int | None]]:
    """The declared ranges of a symbolic module (``nn.symbols``) that holds ``op``."""
    top: Operation | None = op
    while top is not None and top.parent_op() is not None:
        top = top.parent_op()
    decl = top.attributes.get(SYMBOLS) if top is not None else None
    if not isinstance(decl, DictionaryAttr):
        return {}
    out: dict[str, tuple[int, int | None]] = {}
    for name, rng in decl.data.items():
        if isinstance(rng, ArrayAttr) and len(rng.data) == 2:
            lo, hi = rng.data
            if isinstance(lo, IntAttr) and isinstance(hi, IntAttr):
                out[name] = (lo.data, hi.data)
    return out


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


@irdl_attr_definition
class SymShapeAttr(ParametrizedAttribute):
    """The encoding of a tensor type with symbolic dims (issue 12):
    ``tensor<1x?x768xf32, #nn.shape<["1", "seq", "768"]>>`` holds one size per dim in the
    text form of :mod:`autofusion.symbolic`; the type's own shape has ``?`` where a dim is
    symbolic. Read it with :func:`shape_of`, build it with ``dtypes.tensor_type``."""

    name = "nn.shape"
    dims: ArrayAttr[StringAttr]

    def sizes(self) -> tuple[int, ...]:
        """The dims, ``symbolic.Size`` where symbolic (typed ``int``: see ``symbolic.Dim``)."""
        return tuple(symbolic.parse(d.data) for d in self.dims.data)


def sym_shape_attr(shape: Sequence[int]) -> SymShapeAttr:
    return SymShapeAttr(ArrayAttr([StringAttr(str(d)) for d in shape]))


def type_dims(t: Attribute) -> tuple[int, ...]:
    """The shape of a tensor or memref type, symbolic dims as ``symbolic.Size``."""
    assert isinstance(t, TensorType)
    enc = t.encoding
    if isinstance(enc, SymShapeAttr):
        return enc.sizes()
    return tuple(t.get_shape())


def bound_dims(t: Attribute) -> tuple[int, ...]:
    """The shape of a tensor type as plain ints, each symbolic dim at its **upper bound**
    over the symbols' declared ranges (``symbolic.upper_bound``; the ranges come from
    ``symbolic.scope``, which the pass wrapper enters for symbolic modules). For estimates
    whose only effect is speed (cost model, working sets, FLOPs/bytes in reports): the
    worst case, never a guess at the run-time value. An unbounded symbol is a
    ``symbolic.SymbolicError``."""
    assert isinstance(t, TensorType)
    enc = t.encoding
    if isinstance(enc, SymShapeAttr):
        return tuple(symbolic.upper_bound(d) for d in enc.sizes())
    return tuple(t.get_shape())


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """The value's tensor shape; a symbolic dim is a ``symbolic.Size`` (see
    ``autofusion.symbolic``: it does arithmetic and structural equality, and refuses to turn
    into a number, so code that is not symbol-aware fails at the spot)."""
    return type_dims(tensor_of(value))


def is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1
