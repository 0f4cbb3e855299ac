"""afrt.h's NEON kernels (aarch64), cross-compiled and run under qemu-aarch64 against numpy.

The kernel driver (runtime_c/afrt_kernel_driver.c) is built for aarch64 twice: as a model is
(NEON) and with -DAFRT_PORTABLE (the portable C it replaces); each reports the kernel set it
was compiled with. The GEMM sweep reaches every edge tile of the micro-kernel (every row
remainder of both row tiles, 12 and 8; every column remainder 1..32 of a 32-column panel;
k tails of the 4x4 packing transposes; a second k block), for all four transpose pairs. The
conv, matmul and pooling cases of test_runtime_kernels.py run on the NEON build too
(depthwise and im2col vector paths, packing, epilogue exactly once per element).
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_deploy import QEMU_SYSROOT, _need_cross_tools
from test_runtime_kernels import CONV_CASES, DRIVER_SRC, MATMUL_CASES, POOL_CASES, check_pool
from test_runtime_kernels import test_conv as check_conv_case
from test_runtime_kernels import test_matmul as check_matmul_case

from autofusion.runtime import toolchain
from autofusion.testing import assert_close

VARIANTS = {"neon": [], "portable": ["-DAFRT_PORTABLE"]}


def build_driver(where: Path, variant: str) -> Path:
    """The kernel driver for aarch64, and a wrapper script that runs it under qemu (so the
    x86 kernel tests' helpers can call it as they call the native driver)."""
    _need_cross_tools()
    exe = where / f"afrt_kernel_driver_aarch64_{variant}"
    subprocess.run([toolchain.compiler_for("aarch64"), "-std=c11", "-O2",
                    *toolchain.cpu_flags("aarch64"), *VARIANTS[variant], "-fopenmp",
                    "-DAFRT_PARALLEL_MIN_WORK=0", *toolchain.WERROR_FLAGS, "-Wpedantic",
                    *toolchain.include_flags(), str(DRIVER_SRC), "-o", str(exe), "-lm"],
                   check=True)  # fmt: skip
    wrapper = where / f"run_{variant}.sh"
    wrapper.write_text(f'#!/bin/sh\nexec qemu-aarch64 -L {QEMU_SYSROOT} "{exe}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.fixture(scope="module")
def drivers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    where = tmp_path_factory.mktemp("afrt_aarch64")
    return {v: build_driver(where, v) for v in VARIANTS}


def test_kernel_set_is_selected_at_compile_time(drivers: dict[str, Path]) -> None:
    for variant, run in drivers.items():
        out = subprocess.run([str(run), "1", "2", "kernels", "."], capture_output=True,
                             text=True, check=True).stdout  # fmt: skip
        assert out.strip() == variant


def choose_mr(m: int) -> int:
    """afrt_choose_mr_: the row tile (12 or 8) the core uses for an M-row operand."""
    p12, p8 = -(-m // 12) * 12, -(-m // 8) * 8
    return 8 if (p12 - m) * 20 > p12 and p8 < p12 else 12


# M 1..25 gives every remainder of the 8-row tile and 5..12 of the 12-row one; 12 rows with
# 1..4 left over only happen for larger M (the core then prefers 12), hence 217..220.
SMALL_M, BIG_M = range(1, 26), range(217, 221)
NMAX, KS, BIG_KS = 66, (1, 2, 3, 8, 258), (3, 258)
SHAPES = [(m, n, k) for k in KS for m in SMALL_M for n in range(1, NMAX + 1)] + [
    (m, n, k) for k in BIG_KS for m in BIG_M for n in (1, 7, 31, 32, 33, 65)
]


def sweep_covers_every_edge_tile() -> bool:
    """The shapes give every (row tile, rows used) pair, every column remainder mod 32, every
    k remainder mod 4 and a second k block (K > AFRT_KC = 256)."""
    tiles = {(choose_mr(m), m % choose_mr(m) or choose_mr(m)) for m, _, _ in SHAPES}
    return (
        tiles == {(12, r) for r in range(1, 13)} | {(8, r) for r in range(1, 9)}
        and {n % 32 for _, n, _ in SHAPES} == set(range(32))
        and {k % 4 for _, _, k in SHAPES} == {0, 1, 2, 3}
        and max(KS) > 256
    )


@pytest.mark.parametrize(("variant", "ta", "tb"),
                         [("neon", 0, 0), ("neon", 0, 1), ("neon", 1, 0), ("neon", 1, 1),
                          ("portable", 1, 1)])  # fmt: skip
def test_gemm_edge_tiles(drivers: dict[str, Path], tmp_path: Path, variant: str, ta: int,
                         tb: int) -> None:  # fmt: skip
    assert sweep_covers_every_edge_tile()
    mmax, kmax = max(BIG_M), max(KS)
    rng = np.random.default_rng(17 + 2 * ta + tb)
    opa = rng.standard_normal((mmax, kmax), dtype=np.float32)
    opb = rng.standard_normal((kmax, NMAX), dtype=np.float32)
    (opa.T if ta else opa).tofile(tmp_path / "a.bin")
    (opb.T if tb else opb).tofile(tmp_path / "b.bin")
    np.array(SHAPES, dtype=np.int64).tofile(tmp_path / "shapes.bin")
    subprocess.run([str(drivers[variant]), "1", "2", "sweep", str(tmp_path),
                    *map(str, (ta, tb, mmax, NMAX, kmax))], check=True)  # fmt: skip
    y = np.fromfile(tmp_path / "y.bin", dtype=np.float32)
    assert y.size == sum(m * n for m, n, _ in SHAPES)
    full = {k: opa[:, :k].astype(np.float64) @ opb[:k].astype(np.float64) for k in KS}
    off = 0
    for m, n, k in SHAPES:
        got = y[off : off + m * n].reshape(m, n)
        off += m * n
        assert_close(got, full[k][:m, :n].astype(np.float32), f"{variant} M={m} N={n} K={k}")


# The x86 kernel tests' cases on the NEON build: one thread with packing per call, and two
# threads with cached (constant) packed operands.
RUNS = [(1, 2), (2, 3)]  # (threads, strategy)


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_conv_neon(drivers: dict[str, Path], tmp_path: Path, case: tuple) -> None:
    for threads, strategy in RUNS:
        check_conv_case(drivers["neon"], tmp_path, case, threads, strategy)


@pytest.mark.parametrize("case", MATMUL_CASES, ids=[str(i) for i in range(len(MATMUL_CASES))])
def test_matmul_neon(drivers: dict[str, Path], tmp_path: Path, case: tuple) -> None:
    for threads, strategy in RUNS:
        check_matmul_case(drivers["neon"], tmp_path, case, threads, strategy)


def test_pool_neon(drivers: dict[str, Path], tmp_path: Path) -> None:
    """Every pooling case on the aarch64 build, at 2 threads (the loops GCC vectorises to NEON)."""
    for i, case in enumerate(POOL_CASES):
        (tmp_path / str(i)).mkdir()
        check_pool(drivers["neon"], tmp_path / str(i), case, 2)


def test_vector_math_matches_portable_bit_for_bit(tmp_path: Path) -> None:
    """af_expf/af_tanhf/af_erff on aarch64: the NEON builds of af_expf and af_erff make their
    choices with integer masks (and FMINNM/FMAXNM) so loops calling them vectorise; results
    must equal the portable C's bit for bit (both builds compute in loops over arrays, as
    generated code does), and match numpy / math.erf."""
    _need_cross_tools()
    special = [0.0, -0.0, 1e-8, -1e-8, 1e-30, np.inf, -np.inf, np.nan, -np.nan, -100.0, 100.0,
               88.72, 88.7228391, 88.7229, -87.0, -87.5, 3.4e38, -3.4e38]  # fmt: skip
    x = np.concatenate([np.linspace(-20, 20, 40001), np.linspace(-90, 90, 20001), special])
    x = x.astype(np.float32)
    src = DRIVER_SRC.with_name("afrt_math_driver.c")
    outs = {}
    for variant, flags in VARIANTS.items():
        exe = tmp_path / f"afrt_math_{variant}"
        subprocess.run([toolchain.compiler_for("aarch64"), "-std=c11", "-O3",
                        *toolchain.cpu_flags("aarch64"), *flags, *toolchain.WERROR_FLAGS,
                        "-Wpedantic", *toolchain.include_flags(), str(src), "-o", str(exe),
                        "-lm"], check=True)  # fmt: skip
        raw = subprocess.run(["qemu-aarch64", "-L", QEMU_SYSROOT, str(exe)], input=x.tobytes(),
                             capture_output=True, check=True).stdout  # fmt: skip
        outs[variant] = np.frombuffer(raw, np.float32).reshape(-1, 3)
    np.testing.assert_array_equal(outs["neon"].view(np.uint32), outs["portable"].view(np.uint32))
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        ref_exp = np.exp(x64)
    ok = (ref_exp > 2.4e-38) & (ref_exp < 3.4e38)  # af_expf flushes results below 2^-125 to 0
    np.testing.assert_allclose(outs["neon"][ok, 0], ref_exp[ok], rtol=5e-7)
    np.testing.assert_allclose(outs["neon"][:, 1], np.tanh(x64), rtol=1e-6, atol=3e-7)
    ref_erf = np.array([math.erf(v) for v in x64])
    np.testing.assert_allclose(outs["neon"][:, 2], ref_erf, rtol=0, atol=4e-7)
    tail = outs["neon"][-len(special) :, 0]
    assert list(tail[5:7]) == [np.inf, 0.0]
    assert np.isnan(tail[7:9]).all()
    assert tail[13] == np.inf  # just above the overflow threshold
