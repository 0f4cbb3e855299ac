"""Shape-specialising models: ``autofusion.compile()`` of a model with unpinned dynamic dims.

:class:`DynamicModel` is what ``autofusion.compile(model)`` returns when some input dims are
symbols (:mod:`autofusion.frontend.symbols`) that no ``input_shapes`` pin fixes. It builds
nothing up front. Each ``run(feeds)``:

1. binds every symbol from the feeds' shapes (a wrong rank, a size that contradicts a static
   dim, two inputs that disagree on a symbol, a size outside its declared range, a wrong
   dtype: one :class:`~autofusion.errors.AutofusionError` naming the input and the symbol);
2. looks the bound sizes up in an LRU of loaded specialisations; on a miss it compiles the
   model pinned to exactly these shapes (``autofusion.compile(model, input_shapes=...)``:
   the same import, pipeline and build, and the same on-disk compile cache, whose key holds
   the pinned shapes), loads it and evicts the least recently used one beyond the capacity
   (config ``dynamic_shape_cache: {enabled: true, size: 50}``; ``enabled: false`` keeps only
   the most recent shape);
3. runs that specialisation.

So each new shape costs one compile (or one disk-cache load); the generated C of a
specialisation has static sizes, except a batch: when one free symbol is only dim 0 of the
inputs (``input_ids[batch, seq]``) and the graph is batch-separable, specialisations are keyed
without it and each is one library taking any batch in its range (``af_run_batch``,
:mod:`autofusion.frontend.batch`), so a BERT export costs one compile per sequence length.
One library serving every shape in range (run-time sizes in the generated C, issue 12 item 3)
is not implemented.

The LRU and its counters are guarded by one lock; a specialisation is compiled outside it
(other shapes keep running meanwhile, a second caller of the same new shape waits for the
first one's compile) and an evicted specialisation still running in another thread is closed
when that run returns.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from onnx import helper

from autofusion.api import CompiledModel, ModelSource
from autofusion.errors import AutofusionError
from autofusion.frontend.batch import dim0_symbols
from autofusion.frontend.symbols import Dim, ShapePlan

Key = tuple[int, ...]


@dataclass(frozen=True)
class SymbolicSpec:
    """An input or output as the ONNX model declares it: dims are sizes or symbol names."""

    name: str
    shape: tuple[Dim, ...]
    dtype: np.dtype

    def describe(self) -> str:
        return f"{self.dtype.name}[{', '.join(str(d) for d in self.shape)}]"


@dataclass
class _Entry:
    """A loaded specialisation: its model, its bound sizes, how many runs are using it."""

    model: CompiledModel
    sizes: dict[str, int]
    users: int = 0
    evicted: bool = False


@dataclass
class _Pending:
    """A specialisation being compiled; later callers of the same shape wait on ``done``."""

    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


def _np_dtype(elem: int) -> np.dtype:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem))
    except (KeyError, TypeError):
        return np.dtype(object)  # an unsupported type: the importer names it at compile


class DynamicModel(CompiledModel):
    """A compiled model whose ``run`` accepts any in-range shape of its symbolic inputs by
    specialising per shape (see the module docstring).

    ``report``: the compile report of the most recently used shape (``None`` figures before
    the first run) plus ``dynamic: true``, ``symbols`` (range, origin, dims of each),
    ``one_build_refused`` (when ``compile()`` tried one build for every shape and could
    not: the reason), ``shape_cache`` (``enabled``, ``capacity``, ``size``, ``hits``, ``misses``,
    ``evictions``, ``disk_hits``) and ``shapes`` (the loaded specialisations, least recently
    used first, each with its ``sizes``, ``input_shapes`` and full ``report``)."""

    def __init__(
        self,
        model: Any,
        source: ModelSource,
        compile_kwargs: dict[str, Any],
        capacity: int,
        enabled: bool,
        say: Callable[[str], None],
    ) -> None:
        # CompiledModel.__init__ loads one library; a dynamic model loads one per shape
        assert source.plan is not None
        self._model = model
        self._plan: ShapePlan = source.plan
        self._label = source.label
        self._kwargs = compile_kwargs
        self._capacity = capacity
        self._enabled = enabled
        self._say = say
        #: why compile() could not make one build for every shape (None: not tried)
        self.one_build_refused: str | None = None
        graph = source.loaded.model.graph
        self._outputs = [
            SymbolicSpec(
                o.name,
                tuple(
                    int(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
                    for d in o.type.tensor_type.shape.dim
                ),
                _np_dtype(o.type.tensor_type.elem_type),
            )
            for o in graph.output
        ]
        self._inputs = [SymbolicSpec(s.name, s.dims, _np_dtype(s.elem)) for s in self._plan.inputs]
        self.threads = compile_kwargs.get("threads")
        self._cleanup = None
        self._lock = threading.Lock()
        self._lru: OrderedDict[Key, _Entry] = OrderedDict()
        self._pending: dict[Key, _Pending] = {}
        self._stats = {"hits": 0, "misses": 0, "evictions": 0, "disk_hits": 0}
        self._closed = False
        #: a free symbol that is only dim 0 (a batch): specialisations are keyed without it
        #: and each takes it at run time (docs/dynamic.md, "Run-time batch"); None once a
        #: specialisation's graph turns out not batch-separable
        self._batch: str | None = _batch_symbol(self._plan, compile_kwargs.get("target", "c"))

    # ---- what the model declares ----------------------------------------------------------
    @property
    def symbols(self) -> dict[str, tuple[int, int]]:
        """Every symbol with its declared range (pinned ones included)."""
        return dict(self._plan.ranges)

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self._inputs]

    @property
    def output_names(self) -> list[str]:
        return [s.name for s in self._outputs]

    @property
    def inputs(self) -> list[Any]:
        return list(self._inputs)

    @property
    def outputs(self) -> list[Any]:
        return list(self._outputs)

    @property
    def directory(self) -> Path | None:
        """The build folder of the most recently used shape (None before the first run)."""
        with self._lock:
            return next(reversed(self._lru.values())).model.directory if self._lru else None

    @property
    def report(self) -> dict[str, Any]:
        with self._lock:
            entries = list(self._lru.values())
            stats = dict(self._stats)
        last = entries[-1].model.report if entries else {}
        out: dict[str, Any] = dict(last) if last else {
            k: None for k in ("kernels_before", "kernels_after", "arena_bytes", "naive_bytes",
                              "lower_bound_bytes", "compile_seconds")
        }  # fmt: skip
        out.setdefault("groups", [])
        out.setdefault("refusals", [])
        out["dynamic"] = True
        if self.one_build_refused is not None:
            out["one_build_refused"] = self.one_build_refused
        out["symbols"] = self._plan.report()
        out["shape_cache"] = {
            "enabled": self._enabled,
            "capacity": self._capacity,
            "size": len(entries),
            **stats,
        }
        out["shapes"] = [
            {
                "sizes": dict(e.sizes),
                # a run-time batch shows as its symbol
                "input_shapes": {
                    sig.name: [e.sizes.get(d, d) if isinstance(d, str) else d for d in sig.dims]
                    for sig in self._plan.inputs
                },
                "report": e.model.report,
            }
            for e in entries
        ]
        return out

    # ---- running --------------------------------------------------------------------------
    def bind(self, feeds: Mapping[str, object]) -> dict[str, int]:
        """The size of every symbol in ``feeds`` (input name -> array), checked: shapes
        against the signature and the ranges, dtypes against the model."""
        if not isinstance(feeds, Mapping):
            raise AutofusionError(
                f"run() expects a dict of input name -> array, got {type(feeds).__name__}"
            )
        arrays = {k: np.asarray(v) for k, v in feeds.items()}
        sizes = self._plan.bind({k: a.shape for k, a in arrays.items()}, "run()")
        for spec in self._inputs:
            got = arrays[spec.name].dtype
            if spec.dtype != np.dtype(object) and got.newbyteorder("=") != spec.dtype:
                raise AutofusionError(
                    f"{self._label}: run(): input {spec.name!r}: expected dtype "
                    f"{spec.dtype.name}, got {got.name}"
                )
        return {**self._plan.pinned, **sizes}

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run on ``feeds`` of any in-range shape; the first run of a shape compiles it."""
        entry = self._acquire(self.bind(feeds))
        try:
            return entry.model.run(feeds)
        finally:
            self._release(entry)

    def profile(self, feeds: Mapping[str, np.ndarray], runs: int = 10) -> list[Any]:
        """Per-kernel times of the specialisation for ``feeds``' shape (see CompiledModel)."""
        entry = self._acquire(self.bind(feeds))
        try:
            return entry.model.profile(feeds, runs)
        finally:
            self._release(entry)

    def _key(self, sizes: Mapping[str, int]) -> Key:
        batch = self._batch
        return tuple(sizes[s] for s in self._plan.symbols if s != batch)

    def _shown(self, sizes: Mapping[str, int]) -> str:
        batch = self._batch
        shown = ", ".join(f"{s}={sizes[s]}" for s in self._plan.free if s != batch)
        return f"{shown} (any {batch})" if batch else shown

    def _compile(self, sizes: dict[str, int]) -> CompiledModel:
        """One specialisation: every symbol fixed to ``sizes`` except a run-time batch, which
        the library takes at run time when the graph allows (else every symbol is pinned and
        later shapes are keyed with the batch too)."""
        from autofusion.api import compile as compile_model

        batch = self._batch
        if batch is not None:
            kwargs = dict(self._kwargs)
            ranges = {s: r for s, r in self._plan.ranges.items() if s != batch}
            ranges.update({s: (v, v) for s, v in sizes.items() if s != batch})
            kwargs["dynamic"] = {**ranges, batch: self._plan.ranges[batch]}
            model = compile_model(self._model, **kwargs)
            if not isinstance(model, DynamicModel):
                return model
            model.close()  # not batch-separable: specialise every symbol from now on
            with self._lock:
                self._batch = None
        return compile_model(self._model, input_shapes=self._plan.shapes_for(sizes), **self._kwargs)

    def _acquire(self, sizes: dict[str, int]) -> _Entry:
        key = self._key(sizes)
        while True:
            with self._lock:
                if self._closed:
                    raise AutofusionError(f"{self._label}: model was closed")
                entry = self._lru.get(key)
                if entry is not None:
                    self._lru.move_to_end(key)
                    self._stats["hits"] += 1
                    entry.users += 1
                    return entry
                pending = self._pending.get(key)
                owner = pending is None
                if pending is None:
                    pending = self._pending[key] = _Pending()
                    self._stats["misses"] += 1
            if owner:
                return self._specialise(key, sizes, pending)
            pending.done.wait()  # someone else compiles this shape: use theirs
            if pending.error is not None:
                raise pending.error

    def _specialise(self, key: Key, sizes: dict[str, int], pending: _Pending) -> _Entry:
        try:
            self._say(f"specialising for {self._shown(sizes)} (shape cache miss)")
            t0 = time.perf_counter()
            model = self._compile(sizes)
            self._say(f"{self._shown(sizes)} ready in {time.perf_counter() - t0:.2f} s")
        except BaseException as e:
            with self._lock:
                del self._pending[key]
                pending.error = e
            pending.done.set()
            raise
        batch = self._batch
        entry = _Entry(model, {s: v for s, v in sizes.items() if s != batch}, users=1)
        with self._lock:
            del self._pending[key]
            if model.report.get("cached"):
                self._stats["disk_hits"] += 1
            key = self._key(sizes)  # with the batch if the batch turned out not separable
            self._lru[key] = entry
            victims: list[_Entry] = []
            while len(self._lru) > self._capacity:
                _, old = self._lru.popitem(last=False)
                old.evicted = True
                self._stats["evictions"] += 1
                if old.users == 0:
                    victims.append(old)
            if self._closed:  # closed while compiling: nothing keeps it
                self._lru.pop(key, None)
                entry.evicted = True
        pending.done.set()
        for old in victims:
            old.model.close()
        return entry

    def _release(self, entry: _Entry) -> None:
        with self._lock:
            entry.users -= 1
            close = entry.evicted and entry.users == 0
        if close:
            entry.model.close()

    def close(self) -> None:
        """Close every loaded specialisation (one still running closes when it returns)."""
        with self._lock:
            self._closed = True
            entries = list(self._lru.values())
            self._lru.clear()
            idle = []
            for e in entries:
                e.evicted = True
                if e.users == 0:
                    idle.append(e)
        for e in idle:
            e.model.close()

    def __repr__(self) -> str:
        syms = ", ".join(self._plan.describe(s) for s in self._plan.free)
        return f"DynamicModel({self._label}, symbols {syms}, {len(self._lru)} shapes loaded)"


def _batch_symbol(plan: ShapePlan, target: str) -> str | None:
    """The one free symbol that occurs only as dim 0 of the inputs using it, when others are
    free too (a batch alone is built as one library by ``compile`` itself); target c only."""
    if target != "c":
        return None
    dim0 = dim0_symbols(plan, plan.free)
    return dim0[0] if len(dim0) == 1 and len(plan.free) > 1 else None


def dynamic_model(
    model: Any, source: ModelSource, compile_kwargs: dict[str, Any], say: Callable[[str], None]
) -> DynamicModel:
    """The shape-specialising model of ``source`` (opened by ``compile``), with the shape
    cache capacity from the config's ``dynamic_shape_cache``."""
    from autofusion.policy.config import load_config

    cfg = load_config(compile_kwargs.get("config"))
    return DynamicModel(
        model, source, compile_kwargs, cfg.shape_cache_capacity, cfg.shape_cache_enabled, say
    )
