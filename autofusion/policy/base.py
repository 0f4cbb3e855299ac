"""User-facing policy hooks: read-only op views, ``BasePolicy`` and the policy registry.

A user policy is consulted for every producer -> consumer edge that the structure and cost
layers would fuse; returning ``False`` refuses it (reason code ``policy``)::

    class NoSigmoid(autofusion.BasePolicy):
        def should_fuse(self, producer, consumer) -> bool:
            return consumer.op_type != "Sigmoid"

Load it with the pass option ``policy="mypkg.mymod:NoSigmoid"``, or register an instance
(``token = register_policy(NoSigmoid())``) and pass ``policy="@" + token``; the runtime's
``autofusion.compile(..., policy=obj)`` does the latter.
"""

from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from autofusion.errors import AutofusionError
from autofusion.policy.reasons import origins_of

#: nn op name -> ONNX-like op type used by views, blacklists and whitelists.
ONNX_OP_TYPES: dict[str, str] = {
    "nn.conv": "Conv",
    "nn.batch_norm": "BatchNormalization",
    "nn.relu": "Relu",
    "nn.clip": "Clip",
    "nn.leaky_relu": "LeakyRelu",
    "nn.sigmoid": "Sigmoid",
    "nn.tanh": "Tanh",
    "nn.hard_sigmoid": "HardSigmoid",
    "nn.gelu": "Gelu",
    "nn.erf": "Erf",
    "nn.add": "Add",
    "nn.sub": "Sub",
    "nn.mul": "Mul",
    "nn.div": "Div",
    "nn.pow": "Pow",
    "nn.sqrt": "Sqrt",
    "nn.exp": "Exp",
    "nn.log": "Log",
    "nn.max": "Max",
    "nn.min": "Min",
    "nn.neg": "Neg",
    "nn.abs": "Abs",
    "nn.reciprocal": "Reciprocal",
    "nn.matmul": "MatMul",
    "nn.gemm": "Gemm",
    "nn.attention": "Attention",
    "nn.layer_norm": "LayerNormalization",
    "nn.instance_norm": "InstanceNormalization",
    "nn.lrn": "LRN",
    "nn.softmax": "Softmax",
    "nn.log_softmax": "LogSoftmax",
    "nn.max_pool": "MaxPool",
    "nn.avg_pool": "AveragePool",
    "nn.global_avg_pool": "GlobalAveragePool",
    "nn.global_max_pool": "GlobalMaxPool",
    "nn.reduce_mean": "ReduceMean",
    "nn.reduce_sum": "ReduceSum",
    "nn.reduce_max": "ReduceMax",
    "nn.reshape": "Reshape",
    "nn.transpose": "Transpose",
    "nn.concat": "Concat",
    "nn.split": "Split",
    "nn.slice": "Slice",
    "nn.pad": "Pad",
    "nn.gather": "Gather",
    "nn.where": "Where",
    "nn.cast": "Cast",
    "nn.constant": "Constant",
    "nn.elu": "Elu",
    "nn.prelu": "PRelu",
    "nn.softplus": "Softplus",
    "nn.hard_swish": "HardSwish",
    "nn.expand": "Expand",
    "nn.equal": "Equal",
    "nn.less": "Less",
    "nn.greater": "Greater",
    "nn.not": "Not",
    "nn.and": "And",
    "nn.or": "Or",
    "nn.less_equal": "LessOrEqual",
    "nn.greater_equal": "GreaterOrEqual",
    "nn.gather_nd": "GatherND",
    "nn.resize": "Resize",
}

#: Short spellings accepted in blacklist/whitelist chains.
OP_TYPE_ALIASES: dict[str, str] = {
    "BatchNorm": "BatchNormalization",
    "BN": "BatchNormalization",
    "LayerNorm": "LayerNormalization",
    "InstanceNorm": "InstanceNormalization",
    "GELU": "Gelu",
    "Relu6": "Clip",
    "ReLU": "Relu",
    "Dense": "Gemm",
}


def onnx_op_type(op: Operation) -> str:
    """The ONNX-like op type of an nn op (``nn.foo_bar`` -> ``FooBar`` when unlisted)."""
    if op.name in ONNX_OP_TYPES:
        return ONNX_OP_TYPES[op.name]
    short = op.name.split(".", 1)[-1]
    return "".join(part.capitalize() for part in short.split("_"))


def canonical_op_type(name: str) -> str:
    return OP_TYPE_ALIASES.get(name, name)


