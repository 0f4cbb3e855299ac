"""What a Linear layer's fused bias + residual still costs: the MatMul with the built-in
column-bias epilogue and a residual (``afrt_epi_bias_clamp``, added in the GEMM core's
registers) against the bare MatMul.

Builds ``residual_epilogue.c`` against ``afrt.h`` and times, per MatMul (x: M x K, weights
K x N, a bias along the N columns, a residual M x N), both in interleaved rounds; ``--cold``
streams 64 MiB through the caches before each call. One thread: process CPU time; more: wall
time. Prints a markdown table of the medians (us) and the median of the per-round ratios. The
default grid: Swin-Tiny's fc2 and attention projections (stages 1-4) and BERT-base's at
sequence 128. Run it with two trees' ``autofusion`` on ``PYTHONPATH`` alternately to compare
two finishes.

    .venv/bin/python benchmarks/residual_epilogue.py [--threads 1] [--reps 9] [--cold]
        [--cases 3136x384x96,...]  # MxKxN
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

SRC = Path(__file__).with_name("residual_epilogue.c")
# M, K, N
GRID = [
    (3136, 384, 96), (784, 768, 192), (196, 1536, 384), (49, 3072, 768),
    (3136, 96, 96), (784, 192, 192), (196, 384, 384), (49, 768, 768),
    (128, 3072, 768), (128, 768, 768),
]  # fmt: skip


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated MxKxN")
    args = ap.parse_args()
    out = kbench.run(SRC, [args.threads, args.reps, int(args.cold)], kbench.cases(args, GRID))
    kbench.print_heading(args, ["M", "K", "N", "fused us", "bare us", "ratio"])
    for line in out:
        print("| " + " | ".join(line.split()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
