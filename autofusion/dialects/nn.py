"""The ``nn`` dialect: tensor-level neural-network ops with ONNX semantics made explicit.

Every ONNX attribute is normalised into a property at import: pads are always
``[begin..., end...]`` over all spatial dims, strides and dilations are explicit, axes are
non-negative and sorted, slices give one (start, end, step) per dimension already clamped.
Shapes are static; verifiers recompute each result type from the operands and properties
and name the op when they disagree.

Syntax (uniform for every op)::

    %y = nn.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
                             dilations = array<i64: 1, 1>, group = 1 : i64}
         : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>

Reference semantics of every op live in ``autofusion/interpreter``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import ClassVar, Literal, TypeAlias

from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from autofusion import symbolic
from autofusion.dialects import shapes
from autofusion.dialects.base import (
    SymShapeAttr,
    TensorOp,
    bool_attr,
    dense_ints,
    f64_attr,
    i64_array,
    int_attr,
    is_bool,
    shape_of,
    str_attr,
    tensor_of,
    type_dims,
)
from autofusion.dialects.dtypes import tensor_type

# ---------------------------------------------------------------------------------------
# Base classes
# ---------------------------------------------------------------------------------------


def _expect(op: TensorOp, index: int, shape: tuple[int, ...], elem: Attribute | None = None):
    res = tensor_of(op.results[index])
    got = tuple(type_dims(res))
    if got != tuple(shape):
        raise op.fail(f"result shape {got} does not match inferred shape {tuple(shape)}")
    if elem is not None and res.element_type != elem:
        raise op.fail(f"result element type {res.element_type} should be {elem}")


def _float_elem(op: TensorOp, t: TensorType[Attribute]) -> None:
    if isinstance(t.element_type, IntegerType):
        raise op.fail(f"expects a floating-point tensor, got {t}")


def _same_elem(op: TensorOp, what: str, *values: SSAValue) -> Attribute:
    """The common element type of ``values``; names ``what`` when they differ."""
    elems = [tensor_of(v).element_type for v in values]
    if any(e != elems[0] for e in elems):
        raise op.fail(f"{what} element types differ: {', '.join(map(str, elems))}")
    return elems[0]


def _int_indices(op: TensorOp, v: SSAValue) -> None:
    if not isinstance(tensor_of(v).element_type, IntegerType) or is_bool(tensor_of(v).element_type):
        raise op.fail(f"indices must be an integer tensor, got {v.type}")


class UnaryOp(TensorOp):
    """Elementwise ``y = f(x)``; same shape and element type."""

    x = operand_def(TensorType)
    y = result_def(TensorType)
    traits = traits_def(Pure())
    FLOAT_ONLY: ClassVar[bool] = True

    def verify_(self) -> None:
        xt = tensor_of(self.x)
        if self.FLOAT_ONLY:
            _float_elem(self, xt)
        _expect(self, 0, tuple(type_dims(xt)), xt.element_type)


class BinaryOp(TensorOp):
    """Elementwise ``out = f(lhs, rhs)`` with numpy broadcasting; same element types."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())
    RESULT_IS_BOOL: ClassVar[bool] = False
    BOOL_ONLY: ClassVar[bool] = False

    def verify_(self) -> None:
        lt, rt = tensor_of(self.lhs), tensor_of(self.rhs)
        if lt.element_type != rt.element_type:
            raise self.fail(f"operand element types differ: {lt.element_type} vs {rt.element_type}")
        if self.BOOL_ONLY and lt.element_type != i1:
            raise self.fail(f"expects i1 operands, got {lt}")
        try:
            shape = shapes.broadcast(type_dims(lt), type_dims(rt))
        except ValueError as e:
            raise self.fail(str(e)) from None
        _expect(self, 0, shape, i1 if self.RESULT_IS_BOOL else lt.element_type)


class CompareOp(BinaryOp):
    RESULT_IS_BOOL: ClassVar[bool] = True


# ---------------------------------------------------------------------------------------
# Elementwise unary
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class ReluOp(UnaryOp):
    """``max(x, 0)``; NaN propagates. C: ``x > 0 ? x : (x != x ? x : 0)``."""

    name = "nn.relu"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """``1 / (1 + exp(-x))``."""

    name = "nn.sigmoid"


@irdl_op_definition
class TanhOp(UnaryOp):
    """Hyperbolic tangent."""

    name = "nn.tanh"


@irdl_op_definition
class ErfOp(UnaryOp):
    """Gauss error function (the exact GELU uses it)."""

    name = "nn.erf"


@irdl_op_definition
class ExpOp(UnaryOp):
    """``e ** x``."""

    name = "nn.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    """Natural logarithm; ``log(0) = -inf``, negative inputs give NaN."""

    name = "nn.log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Square root; negative inputs give NaN."""

    name = "nn.sqrt"


@irdl_op_definition
class NegOp(UnaryOp):
    """``-x`` (floats and signed integers)."""

    name = "nn.neg"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class AbsOp(UnaryOp):
    """``|x|`` (floats and integers)."""

    name = "nn.abs"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    """``1 / x``."""

    name = "nn.reciprocal"


@irdl_op_definition
class FloorOp(UnaryOp):
    """Round toward -inf."""

    name = "nn.floor"


@irdl_op_definition
class CeilOp(UnaryOp):
    """Round toward +inf."""

    name = "nn.ceil"


@irdl_op_definition
class RoundOp(UnaryOp):
    """Round half to even (ONNX Round)."""

    name = "nn.round"


@irdl_op_definition
class SignOp(UnaryOp):
    """-1, 0 or 1 by the sign of ``x`` (NaN stays NaN)."""

    name = "nn.sign"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class SinOp(UnaryOp):
    """Sine (radians)."""

    name = "nn.sin"


@irdl_op_definition
class CosOp(UnaryOp):
    """Cosine (radians)."""

    name = "nn.cos"


@irdl_op_definition
class SoftplusOp(UnaryOp):
    """``log(1 + exp(x))``."""

    name = "nn.softplus"


@irdl_op_definition
class HardSwishOp(UnaryOp):
    """``x * max(0, min(1, x/6 + 1/2))``."""

    name = "nn.hard_swish"


@irdl_op_definition
class NotOp(UnaryOp):
    """Logical not on ``i1`` tensors."""

    name = "nn.not"
    FLOAT_ONLY: ClassVar[bool] = False

    def verify_(self) -> None:
        xt = tensor_of(self.x)
        if xt.element_type != i1:
            raise self.fail(f"expects an i1 tensor, got {xt}")
        _expect(self, 0, tuple(type_dims(xt)), i1)


@irdl_op_definition
class LeakyReluOp(UnaryOp):
    """``x >= 0 ? x : alpha * x``."""

    name = "nn.leaky_relu"
    alpha_attr = prop_def(FloatAttr, prop_name="alpha")

    @property
    def alpha(self) -> float:
        return float(self.alpha_attr.value.data)


@irdl_op_definition
class EluOp(UnaryOp):
    """``x >= 0 ? x : alpha * (exp(x) - 1)``."""

    name = "nn.elu"
    alpha_attr = prop_def(FloatAttr, prop_name="alpha")

    @property
    def alpha(self) -> float:
        return float(self.alpha_attr.value.data)


