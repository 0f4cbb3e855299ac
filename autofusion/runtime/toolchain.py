"""Where the runtime's C pieces live and how to compile against them.

One place for the paths and flags that every C build in autofusion uses: the runtime headers
(``afrt.h``), the scipy-openblas32 library (GEMM core) and the system C compiler.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from autofusion.errors import AutofusionError

INCLUDE_DIR = Path(__file__).resolve().parent / "include"

#: Flags for an optimised build (the default for libmodel.so).
OPT_FLAGS = ["-O3", "-march=native", "-fopenmp", "-fPIC", "-std=c11"]
#: Flags that make every warning an error (generated code must be warning-free).
WERROR_FLAGS = ["-Wall", "-Wextra", "-Werror"]
#: Flags for a sanitizer build (an executable driver, not a dlopen'ed .so).
SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g", "-O1"]


def c_compiler() -> str:
    """The C compiler: ``$CC`` if set, else ``cc``/``gcc`` from PATH."""
    cc = os.environ.get("CC")
    if cc:
        return cc
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return found
    raise AutofusionError("no C compiler found: install gcc or set CC")


def openblas_dirs() -> tuple[Path, Path, str]:
    """(include dir, lib dir, library name) of the scipy-openblas32 wheel."""
    try:
        import scipy_openblas32 as sob
    except ImportError as e:  # pragma: no cover - declared dependency
        raise AutofusionError(
            "the scipy-openblas32 package is required: pip install scipy-openblas32"
        ) from e
    return Path(sob.get_include_dir()), Path(sob.get_lib_dir()), sob.get_library()


def include_flags() -> list[str]:
    """-I flags for afrt.h (the wheel's cblas.h is not needed: afrt.h declares what it uses)."""
    return [f"-I{INCLUDE_DIR}"]


def link_flags() -> list[str]:
    """Link flags for OpenBLAS (with an rpath so the .so finds it at run time) and libm."""
    _, lib_dir, lib = openblas_dirs()
    return [f"-L{lib_dir}", f"-l{lib}", f"-Wl,-rpath,{lib_dir}", "-lm"]
