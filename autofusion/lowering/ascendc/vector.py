"""Elementwise nn ops -> Ascend C vector calls on UB tiles (the compute stage of a tile loop).

``VectorBuilder`` walks the nn ops of a kernel body in order and appends ``ascendc`` vector
ops to the compute block. Every value of the iteration shape lives in a UB tile: a dequeued
input, a scratch ``TBuf`` tile, or (for kernel results) a tile allocated from an output
queue. Scalars that are compile-time constants stay Python floats and become the immediate
of ``Adds``/``Muls``/``Maxs``/``Mins``; small broadcast operands are loaded once into UB and
expanded per tile (``ascendc.broadcast``).

Ops with no single Ascend C vector call are composed from documented basic calls:
sigmoid = 1/(1+exp(-x)); tanh = 2/(1+exp(-2x)) - 1; erf by af_erff's rational function
(absolute error < 3.5e-7, relative < 4e-7); GELU from erf or tanh as its ``approximate`` says.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import f32
from xdsl.ir import Block, Operation, SSAValue

from autofusion.dialects import ascendc as ac
from autofusion.dialects import nn


def bcast_strides(shape: tuple[int, ...], out: tuple[int, ...]) -> tuple[int, ...] | None:
    """Row-major strides of ``shape`` aligned to ``out`` (0 on broadcast dims), or None."""
    if len(shape) > len(out):
        return None
    padded = (1,) * (len(out) - len(shape)) + shape
    strides = [0] * len(out)
    acc = 1
    for i in range(len(out) - 1, -1, -1):
        if padded[i] == out[i]:
            strides[i] = acc if out[i] != 1 else 0
        elif padded[i] != 1:
            return None
        acc *= padded[i]
    return tuple(strides)


class Unsupported(Exception):
    """This kernel (or op) has no Ascend C lowering; the message says why."""


@dataclass
class Scalar:
    value: float


@dataclass
class Tile:
    """A value held in a UB tile; ``temp`` is the scratch slot index (None: not a temp)."""

    local: SSAValue
    temp: int | None = None


@dataclass
class Bcast:
    """A loaded broadcast operand; expanded into a scratch tile on first use per tile."""

    local: SSAValue
    strides: tuple[int, ...]
    expanded: Tile | None = None
    offset: int = 0


@dataclass
class Window:
    """A pooling of a kernel input (GM); computed into a scratch tile on first use."""

    op: Operation
    src: SSAValue
    expanded: Tile | None = None


Val = Scalar | Tile | Bcast | Window

# erf(x) ~ a P(a^2) / Q(a^2), a = x clamped to [-ERF_CLAMP, ERF_CLAMP], the result clamped to
# [-1, 1]: the same function, with the same coefficients (lowest degree first), as af_erff in
# the C runtime (autofusion/runtime/include/afrt.h; a test checks they agree; fitted by
# benchmarks/fit_erf.py). It is composed here from Ascend C vector calls (Mins, Maxs, Mul,
# Muls, Adds, Div) because Ascend C kernels cannot include a host C header of scalar functions.
ERF_CLAMP = 3.92
ERF_P = (1.12837902, 1.92759485e-01, 5.30598761e-02, 3.86812830e-03, 2.87474387e-04, 2.03476506e-06)
ERF_Q = (1.0, 5.04160314e-01, 1.15082727e-01, 1.51719020e-02, 1.18806563e-03, 3.80706872e-05)


@dataclass
class VectorBuilder:
    """Emits vector ops into ``block``; scratch tiles come from a pool of TBufs."""

    block: Block
    out_shape: tuple[int, ...]
    temp_bufs: list[SSAValue] = field(default_factory=list)
    new_temp_buf: Callable[[], SSAValue] | None = None
    free: list[int] = field(default_factory=list)

    # -- scratch tiles -------------------------------------------------------------------
    def temp(self) -> Tile:
        if self.free:
            idx = self.free.pop()
        else:
            assert self.new_temp_buf is not None
            self.temp_bufs.append(self.new_temp_buf())
            idx = len(self.temp_bufs) - 1
        get = ac.TBufGetOp(self.temp_bufs[idx], f32)
        self.block.add_op(get)
        return Tile(get.result, idx)

    def release(self, v: Val) -> None:
        if isinstance(v, Tile) and v.temp is not None and v.temp not in self.free:
            self.free.append(v.temp)
        if isinstance(v, Bcast | Window) and v.expanded is not None:
            self.release(v.expanded)
            v.expanded = None

    def emit(self, op: Operation) -> None:
        self.block.add_op(op)

    def tile_of(self, v: Val) -> Tile:
        """A UB tile holding ``v`` over the whole tile (expanding broadcasts/scalars)."""
        if isinstance(v, Tile):
            return v
        if isinstance(v, Window):
            if v.expanded is None:
                t = self.temp()
                self.emit(pool_window(v.op, t.local, v.src))
                v.expanded = t
            return v.expanded
        if isinstance(v, Bcast):
            if v.expanded is None:
                t = self.temp()
                self.emit(ac.BroadcastOp(t.local, v.local, self.out_shape, v.strides, v.offset))
                v.expanded = t
            return v.expanded
        t = self.temp()
        self.emit(ac.DuplicateOp(t.local, v.value))
        return t

    # -- small emit helpers --------------------------------------------------------------
    def b(self, fn: str, d: Tile, x: Tile, y: Tile) -> None:
        self.emit(ac.VecBinaryOp(fn, d.local, x.local, y.local))

    def u(self, fn: str, d: Tile, x: Tile) -> None:
        self.emit(ac.VecUnaryOp(fn, d.local, x.local))

    def s(self, fn: str, d: Tile, x: Tile, c: float) -> None:
        self.emit(ac.VecScalarOp(fn, d.local, x.local, c))

    # -- the op table --------------------------------------------------------------------
    def lower(self, op: Operation, args: list[Val], dst: Callable[[], Tile]) -> Val:
        """Lower one nn op; ``dst()`` gives the tile its result is written to."""
        if all(isinstance(a, Scalar) for a in args) and args:
            return Scalar(_fold(op, [a.value for a in args]))  # type: ignore[union-attr]
        if isinstance(op, nn.ELEMENTWISE_BINARY) and not isinstance(op, nn.PReluOp):
            return self._binary(op, args[0], args[1], dst)
        x = self.tile_of(args[0])
        if isinstance(op, nn.PReluOp):
            d = dst()
            slope = self.tile_of(args[1])
            t = self.temp()
            self.s("Mins", t, x, 0.0)
            self.b("Mul", t, t, slope)
            self.s("Maxs", d, x, 0.0)
            self.b("Add", d, d, t)
            self.release(t)
            return d
        d = dst()
        simple = {
            nn.ReluOp: "Relu",
            nn.ExpOp: "Exp",
            nn.LogOp: "Ln",
            nn.SqrtOp: "Sqrt",
            nn.AbsOp: "Abs",
            nn.ReciprocalOp: "Reciprocal",
        }
        for cls, fn in simple.items():
            if isinstance(op, cls):
                self.u(fn, d, x)
                return d
        if isinstance(op, nn.NegOp):
            self.s("Muls", d, x, -1.0)
        elif isinstance(op, nn.LeakyReluOp):
            self.s("LeakyRelu", d, x, op.alpha)
        elif isinstance(op, nn.ClipOp):
            lo, hi = op.min, op.max
            src = x
            if math.isfinite(lo):
                self.s("Maxs", d, src, lo)
                src = d
            if math.isfinite(hi):
                self.s("Mins", d, src, hi)
                src = d
            if src is x:
                self.s("Muls", d, x, 1.0)
        elif isinstance(op, nn.SigmoidOp):
            self._sigmoid(d, x)
        elif isinstance(op, nn.TanhOp):
            self._tanh(d, x)
        elif isinstance(op, nn.HardSigmoidOp):
            self._hard_sigmoid(d, x, op.alpha, op.beta)
        elif isinstance(op, nn.HardSwishOp):
            self._hard_sigmoid(d, x, 1.0 / 6.0, 0.5)
            self.b("Mul", d, d, x)
        elif isinstance(op, nn.ErfOp):
            self._erf(d, x)
        elif isinstance(op, nn.GeluOp):
            self._gelu(d, x, op.approximate)
        else:
            raise Unsupported(f"{op.name} has no Ascend C vector lowering")
        return d

    def _binary(self, op: Operation, a: Val, b: Val, dst: Callable[[], Tile]) -> Val:
        name = op.name.removeprefix("nn.")
        scalar_fn = {"add": "Adds", "mul": "Muls", "max": "Maxs", "min": "Mins"}
        vec_fn = {
            "add": "Add",
            "sub": "Sub",
            "mul": "Mul",
            "div": "Div",
            "max": "Max",
            "min": "Min",
        }
        if name == "pow":
            return self._pow(a, b, dst)
        if name not in vec_fn:
            raise Unsupported(f"{op.name} has no Ascend C vector lowering")
        if isinstance(b, Scalar) and not isinstance(a, Scalar):
            x = self.tile_of(a)
            d = dst()
            if name in scalar_fn:
                self.s(scalar_fn[name], d, x, b.value)
            elif name == "sub":
                self.s("Adds", d, x, -b.value)
            else:  # div: x * (1/c), rounded once more than x / c
                self.s("Muls", d, x, float(np.float32(1.0) / np.float32(b.value)))
            return d
        if isinstance(a, Scalar) and not isinstance(b, Scalar):
            y = self.tile_of(b)
            d = dst()
            if name in scalar_fn:
                self.s(scalar_fn[name], d, y, a.value)
            elif name == "sub":
                self.s("Muls", d, y, -1.0)
                self.s("Adds", d, d, a.value)
            else:
                t = self.temp()
                self.emit(ac.DuplicateOp(t.local, a.value))
                self.b("Div", d, t, y)
                self.release(t)
            return d
        x, y = self.tile_of(a), self.tile_of(b)
        d = dst()
        self.b(vec_fn[name], d, x, y)
        return d

    def _pow(self, a: Val, b: Val, dst: Callable[[], Tile]) -> Val:
        if not isinstance(b, Scalar):
            raise Unsupported("nn.pow with a non-constant exponent has no Ascend C lowering")
        x = self.tile_of(a)
        e = b.value
        d = dst()
        if e == 2.0:
            self.b("Mul", d, x, x)
        elif e == 3.0:
            self.b("Mul", d, x, x)
            self.b("Mul", d, d, x)
        elif e == 0.5:
            self.u("Sqrt", d, x)
        elif e == 1.0:
            self.s("Muls", d, x, 1.0)
        elif e == -1.0:
            self.u("Reciprocal", d, x)
        else:
            raise Unsupported(f"nn.pow with exponent {e} has no Ascend C lowering")
        return d

    def _sigmoid(self, d: Tile, x: Tile) -> None:
        self.s("Muls", d, x, -1.0)
        self.u("Exp", d, d)
        self.s("Adds", d, d, 1.0)
        self.u("Reciprocal", d, d)

    def _tanh(self, d: Tile, x: Tile) -> None:
        self.s("Muls", d, x, -2.0)
        self.u("Exp", d, d)
        self.s("Adds", d, d, 1.0)
        self.u("Reciprocal", d, d)
        self.s("Muls", d, d, 2.0)
        self.s("Adds", d, d, -1.0)

    def _hard_sigmoid(self, d: Tile, x: Tile, alpha: float, beta: float) -> None:
        self.s("Muls", d, x, alpha)
        self.s("Adds", d, d, beta)
        self.s("Maxs", d, d, 0.0)
        self.s("Mins", d, d, 1.0)

    def _erf(self, d: Tile, x: Tile) -> None:
        a = self.temp()
        z = self.temp()
        self.s("Mins", a, x, ERF_CLAMP)
        self.s("Maxs", a, a, -ERF_CLAMP)
        self.b("Mul", z, a, a)
        self._horner(d, z, ERF_P)
        self.b("Mul", d, d, a)  # a P(z); x (maybe d itself) is not read again
        self._horner(a, z, ERF_Q)
        self.b("Div", d, d, a)
        self.s("Mins", d, d, 1.0)
        self.s("Maxs", d, d, -1.0)
        self.release(a)
        self.release(z)

    def _horner(self, d: Tile, z: Tile, coeffs: tuple[float, ...]) -> None:
        """d = sum(coeffs[i] * z**i), by Horner's rule from the highest degree."""
        self.s("Muls", d, z, coeffs[-1])
        for c in coeffs[-2:0:-1]:
            self.s("Adds", d, d, c)
            self.b("Mul", d, d, z)
        self.s("Adds", d, d, coeffs[0])

    def _gelu(self, d: Tile, x: Tile, approximate: str) -> None:
        if approximate == "tanh":
            self.b("Mul", d, x, x)
            self.b("Mul", d, d, x)
            self.s("Muls", d, d, 0.044715)
            self.b("Add", d, d, x)
            self.s("Muls", d, d, math.sqrt(2.0 / math.pi))
            self._tanh(d, d)
        else:
            t = self.temp()
            self.s("Muls", t, x, 1.0 / math.sqrt(2.0))
            self._erf(d, t)
            self.release(t)
        self.s("Adds", d, d, 1.0)
        self.b("Mul", d, d, x)
        self.s("Muls", d, d, 0.5)


