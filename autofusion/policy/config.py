"""Fusion configuration files (JSON or YAML) and their validation.

Keys (unknown keys are errors naming the key and the file)::

    aggressiveness: 1            # 0..3; env AUTOFUSION_AGGRESSIVENESS overrides the default
    blacklist: ["Conv->InstanceNorm", {pattern: "LayerNorm->Dropout"}]   # never fuse these
    whitelist: ["MatMul->Add"]   # fuse these chains even when the cost model says no
    patterns: {conv_bn_relu: true, elementwise: false}         # per-family switches
    memory_limit_mb: 512         # tile fused groups so the arena fits (finite, > 0)
    concat_inplace: auto         # true: concat operands written straight into their slice
                                 # (no copy); false: copied; auto: in place unless copies
                                 # shrink the arena a lot (docs/memory.md)
    residual_inplace: true       # a fused conv/matmul written over the residual it adds
    conv_layout: auto            # auto: 3x3 convs the measured rule picks run on the blocked
                                 # direct kernel (NCHW16c, AVX-512 builds); nchw: never
    precision: {fp32_ops: ["Softmax"], fp16_ops: ["Conv"], bf16_ops: ["MatMul"]}
                                 # storage type per ONNX op type (assign-precision pass);
                                 # ``precision_config`` is accepted as another name for it
    precision: {validate: true, tolerance: 1e-3, calibration: inputs.npz}
                                 # run each fused group of the built C against the fp32
                                 # reference; roll back groups over the tolerance
    fast_math: ["Tanh", "Erf"]   # fused groups holding these ops use fast approximate math
    hardware: cpu                # cost-model target: cpu | ascend910b
    strategy: rules              # who decides profitability: rules | learned | hybrid
    analysis_window: 0           # structure analysis in windows of N ops (0: whole graph)
    policy: "mypkg.mod:MyPolicy" # user policy (module:Class or @token)
    policy_options: {threshold: 3}  # keyword arguments for the user policy's constructor
    dynamic: {seq: [1, 512]}     # declared range of each symbolic input dim (1 <= LO <= HI)
    dynamic_shape_cache: {enabled: true, size: 50}   # shapes a dynamic model keeps loaded

Chains are ONNX op types joined by ``->`` (``*`` matches any op), written as a string or as
``{pattern: "A->B"}``; a name that is neither an ONNX op type, an accepted short spelling
(``BN``, ``LayerNorm``, ...) nor ``*`` is an error. See docs/fusion.md.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autofusion.errors import AutofusionError
from autofusion.policy.base import canonical_op_type

ENV_AGGRESSIVENESS = "AUTOFUSION_AGGRESSIVENESS"
DEFAULT_AGGRESSIVENESS = 1

#: Pattern families a config can switch on/off, with the aggressiveness they need
#: (the recognize-* rewrites are not fusion: only their ``patterns`` switch applies).
FAMILIES: dict[str, int] = {
    "fold_batchnorm": 1,
    "conv_bn_relu": 1,
    "conv_chain": 1,
    "conv_pool": 1,
    "conv_pair": 1,
    "sibling_convs": 1,
    "layernorm": 0,
    "gelu": 0,
    "attention": 0,
    "conv_epilogue": 1,
    "matmul_epilogue": 1,
    "gemm_epilogue": 1,
    "attention_epilogue": 1,
    "elementwise": 1,
    "materialize": 1,
    "recompute": 2,
    "layernorm_epilogue": 2,
    "softmax_epilogue": 2,
}

#: The keys of ``precision``: the ONNX op types stored in each type.
PRECISION_KEYS = ("fp32_ops", "fp16_ops", "bf16_ops")
#: ONNX op types whose weights fp16_ops / bf16_ops can store in 16 bits (assign-precision).
REDUCED_OPS = ("Conv", "Gemm", "MatMul")

KNOWN_KEYS = (
    "aggressiveness",
    "blacklist",
    "whitelist",
    "patterns",
    "memory_limit_mb",
    "concat_inplace",
    "residual_inplace",
    "conv_layout",
    "precision",
    "precision_config",
    "hardware",
    "policy",
    "policy_options",
    "dynamic",
    "dynamic_shape_cache",
    "fast_math",
    "strategy",
    "analysis_window",
)
#: ``precision`` keys that configure validation (the others select types per op).
VALIDATION_KEYS = ("validate", "tolerance", "calibration")
#: Op types whose fused kernels have a fast-math variant (``fast_math`` config key).
FAST_MATH_OPS = ("Exp", "Tanh", "Erf", "Gelu", "Sigmoid")
DEFAULT_TOLERANCE = 1e-3
DEFAULT_SHAPE_CACHE_SIZE = 50
HARDWARE_NAMES = ("cpu", "ascend910b")
#: ``strategy``: the rules and roofline alone, the learned kernel-time model for every
#: join, or the model only for clusters of more than ``learned.LEARNED_MIN_OPS`` ops.
STRATEGIES = ("rules", "learned", "hybrid")
DEFAULT_STRATEGY = "rules"
#: ``conv_layout``: let the lowering put convs on the blocked direct kernel where the
#: measured rule says it wins (``clib.nchwc_applies``), or keep every conv on the NCHW paths.
CONV_LAYOUTS = ("auto", "nchw")


@dataclass(frozen=True)
class FusionConfig:
    """A validated configuration; defaults are the built-in policy."""

    aggressiveness: int = DEFAULT_AGGRESSIVENESS
    blacklist: tuple[tuple[str, ...], ...] = ()
    whitelist: tuple[tuple[str, ...], ...] = ()
    patterns: dict[str, bool] = field(default_factory=dict)
    memory_limit_mb: float | None = None
    #: plan-buffers / tile-fusion write concat operands into their slice (docs/memory.md);
    #: "auto": plan-buffers picks in place or copies per model
    concat_inplace: bool | str = "auto"
    #: plan-buffers writes a fused conv/matmul over the residual it adds (docs/memory.md)
    residual_inplace: bool = True
    #: ``conv_layout`` (CONV_LAYOUTS; docs/fusion.md)
    conv_layout: str = "auto"
    precision: dict[str, tuple[str, ...]] = field(default_factory=dict)
    hardware: str = "cpu"
    policy: str | None = None
    policy_options: dict[str, Any] = field(default_factory=dict)
    #: symbol -> (LO, HI); checked against the model's symbols when it is compiled
    dynamic: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: how many shapes a shape-specialising model keeps loaded (1 when disabled)
    shape_cache_enabled: bool = True
    shape_cache_size: int = DEFAULT_SHAPE_CACHE_SIZE
    #: ``precision.validate`` / ``tolerance`` / ``calibration`` (docs/fusion.md)
    validate: bool = False
    tolerance: float = DEFAULT_TOLERANCE
    calibration: str | None = None
    #: op types whose fused groups use approximate exp/tanh/erf (``fast_math``)
    fast_math: tuple[str, ...] = ()
    #: ``strategy`` (docs/fusion.md, "The learned strategy")
    strategy: str = DEFAULT_STRATEGY
    #: ``analysis_window``: ops per structure-analysis window, 0 = whole graph
    analysis_window: int = 0
    source: str = "<defaults>"

    @property
    def shape_cache_capacity(self) -> int:
        return self.shape_cache_size if self.shape_cache_enabled else 1

    def family_enabled(self, family: str) -> bool:
        return self.patterns.get(family, True)


@functools.cache
def known_op_types() -> frozenset[str]:
    """Names a chain may use: every ONNX op type (default domain, any opset) and the op type
    of every ``nn`` op (``Attention``, ``Gelu``, ...)."""
    import onnx.defs

    from autofusion.dialects.nn import NN
    from autofusion.policy.base import onnx_op_type

    schemas = onnx.defs.get_all_schemas_with_history()
    names = {s.name for s in schemas if s.domain in ("", "ai.onnx")}
    names.update(onnx_op_type(op) for op in NN.operations)  # type: ignore[arg-type]
    return frozenset(names)


def _op_type(name: str, text: str, where: str) -> str:
    op = canonical_op_type(name)
    if op == "*" or op in known_op_types():
        return op
    near = difflib.get_close_matches(op, sorted(known_op_types()), n=3)
    hint = f" (did you mean {', '.join(near)}?)" if near else ""
    what = f"chain {text!r} names {name!r}, which" if text != name else repr(name)
    raise AutofusionError(f"{where}: {what} is not an ONNX op type{hint}")


def parse_chain(entry: object, where: str) -> tuple[str, ...]:
    """``"Conv->BN->Relu"`` (or ``{"pattern": "Conv->BN->Relu"}``) ->
    ``("Conv", "BatchNormalization", "Relu")``."""
    text = entry
    if isinstance(entry, dict):
        extra = sorted(set(entry) - {"pattern"})
        if extra or "pattern" not in entry:
            raise AutofusionError(
                f"{where}: a chain object has exactly one key, 'pattern' "
                f"(got {', '.join(map(repr, entry)) or 'none'})"
            )
        text = entry["pattern"]
    if not isinstance(text, str):
        raise AutofusionError(
            f"{where}: chain entries must be strings like 'Conv->Relu' or "
            f"{{pattern: 'Conv->Relu'}}, got {entry!r}"
        )
    names = [p.strip() for p in text.split("->")]
    if len(names) < 2 or any(not p for p in names):
        raise AutofusionError(
            f"{where}: chain {text!r} must name at least two op types joined by '->'"
        )
    return tuple(_op_type(n, text, where) for n in names)


def is_positive_number(value: object) -> bool:
    """A finite int or float > 0; ``True``/``False`` are not numbers here (YAML ``yes`` and
    ``.nan`` parse to a bool and a NaN, and neither is a meaningful limit)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value > 0


