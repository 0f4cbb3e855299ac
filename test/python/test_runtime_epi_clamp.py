"""afrt.h's built-in clamp epilogue (``afrt_epi_clamp_fn``): the GEMM core applies it in the
micro-kernel's registers (AVX-512) or per micro-tile, and must give exactly what the same
epilogue gives when called as an ordinary function (the C driver compares the bits, with NaN,
inf and -0.0 among the inputs) for 1x1 and im2col convs and batched matmuls with alpha, beta
and a broadcast residual, on every ISA path, 1 and 2 threads, and under ASan/UBSan."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from autofusion.runtime import toolchain

DRIVER_SRC = Path(__file__).parent / "runtime_c" / "afrt_epi_clamp_driver.c"
ISA_FLAGS = {
    "native": ["-march=native", "-O2"],
    "x86-64-v3": ["-march=x86-64-v3", "-O2"],
    "x86-64-v2": ["-march=x86-64-v2", "-O2"],
    "sanitize": ["-march=native", *toolchain.SANITIZE_FLAGS, "-fno-sanitize-recover=undefined"],
}


@pytest.fixture(scope="module", params=list(ISA_FLAGS))
def driver(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("epi") / f"afrt_epi_clamp_{request.param}"
    cmd = [
        toolchain.c_compiler(), "-std=c11", *ISA_FLAGS[request.param], "-fopenmp",
        "-DAFRT_PARALLEL_MIN_WORK=0",  # small shapes still take the multi-thread paths
        *toolchain.WERROR_FLAGS, "-Wpedantic",
        *toolchain.include_flags(), str(DRIVER_SRC), "-o", str(out), "-lm",
    ]  # fmt: skip
    subprocess.run(cmd, check=True)
    return out


@pytest.mark.parametrize("threads", [1, 2])
def test_builtin_clamp_epilogue_is_bit_identical(driver: Path, threads: int) -> None:
    got = subprocess.run([str(driver), str(threads)], capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr
    assert got.stdout.strip() == "ok 80"
