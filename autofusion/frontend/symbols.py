"""Symbolic input dimensions and their declared ranges (issue 12, item 2).

Every dynamic dimension of a graph input is a *symbol*: an ONNX ``dim_param`` is a symbol
of that name (shared by every input that uses it: ``input_ids[batch, seq]`` and
``attention_mask[batch, seq]`` share ``batch`` and ``seq``); a dimension with neither a
value nor a ``dim_param`` gets its own symbol named ``<input>_dim<axis>`` (e.g.
``input_ids_dim1``), so it can be named in ranges and messages.

Each symbol has a declared range ``LO..HI`` (inclusive, ``1 <= LO <= HI``), from, in order
of precedence: ``--dynamic SYM=LO..HI`` / ``compile(dynamic={SYM: (LO, HI)})``, the config's
``dynamic: {SYM: [LO, HI]}``, else :data:`DEFAULT_RANGE`. A symbol fixed by an input pin
(``--input-shape``/``input_shapes=``) has the pinned size, which must lie in its range.

:meth:`ShapePlan.bind` checks concrete shapes (pins, or the feeds of a run) against the
signature: unknown or missing inputs, a wrong rank, a size that contradicts a static dim,
two inputs that disagree on a symbol and a size outside a symbol's range are each one
:class:`~autofusion.errors.AutofusionError` naming the input, the symbol and the range.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral

import onnx

from autofusion.errors import AutofusionError

#: The range of a symbol no option or config key declares. Shapes are specialised per
#: concrete size today, so the bound only guards against absurd sizes; a build that serves a
#: whole range (issue 12 item 3) would plan memory for the upper bound, so declare real ones.
DEFAULT_RANGE = (1, 4096)

Range = tuple[int, int]
Dim = int | str  # a static size or a symbol name

_RANGE = re.compile(r"\s*(\d+)\s*\.\.\s*(\d+)\s*")


@dataclass(frozen=True)
class InputSig:
    """A graph input as the model declares it: name, dims (ints or symbols), ONNX elem type."""

    name: str
    dims: tuple[Dim, ...]
    elem: int

    def shown(self) -> list[Dim]:
        return list(self.dims)


def signature(model: onnx.ModelProto, filename: str) -> list[InputSig]:
    """The graph inputs that are not initializers, with their symbolic dims. A non-tensor
    input or one with no shape at all is an error naming it."""
    graph = model.graph
    inits = {t.name for t in graph.initializer}
    inits.update(sp.values.name for sp in graph.sparse_initializer)
    params = {
        d.dim_param
        for vi in graph.input
        if vi.type.HasField("tensor_type")
        for d in vi.type.tensor_type.shape.dim
        if d.dim_param
    }
    out: list[InputSig] = []
    for vi in graph.input:
        if vi.name in inits:
            continue
        if not vi.type.HasField("tensor_type"):
            raise AutofusionError(f"{filename}: graph input '{vi.name}' is not a tensor")
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            raise AutofusionError(
                f"{filename}: graph input '{vi.name}' has no shape (not even a rank); "
                "export it with a shape"
            )
        dims: list[Dim] = []
        for i, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value >= 0:
                dims.append(int(d.dim_value))
            elif d.dim_param:
                dims.append(d.dim_param)
            else:
                name = f"{vi.name}_dim{i}"
                while name in params:  # never merge with a real dim_param of that name
                    name += "_"
                dims.append(name)
        out.append(InputSig(vi.name, tuple(dims), int(tt.elem_type)))
    return out


def check_range(value: object, where: str) -> Range:
    """``[LO, HI]`` / ``(LO, HI)`` / ``"LO..HI"`` as a validated ``(LO, HI)``."""
    if isinstance(value, str):
        m = _RANGE.fullmatch(value)
        if not m:
            raise AutofusionError(f"{where}: expected a range LO..HI such as 1..512, got {value!r}")
        value = (int(m.group(1)), int(m.group(2)))
    if (
        isinstance(value, (str, bytes))
        or not isinstance(value, Sequence)
        or len(value) != 2
        or any(isinstance(v, bool) or not isinstance(v, Integral) for v in value)
    ):
        raise AutofusionError(
            f"{where}: expected a range [LO, HI] of two integers such as [1, 512], got {value!r}"
        )
    lo, hi = int(value[0]), int(value[1])
    if lo < 1 or hi < lo:
        raise AutofusionError(f"{where}: range {lo}..{hi} must have 1 <= LO <= HI")
    return lo, hi


def check_ranges(value: object, where: str, source: str | None = None) -> dict[str, Range]:
    """A mapping symbol -> range: ``dynamic=`` (``where`` names the argument) or, with
    ``source`` (the config file), the config's ``dynamic`` key."""
    if source is not None:
        where = f"{source}: '{where}'"
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AutofusionError(
            f"{where}: expected a mapping of symbol to [LO, HI], got {type(value).__name__}"
        )
    out: dict[str, Range] = {}
    for sym, rng in value.items():
        if not isinstance(sym, str) or not sym:
            raise AutofusionError(f"{where}: symbol names must be non-empty strings, got {sym!r}")
        item = f"{source}: 'dynamic.{sym}'" if source is not None else f"{where}[{sym!r}]"
        out[sym] = check_range(rng, item)
    return out


