"""Converters for elementwise ONNX ops (unary, binary with broadcasting, variadic, Where,
Cast, Clip and the parametrised activations), each with its folding rule: the interpreter's
implementation of the ``nn`` op it converts to (never a numpy table of its own)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerType, i1
from xdsl.ir import SSAValue

from autofusion.dialects import dtypes, nn, shapes
from autofusion.dialects.base import f64_attr, int_attr, str_attr
from autofusion.frontend.context import Const, NodeCtx, Value, value_elem, value_shape
from autofusion.frontend.loader import elem_name
from autofusion.frontend.registry import converter, folder
from autofusion.interpreter import elementwise as interp


def broadcast_shape(ctx: NodeCtx, *vals: Value) -> tuple[int, ...]:
    try:
        return shapes.broadcast(*(value_shape(v) for v in vals))
    except ValueError as e:
        raise ctx.error(str(e)) from None


def same_elem(ctx: NodeCtx, *vals: Value) -> None:
    elems = [value_elem(v) for v in vals]
    if any(e != elems[0] for e in elems):
        raise ctx.error("operand element types differ: " + ", ".join(str(e) for e in elems))


def emit_binary(ctx: NodeCtx, op_cls: type, a: Value, b: Value, **props) -> Value:
    same_elem(ctx, a, b)
    shape = broadcast_shape(ctx, a, b)
    elem = i1 if issubclass(op_cls, nn.CompareOp) else value_elem(a)
    return ctx.emit1(op_cls, [a, b], shape, elem, props or None)


# ---------------------------------------------------------------------------------------
# Folding: all-constant nodes are evaluated with the interpreter's implementation of the op
# they convert to (autofusion/interpreter/elementwise.py), so an op has one meaning whether
# its inputs are known at import time or only at run time.
# ---------------------------------------------------------------------------------------


def _folded(x: np.ndarray, like: np.ndarray) -> np.ndarray:
    """A folded result in the element type of ``like`` (the op's result type), as the
    interpreter's engine casts each result; bool results stay bool."""
    x = np.asarray(x)
    return x if x.dtype == np.bool_ else x.astype(like.dtype)


def check_int_divisor(ctx: NodeCtx, b: Value) -> None:
    """A constant integer divisor holding a zero is refused at import time, naming the node
    and the element: every run would fail (onnxruntime refuses it at run time too) and
    folding it would divide by zero."""
    if not isinstance(b, Const) or not np.issubdtype(b.array.dtype, np.integer):
        return
    zeros = np.argwhere(b.array == 0)
    if len(zeros):
        at = f" at index {list(map(int, zeros[0]))}" if b.array.ndim else ""
        what = "modulo" if ctx.node.op_type == "Mod" else "division"
        raise ctx.error(f"integer {what} by zero: the constant divisor (input 1) is 0{at}")


def _fold_unary(ctx: NodeCtx) -> list[np.ndarray]:
    x = ctx.const_input(0, "x")
    assert x is not None
    with np.errstate(all="ignore"):
        return [_folded(interp.UNARY[UNARY_OPS[ctx.node.op_type]](x), x)]


def _fold_binary(ctx: NodeCtx) -> list[np.ndarray]:
    a, b = ctx.const_input(0, "A"), ctx.const_input(1, "B")
    assert a is not None and b is not None
    if ctx.node.op_type == "Div":
        check_int_divisor(ctx, ctx.input(1))
    with np.errstate(all="ignore"):
        return [_folded(interp.BINARY[BINARY_OPS[ctx.node.op_type]](a, b), a)]


@folder("Pow")
def _fold_pow(ctx: NodeCtx) -> list[np.ndarray]:
    a, b = ctx.const_input(0, "X"), ctx.const_input(1, "Y")
    assert a is not None and b is not None
    with np.errstate(all="ignore"):
        return [_folded(interp.BINARY[nn.PowOp](a, interp.cast(b, a.dtype)), a)]


@folder("Mod")
def _fold_mod(ctx: NodeCtx) -> list[np.ndarray]:
    a, b = ctx.const_input(0, "A"), ctx.const_input(1, "B")
    assert a is not None and b is not None
    check_int_divisor(ctx, ctx.input(1))
    with np.errstate(all="ignore"):
        return [_folded(interp.mod(a, b, bool(ctx.attr("fmod", 0))), a)]


@folder("Where")
def _fold_where(ctx: NodeCtx) -> list[np.ndarray]:
    c, x, y = (ctx.const_input(i, "operand") for i in range(3))
    assert c is not None and x is not None and y is not None
    return [_folded(np.where(c, x, y), x)]


@folder("PRelu")
def _fold_prelu(ctx: NodeCtx) -> list[np.ndarray]:
    x, slope = ctx.const_input(0, "X"), ctx.const_input(1, "slope")
    assert x is not None and slope is not None
    with np.errstate(all="ignore"):
        return [_folded(interp.BINARY[nn.PReluOp](x, slope), x)]


@folder("Max")
@folder("Min")
@folder("Sum")
@folder("Mean")
def _fold_variadic(ctx: NodeCtx) -> list[np.ndarray]:
    """The same chain of binary ops the converter emits (Mean: the sum divided by n)."""
    arrays = [v.array for v in ctx.inputs if isinstance(v, Const)]
    op_type = ctx.node.op_type
    f = interp.BINARY[{"Max": nn.MaxOp, "Min": nn.MinOp}.get(op_type, nn.AddOp)]
    with np.errstate(all="ignore"):
        out = arrays[0]
        for a in arrays[1:]:
            out = _folded(f(out, a), arrays[0])
        if op_type == "Mean" and len(arrays) > 1:
            n = np.array(len(arrays), dtype=arrays[0].dtype)
            out = _folded(interp.BINARY[nn.DivOp](out, n), arrays[0])
    return [np.asarray(out)]


@folder("Cast")
def _fold_cast(ctx: NodeCtx) -> list[np.ndarray]:
    x = ctx.const_input(0, "input")
    assert x is not None
    with np.errstate(all="ignore"):
        return [interp.cast(x, cast_target(ctx)[1])]


def _fold_float_unary(
    ctx: NodeCtx, fn: Callable[..., np.ndarray], *params: object
) -> list[np.ndarray]:
    x = ctx.const_input(0, "X")
    assert x is not None
    if x.dtype.kind != "f":
        raise ctx.error(f"expects a floating-point tensor, got {x.dtype}")
    with np.errstate(all="ignore"):
        return [_folded(fn(x, *params), x)]


@folder("LeakyRelu")
def _fold_leaky_relu(ctx: NodeCtx) -> list[np.ndarray]:
    return _fold_float_unary(ctx, interp.leaky_relu, float(ctx.attr("alpha", 0.01)))


@folder("Elu")
def _fold_elu(ctx: NodeCtx) -> list[np.ndarray]:
    return _fold_float_unary(ctx, interp.elu, float(ctx.attr("alpha", 1.0)))


@folder("HardSigmoid")
def _fold_hard_sigmoid(ctx: NodeCtx) -> list[np.ndarray]:
    alpha, beta = float(ctx.attr("alpha", 0.2)), float(ctx.attr("beta", 0.5))
    return _fold_float_unary(ctx, interp.hard_sigmoid, alpha, beta)


@folder("Gelu")
def _fold_gelu(ctx: NodeCtx) -> list[np.ndarray]:
    approx = ctx.attr("approximate", "none")
    if approx not in ("none", "tanh"):
        raise ctx.error(f"unknown approximate={approx!r}")
    return _fold_float_unary(ctx, interp.gelu, approx)


# ---------------------------------------------------------------------------------------
# run-time converters
# ---------------------------------------------------------------------------------------

UNARY_OPS: dict[str, type] = {
    "Relu": nn.ReluOp,
    "Sigmoid": nn.SigmoidOp,
    "Tanh": nn.TanhOp,
    "Erf": nn.ErfOp,
    "Exp": nn.ExpOp,
    "Log": nn.LogOp,
    "Sqrt": nn.SqrtOp,
    "Neg": nn.NegOp,
    "Abs": nn.AbsOp,
    "Reciprocal": nn.ReciprocalOp,
    "Floor": nn.FloorOp,
    "Ceil": nn.CeilOp,
    "Round": nn.RoundOp,
    "Sign": nn.SignOp,
    "Sin": nn.SinOp,
    "Cos": nn.CosOp,
    "Softplus": nn.SoftplusOp,
    "HardSwish": nn.HardSwishOp,
    "Not": nn.NotOp,
}

FLOAT_ONLY = {k for k, v in UNARY_OPS.items() if getattr(v, "FLOAT_ONLY", True)}


def _unary(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    op_type = ctx.node.op_type
    if op_type in FLOAT_ONLY and not dtypes.is_float(value_elem(x)):
        raise ctx.error(f"expects a floating-point tensor, got {value_elem(x)}")
    if op_type == "Not" and value_elem(x) != i1:
        raise ctx.error("expects a bool tensor")
    return [ctx.emit1(UNARY_OPS[op_type], [x], value_shape(x), value_elem(x))]


for _name in UNARY_OPS:
    converter(_name)(_unary)
    folder(_name)(_fold_unary)

BINARY_OPS: dict[str, type] = {
    "Add": nn.AddOp,
    "Sub": nn.SubOp,
    "Mul": nn.MulOp,
    "Div": nn.DivOp,
    "And": nn.AndOp,
    "Or": nn.OrOp,
    "Xor": nn.XorOp,
    "Equal": nn.EqualOp,
    "Less": nn.LessOp,
    "LessOrEqual": nn.LessEqualOp,
    "Greater": nn.GreaterOp,
    "GreaterOrEqual": nn.GreaterEqualOp,
}


def _binary(ctx: NodeCtx) -> list[Value]:
    if ctx.node.op_type == "Div":
        check_int_divisor(ctx, ctx.input(1))
    return [emit_binary(ctx, BINARY_OPS[ctx.node.op_type], ctx.input(0), ctx.input(1))]


for _name in BINARY_OPS:
    converter(_name)(_binary)
    folder(_name)(_fold_binary)


@converter("Pow")
def _pow(ctx: NodeCtx) -> list[Value]:
    x, y = ctx.input(0), ctx.input(1)
    if value_elem(y) != value_elem(x):
        y = cast_value(ctx, y, value_elem(x))
    return [emit_binary(ctx, nn.PowOp, x, y)]


@converter("Mod")
def _mod(ctx: NodeCtx) -> list[Value]:
    fmod = int(ctx.attr("fmod", 0))
    if not fmod and dtypes.is_float(ctx.elem(0)):
        raise ctx.error("fmod=0 is only defined for integer tensors")
    check_int_divisor(ctx, ctx.input(1))
    return [emit_binary(ctx, nn.ModOp, ctx.input(0), ctx.input(1), fmod=int_attr(fmod))]


def _bitshift_direction(ctx: NodeCtx) -> str:
    direction = str(ctx.attr("direction", ""))
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.error(f'direction must be "LEFT" or "RIGHT", got {direction!r}')
    t = ctx.elem(0)
    if not isinstance(t, IntegerType) or t.width.data not in (8, 16, 32, 64):
        raise ctx.error(f"expects integer tensors of 8, 16, 32 or 64 bits, got {t}")
    return direction


@converter("BitShift", version=28)
def _bitshift(ctx: NodeCtx) -> list[Value]:
    direction = str_attr(_bitshift_direction(ctx))
    return [emit_binary(ctx, nn.BitShiftOp, ctx.input(0), ctx.input(1), direction=direction)]


@folder("BitShift")
def _fold_bitshift(ctx: NodeCtx) -> list[np.ndarray]:
    left = _bitshift_direction(ctx) == "LEFT"
    a, b = ctx.const_input(0, "X"), ctx.const_input(1, "Y")
    assert a is not None and b is not None
    same_elem(ctx, ctx.input(0), ctx.input(1))
    return [interp.bitshift(a, b, left)]


@converter("PRelu")
def _prelu(ctx: NodeCtx) -> list[Value]:
    x, slope = ctx.input(0), ctx.input(1)
    shape = broadcast_shape(ctx, x, slope)
    if shape != value_shape(x):
        raise ctx.error(f"slope {value_shape(slope)} does not broadcast to {value_shape(x)}")
    same_elem(ctx, x, slope)
    return [ctx.emit1(nn.PReluOp, [x, slope], shape, value_elem(x))]


@converter("Where")
def _where(ctx: NodeCtx) -> list[Value]:
    c, x, y = ctx.input(0), ctx.input(1), ctx.input(2)
    if value_elem(c) != i1:
        raise ctx.error("condition must be a bool tensor")
    same_elem(ctx, x, y)
    shape = broadcast_shape(ctx, c, x, y)
    return [ctx.emit1(nn.WhereOp, [c, x, y], shape, value_elem(x))]


def chain(ctx: NodeCtx, op_cls: type, vals: Sequence[Value]) -> Value:
    out = vals[0]
    for v in vals[1:]:
        out = emit_binary(ctx, op_cls, out, v)
    return out


@converter("Max")
@converter("Min")
@converter("Sum")
@converter("Mean")
def _variadic(ctx: NodeCtx) -> list[Value]:
    vals = [v for v in ctx.inputs if v is not None]
    if not vals:
        raise ctx.error("needs at least one input")
    op_type = ctx.node.op_type
    op_cls = {"Max": nn.MaxOp, "Min": nn.MinOp, "Sum": nn.AddOp, "Mean": nn.AddOp}[op_type]
    out = chain(ctx, op_cls, vals)
    if op_type == "Mean" and len(vals) > 1:
        n = np.array(len(vals), dtype=dtypes.to_numpy_dtype(value_elem(out)))
        out = emit_binary(ctx, nn.DivOp, out, ctx.const(n))
    return [out]


def cast_target(ctx: NodeCtx) -> tuple[dtypes.ElemType, np.dtype]:
    to = int(ctx.attr("to", 0))
    try:
        elem = dtypes.from_onnx_elem(to)
    except ValueError:
        raise ctx.error(f"cast to unsupported element type {elem_name(to)}") from None
    return elem, dtypes.to_numpy_dtype(elem)


def cast_value(ctx: NodeCtx, v: Value, elem) -> Value:
    if isinstance(v, Const):
        return ctx.const(v.array.astype(dtypes.to_numpy_dtype(elem)))
    return ctx.emit1(nn.CastOp, [v], value_shape(v), elem)


@converter("Cast")
def _cast(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    elem, _ = cast_target(ctx)
    if value_elem(x) == elem:
        return [x]
    return [ctx.emit1(nn.CastOp, [x], value_shape(x), elem)]


@converter("CastLike")
def _cast_like(ctx: NodeCtx) -> list[Value]:
    x, like = ctx.input(0), ctx.input(1)
    if value_elem(x) == value_elem(like):
        return [x]
    return [cast_value(ctx, x, value_elem(like))]


def _float_unary(ctx: NodeCtx, op_cls: type, **props) -> list[Value]:
    x = ctx.input(0)
    if not dtypes.is_float(value_elem(x)):
        raise ctx.error(f"expects a floating-point tensor, got {value_elem(x)}")
    return [ctx.emit1(op_cls, [x], value_shape(x), value_elem(x), props or None)]


@converter("LeakyRelu")
def _leaky_relu(ctx: NodeCtx) -> list[Value]:
    return _float_unary(ctx, nn.LeakyReluOp, alpha=f64_attr(ctx.attr("alpha", 0.01)))


@converter("Elu")
def _elu(ctx: NodeCtx) -> list[Value]:
    return _float_unary(ctx, nn.EluOp, alpha=f64_attr(ctx.attr("alpha", 1.0)))


@converter("HardSigmoid")
def _hard_sigmoid(ctx: NodeCtx) -> list[Value]:
    return _float_unary(
        ctx,
        nn.HardSigmoidOp,
        alpha=f64_attr(ctx.attr("alpha", 0.2)),
        beta=f64_attr(ctx.attr("beta", 0.5)),
    )


@converter("Gelu")
def _gelu(ctx: NodeCtx) -> list[Value]:
    approx = ctx.attr("approximate", "none")
    if approx not in ("none", "tanh"):
        raise ctx.error(f"unknown approximate={approx!r}")
    return _float_unary(ctx, nn.GeluOp, approximate=str_attr(approx))


@converter("Clip")
def _clip(ctx: NodeCtx) -> list[Value]:
    if ctx.opset < 11:
        lo = float(ctx.attr("min", -math.inf))
        hi = float(ctx.attr("max", math.inf))
    elif any(isinstance(b, SSAValue) for b in ctx.inputs[1:3]):
        # Run-time bounds: min(max(x, lo), hi); with lo > hi every value becomes hi.
        out = ctx.input(0)
        for i, op_cls in ((1, nn.MaxOp), (2, nn.MinOp)):
            bound = ctx.opt_input(i)
            if bound is not None:
                out = emit_binary(ctx, op_cls, out, bound)
        return [out]
    else:
        lo_a, hi_a = ctx.const_input(1, "min"), ctx.const_input(2, "max")
        lo = float(lo_a.reshape(-1)[0]) if lo_a is not None else -math.inf
        hi = float(hi_a.reshape(-1)[0]) if hi_a is not None else math.inf
    x = ctx.input(0)
    if isinstance(x, Const):
        return [ctx.const(_folded(interp.clip(x.array, lo, hi), x.array))]
    return [
        ctx.emit1(
            nn.ClipOp,
            [x],
            value_shape(x),
            value_elem(x),
            {"min": f64_attr(lo), "max": f64_attr(hi)},
        )
    ]


# ---------------------------------------------------------------------------------------
# IsNaN / IsInf: compositions of comparisons (the exporters' scaled_dot_product_attention
# decomposition guards fully masked rows with Where(IsNaN(softmax), 0, softmax))
# ---------------------------------------------------------------------------------------


def _inf_flags(ctx: NodeCtx) -> tuple[bool, bool]:
    return bool(ctx.attr("detect_positive", 1)), bool(ctx.attr("detect_negative", 1))


@folder("IsNaN")
def _fold_isnan(ctx: NodeCtx) -> list[np.ndarray]:
    x = ctx.const_input(0, "X")
    assert x is not None
    return [np.isnan(x)]


@folder("IsInf")
def _fold_isinf(ctx: NodeCtx) -> list[np.ndarray]:
    x = ctx.const_input(0, "X")
    assert x is not None
    pos, neg = _inf_flags(ctx)
    return [np.asarray((pos & np.isposinf(x)) | (neg & np.isneginf(x)), dtype=np.bool_)]


@converter("IsNaN")
def _isnan(ctx: NodeCtx) -> list[Value]:
    """IsNaN(x) = not(x == x): NaN is the only value unequal to itself."""
    x = ctx.input(0)
    if not dtypes.is_float(value_elem(x)):
        raise ctx.error(f"expects a floating-point tensor, got {value_elem(x)}")
    eq = emit_binary(ctx, nn.EqualOp, x, x)
    return [ctx.emit1(nn.NotOp, [eq], value_shape(x), i1)]


@converter("IsInf")
def _isinf(ctx: NodeCtx) -> list[Value]:
    """IsInf(x): x == +inf and/or x == -inf (both: |x| == inf), per detect_positive/negative."""
    x = ctx.input(0)
    elem = value_elem(x)
    if not dtypes.is_float(elem):
        raise ctx.error(f"expects a floating-point tensor, got {elem}")
    pos, neg = _inf_flags(ctx)
    inf = np.array(np.inf, dtype=dtypes.to_numpy_dtype(elem))
    if pos and neg:
        absx = ctx.emit1(nn.AbsOp, [x], value_shape(x), elem)
        return [emit_binary(ctx, nn.EqualOp, absx, ctx.const(inf))]
    if pos or neg:
        return [emit_binary(ctx, nn.EqualOp, x, ctx.const(inf if pos else -inf))]
    return [ctx.const(np.zeros(value_shape(x), dtype=np.bool_))]
