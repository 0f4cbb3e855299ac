"""Symbolic sizes: a dimension that depends on run-time symbols (issue 12, item 2).

A :class:`Size` is a polynomial with integer coefficients over symbol names, such as ``seq``,
``12*seq`` or ``batch*seq``: what exporters' shapes are made of. Arithmetic with ints and
other sizes (``+``, ``-``, ``*``, exact ``//`` and ``%``) gives sizes; a result without
symbols is a plain ``int``, so a ``Dim`` is ``int | Size``.

The rule that keeps symbolic compilation sound: **a size never turns into a number by
accident.** ``int()``, ``operator.index`` (``range``, slicing, numpy shapes) and ``bool``
raise :class:`SymbolicError`, so code that has not been taught about symbols fails loudly
at the spot instead of specialising to some value. Equality is structural (``seq == seq``,
``2*seq != seq + seq`` is impossible since both are the same polynomial); ordering
(``<``, ``<=``, ...) is decided from the symbols' ranges when the range settles it for every
value (``seq >= 1`` always; ``seq < 600`` when ``seq`` is in ``1..512``) and raises otherwise.

Text form (IR types, reports): terms joined by ``+``/``-``, each ``COEF*sym*sym``, sorted, e.g.
``768*seq``, ``batch*seq``, ``seq*seq + 1``; :func:`parse` reads it back. :func:`to_c` prints
a C expression over variables named by a callback.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeAlias, Union, cast

Monomial = tuple[str, ...]  # sorted symbol names, repeated for powers; () is the constant

#: A symbol's range when none is known: every size is at least 1.
UNBOUNDED: tuple[int, int | None] = (1, None)


#: The declared ranges of the symbols in scope: sizes read back from IR types (which hold the
#: text form only) take their ranges from here. Set by :func:`scope` (the importer, passes).
_SCOPE: ContextVar[Mapping[str, tuple[int, int | None]]] = ContextVar("symbol_ranges", default={})


@contextmanager
def scope(ranges: Mapping[str, tuple[int, int | None]]) -> Iterator[None]:
    """Within the block, sizes parsed from text know these symbols' ranges."""
    token = _SCOPE.set({**_SCOPE.get(), **ranges})
    try:
        yield
    finally:
        _SCOPE.reset(token)


def scope_ranges() -> Mapping[str, tuple[int, int | None]]:
    """The ranges :func:`scope` has set (empty outside any scope): a cache of values
    derived from ranges (upper bounds) keys on it."""
    return _SCOPE.get()


class SymbolicError(ValueError):
    """A symbolic size was used where a number is needed, or an operation on sizes has no
    exact symbolic result (a division that does not divide). Compiler code that is not
    symbol-aware meets this; it is turned into a user-facing error where it surfaces."""


