"""afrt.h kernels (conv, matmul, pooling) compiled into a C driver and checked against numpy.

Covers groups, depthwise, padding (asymmetric), strides, dilation, 1x1 and im2col paths,
transposes, broadcast batch strides, alpha/beta, every GEMM strategy (OpenBLAS tiles, one
OpenBLAS call, afrt's own packed core with and without cached constant weights, with A read
unpacked (direct A) and packed), 1 and 2
threads, and that the epilogue sees every output element exactly once after its final value.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from autofusion.runtime import toolchain
from autofusion.testing import assert_close

DRIVER_SRC = Path(__file__).parent / "runtime_c" / "afrt_kernel_driver.c"


# The kernels have AVX-512, AVX2+FMA (x86-64-v3) and portable C paths, and sgemm from
# OpenBLAS (-DAFRT_OPENBLAS) or afrt's own core: build the driver each way so every path is
# checked on an AVX-512 machine (v2 has neither AVX2 nor AVX-512: the portable C).
ISA_FLAGS = {
    "native": ["-march=native", toolchain.OPENBLAS_DEFINE],
    "no-avx512": ["-march=native", "-mno-avx512f", toolchain.OPENBLAS_DEFINE],
    "x86-64-v3": ["-march=x86-64-v3"],
    "x86-64-v2": ["-march=x86-64-v2"],
}


@pytest.fixture(scope="session", params=list(ISA_FLAGS))
def driver(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("afrt") / f"afrt_kernel_driver_{request.param}"
    cmd = [
        toolchain.c_compiler(),
        "-std=c11", "-O2", *ISA_FLAGS[request.param], "-fopenmp",
        "-DAFRT_PARALLEL_MIN_WORK=0",  # small test shapes still take the multi-thread paths
        *toolchain.WERROR_FLAGS, "-Wpedantic",
        *toolchain.include_flags(), str(DRIVER_SRC), "-o", str(out), *toolchain.link_flags(),
    ]  # fmt: skip
    subprocess.run(cmd, check=True)
    return out


def conv_ref(x, w, b, stride, pads, dil, group):
    """Direct numpy conv (float64), NCHW, ONNX semantics; pads = (top, left, bottom, right)."""
    n, _, h, wd = x.shape
    k, cg, r, s = w.shape
    sh, sw = stride
    dh, dw = dil
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dh * (r - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (s - 1) - 1) // sw + 1
    kg = k // group
    y = np.zeros((n, k, oh, ow))
    for g in range(group):
        xg = xp[:, g * cg : (g + 1) * cg]
        wg = w[g * kg : (g + 1) * kg].astype(np.float64)
        for i in range(r):
            for j in range(s):
                patch = xg[:, :, i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                           j * dw : j * dw + sw * (ow - 1) + 1 : sw]  # fmt: skip
                y[:, g * kg : (g + 1) * kg] += np.einsum("nchw,kc->nkhw", patch, wg[:, :, i, j])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def close(got, ref):
    """The project's bar against a float64 reference rounded to float32."""
    assert_close(np.asarray(got), np.asarray(ref).astype(np.float32), "kernel")


