"""Models with dynamic input dimensions: one object, a specialised build per shape.

``autofusion.compile`` of a model whose inputs keep dynamic dims (ONNX ``dim_param``s, or
unknown dims, after any ``input_shapes`` pins) returns a :class:`DynamicModel`. Its ``run``
binds every symbol from the feeds' shapes — two inputs that disagree on a symbol, a size
outside the symbol's declared range, a wrong rank or a static dim that differs are one
:class:`AutofusionError` naming the input — and runs the build specialised for exactly
those sizes: the first run of a shape compiles it (the on-disk compile cache makes that a
load when the shape was built before), later runs reuse it from an LRU of loaded builds.

Ranges: ``dynamic={"seq": (1, 512)}`` on ``compile()`` or config ``dynamic: {seq: [1,
512]}``; a symbol without one gets :data:`DEFAULT_RANGE`. The LRU: config
``dynamic_shape_cache: {enabled: true, size: 50}`` (the defaults, as the design we follow);
``enabled: false`` keeps only the last shape loaded. ``report`` lists the symbols, their
ranges and the cache statistics (hits, misses, evictions, loaded entries, each shape).

One library serving every shape (run-time sizes in the generated C) is not done yet: each
new shape costs one C build.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from autofusion.errors import AutofusionError

if TYPE_CHECKING:
    import onnx

    from autofusion.api import CompiledModel

#: The range of a symbol nobody declared (inclusive).
DEFAULT_RANGE = (1, 65536)
DEFAULT_CACHE_SIZE = 50


@dataclass(frozen=True)
class InputDims:
    """One graph input: per dim an int (static) or a symbol name."""

    name: str
    dims: tuple[int | str, ...]


def input_dims(model: onnx.ModelProto, pins: Mapping[str, Sequence[int]] | None) -> list[InputDims]:
    """The graph inputs (initializers excluded) with ``pins`` applied through the symbols
    they bind; an unknown dim (no value, no name) is the symbol ``<input>_dim<i>``."""
    from autofusion.frontend.loader import bind_symbols

    inits = {t.name for t in model.graph.initializer}
    args = [vi for vi in model.graph.input if vi.name not in inits]
    full = bind_symbols(args, pins or {}, "<model>") if pins else {}
    out: list[InputDims] = []
    for vi in args:
        if vi.name in full:
            out.append(InputDims(vi.name, tuple(int(d) for d in full[vi.name])))
            continue
        dims: list[int | str] = []
        for i, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value >= 0:
                dims.append(int(d.dim_value))
            else:
                dims.append(d.dim_param or f"{vi.name}_dim{i}")
        out.append(InputDims(vi.name, tuple(dims)))
    return out


def symbols_of(inputs: Sequence[InputDims]) -> list[str]:
    seen: dict[str, None] = {}
    for i in inputs:
        for d in i.dims:
            if isinstance(d, str):
                seen.setdefault(d, None)
    return list(seen)


def check_ranges(value: object, where: str) -> dict[str, tuple[int, int]]:
    """``{symbol: (lo, hi)}`` with 0 <= lo <= hi (ints, not bools)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AutofusionError(f"{where}: expected a mapping of symbol to [lo, hi]")
    out: dict[str, tuple[int, int]] = {}
    for sym, rng in value.items():
        ok = (
            isinstance(sym, str)
            and isinstance(rng, Sequence)
            and not isinstance(rng, str)
            and len(rng) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in rng)
            and 0 <= rng[0] <= rng[1]
        )
        if not ok:
            raise AutofusionError(
                f"{where}: {sym!r} must map to [lo, hi], integers with 0 <= lo <= hi, got {rng!r}"
            )
        out[sym] = (int(rng[0]), int(rng[1]))
    return out