class Size:
    """A polynomial size (see the module doc). Immutable and hashable."""

    __slots__ = ("_hash", "ranges", "terms")

    terms: tuple[tuple[Monomial, int], ...]  # sorted, no zero coefficients, >= 1 symbol term
    ranges: tuple[tuple[str, int, int | None], ...]  # known ranges of the symbols, sorted

    def __init__(
        self,
        terms: Mapping[Monomial, int],
        ranges: Mapping[str, tuple[int, int | None]] | None = None,
    ) -> None:
        self.terms = tuple(sorted((m, c) for m, c in terms.items() if c))
        syms = {s for m, _ in self.terms for s in m}
        rng = dict(ranges or {})
        self.ranges = tuple(sorted((s, *rng[s]) for s in syms if s in rng))
        self._hash = hash(self.terms)

    # ---- construction --------------------------------------------------------------------
    @staticmethod
    def symbol(name: str, lo: int = 1, hi: int | None = None) -> Size:
        """The symbol ``name`` in ``lo..hi`` (``None``: unbounded)."""
        if not name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"symbol name {name!r} is not an identifier")
        return Size({(name,): 1}, {name: (lo, hi)})

    @staticmethod
    def make(terms: Mapping[Monomial, int], ranges: Mapping[str, tuple[int, int | None]]) -> Dim:
        """``terms`` as a :data:`Dim`: an ``int`` when no symbol term is left."""
        if all(m == () or c == 0 for m, c in terms.items()):
            return int(terms.get((), 0))
        return Size(terms, ranges)  # type: ignore[return-value]  # a Dim (see Dim)

    # ---- inspection ----------------------------------------------------------------------
    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(sorted({s for m, _ in self.terms for s in m}))

    def range_of(self, sym: str) -> tuple[int, int | None]:
        for s, lo, hi in self.ranges:
            if s == sym:
                return lo, hi
        return UNBOUNDED

    def with_ranges(self, ranges: Mapping[str, tuple[int, int | None]]) -> Size:
        own = {s: (lo, hi) for s, lo, hi in self.ranges}
        own.update({s: r for s, r in ranges.items() if s in self.symbols})
        return Size(dict(self.terms), own)

    def bounds(self) -> tuple[int, int | None]:
        """The least and greatest value over the symbols' ranges (``None``: unbounded),
        by interval arithmetic on each term (exact for the non-negative polynomials shapes
        are made of; a safe enclosure otherwise)."""
        lo_sum, hi_sum = 0, 0
        hi_known = True
        for m, c in self.terms:
            t_lo, t_hi = 1, 1
            t_hi_known = True
            for s in m:
                a, b = self.range_of(s)
                t_lo *= a
                if b is None:
                    t_hi_known = False
                else:
                    t_hi *= b
            if c > 0:
                lo_sum += c * t_lo
                if t_hi_known:
                    hi_sum += c * t_hi
                else:
                    hi_known = False
            else:
                if t_hi_known:
                    lo_sum += c * t_hi
                else:
                    lo_sum = -(1 << 62)  # unbounded below; never settles a comparison
                hi_sum += c * t_lo
        return lo_sum, (hi_sum if hi_known else None)

    def evaluate(self, values: Mapping[str, int]) -> int:
        """The value for concrete symbol values (every symbol must be given)."""
        total = 0
        for m, c in self.terms:
            t = c
            for s in m:
                if s not in values:
                    raise SymbolicError(f"no value for symbol '{s}' in {self}")
                t *= int(values[s])
            total += t
        return total

    # ---- arithmetic ----------------------------------------------------------------------
    def _merged(self, other: Size | int) -> dict[str, tuple[int, int | None]]:
        out = {s: (lo, hi) for s, lo, hi in self.ranges}
        if isinstance(other, Size):
            out.update({s: (lo, hi) for s, lo, hi in other.ranges})
        return out

    def __add__(self, other: object) -> Dim:
        o = _coerce(other)
        if o is None:
            return NotImplemented
        terms = dict(self.terms)
        for m, c in _terms(o):
            terms[m] = terms.get(m, 0) + c
        return Size.make(terms, self._merged(o))

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return Size.make({m: -c for m, c in self.terms}, self._merged(0))

    def __sub__(self, other: object) -> Dim:
        o = _coerce(other)
        if o is None:
            return NotImplemented
        return self + (-o)

    def __rsub__(self, other: object) -> Dim:
        o = _coerce(other)
        if o is None:
            return NotImplemented
        return -self + o

    def __mul__(self, other: object) -> Dim:
        o = _coerce(other)
        if o is None:
            return NotImplemented
        terms: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in _terms(o):
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return Size.make(terms, self._merged(o))

    __rmul__ = __mul__

    def __floordiv__(self, other: object) -> Dim:
        o = _coerce(other)
        return NotImplemented if o is None else _quotient(self, o)

    def __rfloordiv__(self, other: object) -> Dim:
        o = _coerce(other)
        return NotImplemented if o is None else _quotient(o, self)

    def __mod__(self, other: object) -> int:
        o = _coerce(other)
        if o is None:
            return NotImplemented
        if exact_div(self, o) is None:
            raise SymbolicError(f"{self} % {o} depends on the symbols' values")
        return 0

    # ---- comparison ----------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Size):
            return self.terms == other.terms
        return False  # a Size always has a symbol term; an int has none

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return self._hash

    def _sign_of(self, other: object) -> tuple[int, int | None]:
        o = _coerce(other)
        if o is None:
            raise TypeError(f"cannot compare a symbolic size with {type(other).__name__}")
        d = self - o
        if isinstance(d, int):
            return d, d
        return d.bounds()

    def _decide(
        self, other: object, op: str, true_if: Callable[[int, int | None], bool | None]
    ) -> bool:
        lo, hi = self._sign_of(other)
        r = true_if(lo, hi)
        if r is None:
            known = ", ".join(
                f"{s} in {a}..{'inf' if b is None else b}" for s, a, b in self._all_ranges(other)
            )
            raise SymbolicError(f"'{self} {op} {other}' depends on the symbols' values ({known})")
        return r

    def _all_ranges(self, other: object) -> list[tuple[str, int, int | None]]:
        syms = set(self.symbols) | (set(other.symbols) if isinstance(other, Size) else set())
        merged = self._merged(other if isinstance(other, Size) else 0)
        return [(s, *merged.get(s, UNBOUNDED)) for s in sorted(syms)]

    def __lt__(self, other: object) -> bool:
        return self._decide(other, "<", _lt)

    def __le__(self, other: object) -> bool:
        return self._decide(other, "<=", _le)

    def __gt__(self, other: object) -> bool:
        return self._decide(other, ">", lambda lo, hi: _lt(-hi if hi is not None else None, -lo))

    def __ge__(self, other: object) -> bool:
        return self._decide(other, ">=", lambda lo, hi: _le(-hi if hi is not None else None, -lo))

    # ---- no accidental numbers -----------------------------------------------------------
    def __bool__(self) -> bool:
        raise SymbolicError(f"the truth of symbolic size {self} is not known at compile time")

    def __index__(self) -> int:
        raise SymbolicError(f"symbolic size {self} used where a concrete integer is needed")

    __int__ = __index__

    # ---- text ----------------------------------------------------------------------------
    def __str__(self) -> str:
        return _text(self.terms)

    def __repr__(self) -> str:
        # the text itself: shapes in messages print as tuples, (3, n) not (3, Size(n))
        return str(self)