def parse_range_specs(specs: Sequence[str] | None, flag: str = "--dynamic") -> dict[str, Range]:
    """Every ``SYM=LO..HI`` of a repeated option; a symbol given twice is an error."""
    out: dict[str, Range] = {}
    for spec in specs or ():
        name, eq, text = spec.rpartition("=")
        if not eq or not name:
            raise AutofusionError(f"{flag} {spec!r}: expected SYM=LO..HI, e.g. seq=1..512")
        if name in out:
            raise AutofusionError(f"{flag}: symbol {name!r} is given twice")
        out[name] = check_range(text, f"{flag} {spec!r}")
    return out


def _shown(dims: Sequence[Dim]) -> str:
    return "[" + ", ".join(repr(d) if isinstance(d, str) else str(d) for d in dims) + "]"


@dataclass
class ShapePlan:
    """A model's input signature with a range for every symbol, and the symbols pinned."""

    filename: str
    inputs: list[InputSig]
    ranges: dict[str, Range] = field(default_factory=dict)
    #: where each range came from: "default", "config FILE", "--dynamic"/"dynamic=", "pinned"
    origins: dict[str, str] = field(default_factory=dict)
    pinned: dict[str, int] = field(default_factory=dict)

    @property
    def symbols(self) -> list[str]:
        """Every symbol in order of first use."""
        seen: dict[str, None] = {}
        for sig in self.inputs:
            for d in sig.dims:
                if isinstance(d, str):
                    seen.setdefault(d)
        return list(seen)

    @property
    def free(self) -> list[str]:
        """Symbols no pin fixes: their sizes come from each run's feeds."""
        return [s for s in self.symbols if s not in self.pinned]

    def uses(self, sym: str) -> list[str]:
        return [f"{s.name}[{i}]" for s in self.inputs for i, d in enumerate(s.dims) if d == sym]

    def describe(self, sym: str) -> str:
        lo, hi = self.ranges[sym]
        return f"'{sym}' {lo}..{hi} ({self.origins[sym]})"

    def bind(
        self, shapes: Mapping[str, Sequence[int]], what: str, partial: bool = False
    ) -> dict[str, int]:
        """The size of every symbol ``shapes`` (input name -> concrete shape) determines,
        checked against the signature and the ranges; ``partial``: inputs may be missing
        (pins). Errors name ``what`` (``--input-shape``, ``run()``), the input, the symbol."""
        where = f"{self.filename}: {what}"
        names = [s.name for s in self.inputs]
        unknown = [k for k in shapes if k not in names]
        if unknown:
            raise AutofusionError(
                f"{where} names {', '.join(map(repr, unknown))}, which are not graph inputs "
                f"(inputs: {', '.join(names)})"
            )
        missing = [n for n in names if n not in shapes]
        if missing and not partial:
            raise AutofusionError(f"{where}: missing input(s) {', '.join(map(repr, missing))}")
        bound: dict[str, tuple[int, str]] = {}
        for sig in self.inputs:
            if sig.name not in shapes:
                continue
            shape = [int(v) for v in shapes[sig.name]]
            if len(shape) != len(sig.dims):
                raise AutofusionError(
                    f"{where}: input '{sig.name}' has rank {len(shape)} (shape {shape}), but "
                    f"the model declares rank {len(sig.dims)}: {_shown(sig.dims)}"
                )
            for axis, (d, v) in enumerate(zip(sig.dims, shape)):
                if isinstance(d, int):
                    if d != v:
                        raise AutofusionError(
                            f"{where}: input '{sig.name}' has size {v} in dim {axis}, where "
                            f"the model declares {d} (shape {shape}, declared {_shown(sig.dims)})"
                        )
                    continue
                lo, hi = self.ranges[d]
                if d in self.pinned and v != self.pinned[d]:
                    raise AutofusionError(
                        f"{where}: input '{sig.name}' dim {axis} (symbol '{d}') is {v}, but the "
                        f"compile's input_shapes pinned '{d}' to {self.pinned[d]}"
                    )
                if not lo <= v <= hi:
                    raise AutofusionError(
                        f"{where}: input '{sig.name}' dim {axis} (symbol '{d}') is {v}, outside "
                        f"its declared range {lo}..{hi} ({self.origins[d]})"
                    )
                old = bound.setdefault(d, (v, sig.name))
                if old[0] != v:
                    raise AutofusionError(
                        f"{where}: inputs disagree on dimension '{d}': {old[0]} for input "
                        f"'{old[1]}', {v} for input '{sig.name}'"
                    )
        return {s: v for s, (v, _) in bound.items()}

    def require_static(self) -> None:
        """For the commands, which build one library per shape: every symbol must be pinned,
        or an error lists the free ones and says how to pin them."""
        free = self.free
        if not free:
            return
        sig = next(s for s in self.inputs if any(d in free for d in s.dims))
        example = "x".join(str(d) if isinstance(d, int) else f"<{d}>" for d in sig.dims)
        listed = "; ".join(f"{self.describe(s)} in {', '.join(self.uses(s))}" for s in free)
        raise AutofusionError(
            f"{self.filename}: the model has dynamic input dimensions no --input-shape fixes: "
            f"{listed}. Pin them with --input-shape {sig.name}={example} (one build per "
            "shape), or compile with autofusion.compile() in Python without pins: its model "
            "specialises itself to each run's shapes"
        )

    def shapes_for(self, sizes: Mapping[str, int]) -> dict[str, list[int]]:
        """The concrete shape of every input whose symbols ``sizes`` all give."""
        out: dict[str, list[int]] = {}
        for sig in self.inputs:
            if all(isinstance(d, int) or d in sizes for d in sig.dims):
                out[sig.name] = [d if isinstance(d, int) else sizes[d] for d in sig.dims]
        return out

    def report(self) -> dict[str, dict[str, object]]:
        """``{symbol: {range, origin, dims[, value]}}`` for ``m.report["symbols"]``."""
        out: dict[str, dict[str, object]] = {}
        for s in self.symbols:
            entry: dict[str, object] = {
                "range": list(self.ranges[s]),
                "origin": self.origins[s],
                "dims": self.uses(s),
            }
            if s in self.pinned:
                entry["value"] = self.pinned[s]
            out[s] = entry
        return out


