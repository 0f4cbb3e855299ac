"""Transformer GEMMs: direct A (afrt's GEMM core reading the activation A unpacked) against
packed A, the same afrt_matmul_f32 call, one process.

Builds ``gemm_direct_a.c`` against ``afrt.h`` and, for each (M, K, N), times afrt_matmul_f32
(A row-major M x K, not constant; B K x N registered constant as a model's weights are, so
it is packed once and cached) with direct A forced on and off (``afrt_direct_a_``), rounds
interleaved (a direct sample, then a packed one, ``--reps`` times). ``--cold`` streams 64 MiB
through the caches before each call. One thread: process CPU time; more: wall time. Prints a
markdown table of the medians (us), GFLOP/s of both against the machine's measured sgemm roof
(``autofusion/runtime/roofs.py``) and the median of the per-round ratios (direct / packed;
< 1: direct A wins; an AVX-512 build always takes direct A). The default cases
are the dense layers of the zoo's ViT-Tiny (197 tokens), Swin-Tiny (stages 1-4: 3136, 784,
196 and 49 tokens; qkv, proj, fc1, fc2, patch merging) and BERT-base (128 tokens).
``--against no-prefetch`` times direct A with its prefetch of the next packed B block
(``afrt_pf_next_``) against direct A without it instead.

    .venv/bin/python benchmarks/gemm_direct_a.py [--threads 1] [--reps 9] [--cold]
        [--cases 197x768x192,...] [--against packed|no-prefetch]    # MxKxN
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

from autofusion.runtime import roofs

SRC = Path(__file__).with_name("gemm_direct_a.c")
CASES = [
    (197, 192, 576), (197, 192, 192), (197, 192, 768), (197, 768, 192),  # ViT-Tiny
    (3136, 96, 288), (3136, 96, 96), (3136, 96, 384), (3136, 384, 96),  # Swin-T stage 1
    (784, 384, 192), (784, 192, 576), (784, 192, 192), (784, 192, 768), (784, 768, 192),  # 2
    (196, 768, 384), (196, 384, 1152), (196, 384, 384), (196, 384, 1536), (196, 1536, 384),
    (49, 1536, 768), (49, 768, 2304), (49, 768, 768), (49, 768, 3072), (49, 3072, 768),  # 4
    (128, 768, 2304), (128, 768, 768), (128, 768, 3072), (128, 3072, 768),  # BERT-base
]  # fmt: skip
AGAINST = ("packed", "no-prefetch")  # the C driver's mode is the index


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated MxKxN (default: model layers)")
    ap.add_argument("--against", choices=AGAINST, default="packed", help="what B is")
    args = ap.parse_args()
    peak = roofs.machine_roofs(args.threads).peak_gflops
    head = [args.threads, args.reps, int(args.cold), AGAINST.index(args.against)]
    out = kbench.run(SRC, head, kbench.cases(args, CASES))
    a, b = ("direct", "packed") if args.against == "packed" else ("prefetch", "none")
    columns = ["M", "K", "N", f"{a} us", f"{b} us", f"GFLOP/s {a} / {b}", "ratio"]
    kbench.print_heading(args, columns, f", sgemm roof {peak:.0f} GFLOP/s")
    for line in out:
        m, k, n, td, tp, ratio = line.split()
        flops = 2.0 * int(m) * int(k) * int(n)
        gd, gp = flops / float(td) / 1e3, flops / float(tp) / 1e3
        print(f"| {m} | {k} | {n} | {td} | {tp} | {gd:.0f} / {gp:.0f} "
              f"({gd / peak:.0%} / {gp / peak:.0%}) | {ratio} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
