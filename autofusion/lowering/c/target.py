"""The ``c`` Target: ``autofusion-opt ... -t c`` prints one C11 translation unit.

The module must already be lowered (``convert-nn-to-buffers,lower-nn-to-loops``); a module
still at the nn level is lowered first with the default pipeline so ``-t c`` works on an
imported model directly. A dynamic dimension or an oversized tensor in any function is
refused first (``autofusion.analysis.static_shapes``), lowered input included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target


@dataclass(frozen=True)
class CTarget(Target):
    name: ClassVar[str] = "c"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from xdsl.dialects import func

        from autofusion.analysis.static_shapes import check_static_shapes
        from autofusion.lowering.c.emit import ensure_lowered
        from autofusion.lowering.c.printer import print_c

        for op in module.ops:
            if isinstance(op, func.FuncOp):
                check_static_shapes(op, "c target")
        ensure_lowered(ctx, module)
        print_c(module, output)
