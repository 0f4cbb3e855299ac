"""The stem and its max pool as one kernel (``fuse-conv-pool``: ``afrt_convpool_nc_f32``).

- The C kernel bit for bit against the two calls apart (``afrt_dconv_smallcb_f32`` then
  ``afrt_maxpool2d_nc_f32``): SqueezeNet-1.1's shapes at a smaller size, odd sizes, ceil-mode
  edge windows, pads and dilation in the pool, a padded conv, batch 2, no epilogue; NaN,
  +-inf and -0.0 in the image, weights and bias; at 1, 2 and 3 threads (the pool rows split
  over threads with the shared conv row computed twice), and on ``x86-64-v2`` (no AVX-512:
  the fallback through a whole intermediate).
- ``clib.convpool_fits`` against ``afrt_convpool_fits`` over a sweep.
- Whole models against onnxruntime (``test_c_stem_blocks.stem_model``: three stems with
  their pools and fires) with the same bits at 1, 2 and 3 threads, and the arena: the stem's
  output no longer has a slot, so the plan shrinks against ``patterns: {conv_pool: false}``.
"""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import numpy as np
import pytest
from runtime_drivers import RUNTIME_C, build_driver, same_bits_at_thread_counts, uniform_feeds
from test_c_stem_blocks import stem_model

from autofusion.dialects import clib
from autofusion.runtime import toolchain

# N C H K R stride pad | pool R S stride pad dil ceil | special relu
CASES = [
    (1, 3, 39, 64, 3, 2, 0, 3, 3, 2, 0, 1, 1, 0, 1),  # SqueezeNet's stem at 39: 19 -> 9
    (1, 3, 41, 64, 3, 2, 0, 3, 3, 2, 0, 1, 1, 1, 1),  # 20 -> 10: ceil-mode edge windows
    (2, 3, 23, 48, 5, 2, 2, 3, 3, 2, 0, 1, 1, 1, 1),  # padded conv (the image copied), batch 2
    (1, 1, 9, 16, 3, 1, 1, 3, 3, 2, 1, 1, 0, 1, 0),  # stride 1, pool pads, no epilogue
    (1, 4, 30, 32, 3, 1, 1, 2, 3, 3, 1, 2, 1, 1, 1),  # 2x3 window, dilation 2, stride 3
    (1, 3, 45, 16, 3, 2, 0, 4, 4, 1, 0, 2, 0, 0, 1),  # stride 1 pool: 7 ring rows
    (2, 3, 27, 80, 3, 2, 0, 3, 3, 2, 0, 1, 1, 1, 1),  # five blocks: a group with one
]


def _run_driver(tmp_path: Path, isa: str, threads: int) -> list[tuple[int, int, int]]:
    exe = build_driver(RUNTIME_C / "afrt_convpool_driver.c", tmp_path / f"cp_{isa}", isa)
    text = "".join(
        " ".join(map(str, (*c[:13], threads, *c[13:]))) + "\n" for c in CASES
    )  # threads go between the pool and the flags
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    return [tuple(int(t) for t in line.split()) for line in out.stdout.splitlines()]  # type: ignore[misc]


@pytest.mark.parametrize("isa", ["native", "x86-64-v2"])
def test_convpool_kernel_has_the_bits_of_the_two_calls(isa: str, tmp_path: Path) -> None:
    """Every case gives the bits of conv then pool at 1, 2 and 3 threads; with AVX-512 the
    fused kernel itself ran (else the fallback did)."""
    avx512 = isa == "native" and toolchain.cpu_has_avx512("native")
    for threads in (1, 2, 3):
        rows = _run_driver(tmp_path, isa, threads)
        assert len(rows) == len(CASES)
        for case, (ran, _, same) in zip(CASES, rows, strict=True):
            assert same == 1, (case, threads)
            assert ran == int(avx512), (case, threads)


