"""The Python API: ``autofusion.compile(model, ...) -> CompiledModel`` and friends.

``compile`` imports the model, runs the pass pipeline (:class:`autofusion.pipeline.Pipeline`:
tensor passes, then the target backend's lowering passes), lets the backend
(:mod:`autofusion.lowering.backend`) emit, build (``libmodel.so``, :mod:`autofusion.runtime.build`)
into the compile cache (:mod:`autofusion.runtime.cache`) and load it (ctypes,
:mod:`autofusion.runtime.loader`). A second compile of the same model with the same options
and the same autofusion code reuses the cached library.

``build_model_dir`` is the shared core also used by ``autofusion-compile``: everything up
to a finished directory, written into a staging directory first.

Model files and serialised bytes are read by the frontend's loader
(:mod:`autofusion.frontend.loader`, the one ``autofusion-opt model.onnx`` uses): big weights
are cut out of the buffer before parsing and copied once, straight into the imported
constants, and a corrupt file gets the same message from every entry point. The cache key is
hashed piece by piece from that parsed form (:func:`model_digest`), so neither a hit nor a
miss serialises a second copy of the model.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import sys
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from autofusion.errors import AutofusionError
from autofusion.pipeline import Pipeline, PipelineOptions, config_memory_limit
from autofusion.policy.config import is_positive_number

if TYPE_CHECKING:
    import onnx
    from xdsl.dialects.builtin import ModuleOp

    from autofusion.frontend.batch import BatchPlan
    from autofusion.frontend.loader import Loaded
    from autofusion.frontend.symbols import ShapePlan
    from autofusion.policy.base import BasePolicy

ProgressFn = Callable[[str], None]

_default_memory_limit_mb: float | None = None


def set_memory_limit(mb: float | None) -> None:
    """The memory limit (MB) used by later ``compile`` calls that pass none; None clears it."""
    global _default_memory_limit_mb
    if mb is not None:
        if not is_positive_number(mb):
            raise AutofusionError(
                f"set_memory_limit: expected a finite positive number of MB, got {mb!r}"
            )
        mb = float(mb)
    _default_memory_limit_mb = mb


def get_memory_limit() -> float | None:
    """The default set by :func:`set_memory_limit` (None: no limit)."""
    return _default_memory_limit_mb


def stderr_progress(prefix: str = "autofusion") -> ProgressFn:
    """A progress callback printing ``prefix: text`` lines on stderr."""

    def say(text: str) -> None:
        print(f"{prefix}: {text}", file=sys.stderr, flush=True)

    return say


def _quiet(_: str) -> None:
    pass


def _model_label(model: object) -> str:
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    if isinstance(model, (bytes, bytearray, memoryview)):
        return "<bytes>"
    return "<ModelProto>"


_MODEL_KINDS = "a path, 'zoo:NAME', serialised bytes or an onnx.ModelProto"


def load_model(model: object) -> onnx.ModelProto:
    """A path, ``zoo:NAME`` or ``ModelProto`` as a complete ModelProto (for callers that
    need the proto itself, e.g. to run onnxruntime on it). Compiling should use
    :func:`open_model`, which leaves big weights outside the proto."""
    import onnx

    from autofusion.zoo import resolve

    if not isinstance(model, (str, os.PathLike, onnx.ModelProto)):
        raise AutofusionError(
            f"model must be a path, 'zoo:NAME' or an onnx.ModelProto, got {type(model).__name__}"
        )
    return resolve(model)


@dataclass
class ModelSource:
    """A model read for import: the frontend loader's :class:`~autofusion.frontend.loader.
    Loaded` (proto plus weights cut out of it), the name used in messages, and whether the
    proto is ours (the importer may then drop weights from it as it copies them out)."""

    loaded: Loaded
    label: str
    owned: bool
    input_shapes: dict[str, tuple[int, ...]] | None = None
    plan: ShapePlan | None = None  # symbolic input dims, their ranges and the pinned ones
    batch: BatchPlan | None = None  # a run-time batch (pin_batch): built at batch 1
    # one build for every shape (one_build_source): the free symbols' ranges, imported
    # symbolically
    symbols: dict[str, tuple[int, int]] | None = None


def one_build_source(source: ModelSource) -> ModelSource:
    """``source`` imported with its free symbols kept symbolic (docs/dynamic.md, "One build
    for every shape"): the library built from it takes their sizes at run time
    (``af_run_sym``), each in its declared range; pins stay pins."""
    plan = source.plan
    assert plan is not None and plan.free
    return dataclasses.replace(source, symbols={s: plan.ranges[s] for s in plan.free})


def one_build_pipeline(pipeline: Pipeline) -> tuple[Pipeline, list[str]]:
    """``pipeline`` for a symbolic module: the tensor passes that handle symbolic sizes
    (``CheckedPass.symbolic``) and every lowering stage; also the names of the tensor passes
    left out (they only steer speed, e.g. ``assign-layout``; the report lists them). A pass
    that keeps a promise (``tile-fusion`` for a memory limit, ``validate-precision``) is
    not left out: the one build is refused naming it."""
    from autofusion.pipeline import LOWERING

    def kept(stage: Any) -> bool:
        return stage.group == LOWERING or bool(getattr(stage.pass_, "symbolic", False))

    dropped = [s.name for s in pipeline.stages if not kept(s)]
    for name in dropped:  # these keep a promise the user asked for: refuse, do not drop
        if name in _ONE_BUILD_REFUSED:
            raise AutofusionError(
                f"one build for every shape: {_ONE_BUILD_REFUSED[name]} needs pass {name!r}, "
                "which does not handle symbolic sizes yet; drop it or pin the shapes"
            )
    return dataclasses.replace(pipeline, stages=tuple(filter(kept, pipeline.stages))), dropped


#: Tensor passes a one build may not leave out: what the user asked for that they deliver.
_ONE_BUILD_REFUSED = {
    "tile-fusion": "a memory limit (memory_limit_mb / --memory-limit)",
    "validate-precision": "--validate-precision",
}


def pin_batch(source: ModelSource) -> ModelSource:
    """``source`` whose one free symbol is a run-time batch (docs/dynamic.md): the model is
    imported at batch 1 and 2 to prove it batch-separable (:mod:`autofusion.frontend.batch`),
    and the returned source is pinned to batch 1 with ``batch`` set, so the library built
    from it serves every batch in the symbol's range (``af_run_batch``). Raises
    ``AutofusionError`` naming why when it cannot."""
    from autofusion.frontend.batch import (
        batch_candidate,
        check_separable,
        fixed_sizes,
        why_not_candidate,
    )

    plan = source.plan
    assert plan is not None and plan.free
    sym = batch_candidate(plan)
    if sym is None:
        raise AutofusionError(f"{source.label}: no run-time batch: {why_not_candidate(plan)}")

    def at(size: int) -> dict[str, tuple[int, ...]]:
        shapes = plan.shapes_for({**fixed_sizes(plan), sym: size})
        return {k: tuple(v) for k, v in shapes.items()}

    probes = [
        import_model(dataclasses.replace(source, owned=False, input_shapes=at(b)), source.label)
        for b in (1, 2)
    ]
    batch = check_separable(probes[0], probes[1], sym, plan, source.label)
    return dataclasses.replace(source, input_shapes=at(1), batch=batch)


def open_model(
    model: object,
    label: str | None = None,
    input_shapes: object = None,
    dynamic: object = None,
    config: str | os.PathLike[str] | None = None,
    flags: tuple[str, str] = ("input_shapes", "dynamic="),
) -> ModelSource:
    """Read ``model`` (a path, ``zoo:NAME``, serialised bytes or a ``ModelProto``) for
    compiling. Files and bytes go through the frontend loader; zoo models and protos are
    used in place and never modified. ``input_shapes`` ({name: dims}) pins dynamic input
    dimensions at import (:mod:`autofusion.frontend.shapes`); ``dynamic`` ({symbol: (lo,
    hi)}) and the ``config``'s ``dynamic`` key declare symbol ranges
    (:mod:`autofusion.frontend.symbols`); ``flags`` name the two in messages."""
    from autofusion.frontend.shapes import check_input_shapes
    from autofusion.frontend.symbols import check_ranges, make_plan

    ranges = check_ranges(dynamic, flags[1].rstrip("="))
    config_ranges = None
    if config is not None:
        from autofusion.policy.config import load_config

        config_ranges = load_config(config).dynamic
    source = _open_model(model, label)
    source.input_shapes = check_input_shapes(input_shapes)
    source.plan = make_plan(
        source.loaded.model,
        source.label,
        pins=source.input_shapes,
        pins_flag=flags[0],
        ranges=ranges,
        ranges_flag=flags[1],
        config_ranges=config_ranges,
        config_source=os.fspath(config or ""),
    )
    return source


def _open_model(model: object, label: str | None) -> ModelSource:
    import onnx

    from autofusion.frontend import loader
    from autofusion.frontend.progress import Progress
    from autofusion.zoo import ZOO_PREFIX, get_model

    if isinstance(model, onnx.ModelProto) or (
        isinstance(model, str) and model.startswith(ZOO_PREFIX)
    ):
        proto = model if isinstance(model, onnx.ModelProto) else get_model(model[len(ZOO_PREFIX) :])
        name = label or _model_label(model)
        loader.check_structure(proto, name)
        return ModelSource(loader.Loaded(proto, []), name, owned=False)
    if isinstance(model, (bytes, bytearray, memoryview)):
        name = label or "<bytes>"
        return ModelSource(loader.load_bytes(model, name), name, owned=True)
    if not isinstance(model, (str, os.PathLike)):
        raise AutofusionError(f"model must be {_MODEL_KINDS}, got {type(model).__name__}")
    path = os.fspath(model)
    if not os.path.isfile(path) and not os.path.isdir(path):
        raise AutofusionError(f"{path}: no such file (expected an .onnx file or zoo:NAME)")
    Progress.reading(None, path)
    loaded, path = loader.load_path(path)
    return ModelSource(loaded, label or path, owned=True)


def model_digest(model: onnx.ModelProto, raws: Sequence[bytes | None] = ()) -> bytes:
    """sha256 of a model, hashed field by field and weight by weight.

    The same for a ``ModelProto`` holding its weights and for the loader's parsed form whose
    big ``raw_data`` were cut out into ``raws`` (so compiling a file and compiling the proto
    ``onnx.load`` makes of it share one cache entry). At most one tensor is copied at a time.
    """
    h = hashlib.sha256()

    def put(tag: str, data: bytes) -> None:
        h.update(tag.encode())
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)

    def put_field(fd: Any, value: Any) -> None:
        for v in value if fd.is_repeated else [value]:
            put(fd.name, v.SerializeToString(deterministic=True)
                if fd.type == fd.TYPE_MESSAGE else repr(v).encode())  # fmt: skip

    for fd, value in model.ListFields():
        if fd.name != "graph":
            put_field(fd, value)
            continue
        for gfd, gvalue in value.ListFields():
            if gfd.name != "initializer":
                put_field(gfd, gvalue)
                continue
            for i, t in enumerate(gvalue):
                raw = raws[i] if i < len(raws) else None
                if raw is None and not t.HasField("raw_data"):
                    put("initializer", t.SerializeToString(deterministic=True))
                    continue
                put("initializer.begin", b"")
                for tfd, tvalue in t.ListFields():
                    if tfd.name != "raw_data":
                        put_field(tfd, tvalue)
                data = raw if raw is not None else t.raw_data
                put("initializer.raw", hashlib.sha256(data).digest())
    return h.digest()


def import_model(source: onnx.ModelProto | ModelSource, label: str = "<model>") -> ModuleOp:
    """ONNX -> nn IR through the frontend (a ``ModelProto`` is imported without changes)."""
    from autofusion.frontend.onnx_import import import_loaded

    if not isinstance(source, ModelSource):
        source = open_model(source, label)
    return import_loaded(
        source.loaded,
        source.label,
        owned=source.owned,
        input_shapes=source.input_shapes,
        symbols=source.symbols,
    )


def _check_target(target: str) -> None:
    from autofusion.lowering import get_backend, targets_of
    from autofusion.lowering.backend import RunnableBackend

    if not isinstance(get_backend(target), RunnableBackend):
        runnable = targets_of(RunnableBackend)
        raise AutofusionError(
            f"compile(target={target!r}): only target {' or '.join(map(repr, runnable))} can be "
            f"loaded and run in Python; use autofusion-compile --target {target} to write its "
            "sources"
        )


def _check_threads(threads: int | None) -> None:
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):  # fmt: skip
        raise AutofusionError(f"threads: expected a positive integer, got {threads!r}")


def _policy_token(policy: BasePolicy | str | None) -> str | None:
    if policy is None or isinstance(policy, str):
        return policy
    from autofusion.policy import register_policy

    return "@" + register_policy(policy)


def prepare_module(
    proto: onnx.ModelProto | ModelSource,
    opts: PipelineOptions,
    label: str = "<model>",
    say: ProgressFn = _quiet,
    pipeline: Pipeline | None = None,
) -> tuple[ModuleOp, dict[str, Any]]:
    """Import (a proto, or a source from :func:`open_model`) and run the tensor-level
    passes of ``pipeline`` (default: built from ``opts``); returns the module and its report
    (without ``compile_seconds``). The backend's lowering passes are left to the caller."""
    from autofusion.policy.report import build_report, count_unfused_ops

    pipeline = pipeline or Pipeline.from_options(opts)
    say(f"importing {label}")
    module = import_model(proto, label)
    kernels_before = count_unfused_ops(module)
    pipeline.tensor().run(module, progress=say)
    report = build_report(module, kernels_before=kernels_before)
    for key in ("arena_bytes", "naive_bytes", "lower_bound_bytes"):
        report.setdefault(key, None)
    plan = proto.plan if isinstance(proto, ModelSource) else None
    if plan is not None and plan.symbols:
        report["symbols"] = plan.report()
    report["pipeline"] = pipeline.pipeline_string()
    report["target"] = opts.target
    report["fusion"] = opts.fusion
    return module, report


def build_model_dir(
    proto: onnx.ModelProto | ModelSource,
    out_dir: Path,
    opts: PipelineOptions,
    label: str = "<model>",
    say: ProgressFn = _quiet,
    build: bool = True,
    after_passes: Callable[[ModuleOp], None] | None = None,
    default_threads: int | None = None,
) -> dict[str, Any]:
    """Import, run the pipeline (tensor passes, then the backend's lowering passes), emit
    the target's files into ``out_dir`` and (a runnable backend, ``build``) build them there.
    Writes ``report.json``; returns the report. ``after_passes`` sees the module after the
    tensor-level passes (e.g. to plot memory). ``default_threads`` (target c) is baked into
    model.c as ``AF_DEFAULT_THREADS``, the count ``af_create`` uses when its thread argument
    is 0 (``autofusion-compile --threads``)."""
    from autofusion.lowering.backend import RunnableBackend
    from autofusion.pipeline import backend_of
    from autofusion.policy.report import (
        attention_algo_rows,
        conv_algo_rows,
        layout_summary,
        sibling_conv_rows,
    )
    from autofusion.runtime.toolchain import cpu_has_avx512

    t0 = time.perf_counter()
    backend = backend_of(opts)
    pipeline = Pipeline.from_options(opts)
    symbols = proto.symbols if isinstance(proto, ModelSource) else None
    dropped: list[str] = []
    if symbols:
        pipeline, dropped = one_build_pipeline(pipeline)
        if dropped:
            say(f"one build for every shape: passes without symbolic sizes left out: "
                f"{', '.join(dropped)}")  # fmt: skip
    module, report = prepare_module(proto, opts, label, say, pipeline)
    if symbols:
        report["one_build"] = {
            "symbols": {s: list(r) for s, r in symbols.items()},
            "dropped_passes": dropped,
        }
    batch = proto.batch if isinstance(proto, ModelSource) else None
    if batch is not None:
        from autofusion.dialects.attrs import C_BATCH
        from autofusion.frontend.batch import attribute_value

        module.attributes[C_BATCH] = attribute_value(batch)
        report["batch"] = batch.report()
    if after_passes is not None:
        after_passes(module)
    layout = layout_summary(module)
    siblings = sibling_conv_rows(module)
    if siblings:
        report["sibling_convs"] = siblings
    pipeline.lowering().run(module, progress=say)
    avx512 = opts.target == "c" and cpu_has_avx512(opts.cpu)
    convs = conv_algo_rows(module, avx512)
    if convs:
        report["conv_algo"] = convs
    attention = attention_algo_rows(module, avx512)
    if attention:
        report["attention_algo"] = attention
    if layout is not None:
        report["layout"] = layout
    from autofusion.lowering.c.convert_nn_to_buffers import work_table

    work = work_table(module)
    if work:  # per kernel function: FLOPs and bytes of one call (the profiler's roofline)
        report["kernel_work"] = work
    say(f"emitting {opts.target} code ({report['kernels_after']} kernels)")
    backend.emit(module, out_dir)
    if isinstance(backend, RunnableBackend) and build:
        backend.build(out_dir, opts, default_threads, say)
    for name in backend.option_fields:
        report[name] = getattr(opts, name)
    report["compile_seconds"] = round(time.perf_counter() - t0, 3)
    (out_dir / "report.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return report


def _options_fingerprint(opts: PipelineOptions) -> dict[str, object]:
    from autofusion.runtime import toolchain

    cfg_digest = None
    if opts.config:
        import hashlib

        try:
            cfg_digest = hashlib.sha256(Path(opts.config).read_bytes()).hexdigest()
        except OSError:
            raise AutofusionError(f"{opts.config}: no such config file") from None
    return {
        "target": opts.target,
        "fusion": opts.fusion,
        **({"analysis_window": opts.analysis_window} if opts.analysis_window is not None else {}),
        "config": cfg_digest,
        "policy": opts.policy,
        "memory_limit_mb": opts.memory_limit_mb,
        "cpu": opts.cpu,
        **({"validate_precision": True} if opts.validate_precision else {}),
        **({"runtime_sizes": True} if opts.runtime_sizes else {}),
        # the fusion passes read it when neither the config nor an option sets a level
        "aggressiveness_env": os.environ.get("AUTOFUSION_AGGRESSIVENESS"),
        "cc": toolchain.c_compiler(),
        "machine": platform.machine(),
        "cflags": os.environ.get("CFLAGS", ""),
    }


class CompiledModel:
    """A compiled, loaded model. ``run(feeds)`` -> ``{output name: array}``;
    ``report`` is the compile report (a JSON-serialisable dict); ``directory`` holds
    model.c, model.h, weights.bin, Makefile and libmodel.so."""

    def __init__(self, directory: Path, report: dict[str, Any], threads: int | None,
                 owns_directory: bool = False) -> None:  # fmt: skip
        from autofusion.lowering import get_backend
        from autofusion.lowering.backend import RunnableBackend

        self.directory = directory
        self.report = report
        self.threads = threads
        # An uncached build's folder goes when the model does: on close(), when it is
        # garbage collected, or at interpreter exit, whichever comes first.
        self._cleanup = (weakref.finalize(self, _remove_build_dir, directory)
                         if owns_directory else None)  # fmt: skip
        backend = get_backend(str(report.get("target", "c")))
        assert isinstance(backend, RunnableBackend), backend.name  # compile() checked it
        self._lib = backend.load(directory, threads)

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self._lib.inputs]

    @property
    def output_names(self) -> list[str]:
        return [s.name for s in self._lib.outputs]

    @property
    def inputs(self) -> list[Any]:
        """Input specs (name, shape, dtype) as the compiled library declares them."""
        return list(self._lib.inputs)

    @property
    def outputs(self) -> list[Any]:
        return list(self._lib.outputs)

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run on ``feeds`` (input name -> array of the declared dtype and shape)."""
        return self._lib.run(feeds)

    def profile(
        self, feeds: Mapping[str, np.ndarray], runs: int = 10, clock: str = "wall"
    ) -> list[Any]:
        """Run ``runs`` times with per-kernel timing on and return one
        :class:`autofusion.runtime.loader.KernelTime` per kernel call site (kernel, pattern,
        ONNX origins, total seconds, calls, and the FLOPs and bytes of one call recorded at
        compile time, which give ``gflops_per_s``, ``gb_per_s`` and ``flops_per_byte``),
        slowest first. ``clock``: ``"wall"``, or ``"thread"`` (the calling thread's on-CPU
        time, Linux). Timing stays off for ``run``."""
        if runs < 1:
            raise AutofusionError(f"profile: runs must be >= 1, got {runs}")
        self._lib.profile_reset()
        self._lib.profile_enable(True, clock)
        try:
            for _ in range(runs):
                self._lib.run(feeds)
        finally:
            self._lib.profile_enable(False)
        work = self.report.get("kernel_work") or {}
        rows = [
            dataclasses.replace(k, flops=w["flops"], bytes_moved=w["bytes"])
            if (w := work.get(k.kernel))
            else k
            for k in self._lib.profile()
        ]
        return sorted(rows, key=lambda k: -k.seconds)

    def close(self) -> None:
        self._lib.close()
        if self._cleanup is not None:
            self._cleanup()

    def __repr__(self) -> str:
        return f"CompiledModel({self.directory}, kernels={self.report.get('kernels_after')})"


def _remove_build_dir(directory: Path) -> None:
    """Delete an uncached build's staging folder and drop its owner lock (a finalizer: it
    must not refer to the model)."""
    from autofusion.runtime import cache as cache_mod

    cache_mod.discard_staging(directory)


def compile(
    model: str | os.PathLike[str] | onnx.ModelProto,
    target: str = "c",
    config: str | os.PathLike[str] | None = None,
    fusion: bool = True,
    threads: int | None = None,
    memory_limit_mb: float | None = None,
    policy: BasePolicy | str | None = None,
    progress: bool | ProgressFn = False,
    cache: bool = True,
    label: str | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    dynamic: Mapping[str, Sequence[int] | str] | None = None,
    cpu: str = "native",
    analysis_window: int | None = None,
    one_build: bool | None = None,
) -> CompiledModel:
    """Compile ``model`` (a path, ``"zoo:NAME"``, serialised bytes or ``onnx.ModelProto``)
    and load it.

    ``input_shapes``: ``{input name: dims}`` pinning dynamic input dimensions (ONNX
    ``dim_param``s), e.g. ``{"input_ids": [1, 128]}``; every other dim must match the model.
    ``dynamic``: ``{symbol: (lo, hi)}`` declared ranges (over the config's ``dynamic``).
    When the only symbol left unpinned (a one-size ``dynamic`` range counts as pinned) is a
    batch (dim 0 of the inputs using it) and the graph is batch-separable, the result is one
    library serving every batch in its range (docs/dynamic.md, "Run-time batch"). Other
    symbols left unpinned give one library with run-time sizes (``one_build``, below) or,
    where that is not possible, a :class:`autofusion.dynamic.DynamicModel`, which compiles
    one specialisation per run shape (docs/dynamic.md).
    ``one_build`` (target c): the symbols left unpinned stay symbolic through the pipeline
    and the result is **one library for every shape in their ranges** (run-time sizes,
    ``af_run_sym``; docs/dynamic.md, "One build for every shape"). ``True``: an error names
    the pass or op that cannot take symbolic sizes yet. ``None`` (default): tried whenever
    symbols other than a lone run-time batch are left unpinned and each has a declared range
    (``dynamic`` or the config's; not the default 1..4096), and where the pipeline cannot
    take them the result is the shape-specialising model as before (the reason in
    ``one_build_refused`` and on the progress channel). ``False``: never.
    ``report["one_build"]`` lists the symbols, their ranges and the tensor passes left out.

    ``threads``: threads for run() (None: all cores). ``memory_limit_mb``: default from
    :func:`set_memory_limit`. ``policy``: a :class:`autofusion.BasePolicy` instance or a
    ``module:Class`` spec. ``progress``: True for stderr lines, or a callable. Builds are
    cached (see :mod:`autofusion.runtime.cache`, whose size limit is applied after each new
    build); a policy *instance* is never cached, since its behaviour is not captured by a
    key. ``label`` names the model in messages. ``cpu``: the CPU the build is for, one of
    ``native`` (default: this machine's, ``-march=native``), ``x86-64-v2``, ``x86-64-v3``,
    ``x86-64-v4`` (portable builds); it is in the cache key and ``report["cpu"]``. A build
    this CPU cannot run is refused at load time; ``aarch64`` builds cannot be loaded on x86
    (use ``autofusion-compile --cpu aarch64``). ``analysis_window``: ``fuse``'s structure
    analysis in windows of that many ops (0: whole graph; None: the config's
    ``analysis_window``, default 0).
    """
    from autofusion.runtime import cache as cache_mod

    _check_target(target)
    _check_threads(threads)
    _check_loadable_cpu(cpu)
    if memory_limit_mb is not None and not is_positive_number(memory_limit_mb):
        raise AutofusionError(
            f"memory_limit_mb: expected a positive number (finite), got {memory_limit_mb!r}"
        )
    if config is not None and not Path(config).is_file():
        raise AutofusionError(f"{os.fspath(config)}: no such config file")
    if memory_limit_mb is None:
        # precedence: the explicit argument > the config's memory_limit_mb > set_memory_limit
        memory_limit_mb = config_memory_limit(os.fspath(config) if config is not None else None)
    if memory_limit_mb is None:
        memory_limit_mb = _default_memory_limit_mb
    say: ProgressFn = stderr_progress() if progress is True else (progress or _quiet)
    instance_policy = policy is not None and not isinstance(policy, str)
    use_cache = cache and not instance_policy
    if use_cache:
        cache_mod.size_limit()  # a bad AUTOFUSION_CACHE_MAX_MB fails before the build
    source = open_model(model, label, input_shapes, dynamic, config)
    label = label or source.label
    free = source.plan is not None and bool(source.plan.free)
    if one_build is True and free and target != "c":
        raise AutofusionError(
            f"compile(one_build=True): target {target!r} takes no run-time sizes; only "
            "target 'c' builds one library for every shape"
        )
    refused: str | None = None  # why the automatic one build was not possible
    if free and (one_build is True or (one_build is None and auto_one_build(source, target))):
        try:
            return _build_and_load(one_build_source(source), target, config, fusion, threads,
                                   memory_limit_mb, policy, cpu, analysis_window, label,
                                   use_cache, say)  # fmt: skip
        except AutofusionError as e:
            if one_build is True:
                raise
            refused = str(e)
            say(f"no one build for every shape ({refused}); specialising per shape instead")
    elif free:
        from autofusion.frontend.batch import batch_candidate

        if target == "c" and source.plan is not None and batch_candidate(source.plan) is not None:
            try:  # one free batch of a batch-separable model: one library, run-time batch
                source = pin_batch(source)
            except AutofusionError as e:
                say(f"no run-time batch ({e}); specialising per shape instead")
    if free and source.batch is None:
        # unpinned symbols: specialise per shape
        from autofusion.dynamic import dynamic_model

        kwargs = {"target": target, "config": config, "fusion": fusion, "threads": threads,
                  "memory_limit_mb": memory_limit_mb, "policy": policy, "progress": say,
                  "cache": cache, "label": label, "dynamic": dynamic,
                  "cpu": cpu, "analysis_window": analysis_window}  # fmt: skip
        dm = dynamic_model(model, source, kwargs, say)
        dm.one_build_refused = refused
        return dm
    return _build_and_load(source, target, config, fusion, threads, memory_limit_mb, policy, cpu,
                           analysis_window, label, use_cache, say)  # fmt: skip


def auto_one_build(source: ModelSource, target: str) -> bool:
    """Whether ``compile(one_build=None)`` tries one build for every shape: target ``c``,
    symbols left unpinned that are not a lone batch (a batch keeps the run-time batch
    library, ``af_run_batch``, whose arena is a single sample's), and a declared range for
    each of them (``dynamic=`` / ``--dynamic`` / the config: the build's memory is planned
    for the upper bounds, which the default 1..4096 would make absurd)."""
    from autofusion.frontend.batch import batch_candidate

    plan = source.plan
    if target != "c" or plan is None or not plan.free or batch_candidate(plan) is not None:
        return False
    return all(plan.origins.get(s) != "default" for s in plan.free)


def _build_and_load(
    source: ModelSource,
    target: str,
    config: str | os.PathLike[str] | None,
    fusion: bool,
    threads: int | None,
    memory_limit_mb: float | None,
    policy: BasePolicy | str | None,
    cpu: str,
    analysis_window: int | None,
    label: str,
    use_cache: bool,
    say: ProgressFn,
) -> CompiledModel:
    """Run the pipeline on ``source`` and load the library: from the compile cache when it
    holds this build, else built and published there (``use_cache``)."""
    from autofusion.runtime import cache as cache_mod

    opts = PipelineOptions(
        target=target,
        fusion=bool(fusion),
        config=os.fspath(config) if config is not None else None,
        policy=_policy_token(policy),
        memory_limit_mb=float(memory_limit_mb) if memory_limit_mb is not None else None,
        cpu=cpu,
        analysis_window=_check_window(analysis_window),
    )
    key = ""
    if use_cache:
        # threads are in the key because a library's thread count is process-global state
        # of that .so: two models sharing one .so with different counts would interfere
        digest = model_digest(source.loaded.model, source.loaded.raws)
        pins = {k: list(v) for k, v in sorted((source.input_shapes or {}).items())}
        fields = {**_options_fingerprint(opts), "threads": threads, "input_shapes": pins}
        if source.batch is not None:
            fields["batch"] = source.batch.report()
        if source.symbols:  # one build for these ranges (the plan is made for their bounds)
            fields["symbols"] = {s: list(r) for s, r in sorted(source.symbols.items())}
        key = cache_mod.cache_key(digest, fields)
        hit = _load_cached(cache_mod.lookup(key, cache_mod.ENTRY_FILES, say), threads, say)
        if hit is not None:
            say(f"using cached build {hit.directory}")
            return hit
    staged = cache_mod.staging_dir()
    try:
        report = build_model_dir(source, staged, opts, label, say)
        del source  # the weights now live in weights.bin; let the proto go before loading
        if not use_cache:
            return CompiledModel(staged, report, threads, owns_directory=True)
    except BaseException:
        cache_mod.discard_staging(staged)
        raise
    entry = cache_mod.publish(staged, key, cache_mod.ENTRY_FILES)
    removed, freed = cache_mod.prune(keep=[key])
    if removed:
        say(f"cache: evicted {removed} least recently used builds ({freed / 2**20:.1f} MB)")
    return CompiledModel(entry, report, threads)


def _check_window(window: object) -> int | None:
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise AutofusionError(f"analysis_window: expected an integer >= 0, got {window!r}")
    return window


def _check_loadable_cpu(cpu: object) -> None:
    """``cpu`` must be a known choice whose build this machine's architecture can load."""
    from autofusion.runtime import toolchain

    toolchain.check_cpu(cpu)
    if toolchain.is_cross(str(cpu)):
        raise AutofusionError(
            f"cpu={cpu!r}: a build for {toolchain.cpu_machine(str(cpu))} cannot be loaded on "
            f"this {platform.machine()} machine; use autofusion-compile --cpu {cpu} -o DIR "
            "and run it there (the folder's main.c)"
        )


def _load_cached(entry: Path | None, threads: int | None,
                 say: ProgressFn = _quiet) -> CompiledModel | None:  # fmt: skip
    """The cached build at ``entry`` (already checked against its manifest by ``lookup``),
    or None when there is none, another process evicted it between the lookup and the load,
    or it does not load: then it is removed and the caller simply builds again."""
    from autofusion.runtime import cache as cache_mod

    if entry is None:
        return None
    try:
        report = json.loads((entry / "report.json").read_text())
        if not isinstance(report, dict):
            raise ValueError("not a JSON object")
        report["cached"] = True
        return CompiledModel(entry, report, threads)
    except (OSError, ValueError, AutofusionError) as e:
        if entry.exists():  # it is still there, so it is what failed
            cache_mod.discard_entry(entry, str(e).splitlines()[0] if str(e) else "unloadable", say)
        return None
