"""The compile pipeline: one object naming which passes run, in which order, with which options.

:class:`Pipeline` is built from the options (:class:`PipelineOptions`: target, fusion on/off,
config, policy, memory limit, ...) and holds an ordered list of named passes: the tensor
passes below, then the target backend's lowering passes
(:attr:`autofusion.lowering.backend.Backend.lowering`). ``autofusion.compile()``,
``autofusion-compile``, ``autofusion-bench`` and ``autofusion-opt --compile-pipeline`` all run
it; :meth:`Pipeline.pipeline_string` is the ``autofusion-opt -p`` text that does exactly the
same. :meth:`Pipeline.run` verifies the module before the first pass and after every pass, so
a pass that leaves invalid IR is named in an ``AutofusionError``.

Tensor passes (the group decides when a pass is included)::

    canonicalize-nn         cleanup  always: reshape/transpose clean-ups, small constant folding
    fold-batchnorm          fusion   Conv/Gemm + BatchNormalization -> folded weights
    recognize-layernorm     fusion   decomposed LayerNorm -> nn.layer_norm
    recognize-gelu          fusion   Erf/Tanh GELU -> nn.gelu
    recognize-attention     fusion   MatMul-scale-mask-Softmax-MatMul -> attention
    assign-precision        precision only with precision fp16_ops/bf16_ops: 16-bit weights
    merge-sibling-convs     fusion   target c, no memory limit: sibling 1x1 convs + Relu over one
                                     input -> one conv + Relu + split (views)
    fuse-conv-bn-relu       fusion   Conv(+BN)(+bias)(+residual)(+act) -> fusion.kernel
    fuse                    fusion   elementwise chains, epilogues -> fusion.kernel
    fuse-conv-chain         fusion   target c: depthwise -> 1x1 conv kernels in row bands
    assign-layout           fusion   target c with blocked_convs, no memory limit: NCHW16c
                                     between blocked convs
    fuse-conv-pool          fusion   as assign-layout: a blocked stem and its max pool, one kernel
    fuse-conv-pair          fusion   target c, no memory limit: two added 1x1 convs, one GEMM
    fuse-pw-chain           fusion   target c, no memory limit: 1x1 conv -> 1x1 conv kernels in
                                     column blocks (the first output kept in L2 between)
    validate-precision      precision  with validation asked for: roll back imprecise groups
    plan-buffers            memory   always: lifetimes -> arena offsets (in place where safe)
    tile-fusion             tiling   only with a memory limit: tile groups to fit, re-plan
    <backend lowering>      lowering c: convert-nn-to-buffers, legalize-contractions, ...

Options reach a pass only if the pass declares the matching field: ``config`` (path of the
JSON/YAML config), ``policy`` (``module:Class`` or ``@token``), ``memory_limit_mb``; a value is
converted to the field's declared type (an ``int`` limit for a ``float`` field).

The memory limit that tiles is, in order of precedence: the explicit option
(``compile(memory_limit_mb=...)``, ``--memory-limit``), else the config's ``memory_limit_mb``,
else (Python API only) the :func:`autofusion.set_memory_limit` default.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.passes import ModulePass, PassPipeline

from autofusion.errors import AutofusionError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from autofusion.lowering.backend import Backend

#: Tensor-level passes in pipeline order, with the group that decides when each runs.
TENSOR_PASSES: tuple[tuple[str, str], ...] = (
    ("canonicalize-nn", "cleanup"),
    ("fold-batchnorm", "fusion"),
    ("recognize-layernorm", "fusion"),
    ("recognize-gelu", "fusion"),
    ("recognize-attention", "fusion"),
    ("assign-precision", "precision"),
    ("merge-sibling-convs", "fusion"),
    ("fuse-conv-bn-relu", "fusion"),
    ("fuse", "fusion"),
    ("fuse-conv-chain", "fusion"),
    ("assign-layout", "fusion"),
    ("fuse-conv-pool", "fusion"),
    ("fuse-conv-pair", "fusion"),
    ("fuse-pw-chain", "fusion"),
    ("validate-precision", "precision"),
    ("plan-buffers", "memory"),
    ("tile-fusion", "tiling"),
)

#: Targets whose lowering runs fuse-conv-chain's two-conv kernels (``clib.dwpw``).
CONV_CHAIN_TARGETS = ("c",)

#: Targets whose lowering runs fuse-conv-pair's two-input 1x1 convs (``clib.conv_pair``) and
#: fuse-pw-chain's 1x1 -> 1x1 chains (``clib.pw_chain``).
CONV_PAIR_TARGETS = ("c",)

#: Targets that run merge-sibling-convs (measured on the C target only).
SIBLING_CONV_TARGETS = ("c",)

#: Targets whose lowering honours assign-precision's 16-bit weights (``precision.storage``).
REDUCED_PRECISION_TARGETS = ("c",)

#: The group of every backend's lowering passes.
LOWERING = "lowering"

#: PipelineOptions fields the pipeline itself reads (the others belong to backends).
_PIPELINE_FIELDS = ("target", "fusion", "config", "policy", "memory_limit_mb",
                    "validate_precision", "analysis_window")  # fmt: skip


@dataclass(frozen=True)
class PipelineOptions:
    """What the user asked for (``autofusion.compile`` / the CLIs)."""

    target: str = "c"
    fusion: bool = True
    config: str | None = None
    policy: str | None = None
    memory_limit_mb: float | None = None
    cpu: str = "native"  # target c: the CPU the build is for (autofusion.runtime.toolchain.CPUS)
    #: run validate-precision (also on with the config's ``precision: {validate: true}``)
    validate_precision: bool = False
    #: ``fuse``'s structure analysis in windows of N ops (0: whole graph; None: the
    #: config's ``analysis_window``)
    analysis_window: int | None = None
    #: target ascendc: run-time tiling for elementwise / row-wise kernels
    #: (``lower-fusion-to-ascendc{runtime_sizes=true}``)
    runtime_sizes: bool = False


def config_memory_limit(config: str | None) -> float | None:
    """The config file's ``memory_limit_mb`` (validated), or None without one."""
    if not config:
        return None
    from autofusion.policy.config import load_config

    return load_config(config).memory_limit_mb


