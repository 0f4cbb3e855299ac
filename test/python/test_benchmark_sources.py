"""Every C source under ``benchmarks/`` compiles against today's runtime headers.

The benchmark drivers call the runtime's internal kernels (``afrt_conv_own_``,
``afrt_nchwc_ex_f32``, ...) directly, so a signature change in ``afrt.h`` breaks them
without any model test noticing: session 21's ``xb`` argument of ``afrt_conv_own_`` left
four of them uncompilable until the next person ran one. Each is checked here with the
flags its script builds it with (``-fsyntax-only``: a second or less each).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from autofusion.runtime import toolchain

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
SOURCES = sorted(BENCH.glob("*.c"))


def test_there_are_sources() -> None:
    assert len(SOURCES) >= 10, f"benchmarks/*.c not found under {BENCH}"


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.name)
def test_benchmark_source_compiles(src: Path) -> None:
    # bench_kernels.c times OpenBLAS beside afrt: its script adds the OpenBLAS define
    extra = [toolchain.OPENBLAS_DEFINE] if src.name == "bench_kernels.c" else []
    cmd = [toolchain.c_compiler(), "-fsyntax-only", *toolchain.OPT_FLAGS, *extra,
           *toolchain.WERROR_FLAGS, *toolchain.include_flags(), f"-I{BENCH}", str(src)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"{src.name} does not compile:\n{res.stderr[-3000:]}"