@irdl_op_definition
class ClipOp(UnaryOp):
    """``min(max(x, min), max)``; bounds are constants (ONNX inputs folded at import).

    Absent bounds are +-inf. NaN propagates.
    """

    name = "nn.clip"
    min_attr = prop_def(FloatAttr, prop_name="min")
    max_attr = prop_def(FloatAttr, prop_name="max")

    @property
    def min(self) -> float:
        return float(self.min_attr.value.data)

    @property
    def max(self) -> float:
        return float(self.max_attr.value.data)

    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class HardSigmoidOp(UnaryOp):
    """``max(0, min(1, alpha * x + beta))``."""

    name = "nn.hard_sigmoid"
    alpha_attr = prop_def(FloatAttr, prop_name="alpha")
    beta_attr = prop_def(FloatAttr, prop_name="beta")

    @property
    def alpha(self) -> float:
        return float(self.alpha_attr.value.data)

    @property
    def beta(self) -> float:
        return float(self.beta_attr.value.data)


@irdl_op_definition
class GeluOp(UnaryOp):
    """GELU; ``approximate`` is ``"none"`` (erf form) or ``"tanh"``."""

    name = "nn.gelu"
    approximate_attr = prop_def(StringAttr, prop_name="approximate")

    @property
    def approximate(self) -> str:
        return self.approximate_attr.data

    def __init__(
        self,
        x: SSAValue,
        *,
        approximate: str,
        attributes: Mapping[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[x],
            result_types=[x.type],
            properties={"approximate": str_attr(approximate)},
            attributes=attributes,
        )

    def verify_(self) -> None:
        super().verify_()
        if self.approximate not in ("none", "tanh"):
            raise self.fail('approximate must be "none" or "tanh"')


@irdl_op_definition
class CastOp(TensorOp):
    """Element type conversion; float->int truncates toward zero, to ``i1`` is ``x != 0``."""

    name = "nn.cast"
    x = operand_def(TensorType)
    y = result_def(TensorType)
    traits = traits_def(Pure())

    def verify_(self) -> None:
        _expect(self, 0, shape_of(self.x))


# ---------------------------------------------------------------------------------------
# Elementwise binary / ternary
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class AddOp(BinaryOp):
    """``lhs + rhs`` with numpy broadcasting."""

    name = "nn.add"


@irdl_op_definition
class SubOp(BinaryOp):
    """``lhs - rhs`` with numpy broadcasting."""

    name = "nn.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """``lhs * rhs`` with numpy broadcasting."""

    name = "nn.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """Division; integer division truncates toward zero (ONNX)."""

    name = "nn.div"


@irdl_op_definition
class PowOp(BinaryOp):
    """``lhs ** rhs`` (same element type; the importer casts a differing exponent)."""

    name = "nn.pow"


@irdl_op_definition
class MaxOp(BinaryOp):
    """Elementwise maximum; NaN propagates."""

    name = "nn.max"


@irdl_op_definition
class MinOp(BinaryOp):
    """Elementwise minimum; NaN propagates."""

    name = "nn.min"


@irdl_op_definition
class ModOp(BinaryOp):
    """``fmod`` = 1: C fmod semantics; else Python-style (sign of divisor)."""

    name = "nn.mod"
    fmod_attr = prop_def(IntegerAttr, prop_name="fmod")

    @property
    def fmod(self) -> int:
        return int(self.fmod_attr.value.data)

    def verify_(self) -> None:
        super().verify_()
        fmod = self.fmod
        if fmod not in (0, 1):
            raise self.fail(f"fmod must be 0 or 1, got {fmod}")
        if fmod == 0 and not isinstance(tensor_of(self.lhs).element_type, IntegerType):
            raise self.fail(
                "fmod = 0 (integer modulo) needs integer operands; floats need fmod = 1"
            )


@irdl_op_definition
class PReluOp(BinaryOp):
    """``x >= 0 ? x : slope * x`` with ``slope`` broadcast to ``x``."""

    name = "nn.prelu"

    def verify_(self) -> None:
        super().verify_()
        if shape_of(self.out) != shape_of(self.lhs):
            raise self.fail(
                f"slope {shape_of(self.rhs)} must broadcast to the input shape {shape_of(self.lhs)}"
            )


@irdl_op_definition
class AndOp(BinaryOp):
    """Logical and of ``i1`` tensors, broadcasting."""

    name = "nn.and"
    BOOL_ONLY: ClassVar[bool] = True


@irdl_op_definition
class OrOp(BinaryOp):
    """Logical or of ``i1`` tensors, broadcasting."""

    name = "nn.or"
    BOOL_ONLY: ClassVar[bool] = True


@irdl_op_definition
class XorOp(BinaryOp):
    """Logical xor of ``i1`` tensors, broadcasting."""

    name = "nn.xor"
    BOOL_ONLY: ClassVar[bool] = True


@irdl_op_definition
class BitShiftOp(BinaryOp):
    """``lhs << rhs`` (``direction = "LEFT"``) or ``lhs >> rhs`` (``"RIGHT"``) on integers,
    broadcasting (ONNX BitShift-28). Bits shifted out are lost (left shifts wrap in the
    element type, also past a signed type's sign bit); a signed right shift is arithmetic. A
    shift by a negative amount or by the bit width or more gives what the sign fill alone
    gives: -1 for a right shift of a negative ``lhs``, else 0 (C leaves such shifts undefined).

    C (``T`` the element type, ``W`` its width), for ``LEFT``::

        ok = rhs >= 0 && rhs < W;  s = ok ? rhs : 0;  r = (T)((uint64_t)lhs << s);
        out = ok ? r : 0;
    """

    name = "nn.bitshift"
    direction_attr = prop_def(StringAttr, prop_name="direction")

    @property
    def direction(self) -> str:
        return self.direction_attr.data

    def verify_(self) -> None:
        super().verify_()
        if self.direction not in ("LEFT", "RIGHT"):
            raise self.fail('direction must be "LEFT" or "RIGHT"')
        t = tensor_of(self.lhs).element_type
        if not (isinstance(t, IntegerType) and t.width.data in (8, 16, 32, 64)):
            raise self.fail(f"expects integer operands of 8, 16, 32 or 64 bits, got {t}")


@irdl_op_definition
class EqualOp(CompareOp):
    """``lhs == rhs`` -> ``i1``, broadcasting."""

    name = "nn.equal"


@irdl_op_definition
class LessOp(CompareOp):
    """``lhs < rhs`` -> ``i1``, broadcasting."""

    name = "nn.less"


@irdl_op_definition
class LessEqualOp(CompareOp):
    """``lhs <= rhs`` -> ``i1``, broadcasting."""

    name = "nn.less_equal"


@irdl_op_definition
class GreaterOp(CompareOp):
    """``lhs > rhs`` -> ``i1``, broadcasting."""

    name = "nn.greater"


@irdl_op_definition
class GreaterEqualOp(CompareOp):
    """``lhs >= rhs`` -> ``i1``, broadcasting."""

    name = "nn.greater_equal"


@irdl_op_definition
class WhereOp(TensorOp):
    """``cond ? x : y`` with three-way broadcasting; ``cond`` is ``i1``."""

    name = "nn.where"
    cond = operand_def(TensorType)
    x = operand_def(TensorType)
    y = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    def verify_(self) -> None:
        ct, xt, yt = tensor_of(self.cond), tensor_of(self.x), tensor_of(self.y)
        if ct.element_type != i1:
            raise self.fail(f"condition must be an i1 tensor, got {ct}")
        if xt.element_type != yt.element_type:
            raise self.fail(f"x and y element types differ: {xt.element_type} vs {yt.element_type}")
        try:
            shape = shapes.broadcast(type_dims(ct), type_dims(xt), type_dims(yt))
        except ValueError as e:
            raise self.fail(str(e)) from None
        _expect(self, 0, shape, xt.element_type)


# ---------------------------------------------------------------------------------------
# Contractions and normalisations
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class ConvOp(TensorOp):
    """N-d convolution (ONNX Conv), NCHW; ``pads = [begin..., end...]``; optional bias."""

    name = "nn.conv"
    x = operand_def(TensorType)
    w = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    y = result_def(TensorType)
    strides_attr = prop_def(DenseArrayBase, prop_name="strides")
    pads_attr = prop_def(DenseArrayBase, prop_name="pads")
    dilations_attr = prop_def(DenseArrayBase, prop_name="dilations")
    group_attr = prop_def(IntegerAttr, prop_name="group")
    traits = traits_def(Pure())

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.strides_attr))

    @property
    def pads(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.pads_attr))

    @property
    def dilations(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.dilations_attr))

    @property
    def group(self) -> int:
        return int(self.group_attr.value.data)

    def __init__(
        self,
        x: SSAValue,
        w: SSAValue,
        bias: SSAValue | None,
        *,
        strides: Sequence[int],
        pads: Sequence[int],
        dilations: Sequence[int],
        group: int,
        result_type: Attribute,
        attributes: Mapping[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[x, w, [] if bias is None else [bias]],
            result_types=[result_type],
            properties={
                "strides": i64_array(strides),
                "pads": i64_array(pads),
                "dilations": i64_array(dilations),
                "group": int_attr(group),
            },
            attributes=attributes,
        )

    def verify_(self) -> None:
        xs, ws = shape_of(self.x), shape_of(self.w)
        operands = [self.x, self.w] + ([self.bias] if self.bias is not None else [])
        _float_elem(self, tensor_of(self.x))
        _same_elem(self, "input, weight and bias", *operands)
        try:
            shape = shapes.conv_out(
                xs,
                ws,
                self.strides,
                self.pads,
                self.dilations,
                self.group,
            )
        except ValueError as e:
            raise self.fail(str(e)) from None
        if self.bias is not None and shape_of(self.bias) != (ws[0],):
            raise self.fail(f"bias shape {shape_of(self.bias)} should be ({ws[0]},)")
        _expect(self, 0, shape, tensor_of(self.x).element_type)


@irdl_op_definition
class BatchNormOp(TensorOp):
    """Inference batch normalisation over dim 1: ``(x - mean) / sqrt(var + eps) * scale + bias``."""

    name = "nn.batch_norm"
    x = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    y = result_def(TensorType)
    epsilon_attr = prop_def(FloatAttr, prop_name="epsilon")
    traits = traits_def(Pure())

    @property
    def epsilon(self) -> float:
        return float(self.epsilon_attr.value.data)

    def verify_(self) -> None:
        xs = shape_of(self.x)
        if len(xs) < 2:
            raise self.fail("input must have rank >= 2")
        _float_elem(self, tensor_of(self.x))
        _same_elem(self, "input and parameter", self.x, self.scale, self.bias, self.mean, self.var)
        for v in (self.scale, self.bias, self.mean, self.var):
            if shape_of(v) != (xs[1],):
                raise self.fail(f"parameter shape {shape_of(v)} should be ({xs[1]},)")
        _expect(self, 0, xs, tensor_of(self.x).element_type)


@irdl_op_definition
class InstanceNormOp(TensorOp):
    """Instance normalisation over spatial dims, per (n, c)."""

    name = "nn.instance_norm"
    x = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    y = result_def(TensorType)
    epsilon_attr = prop_def(FloatAttr, prop_name="epsilon")
    traits = traits_def(Pure())

    @property
    def epsilon(self) -> float:
        return float(self.epsilon_attr.value.data)

    def verify_(self) -> None:
        xs = shape_of(self.x)
        if len(xs) < 3:
            raise self.fail(f"input must have rank >= 3 (N, C, spatial...), got {xs}")
        _float_elem(self, tensor_of(self.x))
        _same_elem(self, "input and parameter", self.x, self.scale, self.bias)
        for v in (self.scale, self.bias):
            if shape_of(v) != (xs[1],):
                raise self.fail(f"parameter shape {shape_of(v)} should be ({xs[1]},)")
        _expect(self, 0, xs, tensor_of(self.x).element_type)


@irdl_op_definition
class LayerNormOp(TensorOp):
    """Layer normalisation over dims ``[axis, rank)``; scale (and optional bias) broadcast."""

    name = "nn.layer_norm"
    x = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    y = result_def(TensorType)
    axis_attr = prop_def(IntegerAttr, prop_name="axis")
    epsilon_attr = prop_def(FloatAttr, prop_name="epsilon")
    traits = traits_def(Pure())

    @property
    def axis(self) -> int:
        return int(self.axis_attr.value.data)

    @property
    def epsilon(self) -> float:
        return float(self.epsilon_attr.value.data)

    def __init__(
        self,
        x: SSAValue,
        scale: SSAValue,
        bias: SSAValue | None,
        *,
        axis: int,
        epsilon: float,
        attributes: Mapping[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[x, scale, [] if bias is None else [bias]],
            result_types=[x.type],
            properties={"axis": int_attr(axis), "epsilon": f64_attr(epsilon)},
            attributes=attributes,
        )

    def verify_(self) -> None:
        xs = shape_of(self.x)
        axis = self.axis
        if not 0 <= axis < len(xs):
            raise self.fail(f"axis {axis} out of range for rank {len(xs)}")
        _float_elem(self, tensor_of(self.x))
        params = [self.scale] + ([self.bias] if self.bias is not None else [])
        _same_elem(self, "input and parameter", self.x, *params)
        norm = xs[axis:]
        for v in (self.scale, self.bias):
            if v is None:
                continue
            try:
                if shapes.broadcast(shape_of(v), norm) != norm:
                    raise ValueError("")
            except ValueError:
                raise self.fail(
                    f"parameter shape {shape_of(v)} does not broadcast to {norm}"
                ) from None
        _expect(self, 0, xs, tensor_of(self.x).element_type)


@irdl_op_definition
class LRNOp(TensorOp):
    """Local response normalisation across channels (ONNX LRN)."""

    name = "nn.lrn"
    x = operand_def(TensorType)
    y = result_def(TensorType)
    size_attr = prop_def(IntegerAttr, prop_name="size")
    alpha_attr = prop_def(FloatAttr, prop_name="alpha")
    beta_attr = prop_def(FloatAttr, prop_name="beta")
    bias_attr = prop_def(FloatAttr, prop_name="bias")
    traits = traits_def(Pure())

    @property
    def size(self) -> int:
        return int(self.size_attr.value.data)

    @property
    def alpha(self) -> float:
        return float(self.alpha_attr.value.data)

    @property
    def beta(self) -> float:
        return float(self.beta_attr.value.data)

    @property
    def bias(self) -> float:
        return float(self.bias_attr.value.data)

    def verify_(self) -> None:
        if len(shape_of(self.x)) < 3:
            raise self.fail(f"input must have rank >= 3 (N, C, spatial...), got {shape_of(self.x)}")
        if self.size < 1:
            raise self.fail(f"size must be >= 1, got {self.size}")
        _float_elem(self, tensor_of(self.x))
        _expect(self, 0, shape_of(self.x), tensor_of(self.x).element_type)


@irdl_op_definition
class MatMulOp(TensorOp):
    """numpy ``matmul`` semantics (batch broadcasting, 1-d promotion)."""

    name = "nn.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    def verify_(self) -> None:
        _same_elem(self, "operand", self.a, self.b)
        try:
            shape = shapes.matmul_out(shape_of(self.a), shape_of(self.b))
        except ValueError as e:
            raise self.fail(str(e)) from None
        _expect(self, 0, shape, tensor_of(self.a).element_type)


@irdl_op_definition
class GemmOp(TensorOp):
    """``alpha * op(A) @ op(B) + beta * C``; C broadcasts to the (M, N) result."""

    name = "nn.gemm"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = opt_operand_def(TensorType)
    out = result_def(TensorType)
    alpha_attr = prop_def(FloatAttr, prop_name="alpha")
    beta_attr = prop_def(FloatAttr, prop_name="beta")
    trans_a_attr = prop_def(IntegerAttr, prop_name="trans_a")
    trans_b_attr = prop_def(IntegerAttr, prop_name="trans_b")
    traits = traits_def(Pure())

    @property
    def alpha(self) -> float:
        return float(self.alpha_attr.value.data)

    @property
    def beta(self) -> float:
        return float(self.beta_attr.value.data)

    @property
    def trans_a(self) -> bool:
        return bool(self.trans_a_attr.value.data)

    @property
    def trans_b(self) -> bool:
        return bool(self.trans_b_attr.value.data)

    def __init__(
        self,
        a: SSAValue,
        b: SSAValue,
        c: SSAValue | None,
        *,
        alpha: float,
        beta: float,
        trans_a: bool,
        trans_b: bool,
        result_type: Attribute,
        attributes: Mapping[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[a, b, [] if c is None else [c]],
            result_types=[result_type],
            properties={
                "alpha": f64_attr(alpha),
                "beta": f64_attr(beta),
                "trans_a": bool_attr(trans_a),
                "trans_b": bool_attr(trans_b),
            },
            attributes=attributes,
        )

    def verify_(self) -> None:
        sa, sb = shape_of(self.a), shape_of(self.b)
        if len(sa) != 2 or len(sb) != 2:
            raise self.fail("operands must be 2-d")
        _same_elem(self, "operand", self.a, self.b, *([self.c] if self.c is not None else []))
        m, k = (sa[1], sa[0]) if self.trans_a else sa
        k2, n = (sb[1], sb[0]) if self.trans_b else sb
        if k != k2:
            raise self.fail(f"contraction sizes differ: {k} vs {k2}")
        if self.c is not None:
            try:
                if shapes.broadcast(shape_of(self.c), (m, n)) != (m, n):
                    raise ValueError("")
            except ValueError:
                raise self.fail(
                    f"C shape {shape_of(self.c)} does not broadcast to {(m, n)}"
                ) from None
        _expect(self, 0, (m, n), tensor_of(self.a).element_type)


@irdl_op_definition
class AttentionOp(TensorOp):
    """``softmax(q @ k^T * scale + mask) @ v`` over the last two dims.

    q: [..., S, D], k: [..., T, D], v: [..., T, E], mask broadcasts to [..., S, T].
    With ``nan_to_zero = 1`` (optional, default 0) NaN probabilities become 0 before the second
    product: a fully masked row (every score -inf) then gives 0 instead of NaN. This is the
    guard torch's exporters write after the softmax, ``Where(IsNaN(p), 0, p)``.
    Produced by ``recognize-attention``.
    """

    name = "nn.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    out = result_def(TensorType)
    scale_attr = prop_def(FloatAttr, prop_name="scale")
    nan_to_zero_attr = opt_prop_def(IntegerAttr, prop_name="nan_to_zero")
    traits = traits_def(Pure())

    @property
    def scale(self) -> float:
        return float(self.scale_attr.value.data)

    @property
    def nan_to_zero(self) -> bool:
        """Whether NaN probabilities become 0 (absent means no)."""
        return self.nan_to_zero_attr is not None and bool(self.nan_to_zero_attr.value.data)

    def __init__(
        self,
        q: SSAValue,
        k: SSAValue,
        v: SSAValue,
        mask: SSAValue | None,
        *,
        scale: float,
        nan_to_zero: bool = False,
        result_type: Attribute,
        attributes: Mapping[str, Attribute] | None = None,
    ):
        props: dict[str, Attribute] = {"scale": f64_attr(scale)}
        if nan_to_zero:
            props["nan_to_zero"] = int_attr(1)
        super().__init__(
            operands=[q, k, v, [] if mask is None else [mask]],
            result_types=[result_type],
            properties=props,
            attributes=attributes,
        )

    def verify_(self) -> None:
        q, k, v = shape_of(self.q), shape_of(self.k), shape_of(self.v)
        _float_elem(self, tensor_of(self.q))
        operands = [self.q, self.k, self.v] + ([self.mask] if self.mask is not None else [])
        _same_elem(self, "q, k, v and mask" if self.mask is not None else "q, k and v", *operands)
        if len(q) < 2 or q[-1] != k[-1] or k[-2] != v[-2]:
            raise self.fail(f"incompatible q/k/v shapes {q}, {k}, {v}")
        ntz = self.nan_to_zero_attr
        if ntz is not None and ntz.value.data not in (0, 1):
            raise self.fail(f"nan_to_zero must be 0 or 1, got {ntz}")
        try:
            batch = shapes.broadcast(q[:-2], k[:-2], v[:-2])
            if self.mask is not None:
                scores = (*batch, q[-2], k[-2])
                if shapes.broadcast(shape_of(self.mask), scores) != scores:
                    raise ValueError(f"mask {shape_of(self.mask)} does not broadcast to {scores}")
        except ValueError as e:
            raise self.fail(str(e)) from None
        _expect(self, 0, (*batch, q[-2], v[-1]), tensor_of(self.q).element_type)


# ---------------------------------------------------------------------------------------
# Pooling and reductions
# ---------------------------------------------------------------------------------------


class PoolOp(TensorOp):
    x = operand_def(TensorType)
    y = result_def(TensorType)
    kernel_attr = prop_def(DenseArrayBase, prop_name="kernel")
    strides_attr = prop_def(DenseArrayBase, prop_name="strides")
    pads_attr = prop_def(DenseArrayBase, prop_name="pads")
    dilations_attr = prop_def(DenseArrayBase, prop_name="dilations")
    ceil_mode_attr = prop_def(IntegerAttr, prop_name="ceil_mode")
    traits = traits_def(Pure())

    @property
    def kernel(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.kernel_attr))

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.strides_attr))

    @property
    def pads(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.pads_attr))

    @property
    def dilations(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.dilations_attr))

    @property
    def ceil_mode(self) -> bool:
        return bool(self.ceil_mode_attr.value.data)

    def verify_(self) -> None:
        try:
            shape = shapes.pool_out(
                shape_of(self.x),
                self.kernel,
                self.strides,
                self.pads,
                self.dilations,
                self.ceil_mode,
            )
        except ValueError as e:
            raise self.fail(str(e)) from None
        _expect(self, 0, shape, tensor_of(self.x).element_type)


@irdl_op_definition
class MaxPoolOp(PoolOp):
    """Max pooling; padding never wins (acts as -inf)."""

    name = "nn.max_pool"


@irdl_op_definition
class AvgPoolOp(PoolOp):
    """Average pooling; ``count_include_pad`` counts explicit pads (never ceil overhang)."""

    name = "nn.avg_pool"
    count_include_pad_attr = prop_def(IntegerAttr, prop_name="count_include_pad")

    @property
    def count_include_pad(self) -> bool:
        return bool(self.count_include_pad_attr.value.data)

    def verify_(self) -> None:
        _float_elem(self, tensor_of(self.x))
        super().verify_()


class GlobalPoolOp(TensorOp):
    x = operand_def(TensorType)
    y = result_def(TensorType)
    traits = traits_def(Pure())

    def verify_(self) -> None:
        xs = shape_of(self.x)
        if len(xs) < 3:
            raise self.fail(f"input must have rank >= 3 (N, C, spatial...), got {xs}")
        _expect(self, 0, (*xs[:2], *([1] * (len(xs) - 2))), tensor_of(self.x).element_type)


@irdl_op_definition
class GlobalAvgPoolOp(GlobalPoolOp):
    """Mean over all spatial dims: [N, C, ...] -> [N, C, 1, ...]."""

    name = "nn.global_avg_pool"

    def verify_(self) -> None:
        _float_elem(self, tensor_of(self.x))
        super().verify_()


@irdl_op_definition
class GlobalMaxPoolOp(GlobalPoolOp):
    """Maximum over all spatial dims: [N, C, ...] -> [N, C, 1, ...]."""

    name = "nn.global_max_pool"


class ReduceOp(TensorOp):
    """Reduction over sorted non-negative ``axes`` (empty = no-op copy after import)."""

    x = operand_def(TensorType)
    y = result_def(TensorType)
    axes_attr = prop_def(DenseArrayBase, prop_name="axes")
    keepdims_attr = prop_def(IntegerAttr, prop_name="keepdims")
    traits = traits_def(Pure())

    @property
    def axes(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.axes_attr))

    @property
    def keepdims(self) -> bool:
        return bool(self.keepdims_attr.value.data)

    def verify_(self) -> None:
        axes = self.axes
        if list(axes) != sorted(set(axes)):
            raise self.fail(f"axes {axes} must be sorted and unique")
        try:
            shape = shapes.reduce_out(shape_of(self.x), axes, self.keepdims)
        except ValueError as e:
            raise self.fail(str(e)) from None
        _expect(self, 0, shape, tensor_of(self.x).element_type)


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """Mean over ``axes``."""

    name = "nn.reduce_mean"


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over ``axes``."""

    name = "nn.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over ``axes``; NaN propagates."""

    name = "nn.reduce_max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """Minimum over ``axes``; NaN propagates."""

    name = "nn.reduce_min"


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    """Product over ``axes``."""

    name = "nn.reduce_prod"


@irdl_op_definition
class ReduceL2Op(ReduceOp):
    """``sqrt(sum(x * x))`` over ``axes``."""

    name = "nn.reduce_l2"


class SoftmaxBase(TensorOp):
    x = operand_def(TensorType)
    y = result_def(TensorType)
    axis_attr = prop_def(IntegerAttr, prop_name="axis")
    traits = traits_def(Pure())

    @property
    def axis(self) -> int:
        return int(self.axis_attr.value.data)

    def verify_(self) -> None:
        xs = shape_of(self.x)
        _float_elem(self, tensor_of(self.x))
        if not 0 <= self.axis < max(1, len(xs)):
            raise self.fail(f"axis {self.axis} out of range for rank {len(xs)}")
        _expect(self, 0, xs, tensor_of(self.x).element_type)


@irdl_op_definition
class SoftmaxOp(SoftmaxBase):
    """Softmax along one axis (opset-13 semantics; older exports are rewritten at import)."""

    name = "nn.softmax"


@irdl_op_definition
class LogSoftmaxOp(SoftmaxBase):
    """``x - log(sum(exp(x)))`` along ``axis`` (computed stably)."""

    name = "nn.log_softmax"


@irdl_op_definition
class ArgMaxOp(TensorOp):
    """Index (i64) of the first maximum along ``axis``."""

    name = "nn.arg_max"
    x = operand_def(TensorType)
    y = result_def(TensorType)
    axis_attr = prop_def(IntegerAttr, prop_name="axis")
    keepdims_attr = prop_def(IntegerAttr, prop_name="keepdims")
    traits = traits_def(Pure())

    @property
    def axis(self) -> int:
        return int(self.axis_attr.value.data)

    @property
    def keepdims(self) -> bool:
        return bool(self.keepdims_attr.value.data)

    def verify_(self) -> None:
        try:
            shape = shapes.reduce_out(shape_of(self.x), [self.axis], self.keepdims)
        except ValueError as e:
            raise self.fail(str(e)) from None
        _expect(self, 0, shape, i64)


# ---------------------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class ReshapeOp(TensorOp):
    """Row-major reinterpretation to the result shape (also Flatten/Squeeze/Unsqueeze)."""

    name = "nn.reshape"
    x = operand_def(TensorType)
    y = result_def(TensorType)
    traits = traits_def(Pure())

    def verify_(self) -> None:
        xt, yt = tensor_of(self.x), tensor_of(self.y)
        if shapes.numel(type_dims(xt)) != shapes.numel(type_dims(yt)):
            raise self.fail(
                f"element count differs: {tuple(type_dims(xt))} -> {tuple(type_dims(yt))}"
            )
        if xt.element_type != yt.element_type:
            raise self.fail(
                f"reshape cannot change the element type ({xt.element_type} -> {yt.element_type})"
            )


@irdl_op_definition
class TransposeOp(TensorOp):
    """Permute dims: result dim ``i`` is input dim ``perm[i]``."""

    name = "nn.transpose"
    x = operand_def(TensorType)
    y = result_def(TensorType)
    perm_attr = prop_def(DenseArrayBase, prop_name="perm")
    traits = traits_def(Pure())

    @property
    def perm(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.perm_attr))

    def __init__(
        self,
        x: SSAValue,
        *,
        perm: Sequence[int],
        attributes: Mapping[str, Attribute] | None = None,
    ):
        t = tensor_of(x)
        shape = type_dims(t)
        super().__init__(
            operands=[x],
            result_types=[tensor_type(t.element_type, [shape[p] for p in perm])],
            properties={"perm": i64_array(perm)},
            attributes=attributes,
        )

    def verify_(self) -> None:
        xs = shape_of(self.x)
        perm = self.perm
        if sorted(perm) != list(range(len(xs))):
            raise self.fail(f"perm {perm} is not a permutation of rank {len(xs)}")
        _expect(self, 0, tuple(xs[p] for p in perm), tensor_of(self.x).element_type)


@irdl_op_definition
class ConcatOp(TensorOp):
    """Join inputs along ``axis``; other dims must agree."""

    name = "nn.concat"
    inputs = var_operand_def(TensorType)
    y = result_def(TensorType)
    axis_attr = prop_def(IntegerAttr, prop_name="axis")
    traits = traits_def(Pure())

    @property
    def axis(self) -> int:
        return int(self.axis_attr.value.data)

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        *,
        axis: int,
        result_type: Attribute,
        attributes: Mapping[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={"axis": int_attr(axis)},
            attributes=attributes,
        )

    def verify_(self) -> None:
        if not self.inputs:
            raise self.fail("needs at least one input")
        _same_elem(self, "input", *self.inputs)
        axis = self.axis
        first = shape_of(self.inputs[0])
        if not 0 <= axis < len(first):
            raise self.fail(f"axis {axis} out of range for rank {len(first)}")
        total = 0
        for v in self.inputs:
            s = shape_of(v)
            if len(s) != len(first) or any(
                a != b for i, (a, b) in enumerate(zip(s, first)) if i != axis
            ):
                raise self.fail(f"input shapes {first} and {s} differ off the concat axis")
            total += s[axis]
        out = list(first)
        out[axis] = total
        _expect(self, 0, tuple(out), tensor_of(self.inputs[0]).element_type)


@irdl_op_definition
class SplitOp(TensorOp):
    """Split along ``axis``; piece sizes are the result shapes."""

    name = "nn.split"
    x = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis_attr = prop_def(IntegerAttr, prop_name="axis")
    traits = traits_def(Pure())

    @property
    def axis(self) -> int:
        return int(self.axis_attr.value.data)

    def verify_(self) -> None:
        xs = shape_of(self.x)
        axis = self.axis
        if not 0 <= axis < len(xs):
            raise self.fail(f"axis {axis} out of range for rank {len(xs)}")
        if not self.outputs:
            raise self.fail("needs at least one result")
        _same_elem(self, "input and result", self.x, *self.outputs)
        total = 0
        for r in self.outputs:
            s = shape_of(r)
            if len(s) != len(xs) or any(a != b for i, (a, b) in enumerate(zip(s, xs)) if i != axis):
                raise self.fail(f"piece shape {s} does not match input {xs} off the axis")
            total += s[axis]
        if total != xs[axis]:
            raise self.fail(f"pieces sum to {total}, dimension is {xs[axis]}")


#: ``nn.slice``'s stored end of a dim whose end is a symbolic size (issue 12).
SYMBOLIC_END = -(1 << 63)


@irdl_op_definition
class SliceOp(TensorOp):
    """Strided slice with one normalised (start, end, step) per dim.

    ``end = -1`` with a negative step means "through index 0".
    """

    name = "nn.slice"
    x = operand_def(TensorType)
    y = result_def(TensorType)
    starts_attr = prop_def(DenseArrayBase, prop_name="starts")
    ends_attr = prop_def(DenseArrayBase, prop_name="ends")
    steps_attr = prop_def(DenseArrayBase, prop_name="steps")
    traits = traits_def(Pure())

    @property
    def starts(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.starts_attr))

    @property
    def ends(self) -> tuple[int, ...]:
        """The end per dim; a stored :data:`SYMBOLIC_END` reads as start + the result's size
        (a symbolic import's slice to a symbolic bound, step 1)."""
        ends = dense_ints(self.ends_attr)
        if SYMBOLIC_END not in ends:
            return tuple(ends)
        out = shape_of(self.y)
        return tuple(s + n if e == SYMBOLIC_END else e for s, e, n in zip(self.starts, ends, out))

    @property
    def steps(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.steps_attr))

    def __init__(
        self,
        x: SSAValue,
        *,
        starts: Sequence[int],
        ends: Sequence[int],
        steps: Sequence[int],
        result_type: Attribute,
        attributes: Mapping[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[x],
            result_types=[result_type],
            properties={
                "starts": i64_array(starts),
                "ends": i64_array(ends),
                "steps": i64_array(steps),
            },
            attributes=attributes,
        )

    def verify_(self) -> None:
        try:
            shape = shapes.slice_out(shape_of(self.x), self.starts, self.ends, self.steps)
        except ValueError as e:
            raise self.fail(str(e)) from None
        _expect(self, 0, shape, tensor_of(self.x).element_type)


PadMode: TypeAlias = Literal["constant", "reflect", "edge"]
"""The ``mode`` values ``PadOp`` admits (spelled as numpy's ``np.pad`` modes)."""


@irdl_op_definition
class PadOp(TensorOp):
    """Pad with ``pads = [begin..., end...]`` (non-negative); mode constant|reflect|edge."""

    name = "nn.pad"
    x = operand_def(TensorType)
    y = result_def(TensorType)
    pads_attr = prop_def(DenseArrayBase, prop_name="pads")
    mode_attr = prop_def(StringAttr, prop_name="mode")
    value_attr = prop_def(FloatAttr, prop_name="value")
    traits = traits_def(Pure())

    @property
    def pads(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.pads_attr))

    @property
    def mode(self) -> str:
        return self.mode_attr.data

    @property
    def value(self) -> float:
        return float(self.value_attr.value.data)

    def verify_(self) -> None:
        xs = shape_of(self.x)
        pads = self.pads
        if len(pads) != 2 * len(xs) or min(pads, default=0) < 0:
            raise self.fail(f"pads {pads} must be 2 x rank non-negative values")
        if self.mode not in ("constant", "reflect", "edge"):
            raise self.fail(f"unknown mode {self.mode!r}")
        r = len(xs)
        _expect(
            self,
            0,
            tuple(d + pads[i] + pads[r + i] for i, d in enumerate(xs)),
            tensor_of(self.x).element_type,
        )


@irdl_op_definition
class ResizeOp(TensorOp):
    """Separable resize (ONNX Resize / Upsample with static sizes) by per-axis tap tables.

    For each ``axes[k]`` (distinct, ascending) the operands hold an index table ``idx_k``
    (``i64``, ``[out, taps]``) and a weight table ``w_k`` (``f32``, same shape): along that
    axis ``y[.., o, ..] = sum_t w_k[o, t] * x[.., idx_k[o, t], ..]``, applied axis after axis
    in ``axes`` order. Indices lie in ``[0, in)`` (edge clamping is already in the table),
    except that a row whose first index is ``-1`` is outside a crop and gives
    ``extrapolation_value`` (which the op must then carry). The tables are computed at import
    from the ONNX attributes by ``autofusion.interpreter.resize.axis_table``: 1 tap for
    nearest (weight 1), 2 for linear, 4 for cubic, more for antialiased downsampling.

        %y = nn.resize %x, %i2, %w2, %i3, %w3 {axes = array<i64: 2, 3>}
             : (tensor<1x1x2x2xf32>, tensor<4x2xi64>, tensor<4x2xf32>, tensor<4x2xi64>,
                tensor<4x2xf32>) -> tensor<1x1x4x4xf32>

    C: one loop nest per axis into a scratch buffer (the last into ``y``) accumulating
    ``w * x`` over the taps; when every table has 1 tap the op is one copy nest
    ``y[o_a, o_b] = x[idx_a[o_a], idx_b[o_b]]`` with each index read once in its loop.
    """

    name = "nn.resize"
    x = operand_def(TensorType)
    tables = var_operand_def(TensorType)
    y = result_def(TensorType)
    axes_attr = prop_def(DenseArrayBase, prop_name="axes")
    extrapolation_value_attr = opt_prop_def(FloatAttr, prop_name="extrapolation_value")
    traits = traits_def(Pure())

    @property
    def axes(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.axes_attr))

    @property
    def extrapolation_value(self) -> float | None:
        return (
            None
            if self.extrapolation_value_attr is None
            else float(self.extrapolation_value_attr.value.data)
        )

    def verify_(self) -> None:
        xs = shape_of(self.x)
        axes = self.axes
        if list(axes) != sorted(set(axes)) or any(not 0 <= a < len(xs) for a in axes):
            raise self.fail(f"axes {list(axes)} must be distinct, ascending, in [0, {len(xs)})")
        if len(self.tables) != 2 * len(axes):
            raise self.fail(f"needs an index and a weight table per axis, got {len(self.tables)}")
        out = list(xs)
        for k, a in enumerate(axes):
            it, wt = tensor_of(self.tables[2 * k]), tensor_of(self.tables[2 * k + 1])
            if it.element_type != i64 or wt.element_type != f32:
                raise self.fail(f"axis {a} tables must be i64 and f32, got {it} and {wt}")
            if len(type_dims(it)) != 2 or tuple(type_dims(it)) != tuple(type_dims(wt)):
                raise self.fail(f"axis {a} tables must both be [out, taps], got {it} and {wt}")
            out[a] = type_dims(it)[0]
        _expect(self, 0, tuple(out), tensor_of(self.x).element_type)


@irdl_op_definition
class GatherOp(TensorOp):
    """ONNX Gather along ``axis``; negative indices count from the end."""

    name = "nn.gather"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    y = result_def(TensorType)
    axis_attr = prop_def(IntegerAttr, prop_name="axis")
    traits = traits_def(Pure())

    @property
    def axis(self) -> int:
        return int(self.axis_attr.value.data)

    def verify_(self) -> None:
        ds, ist = shape_of(self.data), tensor_of(self.indices)
        axis = self.axis
        _int_indices(self, self.indices)
        if not 0 <= axis < len(ds):
            raise self.fail(f"axis {axis} out of range for rank {len(ds)}")
        _expect(
            self,
            0,
            (*ds[:axis], *type_dims(ist), *ds[axis + 1 :]),
            tensor_of(self.data).element_type,
        )


@irdl_op_definition
class GatherElementsOp(TensorOp):
    """ONNX GatherElements: ``y[i][j][k] = data[i][indices[i][j][k]][k]`` for ``axis = 1``;
    the result has the indices' shape."""

    name = "nn.gather_elements"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    y = result_def(TensorType)
    axis_attr = prop_def(IntegerAttr, prop_name="axis")
    traits = traits_def(Pure())

    @property
    def axis(self) -> int:
        return int(self.axis_attr.value.data)

    def verify_(self) -> None:
        ds, is_ = shape_of(self.data), shape_of(self.indices)
        _int_indices(self, self.indices)
        if len(ds) != len(is_):
            raise self.fail("data and indices ranks differ")
        axis = self.axis
        if not 0 <= axis < len(ds):
            raise self.fail(f"axis {axis} out of range for rank {len(ds)}")
        if any(i > d for k, (i, d) in enumerate(zip(is_, ds)) if k != axis):
            raise self.fail(f"indices shape {is_} exceeds data shape {ds} off the axis")
        _expect(self, 0, is_, tensor_of(self.data).element_type)


@irdl_op_definition
class GatherNDOp(TensorOp):
    """ONNX GatherND: each tuple in the last dim of ``indices`` selects a slice of ``data``
    (after the leading ``batch_dims``, which both share)."""

    name = "nn.gather_nd"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    y = result_def(TensorType)
    batch_dims_attr = prop_def(IntegerAttr, prop_name="batch_dims")
    traits = traits_def(Pure())

    @property
    def batch_dims(self) -> int:
        return int(self.batch_dims_attr.value.data)

    def verify_(self) -> None:
        ds, is_ = shape_of(self.data), shape_of(self.indices)
        _int_indices(self, self.indices)
        b = self.batch_dims
        if not 0 <= b < min(len(ds), len(is_)):
            raise self.fail(f"batch_dims {b} out of range for data {ds} and indices {is_}")
        if ds[:b] != is_[:b]:
            raise self.fail(f"batch dims of data {ds} and indices {is_} differ")
        if not is_ or is_[-1] > len(ds) - b:
            raise self.fail(f"index depth {is_[-1] if is_ else 0} too large for data {ds}")
        _expect(self, 0, (*is_[:-1], *ds[b + is_[-1] :]), tensor_of(self.data).element_type)


@irdl_op_definition
class ExpandOp(TensorOp):
    """Broadcast ``x`` to the result shape (ONNX Expand with a folded shape)."""

    name = "nn.expand"
    x = operand_def(TensorType)
    y = result_def(TensorType)
    traits = traits_def(Pure())

    def verify_(self) -> None:
        xs, ys = shape_of(self.x), shape_of(self.y)
        _same_elem(self, "input and result", self.x, self.y)
        try:
            if shapes.broadcast(xs, ys) != ys:
                raise ValueError(f"{xs} does not broadcast to {ys}")
        except ValueError as e:
            raise self.fail(str(e)) from None


@irdl_op_definition
class TileOp(TensorOp):
    """Repeat ``x`` ``repeats[i]`` times along each dim."""

    name = "nn.tile"
    x = operand_def(TensorType)
    y = result_def(TensorType)
    repeats_attr = prop_def(DenseArrayBase, prop_name="repeats")
    traits = traits_def(Pure())

    @property
    def repeats(self) -> tuple[int, ...]:
        return tuple(dense_ints(self.repeats_attr))

    def verify_(self) -> None:
        xs, reps = shape_of(self.x), self.repeats
        if len(reps) != len(xs):
            raise self.fail("repeats must give one entry per dimension")
        if min(reps, default=0) < 0:
            raise self.fail(f"repeats {reps} must be >= 0")
        _expect(self, 0, tuple(d * r for d, r in zip(xs, reps)), tensor_of(self.x).element_type)


def _dense_text(value: DenseIntOrFPElementsAttr) -> str:
    """The attribute as xDSL prints it, except that float data with elements xDSL would print
    as hex bit patterns (inf, NaN, some huge values) is printed as a raw hex string: xDSL 0.75
    parses a hex element of a float list as an integer value, not as bits."""
    buf = io.StringIO()
    Printer(stream=buf).print_attribute(value)
    text = buf.getvalue()
    elem = value.get_element_type()
    if isinstance(elem, AnyFloat) and "0x" in text and not text.startswith('dense<"0x'):
        buf = io.StringIO()
        Printer(stream=buf).print_attribute(value.get_type())
        text = f'dense<"0x{value.data.data.hex().upper()}"> : {buf.getvalue()}'
    return text


@irdl_op_definition
class SizesOp(TensorOp):
    """Symbolic sizes as run-time data (issue 12, symbolic import): an integer tensor of
    static shape whose elements are sizes in the text form of ``autofusion.symbolic``
    (``["seq", "12*seq"]``, row-major), known once the run's symbols are bound. What a folded
    ``Shape(x)`` becomes where the model computes with it (exporters' mask index
    arithmetic); where it only gives a shape, it folds away."""

    name = "nn.sizes"
    sizes_attr = prop_def(ArrayAttr[StringAttr], prop_name="sizes")
    y = result_def(TensorType)
    traits = traits_def(Pure())

    assembly_format = "attr-dict `:` type($y)"

    def __init__(self, sizes: Sequence[int], shape: Sequence[int], elem: Attribute):
        super().__init__(
            properties={"sizes": ArrayAttr([StringAttr(str(d)) for d in sizes])},
            result_types=[TensorType(elem, list(shape))],
        )

    @property
    def sizes(self) -> tuple[int, ...]:
        """The elements, ``symbolic.Size`` where symbolic."""
        return tuple(symbolic.parse(a.data) for a in self.sizes_attr.data)

    def verify_(self) -> None:
        t = tensor_of(self.y)
        if not isinstance(t.element_type, IntegerType):
            raise self.fail(f"result must be an integer tensor, got {t}")
        n = shapes.numel(type_dims(t))
        if n != len(self.sizes_attr.data):
            raise self.fail(f"{len(self.sizes_attr.data)} sizes for a result of {n} elements")
        try:
            self.sizes
        except ValueError as e:
            raise self.fail(str(e)) from None


@irdl_op_definition
class ConstantOp(TensorOp):
    """A constant tensor (weights, folded shape values).

    ``value`` is a bytes-backed ``dense<...>`` attribute. Printing elides constants with more
    than ``ELIDE_LIMIT`` elements as ``dense_resource<__elided__>`` (like MLIR's
    ``--mlir-elide-elementsattrs-if-larger``); such IR parses but cannot be evaluated.
    """

    name = "nn.constant"
    value = prop_def(DenseIntOrFPElementsAttr | DenseResourceAttr)
    y = result_def(TensorType)
    traits = traits_def(Pure())

    ELIDE_LIMIT: ClassVar[int | None] = 16

    # Custom syntax: the format cannot elide large values or print non-finite floats as hex.
    assembly_format = None

    def __init__(self, value: DenseIntOrFPElementsAttr | DenseResourceAttr):
        super().__init__(properties={"value": value}, result_types=[value.get_type()])

    def verify_(self) -> None:
        if self.value.get_type() != self.y.type:
            raise self.fail(f"value type {self.value.get_type()} != result type {self.y.type}")

    @property
    def is_elided(self) -> bool:
        return isinstance(self.value, DenseResourceAttr)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        value = self.value
        limit = ConstantOp.ELIDE_LIMIT
        if isinstance(value, DenseIntOrFPElementsAttr) and limit is not None and len(value) > limit:
            printer.print_string("dense_resource<__elided__> : ")
            printer.print_attribute(value.get_type())
        elif isinstance(value, DenseIntOrFPElementsAttr):
            printer.print_string(_dense_text(value))
        else:
            printer.print_attribute(value)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr):
            parser.raise_error(
                "nn.constant expects a dense<...> or dense_resource<...> value", pos, parser.pos
            )
        attrs = parser.parse_optional_attr_dict()
        op = cls(value)
        op.attributes.update(attrs)
        return op


