"""autofusion.lowering.ascendc: fused kernels as Ascend C, host code as AscendCL.

Entry points (the backend object is ``backend.AscendCBackend``, registered as ``ascendc``):

* ``lower-fusion-to-ascendc`` (``lower.LowerFusionToAscendC``): fusion.kernel -> ascendc IR;
* ``-t ascendc`` (``target.AscendCTarget``): print kernels, tiling and host code;
* ``emit_project(module, out_dir)``: write the CANN project (kernels, host, weights, CMake)
  of a lowered module;
* ``run_ascendc_cpu(module, feeds)``: build a lowered module's kernels against the CPU
  functional model (``cpu_model/ascendc_cpu_model.h``) and run the model; checks logic, not
  NPU speed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from xdsl.dialects.builtin import ModuleOp


def emit_project(module: ModuleOp, out_dir: str | Path) -> None:
    """Write the Ascend C / AscendCL project of ``module`` into ``out_dir``."""
    from autofusion.lowering.ascendc.project import emit_project as emit

    emit(module, out_dir)


def run_ascendc_cpu(module: ModuleOp, feeds: dict[str, Any]) -> dict[str, np.ndarray]:
    """Run ``module`` with its Ascend C kernels on the CPU functional model (see cpu_run)."""
    from autofusion.lowering.ascendc.cpu_run import run_ascendc_cpu as run

    return run(module, feeds)


__all__ = ["emit_project", "run_ascendc_cpu"]