def test_convpool_rule_matches_the_runtime(tmp_path: Path) -> None:
    """``clib.convpool_fits`` is ``afrt_convpool_fits`` over pool windows, dilations and
    strides either side of the ring's limit, and pools that do not read the conv's output."""
    conv = [1, 3, 39, 39, 64, 3, 3, 19, 19, 2, 2, 0, 0, 0, 0, 1, 1, 1]
    pools = []
    for r, d, s, p in itertools.product((1, 3, 4, 5, 8, 9), (1, 2), (1, 2), (0, 1)):
        oh = (19 + 2 * p - (r - 1) * d - 1) // s + 1
        pools.append([1, 64, 19, 19, r, 3, oh, 9, s, 2, p, p, p, p, d, 1, 0])
    pools.append([1, 48, 19, 19, 3, 3, 9, 9, 2, 2, 0, 0, 0, 0, 1, 1, 0])  # other channels
    stmt = (
        "afrt_pool_params q = {(int64_t)f[18], (int64_t)f[19], (int64_t)f[20], (int64_t)f[21],"
        " (int64_t)f[22], (int64_t)f[23], (int64_t)f[24], (int64_t)f[25], (int64_t)f[26],"
        " (int64_t)f[27], (int64_t)f[28], (int64_t)f[29], (int64_t)f[30], (int64_t)f[31],"
        " (int64_t)f[32], (int64_t)f[33], 0};"
        ' printf("%d\\n", afrt_convpool_fits(&p, &q));'
    )
    got = _pair_rule_outputs(tmp_path, stmt, [conv + q for q in pools])
    cf = dict(zip(clib.CONV_FIELDS, conv, strict=True))
    want = [int(clib.convpool_fits(cf, dict(zip(clib.POOL_FIELDS, q, strict=True)))) for q in pools]
    assert [int(v) for v in got] == want
    assert 0 < sum(want) < len(want)


def _pair_rule_outputs(tmp_path: Path, stmt: str, rows: list[list[int]]) -> list[str]:
    """What ``stmt`` prints per line of ``rows``: a conv's 18 ``afrt_conv_params`` fields in
    ``p``, then 17 pool fields read as ``f[18..34]``."""
    src = r"""
#include "afrt.h"
#include <stdio.h>
int main(void) {
    afrt_conv_params p;
    long f[35];
    while (1) {
        for (int i = 0; i < 35; ++i)
            if (scanf("%ld", &f[i]) != 1) return 0;
        int64_t *c = &p.N;
        for (int i = 0; i < 18; ++i) c[i] = f[i];
        PRINT
    }
}
"""
    path = tmp_path / "pair.c"
    path.write_text(src.replace("PRINT", stmt))
    exe = tmp_path / "pair"
    subprocess.run([toolchain.c_compiler(), "-O1", "-std=c11", *toolchain.include_flags(),
                    str(path), "-o", str(exe), "-lm"], check=True)  # fmt: skip
    text = "\n".join(" ".join(map(str, r)) for r in rows) + "\n"
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


@pytest.mark.skipif(
    not toolchain.cpu_has_avx512("native"), reason="stems write blocks on AVX-512 only"
)
def test_stem_pools_same_bits_at_1_2_3_threads() -> None:
    """The stem model's three fused stems match onnxruntime and give the same bits at 1, 2
    and 3 threads (runs twice: cached weights, reused rings)."""
    m = stem_model()
    report = same_bits_at_thread_counts(m, uniform_feeds(m, 11), "native", runs=2)
    fused = [g for g in report["groups"] if g["pattern"] == "convpool_conv_relu_max_pool"]
    assert len(fused) == 3
    assert {g["decided_by"] for g in fused} == {"rules"}


@pytest.mark.skipif(
    not toolchain.cpu_has_avx512("native"), reason="stems write blocks on AVX-512 only"
)
def test_the_arena_loses_the_stem_outputs(tmp_path: Path) -> None:
    """With the pattern off the three stems' outputs take arena space; with it on the plan
    is smaller and the pattern's refusal says why it is off."""
    import autofusion

    off = tmp_path / "off.json"
    off.write_text('{"patterns": {"conv_pool": false}}')
    m = stem_model(batch=1)
    a = autofusion.compile(m, cache=False)
    b = autofusion.compile(m, cache=False, config=str(off))
    try:
        on_bytes, off_bytes = a.report["arena_bytes"], b.report["arena_bytes"]
        assert on_bytes < off_bytes, (on_bytes, off_bytes)
        assert {r["code"] for r in b.report["refusals"]} >= {"disabled"}
        feeds = uniform_feeds(m, 5)
        got_a, got_b = a.run(feeds), b.run(feeds)
        for k in got_a:
            np.testing.assert_array_equal(got_a[k], got_b[k])  # the same bits either way
    finally:
        a.close()
        b.close()