NN = Dialect(
    "nn",
    [
        ReluOp,
        SigmoidOp,
        TanhOp,
        ErfOp,
        ExpOp,
        LogOp,
        SqrtOp,
        NegOp,
        AbsOp,
        ReciprocalOp,
        FloorOp,
        CeilOp,
        RoundOp,
        SignOp,
        SinOp,
        CosOp,
        SoftplusOp,
        HardSwishOp,
        NotOp,
        LeakyReluOp,
        EluOp,
        ClipOp,
        HardSigmoidOp,
        GeluOp,
        CastOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        PowOp,
        MaxOp,
        MinOp,
        ModOp,
        PReluOp,
        AndOp,
        OrOp,
        XorOp,
        BitShiftOp,
        EqualOp,
        LessOp,
        LessEqualOp,
        GreaterOp,
        GreaterEqualOp,
        WhereOp,
        ConvOp,
        BatchNormOp,
        InstanceNormOp,
        LayerNormOp,
        LRNOp,
        MatMulOp,
        GemmOp,
        AttentionOp,
        MaxPoolOp,
        AvgPoolOp,
        GlobalAvgPoolOp,
        GlobalMaxPoolOp,
        ReduceMeanOp,
        ReduceSumOp,
        ReduceMaxOp,
        ReduceMinOp,
        ReduceProdOp,
        ReduceL2Op,
        SoftmaxOp,
        LogSoftmaxOp,
        ArgMaxOp,
        ReshapeOp,
        TransposeOp,
        ConcatOp,
        SplitOp,
        SliceOp,
        PadOp,
        GatherOp,
        GatherElementsOp,
        ResizeOp,
        GatherNDOp,
        ExpandOp,
        TileOp,
        ConstantOp,
        SizesOp,
    ],
    [SymShapeAttr],
)

ELEMENTWISE_UNARY = (
    ReluOp,
    SigmoidOp,
    TanhOp,
    ErfOp,
    ExpOp,
    LogOp,
    SqrtOp,
    NegOp,
    AbsOp,
    ReciprocalOp,
    FloorOp,
    CeilOp,
    RoundOp,
    SignOp,
    SinOp,
    CosOp,
    SoftplusOp,
    HardSwishOp,
    NotOp,
    LeakyReluOp,
    EluOp,
    ClipOp,
    HardSigmoidOp,
    GeluOp,
    CastOp,
)
ELEMENTWISE_BINARY = (
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    PowOp,
    MaxOp,
    MinOp,
    ModOp,
    PReluOp,
    AndOp,
    OrOp,
    XorOp,
    BitShiftOp,
    EqualOp,
    LessOp,
    LessEqualOp,
    GreaterOp,
    GreaterEqualOp,
)
ELEMENTWISE = (*ELEMENTWISE_UNARY, *ELEMENTWISE_BINARY, WhereOp)
#: Ops only a symbolic import makes (docs/dynamic.md): no target lowers them before the
#: lowering handles symbolic sizes, and every pass that does not refuses their module.
SYMBOLIC_ONLY = (SizesOp,)
