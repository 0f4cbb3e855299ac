"""How evenly the threads of a conv share its work: per-thread CPU time, robust to load.

Builds ``thread_balance.c`` against this checkout's ``afrt.h`` and runs each conv
(``afrt_conv2d_f32``, the path the runtime picks: Winograd, im2col_gemm, gemm_1x1, ...) with
``OMP_WAIT_POLICY=passive``, so that a thread with nothing left to do sleeps rather than
spins and its CPU time is its share of the call. Prints per conv the medians over ``--reps``
calls of the busiest thread's CPU time (the call's time on an idle machine), of all threads'
(the work) and their ratio, the speed-up the split allows (at most ``--threads``). Wall time
at two threads is hopeless on a shared machine (a thread that loses its core stalls the
call); CPU time per thread is not. For an A/B, run it on both checkouts. The default cases
are the Winograd convs of the zoo's Inception, ResNet-50 and DenseNet-121.

    .venv/bin/python benchmarks/thread_balance.py [--threads 2] [--reps 15]
        [--cases 32x64x47x3x1,...]    # CxKxHxRxstride, pad R // 2
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import kbench

from autofusion.dialects import clib

SRC = Path(__file__).with_name("thread_balance.c")
CASES = [
    (32, 64, 47, 3, 1), (64, 96, 23, 3, 1), (96, 96, 23, 3, 1),  # Inception (96x96 input)
    (64, 64, 56, 3, 1), (128, 128, 28, 3, 1),  # ResNet-50
    (128, 32, 56, 3, 1), (128, 32, 28, 3, 1),  # DenseNet-121 growth convs
]  # fmt: skip


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated CxKxHxRxstride", reps=15, cold=False)
    ap.set_defaults(threads=2)
    args = ap.parse_args()
    os.environ["OMP_WAIT_POLICY"] = "passive"
    out = kbench.run(SRC, [args.threads, args.reps], kbench.cases(args, CASES))
    columns = ["C -> K, map, kernel/stride", "algo", "busiest thread us", "all threads us",
               "speed-up allowed"]  # fmt: skip
    print(f"{args.threads} thread(s), per-thread CPU time, medians of {args.reps} calls\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for line in out:
        c, k, h, r, s, longest, total = line.split()
        ci, ki, hi, ri, si = int(c), int(k), int(h), int(r), int(s)
        oh = (hi + 2 * (ri // 2) - ri) // si + 1
        algo = clib.conv_algo([1, ci, hi, hi, ki, ri, ri, oh, oh, si, si, ri // 2, ri // 2,
                               ri // 2, ri // 2, 1, 1, 1])  # fmt: skip
        print(
            f"| {c} -> {k}, {h}x{h}, {r}x{r}/{s} | {algo} | {longest} | {total} | "
            f"{float(total) / float(longest):.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
