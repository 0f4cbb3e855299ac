"""1x1 convolutions on small maps: gemm_1x1_t (output channels along the GEMM core's 32-wide
panels) against gemm_1x1 (output positions along them), the same conv, one process.

Builds ``conv1x1_small.c`` against ``afrt.h`` and, for each (C, K, map side), times
``afrt_conv1x1t_f32`` and ``afrt_conv_own_`` rounds interleaved (a gemm_1x1_t sample, then a
gemm_1x1 sample, ``--reps`` times), constant weights registered as a model's are. ``--cold``
streams 64 MiB through the caches before each call (weights and activations from memory).
One thread: process CPU time; more: wall time. Prints a markdown table of the medians (us),
GFLOP/s of both against the machine's measured sgemm roof (``autofusion/runtime/roofs.py``),
the median of the per-round ratios (t / direct; < 1: gemm_1x1_t wins) and which algorithm the
rule (``clib.conv_algo``) picks. The default cases are the 1x1 layers of ResNet-50 (stages 3
and 4), MobileNet-V2 (at 224x224, and the zoo's 112x112 with 4x4 maps), EfficientNet-B0
(including its squeeze-excite convs on 1x1 maps) and SqueezeNet.

It is a first filter, not the judge: on 7x7 projections (960 -> 160, 1152 -> 192) it reads
gemm_1x1_t 2-14% ahead (cold or warm) while the same convs inside EfficientNet-B0 and
MobileNet-V2 ran 1-12% slower on it (docs/runtime.md, "Rechecked inside models"); confirm a
rule change with ``kernel_ab.py`` on whole-model builds.

    .venv/bin/python benchmarks/conv1x1_small.py [--threads 1] [--reps 9] [--cold]
        [--cases 2048x512x7,...]    # CxKxH
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

from autofusion.dialects import clib
from autofusion.runtime import roofs

SRC = Path(__file__).with_name("conv1x1_small.c")
CASES = [
    (2048, 512, 7), (512, 2048, 7), (1024, 256, 14), (256, 1024, 14),  # ResNet-50
    (320, 1280, 7), (960, 160, 7), (160, 960, 7), (960, 320, 7), (576, 96, 14),  # MobileNet-V2
    (1152, 192, 7), (192, 1152, 7), (1152, 48, 1), (48, 1152, 1),  # EfficientNet-B0
    (512, 64, 13), (64, 256, 13), (512, 1000, 13),  # SqueezeNet 1.1
    (960, 320, 4), (960, 160, 4), (576, 160, 4), (320, 1280, 4), (160, 960, 4),  # zoo MobileNet
    (2048, 512, 4), (256, 64, 4), (64, 256, 4),  # 4x4 maps
]  # fmt: skip


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated CxKxH (default: model layers)")
    args = ap.parse_args()
    peak = roofs.machine_roofs(args.threads).peak_gflops
    out = kbench.run(SRC, [args.threads, args.reps, int(args.cold)], kbench.cases(args, CASES))
    columns = ["C", "K", "map", "gemm_1x1_t us", "gemm_1x1 us", "GFLOP/s t / direct", "ratio"]
    kbench.print_heading(args, [*columns, "rule picks"], f", sgemm roof {peak:.0f} GFLOP/s")
    for line in out:
        c, k, h, tt, td, ratio = line.split()
        ci, ki, hi = int(c), int(k), int(h)
        flops = 2.0 * ci * ki * hi * hi
        gt, gd = flops / float(tt) / 1e3, flops / float(td) / 1e3
        pick = clib.conv_algo([1, ci, hi, hi, ki, 1, 1, hi, hi, 1, 1, 0, 0, 0, 0, 1, 1, 1])
        print(f"| {c} | {k} | {h}x{h} | {tt} | {td} | {gt:.0f} / {gd:.0f} "
              f"({gt / peak:.0%} / {gd / peak:.0%}) | {ratio} | {pick} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
