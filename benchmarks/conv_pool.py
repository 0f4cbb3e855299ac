"""A conv (+ Relu) and the max pool reading it fused in row bands (``convpool_f32``)
against the two calls apart, kernel level.

Builds ``conv_pool.c`` against ``afrt.h`` and, for each case (C, H, K, R, stride, pad, pool
kernel, pool stride, pool pad, ceil_mode), times the fused kernel and the conv with a Relu
epilogue writing its whole output followed by ``afrt_maxpool2d_f32``, in one process, rounds
interleaved. One thread: process CPU time; more: wall time. Prints a markdown table of the
medians (us), the median of the per-round ratios (fused / apart; < 1: fusion wins) and the
largest difference of the two outputs (0: the same bits). The default cases are the stems of
SqueezeNet 1.1, GoogLeNet and ResNet-50 at 224 x 224 and GoogLeNet's conv3 -> maxpool2.
The fused kernel lives in ``conv_pool.c`` only: it measured slower (docs/runtime.md,
"Conv -> MaxPool in row bands").

    .venv/bin/python benchmarks/conv_pool.py [--threads 1] [--reps 9] [--cold]
        [--cases 3x224x64x3x2x0x3x2x0x1,...]    # CxHxKxRxsxpadxPRxpsxppadxceil
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

SRC = Path(__file__).with_name("conv_pool.c")
STEMS = [(3, 224, 64, 3, 2, 0, 3, 2, 0, 1), (3, 224, 64, 7, 2, 3, 3, 2, 0, 1),
         (3, 224, 64, 7, 2, 3, 3, 2, 1, 0), (64, 56, 192, 3, 1, 1, 3, 2, 0, 1)]  # fmt: skip


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated CxHxKxRxsxpadxPRxpsxppadxceil")
    args = ap.parse_args()
    out = kbench.run(SRC, [args.threads, args.reps, int(args.cold)], kbench.cases(args, STEMS))
    columns = ["C", "H", "K", "R", "s", "pad", "pool", "pool s", "pool pad", "ceil",
               "fused us", "apart us", "ratio", "max diff"]  # fmt: skip
    kbench.print_heading(args, columns)
    for line in out:
        print("| " + " | ".join(line.split()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
