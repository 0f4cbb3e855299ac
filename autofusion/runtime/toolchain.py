"""Where the runtime's C pieces live and how to compile against them.

One place for the paths and flags that every C build in autofusion uses: the runtime headers
(``afrt.h``), the CPU a build is for (``--cpu``), the system C compiler (a cross compiler for
``aarch64``) and the scipy-openblas32 library (only kernel tests and benchmarks link it,
with ``-DAFRT_OPENBLAS``; a model build needs libc, libm and libgomp only).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from autofusion.errors import AutofusionError

INCLUDE_DIR = Path(__file__).resolve().parent / "include"
# The runtime headers a build folder needs beside model.c (afrt.h includes the others).
RUNTIME_HEADERS = (
    "afrt.h",
    "afrt_kernels.h",
    "afrt_dwconv.h",
    "afrt_winograd.h",
    "afrt_convchain.h",
    "afrt_nchwc.h",
)

#: Flags for an optimised build (the default for libmodel.so), without the CPU's -march.
#: ``-ffp-contract=fast`` lets the compiler fuse ``a * b + c`` into one FMA where the CPU has
#: it: GCC's default in its GNU modes, but strict ``-std=c11`` turns contraction off, which
#: left every polynomial of the generated math (exp, erf, tanh; so sigmoid, softmax, GELU,
#: Swish epilogues) as separate multiplies and adds (docs/runtime.md, "FMA contraction").
BASE_FLAGS = ["-O3", "-fopenmp", "-fPIC", "-std=c11", "-ffp-contract=fast"]
#: ``BASE_FLAGS`` for this machine's CPU (kernel tests and benchmarks).
OPT_FLAGS = [*BASE_FLAGS, "-march=native"]

#: ``--cpu`` choices -> (machine, -march flags, ISA features the build needs at load time).
#: The x86-64 levels are the psABI's microarchitecture levels (GCC's -march=x86-64-vN); the
#: runtime picks AVX-512 (v4), AVX2+FMA (v3) or portable C kernels from the predefined macros.
CPUS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "native": ("", ("-march=native",), ()),
    "x86-64-v2": ("x86_64", ("-march=x86-64-v2", "-mtune=generic"), ("sse4_2", "popcnt")),
    "x86-64-v3": ("x86_64", ("-march=x86-64-v3", "-mtune=generic"), ("avx2", "fma", "bmi2")),
    "x86-64-v4": ("x86_64", ("-march=x86-64-v4", "-mtune=generic"),
                  ("avx512f", "avx512bw", "avx512dq", "avx512vl")),
    "aarch64": ("aarch64", ("-march=armv8-a",), ()),
}  # fmt: skip
#: The cross compiler ``--cpu aarch64`` uses on a machine that is not aarch64 (Debian/Ubuntu
#: package gcc-aarch64-linux-gnu); ``$AUTOFUSION_CC_AARCH64`` overrides it.
AARCH64_CC = "aarch64-linux-gnu-gcc"


def check_cpu(cpu: object) -> str:
    """``cpu`` if it is a known ``--cpu`` choice, else an AutofusionError listing them."""
    if not isinstance(cpu, str) or cpu not in CPUS:
        raise AutofusionError(f"cpu: expected one of {', '.join(CPUS)}, got {cpu!r}")
    return cpu


def cpu_machine(cpu: str) -> str:
    """The machine (``platform.machine()`` spelling) a ``cpu`` build runs on."""
    import platform

    return CPUS[check_cpu(cpu)][0] or platform.machine()


def cpu_flags(cpu: str) -> list[str]:
    """The -march/-mtune flags of a ``--cpu`` choice."""
    return list(CPUS[check_cpu(cpu)][1])


def is_cross(cpu: str) -> bool:
    """Whether a ``cpu`` build cannot run (or be loaded) on this machine's architecture."""
    import platform

    return cpu_machine(cpu) != platform.machine()


def compiler_for(cpu: str) -> str:
    """The C compiler for a ``cpu`` build: the system one, or the aarch64 cross compiler."""
    if not is_cross(cpu):
        return c_compiler()
    if cpu_machine(cpu) == "aarch64":
        cc = os.environ.get("AUTOFUSION_CC_AARCH64") or shutil.which(AARCH64_CC)
        if cc:
            return cc
        raise AutofusionError(
            f"--cpu aarch64 needs the cross compiler {AARCH64_CC}: install it with "
            "`apt-get install gcc-aarch64-linux-gnu` (or set AUTOFUSION_CC_AARCH64)"
        )
    raise AutofusionError(f"cpu {cpu!r}: cannot build for {cpu_machine(cpu)} on this machine")


#: Flags that make every warning an error (generated code must be warning-free).
WERROR_FLAGS = ["-Wall", "-Wextra", "-Werror"]
#: Flags for a sanitizer build (an executable driver, not a dlopen'ed .so).
SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g", "-O1"]


@functools.cache
def cpu_has_avx512(cpu: str) -> bool:
    """Whether a ``cpu`` build compiles afrt.h's AVX-512 kernels (the compiler defines
    ``__AVX512F__`` for its -march flags; for ``native`` that asks the compiler once)."""
    if check_cpu(cpu) != "native":
        return "avx512f" in CPUS[cpu][2]
    try:
        cmd = [c_compiler(), "-march=native", "-dM", "-E", "-x", "c", os.devnull]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "__AVX512F__" in out.split()


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
    """Link flags for OpenBLAS (with an rpath so the .so finds it at run time) and libm, for
    programs built with ``-DAFRT_OPENBLAS`` (kernel tests and benchmarks, not models)."""
    _, lib_dir, lib = openblas_dirs()
    return [f"-L{lib_dir}", f"-l{lib}", f"-Wl,-rpath,{lib_dir}", "-lm"]


#: -D flag that selects OpenBLAS in afrt.h (with ``link_flags()``).
OPENBLAS_DEFINE = "-DAFRT_OPENBLAS"
