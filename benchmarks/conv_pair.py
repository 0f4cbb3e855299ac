"""ResNet's conv3 and downsample (1x1 convs whose outputs are added, then Relu) as one kernel,
``afrt_conv1x1_pair_f32``, against the two calls apart (the downsample writing D, conv3's
residual epilogue reading it), kernel level.

Builds ``conv_pair.c`` against ``afrt.h`` and, for each case (Cm, Ci, K, output map, stride
of the downsample), times both in one process, rounds interleaved. One thread: process CPU
time; more: wall time. Prints the medians (us), the median of the per-round ratios (pair /
apart; < 1: the pair wins), the largest difference of the two outputs and the largest
output. The default cases are the first blocks of ResNet-50's four stages at 224 x 224.

    .venv/bin/python benchmarks/conv_pair.py [--threads 1] [--reps 9] [--cold]
        [--cases 64x64x256x56x1,...]    # CmxCixKxOHxstride
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

SRC = Path(__file__).with_name("conv_pair.c")
RESNET50 = [(64, 64, 256, 56, 1), (128, 256, 512, 28, 2), (256, 512, 1024, 14, 2),
            (512, 1024, 2048, 7, 2)]  # fmt: skip


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated CmxCixKxOHxstride")
    args = ap.parse_args()
    out = kbench.run(SRC, [args.threads, args.reps, int(args.cold)], kbench.cases(args, RESNET50))
    columns = ["Cm", "Ci", "K", "map", "s", "pair us", "apart us", "ratio", "max diff", "max |y|"]
    kbench.print_heading(args, columns)
    for line in out:
        print("| " + " | ".join(line.split()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
