"""A small IR builder for loop nests over static memrefs (used by the C lowering).

``Emitter`` appends ops to one block. Index arithmetic takes ``int | SSAValue`` and folds
Python ints, so constant offsets never become ops. ``loop`` builds one ``scf.for`` (with
optional loop-carried values); ``nest`` builds a loop nest over a static shape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from autofusion.dialects import dtypes
from autofusion.dialects.attrs import C_PARALLEL
from autofusion.dialects.clib import ViewOp

Index = int | SSAValue
INDEX = IndexType()

# Loops whose nest covers at least this many elements get `#pragma omp parallel for`.
PARALLEL_MIN_WORK = 1 << 15


class Emitter:
    """Appends ops to ``block``."""

    def __init__(self, block: Block) -> None:
        self.block = block

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    # ---- constants ---------------------------------------------------------------------
    def index(self, v: Index) -> SSAValue:
        if isinstance(v, SSAValue):
            return v
        return self.add(arith.ConstantOp(IntegerAttr(int(v), INDEX)))

    def const(self, value: float | int | bool, elem: Attribute) -> SSAValue:
        if dtypes.is_float(elem):
            return self.add(arith.ConstantOp(FloatAttr(float(value), elem)))  # type: ignore[arg-type]
        assert isinstance(elem, IntegerType | IndexType)
        if isinstance(elem, IntegerType) and elem.width.data == 1:
            return self.add(arith.ConstantOp(IntegerAttr(-1 if value else 0, elem)))
        if isinstance(elem, IntegerType) and elem.signedness.data == Signedness.UNSIGNED:
            # arith.constant is signless only: the same bits, bitcast (C converts the value)
            w = elem.width.data
            v = int(value) % (1 << w)
            v = v - (1 << w) if v >= 1 << (w - 1) else v
            c = self.add(arith.ConstantOp(IntegerAttr(v, IntegerType(w))))
            return self.add(arith.BitcastOp(c, elem))
        return self.add(arith.ConstantOp(IntegerAttr(int(value), elem)))

    # ---- index arithmetic (folds ints) -------------------------------------------------
    def iadd(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if isinstance(b, int) and b == 0:
            return a
        if isinstance(a, int) and a == 0:
            return b
        return self.add(arith.AddiOp(self.index(a), self.index(b)))

    def isub(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if isinstance(b, int) and b == 0:
            return a
        return self.add(arith.SubiOp(self.index(a), self.index(b)))

    def imul(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if isinstance(b, int) and b == 1:
            return a
        if isinstance(a, int) and a == 1:
            return b
        if (isinstance(a, int) and a == 0) or (isinstance(b, int) and b == 0):
            return 0
        return self.add(arith.MuliOp(self.index(a), self.index(b)))

    def idiv(self, a: Index, b: int) -> Index:
        if isinstance(a, int):
            return a // b
        if b == 1:
            return a
        return self.add(arith.DivUIOp(a, self.index(b)))

    def irem(self, a: Index, b: int) -> Index:
        if isinstance(a, int):
            return a % b
        if b == 1:
            return 0
        return self.add(arith.RemUIOp(a, self.index(b)))

    def imax(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return max(a, b)
        return self.add(arith.MaxSIOp(self.index(a), self.index(b)))

    def imin(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return min(a, b)
        return self.add(arith.MinSIOp(self.index(a), self.index(b)))

    def icmp(self, pred: str, a: Index, b: Index) -> SSAValue:
        return self.add(arith.CmpiOp(self.index(a), self.index(b), pred))

    def select(self, c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.SelectOp(c, a, b))

    def clamp(self, v: Index, lo: int, hi: int) -> Index:
        return self.imin(self.imax(v, lo), hi)

    # ---- memory ------------------------------------------------------------------------
    def load(self, mem: SSAValue, idx: Sequence[Index]) -> SSAValue:
        return self.add(memref.LoadOp.get(mem, [self.index(i) for i in idx]))

    def store(self, value: SSAValue, mem: SSAValue, idx: Sequence[Index]) -> None:
        self.add(memref.StoreOp.get(value, mem, [self.index(i) for i in idx]))

    def view(self, mem: SSAValue, shape: Sequence[int], offset_bytes: int = 0) -> SSAValue:
        t = mem.type
        assert isinstance(t, MemRefType)
        if tuple(t.get_shape()) == tuple(shape) and offset_bytes == 0:
            return mem
        return self.add(ViewOp(mem, offset_bytes, MemRefType(t.element_type, list(shape))))

    def alloc(self, elem: Attribute, shape: Sequence[int]) -> SSAValue:
        return self.add(memref.AllocOp.get(elem, 64, list(shape)))

    # ---- loops -------------------------------------------------------------------------
    def loop(
        self,
        lb: Index,
        ub: Index,
        body: Callable[[Emitter, SSAValue, list[SSAValue]], Sequence[SSAValue] | None],
        inits: Sequence[SSAValue] = (),
        step: int = 1,
        parallel: bool = False,
    ) -> list[SSAValue]:
        blk = Block(arg_types=[INDEX, *[v.type for v in inits]])
        inner = Emitter(blk)
        yielded = body(inner, blk.args[0], list(blk.args[1:])) or []
        blk.add_op(scf.YieldOp(*yielded))
        op = scf.ForOp(self.index(lb), self.index(ub), self.index(step), list(inits), Region(blk))
        if parallel:
            op.attributes[C_PARALLEL] = UnitAttr()
        self.block.add_op(op)
        return list(op.results)

    def nest(
        self,
        shape: Sequence[int],
        body: Callable[[Emitter, list[Index]], None],
        parallel: bool | None = None,
    ) -> None:
        """Loops over every index of ``shape`` (row-major; size-1 dims get no loop)."""
        total = 1
        for d in shape:
            total *= d
        if parallel is None:
            parallel = total >= PARALLEL_MIN_WORK
        dims = [i for i, d in enumerate(shape) if d != 1]
        if total == 0:
            return

        def rec(e: Emitter, k: int, idx: list[Index], par: bool) -> None:
            if k == len(dims):
                body(e, list(idx))
                return
            d = dims[k]

            def inner(e2: Emitter, iv: SSAValue, _: list[SSAValue]) -> None:
                idx[d] = iv
                rec(e2, k + 1, idx, False)
                return None

            # Parallelise the outermost loop only if it has enough iterations to share.
            e.loop(0, shape[d], inner, parallel=par and shape[d] >= 2)

        rec(self, 0, [0] * len(shape), parallel)


def strides_of(shape: Sequence[int]) -> list[int]:
    out = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        out[i] = out[i + 1] * shape[i + 1]
    return out


def unravel(e: Emitter, flat: Index, shape: Sequence[int]) -> list[Index]:
    st = strides_of(shape)
    out: list[Index] = []
    for i, d in enumerate(shape):
        if d == 1:
            out.append(0)
            continue
        q = e.idiv(flat, st[i])
        out.append(e.irem(q, d) if i > 0 else q)
    return out


def linear(e: Emitter, idx: Sequence[Index], shape: Sequence[int]) -> Index:
    st = strides_of(shape)
    acc: Index = 0
    for i, s in zip(idx, st):
        acc = e.iadd(acc, e.imul(i, s))
    return acc


class Lowering(Protocol):
    """What the per-op lowerings (``ops.py``) use of the function being lowered
    (``lower_nn_to_loops.FunctionLowering``): the emitter, the buffer of a tensor value, and
    the list of buffers to free at the end. A protocol, so ``ops.py`` needs no import of
    the pass module that calls it."""

    e: Emitter
    allocs: list[SSAValue]
    #: convs may take the blocked direct kernel (``clib.conv_algo(..., blocked=True)``)
    blocked_convs: bool

    def buffer_of(self, v: SSAValue) -> SSAValue: ...
