"""Stem convs writing 16-channel blocks: direct_smallc_b (``afrt_dconv_smallcb_f32``, the
output channels along the lanes, 64 channels x 6 positions in registers, NCHW16c y) against
direct_smallc (``afrt_dconv_smallc_f32``, positions along the lanes from phase planes, NCHW
y), the same conv with a Relu, one process.

Builds ``stem_blocked.c`` against ``afrt.h`` (for this CPU: the kernel needs AVX-512), checks
the blocked output against the NCHW one, then times both rounds interleaved, constant weights
registered as a model's are; ``--cold`` streams 64 MiB through the caches before each call.
One thread: process CPU time; more: wall time. Prints a markdown table of the medians (us),
GFLOP/s and the median of the per-round ratios (blocked / NCHW; < 1: the blocked stem wins).
The default cases are SqueezeNet-1.1's stem, the same with padding, and the 7x7/2 stem of
ResNet-50, GoogLeNet and DenseNet-121; confirm inside whole models (``kernel_ab.py``).

    .venv/bin/python benchmarks/stem_blocked.py [--threads 1] [--reps 9] [--cold]
        [--cases 3x64x224x3x2x0,...]    # CxKxHxRxstridexpad
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

SRC = Path(__file__).with_name("stem_blocked.c")
CASES = [(3, 64, 224, 3, 2, 0), (3, 64, 224, 3, 2, 1), (3, 64, 224, 7, 2, 3)]


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated CxKxHxRxstridexpad (default: model stems)")
    args = ap.parse_args()
    out = kbench.run(SRC, [args.threads, args.reps, int(args.cold)], kbench.cases(args, CASES))
    columns = ["C -> K", "image", "kernel/stride, pad", "blocked us", "NCHW us", "GFLOP/s", "ratio"]
    kbench.print_heading(args, columns)
    for line in out:
        c, k, h, r, s, p, tb, tn, ratio = line.split()
        oh = (int(h) + 2 * int(p) - int(r)) // int(s) + 1
        flops = 2.0 * int(c) * int(k) * int(r) * int(r) * oh * oh
        gb, gn = flops / float(tb) / 1e3, flops / float(tn) / 1e3
        print(f"| {c} -> {k} | {h}x{h} | {r}x{r}/{s}, {p} | {tb} | {tn} | {gb:.0f} / {gn:.0f} "
              f"| {ratio} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
