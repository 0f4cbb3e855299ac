"""Depthwise convolution, channels in vector lanes against the phase planes, kernel level.

Builds ``dw_lanes.c`` against ``afrt.h`` and, for each (C, H, stride, R) -- an RxR pad-R/2
depthwise conv on C x H x H with bias and Relu6 (the built-in clamp epilogue) -- times the
lanes path (``afrt_dwl_f32_``) and the phase-plane path (``afrt_dw_phase_f32_``) in one
process, rounds interleaved. One thread: process CPU time; more: wall time. Prints a markdown
table of the medians (us), the lanes path's GFLOP/s, the median of the per-round ratios
(lanes / phase; < 1: lanes win) and the largest difference of the two outputs. The default
cases are every depthwise shape of MobileNet-V2 at 112 (the zoo's size) and 224 and of
EfficientNet-B0 at 224.

    .venv/bin/python benchmarks/dw_lanes.py [--threads 1] [--reps 15]
        [--cases 960x4x1x3,144x56x2x5,...]    # CxHxstridexR
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

SRC = Path(__file__).with_name("dw_lanes.c")
MOBILENET_V2_112 = [(32, 56, 1, 3), (96, 56, 2, 3), (144, 28, 1, 3), (144, 28, 2, 3),
                    (192, 14, 1, 3), (192, 14, 2, 3), (384, 7, 1, 3), (576, 7, 1, 3),
                    (576, 7, 2, 3), (960, 4, 1, 3)]  # fmt: skip
MOBILENET_V2_224 = [(32, 112, 1, 3), (96, 112, 2, 3), (144, 56, 1, 3), (144, 56, 2, 3),
                    (192, 28, 1, 3), (192, 28, 2, 3), (384, 14, 1, 3), (576, 14, 1, 3),
                    (576, 14, 2, 3), (960, 7, 1, 3)]  # fmt: skip
EFFICIENTNET_B0 = [(32, 112, 1, 3), (96, 112, 2, 3), (144, 56, 1, 3), (144, 56, 2, 5),
                   (240, 28, 1, 5), (240, 28, 2, 3), (480, 14, 1, 3), (480, 14, 1, 5),
                   (672, 14, 1, 5), (672, 14, 2, 5), (1152, 7, 1, 5), (1152, 7, 1, 3)]  # fmt: skip


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated CxHxstridexR", reps=15, cold=False)
    args = ap.parse_args()
    default = list(dict.fromkeys(MOBILENET_V2_112 + MOBILENET_V2_224 + EFFICIENTNET_B0))
    out = kbench.run(SRC, [args.threads, args.reps], kbench.cases(args, default))
    columns = ["C", "H", "stride", "RxR", "lanes us", "phase us", "lanes GFLOP/s", "ratio",
               "max diff"]  # fmt: skip
    kbench.print_heading(args, columns)
    for line in out:
        c, h, s, r, tl, tp, ratio, diff = line.split()
        oh = (int(h) + 2 * (int(r) // 2) - int(r)) // int(s) + 1
        gflops = 2 * int(c) * oh * oh * int(r) ** 2 / float(tl) / 1e3
        print(f"| {c} | {h} | {s} | {r}x{r} | {tl} | {tp} | {gflops:.1f} | {ratio} | {diff} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