_FOLD: dict[str, Callable[..., np.floating]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
    "pow": np.power,
    "neg": np.negative,
    "sqrt": np.sqrt,
    "exp": np.exp,
    "log": np.log,
    "abs": np.abs,
    "reciprocal": np.reciprocal,
}


def _fold(op: Operation, vals: list[float]) -> float:
    """Constant-fold an elementwise op on float32 scalars (numpy float32 arithmetic)."""
    fn = _FOLD.get(op.name.removeprefix("nn."))
    if fn is None:
        raise Unsupported(f"cannot fold {op.name} on constants")
    with np.errstate(all="ignore"):
        return float(fn(*[np.float32(v) for v in vals]))


def pool_window(op: Operation, dst: SSAValue, src: SSAValue) -> ac.PoolWindowOp:
    from xdsl.dialects.builtin import BoolAttr, StringAttr

    from autofusion.dialects.base import i64_array, shape_of

    assert isinstance(op, nn.PoolOp)
    xs = shape_of(op.operands[0])
    if len(xs) != 4:
        raise Unsupported(f"{op.name} on rank {len(xs)} (only 2-d pooling is lowered)")
    include = isinstance(op, nn.AvgPoolOp) and op.count_include_pad
    return ac.PoolWindowOp.build(
        operands=[dst, src],
        properties={
            "kind": StringAttr("max" if isinstance(op, nn.MaxPoolOp) else "avg"),
            "input_shape": i64_array(xs),
            "out_hw": i64_array(shape_of(op.results[0])[2:]),
            "kernel": op.kernel_attr,
            "strides": op.strides_attr,
            "pads": op.pads_attr,
            "dilations": op.dilations_attr,
            "count_include_pad": BoolAttr.from_bool(include),
        },
    )


VECTOR_OPS: tuple[type[Operation], ...] = (
    nn.AddOp,
    nn.SubOp,
    nn.MulOp,
    nn.DivOp,
    nn.MaxOp,
    nn.MinOp,
    nn.PowOp,
    nn.PReluOp,
    nn.ReluOp,
    nn.ExpOp,
    nn.LogOp,
    nn.SqrtOp,
    nn.AbsOp,
    nn.ReciprocalOp,
    nn.NegOp,
    nn.LeakyReluOp,
    nn.ClipOp,
    nn.SigmoidOp,
    nn.TanhOp,
    nn.HardSigmoidOp,
    nn.HardSwishOp,
    nn.ErfOp,
    nn.GeluOp,
)
