"""The converter table ``ONNX op type -> converter`` and the folder table
``ONNX op type -> numpy evaluation``.

Converters emit ``nn`` ops for run-time values (and may return :class:`Const` results when
the answer is known at import time, e.g. ``Shape``). Folders evaluate a node whose inputs
are all constants; ops without a folder fall back to ``onnx.reference`` on that one node.
Both tables are filled by the ``convert_*`` modules when :func:`tables` first runs.
"""

from __future__ import annotations

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


def tables() -> tuple[dict[str, Converter], dict[str, Folder]]:
    from autofusion.frontend import (  # noqa: F401 - imported for their registrations
        convert_elementwise,
        convert_nn,
        convert_shape,
    )

    return CONVERTERS, FOLDERS
