"""The converter table ``ONNX op type -> converter`` and the folder table
``ONNX op type -> numpy evaluation``.

Converters emit ``nn`` ops for run-time values (and may return :class:`Const` results when
the answer is known at import time, e.g. ``Shape``). Folders evaluate a node whose inputs
are all constants; ops without a folder fall back to ``onnx.reference`` on that one node.
Both tables are filled by the ``convert_*`` modules as they are imported; import
:mod:`autofusion.frontend.converters` (``converters.tables()``) for the complete tables. This
module imports no converter, so the converters can import it without an import cycle.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from autofusion.frontend.context import Converter, NodeCtx

Folder = Callable[[NodeCtx], list[np.ndarray]]

CONVERTERS: dict[str, Converter] = {}
FOLDERS: dict[str, Folder] = {}
# Converters that evaluate constant inputs themselves (data movement ops, Shape, ...).
SELF_FOLDING: set[str] = set()


#: Ops whose converter implements a version newer than :data:`SEMANTICS_OPSET` (an op new in
#: that opset): op type -> the implemented version. The converter also serves the op's earlier
#: versions after :data:`SEMANTICS_OPSET` (Attention 24 only adds an input to Attention 23).
IMPLEMENTED_VERSIONS: dict[str, int] = {}


def converter(
    op_type: str, *, folds: bool = False, version: int | None = None
) -> Callable[[Converter], Converter]:
    """Register ``fn`` for ``op_type``; ``folds`` says it also handles all-constant inputs;
    ``version`` is the op version it implements when newer than :data:`SEMANTICS_OPSET`."""

    def register(fn: Converter) -> Converter:
        CONVERTERS[op_type] = fn
        if version is not None:
            IMPLEMENTED_VERSIONS[op_type] = version
        if folds:
            SELF_FOLDING.add(op_type)
        return fn

    return register


def folder(op_type: str) -> Callable[[Folder], Folder]:
    def register(fn: Folder) -> Folder:
        FOLDERS[op_type] = fn
        return fn

    return register


#: The opset whose op semantics the converters and folders implement.
SEMANTICS_OPSET = 21

#: Op versions newer than :data:`SEMANTICS_OPSET` (up to ``loader.MAX_OPSET``) whose only change
#: is new element types (bfloat16 in 22, float4e2m1 in 23), which the element-type checks refuse
#: on their own; the pooling doc of 22 also states the ceil-mode window rule that
#: ``shapes.pool_out`` already follows. ``test_opsets.py`` checks each entry against
#: ``onnx.defs`` (same attributes, inputs and outputs, types only added) and that no other
#: registered op has a newer version in range.
TYPE_ONLY_VERSIONS: dict[str, tuple[int, ...]] = {
    **dict.fromkeys(
        (
            "AveragePool", "Conv", "ConvTranspose", "Cos", "Dropout", "Elu",
            "GlobalAveragePool", "GlobalMaxPool", "GridSample", "GRU", "HardSigmoid", "HardSwish",
            "InstanceNormalization", "LpPool", "LSTM", "MaxPool", "NegativeLogLikelihoodLoss",
            "RNN", "Round", "Sin", "Softplus",
        ),
        (22,),
    ),
    **dict.fromkeys(("Cast", "CastLike"), (23,)),
    # 28 adds the new small float/int types to its optional/sequence type lists; only the
    # constant folder (onnx.reference) ever evaluates it.
    "OptionalHasElement": (28,),
    # 28 adds bfloat16, which the element-type checks refuse.
    "Einsum": (28,),
    # 24 adds float8e8m0 (and float4e2m1 where 23 lacked it), 25 adds int2/uint2.
    **dict.fromkeys(
        (
            "Constant", "ConstantOfShape", "Flatten", "Identity", "Pad", "Reshape", "Shape",
            "Size", "Squeeze", "Transpose", "Unsqueeze",
        ),
        (23, 24, 25),
    ),
}  # fmt: skip

#: Newer versions whose change is narrower than a new type, reviewed one by one against the
#: ``onnx.defs`` changelog (``test_opsets.py`` checks the listed differences are the only ones).
#: ``types_removed``: ReduceLogSum(Exp)-28 drop the integer types, float semantics unchanged.
#: ``doc_only``: Mod-28 rewrites its doc to define fmod=0 for floats (A - floor(A/B)*B, the
#: folder's numpy rule); the converter still refuses fmod=0 on float tensors.
#: ``new_attribute``: the version adds the attribute; see :func:`node_version_problem`.
REVIEWED_VERSIONS: dict[str, dict[int, str]] = {
    "ReduceLogSum": {28: "types_removed"},
    "ReduceLogSumExp": {28: "types_removed"},
    "Mod": {28: "doc_only"},
    # round_mode (default "up") only rounds casts to float8e8m0, an element type the importer
    # refuses; 24 also changes float8 Inf saturation (refused types). 25/28 add int2/uint2 etc.
    "Cast": {24: "new_attribute", 25: "new_attribute", 28: "new_attribute"},
    "CastLike": {24: "new_attribute", 25: "new_attribute"},
    # stash_type (default 1: accumulate in float32) only applies to float16/bfloat16 inputs.
    "Range": {27: "new_attribute"},
}

#: Per op with a ``new_attribute`` version: the attribute, and the element types of input 0 for
#: which its value changes the result (None: it changes no type the importer accepts). A node
#: whose attribute matters is refused unless the value keeps the older version's semantics.
NEW_ATTRIBUTES: dict[str, tuple[str, tuple[str, ...] | None, object]] = {
    "Cast": ("round_mode", None, "up"),
    "CastLike": ("round_mode", None, "up"),
    "Range": ("stash_type", ("f16", "bf16"), None),
}


def since_version(op_type: str, opset: int) -> int | None:
    """The version of default-domain ``op_type`` in effect at ``opset`` (None: no schema)."""
    import onnx.defs

    try:
        return int(onnx.defs.get_schema(op_type, opset, "").since_version)
    except onnx.defs.SchemaError:
        return None


@functools.cache
def version_problem(op_type: str, opset: int) -> str | None:
    """Why the version of ``op_type`` at ``opset`` is not implemented, or None if it is."""
    since = since_version(op_type, opset)
    if since is None or since <= SEMANTICS_OPSET or since in TYPE_ONLY_VERSIONS.get(op_type, ()):
        return None
    if since in REVIEWED_VERSIONS.get(op_type, {}) or since <= IMPLEMENTED_VERSIONS.get(op_type, 0):
        return None
    return (
        f"{op_type} version {since} (opset {opset}) changed semantics that autofusion does not "
        f"implement (it implements {op_type} up to opset {SEMANTICS_OPSET})"
    )


def node_version_problem(ctx: NodeCtx, opset: int) -> str | None:
    """:func:`version_problem`, plus the node-level check of a version that added an attribute:
    the node is refused where the attribute's value would change what autofusion computes."""
    problem = version_problem(ctx.node.op_type, opset)
    if problem is not None:
        return problem
    op_type = ctx.node.op_type
    since = since_version(op_type, opset)
    if since is None or REVIEWED_VERSIONS.get(op_type, {}).get(since) != "new_attribute":
        return None
    name, affected, keeps = NEW_ATTRIBUTES[op_type]
    if affected is None or not ctx.node.input or not ctx.node.input[0]:
        return None
    elem = str(ctx.elem(0))
    if elem in affected and (keeps is None or ctx.attr(name, keeps) != keeps):
        return (
            f"{op_type} version {since} (opset {opset}) with {elem} input: attribute '{name}' "
            f"changes the result, which autofusion does not implement"
        )
    return None
