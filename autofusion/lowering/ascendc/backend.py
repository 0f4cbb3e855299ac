"""The ``ascendc`` backend (:class:`autofusion.lowering.backend.Backend`): fusion kernels to
``ascendc`` IR, printed as Ascend C kernels, tiling and an AscendCL host program (a CANN
project). It cannot run here; its kernels run on the CPU functional model
(:mod:`autofusion.lowering.ascendc.cpu_run`), which checks numerics, not NPU speed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.utils.target import Target

    from autofusion.lowering.backend import Runner


class AscendCBackend:
    """Target ``ascendc``: kernels/, host/, weights.bin, manifest.json, CMakeLists.txt."""

    name = "ascendc"
    lowering: tuple[str, ...] = ("lower-fusion-to-ascendc",)
    option_fields: tuple[str, ...] = ("runtime_sizes",)
    latency_note = (
        "Ascend C kernels on the CPU functional model: checks the "
        "generated code's logic; the latency says nothing about an NPU"
    )

    def target(self) -> type[Target]:
        from autofusion.lowering.ascendc.target import AscendCTarget

        return AscendCTarget

    def check_lowered(self, module: ModuleOp) -> None:
        from autofusion.lowering.ascendc.project import check_lowered

        check_lowered(module)

    def emit(self, module: ModuleOp, out_dir: Path) -> None:
        from autofusion.lowering.ascendc.project import emit_project

        emit_project(module, out_dir)

    def simulate(self, module: ModuleOp) -> Runner:
        from autofusion.lowering.ascendc.cpu_run import CpuModelRunner

        return CpuModelRunner(module).run
