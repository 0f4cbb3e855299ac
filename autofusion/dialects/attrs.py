"""The discardable attributes autofusion puts on IR, by name, with typed accessors.

One table instead of bare strings in every module (``test_attr_names.py`` keeps it that way:
an attribute name spelled out anywhere else in ``autofusion/`` fails it). Who writes what:

| name | on | written by | meaning |
|---|---|---|---|
| ``onnx.origins`` | nn ops, lowered funcs | importer, rewrites | ONNX nodes the op came from |
| ``onnx.name`` | func arg/result attrs | importer | the ONNX graph input/output name |
| ``memory.offsets`` | ops with results | plan-buffers | arena byte offset per result (-1: none) |
| ``memory.arena_bytes`` ... | module | plan-buffers | arena size, naive and lower-bound bytes |
| ``memory.heuristic`` | module | plan-buffers | the placement heuristic that won |
| ``memory.concat_plan`` | module | plan-buffers | concat plan chosen: in-place or copies |
| ``memory.tile`` | fusion.kernel | tile-fusion | the tiling record of a split kernel |
| ``memory.concat_inplace`` | nn.concat | plan-buffers | per operand, 1 if written in place |
| ``memory.residual_inplace`` | fusion.kernel | plan-buffers | per result, the operand overwritten |
| ``c.alias_args`` | lowered funcs | convert-nn-to-buffers | argument indices that share bytes |
| ``precision.storage`` | nn.constant | assign-precision | 16-bit storage type of a weight |
| ``precision.casts`` | nn.matmul/gemm/conv | assign-precision | inputs cast fp32 -> 16-bit there |
| ``precision.groups`` | module | validate-precision | measured error per fused group |
| ``fusion.policy`` | module | fuse | the policy and options that decided |
| ``fusion.refusals`` | module | fusion passes | refusals with reason codes |
| ``fusion.fast_math`` | fusion.kernel | fuse | op types allowed fast approximations |
| ``fusion.decided_by`` | fusion.kernel | fuse passes | the layer that decided the group |
| ``sibling.pieces`` | nn.conv | merge-sibling-convs | output channels of each joined conv |
| ``sibling.decided_by`` | nn.conv | merge-sibling-convs | the layer that decided the join |
| ``c.role`` | func arg attrs | convert-nn-to-buffers | ``input``/``output``/``symbol`` (C API) |
| ``c.symbol`` | func arg attrs | convert-nn-to-buffers | the symbol an ``index`` argument holds |
| ``c.shape`` | @main arg attrs | convert-nn-to-buffers | a symbolic input/output's sizes |
| ``c.pattern`` | lowered funcs | convert-nn-to-buffers | the fused kernel's pattern |
| ``c.work`` | lowered funcs | convert-nn-to-buffers | FLOPs and bytes of one call |
| ``c.epilogue`` | lowered funcs | lower-nn-to-loops | an epilogue (``clib.EPILOGUE_PARAMS``) |
| ``c.parallel`` | scf.for | C builder | the loop the printer parallelises |
| ``c.batch`` | module | compile driver | run-time batch: symbol, range, batched inputs/outputs |
| ``nn.symbols`` | module | importer (symbolic mode) | each symbol's declared range ``[LO, HI]`` |
| ``ascendc.fallback`` | fusion.kernel, nn op | lower-fusion-to-ascendc | why it runs on the host |
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr
from xdsl.ir import Attribute, Operation

ORIGINS = "onnx.origins"
ONNX_NAME = "onnx.name"
MEMORY_OFFSETS = "memory.offsets"
MEMORY_ARENA_BYTES = "memory.arena_bytes"
MEMORY_NAIVE_BYTES = "memory.naive_bytes"
MEMORY_LOWER_BOUND_BYTES = "memory.lower_bound_bytes"
MEMORY_HEURISTIC = "memory.heuristic"
MEMORY_CONCAT_PLAN = "memory.concat_plan"
MEMORY_TILE = "memory.tile"
MEMORY_CONCAT_INPLACE = "memory.concat_inplace"
MEMORY_RESIDUAL_INPLACE = "memory.residual_inplace"
PRECISION_STORAGE = "precision.storage"
PRECISION_CASTS = "precision.casts"
PRECISION_GROUPS = "precision.groups"
LAYOUT_X = "layout.x"  # assign-layout: an nn.conv reads its x in this layout ("nchw16c")
LAYOUT_Y = "layout.y"  # assign-layout: an nn.conv writes its y in this layout
BLOCKED_LAYOUT = "nchw16c"  # the one blocked layout LAYOUT_X / LAYOUT_Y name
LAYOUT_SUMMARY = "layout.summary"  # assign-layout: on the function, its decisions in numbers
FUSION_POLICY = "fusion.policy"
FUSION_REFUSALS = "fusion.refusals"
FUSION_FAST_MATH = "fusion.fast_math"
FUSION_DECIDED_BY = "fusion.decided_by"
SIBLING_PIECES = "sibling.pieces"  # merge-sibling-convs: a joined conv's pieces (channels)
SIBLING_DECIDED_BY = "sibling.decided_by"  # merge-sibling-convs: the layer that decided
SYMBOLS = "nn.symbols"  # symbolic import: {symbol: [LO, HI]} on the module
C_ROLE = "c.role"
C_SYMBOL = "c.symbol"  # symbolic sizes: the symbol an index argument of a lowered function holds
C_SHAPE = "c.shape"  # symbolic sizes: an @main input/output's dims (#nn.shape), for the C API
C_PATTERN = "c.pattern"
C_ALIAS_ARGS = "c.alias_args"
C_WORK = "c.work"
C_EPILOGUE = "c.epilogue"
C_PARALLEL = "c.parallel"
C_SIMD = "c.simd"  # an innermost loop printed under `omp simd` (lowering/c/builder.py, nest)
C_BATCH = "c.batch"
ASCENDC_FALLBACK = "ascendc.fallback"


def is_blocked(op: Operation, key: str) -> bool:
    """Whether ``assign-layout`` marked ``op``'s ``key`` (``LAYOUT_X`` / ``LAYOUT_Y``) blocked."""
    a = op.attributes.get(key)
    return isinstance(a, StringAttr) and a.data == BLOCKED_LAYOUT


def string_list(attr: Attribute | None) -> list[str]:
    """The strings of an ``ArrayAttr`` of ``StringAttr`` (anything else: empty)."""
    if isinstance(attr, ArrayAttr):
        return [a.data for a in attr.data if isinstance(a, StringAttr)]
    return []


def origin_names(op: Operation) -> list[str]:
    """The op's ``onnx.origins`` (ONNX node names), empty when it has none."""
    return string_list(op.attributes.get(ORIGINS))


def set_origin_names(op: Operation, names: Sequence[str]) -> None:
    op.attributes[ORIGINS] = ArrayAttr([StringAttr(n) for n in names])


def name_dict(name: str) -> DictionaryAttr:
    """The arg/result attribute dictionary ``{onnx.name = "name"}``."""
    return DictionaryAttr({ONNX_NAME: StringAttr(name)})


def onnx_name(attrs: Attribute | None) -> str | None:
    """``onnx.name`` from an arg/result attribute dictionary, or None."""
    if isinstance(attrs, DictionaryAttr):
        name = attrs.data.get(ONNX_NAME)
        if isinstance(name, StringAttr):
            return name.data
    return None