def env_aggressiveness() -> int | None:
    raw = os.environ.get(ENV_AGGRESSIVENESS)
    if raw is None or raw.strip() == "":
        return None
    try:
        level = int(raw)
    except ValueError:
        raise AutofusionError(f"{ENV_AGGRESSIVENESS}={raw!r}: expected an integer 0..3") from None
    if not 0 <= level <= 3:
        raise AutofusionError(f"{ENV_AGGRESSIVENESS}={raw!r}: expected an integer 0..3")
    return level


def config_from_dict(data: Any, source: str = "<dict>") -> FusionConfig:
    """Validate a parsed config mapping; every problem names the key and ``source``."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise AutofusionError(
            f"{source}: a fusion config must be a mapping, got {type(data).__name__}"
        )
    for key in data:
        if key not in KNOWN_KEYS:
            raise AutofusionError(
                f"{source}: unknown config key {key!r} (known: {', '.join(KNOWN_KEYS)})"
            )
    env_level = env_aggressiveness()
    level = data.get(
        "aggressiveness", env_level if env_level is not None else DEFAULT_AGGRESSIVENESS
    )
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 3:
        raise AutofusionError(f"{source}: 'aggressiveness' must be an integer 0..3, got {level!r}")

    def chains(key: str) -> tuple[tuple[str, ...], ...]:
        items = data.get(key, [])
        if not isinstance(items, list):
            raise AutofusionError(
                f"{source}: {key!r} must be a list of 'A->B' chains or {{pattern: 'A->B'}} objects"
            )
        return tuple(parse_chain(c, f"{source}: {key!r}") for c in items)

    patterns = data.get("patterns", {})
    if not isinstance(patterns, dict):
        raise AutofusionError(f"{source}: 'patterns' must map pattern families to true/false")
    for fam, on in patterns.items():
        if fam not in FAMILIES:
            raise AutofusionError(
                f"{source}: 'patterns' names unknown family {fam!r} (known: {', '.join(FAMILIES)})"
            )
        if not isinstance(on, bool):
            raise AutofusionError(f"{source}: 'patterns.{fam}' must be true or false, got {on!r}")

    limit = data.get("memory_limit_mb")
    if limit is not None and not is_positive_number(limit):
        raise AutofusionError(
            f"{source}: 'memory_limit_mb' must be a positive number (finite, MiB), got {limit!r}"
        )

    concat_inplace = data.get("concat_inplace", "auto")
    if not isinstance(concat_inplace, bool) and concat_inplace != "auto":
        raise AutofusionError(
            f"{source}: 'concat_inplace' must be true, false or auto, got {concat_inplace!r}"
        )

    residual_inplace = data.get("residual_inplace", True)
    if not isinstance(residual_inplace, bool):
        raise AutofusionError(
            f"{source}: 'residual_inplace' must be true or false, got {residual_inplace!r}"
        )

    conv_layout = data.get("conv_layout", "auto")
    if conv_layout not in CONV_LAYOUTS:
        raise AutofusionError(
            f"{source}: 'conv_layout' must be one of {', '.join(CONV_LAYOUTS)}, got {conv_layout!r}"
        )

    if "precision" in data and "precision_config" in data:
        raise AutofusionError(
            f"{source}: 'precision' and 'precision_config' are one key (two names); give one"
        )
    pkey = "precision_config" if "precision_config" in data else "precision"
    precision_raw = data.get(pkey, {})
    if not isinstance(precision_raw, dict):
        raise AutofusionError(
            f"{source}: {pkey!r} must be a mapping with fp32_ops / fp16_ops / bf16_ops"
        )
    precision: dict[str, tuple[str, ...]] = {}
    validate, tolerance, calibration = _validation(precision_raw, pkey, source)
    for k, v in precision_raw.items():
        if k in VALIDATION_KEYS:
            continue
        if k not in PRECISION_KEYS:
            raise AutofusionError(
                f"{source}: unknown config key '{pkey}.{k}' "
                f"(known: {', '.join(PRECISION_KEYS + VALIDATION_KEYS)})"
            )
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise AutofusionError(f"{source}: '{pkey}.{k}' must be a list of op types")
        where = f"{source}: '{pkey}.{k}'"
        precision[k] = tuple(_op_type(x, x, where) for x in v)
    for k in ("fp16_ops", "bf16_ops"):
        other = [o for o in precision.get(k, ()) if o not in REDUCED_OPS]
        if other:
            raise AutofusionError(
                f"{source}: '{pkey}.{k}' lists {', '.join(other)}; only the weights of "
                f"{', '.join(REDUCED_OPS)} are stored in reduced precision"
            )
    for i, a in enumerate(PRECISION_KEYS):
        for b in PRECISION_KEYS[i + 1 :]:
            both = set(precision.get(a, ())) & set(precision.get(b, ()))
            if both:
                raise AutofusionError(
                    f"{source}: {pkey!r} lists {', '.join(sorted(both))} in both {a} and {b}"
                )

    hardware = data.get("hardware", "cpu")
    if hardware not in HARDWARE_NAMES:
        raise AutofusionError(
            f"{source}: 'hardware' must be one of {', '.join(HARDWARE_NAMES)}, got {hardware!r}"
        )
    policy = data.get("policy")
    if policy is not None and not isinstance(policy, str):
        raise AutofusionError(f"{source}: 'policy' must be a string 'module:Class' or '@token'")
    options = data.get("policy_options", {})
    if not isinstance(options, dict):
        raise AutofusionError(f"{source}: 'policy_options' must be a mapping")
    from autofusion.frontend.symbols import check_ranges

    strategy = data.get("strategy", DEFAULT_STRATEGY)
    if strategy not in STRATEGIES:
        raise AutofusionError(
            f"{source}: 'strategy' must be one of {', '.join(STRATEGIES)}, got {strategy!r}"
        )
    window = data.get("analysis_window", 0)
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise AutofusionError(
            f"{source}: 'analysis_window' must be an integer >= 0 (0: whole graph), got {window!r}"
        )
    dynamic = check_ranges(data.get("dynamic"), "dynamic", source)
    enabled, size = _shape_cache(data.get("dynamic_shape_cache"), source)
    return FusionConfig(
        aggressiveness=level,
        blacklist=chains("blacklist"),
        whitelist=chains("whitelist"),
        patterns=dict(patterns),
        memory_limit_mb=float(limit) if limit is not None else None,
        concat_inplace=concat_inplace,
        residual_inplace=residual_inplace,
        conv_layout=conv_layout,
        precision=precision,
        hardware=hardware,
        policy=policy,
        policy_options=dict(options),
        dynamic=dynamic,
        shape_cache_enabled=enabled,
        shape_cache_size=size,
        validate=validate,
        tolerance=tolerance,
        calibration=calibration,
        fast_math=_fast_math(data.get("fast_math", []), source),
        strategy=strategy,
        analysis_window=window,
        source=source,
    )


def _validation(raw: dict[str, Any], pkey: str, source: str) -> tuple[bool, float, str | None]:
    """``precision.validate`` (bool), ``tolerance`` (finite > 0), ``calibration`` (an .npz
    path, relative to the config file's folder)."""
    validate = raw.get("validate", False)
    if not isinstance(validate, bool):
        raise AutofusionError(
            f"{source}: '{pkey}.validate' must be true or false, got {validate!r}"
        )
    tolerance = raw.get("tolerance", DEFAULT_TOLERANCE)
    if not is_positive_number(tolerance):
        raise AutofusionError(
            f"{source}: '{pkey}.tolerance' must be a finite number > 0, got {tolerance!r}"
        )
    calibration = raw.get("calibration")
    if calibration is not None:
        if not isinstance(calibration, str) or not calibration:
            raise AutofusionError(f"{source}: '{pkey}.calibration' must be a path to an .npz file")
        if not os.path.isabs(calibration) and source not in ("<dict>", "<defaults>"):
            calibration = os.path.join(os.path.dirname(source), calibration)
        if not os.path.isfile(calibration):
            raise AutofusionError(f"{source}: '{pkey}.calibration': no such file {calibration}")
    if not validate and ("tolerance" in raw or calibration is not None):
        raise AutofusionError(
            f"{source}: '{pkey}.tolerance' and '{pkey}.calibration' need '{pkey}.validate: true'"
        )
    return validate, float(tolerance), calibration


def _fast_math(value: object, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise AutofusionError(f"{source}: 'fast_math' must be a list of op types")
    ops = tuple(canonical_op_type(x) for x in value)
    for name in ops:
        if name not in FAST_MATH_OPS:
            raise AutofusionError(
                f"{source}: 'fast_math' names {name!r}, which has no fast-math variant "
                f"(known: {', '.join(FAST_MATH_OPS)})"
            )
    return ops


def _shape_cache(value: object, source: str) -> tuple[bool, int]:
    """``dynamic_shape_cache: {enabled: bool, size: int >= 1}`` (both keys optional)."""
    if value is None:
        return True, DEFAULT_SHAPE_CACHE_SIZE
    key = "dynamic_shape_cache"
    if not isinstance(value, dict):
        raise AutofusionError(f"{source}: {key!r} must be a mapping with enabled / size")
    for k in value:
        if k not in ("enabled", "size"):
            raise AutofusionError(
                f"{source}: unknown config key '{key}.{k}' (known: enabled, size)"
            )
    enabled = value.get("enabled", True)
    if not isinstance(enabled, bool):
        raise AutofusionError(f"{source}: '{key}.enabled' must be true or false, got {enabled!r}")
    size = value.get("size", DEFAULT_SHAPE_CACHE_SIZE)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise AutofusionError(f"{source}: '{key}.size' must be an integer >= 1, got {size!r}")
    return enabled, size


def load_config(path: str | os.PathLike[str] | None) -> FusionConfig:
    """Read a JSON (``.json``) or YAML (anything else) config; ``None`` gives the defaults."""
    if path is None or str(path) == "":
        return config_from_dict({}, "<defaults>")
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise AutofusionError(f"{p}: cannot read fusion config: {e.strerror}") from None
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except (json.JSONDecodeError, ValueError) as e:
        raise AutofusionError(f"{p}: not valid JSON/YAML: {e}") from None
    except Exception as e:  # yaml.YAMLError and friends
        raise AutofusionError(f"{p}: not valid YAML: {e}") from None
    return config_from_dict(data, str(p))
