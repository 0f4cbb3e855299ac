"""``-t ascendc``: print the Ascend C kernels and the AscendCL host program of a module.

The output is every file ``emit_project`` writes as text, one after another, each preceded
by a ``// ===== <path> =====`` line (weights and the copied CPU model are left out).
The module must have been lowered (``-p lower-fusion-to-ascendc``): a fusion kernel that was
not is an error naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from autofusion.frontend.batch import module_batch
from autofusion.lowering.ascendc.kernel_printer import print_kernel
from autofusion.lowering.ascendc.project import (
    check_lowered,
    kernels_of,
    main_func,
    plan_host,
    print_host,
    print_main,
)


def print_files(module: ModuleOp) -> dict[str, str]:
    """Path -> text of every generated source file of ``module``."""
    check_lowered(module)
    files: dict[str, str] = {}
    for k in kernels_of(module):
        name = k.sym_name.data
        kf = print_kernel(k)
        files[f"kernels/{name}_tiling.h"] = kf.tiling_header
        files[f"kernels/{name}_tiling.cpp"] = kf.tiling_source
        files[f"kernels/{name}.asc"] = kf.kernel_source
    fn = main_func(module)
    plan = plan_host(fn)
    files["host/model.cpp"] = print_host(module, plan)
    files["host/main.cpp"] = print_main(fn, plan, module_batch(module))
    return files


@dataclass(frozen=True)
class AscendCTarget(Target):
    """Ascend C kernels + tiling + AscendCL host code, as text."""

    name: ClassVar[str] = "ascendc"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        for path, text in print_files(module).items():
            output.write(f"// ===== {path} =====\n")
            output.write(text)
