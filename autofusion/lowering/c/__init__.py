"""The C backend: lowering passes from nn/fusion IR to func/memref/scf/arith/math (+ clib),
the ``c`` Target that prints one C11 translation unit, and ``emit_model`` writing
``model.c``/``model.h``/``weights.bin``. See docs/c-backend.md."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass

# The standard lowering pipeline from (fused, planned) nn IR to printable buffer IR.
PIPELINE = "convert-nn-to-buffers,lower-nn-to-loops"


def c_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """The C lowering passes, ``name -> factory`` (merged into autofusion.passes)."""

    def convert_nn_to_buffers() -> type[ModulePass]:
        from autofusion.lowering.c.convert_nn_to_buffers import ConvertNNToBuffers

        return ConvertNNToBuffers

    def lower_nn_to_loops() -> type[ModulePass]:
        from autofusion.lowering.c.lower_nn_to_loops import LowerNNToLoops

        return LowerNNToLoops

    return {
        "convert-nn-to-buffers": convert_nn_to_buffers,
        "lower-nn-to-loops": lower_nn_to_loops,
    }


def emit_model(module: ModuleOp, out_dir: str | Path) -> None:
    """Lower ``module`` (if still at nn level) and write model.c, model.h and weights.bin."""
    from autofusion.lowering.c.emit import emit_model as _emit

    _emit(module, Path(out_dir))
