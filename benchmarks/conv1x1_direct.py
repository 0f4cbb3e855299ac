"""1x1 convolutions with few output channels: direct_1x1 (``afrt_conv1x1d_f32``, the NCHW
input read in place, 8 output channels x 48 positions in registers) against gemm_1x1 (the
input packed into the GEMM core's panels), the same conv with a Relu, one process.

Builds ``conv1x1_direct.c`` against ``afrt.h`` (for this CPU: the kernel needs AVX-512) and,
for each (C, K, map side), times both rounds interleaved, constant weights registered as a
model's are; ``--cold`` streams 64 MiB through the caches before each call. One thread:
process CPU time; more: wall time. Prints a markdown table of the medians (us), GFLOP/s of
both, the median of the per-round ratios (direct / gemm; < 1: direct_1x1 wins) and what the
lowering picks (``clib.conv_algo`` with the AVX-512 kernels allowed). The default cases are
SqueezeNet-1.1's squeezes and expand 1x1s and Inception-v1's 5x5 reductions; confirm a rule
change inside whole models (``kernel_ab.py``).

    .venv/bin/python benchmarks/conv1x1_direct.py [--threads 1] [--reps 9] [--cold]
        [--cases 64x16x55,...]    # CxKxH
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

from autofusion.dialects import clib
from autofusion.runtime import roofs

SRC = Path(__file__).with_name("conv1x1_direct.c")
CASES = [
    (64, 16, 55), (128, 16, 55), (128, 32, 27), (256, 32, 27), (256, 48, 13), (384, 64, 13),
    (16, 64, 55), (32, 128, 27),  # SqueezeNet-1.1
    (192, 16, 28), (256, 32, 28), (480, 16, 14), (512, 24, 14), (528, 32, 14),
    (832, 32, 7),  # Inception-v1
]  # fmt: skip


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated CxKxH (default: model layers)")
    args = ap.parse_args()
    peak = roofs.machine_roofs(args.threads).peak_gflops
    out = kbench.run(SRC, [args.threads, args.reps, int(args.cold)], kbench.cases(args, CASES))
    columns = ["C", "K", "map", "direct_1x1 us", "gemm_1x1 us", "GFLOP/s direct / gemm", "ratio"]
    kbench.print_heading(args, [*columns, "rule picks"], f", sgemm roof {peak:.0f} GFLOP/s")
    for line in out:
        c, k, h, td, tg, ratio = line.split()
        ci, ki, hi = int(c), int(k), int(h)
        flops = 2.0 * ci * ki * hi * hi
        gd, gg = flops / float(td) / 1e3, flops / float(tg) / 1e3
        params = [1, ci, hi, hi, ki, 1, 1, hi, hi, 1, 1, 0, 0, 0, 0, 1, 1, 1]
        pick = clib.conv_algo(params, blocked=True)
        print(f"| {c} | {k} | {h}x{h} | {td} | {tg} | {gd:.0f} / {gg:.0f} "
              f"({gd / peak:.0%} / {gg / peak:.0%}) | {ratio} | {pick} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
