"""ONNX frontend: ``import_onnx`` / ``import_onnx_bytes`` turn ONNX models into nn IR
(see docs/frontend.md)."""

from __future__ import annotations

from typing import Any


def import_onnx(*args: Any, **kwargs: Any) -> Any:
    from autofusion.frontend.onnx_import import import_onnx as impl

    return impl(*args, **kwargs)


def import_onnx_bytes(*args: Any, **kwargs: Any) -> Any:
    from autofusion.frontend.onnx_import import import_onnx_bytes as impl

    return impl(*args, **kwargs)
