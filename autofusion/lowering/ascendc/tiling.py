"""Tiling of Ascend C kernels: every formula is written once, as a small expression tree over
named sizes, and both evaluated here (the values shown in the IR's ``#ascendc.tiling`` record)
and printed as the C++ host tiling function (``<kernel>_tiling.cpp``). Nothing is kept in step
by hand: the CPU run still checks that the compiled host function reproduces the IR's values.

Kinds (``TilingKind``; the record names its kind, the struct fields follow from it):

* ``vector``: a flat iteration space of ``total`` elements is cut into per-core blocks of
  ``blockLength`` (a multiple of 8 floats = 32 bytes) and each block into tiles of
  ``tileLength`` elements, the largest multiple of 8 such that the kernel's ``nbufs`` tile
  buffers and its ``fixedBytes`` of loaded operands fit the unified-buffer budget, capped at
  ``maxTile``.
* ``rows``: ``rows`` rows of ``d`` elements (each padded to ``rowStride`` in UB); a tile is
  ``tileLength`` whole rows: an input queue of that many padded rows, an output queue of as
  many rows (or values, ``perRowOut``), two row-sized scratch buffers, one 32-byte scalar
  buffer and ``nloaded`` row-sized operands.
* ``cube`` / ``cube_epilogue``: M is split into ``mBlocks`` row blocks of ``singleCoreM``
  rows (a multiple of 16, the cube's fractal edge), one work unit per (batch entry, row block);
  with an epilogue, the vector fields of the epilogue's tile loop come first.
* ``attention``: streaming (flash-style) attention; one work unit per (batch entry, block of
  ``blockQ`` query rows), keys in blocks of ``blockT``; the workspace per core is one score
  block (``wsPerCore``), independent of the sequence lengths.

Run-time sizes: a record may name inputs as run-time (``runtime``). The host tiling function
then takes them as ``uint32_t`` arguments, checks them against the range ``1..<the value in the
record>`` and derives everything else from them; the IR's values are those of the upper bound.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from autofusion.dialects import ascendc as ac

BUFFER_NUM = 2  # double buffering: two tiles per queue
ALIGN = 8  # elements of f32 per 32-byte block
UINT32_LIMIT = 1 << 32


class TilingError(ValueError):
    """A kernel's buffers do not fit, or a size is outside its range."""


class TilingKind(str, Enum):
    VECTOR = "vector"
    ROWS = "rows"
    CUBE = "cube"
    CUBE_EPILOGUE = "cube_epilogue"
    ATTENTION = "attention"


# -- expressions ----------------------------------------------------------------------------


class Expr:
    """A non-negative integer expression over named sizes (``Var``)."""

    def __add__(self, other: Expr | int) -> Expr:
        return Bin("+", self, lift(other))

    def __radd__(self, other: int) -> Expr:
        return Bin("+", lift(other), self)

    def __sub__(self, other: Expr | int) -> Expr:
        return Bin("-", self, lift(other))

    def __mul__(self, other: Expr | int) -> Expr:
        return Bin("*", self, lift(other))

    def __rmul__(self, other: int) -> Expr:
        return Bin("*", lift(other), self)

    def __floordiv__(self, other: Expr | int) -> Expr:
        return Bin("/", self, lift(other))

    def eval(self, env: Mapping[str, int]) -> int:
        raise NotImplementedError

    def cpp(self) -> str:
        raise NotImplementedError

    def vars(self) -> Iterator[str]:
        return iter(())


@dataclass(frozen=True, eq=False)
class Var(Expr):
    name: str

    def eval(self, env: Mapping[str, int]) -> int:
        return env[self.name]

    def cpp(self) -> str:
        return self.name

    def vars(self) -> Iterator[str]:
        yield self.name


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: int

    def eval(self, env: Mapping[str, int]) -> int:
        return self.value

    def cpp(self) -> str:
        return str(self.value)


_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}


