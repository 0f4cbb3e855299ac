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


def converter(op_type: str, *, folds: bool = False) -> Callable[[Converter], Converter]:
    """Register ``fn`` for ``op_type``; ``folds`` says it also handles all-constant inputs."""

    def register(fn: Converter) -> Converter:
        CONVERTERS[op_type] = fn
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
            "GlobalAveragePool", "GlobalMaxPool", "HardSigmoid", "HardSwish",
            "InstanceNormalization", "MaxPool", "Round", "Sin", "Softplus",
        ),
        (22,),
    ),
    **dict.fromkeys(
        (
            "Cast", "CastLike", "Constant", "ConstantOfShape", "Flatten", "Identity", "Pad",
            "Reshape", "Shape", "Size", "Squeeze", "Transpose", "Unsqueeze",
        ),
        (23,),
    ),
}  # fmt: skip


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
    return (
        f"{op_type} version {since} (opset {opset}) changed semantics that autofusion does not "
        f"implement (it implements {op_type} up to opset {SEMANTICS_OPSET})"
    )