class DynamicModel:
    """A model with dynamic dims; ``run`` specialises per shape (see the module doc)."""

    def __init__(
        self,
        build: Callable[[dict[str, list[int]]], CompiledModel],
        inputs: Sequence[InputDims],
        ranges: Mapping[str, tuple[int, int]],
        cache_size: int,
        label: str,
    ) -> None:
        self._build = build
        self._inputs = list(inputs)
        syms = symbols_of(self._inputs)
        unknown = sorted(set(ranges) - set(syms))
        if unknown:
            raise AutofusionError(
                f"{label}: dynamic ranges name {', '.join(map(repr, unknown))}, which are not "
                f"dynamic dims of the model (its symbols: {', '.join(syms) or 'none'})"
            )
        self.ranges = {s: ranges.get(s, DEFAULT_RANGE) for s in syms}
        self.cache_size = cache_size
        self.label = label
        self._lru: OrderedDict[tuple[tuple[str, int], ...], CompiledModel] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = self.evictions = 0
        self._last_report: dict[str, Any] = {}
        self._seen: list[dict[str, int]] = []

    # ---- binding ----------------------------------------------------------------------
    def bind(self, feeds: Mapping[str, np.ndarray]) -> dict[str, int]:
        """Symbol sizes from the feeds' shapes; every inconsistency is a clear error."""
        bound: dict[str, tuple[int, str]] = {}
        for spec in self._inputs:
            if spec.name not in feeds:
                raise AutofusionError(f"{self.label}: missing input '{spec.name}'")
            shape = tuple(np.shape(feeds[spec.name]))
            if len(shape) != len(spec.dims):
                raise AutofusionError(
                    f"{self.label}: input '{spec.name}' has rank {len(shape)}, expected "
                    f"{len(spec.dims)} (dims {list(spec.dims)})"
                )
            for i, (want, got) in enumerate(zip(spec.dims, shape)):
                if isinstance(want, int):
                    if want != got:
                        raise AutofusionError(
                            f"{self.label}: input '{spec.name}' dim {i} is {got}, the model "
                            f"fixes it to {want}"
                        )
                    continue
                lo, hi = self.ranges[want]
                if not lo <= got <= hi:
                    raise AutofusionError(
                        f"{self.label}: input '{spec.name}' dim {i} ('{want}') is {got}, "
                        f"outside its range [{lo}, {hi}]"
                    )
                old = bound.setdefault(want, (got, spec.name))
                if old[0] != got:
                    raise AutofusionError(
                        f"{self.label}: inputs disagree on '{want}': {old[0]} for input "
                        f"'{old[1]}', {got} for input '{spec.name}'"
                    )
        return {s: v for s, (v, _) in bound.items()}

    def _pins(self, sizes: Mapping[str, int]) -> dict[str, list[int]]:
        return {
            i.name: [d if isinstance(d, int) else sizes[d] for d in i.dims] for i in self._inputs
        }

    # ---- the shape cache --------------------------------------------------------------
    def specialisation(self, feeds: Mapping[str, np.ndarray]) -> CompiledModel:
        """The loaded build for the feeds' shape (built or loaded on a miss)."""
        sizes = self.bind(feeds)
        key = tuple(sorted(sizes.items()))
        with self._lock:
            hit = self._lru.get(key)
            if hit is not None:
                self.hits += 1
                self._lru.move_to_end(key)
                return hit
            self.misses += 1
            model = self._build(self._pins(sizes))
            self._lru[key] = model
            self._last_report = model.report
            self._seen.append(dict(sizes))
            while len(self._lru) > self.cache_size:
                _, old = self._lru.popitem(last=False)
                old.close()
                self.evictions += 1
            return model

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run on feeds of any in-range shape (see :meth:`bind`)."""
        return self.specialisation(feeds).run(feeds)

    @property
    def input_names(self) -> list[str]:
        return [i.name for i in self._inputs]

    @property
    def report(self) -> dict[str, Any]:
        """The last new shape's compile report, plus ``dynamic``: symbols with their
        ranges, the inputs' dims, and the shape cache's statistics."""
        with self._lock:
            return {
                **self._last_report,
                "dynamic": {
                    "symbols": {s: list(r) for s, r in self.ranges.items()},
                    "inputs": {i.name: list(i.dims) for i in self._inputs},
                    "shape_cache": {
                        "size": self.cache_size,
                        "loaded": len(self._lru),
                        "hits": self.hits,
                        "misses": self.misses,
                        "evictions": self.evictions,
                        "loaded_shapes": [dict(k) for k in self._lru],
                        "shapes_built": list(self._seen),
                    },
                },
            }

    def close(self) -> None:
        with self._lock:
            while self._lru:
                self._lru.popitem()[1].close()

    def __repr__(self) -> str:
        syms = ", ".join(f"{s}={lo}..{hi}" for s, (lo, hi) in self.ranges.items())
        return f"DynamicModel({self.label}, {syms}, {len(self._lru)} shapes loaded)"
