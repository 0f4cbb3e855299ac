"""A small IR builder for loop nests over memrefs (used by the C lowering).

``Emitter`` appends ops to one block. Index arithmetic takes ``int | SSAValue`` and folds
Python ints, so constant offsets never become ops. ``loop`` builds one ``scf.for`` (with
optional loop-carried values); ``nest`` builds a loop nest over a shape.

**Run-time sizes** (a symbolic module, docs/dynamic.md). A size may be a ``symbolic.Size``
(``seq``, ``12*seq``): ``Emitter.index`` turns it into ``arith`` ops on the function's
symbol arguments (:class:`Frame`), so loop bounds, offsets and library parameters take
sizes as they come. A memref with a symbolic dim (``memref<?x?x32xf32>``) carries no sizes
in its type, so the :class:`Frame` records its logical shape, and every load/store goes
through a flat rank-1 view (``memref<?xf32>``) at an index linearised from that shape: the
printer never needs the strides of a ``?`` type. Storage for a symbolic shape is allocated
at the symbols' upper bounds (rank 1). :func:`shape` reads a value's shape, Sizes included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from autofusion import symbolic
from autofusion.dialects import dtypes
from autofusion.dialects.attrs import C_PARALLEL, C_SIMD
from autofusion.dialects.base import type_dims
from autofusion.dialects.clib import ViewOp
from autofusion.dialects.shapes import numel
from autofusion.symbolic import Size, SymbolicError

Index = int | SSAValue
INDEX = IndexType()

# Loops whose nest covers at least this many elements get `#pragma omp parallel for`.
PARALLEL_MIN_WORK = 1 << 15

# An elementwise nest's innermost loop shorter than this is printed under `omp simd`: gcc
# unrolls such a loop completely and its straight-line vectoriser then leaves a select (the
# NaN-propagating Relu) scalar; per-channel x*s+t+Relu over 3x3 maps ran 4-5x slower than
# with the pragma (docs/c-backend.md, "Short inner loops").
SIMD_MAX_TRIP = 16


@dataclass
class Frame:
    """What the emitters of one function share: its symbol arguments, and the logical shape
    and flat view of each memref whose type has a symbolic (``?``) dim."""

    symbols: dict[str, SSAValue] = field(default_factory=dict)
    dims: dict[SSAValue, tuple[int, ...]] = field(default_factory=dict)
    flat: dict[SSAValue, SSAValue] = field(default_factory=dict)


_FRAME: ContextVar[Frame | None] = ContextVar("autofusion_lowering_frame", default=None)


@contextmanager
def frame(f: Frame) -> Iterator[Frame]:
    """Make ``f`` the frame :func:`shape` reads memref sizes from (one function's lowering)."""
    token = _FRAME.set(f)
    try:
        yield f
    finally:
        _FRAME.reset(token)


def parallel_worth(work: int, min_work: int = PARALLEL_MIN_WORK) -> bool:
    """Whether ``work`` elements (a run-time size at its upper bound) merit threads."""
    return symbolic.upper_bound(work) >= min_work


def is_symbolic(shape_: Sequence[int]) -> bool:
    return not symbolic.is_static(shape_)


def shape(v: SSAValue, f: Frame | None = None) -> tuple[int, ...]:
    """The shape of a tensor or memref value, a symbolic dim as a ``symbolic.Size``: from a
    tensor type's encoding, or for a memref with ``?`` dims from the frame ``f`` (default:
    the frame of the function being lowered)."""
    t = v.type
    if isinstance(t, TensorType):
        return type_dims(t)
    assert isinstance(t, MemRefType)
    f = f if f is not None else _FRAME.get()
    if f is not None and v in f.dims:
        return f.dims[v]
    dims = tuple(t.get_shape())
    if any(d < 0 for d in dims):
        raise SymbolicError(f"a memref {t} whose sizes the lowering did not record")
    return dims


def memref_type(elem: Attribute, shape_: Sequence[int]) -> MemRefType[Attribute]:
    """``memref<...>`` of ``shape_``, ``?`` where a size is symbolic."""
    return MemRefType(elem, [d if isinstance(d, int) else DYNAMIC_INDEX for d in shape_])


class Emitter:
    """Appends ops to ``block``."""

    def __init__(self, block: Block, frame_: Frame | None = None) -> None:
        self.block = block
        self.frame = frame_ if frame_ is not None else (_FRAME.get() or Frame())

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    # ---- constants ---------------------------------------------------------------------
    def index(self, v: Index) -> SSAValue:
        """``v`` as an ``index`` value: a number as a constant, a ``symbolic.Size`` computed
        from the symbol arguments."""
        if isinstance(v, SSAValue):
            return v
        if isinstance(v, Size):
            return self._size(v)
        return self.add(arith.ConstantOp(IntegerAttr(int(v), INDEX)))

    def _size(self, s: Size) -> SSAValue:
        acc: Index = 0
        for mono, coeff in s.terms:
            term: Index = 1
            for name in mono:
                sym = self.frame.symbols.get(name)
                if sym is None:
                    raise SymbolicError(f"size {s}: symbol {name} is not an argument here")
                term = self.imul(term, sym)
            if coeff < 0:
                acc = self.isub(acc, self.imul(term, -coeff))
            else:
                acc = self.iadd(acc, self.imul(term, coeff))
        return self.index(acc)

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

    def idiv(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a // b
        if isinstance(b, int) and b == 1:
            return a
        return self.add(arith.DivUIOp(self.index(a), self.index(b)))

    def irem(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a % b
        if isinstance(b, int) and b == 1:
            return 0
        return self.add(arith.RemUIOp(self.index(a), self.index(b)))

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

    def clamp(self, v: Index, lo: Index, hi: Index) -> Index:
        return self.imin(self.imax(v, lo), hi)

    # ---- memory ------------------------------------------------------------------------
    def _access(self, mem: SSAValue, idx: Sequence[Index]) -> tuple[SSAValue, list[SSAValue]]:
        """The memref and indices to load/store element ``idx`` of ``mem``: a symbolic
        buffer through its flat view at the linearised index."""
        flat = self.frame.flat.get(mem)
        if flat is None:
            return mem, [self.index(i) for i in idx]
        return flat, [self.index(linear(self, idx, self.frame.dims[mem]))]

    def load(self, mem: SSAValue, idx: Sequence[Index]) -> SSAValue:
        m, ix = self._access(mem, idx)
        return self.add(memref.LoadOp.get(m, ix))

    def store(self, value: SSAValue, mem: SSAValue, idx: Sequence[Index]) -> None:
        m, ix = self._access(mem, idx)
        self.add(memref.StoreOp.get(value, m, ix))

    def declare(self, mem: SSAValue, shape_: Sequence[int]) -> SSAValue:
        """Record the logical shape of ``mem`` (a buffer of a symbolic shape) and make its
        flat view here (which must dominate its uses: the function's top level)."""
        if not is_symbolic(shape_):
            return mem
        t = mem.type
        assert isinstance(t, MemRefType)
        self.frame.dims[mem] = tuple(shape_)
        if t.get_num_dims() == 1 and t.get_shape()[0] >= 0:
            self.frame.flat[mem] = mem  # storage at the upper bounds is flat already
        else:
            flat = MemRefType(t.element_type, [DYNAMIC_INDEX])
            self.frame.flat[mem] = self.add(ViewOp(mem, 0, flat))
        return mem

    def view(self, mem: SSAValue, dims: Sequence[int], offset_bytes: int = 0) -> SSAValue:
        t = mem.type
        assert isinstance(t, MemRefType)
        if shape(mem, self.frame) == tuple(dims) and offset_bytes == 0:
            return mem
        v = self.add(ViewOp(mem, offset_bytes, memref_type(t.element_type, dims)))
        return self.declare(v, dims)

    def alloc(self, elem: Attribute, shape: Sequence[int]) -> SSAValue:
        if is_symbolic(shape):  # flat storage for every run-time value: the upper bounds
            n = numel([symbolic.upper_bound(d) for d in shape])
            return self.declare(self.add(memref.AllocOp.get(elem, 64, [n])), shape)
        return self.add(memref.AllocOp.get(elem, 64, list(shape)))

    def copy(self, src: SSAValue, dst: SSAValue) -> None:
        """``dst = src`` (same shape): ``memref.copy``, or an element loop for a symbolic
        shape (whose byte count is a run-time value)."""
        if src not in self.frame.dims and dst not in self.frame.dims:
            self.add(memref.CopyOp(src, dst))
            return
        total = numel(shape(src, self.frame))
        fs, fd = self.frame.flat[src], self.frame.flat[dst]

        def body(e: Emitter, i: SSAValue, _: list[SSAValue]) -> None:
            e.add(memref.StoreOp.get(e.add(memref.LoadOp.get(fs, [i])), fd, [i]))

        self.loop(0, total, body)

    # ---- loops -------------------------------------------------------------------------
    def loop(
        self,
        lb: Index,
        ub: Index,
        body: Callable[[Emitter, SSAValue, list[SSAValue]], Sequence[SSAValue] | None],
        inits: Sequence[SSAValue] = (),
        step: int = 1,
        parallel: bool = False,
        simd: bool = False,
    ) -> list[SSAValue]:
        blk = Block(arg_types=[INDEX, *[v.type for v in inits]])
        inner = Emitter(blk, self.frame)
        yielded = body(inner, blk.args[0], list(blk.args[1:])) or []
        blk.add_op(scf.YieldOp(*yielded))
        op = scf.ForOp(self.index(lb), self.index(ub), self.index(step), list(inits), Region(blk))
        if parallel:
            op.attributes[C_PARALLEL] = UnitAttr()
        if simd:
            op.attributes[C_SIMD] = UnitAttr()
        self.block.add_op(op)
        return list(op.results)

    def nest(
        self,
        shape: Sequence[int],
        body: Callable[[Emitter, list[Index]], None],
        parallel: bool | None = None,
        simd_short: bool = False,
    ) -> None:
        """Loops over every index of ``shape`` (row-major; size-1 dims get no loop). With
        ``simd_short`` (independent iterations, e.g. an elementwise body) an innermost loop
        of a constant trip count below ``SIMD_MAX_TRIP`` under an outer loop is marked
        ``omp simd``."""
        total = 1
        for d in shape:
            total *= d
        if parallel is None:  # a run-time size is taken at its upper bound
            parallel = parallel_worth(total)
        dims = [i for i, d in enumerate(shape) if d != 1]
        if isinstance(total, int) and total == 0:
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

            n = shape[d]
            short = isinstance(n, int) and n < SIMD_MAX_TRIP
            simd = simd_short and short and k == len(dims) - 1 > 0
            # Parallelise the outermost loop only if it has enough iterations to share.
            e.loop(0, n, inner, parallel=par and parallel_worth(n, 2), simd=simd)

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