@dataclass(frozen=True, eq=False)
class Bin(Expr):
    """``+ - * /`` on non-negative integers (``/`` is C++'s unsigned division)."""

    op: str
    lhs: Expr
    rhs: Expr

    def eval(self, env: Mapping[str, int]) -> int:
        a, b = self.lhs.eval(env), self.rhs.eval(env)
        if self.op == "+":
            r = a + b
        elif self.op == "-":
            r = a - b
        elif self.op == "*":
            r = a * b
        else:
            if b <= 0:
                raise TilingError(f"tiling: division by {b} in {self.cpp()}")
            r = a // b
        if r < 0:
            # the C++ would wrap (or divide a negative number differently): a formula must
            # guard every subtraction with a Require step
            raise TilingError(f"tiling: {self.cpp()} is negative")
        return r

    def cpp(self) -> str:
        prec = _PREC[self.op]
        lhs, rhs = self.lhs.cpp(), self.rhs.cpp()
        if isinstance(self.lhs, Bin) and _PREC[self.lhs.op] < prec:
            lhs = f"({lhs})"
        if isinstance(self.rhs, Bin) and _PREC[self.rhs.op] <= prec:
            rhs = f"({rhs})"
        return f"{lhs} {self.op} {rhs}"

    def vars(self) -> Iterator[str]:
        yield from self.lhs.vars()
        yield from self.rhs.vars()


@dataclass(frozen=True, eq=False)
class Call(Expr):
    """``min`` / ``max`` of two or more expressions."""

    fn: str
    args: tuple[Expr, ...]

    def eval(self, env: Mapping[str, int]) -> int:
        vals = [a.eval(env) for a in self.args]
        return min(vals) if self.fn == "min" else max(vals)

    def cpp(self) -> str:
        out = self.args[0].cpp()
        for a in self.args[1:]:
            out = f"std::{self.fn}<int64_t>({out}, {a.cpp()})"
        return out

    def vars(self) -> Iterator[str]:
        for a in self.args:
            yield from a.vars()


def lift(v: Expr | int) -> Expr:
    return v if isinstance(v, Expr) else Const(int(v))


def emin(*args: Expr | int) -> Expr:
    return Call("min", tuple(lift(a) for a in args))


def emax(*args: Expr | int) -> Expr:
    return Call("max", tuple(lift(a) for a in args))


def ceil_div(a: Expr | int, b: Expr | int) -> Expr:
    return (lift(a) + lift(b) - 1) // lift(b)


def round_up(a: Expr | int, m: Expr | int) -> Expr:
    return ceil_div(a, m) * lift(m)


def round_up_int(x: int, m: int) -> int:
    """``round_up`` on plain numbers (buffer sizes the lowering computes)."""
    return (x + m - 1) // m * m


# -- formulas -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Let:
    """``const int64_t name = expr;``"""

    name: str
    expr: Expr
    note: str = ""


@dataclass(frozen=True)
class Require:
    """``lhs >= rhs`` or the tiling fails (``why`` may name inputs: ``{d}``)."""

    lhs: Expr
    rhs: Expr
    why: str


Step = Let | Require


