"""How threads share a Winograd conv (``afrt_wg_split_k_`` and the shared V, afrt_winograd.h).

Where the tile blocks do not share out evenly between the threads (fewer blocks than threads,
or a short last block: 49 tiles as 32 + 17), the output channels are split as well and the
transformed input V that those tasks all read is made once, its (tile block, input-channel
chunk) pieces spread over the threads, instead of by every task. One build loaded at 1, 2 and
3 threads must give the same bits (each output is still one task's, the same sums) and match
onnxruntime. The convs: a 13x13 map (16 tiles, one block of 32 with an empty 16-tile group,
200 output channels: 96 + 104 rows at two threads, 72 + 72 + 56 at three, 128 input channels in
chunks of 64 and of 43, 43, 42) and a 27x27 map (49 tiles: 32 + 17; 112 channels, 56 + 56),
each with bias and Relu. A conv with fewer channels than ``AFRT_WG_SPLIT_MIN_ROWS`` per
thread keeps the uneven split at two threads and must match as well (48 -> 40 at 27x27; at
three threads its two tile blocks are split, a thread would have none). A 35x35 map (81 tiles:
32 + 32 + 17) at two threads deals its first two blocks whole and splits the third's 112
channels, 56 + 56 (the last round's block). Two images of the 13x13 map: one block each, dealt
whole at two threads, split with a shared V of both images at three.

One image's whole tile blocks go out as one contiguous run per thread (``afrt_wg_run_task_``):
a 99x99 map with 32 channels (625 tiles: 9 blocks of 64 and one of 49; 5 + 5 at two threads,
3 + 3 + 4 at three, the index space padded to 12), a 75x75 map with 16 (361 tiles: 128 + 128 +
105, 1 + 2 at two threads) and a 71x71 map 80 -> 192 (Inception-v3's: 324 tiles, 10 blocks of
32 and a 4-tile one; 5 + 5 runs and the short block split by channels at two threads, 3 + 3 + 3
and two split at three). The mapping itself is checked for every block and thread count up to
50 and 5 by a C driver: each block once, each thread's blocks one run, as many as round-robin
gives it, the short last block with a thread that has the most, and a conv's outputs are
the same bits with the runs as round-robin.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import driver_output, same_bits_at_thread_counts


def _model(hw: int, cin: int, cout: int, seed: int, batch: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1.0, 1.0, (cout, cin, 3, 3)) * (1.5 / np.sqrt(9 * cin))
    b = rng.uniform(-0.2, 0.2, cout)
    inits = [
        numpy_helper.from_array(w.astype(np.float32), "w"),
        numpy_helper.from_array(b.astype(np.float32), "b"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    g = helper.make_graph(
        nodes,
        "winograd_split",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, cin, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, cout, hw, hw])],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
@pytest.mark.parametrize(
    ("hw", "cin", "cout", "batch"),
    [(13, 128, 200, 1), (27, 48, 112, 1), (27, 48, 40, 1), (35, 48, 112, 1), (13, 128, 200, 2)],
)
def test_winograd_split_at_one_to_three_threads(
    cpu: str, hw: int, cin: int, cout: int, batch: int
) -> None:
    model = _model(hw, cin, cout, seed=hw, batch=batch)
    shape = (batch, cin, hw, hw)
    x = np.random.default_rng(hw + 1).uniform(-1.0, 1.0, shape).astype(np.float32)
    # the second run: the cached weights, the scratch reused
    report = same_bits_at_thread_counts(model, {"x": x}, cpu, runs=2)
    algos = [c["conv_algo"] for c in report["conv_algo"]]
    assert algos == ["winograd"], algos


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
@pytest.mark.parametrize(("hw", "cin", "cout"), [(99, 32, 32), (75, 16, 16), (71, 80, 192)])
def test_winograd_runs_at_one_to_three_threads(cpu: str, hw: int, cin: int, cout: int) -> None:
    model = _model(hw, cin, cout, seed=hw, batch=1)
    x = np.random.default_rng(hw + 2).uniform(-1.0, 1.0, (1, cin, hw, hw)).astype(np.float32)
    report = same_bits_at_thread_counts(model, {"x": x}, cpu, runs=2)
    algos = [c["conv_algo"] for c in report["conv_algo"]]
    assert algos == ["winograd"], algos


_RUNS_DRIVER = r"""
#include "afrt.h"
#include <stdio.h>
#include <string.h>
/* afrt_wg_run_task_ for nblk 1..50 blocks and nth 1..5 threads, the loop padded to nth runs:
 * per (nblk, nth) "nblk nth ok" where ok is 1 if every block comes once, thread r (the loop
 * indices r, r + nth, ...) takes consecutive blocks in order, as many as round-robin would
 * give it, and the last block goes to a thread with the most blocks. Then a 32 -> 32 conv
 * at 99x99 (10 tile blocks) at 2 and 3 threads, runs against round-robin
 * (afrt_wg_runs_dis_): "conv nth done same" (both ran Winograd; the same bits). */
