"""Elementwise ops, casts and constants.

Arithmetic stays in the operands' element type (float32 stays float32, as in onnxruntime);
property scalars are converted to that type first. NaN propagates through relu, max, min
and clip; integer division truncates toward zero; ``nn.round`` rounds half to even.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Operation

from autofusion.dialects import nn
from autofusion.dialects.base import tensor_of
from autofusion.dialects.dtypes import numpy_from_dense, to_numpy_dtype
from autofusion.errors import AutofusionError
from autofusion.interpreter.core import concrete, concrete_shape, describe, register

Arrays = Sequence[np.ndarray]

# ---- erf without scipy ------------------------------------------------------------------

_ERF_SERIES = [1.0, -1.0 / 3, 1.0 / 10, -1.0 / 42, 1.0 / 216, -1.0 / 1320, 1.0 / 9360]
# Chebyshev fit of erfc (Numerical Recipes' erfcc): fractional error < 1.2e-7 everywhere.
_ERFC_COEFFS = [
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
]


def erf(x: np.ndarray) -> np.ndarray:
    """Error function computed in float64 (series near 0, erfc fit elsewhere), returned in
    the input's float type; absolute error < 1e-7, relative error near 0 < 1e-9."""
    x = np.asarray(x)
    x64 = x.astype(np.float64)
    ax = np.abs(x64)
    out = np.empty_like(x64)
    small = ax < 0.5
    xs = x64[small]
    x2 = xs * xs
    acc = np.full_like(xs, _ERF_SERIES[-1])
    for c in reversed(_ERF_SERIES[:-1]):
        acc *= x2
        acc += c
    acc *= xs
    acc *= 2.0 / np.sqrt(np.pi)
    out[small] = acc
    big = ~small
    a = ax[big]
    t = 1.0 / (1.0 + 0.5 * a)
    poly = np.full_like(a, _ERFC_COEFFS[-1])
    for c in reversed(_ERFC_COEFFS[:-1]):
        poly *= t
        poly += c
    a *= a
    poly -= a
    np.exp(poly, out=poly)
    poly *= t  # erfc(|x|)
    np.subtract(1.0, poly, out=poly)
    out[big] = np.copysign(poly, x64[big])
    return out.astype(x.dtype) if x.dtype.kind == "f" else out


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp of a non-positive argument only: no overflow for large |x|.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _scalar(x: np.ndarray, value: float) -> np.generic:
    return x.dtype.type(value)


def _relu(x: np.ndarray) -> np.ndarray:
    # ``x <= 0`` is false for NaN, so NaN passes through; -0.0 becomes +0.0 (as the C does).
    return np.where(x <= 0, x.dtype.type(0), x)


UNARY: dict[type[Operation], Callable[[np.ndarray], np.ndarray]] = {
    nn.ReluOp: _relu,
    nn.SigmoidOp: _sigmoid,
    nn.TanhOp: np.tanh,
    nn.ErfOp: erf,
    nn.ExpOp: np.exp,
    nn.LogOp: np.log,
    nn.SqrtOp: np.sqrt,
    nn.NegOp: np.negative,
    nn.AbsOp: np.abs,
    nn.ReciprocalOp: np.reciprocal,
    nn.FloorOp: np.floor,
    nn.CeilOp: np.ceil,
    nn.RoundOp: np.round,  # numpy rounds half to even
    nn.SignOp: np.sign,
    nn.SinOp: np.sin,
    nn.CosOp: np.cos,
    nn.SoftplusOp: lambda x: np.logaddexp(x.dtype.type(0), x),
    nn.HardSwishOp: lambda x: x * np.clip(x / x.dtype.type(6) + x.dtype.type(0.5), 0, 1),
    nn.NotOp: np.logical_not,
}


"""Op class -> numpy function of one array: the one meaning of each unary op, shared by the
interpreter and by import-time constant folding (``frontend/convert_elementwise.py``)."""


@register(*UNARY)
def _unary(op: Operation, args: Arrays) -> np.ndarray:
    return UNARY[type(op)](args[0])


def leaky_relu(x: np.ndarray, alpha: float) -> np.ndarray:
    """``x`` where ``x >= 0``, else ``alpha * x`` (NaN stays NaN)."""
    return np.where(x >= 0, x, _scalar(x, alpha) * x)


def elu(x: np.ndarray, alpha: float) -> np.ndarray:
    """``x`` where ``x >= 0``, else ``alpha * (exp(x) - 1)`` (expm1: exact near 0)."""
    return np.where(x >= 0, x, _scalar(x, alpha) * np.expm1(x))


