"""Where Winograd F(4x4, 3x3) beats im2col + GEMM: both on the same 3x3 stride-1 pad-1 conv.

Builds ``winograd_conv.c`` against ``afrt.h`` and, for each (C, K, map size), times
``afrt_winograd_f32`` and the im2col_gemm path (``afrt_conv_own_``) in one process, rounds
interleaved (a Winograd sample, then an im2col sample, ``--reps`` times), constant weights
registered as a model's are. ``--cold`` streams 64 MiB through the caches before each call,
as the other layers of a model do between two runs of one conv (the rule is fitted to cold
runs). One thread: process CPU time; more: wall time. Prints a markdown table of the medians
(us), the median of the per-round ratios (Winograd / im2col; < 1: Winograd wins) and which
side of the rule (``clib.conv_algo``) each case falls on.

    .venv/bin/python benchmarks/winograd_conv.py [--threads 1] [--reps 9] [--cold]
        [--cases 64x64x56,128x128x28,...]    # CxKxH
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

from autofusion.dialects import clib

SRC = Path(__file__).with_name("winograd_conv.c")
GRID = [(c, c, h) for c in (16, 32, 64, 128, 256, 512) for h in (7, 8, 14, 16, 28, 56)]
GRID += [(8, 16, 56), (16, 8, 56), (32, 64, 14), (3 * 64, 64, 28), (64, 192, 28)]


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated CxKxH (default: a grid)")
    args = ap.parse_args()
    out = kbench.run(SRC, [args.threads, args.reps, int(args.cold)], kbench.cases(args, GRID))
    kbench.print_heading(args, ["C", "K", "map", "winograd us", "im2col us", "ratio", "rule picks"])
    for line in out:
        c, k, h, tw, ti, ratio = line.split()
        ci, ki, hi = int(c), int(k), int(h)
        params = [1, ci, hi, hi, ki, 3, 3, hi, hi, 1, 1, 1, 1, 1, 1, 1, 1, 1]
        pick = clib.conv_algo(params)
        print(f"| {c} | {k} | {h}x{h} | {tw} | {ti} | {ratio} | {pick} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