if TYPE_CHECKING:
    #: A dimension: an ``int`` or a :class:`Size`. For the type checker it is ``int``: a
    #: ``Size`` implements the part of int's protocol shapes use (arithmetic, equality,
    #: ordering), and the code that is not symbol-aware is typed for ints anyway; what keeps
    #: that sound at run time is that a ``Size`` refuses ``int()``, ``index`` and ``bool``.
    Dim: TypeAlias = int
else:
    Dim = Union[int, Size]  # noqa: UP007


def symbol(name: str, lo: int = 1, hi: int | None = None) -> Dim:
    """The symbol ``name`` with the range ``lo..hi`` as a :data:`Dim`."""
    return Size.symbol(name, lo, hi)  # type: ignore[return-value]


def _lt(lo: int | None, hi: int | None) -> bool | None:
    """Whether ``d < 0`` for every d in [lo, hi]: True if hi < 0, False if lo >= 0."""
    if hi is not None and hi < 0:
        return True
    if lo is not None and lo >= 0:
        return False
    return None


def _le(lo: int | None, hi: int | None) -> bool | None:
    if hi is not None and hi <= 0:
        return True
    if lo is not None and lo > 0:
        return False
    return None


def _coerce(v: object) -> Size | int | None:
    if isinstance(v, Size):
        return v
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    try:  # numpy integers
        import numpy as np

        if isinstance(v, np.integer):
            return int(v)
    except ImportError:  # pragma: no cover
        pass
    return None


def _terms(v: Size | int) -> tuple[tuple[Monomial, int], ...]:
    if isinstance(v, Size):
        return v.terms
    return (((), v),) if v else ()


def _quotient(a: Size | int, b: Size | int) -> Dim:
    q = exact_div(a, b)
    if q is None:
        raise SymbolicError(f"{a} is not a multiple of {b}: no exact symbolic quotient")
    return q