def clip(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``min(max(x, lo), hi)``: NaN propagates; integer bounds round inward and saturate."""
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        lo_i = info.min if lo == -np.inf else max(info.min, int(np.ceil(lo)))
        hi_i = info.max if hi == np.inf else min(info.max, int(np.floor(hi)))
        return np.minimum(np.maximum(x, x.dtype.type(lo_i)), x.dtype.type(hi_i))
    return np.minimum(np.maximum(x, _scalar(x, lo)), _scalar(x, hi))


def hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """``clamp(alpha * x + beta, 0, 1)``."""
    y = _scalar(x, alpha) * x + _scalar(x, beta)
    return np.minimum(np.maximum(y, x.dtype.type(0)), x.dtype.type(1))


def gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    """``x * Phi(x)``, with erf (``"none"``) or the tanh approximation (``"tanh"``)."""
    half = _scalar(x, 0.5)
    if approximate == "tanh":
        c = _scalar(x, np.sqrt(2 / np.pi))
        return half * x * (1 + np.tanh(c * (x + _scalar(x, 0.044715) * x * x * x)))
    return half * x * (1 + erf(x / _scalar(x, np.sqrt(2.0))))


@register(nn.LeakyReluOp)
def _leaky_relu(op: nn.LeakyReluOp, args: Arrays) -> np.ndarray:
    return leaky_relu(args[0], op.alpha)


@register(nn.EluOp)
def _elu(op: nn.EluOp, args: Arrays) -> np.ndarray:
    return elu(args[0], op.alpha)


@register(nn.ClipOp)
def _clip(op: nn.ClipOp, args: Arrays) -> np.ndarray:
    return clip(args[0], op.min, op.max)


@register(nn.HardSigmoidOp)
def _hard_sigmoid(op: nn.HardSigmoidOp, args: Arrays) -> np.ndarray:
    return hard_sigmoid(args[0], op.alpha, op.beta)


@register(nn.GeluOp)
def _gelu(op: nn.GeluOp, args: Arrays) -> np.ndarray:
    return gelu(args[0], op.approximate)


@register(nn.CastOp)
def _cast(op: nn.CastOp, args: Arrays) -> np.ndarray:
    from autofusion.dialects.base import tensor_of
    from autofusion.dialects.dtypes import to_numpy_dtype

    return cast(args[0], to_numpy_dtype(tensor_of(op.y).element_type))


def _cvtt(t: np.ndarray, width: int) -> np.ndarray:
    """x86 ``cvttss2si``/``cvttsd2si`` to a signed ``width``-bit integer: ``t`` (already
    truncated, float64) where in range, INT_MIN ("integer indefinite") for NaN and out of
    range."""
    lim = float(2 ** (width - 1))
    ok = (t >= -lim) & (t < lim)  # False for NaN
    out = np.where(ok, t, 0.0).astype(np.int64 if width == 64 else np.int32)
    out[~ok] = -(2 ** (width - 1))
    return out


def cast(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """``x`` converted to ``target``: to bool is ``x != 0``. Float to integer truncates toward
    zero; NaN and out-of-range values (undefined in ONNX) follow onnxruntime on x86-64, whose
    casts compile to ``cvtt`` instructions: int32/int64 give INT_MIN of that width ("integer
    indefinite"); int8/int16/uint8/uint16 take the low bits of the 32-bit conversion;
    uint32/uint64 (w bits) below 2^(w-1), or NaN, are the signed w-bit conversion, at or above
    it the conversion of ``x - 2^(w-1)`` with the top bit flipped (checked against
    onnxruntime in test_hostile_folds.py). The C backend emits the same rule
    (``lowering/c/scalar.py _float_to_int``)."""
    target = np.dtype(target)
    if target == np.bool_:
        return x != 0
    if x.dtype.kind == "f" and target.kind in "iu":
        with np.errstate(invalid="ignore"):
            t = np.trunc(x.astype(np.float64))
        bits = target.itemsize * 8
        if target in (np.uint32, np.uint64):
            big = float(2 ** (bits - 1))
            lo = _cvtt(t, bits).view(target)
            with np.errstate(invalid="ignore"):
                hi = _cvtt(t - big, bits).view(target) ^ target.type(2 ** (bits - 1))
                high = t >= big  # False for NaN
            return np.asarray(np.where(high, hi, lo), target)
        return np.asarray(_cvtt(t, 64 if bits == 64 else 32).astype(target))  # low bits
    with np.errstate(over="ignore", invalid="ignore"):  # e.g. 1e30 -> float16 is inf (IEEE)
        return x.astype(target)


# ---- binary -----------------------------------------------------------------------------


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C semantics). A zero divisor is an error, as
    in the C backend and onnxruntime; MIN / -1 wraps to MIN (onnxruntime's int32 result)."""
    _no_zero_divisor(b)
    with np.errstate(over="ignore"):
        q = np.floor_divide(a, b)
        r = a - q * b
    fix = (r != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def _no_zero_divisor(b: np.ndarray, what: str = "division") -> None:
    """``what`` is ``division`` (Div) or ``modulo`` (Mod): the message says which op failed."""
    if b.dtype.kind in "iu" and np.any(b == 0):
        where = list(map(int, np.argwhere(b == 0)[0])) if b.ndim else []
        raise ValueError(f"integer {what} by zero (divisor element {where})")


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _int_div(a, b) if a.dtype.kind in "iu" else np.true_divide(a, b)


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return np.power(a.astype(np.float64), b.astype(np.float64))
    return np.power(a, b)


def _and(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_and(a, b) if a.dtype == np.bool_ else np.bitwise_and(a, b)


def _or(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_or(a, b) if a.dtype == np.bool_ else np.bitwise_or(a, b)


def _xor(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_xor(a, b) if a.dtype == np.bool_ else np.bitwise_xor(a, b)


BINARY: dict[type[Operation], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    nn.AddOp: np.add,
    nn.SubOp: np.subtract,
    nn.MulOp: np.multiply,
    nn.DivOp: _div,
    nn.PowOp: _pow,
    nn.MaxOp: np.maximum,  # propagates NaN
    nn.MinOp: np.minimum,
    nn.PReluOp: lambda x, s: np.where(x < 0, s * x, x),
    nn.AndOp: _and,
    nn.OrOp: _or,
    nn.XorOp: _xor,
    nn.EqualOp: np.equal,
    nn.LessOp: np.less,
    nn.LessEqualOp: np.less_equal,
    nn.GreaterOp: np.greater,
    nn.GreaterEqualOp: np.greater_equal,
}


"""Op class -> numpy function of two (broadcasting) arrays; shared with constant folding."""


@register(*BINARY)
def _binary(op: Operation, args: Arrays) -> np.ndarray:
    return BINARY[type(op)](args[0], args[1])


def mod(a: np.ndarray, b: np.ndarray, fmod: bool) -> np.ndarray:
    """Remainder: an integer zero divisor is an error (as in the C backend and onnxruntime);
    ``MIN % -1`` is 0; floats use C fmod (sign of the dividend) when ``fmod``, else Python's
    (sign of the divisor)."""
    if a.dtype.kind in "iu":
        _no_zero_divisor(b, "modulo")
        safe = np.where(b == -1, b.dtype.type(1), b) if b.dtype.kind == "i" else b
        r = np.fmod(a, safe) if fmod else np.mod(a, safe)
        return np.where(b == -1, a.dtype.type(0), r) if b.dtype.kind == "i" else r
    return np.fmod(a, b) if fmod else np.mod(a, b)


@register(nn.ModOp)
def _mod(op: nn.ModOp, args: Arrays) -> np.ndarray:
    return mod(args[0], args[1], bool(op.fmod))


def bitshift(a: np.ndarray, b: np.ndarray, left: bool) -> np.ndarray:
    """``a << b`` or ``a >> b`` (BitShift-28): left shifts wrap, signed right shifts are
    arithmetic; a shift by a negative amount or by the bit width or more gives the sign fill
    (-1 for a right shift of a negative ``a``, else 0). The C backend emits the same guard
    (C leaves such shifts undefined)."""
    width = a.dtype.itemsize * 8
    big = (b < 0) | (b >= width)
    s = np.where(big, b.dtype.type(0), b).astype(a.dtype)
    if left:
        u = np.dtype(f"u{a.dtype.itemsize}")
        r = np.left_shift(a.view(u), s.view(u)).view(a.dtype)
        fill = np.zeros((), a.dtype)
    else:
        r = np.right_shift(a, s)
        fill = np.where(a < 0, a.dtype.type(-1) if a.dtype.kind == "i" else 0, a.dtype.type(0))
    return np.asarray(np.where(big, fill, r), a.dtype)


@register(nn.BitShiftOp)
def _bitshift(op: nn.BitShiftOp, args: Arrays) -> np.ndarray:
    return bitshift(args[0], args[1], op.direction == "LEFT")


@register(nn.WhereOp)
def _where(op: nn.WhereOp, args: Arrays) -> np.ndarray:
    return np.where(args[0], args[1], args[2])


@register(nn.SizesOp)
def _sizes(op: nn.SizesOp, args: Arrays) -> np.ndarray:
    vals = [concrete(d) for d in op.sizes]
    return np.array(vals, dtype=to_numpy_dtype(tensor_of(op.y).element_type)).reshape(
        concrete_shape(op.y)
    )


@register(nn.ConstantOp)
def _constant(op: nn.ConstantOp, args: Arrays) -> np.ndarray:
    if not isinstance(op.value, DenseIntOrFPElementsAttr):
        raise AutofusionError(
            f"interpreter: constant {describe(op)} was elided when the IR was printed "
            "(dense_resource<__elided__>); print it in full with "
            "`autofusion-opt --elide-constants-larger=-1` to interpret it"
        )
    return numpy_from_dense(op.value)