def _validates(opts: PipelineOptions) -> bool:
    if opts.validate_precision:
        return True
    if not opts.config:
        return False
    from autofusion.policy.config import load_config

    return load_config(opts.config).validate


def config_reduces_precision(config: str | None) -> bool:
    """Whether the config lists any op in ``precision.fp16_ops`` / ``bf16_ops``."""
    if not config:
        return False
    from autofusion.policy.config import load_config

    p = load_config(config).precision
    return bool(p.get("fp16_ops") or p.get("bf16_ops"))


def resolve_options(opts: PipelineOptions) -> PipelineOptions:
    """``opts`` with the config's memory limit filled in when no explicit limit was given,
    so the config key tiles exactly like the option does."""
    if opts.memory_limit_mb is not None:
        return opts
    limit = config_memory_limit(opts.config)
    return opts if limit is None else dataclasses.replace(opts, memory_limit_mb=limit)


def backend_of(opts: PipelineOptions) -> Backend:
    """The registered backend of ``opts.target``; an option only other backends read must
    keep its default (``--cpu`` means nothing to Ascend C)."""
    from autofusion.lowering import BACKENDS, get_backend

    backend = get_backend(opts.target)
    for f in dataclasses.fields(PipelineOptions):
        if f.name in _PIPELINE_FIELDS or f.name in backend.option_fields:
            continue
        if getattr(opts, f.name) != f.default:
            readers = [n for n in BACKENDS if f.name in get_backend(n).option_fields]
            raise AutofusionError(
                f"--{f.name.replace('_', '-')} {getattr(opts, f.name)} applies to --target "
                f"{' or '.join(readers)} only"
            )
    return backend


def _option_values(opts: PipelineOptions) -> dict[str, object]:
    values: dict[str, object] = {}
    if opts.config:
        values["config"] = opts.config
    if opts.policy:
        values["policy"] = opts.policy
    if opts.memory_limit_mb is not None:
        values["memory_limit_mb"] = opts.memory_limit_mb
    if opts.analysis_window is not None:
        values["window_size"] = opts.analysis_window
    if opts.runtime_sizes:
        values["runtime_sizes"] = True  # lower-fusion-to-ascendc
    if opts.config:
        from autofusion.policy.config import load_config

        concat = load_config(opts.config).concat_inplace
        if concat is False:
            values["concat_inplace"] = False  # plan-buffers and tile-fusion
        elif concat is True:
            values["concat_auto"] = False  # plan-buffers: always in place, no choice
        if not load_config(opts.config).residual_inplace:
            values["residual_inplace"] = False  # plan-buffers
    if opts.target == "c":
        values["blocked_convs"] = blocked_convs(opts)  # lower-nn-to-loops
    return values


