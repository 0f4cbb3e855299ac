"""What the fused Relu / Add + Relu costs in each conv kernel: the built-in clamp epilogue
applied at the store against the other ways of finishing the same conv.

Builds ``conv_epilogue.c`` against ``afrt.h`` and, per conv, times the kernel with the built-in
epilogue (``afrt_epi_clamp_fn``, lo 0: Relu, with or without a residual) against, by
``--against``: ``callback``, the same epilogue through a function no kernel recognises (the pass
over each finished block the kernels ran before they applied the built-in one at the store);
``none``, no epilogue (the fused epilogue's own cost); ``pass``, no epilogue and then one pass of
the epilogue over the whole output (a separate Relu / Add kernel, as in the unfused build);
``bare``, no bias and no epilogue (the unfused build's conv, whose BatchNorm is a kernel of its
own: the ratio is what the fused conv pays for all it absorbed).
A case's residual flag is 0 (none), 1 (a buffer of its own), 2 (the output itself: the
residual written over in place, plan-buffers' ``memory.residual_inplace``) or 3 (no epilogue at
all, the bias alone: a conv with its BatchNorm folded and nothing else fused; for ``bare``).
Rounds interleaved, constant weights registered as a model's are; ``--cold`` streams 64 MiB
through the caches before each call. One thread: process CPU time; more: wall time. Prints a
markdown table of the medians (us) and the median of the per-round ratios (< 1: the built-in
epilogue at the store wins). The default grid holds the kernels ResNet-50's fused convs take:
Winograd (3x3 on 56x56 and 28x28), the blocked direct conv (the other 3x3s), gemm_1x1 / the
GEMM core (the 1x1s, residual ones included), and gemm_1x1_t on a 4x4 map.

    .venv/bin/python benchmarks/conv_epilogue.py [--threads 1] [--reps 9] [--cold]
        [--against callback|none|pass|bare] [--cases wg:64x64x56x3x1x0,...]
        # KIND:CxKxHxRxSTRIDExRES
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

SRC = Path(__file__).with_name("conv_epilogue.c")
KINDS = {"wg": 0, "nchwc": 1, "1x1t": 2, "conv2d": 3}
AGAINST = {"callback": 0, "none": 1, "pass": 2, "bare": 3}
# kind, C, K, H, R, stride, residual
GRID = [
    (0, 64, 64, 56, 3, 1, 0), (0, 128, 128, 28, 3, 1, 0),
    (1, 128, 128, 56, 3, 2, 0), (1, 256, 256, 14, 3, 1, 0), (1, 512, 512, 7, 3, 1, 0),
    (3, 256, 64, 56, 1, 1, 0), (3, 64, 256, 56, 1, 1, 1), (3, 512, 2048, 7, 1, 1, 1),
    (2, 1024, 256, 4, 1, 1, 1),
]  # fmt: skip


def main() -> int:
    kinds = ", ".join(KINDS)
    ap = kbench.parser(__doc__, f"comma-separated KIND:CxKxHxRxSTRIDExRES (KIND: {kinds})")
    ap.add_argument("--against", choices=list(AGAINST), default="callback")
    args = ap.parse_args()
    cases = GRID
    if args.cases:
        cases = []
        for c in args.cases.split(","):
            kind, _, dims = c.partition(":")
            cases.append((KINDS[kind], *(int(v) for v in dims.split("x"))))
    head = [args.threads, args.reps, int(args.cold), AGAINST[args.against]]
    out = kbench.run(SRC, head, cases)
    names = {v: k for k, v in KINDS.items()}
    cols = ["kernel", "C", "K", "map", "RxR/s", "residual"]
    kbench.print_heading(args, [*cols, "built-in us", f"{args.against} us", "ratio"])
    for line in out:
        kind, c, k, h, r, s, res, t0, t1, ratio = line.split()
        shown = {"0": "no", "1": "yes", "2": "in place", "3": "bias only"}[res]
        row = [names[int(kind)], c, k, f"{h}x{h}", f"{r}x{r}/{s}", shown]
        print("| " + " | ".join([*row, t0, t1, ratio]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
