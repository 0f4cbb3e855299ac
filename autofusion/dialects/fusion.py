"""The ``fusion`` dialect: fused kernels as isolated regions of ``nn`` ops.

``fusion.kernel`` takes the tensors its body reads, holds one block whose arguments stand
for them, and yields its results with ``fusion.yield``. ``pattern`` names the rule that
formed it; ``origins`` lists the ONNX node names it came from, so any generated C function
maps back to the model. Example::

    %y = fusion.kernel "conv_bn_relu" ["conv1", "bn1", "relu1"] (%x, %w, %b)
        : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> {
    ^bb0(%a: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>, %c: tensor<4xf32>):
      %0 = nn.conv %a, %k, %c {...} : (...) -> tensor<1x4x8x8xf32>
      %1 = nn.relu %0 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      fusion.yield %1 : tensor<1x4x8x8xf32>
    }
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from autofusion.dialects.attrs import FUSION_FAST_MATH

#: Unit attribute of a ``fusion.kernel`` (set by ``fuse`` from the ``fast_math`` config key,
#: removed by ``validate-precision`` on rollback): its generated C uses the fast approximate
#: ``af_fast_expf`` / ``af_fast_tanhf`` / ``af_fast_erff`` of afrt.h. The interpreter ignores it
#: (its exact math is the reference the approximation is measured against).
FAST_MATH_ATTR = FUSION_FAST_MATH


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One fused kernel: an isolated single-block region of nn ops."""

    name = "fusion.kernel"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    pattern = prop_def(StringAttr)
    origins = prop_def(ArrayAttr[StringAttr])
    traits = traits_def(IsolatedFromAbove(), Pure())

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
        pattern: str,
        origins: Sequence[str],
        attributes: dict[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            regions=[body],
            properties={
                "pattern": StringAttr(pattern),
                "origins": ArrayAttr([StringAttr(o) for o in origins]),
            },
            attributes=attributes,
        )

    @property
    def pattern_name(self) -> str:
        return self.pattern.data

    @property
    def origin_names(self) -> list[str]:
        return [o.data for o in self.origins.data]

    def verify_(self) -> None:
        if not self.pattern.data:
            raise VerifyException("'fusion.kernel': pattern name must not be empty")
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException(
                f"'fusion.kernel': {len(self.inputs)} inputs but {len(block.args)} block arguments"
            )
        for arg, val in zip(block.args, self.inputs):
            if arg.type != val.type:
                raise VerifyException(
                    f"'fusion.kernel': block argument type {arg.type} != input type {val.type}"
                )
        term = block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException("'fusion.kernel': body must end in fusion.yield")
        got = [v.type for v in term.values]
        want = [r.type for r in self.outputs]
        if got != want:
            raise VerifyException(
                f"'fusion.kernel': yields ({', '.join(map(str, got))}) but results are "
                f"({', '.join(map(str, want))})"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.pattern)
        printer.print_string(" ")
        printer.print_attribute(self.origins)
        printer.print_string(" (")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(")")
        if self.attributes:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([v.type for v in self.inputs], [r.type for r in self.outputs])
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        pos = parser.pos
        pattern = parser.parse_attribute()
        origins = parser.parse_attribute()
        if not isinstance(pattern, StringAttr) or not isinstance(origins, ArrayAttr):
            parser.raise_error('fusion.kernel expects "pattern" [origins]', pos, parser.pos)
        parser.parse_punctuation("(")
        unresolved = []
        if (first := parser.parse_optional_unresolved_operand()) is not None:
            unresolved.append(first)
            while parser.parse_optional_punctuation(","):
                unresolved.append(parser.parse_unresolved_operand())
        parser.parse_punctuation(")")
        attrs = {}
        if parser.parse_optional_keyword("attributes"):
            attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_pos = parser.pos
        ftype = parser.parse_function_type()
        if len(ftype.inputs.data) != len(unresolved):
            parser.raise_error(
                f"fusion.kernel: {len(unresolved)} operands but {len(ftype.inputs.data)} types",
                type_pos,
                parser.pos,
            )
        inputs = [parser.resolve_operand(u, t) for u, t in zip(unresolved, ftype.inputs.data)]
        body = parser.parse_region()
        op = cls.__new__(cls)
        IRDLOperation.__init__(
            op,
            operands=[inputs],
            result_types=[list(ftype.outputs.data)],
            regions=[body],
            properties={"pattern": pattern, "origins": origins},
            attributes=attrs,
        )
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of ``fusion.kernel``: the kernel's results."""

    name = "fusion.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(KernelOp), Pure())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


def make_block(types: Sequence[Attribute]) -> Block:
    return Block(arg_types=types)


Fusion = Dialect("fusion", [KernelOp, YieldOp], [])