def blocked_convs(opts: PipelineOptions) -> bool:
    """Whether the C lowering may put convs on the AVX-512 direct kernels (``direct_nchwc``,
    ``direct_1x1``):
    the config's ``conv_layout`` is ``auto`` (the default) and the build for ``opts.cpu``
    has AVX-512 (elsewhere the kernel's portable loops lose to the GEMM paths)."""
    from autofusion.runtime.toolchain import cpu_has_avx512

    if opts.config:
        from autofusion.policy.config import load_config

        if load_config(opts.config).conv_layout == "nchw":
            return False
    return cpu_has_avx512(opts.cpu)


def _coerce(value: object, hint: object) -> object:
    """``value`` as the declared option type ``hint`` where that is a plain widening: an int
    for a ``float`` field (``float | None`` too), an integral float for an ``int`` field."""
    accepted = typing.get_args(hint) if typing.get_origin(hint) is not None else (hint,)
    if isinstance(value, bool):
        return value
    if float in accepted and isinstance(value, int):
        return float(value)
    if int in accepted and float not in accepted and isinstance(value, float):
        return int(value)
    return value


def make_pass(cls: type[ModulePass], values: dict[str, object]) -> ModulePass:
    """``cls`` with the ``values`` whose names are fields of it (others are ignored), each
    converted to the field's declared type; options are range-checked
    (:func:`autofusion.passes.options.check_pass_options`)."""
    from autofusion.passes.options import check_pass_options

    hints = typing.get_type_hints(cls) if dataclasses.is_dataclass(cls) else {}
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    kwargs = {k: _coerce(v, hints.get(k)) for k, v in values.items() if k in fields}
    instance = cls(**kwargs)
    check_pass_options(instance)
    return instance


def _registered() -> dict[str, Callable[[], type[ModulePass]]]:
    from autofusion.passes import get_all_passes

    return get_all_passes()


@dataclass(frozen=True)
class Stage:
    """One pass of a pipeline and the group that put it there."""

    name: str
    group: str
    pass_: ModulePass

    @property
    def spec(self) -> str:
        """The pass as ``-p`` text, with its non-default options."""
        return str(self.pass_.pipeline_pass_spec())