@dataclass(frozen=True)
class Formula:
    """One kernel's tiling: inputs, steps, the struct fields and the cores to launch."""

    kind: TilingKind
    steps: tuple[Step, ...]
    fields: tuple[tuple[str, Expr], ...]
    block_dim: Expr
    runtime: tuple[str, ...] = ()

    def evaluate(self, inputs: Mapping[str, int], core_num: int | None = None) -> dict[str, int]:
        """The struct's values for ``inputs`` on a device with ``core_num`` cores (default:
        the configured ``cores``), or ``TilingError``."""
        env = dict(inputs)
        env["coreNum"] = inputs["cores"] if core_num is None else core_num
        for s in self.steps:
            if isinstance(s, Let):
                env[s.name] = s.expr.eval(env)
            elif s.lhs.eval(env) < s.rhs.eval(env):
                raise TilingError(s.why.format(**env))
        out: dict[str, int] = {}
        for name, e in self.fields:
            v = e.eval(env)
            if v >= UINT32_LIMIT:
                raise TilingError(f"tiling: {name} = {v} does not fit in uint32_t")
            out[name] = v
        return out

    def cpp_body(self, inputs: Mapping[str, int], indent: str = "    ") -> list[str]:
        """C++ statements computing the fields into ``td`` (returning 0 on a failed
        requirement); compile-time inputs become constants, run-time ones are the function's
        parameters of the same name."""
        used: set[str] = set()
        for s in self.steps:
            used.update(s.expr.vars() if isinstance(s, Let) else [*s.lhs.vars(), *s.rhs.vars()])
        for _, e in self.fields:
            used.update(e.vars())
        used.update(self.block_dim.vars())
        lines = [f"{indent}if (td == nullptr) return 0;"]
        for name in inputs:
            if name in used and name not in self.runtime:
                lines.append(f"{indent}const int64_t {name} = {inputs[name]};")
        for s in self.steps:
            if isinstance(s, Let):
                note = f"  // {s.note}" if s.note else ""
                lines.append(f"{indent}const int64_t {s.name} = {s.expr.cpp()};{note}")
            else:
                why = s.why.replace("{", "").replace("}", "")
                lines.append(f"{indent}if ({s.lhs.cpp()} < {s.rhs.cpp()}) return 0;  // {why}")
        for name, e in self.fields:
            lines.append(f"{indent}td->{name} = static_cast<uint32_t>({e.cpp()});")
        return lines


def _cores() -> list[Step]:
    return [
        Let("useCores", emin(Var("coreNum"), Var("cores")), "cores the work is spread over"),
        Require(Var("useCores"), Const(1), "no cores"),
    ]


def _runtime_size(name: str, limit: str) -> list[Step]:
    """Range checks of a run-time size ``name`` against ``1..limit`` (``limit``: the IR's)."""
    return [
        Require(Var(name), Const(1), f"{name} must be at least 1"),
        Require(Var(limit), Var(name), f"{name} above its upper bound {{{limit}}}"),
    ]


def _vector_steps(runtime: bool) -> list[Step]:
    """Vector tile loop over ``total`` elements (``outer * inner`` when run-time)."""
    steps: list[Step] = []
    if runtime:
        steps += _runtime_size("outer", "outerMax")
        steps.append(Let("total", Var("outer") * Var("inner"), "elements of this call"))
    return [
        *steps,
        Require(Var("total"), Const(1), "an empty iteration space"),
        Require(Var("ubBytes"), Var("fixedBytes") + 1, "loaded operands do not fit in UB"),
        Let(
            "tile",
            emin(
                Var("maxTile"), (Var("ubBytes") - Var("fixedBytes")) // (emax(1, Var("nbufs")) * 4)
            )
            // ALIGN
            * ALIGN,
            "largest multiple of 8 whose buffers fit in UB",
        ),
        Require(
            Var("tile"),
            Const(ALIGN),
            "{nbufs} tile buffers and {fixedBytes} B of operands do not fit in UB",
        ),
        Let("block", round_up(ceil_div(Var("total"), Var("useCores")), ALIGN), "per core"),
    ]


_VECTOR_FIELDS: tuple[tuple[str, Expr], ...] = (
    ("totalLength", Var("total")),
    ("blockLength", Var("block")),
    ("tileLength", emin(Var("tile"), Var("block"))),
    ("blockDim", ceil_div(Var("total"), Var("block"))),
)


