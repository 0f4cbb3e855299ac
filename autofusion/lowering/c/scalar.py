"""Scalar semantics of the elementwise ``nn`` ops as ``arith``/``math`` ops.

``emit_scalar(e, op, args)`` appends the ops computing one element of ``op``'s result from
one element of each operand. NaN follows ONNX: Relu, Max, Min and Clip propagate NaN
(``arith.maximumf``/``minimumf`` are NaN-propagating; the printer keeps that).
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable
from typing import cast

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, IntegerType, Signedness, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from autofusion.dialects import clib, dtypes, nn
from autofusion.dialects.attrs import origin_names
from autofusion.lowering.c.builder import Emitter


def _elem(v: SSAValue) -> Attribute:
    t = v.type
    return t.element_type if isinstance(t, TensorType) else t


def _is_i1(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def _float_only(op: Operation, t: Attribute) -> None:
    if not dtypes.is_float(t):
        raise PassFailedException(f"lower-nn-to-loops: {op.name} on {t} is not supported")


def _unary_float(
    e: Emitter, op: Operation, x: SSAValue, f: Callable[[Emitter, SSAValue, Attribute], SSAValue]
) -> SSAValue:
    t = x.type
    _float_only(op, t)
    return f(e, x, t)


def _site(op: Operation, onnx_type: str) -> str:
    """``Div node 'd'``: how a run-time fault message names ``op`` (its ONNX node names)."""
    names = origin_names(op)
    quoted = ", ".join(f"'{n}'" for n in names)
    return f"{onnx_type} node {quoted}" if names else onnx_type


def _fconst(e: Emitter, v: float, t: Attribute) -> SSAValue:
    return e.const(v, t)


def _sigmoid(e: Emitter, x: SSAValue, t: Attribute) -> SSAValue:
    one = _fconst(e, 1.0, t)
    ex = e.add(math.ExpOp(e.add(arith.NegfOp(x))))
    return e.add(arith.DivfOp(one, e.add(arith.AddfOp(one, ex))))


def _gelu(e: Emitter, x: SSAValue, t: Attribute, approx: str) -> SSAValue:
    half = _fconst(e, 0.5, t)
    one = _fconst(e, 1.0, t)
    if approx == "tanh":
        x3 = e.add(arith.MulfOp(e.add(arith.MulfOp(x, x)), x))
        inner = e.add(arith.AddfOp(x, e.add(arith.MulfOp(_fconst(e, 0.044715, t), x3))))
        th = e.add(
            math.TanhOp(e.add(arith.MulfOp(_fconst(e, pymath.sqrt(2 / pymath.pi), t), inner)))
        )
        s = e.add(arith.AddfOp(one, th))
    else:
        s = e.add(
            arith.AddfOp(
                one, e.add(math.ErfOp(e.add(arith.MulfOp(x, _fconst(e, 1 / pymath.sqrt(2), t)))))
            )
        )
    return e.add(arith.MulfOp(e.add(arith.MulfOp(half, x)), s))


def _cvtt(e: Emitter, x: SSAValue, src: Attribute, width: int) -> SSAValue:
    """x86 ``cvttss2si`` to a signed ``width``-bit integer, without C's undefined behaviour:
    truncation toward zero in range, INT_MIN ("integer indefinite") for NaN and values out of
    range (interpreter.elementwise.cast documents the rule)."""
    lim = float(2 ** (width - 1))
    it = IntegerType(width)
    ok = e.add(
        arith.AndIOp(
            e.add(arith.CmpfOp(x, _fconst(e, -lim, src), "oge")),
            e.add(arith.CmpfOp(x, _fconst(e, lim, src), "olt")),
        )
    )
    safe = e.select(ok, x, _fconst(e, 0.0, src))
    return e.select(ok, e.add(arith.FPToSIOp(safe, it)), e.const(-(2 ** (width - 1)), it))


def _float_to_int(e: Emitter, x: SSAValue, src: Attribute, dst: IntegerType) -> SSAValue:
    """Float to integer by the rule of ``interpreter.elementwise.cast`` (onnxruntime on
    x86-64): int32/int64 by cvtt of that width; int8/int16/uint8/uint16 the low bits of the
    32-bit cvtt; uint32/uint64 (w bits) at or above 2^(w-1) as cvtt(x - 2^(w-1)) with the top
    bit flipped, else (NaN included) the signed w-bit cvtt."""
    if src == dtypes.f16:  # 2^31 is not an f16: compare in f32 (every f16 is exact there)
        x, src = e.add(arith.ExtFOp(x, dtypes.f32)), dtypes.f32
    w = dst.width.data
    if dst.signedness.data == Signedness.UNSIGNED and w in (32, 64):
        big = float(2 ** (w - 1))
        lo = _cvtt(e, x, src, w)
        hi = _cvtt(e, e.add(arith.SubfOp(x, _fconst(e, big, src))), src, w)
        hi = e.add(arith.XOrIOp(hi, e.const(-(2 ** (w - 1)), IntegerType(w))))
        r = e.select(e.add(arith.CmpfOp(x, _fconst(e, big, src), "oge")), hi, lo)
    else:
        r = _cvtt(e, x, src, 64 if w == 64 else 32)
        if w < 32:
            r = e.add(arith.TruncIOp(r, IntegerType(w)))
    if r.type != dst:  # same width, other signedness: C's conversion keeps the bits
        r = e.add(arith.BitcastOp(r, dst))
    return r


def _cast(e: Emitter, x: SSAValue, src: Attribute, dst: Attribute) -> SSAValue:
    if src == dst:
        return x
    fs, fd = dtypes.is_float(src), dtypes.is_float(dst)
    if _is_i1(dst):
        if fs:
            return e.add(arith.CmpfOp(x, _fconst(e, 0.0, src), "une"))
        return e.add(arith.CmpiOp(x, e.const(0, src), "ne"))
    if _is_i1(src):
        return e.select(x, e.const(1, dst), e.const(0, dst))
    if fs and fd:
        ws = {"f16": 16, "f32": 32, "f64": 64}[str(src)]
        wd = {"f16": 16, "f32": 32, "f64": 64}[str(dst)]
        return e.add(arith.ExtFOp(x, dst) if wd > ws else arith.TruncFOp(x, dst))
    if fs:
        return _float_to_int(e, x, src, cast(IntegerType, dst))
    if fd:
        return e.add(arith.SIToFPOp(x, cast(AnyFloat, dst)))
    assert isinstance(src, IntegerType)
    assert isinstance(dst, IntegerType)
    if dst.width.data > src.width.data:
        return e.add(arith.ExtSIOp(x, dst))
    return e.add(arith.TruncIOp(x, dst))


_FCMP = {
    nn.EqualOp: "oeq",
    nn.LessOp: "olt",
    nn.LessEqualOp: "ole",
    nn.GreaterOp: "ogt",
    nn.GreaterEqualOp: "oge",
}
_ICMP = {
    nn.EqualOp: "eq",
    nn.LessOp: "slt",
    nn.LessEqualOp: "sle",
    nn.GreaterOp: "sgt",
    nn.GreaterEqualOp: "sge",
}
_FMATH = {
    nn.TanhOp: math.TanhOp,
    nn.ErfOp: math.ErfOp,
    nn.ExpOp: math.ExpOp,
    nn.LogOp: math.LogOp,
    nn.SqrtOp: math.SqrtOp,
    nn.FloorOp: math.FloorOp,
    nn.CeilOp: math.CeilOp,
    nn.RoundOp: math.RoundEvenOp,
    nn.SinOp: math.SinOp,
    nn.CosOp: math.CosOp,
}


def _bitshift(e: Emitter, x: SSAValue, y: SSAValue, left: bool) -> SSAValue:
    """``x << y`` or ``x >> y`` by the rule of ``interpreter.elementwise.bitshift``. C leaves
    a shift by a negative amount or by >= the width undefined: those shift by 0 and select the
    sign fill. arith's shifts are signless: unsigned operands are bitcast (same bits)."""
    t = cast(IntegerType, x.type)
    unsigned = t.signedness.data == Signedness.UNSIGNED
    sl = IntegerType(t.width.data)

    def const(v: int) -> SSAValue:  # arith.constant is signless only
        c = e.const(v, sl)
        return e.add(arith.BitcastOp(c, t)) if unsigned else c

    zero = const(0)
    ok = e.add(arith.CmpiOp(y, const(t.width.data), "ult"))
    if not unsigned:
        ok = e.add(arith.AndIOp(ok, e.add(arith.CmpiOp(y, zero, "sge"))))
    s = e.select(ok, y, zero)
    if unsigned:
        xs, ss = e.add(arith.BitcastOp(x, sl)), e.add(arith.BitcastOp(s, sl))
    else:
        xs, ss = x, s
    if left:
        r = e.add(arith.ShLIOp(xs, ss))
    elif unsigned:
        r = e.add(arith.ShRUIOp(xs, ss))
    else:
        r = e.add(arith.ShRSIOp(xs, ss))
    if unsigned:
        r = e.add(arith.BitcastOp(r, t))
    fill = zero
    if not left and not unsigned:
        fill = e.select(e.add(arith.CmpiOp(x, zero, "slt")), const(-1), zero)
    return e.select(ok, r, fill)


