"""MobileNet-V2's inverted-residual block with its expand output in 16-channel blocks
(``assign-layout``'s expand chains): the expand 1x1 conv runs ``gemm_1x1_b``
(``afrt_conv1x1b_f32``, NCHW16c out) and the depthwise -> pointwise chain reading it
``afrt_dwpw_ex_f32(..., AFRT_NC_IN_BLOCKED)``, against onnxruntime.

One model at batch 2 holds a branch per case: odd maps (7x7, 13x11, 9x9), input and output
channel counts that are not multiples of 16, depthwise stride 1 and 2, the expand conv with
Relu6, Relu or no activation, Relu6 / none after the depthwise conv, a residual Add, and
two branches the rule leaves on NCHW (expand channels not a multiple of 16; a 16x16 map,
more than ``EXPAND_MAX_HW`` positions). It runs at one, two and three threads on the native
CPU and on ``x86-64-v2`` (no AVX-512: no blocked expand may be chosen), and under
ASan/UBSan at two threads (slow). The kernels'
epilogue and fallback paths (a generated epilogue, the clamp with a blocked residual,
weights fed at run time, the chain's NCHW fallback for a blocked x) are checked in C
against the NCHW paths.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from conv_epilogues import checked_report
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import HALVE_EPILOGUE_C, TO_BLOCKED_C, driver_output

from autofusion.dialects import clib
from autofusion.passes.assign_layout import EXPAND_MAX_HW
from autofusion.runtime import toolchain

# c: block input channels, e: expanded, k: output; act: after the expand conv; dact: after
# the depthwise conv; res: Add the block input (stride 1, k == c)
CASES: list[dict[str, object]] = [
    {"c": 24, "e": 96, "k": 24, "h": 7, "w": 7, "act": "relu6", "res": True},
    {"c": 20, "e": 48, "k": 40, "h": 13, "w": 11, "stride": 2, "act": "relu"},
    {"c": 16, "e": 64, "k": 33, "h": 9, "w": 9, "act": "none", "dact": "none"},
    {"c": 24, "e": 40, "k": 24, "h": 7, "w": 7, "act": "relu6", "res": True},  # e % 16
    {"c": 16, "e": 32, "k": 24, "h": 16, "w": 16, "act": "relu6"},  # 256 positions
    # past EXPAND_MAX_HW: the expand joins the chain (afrt_edwpw_f32) with <= 32 inputs
    {"c": 24, "e": 72, "k": 24, "h": 15, "w": 17, "act": "relu6", "res": True},
    {"c": 20, "e": 48, "k": 40, "h": 21, "w": 19, "stride": 2, "act": "relu", "dact": "none"},
    {"c": 32, "e": 64, "k": 33, "h": 17, "w": 15, "act": "none"},
    {"c": 40, "e": 64, "k": 24, "h": 15, "w": 15, "act": "relu6"},  # 40 inputs: apart
]  # fmt: skip
# the cases whose expand conv writes blocks on an AVX-512 build
CHOSEN = {0, 1, 2}
# the cases whose expand conv joins its chain on an AVX-512 build (expand_dwpw_blocked)
JOINED = {4, 5, 6, 7}


def _clip(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], x: str, y: str) -> None:
    inits += [numpy_helper.from_array(np.array(0, np.float32), f"{y}_lo"),
              numpy_helper.from_array(np.array(6, np.float32), f"{y}_hi")]  # fmt: skip
    nodes.append(helper.make_node("Clip", [x, f"{y}_lo", f"{y}_hi"], [y], name=y))


def expand_model(batch: int = 2, seed: int = 0) -> onnx.ModelProto:
    """A branch ``x{i} -> expand 1x1 [-> act] -> depthwise 3x3 [-> Relu6] -> 1x1 [+ x{i}]``
    per case, weights at the 1/sqrt(fan-in) scale so outputs stay of order 1."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    ins, outs = [], []

    def weight(name: str, shape: tuple[int, ...], fan_in: int) -> str:
        w = rng.uniform(-1, 1, shape) * 1.7 / np.sqrt(fan_in)
        inits.append(numpy_helper.from_array(w.astype(np.float32), name))
        b = rng.uniform(-0.2, 0.2, shape[0]).astype(np.float32)
        inits.append(numpy_helper.from_array(b, f"{name}_b"))
        return name

    for i, cs in enumerate(CASES):
        c, e, k, h, w = (int(cs[n]) for n in ("c", "e", "k", "h", "w"))  # type: ignore[call-overload]
        s = int(cs.get("stride", 1))  # type: ignore[call-overload]
        x = f"x{i}"
        ins.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, c, h, w]))
        we = weight(f"we{i}", (e, c, 1, 1), c)
        ex = f"ex{i}" if cs["act"] == "none" else f"exc{i}"
        nodes.append(helper.make_node("Conv", [x, we, f"{we}_b"], [ex], name=f"expand{i}",
                                      kernel_shape=[1, 1]))  # fmt: skip
        if cs["act"] == "relu6":
            _clip(nodes, inits, ex, f"ex{i}")
        elif cs["act"] == "relu":
            nodes.append(helper.make_node("Relu", [ex], [f"ex{i}"], name=f"ex{i}"))
        wd = weight(f"wd{i}", (e, 1, 3, 3), 9)
        dw = f"d{i}" if cs.get("dact", "relu6") == "none" else f"dc{i}"
        nodes.append(helper.make_node("Conv", [f"ex{i}", wd, f"{wd}_b"], [dw], name=f"dw{i}",
                                      group=e, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                      strides=[s, s]))  # fmt: skip
        if dw != f"d{i}":
            _clip(nodes, inits, dw, f"d{i}")
        wp = weight(f"wp{i}", (k, e, 1, 1), e)
        y = f"y{i}"
        pw = f"p{i}" if cs.get("res") else y
        nodes.append(helper.make_node("Conv", [f"d{i}", wp, f"{wp}_b"], [pw], name=f"pw{i}",
                                      kernel_shape=[1, 1]))  # fmt: skip
        if cs.get("res"):
            nodes.append(helper.make_node("Add", [pw, x], [y], name=f"add{i}"))
        oh, ow = (h - 1) // s + 1, (w - 1) // s + 1
        outs.append(helper.make_tensor_value_info(y, TensorProto.FLOAT, [batch, k, oh, ow]))
    graph = helper.make_graph(nodes, "expand_chains", ins, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_the_cases_straddle_the_rule() -> None:
    """The rule's limits are where the cases say: the largest chosen map is within
    ``EXPAND_MAX_HW``, the 16x16 one past it; the joined expands have at most
    ``clib.EDWPW_MAX_C`` input channels, the last case more."""
    assert 13 * 11 <= EXPAND_MAX_HW < 15 * 15
    assert max(int(CASES[i]["c"]) for i in JOINED) <= clib.EDWPW_MAX_C < int(CASES[8]["c"])  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("cpu", "threads"), [("native", 1), ("native", 2), ("native", 3), ("x86-64-v2", 2)]
)
def test_expand_chains_match_onnxruntime(cpu: str, threads: int) -> None:
    """Every branch matches onnxruntime; on AVX-512 the chosen expand convs report
    ``gemm_1x1_b`` (``nchw->nchw16c``) and their chains read ``nchw16c``; elsewhere nothing
    is blocked."""
    model = expand_model()
    rng = np.random.default_rng(7)
    feeds = {
        vi.name: rng.uniform(-2, 2, [d.dim_value for d in vi.type.tensor_type.shape.dim]).astype(
            np.float32
        )
        for vi in model.graph.input
    }
    report, by_origin = checked_report(model, feeds, cpu, threads)
    avx512 = toolchain.cpu_has_avx512(cpu)
    for i in range(len(CASES)):
        chosen = avx512 and i in CHOSEN
        expand, chain = by_origin[f"expand{i}"], by_origin[f"dw{i}"]
        joined = avx512 and i in JOINED
        assert (expand is chain) == joined, (i, expand, chain)
        assert (chain["conv_algo"] == "expand_dwpw_blocked") == joined, (i, chain)
        assert (expand["conv_algo"] == "gemm_1x1_b") == chosen, (i, expand)
        assert expand["layout"] == ("nchw->nchw16c" if chosen else "nchw->nchw"), (i, expand)
        assert chain["layout"] == ("nchw16c->nchw" if chosen else "nchw->nchw"), (i, chain)
    layout = report.get("layout") or {}
    assert layout.get("expand_chains", 0) == (len(CHOSEN) if avx512 else 0)