@dataclass(frozen=True)
class OpView:
    """A read-only view of one op for policies.

    ``op_type`` is ONNX-like (``"Conv"``, ``"Relu"``); ``origins`` are ONNX node names;
    ``input_shapes`` / ``output_shapes`` are static shapes; ``dtype`` is the first result's
    element type as text (``"f32"``).
    """

    op_type: str
    origins: tuple[str, ...]
    input_shapes: tuple[tuple[int, ...], ...]
    output_shapes: tuple[tuple[int, ...], ...]
    dtype: str

    @property
    def shape(self) -> tuple[int, ...]:
        """The first output's shape."""
        return self.output_shapes[0] if self.output_shapes else ()

    @staticmethod
    def of(op: Operation) -> OpView:
        def shp(t: object) -> tuple[int, ...]:
            return tuple(t.get_shape()) if isinstance(t, TensorType) else ()

        dtype = ""
        if op.results and isinstance(op.results[0].type, TensorType):
            dtype = str(op.results[0].type.element_type)
        return OpView(
            onnx_op_type(op),
            tuple(origins_of(op)),
            tuple(shp(v.type) for v in op.operands),
            tuple(shp(r.type) for r in op.results),
            dtype,
        )


class BasePolicy:
    """Subclass and override :meth:`should_fuse`; instances must be deterministic."""

    def __init__(self, **options: Any) -> None:
        self.options = dict(options)

    def should_fuse(self, producer: OpView, consumer: OpView) -> bool:
        """May ``consumer`` be fused into the kernel that computes ``producer``?"""
        return True

    def describe(self) -> str:
        return type(self).__name__


_REGISTRY: dict[str, BasePolicy] = {}
_COUNTER = itertools.count(1)


def register_policy(policy: BasePolicy) -> str:
    """Register a policy instance; returns a token usable as the pass option ``policy="@token"``."""
    if not isinstance(policy, BasePolicy):
        raise AutofusionError(
            "register_policy: expected an autofusion.BasePolicy instance, "
            f"got {type(policy).__name__}"
        )
    for tok, obj in _REGISTRY.items():
        if obj is policy:
            return tok
    token = f"policy{next(_COUNTER)}"
    _REGISTRY[token] = policy
    return token


def load_policy(spec: str, options: dict[str, Any] | None = None) -> BasePolicy:
    """Resolve ``"@token"`` (registry) or ``"module:Class"`` (imported, constructed)."""
    spec = spec.strip()
    if spec.startswith("@"):
        token = spec[1:]
        if token not in _REGISTRY:
            raise AutofusionError(f"policy {spec!r}: no policy registered under this token")
        return _REGISTRY[token]
    mod_name, _, cls_name = (part.strip() for part in spec.partition(":"))
    if ":" not in spec or not mod_name or not cls_name:
        raise AutofusionError(f"policy {spec!r}: expected 'module:Class' or '@token'")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise AutofusionError(
            f"policy {spec!r}: cannot import module {mod_name!r}: {one_line(str(e))}"
        ) from None
    except Exception as e:  # the user's module failed while importing
        raise AutofusionError(
            f"policy {spec!r}: importing module {mod_name!r} raised {exception_text(e)}"
        ) from None
    cls = getattr(mod, cls_name, None)
    if cls is None:
        raise AutofusionError(f"policy {spec!r}: module {mod_name!r} has no {cls_name!r}")
    if isinstance(cls, BasePolicy):
        return cls
    if not (isinstance(cls, type) and issubclass(cls, BasePolicy)):
        raise AutofusionError(
            f"policy {spec!r}: {cls_name} is not an autofusion.BasePolicy subclass"
        )
    try:
        return cls(**(options or {}))
    except TypeError as e:
        raise AutofusionError(
            f"policy {spec!r}: cannot construct {cls_name}: {one_line(str(e))}"
        ) from None
    except Exception as e:  # the user's constructor failed
        args = ", ".join(f"{k}={v!r}" for k, v in (options or {}).items())
        raise AutofusionError(
            f"policy {spec!r}: {cls_name}.__init__({args}) raised {exception_text(e)}"
        ) from None


def one_line(text: str) -> str:
    """``text`` with its line breaks folded, so a user's message stays one error line."""
    return " ".join(text.split())


def exception_text(e: BaseException) -> str:
    """``ValueError: the message`` of an exception raised by user code, on one line."""
    msg = one_line(str(e))
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def policy_name(policy: BasePolicy) -> str:
    """``module.Class`` of a user policy, for messages (never calls user code)."""
    cls = type(policy)
    return f"{cls.__module__}.{cls.__qualname__}"
