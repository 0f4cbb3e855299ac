"""SqueezeNet's fire modules in 16-channel blocks (``assign-layout``'s fires): the squeeze
runs ``direct_1x1_b`` (``afrt_conv1x1nb_f32``, NCHW or NCHW16c in, NCHW16c out), the expands
read and write blocks (their halves of the concat), the max pools between fires run on blocks
(``afrt_maxpool2d_nc_f32``), the first squeeze whose fire stays NCHW is the exit, and a 1x1
conv reading a blocked concat into NCHW (SqueezeNet's classifier) runs ``gemm_1x1_xb``
(``afrt_conv1x1xb_f32``: gemm_1x1 with B packed from the blocks), as does the exit --
against onnxruntime.

One small model at batch 2: fire A (32 -> 16 -> 32 + 32, 15x15: odd, not a multiple of the
register tiles) -> max pool 3x3/2 with ceil_mode -> fire B (64 -> 32 -> 16 + 16, K = 32:
two-block tiles) -> max pool 2x2/2 ceil_mode -> fire C, whose concat is the output (so it
stays NCHW and its squeeze reads blocks into NCHW), beside it a fire with a 24-channel
expand (not whole blocks: must stay NCHW), and fire D (32 -> 16 -> 144 + 128, 15x15: a
272-channel concat, two k blocks of the GEMM) read by a classifier 1x1 conv (272 -> 20 +
Relu). Every conv has a bias and Relu. At one, two and three threads on the native CPU and
on ``x86-64-v2`` (no AVX-512: nothing may be blocked), and under ASan/UBSan at two threads
(slow). ``afrt_conv1x1xb_f32``'s other paths (its fallbacks on a one-position map, on
``gemm_1x1_t``'s small maps and with y as the epilogue's residual; channels past C in the
last block; a generated epilogue) are checked in C against the NCHW conv.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from conv_epilogues import checked_report
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import HALVE_EPILOGUE_C, TO_BLOCKED_C, driver_output

from autofusion.runtime import toolchain


def fire_model(batch: int = 2, seed: int = 0) -> onnx.ModelProto:
    """``x -> fire a -> pool -> fire b -> pool -> fire c -> y`` and ``x -> fire n -> z``
    (a 24-channel expand), weights at the 1/sqrt(fan-in) scale so outputs stay of order 1."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def conv(name: str, x: str, c: int, k: int, r: int) -> str:
        w = rng.uniform(-1, 1, (k, c, r, r)) * 1.7 / np.sqrt(c * r * r)
        b = rng.uniform(-0.1, 0.3, k)
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}_w"))
        inits.append(numpy_helper.from_array(b.astype(np.float32), f"{name}_b"))
        p = r // 2
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"],
                                      name=name, kernel_shape=[r, r], pads=[p] * 4))  # fmt: skip
        nodes.append(helper.make_node("Relu", [f"{name}_c"], [name], name=f"{name}_relu"))
        return name

    def fire(name: str, x: str, c: int, s: int, e1: int, e3: int, out: str) -> None:
        sq = conv(f"{name}_squeeze", x, c, s, 1)
        a = conv(f"{name}_expand1x1", sq, s, e1, 1)
        b = conv(f"{name}_expand3x3", sq, s, e3, 3)
        nodes.append(helper.make_node("Concat", [a, b], [out], name=f"{name}_cat", axis=1))

    def pool(name: str, x: str, k: int) -> None:
        nodes.append(helper.make_node("MaxPool", [x], [name], name=name, kernel_shape=[k, k],
                                      strides=[2, 2], ceil_mode=1))  # fmt: skip

    fire("a", "x", 32, 16, 32, 32, "ya")  # 15x15
    pool("pa", "ya", 3)  # -> 7x7
    fire("b", "pa", 64, 32, 16, 16, "yb")
    pool("pb", "yb", 2)  # -> 4x4 (ceil)
    fire("c", "pb", 32, 16, 16, 16, "y")
    fire("n", "x", 32, 16, 24, 16, "z")  # 24 channels: not whole blocks
    fire("d", "x", 32, 16, 144, 128, "yd")  # 272 channels: two k blocks
    conv("cls", "yd", 272, 20, 1)
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 32, 15, 15])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 32, 4, 4]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [batch, 40, 15, 15]),
            helper.make_tensor_value_info("cls", TensorProto.FLOAT, [batch, 20, 15, 15]),
            ]  # fmt: skip
    graph = helper.make_graph(nodes, "fires", ins, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# conv -> (algo, layout) on an AVX-512 build
BLOCKED = {
    "a_squeeze": ("direct_1x1_b", "nchw->nchw16c"),
    "a_expand1x1": ("direct_1x1_b", "nchw16c->nchw16c"),
    "a_expand3x3": ("direct_nchwc", "nchw16c->nchw16c"),
    "b_squeeze": ("direct_1x1_b", "nchw16c->nchw16c"),
    "b_expand1x1": ("direct_1x1_b", "nchw16c->nchw16c"),
    "b_expand3x3": ("direct_nchwc", "nchw16c->nchw16c"),
    "c_squeeze": ("gemm_1x1_xb", "nchw16c->nchw"),
    "d_squeeze": ("direct_1x1_b", "nchw->nchw16c"),
    "d_expand1x1": ("direct_1x1_b", "nchw16c->nchw16c"),
    "d_expand3x3": ("direct_nchwc", "nchw16c->nchw16c"),
    "cls": ("gemm_1x1_xb", "nchw16c->nchw"),
}


@pytest.mark.parametrize(
    ("cpu", "threads"), [("native", 1), ("native", 2), ("native", 3), ("x86-64-v2", 2)]
)
def test_fire_blocks_match_onnxruntime(cpu: str, threads: int) -> None:
    """Every output matches onnxruntime; on AVX-512 fires a, b and d and both pools are
    blocked, fire c's squeeze is the exit, the classifier reads fire d's blocks and the rest
    (fire n included) is NCHW; elsewhere nothing."""
    model = fire_model()
    feeds = {"x": np.random.default_rng(7).uniform(-2, 2, (2, 32, 15, 15)).astype(np.float32)}
    report, by_origin = checked_report(model, feeds, cpu, threads)
    avx512 = toolchain.cpu_has_avx512(cpu)
    names = [f"{f}_{part}" for f in "abcdn" for part in ("squeeze", "expand1x1", "expand3x3")]
    for name in [*names, "cls"]:
        row = by_origin[name]
        if avx512 and name in BLOCKED:
            assert (row["conv_algo"], row["layout"]) == BLOCKED[name], (name, row)
        else:
            assert row["layout"] == "nchw->nchw", (name, row)
    layout = report.get("layout") or {}
    want = (3, 2, 1) if avx512 else (0, 0, 0)
    keys = ("fires", "blocked_pools", "gemm_readers")
    assert tuple(layout.get(k, 0) for k in keys) == want, layout


@pytest.mark.slow
@pytest.mark.skipif(
    not toolchain.cpu_has_avx512("native"), reason="fire modules are blocked on AVX-512 only"
)
def test_fire_blocks_under_sanitizers(tmp_path: Path) -> None:
    """The blocked squeezes, expands and pools (in-place broadcasts from both layouts, the
    short last tiles of odd maps, ceil-mode windows at the border, batch 2) under ASan/UBSan
    at two threads."""
    from autofusion.lowering.c.testing import sanitized_model_c

    x = np.random.default_rng(3).uniform(-2, 2, (2, 32, 15, 15)).astype(np.float32)
    text = sanitized_model_c(fire_model(), {"x": x}, tmp_path)
    assert text.count("afrt_conv1x1nb_f32(") == 6  # fires a, b, d: squeeze, expand 1x1
    assert text.count("afrt_maxpool2d_nc_f32(") == 2
    assert text.count("afrt_conv1x1xb_f32(") == 2  # fire c's squeeze, the classifier


_XB_DRIVER = (
    r"""
#include "afrt.h"
#include <stdio.h>
/* afrt_conv1x1xb_f32 (NCHW16c x) against afrt_conv2d_f32 on the same x in NCHW at batch 2,
 * weights fed at run time, one and two threads. Per case and mode -- (0) no epilogue, (1)
 * Relu, (2) a generated (non-clamp) epilogue, (3) the clamp with y as its residual -- the
 * largest difference and the largest reference value. */
"""
    + TO_BLOCKED_C
    + HALVE_EPILOGUE_C
    + r"""
int main(void) {
    static const int64_t cases[][4] = {/* C K H W */
        {272, 20, 15, 15}, {512, 1000, 13, 13}, {40, 33, 7, 9}, {512, 64, 4, 4}, {48, 24, 1, 1}};
    for (int th = 1; th <= 2; ++th) {
        afrt_set_num_threads(th);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
            const int64_t C = cases[i][0], K = cases[i][1], H = cases[i][2], W = cases[i][3];
            const int64_t N = 2, hw = H * W, Cb = (C + 15) / 16;
            const afrt_conv_params p = {N, C, H, W, K, 1, 1, H, W, 1, 1, 0, 0, 0, 0, 1, 1, 1};
            const size_t nx = (size_t)(N * C * hw), nw = (size_t)(K * C), ny = (size_t)(N * K * hw);
            float *x = malloc(nx * 4), *xb = malloc((size_t)(N * Cb * 16 * hw) * 4);
            float *w = malloc(nw * 4), *b = malloc((size_t)K * 4);
            float *y0 = malloc(ny * 4), *y1 = malloc(ny * 4), *res = malloc(ny * 4);
            for (size_t j = 0; j < nx; ++j)
                x[j] = (float)((j * 2654435761u) % 1000) / 250.0f - 2.0f;
            for (size_t j = 0; j < nw; ++j)
                w[j] = ((float)((j * 40503u) % 1000) / 500.0f - 1.0f) / sqrtf((float)C);
            for (int64_t j = 0; j < K; ++j) b[j] = 0.01f * (float)(j % 50) - 0.2f;
            for (size_t j = 0; j < ny; ++j) res[j] = (float)((j * 977u) % 100) / 50.0f - 1.0f;
            to_blocked(x, xb, N, C, hw);
            /* the last block's padding is never read: NaN there must not reach y */
            for (int64_t n = 0; n < N; ++n)
                for (int64_t q = 0; q < hw; ++q)
                    for (int64_t c = C; c < Cb * 16; ++c)
                        xb[((n * Cb + c / 16) * hw + q) * 16 + c % 16] = NAN;
            for (int m = 0; m < 4; ++m) {
                afrt_epi_clamp relu = {NULL, 0, 0, 0.0f, INFINITY};
                afrt_epi_clamp add0 = {res, K * hw, hw, -1.0f, 1.5f};
                afrt_epi_clamp add1 = {y1, K * hw, hw, -1.0f, 1.5f};
                afrt_epilogue e0 = afrt_no_epilogue(), e1 = e0;
                if (m == 1) e0.fn = e1.fn = afrt_epi_clamp_fn, e0.ctx = e1.ctx = &relu;
                if (m == 2) e0.fn = e1.fn = halve;
                if (m == 3) e0.fn = e1.fn = afrt_epi_clamp_fn, e0.ctx = &add0, e1.ctx = &add1;
                afrt_conv2d_f32(x, w, b, y0, &p, NULL, e0);
                if (m == 3) memcpy(y1, res, ny * 4);
                else memset(y1, 0xff, ny * 4);
                if (!afrt_conv1x1xb_f32(xb, w, b, y1, &p, e1)) return 3;
                float diff = 0.0f, big = 0.0f;
                for (size_t j = 0; j < ny; ++j) {
                    diff = fmaxf(diff, y1[j] == y1[j] ? fabsf(y1[j] - y0[j]) : INFINITY);
                    big = fmaxf(big, fabsf(y0[j]));
                }
                printf("%d %g %g\n", m, (double)diff, (double)big);
            }
            free(x); free(xb); free(w); free(b); free(y0); free(y1); free(res);
        }
    }
    return 0;
}
"""
)


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_gemm_1x1_xb_matches_the_nchw_conv(cpu: str, tmp_path: Path) -> None:
    """``afrt_conv1x1xb_f32``: two k blocks, the classifier's shape, a 40-channel x (a padded
    last block) on an odd map, a 4x4 map with 512 channels (``gemm_1x1_t``'s, reordered and
    run by ``afrt_conv2d_f32``) and a one-position map (the matrix-vector product), each with
    no epilogue, Relu, a generated epilogue and the clamp reading its residual from y, at one
    and two threads, built with -Werror natively and with an x86-64-v2 build's portable
    packing."""
    out = driver_output(tmp_path, "xb", _XB_DRIVER, cpu)
    rows = [line.split() for line in out.splitlines()]
    assert len(rows) == 2 * 5 * 4
    for i, (mode, diff, big) in enumerate(rows):
        assert 0.1 < float(big) < 1e3, (i, mode, big)
        assert float(diff) <= 2e-5 * float(big), (i, mode, diff, big)


_NB_DRIVER = (
    r"""
#include "afrt.h"
#include <stdio.h>
/* afrt_conv1x1nb_f32 (NCHW16c y, x NCHW or NCHW16c) against afrt_conv2d_f32 at batch 2,
 * weights fed at run time, with the four-block tiles on and off, one and two threads. Per
 * case, x layout and mode -- (0) no epilogue, (1) Relu, (2) a generated (non-clamp) epilogue,
 * (3) the clamp with its blocked residual in y itself -- the largest difference, the largest
 * reference value and the largest |value| in y's padding channels (must be 0). */
"""
    + TO_BLOCKED_C
    + HALVE_EPILOGUE_C
    + r"""
int main(void) {
    static const int64_t cases[][4] = {/* C K H W */
        {16, 64, 9, 7}, {32, 144, 5, 5}, {48, 100, 13, 13}, {20, 80, 3, 11}, {64, 16, 7, 9}};
    for (int run = 0; run < 4; ++run) {
        afrt_set_num_threads(1 + run % 2);
        afrt_1x1b_four_ = run < 2;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
            const int64_t C = cases[i][0], K = cases[i][1], H = cases[i][2], W = cases[i][3];
            const int64_t N = 2, hw = H * W, Cb = (C + 15) / 16, Kb = (K + 15) / 16;
            const afrt_conv_params p = {N, C, H, W, K, 1, 1, H, W, 1, 1, 0, 0, 0, 0, 1, 1, 1};
            const size_t nx = (size_t)(N * C * hw), nw = (size_t)(K * C), ny = (size_t)(N * K * hw);
            const size_t nyb = (size_t)(N * Kb * 16 * hw);
            float *x = malloc(nx * 4), *xb = malloc((size_t)(N * Cb * 16 * hw) * 4);
            float *w = malloc(nw * 4), *b = malloc((size_t)K * 4), *y0 = malloc(ny * 4);
            float *y0b = malloc(nyb * 4), *y1 = malloc(nyb * 4), *res = malloc(ny * 4);
            float *resb = malloc(nyb * 4);
            for (size_t j = 0; j < nx; ++j)
                x[j] = (float)((j * 2654435761u) % 1000) / 250.0f - 2.0f;
            for (size_t j = 0; j < nw; ++j)
                w[j] = ((float)((j * 40503u) % 1000) / 500.0f - 1.0f) / sqrtf((float)C);
            for (int64_t j = 0; j < K; ++j) b[j] = 0.01f * (float)(j % 50) - 0.2f;
            for (size_t j = 0; j < ny; ++j) res[j] = (float)((j * 977u) % 100) / 50.0f - 1.0f;
            to_blocked(x, xb, N, C, hw);
            to_blocked(res, resb, N, K, hw);
            for (int xl = 0; xl < 2; ++xl)
                for (int m = 0; m < 4; ++m) {
                    afrt_epi_clamp relu = {NULL, 0, 0, 0.0f, INFINITY};
                    afrt_epi_clamp add0 = {res, K * hw, hw, -1.0f, 1.5f};
                    afrt_epi_clamp add1 = {y1, 0, 0, -1.0f, 1.5f};
                    afrt_epilogue e0 = afrt_no_epilogue(), e1 = e0;
                    if (m == 1) e0.fn = e1.fn = afrt_epi_clamp_fn, e0.ctx = e1.ctx = &relu;
                    if (m == 2) e0.fn = e1.fn = halve;
                    if (m == 3) e0.fn = e1.fn = afrt_epi_clamp_fn, e0.ctx = &add0, e1.ctx = &add1;
                    afrt_conv2d_f32(x, w, b, y0, &p, NULL, e0);
                    to_blocked(y0, y0b, N, K, hw);
                    if (m == 3) memcpy(y1, resb, nyb * 4);
                    else memset(y1, 0xff, nyb * 4);
                    if (!afrt_conv1x1nb_f32(xl ? xb : x, w, b, y1, &p, e1, xl)) return 3;
                    float diff = 0.0f, big = 0.0f, pad = 0.0f;
                    for (int64_t n = 0; n < N; ++n)
                        for (int64_t k = 0; k < Kb * 16; ++k)
                            for (int64_t q = 0; q < hw; ++q) {
                                const size_t o =
                                    (size_t)(((n * Kb + k / 16) * hw + q) * 16 + k % 16);
                                const float v = y1[o];
                                if (k >= K) {
                                    pad = fmaxf(pad, v == v ? fabsf(v) : INFINITY);
                                    continue;
                                }
                                diff = fmaxf(diff, v == v ? fabsf(v - y0b[o]) : INFINITY);
                                big = fmaxf(big, fabsf(y0b[o]));
                            }
                    printf("%d %g %g %g\n", m, (double)diff, (double)big, (double)pad);
                }
            free(x); free(xb); free(w); free(b); free(y0); free(y0b); free(y1); free(res);
            free(resb);
        }
    }
    return 0;
}
"""
)


@pytest.mark.skipif(
    not toolchain.cpu_has_avx512("native"), reason="direct_1x1_b is an AVX-512 kernel"
)
def test_direct_1x1_b_matches_the_nchw_conv(tmp_path: Path) -> None:
    """``afrt_conv1x1nb_f32``: four-block tiles (K = 64, 80, 100, 144: whole groups of four
    blocks, then pairs and a masked last block) on and off, one-block tiles (K = 16), maps
    that are not whole register tiles, x in either layout, each with no epilogue, Relu, a
    generated epilogue and the clamp reading its blocked residual from y, at one and two
    threads, built with -Werror."""
    out = driver_output(tmp_path, "nb", _NB_DRIVER, "native")
    rows = [line.split() for line in out.splitlines()]
    assert len(rows) == 4 * 5 * 2 * 4
    for i, (mode, diff, big, pad) in enumerate(rows):
        assert 0.1 < float(big) < 1e3, (i, mode, big)
        assert float(diff) <= 2e-5 * float(big), (i, mode, diff, big)
        assert float(pad) == 0.0, (i, mode, pad)


_POOL_DRIVER = (
    r"""
#include "afrt.h"
#include <stdio.h>
/* afrt_maxpool2d_nc_f32 (NCHW16c) against afrt_maxpool2d_f32 (NCHW) at batch 2, with the
 * next rows' prefetch on and off, one and two threads; NaN, +-inf and zeros of both signs
 * in the input. Per case: the number of outputs that differ (by value: the two pools fold
 * ties in different orders, so -0.0 and 0.0 count as equal; NaN == NaN). */
"""
    + TO_BLOCKED_C
    + r"""
int main(void) {
    static const int64_t cases[][8] = {/* C H W R stride pad OH OW */
        {64, 23, 23, 3, 2, 0, 11, 11}, {20, 9, 11, 3, 1, 1, 9, 11}, {32, 15, 15, 3, 2, 0, 7, 7},
        {16, 8, 9, 2, 2, 0, 4, 5}, {48, 13, 13, 3, 3, 1, 5, 5}, {32, 15, 15, 3, 2, 0, 8, 8}};
    for (int run = 0; run < 4; ++run) {
        afrt_set_num_threads(1 + run % 2);
        afrt_pool_pf_ = run < 2;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
            const int64_t *c = cases[i], N = 2, C = c[0], H = c[1], W = c[2], R = c[3];
            const int64_t st = c[4], pd = c[5], OH = c[6], OW = c[7], Cb = (C + 15) / 16;
            /* the last case is ceil mode: windows past the bottom and right edges */
            const int64_t pe = (OH - 1) * st + R - H - pd;
            const afrt_pool_params p = {N, C, H, W, R, R, OH, OW, st, st, pd, pd,
                                        pe > pd ? pe : pd, pe > pd ? pe : pd, 1, 1, 0};
            const size_t nx = (size_t)(N * C * H * W), ny = (size_t)(N * C * OH * OW);
            const size_t nyb = (size_t)(N * Cb * 16 * OH * OW);
            float *x = malloc(nx * 4), *xb = malloc((size_t)(N * Cb * 16 * H * W) * 4);
            float *y0 = malloc(ny * 4), *y0b = malloc(nyb * 4), *y1 = malloc(nyb * 4);
            for (size_t j = 0; j < nx; ++j)
                x[j] = j % 97 == 5    ? NAN
                       : j % 89 == 7  ? INFINITY
                       : j % 83 == 3  ? -INFINITY
                       : j % 7 == 2   ? -0.0f
                       : j % 7 == 4   ? 0.0f
                                      : (float)((j * 2654435761u) % 1000) / 250.0f - 2.0f;
            to_blocked(x, xb, N, C, H * W);
            afrt_maxpool2d_f32(x, y0, &p);
            to_blocked(y0, y0b, N, C, OH * OW);
            memset(y1, 0xff, nyb * 4);
            afrt_maxpool2d_nc_f32(xb, y1, &p);
            int bad = 0;
            for (size_t j = 0; j < nyb; ++j)
                bad += !(y1[j] == y0b[j] || (y1[j] != y1[j] && y0b[j] != y0b[j]));
            printf("%d\n", bad);
            free(x); free(xb); free(y0); free(y0b); free(y1);
        }
    }
    return 0;
}
"""
)


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_blocked_max_pool_matches_the_nchw_pool(cpu: str, tmp_path: Path) -> None:
    """``afrt_maxpool2d_nc_f32`` with its next-rows prefetch on and off: 3x3/2 (SqueezeNet's),
    3x3/1 padded, 2x2/2, 3x3/3 padded and a ceil-mode 3x3/2, channels not a multiple of 16,
    NaN propagated, at one and two threads, built with -Werror natively and for x86-64-v2."""
    out = driver_output(tmp_path, "pool", _POOL_DRIVER, cpu)
    assert out.split() == ["0"] * (4 * 6), out
