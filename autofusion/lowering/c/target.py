"""The ``c`` Target: ``autofusion-opt ... -t c`` prints one C11 translation unit.

The target only prints: the module must already be lowered by the backend's lowering passes
(``CBackend.lowering``: ``convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops``); a
module still holding nn/fusion ops is an error naming the first such op and the ``-p`` to
run. A dynamic dimension or an oversized tensor in any function is refused first
(``autofusion.analysis.static_shapes``), lowered input included.
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
        from autofusion.lowering.c.backend import CBackend
        from autofusion.lowering.c.printer import print_c

        for op in module.ops:
            if isinstance(op, func.FuncOp):
                check_static_shapes(op, "c target")
        CBackend().check_lowered(module)
        print_c(module, output)