CONV_CASES = [
    # N, C, H, W, K, R, S, stride, pads (t, l, b, r), dil, group, bias
    (1, 8, 9, 11, 16, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, True),  # 1x1 direct
    (2, 16, 12, 12, 24, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, True),  # 3x3 im2col
    (1, 3, 23, 19, 8, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1, False),  # stem-like
    (1, 6, 10, 13, 9, 3, 2, (2, 1), (0, 1, 2, 0), (2, 1), 3, True),  # groups, asym, dilation
    (2, 12, 9, 9, 12, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 12, True),  # depthwise
    (1, 8, 11, 11, 16, 5, 5, (2, 2), (2, 2, 1, 1), (1, 1), 8, False),  # depthwise x2, stride
    (1, 8, 8, 8, 8, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), 1, False),  # dilated, same size
    (1, 16, 7, 7, 64, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1, True),  # 1x1 stride 2
    (1, 4, 1, 30, 6, 1, 5, (1, 2), (0, 2, 0, 2), (1, 1), 2, True),  # 1-d as 2-d
    (1, 64, 40, 40, 96, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, True),  # many column blocks
    (1, 4, 6, 45, 4, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 4, True),  # depthwise, wide rows
    (1, 3, 9, 50, 6, 3, 5, (1, 2), (2, 1, 0, 3), (2, 2), 3, False),  # depthwise x2, dilated
    (1, 5, 33, 37, 5, 3, 3, (2, 2), (0, 1, 1, 1), (1, 1), 5, True),  # depthwise /2, > 16 wide
    (1, 4, 10, 11, 4, 3, 3, (3, 3), (1, 1, 1, 1), (1, 1), 4, True),  # depthwise stride 3
    (1, 3, 10, 10, 3, 3, 3, (2, 2), (0, 0, 0, 0), (1, 1), 3, False),  # last input row unread
    (1, 5, 30, 70, 12, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1, False),  # im2col /2, 35-wide rows
    (1, 6, 17, 19, 8, 3, 3, (3, 3), (1, 2, 1, 0), (1, 1), 1, True),  # im2col stride 3
    (1, 4, 12, 40, 8, 3, 3, (1, 1), (2, 3, 2, 3), (2, 3), 1, True),  # im2col dilated, wide pads
    # strided 1x1 gathered into a dense GEMM: batch, unequal strides, a bottom pad it never reads
    (2, 24, 13, 17, 40, 1, 1, (2, 3), (0, 0, 1, 0), (1, 1), 1, True),
    (1, 32, 10, 10, 48, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 2, False),  # ... per group
    (1, 8, 5, 5, 16, 1, 1, (2, 2), (0, 0, 2, 2), (1, 1), 1, True),  # 1x1 /2 reading the pad: im2col
    # stride-1 im2col panels from precomputed row runs: 5x5 over 23-wide rows, K in 2 blocks,
    # 529 columns (a 17-wide last panel); rows of 5 (7 runs a panel: the per-segment path)
    (1, 20, 23, 23, 40, 5, 5, (1, 1), (2, 2, 2, 2), (1, 1), 1, True),
    (1, 20, 6, 5, 24, 3, 2, (1, 1), (1, 0, 1, 1), (1, 1), 1, False),
    (1, 12, 9, 14, 20, 3, 3, (2, 1), (1, 2, 0, 1), (1, 2), 1, True),  # stride (2, 1), dilated
    # a last panel of <= 16 columns (169 = 5 x 32 + 9) over a row edge (20 = 12 + 8 rows)
    (1, 40, 13, 13, 20, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, True),
    # 172 = 14 x 12 + 4 rows: the packed weights' last panel by the 4-row kernels, reading 4 of
    # its 12 rows a k step; 45 = 32 + 13 columns (whole and half panels), 63 = 32 + 31 (the
    # copied edge tile)
    (1, 24, 9, 5, 172, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, True),
    (1, 24, 7, 9, 172, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1, False),
]


