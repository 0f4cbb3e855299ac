"""What the fused bias + GELU (erf form) costs on a transformer MLP's fc1: the built-in GELU
epilogue against the epilogue the lowering generated before.

Builds ``gelu_epilogue.c`` against ``afrt.h`` and, per MatMul (x: M x K, weights K x N, a
bias along the N columns), times it with the built-in epilogue (``afrt_epi_gelu_fn``: the
AVX-512 GEMM core adds the bias in registers and runs the GELU on each tile while it is in L1)
against, by ``--against``: ``generated``, the per-element epilogue function the C lowering
emitted for ``Add(bias)`` + ``nn.gelu`` before; ``callback``, the built-in one through a
function no kernel recognises (the register path's share); ``none``, no epilogue (what the
fused bias + GELU still costs). Rounds interleaved; ``--cold`` streams 64 MiB through the
caches before each call. One thread: process CPU time; more: wall time. Prints a markdown
table of the medians (us) and the median of the per-round ratios (< 1: the built-in wins).
The default grid: Swin-Tiny's four fc1 shapes, BERT-base's at sequence 128 and ViT-Tiny's.

    .venv/bin/python benchmarks/gelu_epilogue.py [--threads 1] [--reps 9] [--cold]
        [--against generated|callback|none] [--cases 3136x96x384,...]  # MxKxN
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

SRC = Path(__file__).with_name("gelu_epilogue.c")
AGAINST = {"generated": 0, "callback": 1, "none": 2}
# M, K, N
GRID = [
    (3136, 96, 384), (784, 192, 768), (196, 384, 1536), (49, 768, 3072),
    (128, 768, 3072), (197, 192, 768),
]  # fmt: skip


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated MxKxN")
    ap.add_argument("--against", choices=list(AGAINST), default="generated")
    args = ap.parse_args()
    head = [args.threads, args.reps, int(args.cold), AGAINST[args.against]]
    out = kbench.run(SRC, head, kbench.cases(args, GRID))
    kbench.print_heading(args, ["M", "K", "N", "built-in us", f"{args.against} us", "ratio"])
    for line in out:
        print("| " + " | ".join(line.split()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