@pytest.mark.slow
@pytest.mark.skipif(
    not toolchain.cpu_has_avx512("native"), reason="expand chains are chosen on AVX-512 only"
)
def test_expand_chains_under_sanitizers(tmp_path: Path) -> None:
    """The model's blocked expands and chains (whole-vector blocked stores, block-row copies
    into the lane tiles, batch 2) under ASan/UBSan at two threads."""
    from autofusion.lowering.c.testing import sanitized_model_c

    m = expand_model()
    rng = np.random.default_rng(3)
    feeds = {vi.name: rng.uniform(-2, 2, [d.dim_value for d in vi.type.tensor_type.shape.dim]
             ).astype(np.float32) for vi in m.graph.input}  # fmt: skip
    text = sanitized_model_c(m, feeds, tmp_path)
    assert text.count("afrt_conv1x1b_f32(") == text.count("afrt_dwpw_ex_f32(") == len(CHOSEN)


_DRIVER = (
    r"""
#include "afrt.h"
#include <stdio.h>
/* gemm_1x1_b and the chain's blocked input against the NCHW paths at batch 2, weights fed
 * at run time (not in a constant region: packed per call). Per case: for afrt_conv1x1b_f32
 * with (0) no epilogue, (1) Relu6, (2) a generated (non-clamp) epilogue, (3) the clamp with
 * a blocked residual, and (4) afrt_dwpw_ex_f32 on a blocked x: the largest difference, the
 * largest reference value and the largest |value| in the blocks' padding (must be 0). */
"""
    + TO_BLOCKED_C
    + HALVE_EPILOGUE_C
    + r"""
static void report(const float *ref, const float *yb, int64_t N, int64_t K, int64_t hw, int m) {
    const int64_t Kb = (K + 15) / 16;
    float diff = 0.0f, big = 0.0f, pad = 0.0f;
    for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < Kb * 16; ++k)
            for (int64_t q = 0; q < hw; ++q) {
                const float v = yb[((n * Kb + k / 16) * hw + q) * 16 + k % 16];
                if (k >= K) {
                    pad = fmaxf(pad, v == v ? fabsf(v) : INFINITY);
                    continue;
                }
                const float r = ref[(n * K + k) * hw + q];
                diff = fmaxf(diff, v == v ? fabsf(v - r) : INFINITY);
                big = fmaxf(big, fabsf(r));
            }
    printf("%d %g %g %g\n", m, (double)diff, (double)big, (double)pad);
}
int main(void) {
    static const int64_t cases[][5] = {/* C K H W chain-K */
        {24, 96, 7, 7, 24}, {20, 40, 13, 11, 33}, {64, 576, 14, 14, 96}, {8, 300, 5, 3, 17}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const int64_t C = cases[i][0], K = cases[i][1], H = cases[i][2], W = cases[i][3];
        const int64_t K2 = cases[i][4], N = 2, hw = H * W, Kb = (K + 15) / 16;
        const afrt_conv_params p = {N, C, H, W, K, 1, 1, H, W, 1, 1, 0, 0, 0, 0, 1, 1, 1};
        const size_t nx = (size_t)(N * C * hw), nw = (size_t)(K * C), ny = (size_t)(N * K * hw);
        const size_t nyb = (size_t)(N * Kb * 16 * hw);
        float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)K * 4);
        float *y0 = malloc(ny * 4), *y1 = malloc(nyb * 4), *res = malloc(ny * 4);
        float *resb = malloc(nyb * 4);
        for (size_t j = 0; j < nx; ++j) x[j] = (float)((j * 2654435761u) % 1000) / 250.0f - 2.0f;
        for (size_t j = 0; j < nw; ++j)
            w[j] = ((float)((j * 40503u) % 1000) / 500.0f - 1.0f) / sqrtf((float)C);
        for (int64_t j = 0; j < K; ++j) b[j] = 0.01f * (float)(j % 50) - 0.2f;
        for (size_t j = 0; j < ny; ++j) res[j] = (float)((j * 977u) % 100) / 50.0f - 1.0f;
        to_blocked(res, resb, N, K, hw);
        for (int m = 0; m < 4; ++m) {
            afrt_epi_clamp relu6 = {NULL, 0, 0, 0.0f, 6.0f};
            afrt_epi_clamp addc = {res, K * hw, hw, -1.0f, 1.5f}, addcb = {resb, 0, 0, -1.0f, 1.5f};
            afrt_epilogue e0 = afrt_no_epilogue(), e1 = e0;
            if (m == 1) e0.fn = e1.fn = afrt_epi_clamp_fn, e0.ctx = e1.ctx = &relu6;
            if (m == 2) e0.fn = e1.fn = halve;
            if (m == 3) e0.fn = e1.fn = afrt_epi_clamp_fn, e0.ctx = &addc, e1.ctx = &addcb;
            afrt_conv2d_f32(x, w, b, y0, &p, NULL, e0);
            memset(y1, 0xff, nyb * 4);
            if (!afrt_conv1x1b_f32(x, w, b, y1, &p, e1)) return 3;
            report(y0, y1, N, K, hw, m);
        }
        /* the chain on the blocked expand output against the chain on its NCHW form */
        const afrt_conv_params pd = {N, K, H, W, K, 3, 3, H, W, 1, 1, 1, 1, 1, 1, 1, 1, K};
        const afrt_conv_params pp = {N, K, H, W, K2, 1, 1, H, W, 1, 1, 0, 0, 0, 0, 1, 1, 1};
        float *wd = malloc((size_t)(K * 9) * 4), *wp = malloc((size_t)(K2 * K) * 4);
        float *z0 = malloc((size_t)(N * K2 * hw) * 4), *z1 = malloc((size_t)(N * K2 * hw) * 4);
        for (int64_t j = 0; j < K * 9; ++j) wd[j] = (float)((j * 7919u) % 100) / 150.0f - 0.33f;
        for (int64_t j = 0; j < K2 * K; ++j)
            wp[j] = ((float)((j * 104729u) % 1000) / 500.0f - 1.0f) / sqrtf((float)K);
        afrt_conv1x1b_f32(x, w, b, y1, &p, afrt_no_epilogue());
        afrt_conv2d_f32(x, w, b, y0, &p, NULL, afrt_no_epilogue());
        if (!afrt_dwpw_f32(y0, wd, b, 0.0f, 6.0f, wp, NULL, z0, &pd, &pp, afrt_no_epilogue()))
            return 4;
        memset(z1, 0xff, (size_t)(N * K2 * hw) * 4);
        if (!afrt_dwpw_ex_f32(y1, wd, b, 0.0f, 6.0f, wp, NULL, z1, &pd, &pp, afrt_no_epilogue(),
                              AFRT_NC_IN_BLOCKED))
            return 5;
        float diff = 0.0f, big = 0.0f;
        for (int64_t j = 0; j < N * K2 * hw; ++j) {
            diff = fmaxf(diff, z1[j] == z1[j] ? fabsf(z1[j] - z0[j]) : INFINITY);
            big = fmaxf(big, fabsf(z0[j]));
        }
        printf("4 %g %g 0\n", (double)diff, (double)big);
        free(x); free(w); free(b); free(y0); free(y1); free(res); free(resb);
        free(wd); free(wp); free(z0); free(z1);
    }
    return 0;
}
"""
)


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_kernels_match_the_nchw_paths(cpu: str, tmp_path: Path) -> None:
    """``afrt_conv1x1b_f32``'s epilogue modes and per-call weights, and the chain's blocked
    input on its fallback (weights fed at run time), built with -Werror, natively and with
    the portable loops of an x86-64-v2 build."""
    out = driver_output(tmp_path, "expand", _DRIVER, cpu)
    rows = [line.split() for line in out.splitlines()]
    assert len(rows) == 4 * 5
    for i, (mode, diff, big, pad) in enumerate(rows):
        assert 0.1 < float(big) < 1e3, (i, mode, big)
        assert float(diff) <= 2e-5 * float(big), (i, mode, diff, big)
        assert float(pad) == 0.0, (i, mode, pad)


_EDWPW_DRIVER = (
    r"""
#include "afrt.h"
#include <stdio.h>
/* afrt_edwpw_f32 against the three convs apart (afrt_conv2d_f32, clamps between) at batch 2,
 * on maps of several bands, with (0) weights in a registered constant region (the blocked
 * band where afrt_edwpw_banded holds) and (1) weights fed at run time (the expand apart, then
 * afrt_dwpw_f32), the pointwise output through a generated epilogue. Per case and mode: the
 * largest difference and the largest reference value. */
"""
    + HALVE_EPILOGUE_C
    + r"""
static void clampv(float *v, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; ++i) v[i] = v[i] < lo ? lo : (v[i] > hi ? hi : v[i]);
}
int main(void) {
    static const int64_t cases[][7] = {/* C E H W stride K threads */
        {16, 96, 57, 45, 2, 24, 1}, {24, 72, 45, 41, 1, 24, 2}, {32, 48, 30, 23, 1, 33, 1},
        {20, 40, 33, 31, 2, 17, 3}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const int64_t C = cases[i][0], E = cases[i][1], H = cases[i][2], W = cases[i][3];
        const int64_t s = cases[i][4], K = cases[i][5], N = 2;
        const int64_t OH = (H - 1) / s + 1, OW = (W - 1) / s + 1, hw = H * W, ohw = OH * OW;
        afrt_set_num_threads((int)cases[i][6]);
        const afrt_conv_params pe = {N, C, H, W, E, 1, 1, H, W, 1, 1, 0, 0, 0, 0, 1, 1, 1};
        const afrt_conv_params pd = {N, E, H, W, E, 3, 3, OH, OW, s, s, 1, 1, 1, 1, 1, 1, E};
        const afrt_conv_params pp = {N, E, OH, OW, K, 1, 1, OH, OW, 1, 1, 0, 0, 0, 0, 1, 1, 1};
        const size_t nwt = (size_t)(E * C + E + E * 9 + E + K * E + K);
        float *wts = malloc(nwt * 4), *x = malloc((size_t)(N * C * hw) * 4);
        float *we = wts, *be = we + E * C, *wd = be + E, *bd = wd + E * 9, *wp = bd + E;
        float *bp = wp + K * E;
        for (size_t j = 0; j < nwt; ++j) wts[j] = (float)((j * 40503u) % 1000) / 500.0f - 1.0f;
        for (int64_t j = 0; j < E * C; ++j) we[j] *= 1.7f / sqrtf((float)C);
        for (int64_t j = 0; j < K * E; ++j) wp[j] *= 1.7f / sqrtf((float)E);
        for (int64_t j = 0; j < N * C * hw; ++j)
            x[j] = (float)((j * 2654435761u) % 1000) / 250.0f - 2.0f;
        float *mid = malloc((size_t)(N * E * hw) * 4), *d = malloc((size_t)(N * E * ohw) * 4);
        float *y0 = malloc((size_t)(N * K * ohw) * 4), *y1 = malloc((size_t)(N * K * ohw) * 4);
        const afrt_epilogue epi = {halve, NULL};
        afrt_conv2d_f32(x, we, be, mid, &pe, NULL, afrt_no_epilogue());
        clampv(mid, (size_t)(N * E * hw), 0.0f, 6.0f);
        afrt_conv2d_f32(mid, wd, bd, d, &pd, NULL, afrt_no_epilogue());
        clampv(d, (size_t)(N * E * ohw), -1.0f, 6.0f);
        afrt_conv2d_f32(d, wp, bp, y0, &pp, NULL, epi);
        for (int m = 0; m < 2; ++m) {
            if (m == 0) afrt_register_constant_region(wts, nwt * 4);
            memset(y1, 0xff, (size_t)(N * K * ohw) * 4);
            if (!afrt_edwpw_f32(x, we, be, 0.0f, 6.0f, wd, bd, -1.0f, 6.0f, wp, bp, y1, &pe, &pd,
                                &pp, epi))
                return 3;
            if (m == 0) afrt_unregister_constant_region(wts);
            float diff = 0.0f, big = 0.0f;
            for (int64_t j = 0; j < N * K * ohw; ++j) {
                diff = fmaxf(diff, y1[j] == y1[j] ? fabsf(y1[j] - y0[j]) : INFINITY);
                big = fmaxf(big, fabsf(y0[j]));
            }
            printf("%d %d %g %g\n", m, afrt_edwpw_banded(&pe, &pd, &pp), (double)diff,
                   (double)big);
        }
        free(wts); free(x); free(mid); free(d); free(y0); free(y1);
    }
    return 0;
}
"""
)


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_edwpw_matches_the_convs_apart(cpu: str, tmp_path: Path) -> None:
    """``afrt_edwpw_f32`` (odd maps of several bands, strides 1 and 2, expand and output
    channels not multiples of 16, 1-3 threads, a generated epilogue) matches the three convs
    apart, with constant weights (the blocked band on AVX-512) and weights fed at run time
    (the expand apart); built with -Werror natively and for x86-64-v2 (no banded path)."""
    out = driver_output(tmp_path, "edwpw", _EDWPW_DRIVER, cpu)
    rows = [line.split() for line in out.splitlines()]
    assert len(rows) == 4 * 2
    for i, (_, banded, diff, big) in enumerate(rows):
        assert banded == str(int(toolchain.cpu_has_avx512(cpu))), (i, banded)
        assert 0.1 < float(big) < 1e3, (i, big)
        assert float(diff) <= 2e-5 * float(big), (i, diff, big)


_EDWPW_RULE_DRIVER = r"""
#include "afrt.h"
#include <stdio.h>
int main(void) {
    afrt_conv_params p[3];
    while (1) {
        for (int j = 0; j < 3; ++j)
            for (int i = 0; i < 18; ++i)
                if (scanf("%ld", (long *)&(&p[j].N)[i]) != 1) return 0;
        printf("%d %d\n", afrt_edwpw_applies(&p[0], &p[1], &p[2]),
               afrt_edwpw_banded(&p[0], &p[1], &p[2]));
    }
}
"""


@pytest.mark.parametrize("cpu", ["native", "x86-64-v3"])
def test_edwpw_rule_matches_the_runtime(tmp_path: Path, cpu: str) -> None:
    """``clib.edwpw_applies`` and ``clib.edwpw_algo`` (the report's and ``fuse-conv-chain``'s
    rule) agree with ``afrt_edwpw_applies`` / ``afrt_edwpw_banded`` on builds with and
    without AVX-512: expand input channels around ``EDWPW_MAX_C``, a 3x3 or strided
    "expand", an expand whose K is not the depthwise C, pointwise K around 16."""
    import itertools

    src = tmp_path / "rule.c"
    src.write_text(_EDWPW_RULE_DRIVER)
    exe = tmp_path / "rule"
    subprocess.run([toolchain.c_compiler(), "-O1", "-std=c11", *toolchain.cpu_flags(cpu),
                    *toolchain.include_flags(), str(src), "-o", str(exe), "-lm"],
                   check=True)  # fmt: skip
    triples = []
    for c, (r, s), ek, kout in itertools.product((8, 32, 33), ((1, 1), (3, 1), (1, 2)),
                                                 (48, 40), (16, 17)):  # fmt: skip
        h, e = 18, 48
        oh, pad = (h - 1) // s + 1, (r - 1) // 2
        ex = [1, c, h, h, ek, r, r, oh, oh, s, s, pad, pad, pad, pad, 1, 1, 1]
        dw = [1, e, oh, oh, e, 3, 3, oh, oh, 1, 1, 1, 1, 1, 1, 1, 1, e]
        pw = [1, e, oh, oh, kout, 1, 1, oh, oh, 1, 1, 0, 0, 0, 0, 1, 1, 1]
        triples.append((ex, dw, pw))
    text = "".join(" ".join(map(str, [*e, *d, *p])) + "\n" for e, d, p in triples)
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    got = [tuple(int(v) for v in line.split()) for line in out.stdout.splitlines()]
    avx512 = toolchain.cpu_has_avx512(cpu)
    want = [(int(clib.edwpw_applies(e, d, p)),
             int(clib.edwpw_algo(e, d, p, avx512) == "expand_dwpw_blocked"))
            for e, d, p in triples]  # fmt: skip
    assert [g[0] for g in got] == [w[0] for w in want]
    # where the triple qualifies the C side's banded choice is the report's
    assert [g[1] for g, w in zip(got, want, strict=True) if w[0]] == [w[1] for w in want if w[0]]
    assert 0 < sum(w[0] for w in want) < len(want)
    assert 0 < sum(w[1] for w in want if w[0]) or not avx512
