"""The ``c`` backend (:class:`autofusion.lowering.backend.Backend`): lower to loops and library
calls, print one C11 translation unit, build ``libmodel.so`` with the system compiler and load
it with ctypes. See docs/c-backend.md."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.utils.target import Target

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
        from autofusion.lowering.c.target import CTarget

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

        if default_threads is not None:
            bake_default_threads(out_dir / "model.c", default_threads)
        if say is not None:
            say(f"compiling libmodel.so (--cpu {opts.cpu})")
        build_shared(out_dir, BuildOptions(cpu=opts.cpu))

    def load(self, out_dir: Path, threads: int | None) -> Any:
        from autofusion.runtime.loader import ModelLibrary

        return ModelLibrary(out_dir / "libmodel.so", out_dir / "weights.bin",
                            threads if threads is not None else 0)  # fmt: skip
