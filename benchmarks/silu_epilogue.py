"""What the fused SiLU (x * sigmoid(x)) costs on EfficientNet-B0's convs: the built-in SiLU
epilogue against the epilogue the lowering generated before.

Builds ``silu_epilogue.c`` against ``afrt.h`` and, per conv, times the kernel with the built-in
epilogue (``afrt_epi_silu_fn``: the AVX-512 GEMM core applies it in registers, the depthwise
kernels call it on each finished block) against, by ``--against``: ``generated``, the per-element
``v * (1 / (1 + af_expf(-v)))`` epilogue function the C lowering emitted for these chains;
``callback``, the built-in one through a function no kernel recognises (the register path's
share); ``none``, no epilogue (what the fused SiLU still costs). A case's gate flag 1 is the
sigmoid alone (an SE block's gate). Rounds interleaved; ``--cold`` streams 64 MiB through the
caches before each call. One thread: process CPU time; more: wall time. Prints a markdown
table of the medians (us) and the median of the per-round ratios (< 1: the built-in wins).
The default grid: EfficientNet-B0's largest SiLU convs (expand 1x1s, depthwise 3x3 / 5x5,
stride 1 and 2) and one SE gate.

    .venv/bin/python benchmarks/silu_epilogue.py [--threads 1] [--reps 9] [--cold]
        [--against generated|callback|none] [--cases 16x96x112x1x1x1x0,...]
        # CxKxHxRxSTRIDExGROUPxGATE
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

SRC = Path(__file__).with_name("silu_epilogue.c")
AGAINST = {"generated": 0, "callback": 1, "none": 2}
# C, K, H, R, stride, group, gate
GRID = [
    (16, 96, 112, 1, 1, 1, 0), (24, 144, 56, 1, 1, 1, 0), (80, 480, 14, 1, 1, 1, 0),
    (32, 32, 112, 3, 1, 32, 0), (96, 96, 112, 3, 2, 96, 0), (144, 144, 56, 3, 1, 144, 0),
    (672, 672, 14, 5, 1, 672, 0), (20, 480, 1, 1, 1, 1, 1),
]  # fmt: skip


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated CxKxHxRxSTRIDExGROUPxGATE")
    ap.add_argument("--against", choices=list(AGAINST), default="generated")
    args = ap.parse_args()
    head = [args.threads, args.reps, int(args.cold), AGAINST[args.against]]
    out = kbench.run(SRC, head, kbench.cases(args, GRID))
    cols = ["C", "K", "map", "RxR/s", "group", "op"]
    kbench.print_heading(args, [*cols, "built-in us", f"{args.against} us", "ratio"])
    for line in out:
        c, k, h, r, s, g, gate, t0, t1, ratio = line.split()
        row = [c, k, f"{h}x{h}", f"{r}x{r}/{s}", g, "sigmoid" if gate == "1" else "SiLU"]
        print("| " + " | ".join([*row, t0, t1, ratio]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