def emit_scalar(e: Emitter, op: Operation, args: list[SSAValue]) -> SSAValue:
    """One element of ``op``'s result; ``args`` are scalars of the operand element types."""
    t = args[0].type
    isf = dtypes.is_float(t)
    unsigned = isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED
    if type(op) in _FMATH:
        _float_only(op, t)
        return e.add(_FMATH[type(op)](args[0]))
    x = args[0]
    match op:
        case nn.ReluOp():
            return e.add(arith.MaximumfOp(x, _fconst(e, 0.0, t)))
        case nn.SigmoidOp():
            return _unary_float(e, op, x, _sigmoid)
        case nn.NegOp():
            return e.add(arith.NegfOp(x)) if isf else e.add(arith.SubiOp(e.const(0, t), x))
        case nn.AbsOp() if unsigned:
            return x
        case nn.SignOp() if unsigned:
            return e.select(
                e.add(arith.CmpiOp(x, e.const(0, t), "ne")), e.const(1, t), e.const(0, t)
            )
        case nn.AbsOp():
            return e.add(math.AbsFOp(x)) if isf else e.add(math.AbsIOp(x))
        case nn.ReciprocalOp():
            _float_only(op, t)
            return e.add(arith.DivfOp(_fconst(e, 1.0, t), x))
        case nn.SignOp():
            zero, one, mone = e.const(0, t), e.const(1, t), e.const(-1, t)
            if isf:
                pos = e.add(arith.CmpfOp(x, zero, "ogt"))
                neg = e.add(arith.CmpfOp(x, zero, "olt"))
            else:
                pos = e.add(arith.CmpiOp(x, zero, "sgt"))
                neg = e.add(arith.CmpiOp(x, zero, "slt"))
            return e.select(pos, one, e.select(neg, mone, x if isf else zero))
        case nn.SoftplusOp():
            _float_only(op, t)
            ax = e.add(math.AbsFOp(x))
            l1p = e.add(math.Log1pOp(e.add(math.ExpOp(e.add(arith.NegfOp(ax))))))
            return e.add(arith.AddfOp(e.add(arith.MaximumfOp(x, _fconst(e, 0.0, t))), l1p))
        case nn.HardSwishOp():
            _float_only(op, t)
            h = e.add(
                arith.AddfOp(e.add(arith.MulfOp(x, _fconst(e, 1 / 6, t))), _fconst(e, 0.5, t))
            )
            h = e.add(
                arith.MinimumfOp(e.add(arith.MaximumfOp(h, _fconst(e, 0.0, t))), _fconst(e, 1.0, t))
            )
            return e.add(arith.MulfOp(x, h))
        case nn.NotOp():
            return e.add(arith.XOrIOp(x, e.const(True, t)))
        case nn.LeakyReluOp() | nn.EluOp():
            _float_only(op, t)
            alpha = _fconst(e, op.alpha, t)
            neg = e.add(arith.CmpfOp(x, _fconst(e, 0.0, t), "olt"))
            if isinstance(op, nn.EluOp):
                val = e.add(arith.MulfOp(alpha, e.add(math.ExpM1Op(x))))
            else:
                val = e.add(arith.MulfOp(alpha, x))
            return e.select(neg, val, x)
        case nn.ClipOp():
            lo, hi = op.min, op.max
            if isf:
                r = x
                if lo != -pymath.inf:
                    r = e.add(arith.MaximumfOp(r, _fconst(e, lo, t)))
                if hi != pymath.inf:
                    r = e.add(arith.MinimumfOp(r, _fconst(e, hi, t)))
                return r
            r = x
            if pymath.isfinite(lo):
                r = e.add(arith.MaxSIOp(r, e.const(int(lo), t)))
            if pymath.isfinite(hi):
                r = e.add(arith.MinSIOp(r, e.const(int(hi), t)))
            return r
        case nn.HardSigmoidOp():
            _float_only(op, t)
            v = e.add(
                arith.AddfOp(
                    e.add(arith.MulfOp(x, _fconst(e, op.alpha, t))),
                    _fconst(e, op.beta, t),
                )
            )
            v = e.add(arith.MaximumfOp(v, _fconst(e, 0.0, t)))
            return e.add(arith.MinimumfOp(v, _fconst(e, 1.0, t)))
        case nn.GeluOp():
            _float_only(op, t)
            return _gelu(e, x, t, op.approximate)
        case nn.CastOp():
            return _cast(e, x, t, _elem(op.results[0]))
        case nn.WhereOp():
            return e.select(args[0], args[1], args[2])
        case _:
            pass
    y = args[1] if len(args) > 1 else x
    match op:
        case nn.AddOp():
            return e.add(arith.AddfOp(x, y) if isf else arith.AddiOp(x, y))
        case nn.SubOp():
            return e.add(arith.SubfOp(x, y) if isf else arith.SubiOp(x, y))
        case nn.MulOp():
            return e.add(arith.MulfOp(x, y) if isf else arith.MuliOp(x, y))
        case nn.DivOp():
            if isf:
                return e.add(arith.DivfOp(x, y))
            return e.add(clib.IntDivOp(x, y, False, _site(op, "Div")))
        case nn.PowOp():
            if isf:
                return e.add(math.PowFOp(x, y))
            return e.add(math.IPowIOp(x, y))
        case nn.MaxOp():
            return e.add(arith.MaximumfOp(x, y) if isf else arith.MaxSIOp(x, y))
        case nn.MinOp():
            return e.add(arith.MinimumfOp(x, y) if isf else arith.MinSIOp(x, y))
        case nn.ModOp():
            if isf:
                # fmod (C's, exact; x - trunc(x/y)*y is not, and is NaN for an infinite y)
                r = e.add(clib.FModOp(x, y))
                if op.fmod:
                    return r
                zero = _fconst(e, 0.0, t)
                fix = e.add(
                    arith.AndIOp(
                        e.add(arith.CmpfOp(r, zero, "une")),
                        e.add(
                            arith.XOrIOp(
                                e.add(arith.CmpfOp(r, zero, "olt")),
                                e.add(arith.CmpfOp(y, zero, "olt")),
                            )
                        ),
                    )
                )
                return e.select(fix, e.add(arith.AddfOp(r, y)), r)
            r = e.add(clib.IntDivOp(x, y, True, _site(op, "Mod")))
            if op.fmod or unsigned:
                return r
            zero = e.const(0, t)
            fix = e.add(
                arith.AndIOp(
                    e.add(arith.CmpiOp(r, zero, "ne")),
                    e.add(
                        arith.XOrIOp(
                            e.add(arith.CmpiOp(r, zero, "slt")), e.add(arith.CmpiOp(y, zero, "slt"))
                        )
                    ),
                )
            )
            return e.select(fix, e.add(arith.AddiOp(r, y)), r)
        case nn.PReluOp():
            _float_only(op, t)
            neg = e.add(arith.CmpfOp(x, _fconst(e, 0.0, t), "olt"))
            return e.select(neg, e.add(arith.MulfOp(x, y)), x)
        case nn.AndOp():
            return e.add(arith.AndIOp(x, y))
        case nn.OrOp():
            return e.add(arith.OrIOp(x, y))
        case nn.XorOp():
            return e.add(arith.XOrIOp(x, y))
        case nn.BitShiftOp():
            return _bitshift(e, x, y, op.direction == "LEFT")
        case nn.EqualOp() | nn.LessOp() | nn.LessEqualOp() | nn.GreaterOp() | nn.GreaterEqualOp():
            if isf:
                return e.add(arith.CmpfOp(x, y, _FCMP[type(op)]))
            if _is_i1(t) and not isinstance(op, nn.EqualOp):
                # On bools, false < true: compare as unsigned.
                return e.add(arith.CmpiOp(x, y, _ICMP[type(op)].replace("s", "u")))
            return e.add(arith.CmpiOp(x, y, _ICMP[type(op)]))
        case _:
            raise PassFailedException(f"lower-nn-to-loops: no scalar lowering for {op.name}")