@dataclass(frozen=True)
class Pipeline:
    """An ordered list of named passes (:class:`Stage`), run with verification after each."""

    stages: tuple[Stage, ...]
    options: PipelineOptions = PipelineOptions()

    @classmethod
    def from_options(cls, opts: PipelineOptions) -> Pipeline:
        """The tensor passes ``opts`` asks for, then ``opts.target``'s lowering passes."""
        from xdsl.utils.arg_spec import parse_pipeline

        from autofusion.passes.options import check_pass_options

        backend = backend_of(opts)
        opts = resolve_options(opts)
        available = _registered()
        values = _option_values(opts)
        stages: list[Stage] = []
        for name, group in TENSOR_PASSES:
            if group == "fusion" and not opts.fusion:
                continue
            if group == "tiling" and opts.memory_limit_mb is None:
                continue
            if name == "fuse-conv-chain" and backend.name not in CONV_CHAIN_TARGETS:
                continue
            # tile-fusion slices convs into pieces reading NCHW slices: no blocked edges then
            # (fuse-conv-pool joins only what assign-layout blocked)
            if name in ("assign-layout", "fuse-conv-pool") and not (
                backend.name == "c" and blocked_convs(opts) and opts.memory_limit_mb is None
            ):
                continue
            # the pair's and the 1x1 chain's lowerings are C only; tile-fusion slices convs one
            # by one
            if name in ("fuse-conv-pair", "fuse-pw-chain") and not (
                backend.name in CONV_PAIR_TARGETS and opts.memory_limit_mb is None
            ):
                continue
            # measured on C only; not measured with tile-fusion's slices
            if name == "merge-sibling-convs" and not (
                backend.name in SIBLING_CONV_TARGETS and opts.memory_limit_mb is None
            ):
                continue
            if name == "validate-precision" and not (opts.fusion and _validates(opts)):
                continue
            if name == "assign-precision":
                if not config_reduces_precision(opts.config):
                    continue
                if backend.name not in REDUCED_PRECISION_TARGETS:
                    raise AutofusionError(
                        f"{opts.config}: precision fp16_ops/bf16_ops: target {backend.name} "
                        f"keeps its weights fp32 (16-bit weights: target "
                        f"{', '.join(REDUCED_PRECISION_TARGETS)})"
                    )
            stages.append(Stage(name, group, make_pass(available[name](), values)))
        for spec in parse_pipeline(",".join(backend.lowering)):
            cls_ = available[spec.name]()
            if spec.parameters:  # options written in the backend's pass list win
                p = cls_.from_pass_spec(spec)
                check_pass_options(p)
            else:
                p = make_pass(cls_, values)
            stages.append(Stage(spec.name, LOWERING, p))
        return cls(tuple(stages), opts)

    @classmethod
    def lowering_for(cls, target: str) -> Pipeline:
        """Only the lowering passes of ``target`` (for a module already through the tensor
        passes, e.g. in tests and tools that stop in between)."""
        return cls.from_options(PipelineOptions(target=target)).only(LOWERING)

    def only(self, *groups: str) -> Pipeline:
        """The stages whose group is one of ``groups``, in order."""
        return dataclasses.replace(self, stages=tuple(s for s in self.stages if s.group in groups))

    def tensor(self) -> Pipeline:
        """The stages before lowering."""
        return dataclasses.replace(
            self, stages=tuple(s for s in self.stages if s.group != LOWERING)
        )

    def lowering(self) -> Pipeline:
        """The backend's lowering stages."""
        return self.only(LOWERING)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    @property
    def passes(self) -> list[ModulePass]:
        return [s.pass_ for s in self.stages]

    def pipeline_string(self) -> str:
        """The ``autofusion-opt -p`` text running exactly these passes with these options."""
        return ",".join(s.spec for s in self.stages)

    def xdsl_pipeline(self, progress: Callable[[str], None] | None = None) -> PassPipeline:
        """The passes as an xDSL ``PassPipeline`` whose callback verifies the module before
        the first pass and after every pass (and reports each pass to ``progress``)."""

        def between(prev: ModulePass | None, module: ModuleOp, nxt: ModulePass | None) -> None:
            _verify(module, prev)
            if nxt is not None and progress is not None:
                progress(f"pass {nxt.name}")

        return PassPipeline(tuple(self.passes), between)

    def run(
        self,
        module: ModuleOp,
        ctx: Context | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        """Apply every pass to ``module`` in order, verifying after each; a failing pass or
        verifier is an ``AutofusionError`` naming the pass."""
        from xdsl.utils.exceptions import DiagnosticException, PassFailedException

        current: list[str] = ["(before the first pass)"]

        def track(text: str) -> None:
            current[0] = text.removeprefix("pass ")
            if progress is not None:
                progress(text)

        try:
            self.xdsl_pipeline(track).apply(ctx or make_context(), module)
        except AutofusionError:
            raise
        except PassFailedException as e:
            raise AutofusionError(f"pass {current[0]} failed: {e}") from None
        except DiagnosticException as e:
            raise AutofusionError(f"pass {current[0]} failed: {e}") from None


class PipelineVerifyError(AutofusionError):
    """A pass left IR that does not verify (a bug in the pass, named in the message)."""


def _verify(module: ModuleOp, after: ModulePass | None) -> None:
    from xdsl.utils.exceptions import VerifyException

    try:
        module.verify()
    except VerifyException as e:
        where = f"after pass {after.name}" if after is not None else "before the first pass"
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PipelineVerifyError(f"the IR does not verify {where}: {first}") from None


def pipeline_string(opts: PipelineOptions, include_lowering: bool = True) -> str:
    """The ``-p`` pipeline for ``autofusion-opt`` that reproduces a compile with ``opts``."""
    pipe = Pipeline.from_options(opts)
    return (pipe if include_lowering else pipe.tensor()).pipeline_string()


def lower(module: ModuleOp, target: str, ctx: Context | None = None) -> None:
    """Run ``target``'s lowering passes on a module already through the tensor passes."""
    Pipeline.lowering_for(target).run(module, ctx)


def run_tensor_passes(module: ModuleOp, opts: PipelineOptions = PipelineOptions(),
                      groups: Sequence[str] | None = None) -> None:  # fmt: skip
    """Run the tensor passes of ``opts`` (only ``groups`` if given) on ``module``."""
    pipe = Pipeline.from_options(opts).tensor()
    (pipe.only(*groups) if groups is not None else pipe).run(module)


def make_context() -> Context:
    """An xDSL context with xDSL's dialects and autofusion's registered (lazily)."""
    from xdsl.dialects import get_all_dialects as xdsl_dialects

    from autofusion.dialects import get_all_dialects

    ctx = Context()
    for name, factory in xdsl_dialects().items():
        ctx.register_dialect(name, factory)
    for name, factory in get_all_dialects().items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx
