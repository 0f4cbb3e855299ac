"""The direct blocked convolution (``afrt_nchwc_f32``, afrt_nchwc.h, algo ``direct_nchwc``).

A sweep of 3x3 convs the rule sends to the blocked kernel (stride 1 on maps too small for
Winograd, stride 2, odd and non-square maps whose rows end in every tile width (14, 13, 7,
and 12 columns computed as 14: rows must fill the tiles to 90%, ``clib.NC_FILL_PCT``; the
kernel's other widths are checked by the C driver below), asymmetric pads, output channels
not a multiple of the 32-channel register tile, batch 2, weights as a graph input), each
with a fused epilogue (none, bias, Relu, Clip(0, 6), SiLU, bias + residual Add + Relu), is
packed into one multi-branch model, built for this CPU (AVX-512) at two threads and
compared with onnxruntime; NaN and inf inputs must give exactly ONNX's NaN and inf. The config key
``conv_layout: nchw`` must keep every conv off the kernel. ``clib.nchwc_applies`` is checked
against ``afrt_nchwc_applies`` compiled in C, and the kernel itself (1x1 and 3x3, channels
not a multiple of 16, the portable loops of an x86-64-v3 build) against ``afrt_conv2d_f32``.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnx
import pytest
from conv_epilogues import conv3x3_sweep, sweep_feeds
from runtime_drivers import conv_rule_outputs, driver_output

import autofusion
from autofusion.dialects import clib
from autofusion.errors import AutofusionError
from autofusion.lowering.c.testing import onnxruntime_outputs
from autofusion.pipeline import PipelineOptions, blocked_convs
from autofusion.policy.config import load_config
from autofusion.runtime import toolchain
from autofusion.testing import assert_close

needs_avx512 = pytest.mark.skipif(
    not toolchain.cpu_has_avx512("native"), reason="the blocked kernel is chosen on AVX-512 only"
)

# c, k, h, w, stride, pads (top, left, bottom, right), epilogue
CASES: list[tuple[int, int, int, int, int, tuple[int, int, int, int], str]] = [
    (32, 32, 9, 7, 1, (1, 1, 1, 1), "relu"),  # output rows 7 wide: two rows a tile
    (16, 40, 7, 13, 1, (1, 1, 1, 1), "bias"),  # 13
    (48, 64, 13, 13, 2, (1, 1, 1, 1), "bias_add_relu"),  # 7
    (32, 48, 16, 27, 2, (1, 1, 1, 1), "relu6"),  # 14
    (16, 33, 10, 14, 2, (1, 1, 0, 0), "silu"),  # 7, asymmetric pads
    (64, 96, 6, 9, 1, (0, 0, 0, 0), "none"),  # 7, unpadded
    (32, 32, 15, 52, 2, (2, 1, 0, 1), "bias_add_relu"),  # 26: 14 + 12 computed as 14
    (16, 64, 29, 53, 2, (1, 1, 1, 1), "bias"),  # 27: 14 + 13
    (16, 32, 3, 55, 1, (1, 1, 1, 1), "relu"),  # 55: 3 x 14 + 13
]


def sweep() -> list[dict[str, object]]:
    """The cases as keyword arguments of ``conv3x3_branch`` (also used by
    test_runtime_sanitize.py)."""
    cases: list[dict[str, object]] = [
        {"c": c, "k": k, "h": h, "w": w, "stride": s, "pads": p, "epi": e}
        for c, k, h, w, s, p, e in CASES
    ]
    cases.append({"c": 32, "k": 32, "h": 7, "w": 7, "stride": 1, "pads": (1, 1, 1, 1),
                  "epi": "relu", "batch": 2})  # fmt: skip
    cases.append({"c": 16, "k": 32, "h": 11, "w": 13, "stride": 2, "pads": (1, 1, 1, 1),
                  "epi": "bias", "w_input": True})  # fmt: skip
    return cases


def _run(m: onnx.ModelProto, feeds: dict[str, np.ndarray], threads: int,
         config: str | None = None) -> tuple[dict[str, np.ndarray], list[str]]:  # fmt: skip
    c = autofusion.compile(m, threads=threads, cache=False, config=config)
    try:
        algos = [str(r["conv_algo"]) for r in c.report["conv_algo"]]  # type: ignore[union-attr]
        return c.run(feeds), algos
    finally:
        c.close()


@needs_avx512
def test_nchwc_sweep_matches_onnxruntime() -> None:
    """The sweep on the blocked kernel at two threads; case 0 also gets a NaN and an inf,
    which must reach exactly the outputs whose 3x3 window holds them, as in ONNX."""
    cases = sweep()
    m = conv3x3_sweep(cases, 7, "nchwc_sweep")
    feeds = sweep_feeds(m, 7)
    feeds["x0"][0, 3, 4, 4] = np.nan
    feeds["x0"][0, 20, 0, 5] = np.inf
    ref = onnxruntime_outputs(m, feeds)
    assert all(0.1 < np.abs(r[np.isfinite(r)]).max() < 10 for r in ref.values())  # ordinary size
    got, algos = _run(m, feeds, threads=2)
    assert algos == ["direct_nchwc"] * len(cases), algos
    assert np.isnan(ref["y0"]).any()
    assert not np.isnan(ref["y0"]).all()
    assert np.array_equal(np.isnan(got["y0"]), np.isnan(ref["y0"]))
    assert np.array_equal(np.isinf(got["y0"]), np.isinf(ref["y0"]))
    for name, r in ref.items():
        assert_close(got[name], r, f"{name} (direct_nchwc)")


def test_conv_layout_nchw_keeps_convs_off_the_kernel(tmp_path: Path) -> None:
    """``conv_layout: nchw`` acts: no conv is direct_nchwc, outputs still match; the blocked
    choice needs AVX-512 (x86-64-v4 yes, x86-64-v3 no) and a valid key value."""
    cfg = tmp_path / "nchw.json"
    cfg.write_text('{"conv_layout": "nchw"}')
    cases = sweep()[:3]
    m = conv3x3_sweep(cases, 11, "nchwc_sweep")
    feeds = sweep_feeds(m, 11)
    ref = onnxruntime_outputs(m, feeds)
    got, algos = _run(m, feeds, threads=1, config=str(cfg))
    assert "direct_nchwc" not in algos, algos
    assert len(algos) == len(cases), algos
    for name, r in ref.items():
        assert_close(got[name], r, f"{name} (conv_layout nchw)")
    assert not blocked_convs(PipelineOptions(cpu="x86-64-v4", config=str(cfg)))
    assert blocked_convs(PipelineOptions(cpu="x86-64-v4"))
    assert not blocked_convs(PipelineOptions(cpu="x86-64-v3"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"conv_layout": "nchw16c"}')
    with pytest.raises(AutofusionError, match="conv_layout"):
        load_config(str(bad))


def test_nchwc_rule_matches_the_runtime(tmp_path: Path) -> None:
    """clib.nchwc_applies (the lowering's rule) equals afrt_nchwc_applies over a sweep."""
    shapes = []
    maps = (7, 8, 14, 17, 28, 32, 35, 56)
    for c, k, r, s, p, h, g in itertools.product((8, 16, 48), (16, 32, 64, 256), (1, 3), (1, 2, 3),
                                                 (0, 1, 3), maps, (1, 2)):  # fmt: skip
        oh = (h + 2 * p - r) // s + 1
        shapes.append([1, c, h, h, k, r, r, oh, oh, s, s, p, p, p, p, 1, 1, g])
    outs = conv_rule_outputs(tmp_path, 'printf("%d\\n", afrt_nchwc_applies(&p));', shapes)
    got = [line == "1" for line in outs]
    want = [clib.nchwc_applies(dict(zip(clib.CONV_FIELDS, v, strict=True))) for v in shapes]
    assert len(got) == len(shapes)
    assert got == want
    assert any(want)
    assert not all(want)
    # the narrow stride-1 rule is crossed: C = 16 at 28x28 blocked, at 32x32 not
    by_shape = {tuple(v): w for v, w in zip(shapes, want, strict=True)}
    assert by_shape[(1, 16, 28, 28, 32, 3, 3, 28, 28, 1, 1, 1, 1, 1, 1, 1, 1, 1)]
    assert not by_shape[(1, 16, 32, 32, 32, 3, 3, 32, 32, 1, 1, 1, 1, 1, 1, 1, 1, 1)]
    # the fill rule is crossed: 7 and 14 columns fill the tiles; 8, 9 and 18 do not
    assert by_shape[(1, 48, 7, 7, 64, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1, 1)]
    assert not by_shape[(1, 48, 35, 35, 64, 3, 3, 18, 18, 2, 2, 1, 1, 1, 1, 1, 1, 1)]
    assert not by_shape[(1, 48, 8, 8, 64, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1)]
    assert not by_shape[(1, 48, 17, 17, 64, 3, 3, 9, 9, 2, 2, 1, 1, 1, 1, 1, 1, 1)]
    assert by_shape[(1, 48, 28, 28, 64, 3, 3, 14, 14, 2, 2, 1, 1, 1, 1, 1, 1, 1)]
    assert [clib.nchwc_row_cols(w) for w in (5, 7, 8, 13, 17, 20, 27, 35, 55)] == [
        7, 7, 14, 13, 21, 21, 27, 35, 55]  # fmt: skip
    # ... and the wide one: K = 256 at 7x7 blocked, at 14x14 not, at 14x14 stride 2 blocked
    assert by_shape[(1, 48, 7, 7, 256, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1, 1)]
    assert not by_shape[(1, 48, 14, 14, 256, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 1)]
    assert by_shape[(1, 48, 28, 28, 256, 3, 3, 14, 14, 2, 2, 1, 1, 1, 1, 1, 1, 1)]
    assert by_shape[(1, 48, 56, 56, 32, 3, 3, 28, 28, 2, 2, 1, 1, 1, 1, 1, 1, 1)]


_KERNEL_DRIVER = r"""
#include "afrt.h"
#include <stdio.h>
/* afrt_nchwc_f32 against afrt_conv2d_f32 (its NCHW paths) on seeded data: prints the
 * largest difference relative to the largest output, per case. */
int main(void) {
    static const int64_t cases[][7] = {/* C K H W R stride pad */
        {17, 33, 9, 7, 3, 1, 1}, {20, 8, 11, 13, 1, 1, 0}, {16, 70, 6, 5, 1, 2, 0},
        {40, 32, 10, 9, 3, 2, 1}, {3, 5, 4, 4, 3, 1, 2}, {64, 64, 12, 14, 3, 1, 0},
        {32, 40, 5, 27, 3, 1, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const int64_t *c = cases[i], R = c[4], st = c[5], pd = c[6];
        const int64_t OH = (c[2] + 2 * pd - R) / st + 1, OW = (c[3] + 2 * pd - R) / st + 1;
        const afrt_conv_params p = {2, c[0], c[2], c[3], c[1], R, R, OH, OW, st, st,
                                    pd, pd, pd, pd, 1, 1, 1};
        const size_t nx = (size_t)(2 * c[0] * c[2] * c[3]), nw = (size_t)(c[1] * c[0] * R * R);
        const size_t ny = (size_t)(2 * c[1] * OH * OW);
        float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)c[1] * 4);
        float *y0 = malloc(ny * 4), *y1 = malloc(ny * 4);
        for (size_t j = 0; j < nx; ++j) x[j] = (float)((j * 2654435761u) % 1000) / 500.0f - 1.0f;
        for (size_t j = 0; j < nw; ++j) w[j] = (float)((j * 40503u) % 1000) / 500.0f - 1.0f;
        for (int64_t j = 0; j < c[1]; ++j) b[j] = 0.01f * (float)j;
        afrt_conv2d_f32(x, w, b, y0, &p, NULL, afrt_no_epilogue());
        if (!afrt_nchwc_f32(x, w, b, y1, &p, afrt_no_epilogue())) return 3;
        float diff = 0.0f, big = 0.0f;
        for (size_t j = 0; j < ny; ++j) {
            diff = fmaxf(diff, fabsf(y0[j] - y1[j]));
            big = fmaxf(big, fabsf(y0[j]));
        }
        printf("%g %g\n", (double)diff, (double)big);
        free(x); free(w); free(b); free(y0); free(y1);
    }
    return 0;
}
"""


@pytest.mark.parametrize("cpu", ["native", "x86-64-v3"])
def test_nchwc_kernel_matches_the_nchw_paths(cpu: str, tmp_path: Path) -> None:
    """The kernel on shapes the lowering does not send it (1x1, channels not a multiple of
    16, pad 2, K below the tile) and, built for x86-64-v3, its portable loops."""
    out = driver_output(tmp_path, "kernel", _KERNEL_DRIVER, cpu)
    rows = [tuple(float(v) for v in line.split()) for line in out.splitlines()]
    assert len(rows) == 7
    for i, (diff, big) in enumerate(rows):
        assert 0.1 < big < 1e3, (i, big)
        assert diff <= 1e-5 * big, (i, diff, big)
