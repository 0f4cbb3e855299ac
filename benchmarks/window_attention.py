"""Small-sequence attention (Swin's windows) against the streaming core, kernel alone.

Builds ``window_attention.c`` against ``afrt.h`` and, per case, times ``afrt_attention_f32``'s
small path (``afrt_attention_small_f32``: whole score rows in registers, T <= 64, AVX-512)
against the streaming core (``afrt_attention_streamed_f32``) on the same q, k, v and mask,
rounds interleaved; ``--cold`` streams 64 MiB through the caches before each call. One
thread: process CPU time; more: wall time. Prints a markdown table of the medians (us), the
median of the per-round ratios (< 1: the small path wins), GFLOP/s of both (4 S T D per
batch index) and the largest difference between their outputs. The default grid: Swin-T's
four stages (windows x heads 64 x 3, 16 x 6, 4 x 12, 1 x 24; S = T = 49, head dim 32), with
the bias mask and the shifted blocks' per-window mask, plus shorter windows. A case whose T
is past the small path's limit times the streaming core twice.

    .venv/bin/python benchmarks/window_attention.py [--threads 1] [--reps 9] [--cold]
        [--cases 64x3x49x32x1,...]   # WINDOWSxHEADSxSxHEAD_DIMxMASK (0 none, 1 bias, 2 both)
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

SRC = Path(__file__).with_name("window_attention.c")
# windows, heads, S (= T), head dim, mask (0 none, 1 [1, H, S, S], 2 [W, H, S, S])
GRID = [
    (64, 3, 49, 32, 1), (64, 3, 49, 32, 2), (16, 6, 49, 32, 1), (16, 6, 49, 32, 2),
    (4, 12, 49, 32, 1), (4, 12, 49, 32, 2), (1, 24, 49, 32, 1), (64, 3, 49, 32, 0),
    (64, 3, 16, 32, 1), (16, 4, 64, 64, 0), (64, 3, 7, 32, 1),
]  # fmt: skip


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated WINDOWSxHEADSxSxHEAD_DIMxMASK")
    args = ap.parse_args()
    cases = kbench.cases(args, GRID)
    out = kbench.run(SRC, [args.threads, args.reps, int(args.cold)], cases)
    cols = ["windows x heads", "S = T", "head dim", "mask", "small us", "streamed us", "ratio",
            "small GFLOP/s", "streamed GFLOP/s", "max diff"]  # fmt: skip
    kbench.print_heading(args, cols)
    masks = {"0": "none", "1": "[1,H,S,S]", "2": "[W,H,S,S]"}
    for line in out:
        w, h, s, d, m, t0, t1, ratio, diff = line.split()
        flop = 4 * int(w) * int(h) * int(s) ** 2 * int(d)
        g0, g1 = flop / float(t0) / 1e3, flop / float(t1) / 1e3
        row = [f"{w} x {h}", s, d, masks[m], t0, t1, ratio, f"{g0:.1f}", f"{g1:.1f}", diff]
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
