"""The C backend (:class:`autofusion.lowering.c.backend.CBackend`): lowering passes from
nn/fusion IR to func/memref/scf/arith/math (+ clib), the ``c`` Target that prints one C11
translation unit, and ``emit_model`` writing ``model.c``/``model.h``/``weights.bin``.
See docs/c-backend.md."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass


def c_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """The C lowering passes, ``name -> factory`` (merged into autofusion.passes)."""

    def convert_nn_to_buffers() -> type[ModulePass]:
        from autofusion.lowering.c.convert_nn_to_buffers import ConvertNNToBuffers

        return ConvertNNToBuffers

    def legalize_contractions() -> type[ModulePass]:
        from autofusion.lowering.c.legalize_contractions import LegalizeContractions

        return LegalizeContractions

    def lower_nn_to_loops() -> type[ModulePass]:
        from autofusion.lowering.c.lower_nn_to_loops import LowerNNToLoops

        return LowerNNToLoops

    return {
        "convert-nn-to-buffers": convert_nn_to_buffers,
        "legalize-contractions": legalize_contractions,
        "lower-nn-to-loops": lower_nn_to_loops,
    }


def emit_model(module: ModuleOp, out_dir: str | Path) -> None:
    """Write model.c, model.h and weights.bin for a module lowered by the c backend's
    lowering passes (``autofusion.pipeline.lower(module, "c")`` runs them)."""
    from autofusion.lowering.c.backend import CBackend

    CBackend().emit(module, Path(out_dir))
