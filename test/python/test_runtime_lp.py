"""afrt.h's 16-bit contractions (afrt_matmul_lp / afrt_conv2d_lp) against numpy.

The reference is float64 arithmetic on the operands rounded exactly as the kernel rounds them
(weights stored 16-bit, fp32 activations rounded to nearest even while packing), so each
build path must meet the fp32 bar: vdpbf16ps (native on this CPU), AVX-512F without BF16
(x86-64-v4, or native with -DAFRT_LP_NO_DPBF16), portable C (x86-64-v2). Edge cases: odd K
(vdpbf16ps consumes k pairs), K past one 256-deep block with an odd remainder, M and N
remainders of the 12/8 x 32 register tile, transposes, broadcast batches, alpha/beta, 16-bit
and fp32 operands on either side.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_runtime_kernels import conv_ref

from autofusion.lowering.c.printer import from_storage, to_storage
from autofusion.runtime import toolchain
from autofusion.testing import assert_close, compare

DRIVER_SRC = Path(__file__).parent / "runtime_c" / "afrt_lp_driver.c"
ISA_FLAGS = {
    "native": ["-march=native"],
    "native-no-dpbf16": ["-march=native", "-DAFRT_LP_NO_DPBF16"],
    "x86-64-v4": ["-march=x86-64-v4"],
    "x86-64-v2": ["-march=x86-64-v2"],
}
LP = {"fp16": 1, "bf16": 2}


@pytest.fixture(scope="session", params=list(ISA_FLAGS))
def driver(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("afrt_lp") / f"afrt_lp_driver_{request.param}"
    cmd = [
        toolchain.c_compiler(),
        "-std=c11", "-O2", *ISA_FLAGS[request.param], "-fopenmp",
        "-DAFRT_PARALLEL_MIN_WORK=0",
        *toolchain.WERROR_FLAGS, "-Wpedantic",
        *toolchain.include_flags(), str(DRIVER_SRC), "-o", str(out), *toolchain.link_flags(),
    ]  # fmt: skip
    subprocess.run(cmd, check=True)
    return out


def test_driver_uses_vdpbf16ps(tmp_path: Path) -> None:
    """The native build of the bf16 micro-kernel is the AVX512_BF16 dot product."""
    asm = tmp_path / "lp.s"
    cmd = [toolchain.c_compiler(), "-std=c11", "-O2", "-march=native", "-S",
           *toolchain.include_flags(), str(DRIVER_SRC), "-o", str(asm)]  # fmt: skip
    subprocess.run(cmd, check=True)
    macros = subprocess.run(
        [toolchain.c_compiler(), "-march=native", "-dM", "-E", "-x", "c", "/dev/null"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    if "__AVX512BF16__" not in macros:
        pytest.skip("this CPU has no AVX512_BF16")
    text = asm.read_text()
    assert "vdpbf16ps" in text
    assert "vcvtph2ps" in text


def rounded(a: np.ndarray, kind: str) -> np.ndarray:
    return from_storage(to_storage(a, kind), kind)


MATMUL_CASES = [
    # batch, M, N, K, alpha, beta, trans_a, trans_b, bcast_a, bcast_b, a16, b16
    (1, 1, 1, 1, 1.0, 0.0, 0, 0, 0, 0, 0, 1),  # K = 1: one pair, its odd half zero
    (1, 13, 33, 3, 1.0, 0.0, 0, 0, 0, 0, 0, 1),  # odd K, M and N remainders
    (1, 25, 70, 257, 1.0, 0.0, 0, 1, 0, 0, 0, 1),  # K = 256 + 1: odd last block, trans B
    (2, 30, 40, 65, 0.5, 1.0, 1, 0, 0, 1, 0, 1),  # trans A, beta, broadcast weight
    (3, 12, 32, 64, 1.0, 0.0, 0, 0, 0, 0, 0, 0),  # exact tiles, activations on both sides
    (2, 9, 45, 77, 2.0, -0.5, 1, 1, 0, 0, 0, 0),  # fp32 B packed and rounded per call
    (1, 64, 600, 96, 1.0, 0.0, 0, 0, 0, 0, 1, 0),  # 16-bit A (a weight on the left), N > NC
    (1, 50, 1100, 515, 1.0, 0.0, 0, 0, 0, 0, 0, 1),  # several k and column blocks
]


@pytest.mark.parametrize("kind", ["bf16", "fp16"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", MATMUL_CASES, ids=[str(i) for i in range(len(MATMUL_CASES))])
def test_matmul_lp(driver: Path, tmp_path: Path, case, threads: int, kind: str) -> None:
    batch, m, n, k, alpha, beta, ta, tb, bca, bcb, a16, b16 = case
    rng = np.random.default_rng(hash(case) % 2**32)
    lda, ldb, ldc = (m if ta else k) + 3, (k if tb else n) + 2, n + 5
    a = rng.standard_normal(((1 if bca else batch), k if ta else m, lda), dtype=np.float32)
    b = rng.standard_normal(((1 if bcb else batch), n if tb else k, ldb), dtype=np.float32)
    c = rng.standard_normal((batch, m, ldc), dtype=np.float32)
    (to_storage(a, kind) if a16 else a).tofile(tmp_path / "a.bin")
    (to_storage(b, kind) if b16 else b).tofile(tmp_path / "b.bin")
    c.tofile(tmp_path / "c.bin")
    subprocess.run(
        [str(driver), str(threads), str(LP[kind]), "matmul", str(tmp_path),
         *map(str, (batch, m, n, k, alpha, beta, ta, tb, bca, bcb, a16, b16))],
        check=True,
    )  # fmt: skip

    def ref_of(ar: np.ndarray, br: np.ndarray) -> np.ndarray:
        opa = ar[:, :k, :m].transpose(0, 2, 1) if ta else ar[:, :m, :k]
        opb = br[:, :n, :k].transpose(0, 2, 1) if tb else br[:, :k, :n]
        r = alpha * np.matmul(opa.astype(np.float64), opb.astype(np.float64))
        return 0.5 * (r + beta * c[:, :, :n]) - 1.0

    y = np.fromfile(tmp_path / "y.bin", dtype=np.float32).reshape(batch, m, ldc)
    count = np.fromfile(tmp_path / "count.bin", dtype=np.int32).reshape(batch, m, ldc)
    assert np.all(count[:, :, :n] == 1), "epilogue must see each element exactly once"
    assert np.all(count[:, :, n:] == 0), "epilogue touched padding beyond N"
    np.testing.assert_array_equal(y[:, :, n:], c[:, :, n:])
    assert_close(y[:, :, :n], ref_of(rounded(a, kind), rounded(b, kind)).astype(np.float32), "lp")
    if kind == "bf16" and k >= 64:  # the operands really were rounded to bf16
        assert not compare(y[:, :, :n], ref_of(a, b).astype(np.float32)).match


CONV_CASES = [
    # N, C, H, W, K, R, S, stride, pads (t, l, b, r), dil, group, bias, w16
    (1, 8, 9, 11, 16, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, True, 1),  # 1x1 direct
    (2, 16, 12, 12, 24, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, True, 1),  # 3x3, crs = 144
    (1, 3, 23, 19, 13, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1, False, 1),  # crs = 147 odd
    (1, 6, 10, 13, 9, 3, 2, (2, 1), (0, 1, 2, 0), (2, 1), 3, True, 1),  # groups, crs = 12
    (1, 29, 8, 9, 20, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, True, 1),  # crs = 261 > 256
    (1, 16, 7, 7, 64, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1, True, 0),  # fp32 weights
    (2, 12, 9, 9, 12, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 12, True, 1),  # depthwise: fp32
]


@pytest.mark.parametrize("kind", ["bf16", "fp16"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_conv_lp(driver: Path, tmp_path: Path, case, threads: int, kind: str) -> None:
    n, c, h, w, k, r, s, stride, pads, dil, group, has_bias, w16 = case
    rng = np.random.default_rng(hash(case) % 2**32)
    x = rng.standard_normal((n, c, h, w), dtype=np.float32)
    wt = rng.standard_normal((k, c // group, r, s), dtype=np.float32)
    b = rng.standard_normal(k, dtype=np.float32) if has_bias else None
    x.tofile(tmp_path / "x.bin")
    (to_storage(wt, kind) if w16 else wt).tofile(tmp_path / "w.bin")
    if b is not None:
        b.tofile(tmp_path / "b.bin")
    args = [n, c, h, w, k, r, s, *stride, *pads, *dil, group, int(has_bias), w16]
    subprocess.run(
        [str(driver), str(threads), str(LP[kind]), "conv", str(tmp_path), *map(str, args)],
        check=True,
    )
    depthwise = c // group == 1
    xr = x if depthwise else rounded(x, kind)  # depthwise computes on fp32 activations
    ref = 0.5 * conv_ref(xr, rounded(wt, kind), b, stride, pads, dil, group) - 1.0
    y = np.fromfile(tmp_path / "y.bin", dtype=np.float32).reshape(ref.shape)
    count = np.fromfile(tmp_path / "count.bin", dtype=np.int32)
    assert np.all(count == 1), f"epilogue counts: min {count.min()} max {count.max()}"
    assert_close(y, ref.astype(np.float32), "lp conv")
