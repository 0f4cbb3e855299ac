"""The compile pipeline: which passes run, in which order, with which options.

Order (each pass is included only if it is registered in ``autofusion.passes``, so the
pipeline works while passes land; the fusion group is skipped with ``fusion=False``)::

    canonicalize-nn         always   reshape/transpose clean-ups, small constant folding
    fold-batchnorm          fusion   Conv/Gemm + BatchNormalization -> folded weights
    recognize-layernorm     fusion   decomposed LayerNorm -> nn.layer_norm
    recognize-gelu          fusion   Erf/Tanh GELU -> nn.gelu
    recognize-attention     fusion   MatMul-scale-mask-Softmax-MatMul -> attention
    fuse-conv-bn-relu       fusion   Conv(+BN)(+bias)(+residual)(+act) -> fusion.kernel
    fuse                    fusion   elementwise chains, epilogues -> fusion.kernel
    plan-buffers            memory   lifetimes -> arena offsets (in place where safe)
    tile-fusion             memory   only with a memory limit: tile groups to fit, re-plan
    <target lowering>       c: autofusion.lowering.c.PIPELINE (convert-nn-to-buffers, ...)

Options reach a pass only if the pass declares the matching field: ``config`` (path of the
JSON/YAML config), ``policy`` (``module:Class`` or ``@token``), ``memory_limit_mb``.

The memory limit that tiles is, in order of precedence: the explicit option
(``compile(memory_limit_mb=...)``, ``--memory-limit``), else the config's ``memory_limit_mb``,
else (Python API only) the :func:`autofusion.set_memory_limit` default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.passes import ModulePass

#: Tensor-level passes in pipeline order, with the group each belongs to.
TENSOR_PASSES: tuple[tuple[str, str], ...] = (
    ("canonicalize-nn", "cleanup"),
    ("fold-batchnorm", "fusion"),
    ("recognize-layernorm", "fusion"),
    ("recognize-gelu", "fusion"),
    ("recognize-attention", "fusion"),
    ("fuse-conv-bn-relu", "fusion"),
    ("fuse", "fusion"),
    ("plan-buffers", "memory"),
    ("tile-fusion", "tiling"),
)

TARGETS = ("c", "ascendc")


@dataclass(frozen=True)
class PipelineOptions:
    """What the user asked for (``autofusion.compile`` / the CLIs)."""

    target: str = "c"
    fusion: bool = True
    config: str | None = None
    policy: str | None = None
    memory_limit_mb: float | None = None
    cpu: str = "native"  # target c: the CPU the build is for (autofusion.runtime.toolchain.CPUS)


def config_memory_limit(config: str | None) -> float | None:
    """The config file's ``memory_limit_mb`` (validated), or None without one."""
    if not config:
        return None
    from autofusion.policy.config import load_config

    return load_config(config).memory_limit_mb


def resolve_options(opts: PipelineOptions) -> PipelineOptions:
    """``opts`` with the config's memory limit filled in when no explicit limit was given,
    so the config key tiles exactly like the option does."""
    if opts.memory_limit_mb is not None:
        return opts
    limit = config_memory_limit(opts.config)
    return opts if limit is None else dataclasses.replace(opts, memory_limit_mb=limit)


def _option_values(opts: PipelineOptions) -> dict[str, object]:
    values: dict[str, object] = {}
    if opts.config:
        values["config"] = opts.config
    if opts.policy:
        values["policy"] = opts.policy
    if opts.memory_limit_mb is not None:
        values["memory_limit_mb"] = opts.memory_limit_mb
    return values


def _instantiate(cls: type[ModulePass], values: dict[str, object]) -> ModulePass:
    fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
    kwargs: dict[str, object] = {}
    for name, value in values.items():
        if name not in fields:
            continue
        ftype = str(fields[name].type)
        if "float" in ftype and isinstance(value, (int, float)):
            value = float(value)
        elif "int" in ftype and "float" not in ftype and isinstance(value, float):
            value = int(value)
        kwargs[name] = value
    from autofusion.passes.options import check_pass_options

    instance = cls(**kwargs)
    check_pass_options(instance)
    return instance


def _registered() -> dict[str, Callable[[], type[ModulePass]]]:
    from autofusion.passes import get_all_passes

    return get_all_passes()


def tensor_passes(opts: PipelineOptions) -> list[ModulePass]:
    """The tensor-level passes (before lowering) for ``opts``, instantiated."""
    available = _registered()
    opts = resolve_options(opts)
    values = _option_values(opts)
    out: list[ModulePass] = []
    for name, group in TENSOR_PASSES:
        if name not in available:
            continue
        if group == "fusion" and not opts.fusion:
            continue
        if group == "tiling" and opts.memory_limit_mb is None:
            continue
        out.append(_instantiate(available[name](), values))
    return out


def lowering_pipeline(target: str) -> str:
    """The lowering passes of ``target`` as a pipeline string ('' if none are defined yet)."""
    if target == "c":
        from autofusion.lowering import c

        return getattr(c, "PIPELINE", "")
    if target == "ascendc":
        from autofusion.lowering import ascendc

        return getattr(ascendc, "PIPELINE", "")
    from autofusion.errors import AutofusionError

    raise AutofusionError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)}")


def pipeline_string(opts: PipelineOptions, include_lowering: bool = True) -> str:
    """The ``-p`` pipeline for ``autofusion-opt`` that reproduces a compile."""
    parts = [str(p.pipeline_pass_spec()) for p in tensor_passes(opts)]
    if include_lowering:
        low = lowering_pipeline(opts.target)
        if low:
            parts.append(low)
    return ",".join(parts)


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
