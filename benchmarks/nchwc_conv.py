"""Where the direct blocked conv (``afrt_nchwc_f32``, NCHW16c inside) beats today's path.

Builds ``nchwc_conv.c`` against ``afrt.h`` and, for each conv (C, K, square map H, kernel R,
stride; pad R // 2), times ``afrt_nchwc_f32`` and the path ``afrt_conv2d_f32`` takes without
it (Winograd where it applies, else gemm_1x1 / im2col_gemm) in one process, rounds
interleaved, constant weights registered as a model's are; ``--cold`` streams 64 MiB through
the caches before each call. One thread: process CPU time; more: wall time. Prints a markdown
table of the medians (us), the median of the per-round ratios (nchwc / today; < 1: nchwc
wins), the largest output difference and the lowering's choice (``clib.conv_algo`` with the
blocked kernel available). The default grid holds ResNet-50's, SqueezeNet-1.1's and
Inception-v1's 3x3 convs and ResNet-50 / MobileNet-V2 1x1 convs.

``--layout`` times the kernel with its input and/or output already blocked
(``afrt_nchwc_ex_f32``'s flags, as ``assign-layout`` calls it between blocked convs; the
outputs then differ by layout and are not compared).

    .venv/bin/python benchmarks/nchwc_conv.py [--threads 1] [--reps 9] [--cold]
        [--layout nchw|in|out|both] [--cases 256x256x14x3x1,...]    # CxKxHxRxstride
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

from autofusion.dialects import clib

SRC = Path(__file__).with_name("nchwc_conv.c")
GRID = [
    # ResNet-50 3x3 (stride-2 ones are torchvision's v1.5 placement)
    (64, 64, 56, 3, 1), (128, 128, 56, 3, 2), (128, 128, 28, 3, 1), (256, 256, 28, 3, 2),
    (256, 256, 14, 3, 1), (512, 512, 14, 3, 2), (512, 512, 7, 3, 1),
    # SqueezeNet-1.1 expand3x3, Inception-v1 3x3
    (16, 64, 55, 3, 1), (32, 128, 27, 3, 1), (48, 192, 13, 3, 1), (64, 256, 13, 3, 1),
    (64, 192, 56, 3, 1), (96, 128, 28, 3, 1), (128, 192, 28, 3, 1), (96, 208, 14, 3, 1),
    (112, 224, 14, 3, 1), (160, 320, 7, 3, 1), (192, 384, 7, 3, 1),
    # 1x1 (ResNet-50, MobileNet-V2)
    (64, 256, 56, 1, 1), (256, 64, 56, 1, 1), (512, 128, 28, 1, 1), (1024, 256, 14, 1, 1),
    (96, 24, 56, 1, 1), (144, 32, 28, 1, 1), (384, 64, 14, 1, 1), (960, 160, 7, 1, 1),
]  # fmt: skip


#: --layout -> afrt_nchwc_ex_f32's flags (AFRT_NC_IN_BLOCKED 1, AFRT_NC_OUT_BLOCKED 2)
LAYOUT_FLAGS = {"nchw": 0, "in": 1, "out": 2, "both": 3}


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated CxKxHxRxstride (default: a grid)")
    ap.add_argument("--layout", choices=list(LAYOUT_FLAGS), default="nchw",
                    help="which of x, y the blocked kernel gets already NCHW16c")  # fmt: skip
    args = ap.parse_args()
    head = [args.threads, args.reps, int(args.cold), LAYOUT_FLAGS[args.layout]]
    out = kbench.run(SRC, head, kbench.cases(args, GRID))
    columns = ["C", "K", "map", "kernel", "nchwc us", "today us", "ratio", "max diff", "today"]
    kbench.print_heading(args, [*columns, "rule picks"], f", layout {args.layout}")
    for line in out:
        c, k, h, r, s, tn, tb, ratio, diff = line.split()
        ci, ki, hi, ri, si = (int(v) for v in (c, k, h, r, s))
        oh = (hi + 2 * (ri // 2) - ri) // si + 1
        p = ri // 2
        params = [1, ci, hi, hi, ki, ri, ri, oh, oh, si, si, p, p, p, p, 1, 1, 1]
        today, pick = clib.conv_algo(params), clib.conv_algo(params, blocked=True)
        print(f"| {c} | {k} | {h}x{h} | {r}x{r}/{s} | {tn} | {tb} | {ratio} | {diff} | {today} "
              f"| {pick} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