def make_plan(
    model: onnx.ModelProto,
    filename: str,
    *,
    pins: Mapping[str, Sequence[int]] | None = None,
    pins_flag: str = "input_shapes",
    ranges: Mapping[str, Range] | None = None,
    ranges_flag: str = "dynamic=",
    config_ranges: Mapping[str, Range] | None = None,
    config_source: str = "config",
) -> ShapePlan:
    """The plan of ``model``: symbols with their ranges (explicit > config > default),
    checked (a range for a symbol the model does not have is an error listing the model's
    symbols), then the pins bound and checked against them."""
    plan = ShapePlan(filename, signature(model, filename))
    symbols = plan.symbols
    for given, origin in ((ranges, ranges_flag), (config_ranges, f"config {config_source}")):
        unknown = sorted(set(given or {}) - set(symbols))
        if unknown:
            known = ", ".join(symbols) if symbols else "none: every input dim is static"
            raise AutofusionError(
                f"{filename}: {origin} declares a range for {', '.join(map(repr, unknown))}, "
                f"which is not a dynamic dimension of the model's inputs (symbols: {known})"
            )
    for s in symbols:
        if ranges and s in ranges:
            plan.ranges[s], plan.origins[s] = ranges[s], ranges_flag
        elif config_ranges and s in config_ranges:
            plan.ranges[s], plan.origins[s] = config_ranges[s], f"config {config_source}"
        else:
            plan.ranges[s], plan.origins[s] = DEFAULT_RANGE, "default"
    if pins:
        plan.pinned = plan.bind(pins, pins_flag, partial=True)
    return plan