def exact_div(a: Size | int, b: Size | int) -> Dim | None:
    """``a / b`` when ``b`` divides ``a`` exactly as polynomials (``b`` a monomial times an
    integer, as shapes have), else None. ``b`` must not be zero."""
    if isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("symbolic size divided by zero")
        if isinstance(a, int):
            return a // b if a % b == 0 else None
        if any(c % b for _, c in a.terms):
            return None
        return Size.make({m: c // b for m, c in a.terms}, dict(_ranges(a)))
    if len(b.terms) != 1:
        return None
    ((mb, cb),) = b.terms
    out: dict[Monomial, int] = {}
    for m, c in _terms(a):
        rest = list(m)
        for s in mb:
            if s not in rest:
                return None
            rest.remove(s)
        if c % cb:
            return None
        out[tuple(rest)] = c // cb
    ranges = dict(_ranges(a))
    ranges.update(_ranges(b))
    return Size.make(out, ranges)


def _ranges(v: Size | int) -> Iterable[tuple[str, tuple[int, int | None]]]:
    if isinstance(v, Size):
        return [(s, (lo, hi)) for s, lo, hi in v.ranges]
    return []


def _text(terms: Sequence[tuple[Monomial, int]]) -> str:
    # the highest degree first, constants last: "seq*seq + 2*seq + 1"
    order = sorted(terms, key=lambda t: (-len(t[0]), t[0]))
    parts: list[str] = []
    for i, (m, c) in enumerate(order):
        neg = c < 0
        mag = -c if neg else c
        body = "*".join(m)
        if not m:
            text = str(mag)
        elif mag == 1:
            text = body
        else:
            text = f"{mag}*{body}"
        if i == 0:
            parts.append(f"-{text}" if neg else text)
        else:
            parts.append(f" - {text}" if neg else f" + {text}")
    return "".join(parts) or "0"


_TERM = re.compile(
    r"\s*([+-])?\s*((?:\d+|[A-Za-z_][A-Za-z0-9_]*)(?:\s*\*\s*(?:\d+|[A-Za-z_][A-Za-z0-9_]*))*)\s*"
)


def parse(text: str, ranges: Mapping[str, tuple[int, int | None]] | None = None) -> Dim:
    """A size from its text form (``"768*seq"``, ``"batch*seq + 1"``, ``"12"``)."""
    pos = 0
    terms: dict[Monomial, int] = {}
    first = True
    s = text.strip()
    if not s:
        raise ValueError("empty size expression")
    while pos < len(s):
        m = _TERM.match(s, pos)
        if not m or m.end() == pos or (m.group(1) is None and not first):
            raise ValueError(f"malformed size expression {text!r}")
        sign = -1 if m.group(1) == "-" else 1
        coef = sign
        syms: list[str] = []
        for f in re.split(r"\s*\*\s*", m.group(2)):
            if f.isdigit():
                coef *= int(f)
            else:
                syms.append(f)
        mono = tuple(sorted(syms))
        terms[mono] = terms.get(mono, 0) + coef
        pos = m.end()
        first = False
    rng = dict(_SCOPE.get())
    rng.update(ranges or {})
    return Size.make(terms, rng)


def to_c(d: Dim, var: Callable[[str], str]) -> str:
    """``d`` as a C ``int64_t`` expression, each symbol printed by ``var(name)``."""
    if isinstance(d, int):
        return f"INT64_C({d})" if abs(d) > (1 << 31) - 1 else str(d)
    order = sorted(d.terms, key=lambda t: (-len(t[0]), t[0]))
    parts: list[str] = []
    for i, (m, c) in enumerate(order):
        factors = [var(s) for s in m]
        mag = -c if c < 0 else c
        if mag != 1 or not factors:
            factors.insert(0, f"(int64_t){mag}")
        text = " * ".join(factors)
        if i == 0:
            parts.append(f"-{text}" if c < 0 else text)
        else:
            parts.append(f" - {text}" if c < 0 else f" + {text}")
    return "(" + "".join(parts) + ")"


def as_dim(v: object) -> int:
    """An element of a shape vector as a :data:`Dim`: a ``Size`` as is, anything else
    through ``int()`` (numpy integers)."""
    return v if isinstance(v, Size) else int(v)  # type: ignore[arg-type,return-value]


# ---- helpers over shapes ----------------------------------------------------------------
def is_static(shape: Sequence[Dim]) -> bool:
    return all(isinstance(d, int) for d in shape)


def evaluate(d: Dim, values: Mapping[str, int]) -> int:
    return d if isinstance(d, int) else d.evaluate(values)


def upper_bound(d: Dim) -> int:
    """The greatest value of ``d`` over its symbols' ranges; an error if one is unbounded."""
    if isinstance(d, int):
        return d
    _, hi = d.bounds()
    if hi is None:
        raise SymbolicError(f"{d} has no upper bound: declare a range for {', '.join(d.symbols)}")
    return hi


def shape_text(shape: Sequence[Dim]) -> str:
    """A shape for messages and reports: ``(batch, 1, 12*seq)``; a static shape prints as
    its tuple does (``(1, 128)``, ``(4,)``)."""
    if len(shape) == 1:
        return f"({shape[0]},)"
    return "(" + ", ".join(str(d) for d in shape) + ")"


def symbols_of(shape: Iterable[Dim]) -> list[str]:
    seen: dict[str, None] = {}
    for d in shape:
        if isinstance(d, Size):
            for s in d.symbols:
                seen.setdefault(s)
    return list(seen)


def bind(declared: Sequence[Dim], actual: Sequence[int], values: dict[str, int], what: str) -> None:
    """Solve ``declared == actual`` for symbols that occur alone (``seq``) and check the
    rest (static dims, products of bound symbols); extends ``values``. Errors say ``what``."""
    if len(declared) != len(actual):
        raise SymbolicError(f"{what}: rank {len(actual)}, expected {len(declared)}")
    pending: list[tuple[int, Size, int]] = []
    for axis, (d, v) in enumerate(zip(declared, actual)):
        v = int(v)
        if isinstance(d, int):
            if d != v:
                raise SymbolicError(f"{what}: dim {axis} is {v}, expected {d}")
            continue
        size = cast(Size, d)  # a Dim that is not an int (see Dim)
        (mono, coef), *rest = size.terms
        if not rest and coef == 1 and len(mono) == 1:  # the symbol alone: solved here
            s = mono[0]
            old = values.setdefault(s, v)
            if old != v:
                raise SymbolicError(
                    f"{what}: dim {axis} gives {s} = {v}, but {s} = {old} elsewhere"
                )
        else:
            pending.append((axis, size, v))
    for axis, d, v in pending:
        got = d.evaluate(values)
        if got != v:
            raise SymbolicError(f"{what}: dim {axis} is {v}, expected {d} = {got}")


__all__ = [
    "Dim",
    "Size",
    "SymbolicError",
    "as_dim",
    "bind",
    "evaluate",
    "exact_div",
    "is_static",
    "parse",
    "scope",
    "scope_ranges",
    "shape_text",
    "symbol",
    "symbols_of",
    "to_c",
    "upper_bound",
]