int main(void) {
    const afrt_conv_params p = {1, 32, 99, 99, 32, 3, 3, 99, 99, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const size_t nx = 32 * 99 * 99, nw = 32 * 32 * 9;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc(32 * 4);
    float *y0 = malloc(nx * 4), *y1 = malloc(nx * 4);
    for (size_t i = 0; i < nx; ++i) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    for (size_t i = 0; i < nw; ++i) w[i] = (float)((i * 40503u) % 1000) / 5000.0f - 0.1f;
    for (int i = 0; i < 32; ++i) b[i] = 0.01f * (float)i;
    for (int nth = 2; nth <= 3; ++nth) {
        afrt_set_num_threads(nth);
        afrt_wg_runs_dis_ = 0;
        const int d0 = afrt_winograd_f32(x, w, b, y0, &p, afrt_no_epilogue());
        afrt_wg_runs_dis_ = 1;
        const int d1 = afrt_winograd_f32(x, w, b, y1, &p, afrt_no_epilogue());
        printf("conv %d %d %d\n", nth, d0 && d1, memcmp(y0, y1, nx * 4) == 0);
    }
    free(x), free(w), free(b), free(y0), free(y1);
    for (int64_t nth = 1; nth <= 5; ++nth)
        for (int64_t nblk = 1; nblk <= 50; ++nblk) {
            int seen[50] = {0}, count[5] = {0}, ok = 1, last_owner = -1;
            int64_t prev[5] = {-1, -1, -1, -1, -1};
            const int64_t pad = nth * afrt_cdiv_(nblk, nth);
            for (int64_t it = 0; it < pad; ++it) {
                const int64_t t = afrt_wg_run_task_(it, nblk, nth), r = it % nth;
                if (t < 0) continue;
                if (t >= nblk || seen[t]++) ok = 0;
                if (prev[r] >= 0 && t != prev[r] + 1) ok = 0;
                prev[r] = t;
                ++count[r];
                if (t == nblk - 1) last_owner = (int)r;
            }
            int most = 0;
            for (int64_t r = 0; r < nth; ++r) most = count[r] > most ? count[r] : most;
            int64_t rr[5] = {0};
            for (int64_t b = 0; b < nblk; ++b) ++rr[b % nth]; /* round-robin's counts */
            for (int64_t a = 0; a < nth; ++a) { /* the same counts, in some order */
                int64_t same = 0, want = 0;
                for (int64_t r = 0; r < nth; ++r) same += count[r] == rr[a], want += rr[r] == rr[a];
                if (same != want) ok = 0;
            }
            for (int64_t b = 0; b < nblk; ++b) ok &= seen[b] == 1;
            if (last_owner < 0 || count[last_owner] != most) ok = 0;
            printf("%lld %lld %d\n", (long long)nblk, (long long)nth, ok);
        }
    return 0;
}
"""


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_winograd_run_task_deals_runs(cpu: str, tmp_path: Path) -> None:
    """``afrt_wg_run_task_``: every block once, one run a thread, round-robin's counts; a
    conv dealt as runs has the bits it has dealt round-robin."""
    out = driver_output(tmp_path, "runs", _RUNS_DRIVER, cpu)
    rows = [line.split() for line in out.splitlines()]
    assert rows[:2] == [["conv", "2", "1", "1"], ["conv", "3", "1", "1"]], rows[:2]
    assert len(rows) == 2 + 5 * 50
    bad = [(nblk, nth) for nblk, nth, ok in rows[2:] if ok != "1"]
    assert not bad, bad
