"""Lowerings and code-generation backends (one folder each), registered lazily by name.

A backend implements :class:`autofusion.lowering.backend.Backend`; adding a target is one
folder and one line in :data:`BACKENDS` (docs/internals.md, "Adding a target"). The printing
``Target`` classes of ``autofusion-opt -t NAME`` come from the same table.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from autofusion.errors import AutofusionError

if TYPE_CHECKING:
    from xdsl.utils.target import Target

    from autofusion.lowering.backend import Backend

#: backend name -> "module:Class" of its Backend (imported on first use)
BACKENDS: dict[str, str] = {
    "c": "autofusion.lowering.c.backend:CBackend",
    "ascendc": "autofusion.lowering.ascendc.backend:AscendCBackend",
}


def get_backend(name: str) -> Backend:
    """The backend registered as ``name``; an unknown name is an ``AutofusionError``."""
    if name not in BACKENDS:
        raise AutofusionError(f"unknown target {name!r}; expected one of {', '.join(BACKENDS)}")
    module, cls = BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), cls)()


def targets_of(kind: type) -> list[str]:
    """The registered names whose backend is a ``kind`` (e.g. ``RunnableBackend``)."""
    return [name for name in BACKENDS if isinstance(get_backend(name), kind)]


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    """``name -> factory`` of every backend's printing Target (``autofusion-opt -t``)."""

    def factory(name: str) -> Callable[[], type[Target]]:
        return lambda: get_backend(name).target()

    return {name: factory(name) for name in BACKENDS}
