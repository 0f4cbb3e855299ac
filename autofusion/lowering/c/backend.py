"""The ``c`` backend (:class:`autofusion.lowering.backend.Backend`): lower to loops and library
calls, print one C11 translation unit, build ``libmodel.so`` with the system compiler and load
it with ctypes. See docs/c-backend.md.

Its printer, the ``c`` Target (``autofusion-opt ... -t c``), only prints: the module must
already be lowered by :attr:`CBackend.lowering`; a module still holding nn/fusion ops is an
error naming the first such op and the ``-p`` to run. A dynamic dimension or an oversized
tensor in any function is refused first (``autofusion.analysis.static_shapes``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

if TYPE_CHECKING:
    from autofusion.pipeline import PipelineOptions


class CBackend:
    """Target ``c``: model.c, model.h, weights.bin and a buildable package around them."""

    name = "c"
    lowering: tuple[str, ...] = (
        "convert-nn-to-buffers",
        "legalize-contractions",
        "lower-nn-to-loops",
    )
    option_fields: tuple[str, ...] = ("cpu",)

    def target(self) -> type[Target]:
        return CTarget

    def check_lowered(self, module: ModuleOp) -> None:
        from autofusion.lowering.c.emit import check_lowered

        check_lowered(module, self.lowering)

    def emit(self, module: ModuleOp, out_dir: Path) -> None:
        from autofusion.lowering.c.emit import emit_model

        self.check_lowered(module)
        emit_model(module, out_dir)

    def build(
        self,
        out_dir: Path,
        opts: PipelineOptions,
        default_threads: int | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        from autofusion.lowering.c.emit import bake_default_threads
        from autofusion.runtime.build import BuildOptions, build_shared
        from autofusion.runtime.prebuilt import cached_runtime

        if default_threads is not None:
            bake_default_threads(out_dir / "model.c", default_threads)
        options = BuildOptions(cpu=opts.cpu)
        runtime = cached_runtime(options, say)
        if say is not None:
            linked = " against the cached runtime" if runtime is not None else ""
            say(f"compiling libmodel.so (--cpu {opts.cpu}){linked}")
        build_shared(out_dir, options, runtime, say)

    def load(self, out_dir: Path, threads: int | None) -> Any:
        from autofusion.runtime.loader import ModelLibrary

        return ModelLibrary(out_dir / "libmodel.so", out_dir / "weights.bin",
                            threads if threads is not None else 0)  # fmt: skip


@dataclass(frozen=True)
class CTarget(Target):
    """``-t c``: one C11 translation unit (model.c) on the output stream."""

    name: ClassVar[str] = "c"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from xdsl.dialects import func

        from autofusion.analysis.static_shapes import check_static_shapes
        from autofusion.dialects.base import symbol_ranges
        from autofusion.lowering.c.printer import print_c

        symbolic = bool(symbol_ranges(module))
        for op in module.ops:
            if isinstance(op, func.FuncOp):
                check_static_shapes(op, "c target", symbolic=symbolic)
        CBackend().check_lowered(module)
        print_c(module, output)
