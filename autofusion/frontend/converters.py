"""Every ONNX converter and folder, registered: importing this module imports the ``convert_*``
modules, whose ``@converter`` / ``@folder`` decorators fill :mod:`autofusion.frontend.registry`.

Kept apart from the registry so that the registry imports no converter and the converters,
which import the registry's decorators, form no import cycle with it.
"""

from __future__ import annotations

from autofusion.frontend import (  # noqa: F401 - imported for their registrations
    convert_attention,
    convert_conv_transpose,
    convert_einsum,
    convert_elementwise,
    convert_gridsample,
    convert_loss,
    convert_nn,
    convert_quantize,
    convert_resize,
    convert_rmsnorm,
    convert_rnn,
    convert_shape,
)
from autofusion.frontend.context import Converter
from autofusion.frontend.registry import CONVERTERS, FOLDERS, Folder


def tables() -> tuple[dict[str, Converter], dict[str, Folder]]:
    """``(op type -> converter, op type -> folder)`` with every converter module registered."""
    return CONVERTERS, FOLDERS