# AFRT_GEMM_TILED, AFRT_GEMM_WHOLE, AFRT_GEMM_OWN, and OWN with constant (cached) weights
STRATEGIES = [0, 1, 2, 3]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_conv(driver: Path, tmp_path: Path, case, threads: int, strategy: int) -> None:
    n, c, h, w, k, r, s, stride, pads, dil, group, has_bias = case
    rng = np.random.default_rng(hash(case) % 2**32)
    x = rng.standard_normal((n, c, h, w), dtype=np.float32)
    wt = rng.standard_normal((k, c // group, r, s), dtype=np.float32)
    b = rng.standard_normal(k, dtype=np.float32) if has_bias else None
    x.tofile(tmp_path / "x.bin")
    wt.tofile(tmp_path / "w.bin")
    if b is not None:
        b.tofile(tmp_path / "b.bin")
    args = [n, c, h, w, k, r, s, *stride, *pads, *dil, group, int(has_bias)]
    subprocess.run(
        [str(driver), str(threads), str(strategy), "conv", str(tmp_path), *map(str, args)],
        check=True,
    )
    ref = conv_ref(x, wt, b, stride, pads, dil, group)
    y = np.fromfile(tmp_path / "y.bin", dtype=np.float32).reshape(ref.shape)
    count = np.fromfile(tmp_path / "count.bin", dtype=np.int32)
    assert np.all(count == 1), f"epilogue counts: min {count.min()} max {count.max()}"
    close(y, 0.5 * ref - 1.0)


# One image and group on a small map: two or three threads split the output channels (row
# blocks), and the conv packs B once for all of them (afrt_shared_b_): a 1x1 with two k blocks
# and an odd map, an im2col 3x3 with two k blocks and a 17-column edge panel, a strided 1x1
# (gathered first), and a 3x3 /2 reading its padding.
SHARED_B_CASES = [
    (1, 300, 7, 7, 40, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, True),
    (1, 37, 9, 9, 50, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, False),
    (1, 24, 11, 9, 64, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1, True),
    (1, 20, 10, 13, 36, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1, True),
]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("strategy", [2, 3])  # afrt's core; with cached constant weights
@pytest.mark.parametrize("case", SHARED_B_CASES, ids=[str(i) for i in range(len(SHARED_B_CASES))])
def test_conv_shared_b(driver: Path, tmp_path: Path, case, threads: int, strategy: int) -> None:
    test_conv(driver, tmp_path, case, threads, strategy)


MATMUL_CASES = [
    # batch, M, N, K, alpha, beta, trans_a, trans_b, bcast_a, bcast_b
    (1, 7, 5, 3, 1.0, 0.0, 0, 0, 0, 0),
    (3, 33, 70, 19, 0.5, 0.0, 1, 0, 0, 1),
    (4, 16, 9, 40, 1.0, 1.0, 0, 1, 1, 0),
    (2, 130, 300, 64, 2.0, -0.5, 1, 1, 0, 0),
    (1, 128, 768, 96, 1.0, 0.0, 0, 0, 0, 0),
    (12, 20, 20, 8, 0.125, 0.0, 0, 1, 0, 0),
    (1, 50, 1100, 600, 1.0, 0.0, 0, 0, 0, 0),  # K and N span several core blocks
    (2, 13, 70, 530, 1.5, 0.0, 1, 1, 1, 0),
    # one A of >= 16k elements: its panels packed by both threads (transposed; broadcast)
    (1, 77, 64, 400, 1.0, 0.0, 1, 0, 0, 0),
    (3, 45, 40, 500, 1.0, 0.0, 0, 0, 1, 0),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("case", MATMUL_CASES, ids=[str(i) for i in range(len(MATMUL_CASES))])
def test_matmul(driver: Path, tmp_path: Path, case, threads: int, strategy: int) -> None:
    batch, m, n, k, _, _, ta, tb, bca, bcb = case
    rng = np.random.default_rng(hash(case) % 2**32)
    lda, ldb, ldc = (m if ta else k) + 3, (k if tb else n) + 2, n + 5
    a = rng.standard_normal(((1 if bca else batch), k if ta else m, lda), dtype=np.float32)
    b = rng.standard_normal(((1 if bcb else batch), n if tb else k, ldb), dtype=np.float32)
    c = rng.standard_normal((batch, m, ldc), dtype=np.float32)
    ref, y = _run_matmul(driver, tmp_path, threads, strategy, a, b, c, case)
    close(y[:, :, :n], 0.5 * ref - 1.0)


def _run_matmul(
    driver: Path,
    tmp_path: Path,
    threads: int,
    strategy: int,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    case: tuple,
) -> tuple[np.ndarray, np.ndarray]:
    """The driver's matmul on a, b, c (batch, M, N, K, alpha, beta, ta, tb, bcast_a, bcast_b
    of ``case``): the float64 reference alpha op(A) op(B) + beta C and the driver's output
    (ldc wide), after checking that the counting epilogue saw every element of C once and
    nothing past N, and that the padding past N was left alone."""
    batch, m, n, k, alpha, beta, ta, tb, bca, bcb = case
    ldc = c.shape[2]
    for arr, name in ((a, "a"), (b, "b"), (c, "c")):
        arr.tofile(tmp_path / f"{name}.bin")
    subprocess.run(
        [str(driver), str(threads), str(strategy), "matmul", str(tmp_path),
         *map(str, (batch, m, n, k, alpha, beta, ta, tb, bca, bcb))],
        check=True,
    )  # fmt: skip
    opa = a[:, :k, :m].transpose(0, 2, 1) if ta else a[:, :m, :k]
    opb = b[:, :n, :k].transpose(0, 2, 1) if tb else b[:, :k, :n]
    ref = alpha * np.matmul(opa.astype(np.float64), opb.astype(np.float64))
    ref = ref + beta * c[:, :, :n]
    y = np.fromfile(tmp_path / "y.bin", dtype=np.float32).reshape(batch, m, ldc)
    count = np.fromfile(tmp_path / "count.bin", dtype=np.int32).reshape(batch, m, ldc)
    assert np.all(count[:, :, :n] == 1), "epilogue must see each element exactly once"
    assert np.all(count[:, :, n:] == 0), "epilogue touched padding beyond N"
    np.testing.assert_array_equal(y[:, :, n:], c[:, :, n:])  # padding left alone
    return ref, y


DIRECT_A_CASES = [
    # batch, M, N, K, alpha, beta, trans_b, bcast_a, non-finite A: the GEMM core reading a
    # row-major A unpacked (driver strategy 4) or packed (5); lda = K + 3. Direct A's edge
    # rows run as 4-, 8- or 12-row tiles; its edge columns as half tiles (<= 16 columns) or
    # through the scratch tile (17..31)
    (1, 197, 192, 768, 1.0, 0.0, 0, 0, False),  # ViT fc2: 5 edge rows, K in 3 blocks
    (1, 5, 40, 96, 1.0, 0.0, 0, 0, False),  # edge rows only; an 8-column edge (half tile)
    (2, 25, 200, 257, 0.5, 1.0, 1, 0, False),  # 1 edge row, 8 edge columns, a 1-deep k block
    (3, 13, 60, 33, 1.0, 0.0, 0, 1, False),  # one A broadcast over the batch; 4-row x 28
    (1, 36, 1100, 300, 2.0, -0.5, 0, 0, False),  # N over several column blocks, whole tiles
    (1, 64, 48, 20, 1.0, 0.0, 0, 0, False),  # 8-row tiles (afrt_choose_mr_), a 16-column edge
    (1, 1, 32, 7, 1.0, 0.0, 1, 0, False),  # one row
    (2, 23, 96, 300, 1.0, 0.5, 0, 0, False),  # an 11-row edge (12-row tile), 2 k blocks
    (1, 30, 90, 40, 1.0, 0.0, 0, 0, True),  # NaN in a whole tile's row, inf in an edge row
    # with b registered (6, 7): the next-block prefetch's shares (afrt_next_b_)
    (1, 37, 600, 520, 1.0, 0.0, 0, 0, False),  # 3 k blocks (the last 8 deep), 512 + 88 columns
    (2, 24, 1030, 300, 1.0, 0.0, 0, 0, False),  # two full row tiles; a 6-column last block
    (1, 131, 96, 1000, 1.0, 0.0, 0, 0, False),  # 10 row tiles + 11 rows, 4 k blocks, 3 panels
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("strategy", [4, 5, 6, 7])
@pytest.mark.parametrize("case", DIRECT_A_CASES, ids=[str(i) for i in range(len(DIRECT_A_CASES))])
def test_matmul_direct_a(driver: Path, tmp_path: Path, case, threads: int, strategy: int) -> None:
    """Direct A against numpy over the micro-kernel's edges: partial row tiles, short column
    tiles, k blocks, lda != K, alpha/beta, a broadcast A, NaN/inf propagation; the same cases
    with A packed (5), and with B a registered constant, prepacked, with and without the
    prefetch of its next block (6, 7). Only AVX-512 builds have direct A (elsewhere 4, 6 and
    7 run the packed path)."""
    batch, m, n, k, alpha, beta, tb, bca, special = case
    rng = np.random.default_rng(hash(case) % 2**32)
    lda, ldb, ldc = k + 3, (k if tb else n) + 2, n + 5
    # A scaled by 1/sqrt(K): outputs of ordinary size
    a = rng.standard_normal(((1 if bca else batch), m, lda), dtype=np.float32) / float(np.sqrt(k))
    b = rng.standard_normal((batch, n if tb else k, ldb), dtype=np.float32)
    c = rng.standard_normal((batch, m, ldc), dtype=np.float32)
    if special:
        a[0, 3, 5] = np.nan  # row 3: in the first 12-row tile, read unpacked
        a[0, m - 1, 0] = np.inf  # the last row: in the packed edge panel
    params = (batch, m, n, k, alpha, beta, 0, tb, bca, 0)
    ref, y = _run_matmul(driver, tmp_path, threads, strategy, a, b, c, params)
    if special:
        assert np.isnan(ref[0, 3]).all()
        assert np.isinf(ref[0, m - 1]).all()
    close(y[:, :, :n], 0.5 * ref - 1.0)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", DIRECT_A_CASES[-3:], ids=["0", "1", "2"])
def test_matmul_pf_next_same_bits(driver: Path, tmp_path: Path, case, threads: int) -> None:
    """The prefetch of the next packed B block changes where the core reads ahead, never a
    product or its order: the outputs with it (strategy 6) and without (7) are the same bits."""
    batch, m, n, k, alpha, beta, tb, bca, _ = case
    rng = np.random.default_rng(7)
    a = rng.standard_normal((batch, m, k + 3), dtype=np.float32) / float(np.sqrt(k))
    b = rng.standard_normal((batch, n if tb else k, (k if tb else n) + 2), dtype=np.float32)
    c = rng.standard_normal((batch, m, n + 5), dtype=np.float32)
    params = (batch, m, n, k, alpha, beta, 0, tb, bca, 0)
    runs = []
    for strategy in (6, 7):
        out = tmp_path / str(strategy)
        out.mkdir()
        runs.append(_run_matmul(driver, out, threads, strategy, a, b, c, params))
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    close(runs[0][1][:, :, :n], 0.5 * runs[0][0] - 1.0)


def pool_out(size, k, stride, pad0, pad1, dil, ceil):
    """ONNX's output size; ceil mode drops a last window that would start in the end padding."""
    span = size + pad0 + pad1 - dil * (k - 1) - 1
    if not ceil:
        return span // stride + 1
    out = -(-span // stride) + 1
    return out - 1 if (out - 1) * stride >= size + pad0 else out


def pool_ref(x, kind, r, s, stride, pads, dil, cip, ceil=False):
    """Tap by tap in float64; a window with no input position gives -inf (max) or 0 (avg)."""
    n, c, h, w = x.shape
    pt, pl, pb, pr = pads
    oh = pool_out(h, r, stride[0], pt, pb, dil[0], ceil)
    ow = pool_out(w, s, stride[1], pl, pr, dil[1], ceil)
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            vals, cnt = [], 0
            for u in range(r):
                for v in range(s):
                    ih = i * stride[0] - pt + u * dil[0]
                    iw = j * stride[1] - pl + v * dil[1]
                    if 0 <= ih < h and 0 <= iw < w:
                        vals.append(x[:, :, ih, iw].astype(np.float64))
                        cnt += 1
                    elif -pt <= ih < h + pb and -pl <= iw < w + pr:
                        cnt += cip
            if not vals:
                y[:, :, i, j] = -np.inf if kind == "max" else 0.0
                continue
            arr = np.stack(vals)
            y[:, :, i, j] = arr.max(axis=0) if kind == "max" else arr.sum(axis=0) / cnt
    return y


# kind, N, C, H, W, R, S, strides, pads (t, l, b, r), dilations, count_include_pad[, ceil]
POOL_CASES = [
    ("max", 1, 4, 9, 9, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 0),
    ("max", 2, 3, 8, 7, 2, 3, (1, 2), (0, 1, 1, 0), (2, 1), 0),
    # the vectorised interiors: 3-wide windows at stride 1 and 2, wider rows
    ("max", 1, 3, 12, 37, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 0),
    ("max", 1, 2, 20, 41, 3, 3, (2, 2), (0, 0, 1, 1), (1, 1), 0),
    ("avg", 1, 4, 9, 9, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 0),
    ("avg", 1, 2, 7, 8, 3, 2, (2, 2), (1, 0, 1, 1), (1, 1), 1),
    # the vectorised interiors (inception's 3x3/1 same-size average pool), both pad counts
    ("avg", 1, 3, 23, 29, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 0),
    ("avg", 1, 3, 23, 29, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ("avg", 1, 2, 20, 41, 3, 3, (2, 2), (0, 1, 1, 0), (1, 1), 1),
    # ceil mode (SqueezeNet's 3x3/2): the last window hangs over the end, odd sizes
    ("max", 1, 3, 13, 15, 3, 3, (2, 2), (0, 0, 0, 0), (1, 1), 0, True),
    ("avg", 1, 3, 13, 15, 3, 3, (2, 2), (0, 0, 0, 0), (1, 1), 0, True),
    ("avg", 1, 3, 12, 11, 3, 3, (2, 2), (1, 1, 0, 1), (1, 1), 1, True),
    # stride 3 with asymmetric pads; 2x2/2 (DenseNet's average); 1x1 maps
    ("max", 1, 2, 11, 10, 3, 3, (3, 3), (1, 2, 2, 1), (1, 1), 0),
    ("avg", 1, 2, 11, 10, 3, 3, (3, 3), (1, 2, 2, 1), (1, 1), 1),
    ("avg", 2, 3, 14, 14, 2, 2, (2, 2), (0, 0, 0, 0), (1, 1), 0),
    ("max", 1, 5, 1, 1, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 0),
    ("avg", 1, 5, 1, 1, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
    # dilation, windows taller than 3 rows and wider than 3 columns (the tap-by-tap loops)
    ("avg", 1, 2, 12, 15, 3, 2, (1, 2), (2, 1, 2, 1), (2, 3), 1),
    ("max", 1, 2, 9, 9, 5, 4, (1, 1), (2, 1, 2, 2), (1, 1), 0),
    ("avg", 1, 2, 9, 9, 5, 4, (2, 1), (2, 1, 2, 2), (1, 1), 1),
    # windows wholly in the padding (rows and columns): -inf for max, 0 for average
    ("max", 1, 2, 5, 6, 2, 2, (1, 1), (2, 2, 0, 3), (1, 1), 0),
    ("avg", 1, 2, 5, 6, 2, 2, (1, 1), (2, 2, 0, 3), (1, 1), 0),
    ("avg", 1, 2, 5, 6, 2, 2, (1, 1), (2, 2, 0, 3), (1, 1), 1),
    # 3x3/1 pads 1 on whole planes at once (the flat path), down to 2-wide and 2-tall maps
    ("max", 1, 3, 2, 5, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 0),
    ("avg", 1, 3, 5, 2, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ("avg", 2, 3, 12, 12, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 0),
    # one plane: at 2 threads the rows are split into bands
    ("max", 1, 1, 30, 31, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 0),
    # an input of AFRT_POOL_PF_MIN (2 MiB): the row pass prefetches ahead, up to the end
    ("max", 1, 32, 128, 128, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 0),
    ("avg", 1, 1, 30, 31, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 0),
    # 3x3/2 max rows without the row buffer (AVX-512): 16-wide blocks, the last one
    # overlapping (18 outputs), exactly 16, one masked block (15: 31 columns), windows in the
    # left padding and past the row's end (ceil mode) done one by one
    ("max", 1, 3, 21, 38, 3, 3, (2, 2), (0, 0, 0, 0), (1, 1), 0, True),
    ("max", 1, 2, 9, 33, 3, 3, (2, 2), (0, 0, 0, 0), (1, 1), 0),
    ("max", 1, 2, 7, 31, 3, 3, (2, 2), (0, 0, 0, 0), (1, 1), 0),
    ("max", 1, 2, 9, 31, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 0),
    # 2x2/2 max on even maps, whole planes at once (the flat2 path; planes enough for 3
    # threads without row bands), ceil mode or not, down to 2x2; odd maps in ceil mode and
    # padded ones keep the row buffer
    ("max", 2, 7, 14, 10, 2, 2, (2, 2), (0, 0, 0, 0), (1, 1), 0, True),
    ("max", 1, 13, 2, 6, 2, 2, (2, 2), (0, 0, 0, 0), (1, 1), 0),
    ("max", 1, 3, 14, 15, 2, 2, (2, 2), (0, 0, 0, 0), (1, 1), 0, True),
    ("max", 1, 3, 8, 8, 2, 2, (2, 2), (0, 0, 1, 1), (1, 1), 0),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", POOL_CASES, ids=[str(i) for i in range(len(POOL_CASES))])
def test_pool(driver: Path, tmp_path: Path, case, threads: int) -> None:
    check_pool(driver, tmp_path, case, threads)


@pytest.mark.parametrize("case", [c for c in POOL_CASES if c[5:8] == (2, 2, (2, 2))])
def test_pool_2x2_three_threads(driver: Path, tmp_path: Path, case) -> None:
    """The 2x2/2 max pools at 3 threads: planes not a multiple of the threads."""
    check_pool(driver, tmp_path, case, 3)


@pytest.fixture(scope="module")
def sanitized_driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("afrt") / "afrt_kernel_driver_sanitized"
    cmd = [
        toolchain.c_compiler(),
        "-std=c11", "-O1", "-g", "-march=native", "-fopenmp", "-DAFRT_PARALLEL_MIN_WORK=0",
        "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
        *toolchain.WERROR_FLAGS, *toolchain.include_flags(), str(DRIVER_SRC), "-o", str(out),
        "-lm",
    ]  # fmt: skip
    subprocess.run(cmd, check=True)
    return out


def test_pool_sanitized(sanitized_driver: Path, tmp_path: Path) -> None:
    """Every pooling case under ASan + UBSan, at 2 threads (the row bands too)."""
    for i, case in enumerate(POOL_CASES):
        (tmp_path / str(i)).mkdir()
        check_pool(sanitized_driver, tmp_path / str(i), case, 2)


def check_pool(driver: Path, tmp_path: Path, case, threads: int) -> None:
    kind, n, c, h, w, r, s, stride, pads, dil, cip, *ceil = case
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, c, h, w), dtype=np.float32)
    if kind == "max":
        if c > 1:
            x[0, 1, : h // 2 + 1] = -np.inf  # windows of -inf alone give -inf
        x[0, 0, min(1, h - 1), min(1, w - 1)] = np.nan  # ONNX MaxPool propagates NaN
        x[-1, -1, h // 2, w // 2] = np.nan  # also from the interior
    x.tofile(tmp_path / "x.bin")
    ref = pool_ref(x, kind, r, s, stride, pads, dil, cip, *ceil)
    oh, ow = ref.shape[2:]
    args = [n, c, h, w, r, s, oh, ow, *stride, *pads, *dil, cip]
    subprocess.run(
        [str(driver), str(threads), "0", "pool", str(tmp_path), kind, *map(str, args)],
        check=True,
    )
    y = np.fromfile(tmp_path / "y.bin", dtype=np.float32).reshape(ref.shape)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6, equal_nan=True)
    if kind == "max":
        assert np.isnan(y[0, 0]).any()


def test_fast_math(tmp_path: Path) -> None:
    import math

    exe = tmp_path / "afrt_math"
    src = DRIVER_SRC.with_name("afrt_math_driver.c")
    subprocess.run([toolchain.c_compiler(), "-std=c11", "-O3", "-march=native",
                    *toolchain.WERROR_FLAGS, "-Wpedantic", *toolchain.include_flags(), str(src),
                    "-o", str(exe), "-lm"], check=True)  # fmt: skip
    special = [0.0, -0.0, 1e-8, -1e-8, 1e-30, np.inf, -np.inf, np.nan, -100.0, 100.0, 88.72]
    tiny = np.logspace(-30, 0, 301)  # erf's relative accuracy near 0
    x = np.concatenate([np.linspace(-20, 20, 40001), np.linspace(-87.3, 88.7, 20001), tiny,
                        -tiny, special]).astype(np.float32)  # fmt: skip
    out = np.frombuffer(subprocess.run([str(exe)], input=x.tobytes(), capture_output=True,
                                       check=True).stdout, np.float32).reshape(-1, 3)  # fmt: skip
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        ref_exp = np.exp(x64)
    ref_erf = np.array([math.erf(v) for v in x64])
    ok = (ref_exp > 2.4e-38) & (ref_exp < 3.4e38)  # af_expf flushes results below 2^-125 to 0
    np.testing.assert_allclose(out[ok, 0], ref_exp[ok], rtol=5e-7)
    np.testing.assert_allclose(out[:, 1], np.tanh(x64), rtol=1e-6, atol=3e-7)
    np.testing.assert_allclose(out[:, 2], ref_erf, rtol=0, atol=4e-7)
    small = (np.abs(x64) < 1) & (x64 != 0)  # relative, not only absolute, accuracy near 0
    np.testing.assert_allclose(out[small, 2], ref_erf[small], rtol=5e-7, atol=0)
    assert (np.signbit(out[x == 0, 2]) == np.signbit(x[x == 0])).all()  # -0.0 stays -0.0
    tail = out[-len(special) :]
    assert tail[5, 0] == np.inf
    assert tail[6, 0] == 0.0
    assert tail[8, 0] == 0.0
    assert tail[9, 0] == np.inf
    assert np.isnan(tail[7]).all()
    assert list(tail[5:7, 1]) == [1.0, -1.0]
    assert list(tail[5:7, 2]) == [1.0, -1.0]
    assert np.signbit(tail[1, 1])  # -0.0 stays -0.0
    assert np.signbit(tail[1, 2])