def _rows_steps(per_row_out: bool, runtime: bool) -> list[Step]:
    dp = Var("dp")
    steps: list[Step] = (
        _runtime_size("rows", "rowsMax") if runtime else [Require(Var("rows"), Const(1), "no rows")]
    )
    fixed = dp * (Var("nloaded") + 2) * 4 + 32
    return [
        *steps,
        Let("dp", round_up(Var("d"), ALIGN), "row stride in UB: 32-byte aligned"),
        Let(
            "fixed",
            fixed + 64 if per_row_out else fixed,
            "scratch rows, loaded operands, scalar buffer",
        ),
        Let(
            "per",
            (dp + (1 if per_row_out else dp)) * (4 * BUFFER_NUM),
            "bytes per row of a tile (in + out queues)",
        ),
        Require(Var("ubBytes"), Var("fixed") + 1, "a row of {d} elements does not fit in UB"),
        Let(
            "tile",
            emin(
                emax(1, Var("maxTile") // dp), (Var("ubBytes") - Var("fixed")) // Var("per"), 4095
            ),
            "DataCopyPad blockCount is 16-bit",
        ),
        Require(Var("tile"), Const(1), "a row of {d} elements does not fit in UB"),
        Let("block", ceil_div(Var("rows"), Var("useCores")), "rows per core"),
    ]


_ROWS_FIELDS: tuple[tuple[str, Expr], ...] = (
    ("totalLength", Var("rows")),
    ("blockLength", Var("block")),
    ("tileLength", emin(Var("tile"), Var("block"))),
    ("blockDim", ceil_div(Var("rows"), Var("block"))),
    ("rowLength", Var("d")),
    ("rowStride", Var("dp")),
)


def _cube_steps(split: bool, im2col: bool) -> list[Step]:
    m = Var("M")
    single = emin(round_up(ceil_div(m, Var("useCores")), 16), m) if split else m
    return [
        Let("single", single, "rows per work unit, a multiple of 16" if split else "no M split"),
        Let("mBlocks", ceil_div(m, Var("single"))),
        Let("units", Var("batch") * Var("mBlocks"), "work units: (batch entry, row block)"),
        Let(
            "workspaceElems",
            Var("K") * Var("N") * Var("cores") if im2col else Const(0),
            "one im2col slice per core" if im2col else "",
        ),
    ]


_CUBE_FIELDS: tuple[tuple[str, Expr], ...] = (
    ("units", Var("units")),
    ("mBlocks", Var("mBlocks")),
    ("singleCoreM", Var("single")),
    ("M", Var("M")),
    ("N", Var("N")),
    ("K", Var("K")),
    ("workspaceElems", Var("workspaceElems")),
)


def _attention_steps() -> list[Step]:
    """Streaming attention: per work unit (batch entry, block of ``blockQ`` query rows) the
    keys are walked in blocks of ``blockT`` with an online softmax. UB holds the score block
    (in and out queues, double-buffered), the ``p v`` block (a queue), the output accumulator,
    the per-row running max / sum / rescale factor, a mask row, a reduction work row and a
    32-byte scalar; q, k and v blocks go through the Matmul API's own L1/L0 buffers."""
    bt, ep = Var("bt"), Var("ep")
    return [
        Require(Var("S"), Const(1), "attention with no query rows"),
        Require(Var("T"), Const(1), "attention with no keys"),
        Let("ep", round_up(Var("E"), ALIGN), "output row stride in UB"),
        Let(
            "bt",
            emin(round_up(Var("T"), ALIGN), emax(ALIGN, Var("maxTile") // 32 // ALIGN * ALIGN)),
            "keys per block: a multiple of 8, at most maxTile / 32",
        ),
        Let("fixed", bt * 8 + 32 + 96, "mask row, work row, scalar, stats rounding"),
        Let(
            "per",
            bt * (4 * 2 * BUFFER_NUM) + ep * (4 * (BUFFER_NUM + 1)) + 12,
            "bytes per query row: score in/out queues, p v queue, accumulator, m / l / alpha",
        ),
        Require(
            Var("ubBytes"),
            Var("fixed") + Var("per"),
            "a query row of {E} output values does not fit in UB",
        ),
        Let(
            "bq",
            emin(
                Var("S"),
                (Var("ubBytes") - Var("fixed")) // Var("per"),
                emax(1, Var("maxTile") // bt),
                4095,
            ),
            "query rows per block (score block <= maxTile elements, all buffers in UB)",
        ),
        Let("qBlocks", ceil_div(Var("S"), Var("bq"))),
        Let("units", Var("batch") * Var("qBlocks"), "work units: (batch entry, query block)"),
        Let("wsPerCore", Var("bq") * bt, "one score block per core: independent of S and T"),
    ]


_ATTENTION_FIELDS: tuple[tuple[str, Expr], ...] = (
    ("units", Var("units")),
    ("blockDim", emin(Var("useCores"), Var("units"))),
    ("qBlocks", Var("qBlocks")),
    ("blockQ", Var("bq")),
    ("blockT", Var("bt")),
    ("rowStrideE", Var("ep")),
    ("wsPerCore", Var("wsPerCore")),
    ("workspaceElems", Var("wsPerCore") * Var("cores")),
    ("S", Var("S")),
    ("T", Var("T")),
    ("D", Var("D")),
    ("E", Var("E")),
)

CONFIG = ("cores", "maxTile", "ubBytes")
#: the run-time size each kind can take (the lowering decides whether a kernel does)
RUNTIME_SIZE: dict[TilingKind, str] = {TilingKind.VECTOR: "outer", TilingKind.ROWS: "rows"}


def formula(kind: TilingKind, inputs: Mapping[str, int], runtime: Sequence[str] = ()) -> Formula:
    """The formula of ``kind``; structural inputs (``perRowOut``, ``split``, ``im2col``) pick
    its shape, the sizes stay symbolic. ``runtime``: the inputs the host function takes as
    arguments (``RUNTIME_SIZE``)."""
    rt = bool(runtime)
    if rt and (kind not in RUNTIME_SIZE or tuple(runtime) != (RUNTIME_SIZE[kind],)):
        raise TilingError(f"tiling of kind {kind.value}: no run-time sizes {list(runtime)}")
    if kind is TilingKind.VECTOR:
        steps, fields = [*_cores(), *_vector_steps(rt)], _VECTOR_FIELDS
        dim: Expr = ceil_div(Var("total"), Var("block"))
    elif kind is TilingKind.ROWS:
        steps = [*_cores(), *_rows_steps(bool(inputs["perRowOut"]), rt)]
        fields, dim = _ROWS_FIELDS, ceil_div(Var("rows"), Var("block"))
    elif kind in (TilingKind.CUBE, TilingKind.CUBE_EPILOGUE):
        epi = kind is TilingKind.CUBE_EPILOGUE
        steps = [*_cores(), *(_vector_steps(False) if epi else [])]
        steps += _cube_steps(bool(inputs["split"]), bool(inputs["im2col"]))
        dim = emin(Var("useCores"), Var("units"))
        # with an epilogue, one core per work unit (the vector blockDim does not apply)
        vec = (*_VECTOR_FIELDS[:3], ("blockDim", dim)) if epi else ()
        fields = (*vec, *_CUBE_FIELDS)
    else:
        steps, fields = [*_cores(), *_attention_steps()], _ATTENTION_FIELDS
        dim = emin(Var("useCores"), Var("units"))
    return Formula(kind, tuple(steps), tuple(fields), dim, tuple(runtime))


def make_tiling(
    kind: TilingKind,
    sizes: Mapping[str, int],
    opts: TilingOptions,
    runtime: Sequence[str] = (),
) -> ac.TilingAttr:
    """The ``#ascendc.tiling`` record of a kernel: its kind, inputs (``sizes`` and the
    configuration), the values the formula gives (``TilingError`` if it fails) and the
    run-time inputs."""
    inputs = {**{n: int(v) for n, v in sizes.items()}, "cores": opts.cores,
              "maxTile": opts.max_tile, "ubBytes": opts.ub_bytes}  # fmt: skip
    values = formula(kind, inputs, runtime).evaluate(inputs)
    return ac.TilingAttr(kind.value, inputs, values, runtime)


def formula_of(record: ac.TilingAttr) -> Formula:
    return formula(TilingKind(record.kind.data), record.input_values(), record.runtime_names())


class TilingOptions(Protocol):
    """The lowering options the tiling reads (``LowerFusionToAscendC``)."""

    @property
    def cores(self) -> int: ...
    @property
    def max_tile(self) -> int: ...
    @property
    def ub_bytes(self) -> int: ...
